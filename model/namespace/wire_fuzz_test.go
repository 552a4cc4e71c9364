package namespace

import (
	"reflect"
	"testing"
)

// FuzzDecodeRequest: any payload decodes or is refused, never panics, and a
// decoded request re-encodes to the same payload.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(MethodCreate, EncodeRequest(Request{Method: MethodCreate, Path: "/a/b", Blocks: 3}))
	f.Add(MethodComplete, EncodeRequest(Request{Method: MethodComplete, Path: "/f", Done: []Location{{Block: 1, Stamp: 2, Length: 3}}}))
	f.Add(MethodRename, EncodeRequest(Request{Method: MethodRename, Path: "/a", Dst: "/b"}))
	f.Add(MethodComplete, []byte{0, 1, '/', 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(99), []byte("garbage"))
	f.Fuzz(func(t *testing.T, m uint8, b []byte) {
		r, ok := DecodeRequest(m, b)
		if !ok {
			return
		}
		if got := EncodeRequest(r); string(got) != string(b) {
			t.Fatalf("re-encoded %x, decoded from %x", got, b)
		}
	})
}

// EncodeResponse's buffer is sized exactly, whatever the response holds:
// a create answered with fewer tokens than blocks (a decoded answer always
// has one a block, so the fuzzer never builds this one), fields of another
// method, a method with no payload.
func TestResponseSizeIsExact(t *testing.T) {
	cases := []struct {
		method uint8
		r      Response
	}{
		{MethodCreate, Response{Blocks: []uint64{4, 5, 6}, Tokens: [][]byte{[]byte("tok")}}},
		{MethodCreate, Response{Blocks: []uint64{4}, Tokens: [][]byte{[]byte("a"), []byte("b")}}},
		{MethodList, Response{Entries: []Entry{{Name: "x", Dir: true}, {Name: "long-name", Length: 9}}, Blocks: []uint64{1}}},
		{MethodGetBlockLocations, Response{Locations: []Location{{Block: 1, Datanode: "dn:1", Token: []byte("t")}, {Block: 2}}}},
		{MethodMkdir, Response{Blocks: []uint64{1}}},
	}
	for _, c := range cases {
		enc := EncodeResponse(c.method, c.r)
		if len(enc) != responseSize(c.method, c.r) || cap(enc) != len(enc) {
			t.Errorf("method %d: %d bytes (capacity %d), sized %d", c.method, len(enc), cap(enc), responseSize(c.method, c.r))
		}
	}
	if enc := EncodeResponse(MethodMkdir, Response{}); enc != nil {
		t.Errorf("a method with no payload encodes %v, want nil", enc)
	}
}

// FuzzDecodeResponse: the same for answers; counts that cannot fit in the
// payload are refused before anything is allocated for them.
func FuzzDecodeResponse(f *testing.F) {
	f.Add(MethodList, EncodeResponse(MethodList, Response{Entries: []Entry{{Name: "x", Dir: true}, {Name: "f", Length: 9}}}))
	f.Add(MethodGetBlockLocations, EncodeResponse(MethodGetBlockLocations, Response{Locations: []Location{{Block: 1, Stamp: 2, Length: 3, Datanode: "dn:1"}}}))
	f.Add(MethodCreate, []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(MethodCreate, EncodeResponse(MethodCreate, Response{Blocks: []uint64{4, 5}, Tokens: [][]byte{[]byte("tok")}}))
	f.Fuzz(func(t *testing.T, m uint8, b []byte) {
		r, err := DecodeResponse(m, b)
		if err != nil {
			return
		}
		enc := EncodeResponse(m, r)
		if len(enc) != responseSize(m, r) {
			t.Fatalf("%d bytes encoded, %d sized for them", len(enc), responseSize(m, r))
		}
		again, err := DecodeResponse(m, enc)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip of %x: %+v vs %+v (%v)", b, again, r, err)
		}
	})
}

// FuzzDecodeEditRecord: any bytes at the head of an edit log decode to a
// record or end the log, never panic, and a decoded record re-encodes to
// the bytes it came from.
func FuzzDecodeEditRecord(f *testing.F) {
	f.Add(editRecord(1, Request{Method: MethodMkdir, Path: "/a"}))
	f.Add(editRecord(7, Request{Method: MethodComplete, Path: "/f", Done: []Location{{Block: 1, Stamp: 2, Length: 3}}}))
	f.Add(editRecord(2, Request{Method: MethodRename, Path: "/a", Dst: "/b"})[:9])
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, MethodList})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, txid, n, ok := decodeEditRecord(b)
		if !ok {
			return
		}
		if got := editRecord(txid, r); string(got) != string(b[:n]) {
			t.Fatalf("re-encoded %x, decoded from %x", got, b[:n])
		}
	})
}

// The wire's numbers are the protocol: a method or an error code whose
// value moved would still agree with this package (the check's model uses
// the same constants), but not with a client or a trace of before.
func TestWireValuesArePinned(t *testing.T) {
	methods := []uint8{MethodMkdir, MethodCreate, MethodList, MethodGetBlockLocations, MethodComplete, MethodDelete, MethodRename}
	codes := []Code{OK, ENOENT, EEXIST, ENOTDIR, EISDIR, EINVAL, EINCOMPLETE, EBADREQ, EIO}
	for i, m := range methods {
		if m != uint8(i+1) {
			t.Errorf("method %s is %d, want %d", MethodName(m), m, i+1)
		}
	}
	for i, c := range codes {
		if c != Code(i) {
			t.Errorf("code %s is %d, want %d", c, c, i)
		}
	}
	if ListLimit != 1000 || MaxComponentLen != 255 || MaxPathLen != 4096 || MaxBlocks != 1024 {
		t.Errorf("limits %d, %d, %d, %d: want HDFS's 1000, 255, 4096 and 1024", ListLimit, MaxComponentLen, MaxPathLen, MaxBlocks)
	}
}
