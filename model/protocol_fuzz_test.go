package model

import (
	"bytes"
	"errors"
	"testing"
)

// Each fuzz target checks, for arbitrary input, that the decoder does not
// panic, that it fails only with ErrNeedMore or a *ProtocolError, and that
// whatever it accepts re-encodes to exactly the bytes it consumed and is
// announced by every shorter prefix as ErrNeedMore.

func fuzzCheckErr(t *testing.T, n int, err error) {
	t.Helper()
	var pe *ProtocolError
	if err != ErrNeedMore && !errors.As(err, &pe) {
		t.Fatalf("error %T %v is neither ErrNeedMore nor *ProtocolError", err, err)
	}
	if n != 0 {
		t.Fatalf("consumed %d bytes with error %v", n, err)
	}
	if pe != nil && (pe.Status == StatusSuccess || pe.Msg == "") {
		t.Fatalf("protocol error without a status or message: %+v", pe)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add(AppendRequest(nil, protoSampleRequest()))
	f.Add(AppendRequest(nil, Request{Op: OpWriteBlock}))
	f.Add(AppendRequest(nil, Request{Op: OpRequestShortCircuitFDs, ClientName: "c", Token: []byte{1}}))
	f.Add(protoRawRequest(28, OpReadBlock, [4]uint64{1, 1, 0, 10}, nil, nil, 0, 0, []byte{0}, -1))
	f.Add([]byte{0, 28, 81, 0, 0, 0x10, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, n, err := DecodeRequest(b)
		if err != nil {
			fuzzCheckErr(t, n, err)
			return
		}
		if n < requestHeaderLen+minRequestBody || n > len(b) || n > requestHeaderLen+MaxRequestLen {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("decoded an invalid request: %v", err)
		}
		if enc := AppendRequest(nil, req); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b[:n], enc)
		}
		for _, i := range []int{0, 1, 2, 3, requestHeaderLen, n / 2, n - 1} {
			if _, _, err := DecodeRequest(b[:i]); err != ErrNeedMore {
				t.Fatalf("prefix %d of %d: %v", i, n, err)
			}
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(AppendResponse(nil, protoSampleResponse()))
	f.Add(AppendResponse(nil, Response{Status: StatusErrorAccessToken, Message: "denied"}))
	f.Add(protoRawResponse(0, 0, "", 2, 0, 0))
	f.Add([]byte{0, 7, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, n, err := DecodeResponse(b)
		if err != nil {
			fuzzCheckErr(t, n, err)
			return
		}
		if n < responseFixedLen || n > len(b) || n > responseFixedLen+MaxMessageLen {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if err := resp.Validate(); err != nil {
			t.Fatalf("decoded an invalid response: %v", err)
		}
		if enc := AppendResponse(nil, resp); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b[:n], enc)
		}
		for _, i := range []int{0, 1, 2, 3, 4, n / 2, n - 1} {
			if _, _, err := DecodeResponse(b[:i]); err != ErrNeedMore {
				t.Fatalf("prefix %d of %d: %v", i, n, err)
			}
		}
	})
}

func FuzzDecodePacket(f *testing.F) {
	f.Add(AppendPacket(nil, PacketHeader{Offset: 512, Seqno: 1}, protoData(1000), 512), uint32(512))
	f.Add(AppendPacket(nil, PacketHeader{Offset: 0, Seqno: 0}, protoData(3), 1), uint32(1))
	f.Add(AppendPacket(nil, PacketHeader{Offset: 4096, Seqno: 9, Last: true}, nil, 512), uint32(512))
	f.Add(AppendPacket(nil, PacketHeader{}, protoData(100), 7), uint32(7))
	f.Add(protoRawPacket(38, 0, 0, 3, 9, protoData(13)), uint32(512))
	f.Fuzz(func(t *testing.T, b []byte, bpc32 uint32) {
		bpc := int(bpc32 % (MaxBytesPerChecksum + 2)) // mostly valid, sometimes 0 or too big
		p, n, err := DecodePacket(b, bpc)
		if err != nil {
			fuzzCheckErr(t, n, err)
			return
		}
		if n < PacketHeaderLen || n > len(b) || n > MaxPacketLen || len(p.Data) > MaxPacketData {
			t.Fatalf("consumed %d of %d bytes, %d data bytes", n, len(b), len(p.Data))
		}
		enc := AppendPacketHeader(nil, p.PacketHeader, len(p.Data), bpc)
		enc = append(append(enc, p.Sums...), p.Data...)
		if !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b[:n], enc)
		}
		// Verification must agree with recomputed checksums, and never
		// panic.
		err = p.Verify(1, bpc)
		matches := bytes.Equal(ChecksumChunks(nil, p.Data, bpc), p.Sums)
		var ce *ChecksumError
		if matches != (err == nil) || (err != nil && !errors.As(err, &ce)) {
			t.Fatalf("Verify = %v, checksums match = %v", err, matches)
		}
		if matches {
			if re := AppendPacket(nil, p.PacketHeader, p.Data, bpc); !bytes.Equal(re, b[:n]) {
				t.Fatal("AppendPacket differs from a verified packet")
			}
		}
		for _, i := range []int{0, 3, 4, PacketHeaderLen - 1, PacketHeaderLen, n - 1} {
			if i < n {
				if _, _, err := DecodePacket(b[:i], bpc); err != ErrNeedMore {
					t.Fatalf("prefix %d of %d: %v", i, n, err)
				}
			}
		}
	})
}

func FuzzDecodeStatus(f *testing.F) {
	f.Add(AppendStatus(nil, StatusChecksumOK))
	f.Add(AppendStatus(nil, StatusSuccess))
	f.Add([]byte{0xff, 0xff, 0})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := DecodeStatus(b)
		if err != nil {
			fuzzCheckErr(t, n, err)
			return
		}
		if n != statusLen || !s.known() {
			t.Fatalf("status %v, consumed %d", s, n)
		}
		if enc := AppendStatus(nil, s); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding differs: in %x out %x", b[:n], enc)
		}
		if _, _, err := DecodeStatus(b[:1]); err != ErrNeedMore {
			t.Fatalf("1-byte prefix: %v", err)
		}
	})
}
