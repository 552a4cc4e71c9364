package rpc

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeFrame: any input decodes to a frame, asks for more, or is
// refused with one of the decoder's errors; never a panic, never a frame
// longer than its input or over the bound; a decoded frame re-encodes to
// the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(AppendFrame(nil, Frame{ID: 7, Code: 1, Payload: []byte("/a/b")}), 64)
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 1}, 64)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5}, DefaultMaxFrame)
	f.Add([]byte{0, 0, 0, 5, 0, 0}, 64)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 0 {
			max = -max
		}
		fr, n, err := DecodeFrame(b, max)
		switch {
		case err == nil:
			if n > len(b) || n-4 > max || n < frameHeader {
				t.Fatalf("frame of %d bytes from %d input, bound %d", n, len(b), max)
			}
			if got := AppendFrame(nil, fr); !bytes.Equal(got, b[:n]) {
				t.Fatalf("re-encoded %x, decoded from %x", got, b[:n])
			}
		case errors.Is(err, ErrShort), errors.Is(err, ErrTooLarge), errors.Is(err, ErrMalformed):
			if n != 0 {
				t.Fatalf("error %v with %d bytes used", err, n)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}

func FuzzCheckPreamble(f *testing.F) {
	f.Add(Preamble[:])
	f.Add([]byte("xrp"))
	f.Add([]byte("GET / HTTP/1.1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckPreamble(b)
		want := ErrPreamble
		switch {
		case len(b) >= len(Preamble) && bytes.Equal(b[:len(Preamble)], Preamble[:]):
			want = nil
		case len(b) < len(Preamble) && bytes.Equal(b, Preamble[:len(b)]):
			want = ErrShort
		}
		if err != want {
			t.Fatalf("CheckPreamble(%q) = %v, want %v", b, err, want)
		}
	})
}
