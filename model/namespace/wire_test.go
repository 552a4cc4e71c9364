package namespace

import (
	"errors"
	"fmt"
	"testing"
)

// DecodeResponse makes each list it decodes once, with room for exactly
// the entries its count announces (room), and leaves an empty one nil, as
// a response built with none has it: a round trip alone cannot tell, for
// both decodings of it are alike.
func TestDecodeResponseSizesListsOnce(t *testing.T) {
	three := func(m uint8, r Response) Response {
		t.Helper()
		got, err := DecodeResponse(m, EncodeResponse(m, r))
		if err != nil {
			t.Fatalf("%s: %v", MethodName(m), err)
		}
		return got
	}
	c := three(MethodCreate, Response{Blocks: []uint64{1, 2, 3}, Tokens: [][]byte{[]byte("a"), []byte("b"), []byte("c")}})
	l := three(MethodList, Response{Entries: []Entry{{Name: "a"}, {Name: "b", Dir: true}, {Name: "c", Length: 7}}})
	g := three(MethodGetBlockLocations, Response{Locations: []Location{{Block: 1}, {Block: 2}, {Block: 3}}})
	for _, x := range []struct {
		what     string
		len, cap int
	}{
		{"create's blocks", len(c.Blocks), cap(c.Blocks)},
		{"create's tokens", len(c.Tokens), cap(c.Tokens)},
		{"list's entries", len(l.Entries), cap(l.Entries)},
		{"getBlockLocations' locations", len(g.Locations), cap(g.Locations)},
	} {
		if x.len != 3 || x.cap != 3 {
			t.Errorf("%s: %d decoded with capacity %d, want 3 made at once", x.what, x.len, x.cap)
		}
	}
	c = three(MethodCreate, Response{})
	l = three(MethodList, Response{})
	g = three(MethodGetBlockLocations, Response{})
	if c.Blocks != nil || c.Tokens != nil || l.Entries != nil || g.Locations != nil {
		t.Errorf("none decoded as empty, not nil: %#v %#v %#v %#v", c.Blocks, c.Tokens, l.Entries, g.Locations)
	}
}

// IsCode reports a namespace error of that code, wrapped or not, and no
// other error.
func TestIsCode(t *testing.T) {
	enoent := error(&Error{Code: ENOENT})
	for _, tc := range []struct {
		err  error
		code Code
		want bool
	}{
		{enoent, ENOENT, true},
		{fmt.Errorf("list /a: %w", enoent), ENOENT, true},
		{enoent, EEXIST, false},
		{errors.New("namespace: ENOENT"), ENOENT, false},
		{nil, OK, false},
	} {
		if got := IsCode(tc.err, tc.code); got != tc.want {
			t.Errorf("IsCode(%v, %v) = %v, want %v", tc.err, tc.code, got, tc.want)
		}
	}
}

// An answer encoded in a lent buffer (rpc.FrameEncoder's buf) is the
// bytes EncodeResponse makes, and lies where it was lent: the room asked
// for is exactly what it takes, or the handler would copy it after all.
func TestEncodeResponseInLentBuffer(t *testing.T) {
	for _, c := range []struct {
		m uint8
		r Response
	}{
		{MethodCreate, Response{Blocks: []uint64{1, 2}, Tokens: [][]byte{[]byte("tok"), nil}}},
		{MethodList, Response{Entries: []Entry{{Name: "a", Dir: true}, {Name: "bb", Length: 9}}, Remaining: 3}},
		{MethodList, Response{}},
		{MethodGetBlockLocations, Response{Locations: []Location{{Block: 1, Stamp: 2, Length: 3, Datanode: "dn:1", Token: []byte("t")}}}},
	} {
		var lent []byte
		asked := -1
		got := encodeResponse(c.m, c.r, func(n int) []byte {
			asked = n
			lent = make([]byte, 0, n)
			return lent
		})
		want := EncodeResponse(c.m, c.r)
		if string(got) != string(want) || asked != len(want) || len(got) == 0 || &got[0] != &lent[:1][0] {
			t.Errorf("%s: %d bytes (%d asked for), want %d, in the lent buffer", MethodName(c.m), len(got), asked, len(want))
		}
	}
}
