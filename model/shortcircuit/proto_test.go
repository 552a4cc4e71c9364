package shortcircuit

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"xceiver/model"
)

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []Request{
		{Op: OpRequestShm, ClientID: "client-1"},
		{Op: OpRequestFDs, BlockID: 7, Stamp: 1001, ShmID: 99, Slot: 3, Token: []byte{1, 2, 3}},
		{Op: OpReleaseSlot, ShmID: 99, Slot: 63},
	} {
		b := AppendRequest(nil, r)
		got, n, err := DecodeRequest(b)
		if err != nil || n != len(b) || !reflect.DeepEqual(got, r) {
			t.Errorf("%+v: decoded %+v, %d of %d bytes, %v", r, got, n, len(b), err)
		}
		for i := 0; i < len(b); i++ {
			if _, _, err := DecodeRequest(b[:i]); !errors.Is(err, model.ErrNeedMore) {
				t.Errorf("%+v: prefix of %d bytes: %v", r, i, err)
			}
		}
	}
}

func TestResponseRoundTrip(t *testing.T) {
	for _, r := range []Response{
		{Status: model.StatusSuccess, ShmID: 5, Size: SegmentSize},
		{Status: model.StatusSuccess, Stamp: 1001, Length: 4096},
		{Status: model.StatusSuccess, Stamp: 1001, Length: 4096, Receipt: true},
		{Status: model.StatusErrorAccessToken, Message: "denied"},
	} {
		b := AppendResponse(nil, r)
		got, n, err := DecodeResponse(b)
		if err != nil || n != len(b) || !reflect.DeepEqual(got, r) {
			t.Errorf("%+v: decoded %+v, %d of %d bytes, %v", r, got, n, len(b), err)
		}
		for i := 0; i < len(b); i++ {
			if _, _, err := DecodeResponse(b[:i]); !errors.Is(err, model.ErrNeedMore) {
				t.Errorf("%+v: prefix of %d bytes: %v", r, i, err)
			}
		}
	}
	b := AppendResponse(nil, Response{Status: model.StatusSuccess})
	b[len(b)-1] = 2
	if _, _, err := DecodeResponse(b); err == nil || !strings.Contains(err.Error(), "receipt flag 2,") {
		t.Errorf("receipt flag 2 decoded: %v; want an error naming the flag", err)
	}
}

func checkDecodeErr(t *testing.T, n int, err error) {
	var pe *model.ProtocolError
	if !errors.Is(err, model.ErrNeedMore) && !errors.As(err, &pe) {
		t.Fatalf("error %T %v is neither ErrNeedMore nor *ProtocolError", err, err)
	}
	if n != 0 {
		t.Fatalf("consumed %d bytes with error %v", n, err)
	}
}

// Any bytes: no panic, only ErrNeedMore or a protocol error, and what is
// accepted re-encodes to the bytes consumed.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(AppendRequest(nil, Request{Op: OpRequestShm, ClientID: "c"}))
	f.Add(AppendRequest(nil, Request{Op: OpRequestFDs, BlockID: 1, ShmID: 2, Slot: 64, Token: bytes.Repeat([]byte{7}, model.TokenLen)}))
	f.Add(AppendRequest(nil, Request{Op: OpReleaseSlot, ShmID: 2, Slot: 1}))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{0, 28, 87, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := DecodeRequest(b)
		if err != nil {
			checkDecodeErr(t, n, err)
			return
		}
		if enc := AppendRequest(nil, r); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("%+v re-encodes to %x, consumed %x", r, enc, b[:n])
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(AppendResponse(nil, Response{Status: model.StatusSuccess, ShmID: 5, Size: SegmentSize}))
	f.Add(AppendResponse(nil, Response{Status: model.StatusSuccess, Stamp: 1001, Length: 4096, Receipt: true}))
	f.Add(AppendResponse(nil, Response{Status: model.StatusErrorInvalid, Message: "no such block"}))
	f.Add([]byte{0, 99})
	f.Add([]byte{0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := DecodeResponse(b)
		if err != nil {
			checkDecodeErr(t, n, err)
			return
		}
		if enc := AppendResponse(nil, r); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("%+v re-encodes to %x, consumed %x", r, enc, b[:n])
		}
	})
}

// A request's token and client name may be as long as their bounds
// (model.MaxTokenLen, model.MaxClientNameLen), together too, and not a
// byte longer: then the error names the field, its length and the bound.
func TestRequestFieldBounds(t *testing.T) {
	tok, name := bytes.Repeat([]byte{7}, model.MaxTokenLen), string(bytes.Repeat([]byte{'c'}, model.MaxClientNameLen))
	for _, tc := range []struct {
		what string
		r    Request
		err  string // "": decodes
	}{
		{"longest token", Request{Op: OpRequestFDs, Token: tok}, ""},
		{"token a byte past", Request{Op: OpRequestFDs, Token: append(tok, 7)}, "token of 1025 bytes exceeds 1024"},
		{"longest client name", Request{Op: OpRequestShm, ClientID: name}, ""},
		{"client name a byte past", Request{Op: OpRequestShm, ClientID: name + "c"}, "client name of 257 bytes exceeds 256"},
		{"both at their bounds", Request{Op: OpRequestFDs, Token: tok, ClientID: name}, ""},
	} {
		b := AppendRequest(nil, tc.r)
		got, n, err := DecodeRequest(b)
		if tc.err == "" && (err != nil || n != len(b) || !reflect.DeepEqual(got, tc.r)) {
			t.Errorf("%s: decoded %d of %d bytes, %v; want the request whole", tc.what, n, len(b), err)
		}
		var pe *model.ProtocolError
		if tc.err != "" && (!errors.As(err, &pe) || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want a protocol error saying %q", tc.what, err, tc.err)
		}
	}
}

// A message longer than model.MaxMessageLen is cut to it, so the
// response still decodes (a longer one is refused).
func TestResponseMessageCut(t *testing.T) {
	long := string(bytes.Repeat([]byte{'m'}, model.MaxMessageLen+10))
	got, _, err := DecodeResponse(AppendResponse(nil, Response{Status: model.StatusErrorInvalid, Message: long}))
	if err != nil || got.Message != long[:model.MaxMessageLen] {
		t.Errorf("a %d-byte message: decoded %q, %v; want its first %d bytes", len(long), got.Message, err, model.MaxMessageLen)
	}
}
