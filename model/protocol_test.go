package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func protoSampleRequest() Request {
	return Request{
		Op:         OpReadBlock,
		BlockID:    1073741825,
		GenStamp:   1001,
		Offset:     4096,
		Length:     65536,
		ClientName: "DFSClient_NONMAPREDUCE_1",
		Token:      []byte("token-bytes"),
	}
}

func protoSampleResponse() Response {
	return Response{
		Status:           StatusSuccess,
		ChecksumType:     ChecksumCRC32C,
		BytesPerChecksum: BytesPerChecksum,
		FirstChunkOffset: 4096,
	}
}

// protoData returns n deterministic bytes.
func protoData(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// protoCheckPrefixes asserts that every proper prefix of a complete
// message asks for more bytes.
func protoCheckPrefixes(t *testing.T, msg []byte, decode func([]byte) error) {
	t.Helper()
	for i := 0; i < len(msg); i++ {
		if err := decode(msg[:i]); err != ErrNeedMore {
			t.Fatalf("prefix of %d/%d bytes: err = %v, want ErrNeedMore", i, len(msg), err)
		}
	}
}

// wantProtocolError fails t unless err is a *ProtocolError answered with
// status, its text containing want: what a decoder or Validate refuses
// with, the status a server sends back.
func wantProtocolError(t *testing.T, err error, status Status, want string) {
	t.Helper()
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Status != status || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want a *ProtocolError with status %v containing %q", err, status, want)
	}
}

func TestProtocolRequestRoundTrip(t *testing.T) {
	long := protoSampleRequest()
	long.ClientName = strings.Repeat("n", MaxClientNameLen)
	long.Token = bytes.Repeat([]byte{0xff}, MaxTokenLen)
	long.Offset, long.Length = math.MaxInt64-5, 5
	reqs := []Request{
		protoSampleRequest(),
		{Op: OpWriteBlock},
		{Op: OpRequestShortCircuitFDs, BlockID: math.MaxUint64, GenStamp: math.MaxUint64, ClientName: "héllo\xff"},
		long,
	}
	for _, req := range reqs {
		t.Run(req.Op.String(), func(t *testing.T) {
			if err := req.Validate(); err != nil {
				t.Fatal(err)
			}
			prefix := []byte("prefix")
			b := AppendRequest(prefix, req)
			if !bytes.Equal(b[:len(prefix)], prefix) {
				t.Fatal("AppendRequest clobbered dst")
			}
			msg := b[len(prefix):]
			// A second message right behind must not be consumed.
			stream := AppendRequest(append([]byte(nil), msg...), protoSampleRequest())
			got, n, err := DecodeRequest(stream)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(msg) {
				t.Fatalf("consumed %d bytes, want %d", n, len(msg))
			}
			if !reflect.DeepEqual(got, req) {
				t.Fatalf("decoded %+v, want %+v", got, req)
			}
			protoCheckPrefixes(t, msg, func(b []byte) error { _, _, err := DecodeRequest(b); return err })
		})
	}
}

func TestProtocolRequestLayout(t *testing.T) {
	req := Request{Op: OpReadBlock, BlockID: 7, GenStamp: 1001, Offset: 512, Length: 100, ClientName: "c", Token: []byte{9, 8}}
	want := []byte{
		0, 28, // version
		81,          // op
		0, 0, 0, 39, // body length: 32 + 2+1 + 2+2
		0, 0, 0, 0, 0, 0, 0, 7, // block id
		0, 0, 0, 0, 0, 0, 0x03, 0xe9, // stamp 1001
		0, 0, 0, 0, 0, 0, 2, 0, // offset 512
		0, 0, 0, 0, 0, 0, 0, 100, // length
		0, 1, 'c', // client name
		0, 2, 9, 8, // token
	}
	if got := AppendRequest(nil, req); !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %x\nwant %x", got, want)
	}
}

// protoRawRequest builds a request header and body by hand, so tests can
// break any field.
func protoRawRequest(version uint16, op Op, fixed [4]uint64, name, token []byte, nameLen, tokenLen int, trailing []byte, bodyLen int) []byte {
	body := make([]byte, 0, 64)
	for _, v := range fixed {
		body = binary.BigEndian.AppendUint64(body, v)
	}
	body = binary.BigEndian.AppendUint16(body, uint16(nameLen))
	body = append(body, name...)
	body = binary.BigEndian.AppendUint16(body, uint16(tokenLen))
	body = append(body, token...)
	body = append(body, trailing...)
	if bodyLen < 0 {
		bodyLen = len(body)
	}
	b := binary.BigEndian.AppendUint16(nil, version)
	b = append(b, byte(op))
	b = binary.BigEndian.AppendUint32(b, uint32(bodyLen))
	return append(b, body...)
}

func TestProtocolRequestMalformed(t *testing.T) {
	ok := [4]uint64{1, 1001, 0, 10}
	neg := func(v int64) uint64 { return uint64(v) }
	tests := []struct {
		name   string
		msg    []byte
		status Status
		want   string // in the error text
	}{
		{"bad version", protoRawRequest(27, OpReadBlock, ok, nil, nil, 0, 0, nil, -1), StatusErrorInvalid, "version 27"},
		{"bad version alone", []byte{0, 29}, StatusErrorInvalid, "version 29"},
		{"unknown op", protoRawRequest(28, 82, ok, nil, nil, 0, 0, nil, -1), StatusErrorUnsupported, "unknown op"},
		{"unknown op early", []byte{0, 28, 0}, StatusErrorUnsupported, "unknown op"},
		{"oversized body", protoRawRequest(28, OpReadBlock, ok, nil, nil, 0, 0, nil, MaxRequestLen+1)[:7], StatusErrorInvalid, "exceeds"},
		{"huge body", []byte{0, 28, 81, 0xff, 0xff, 0xff, 0xff}, StatusErrorInvalid, "exceeds"},
		{"short body", protoRawRequest(28, OpReadBlock, ok, nil, nil, 0, 0, nil, 35)[:7], StatusErrorInvalid, "shorter"},
		{"negative offset", protoRawRequest(28, OpReadBlock, [4]uint64{1, 1, neg(-1), 10}, nil, nil, 0, 0, nil, -1), StatusErrorInvalid, "negative offset"},
		{"negative length", protoRawRequest(28, OpReadBlock, [4]uint64{1, 1, 0, neg(-10)}, nil, nil, 0, 0, nil, -1), StatusErrorInvalid, "negative length"},
		{"range overflows", protoRawRequest(28, OpReadBlock, [4]uint64{1, 1, math.MaxInt64, 1}, nil, nil, 0, 0, nil, -1), StatusErrorInvalid, "overflows"},
		{"name too long", protoRawRequest(28, OpReadBlock, ok, make([]byte, 257), nil, 257, 0, nil, -1), StatusErrorInvalid, "client name of 257"},
		{"token too long", protoRawRequest(28, OpReadBlock, ok, nil, make([]byte, 1025), 0, 1025, nil, -1), StatusErrorInvalid, "access token of 1025"},
		{"name past body", protoRawRequest(28, OpReadBlock, ok, []byte("ab"), nil, 200, 0, nil, -1), StatusErrorInvalid, "inside the client name"},
		{"token past body", protoRawRequest(28, OpReadBlock, ok, nil, []byte("ab"), 0, 3, nil, -1), StatusErrorInvalid, "inside the access token"},
		{"no token length", protoRawRequest(28, OpReadBlock, ok, []byte("ab"), nil, 4, 0, nil, -1), StatusErrorInvalid, "before the access token length"},
		{"trailing bytes", protoRawRequest(28, OpReadBlock, ok, nil, nil, 0, 0, []byte{1, 2, 3}, -1), StatusErrorInvalid, "3 trailing bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, n, err := DecodeRequest(tt.msg)
			wantProtocolError(t, err, tt.status, tt.want)
			if n != 0 || !reflect.DeepEqual(req, Request{}) {
				t.Fatalf("returned %+v, %d with an error", req, n)
			}
			if StatusOf(err) != tt.status {
				t.Fatalf("StatusOf = %v", StatusOf(err))
			}
		})
	}
}

// Validate holds a request built in memory to the bounds the decoder
// holds a received one to: a client or a harness that builds a request
// past them learns so before it sends it.
func TestProtocolRequestValidateBounds(t *testing.T) {
	at := protoSampleRequest()
	at.ClientName = strings.Repeat("n", MaxClientNameLen)
	at.Token = make([]byte, MaxTokenLen)
	at.Offset, at.Length = math.MaxInt64-5, 5
	if err := at.Validate(); err != nil {
		t.Fatalf("a request at every bound: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Request)
		status Status
		want   string
	}{
		{"unknown op", func(r *Request) { r.Op = 82 }, StatusErrorUnsupported, "unknown op"},
		{"negative offset", func(r *Request) { r.Offset = -1 }, StatusErrorInvalid, "negative offset"},
		{"negative length", func(r *Request) { r.Length = -1 }, StatusErrorInvalid, "negative length"},
		{"range overflows", func(r *Request) { r.Offset++ }, StatusErrorInvalid, "overflows"},
		{"name too long", func(r *Request) { r.ClientName += "n" }, StatusErrorInvalid, fmt.Sprintf("client name of %d bytes", MaxClientNameLen+1)},
		{"token too long", func(r *Request) { r.Token = append(r.Token, 0) }, StatusErrorInvalid, fmt.Sprintf("access token of %d bytes", MaxTokenLen+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := at
			r.Token = slices.Clone(at.Token)
			tt.change(&r)
			wantProtocolError(t, r.Validate(), tt.status, tt.want)
		})
	}
}

// Validate holds a response built in memory to the decoder's bounds, as
// Request.Validate does a request: a value on its bound passes, one past
// it is refused with a message that names it and the bound.
func TestProtocolResponseValidateBounds(t *testing.T) {
	at := Response{Status: StatusSuccess, Message: strings.Repeat("m", MaxMessageLen), ChecksumType: ChecksumCRC32C,
		BytesPerChecksum: MaxBytesPerChecksum, GenStamp: 1, BlockLength: math.MaxInt64}
	if err := at.Validate(); err != nil {
		t.Fatalf("a response at every bound: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Response)
		want   string
	}{
		{"unknown status", func(r *Response) { r.Status = 99 }, "unknown status 99"},
		{"message too long", func(r *Response) { r.Message += "m" }, fmt.Sprintf("message of %d bytes exceeds %d", MaxMessageLen+1, MaxMessageLen)},
		{"checksum type", func(r *Response) { r.ChecksumType = 7 }, "unknown checksum type 7"},
		{"chunk too big", func(r *Response) { r.BytesPerChecksum++ }, fmt.Sprintf("bytes per checksum %d outside [0, %d]", MaxBytesPerChecksum+1, MaxBytesPerChecksum)},
		{"negative chunk", func(r *Response) { r.BytesPerChecksum = -1 }, fmt.Sprintf("bytes per checksum -1 outside [0, %d]", MaxBytesPerChecksum)},
		{"crc32c without chunks", func(r *Response) { r.BytesPerChecksum = 0 }, "CRC32C with 0 bytes per checksum"},
		{"negative first chunk", func(r *Response) { r.FirstChunkOffset = -1 }, "negative first chunk offset -1"},
		{"negative block length", func(r *Response) { r.BlockLength = -1 }, "negative block length -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := at
			tt.change(&r)
			wantProtocolError(t, r.Validate(), StatusErrorInvalid, tt.want)
		})
	}
}

func TestProtocolResponseRoundTrip(t *testing.T) {
	resps := []Response{
		protoSampleResponse(),
		{Status: StatusErrorInvalid, Message: "replica not found"},
		{Status: StatusErrorAccessToken, Message: strings.Repeat("m", MaxMessageLen), ChecksumType: ChecksumCRC32C, BytesPerChecksum: MaxBytesPerChecksum, FirstChunkOffset: math.MaxInt64},
	}
	for _, resp := range resps {
		if err := resp.Validate(); err != nil {
			t.Fatal(err)
		}
		msg := AppendResponse(nil, resp)
		got, n, err := DecodeResponse(append(msg, 0, 0, 0))
		if err != nil || n != len(msg) || !reflect.DeepEqual(got, resp) {
			t.Fatalf("decode = %+v, %d, %v; want %+v, %d", got, n, err, resp, len(msg))
		}
		protoCheckPrefixes(t, msg, func(b []byte) error { _, _, err := DecodeResponse(b); return err })
	}
}

func TestProtocolResponseLayout(t *testing.T) {
	want := []byte{
		0, 3, // status
		0, 2, 'n', 'o', // message
		2,          // CRC32C
		0, 0, 2, 0, // 512
		0, 0, 0, 0, 0, 0, 0x10, 0, // first chunk offset 4096
		0, 0, 0, 0, 0, 0, 0x03, 0xe9, // generation stamp 1001
		0, 0, 0, 0, 0, 0, 0x20, 0, // block length 8192
	}
	got := AppendResponse(nil, Response{Status: StatusErrorInvalid, Message: "no", ChecksumType: ChecksumCRC32C, BytesPerChecksum: 512, FirstChunkOffset: 4096, GenStamp: 1001, BlockLength: 8192})
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %x\nwant %x", got, want)
	}
}

func TestProtocolResponseTruncatesMessage(t *testing.T) {
	// 255 ASCII bytes, then a 3-byte rune that would straddle the bound.
	msg := strings.Repeat("x", MaxMessageLen-1) + "€tail"
	b := AppendResponse(nil, Response{Status: StatusError, Message: msg})
	got, _, err := DecodeResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("x", MaxMessageLen-1); got.Message != want {
		t.Fatalf("message = %q (%d bytes), want %d x's", got.Message, len(got.Message), len(want))
	}
}

func protoRawResponse(status uint16, msgLen int, msg string, ctype byte, bpc uint32, fco int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, status)
	b = binary.BigEndian.AppendUint16(b, uint16(msgLen))
	b = append(b, msg...)
	b = append(b, ctype)
	b = binary.BigEndian.AppendUint32(b, bpc)
	b = binary.BigEndian.AppendUint64(b, uint64(fco))
	b = binary.BigEndian.AppendUint64(b, 1001) // generation stamp
	return binary.BigEndian.AppendUint64(b, 0) // block length
}

func TestProtocolResponseMalformed(t *testing.T) {
	tests := []struct {
		name string
		msg  []byte
		want string
	}{
		{"unknown status", protoRawResponse(8, 0, "", 2, 512, 0), "unknown status 8"},
		{"unknown status early", []byte{0xff, 0xff}, "unknown status 65535"},
		{"message too long", protoRawResponse(0, 257, "", 2, 512, 0)[:4], "message of 257"},
		{"checksum type", protoRawResponse(0, 0, "", 1, 512, 0), "checksum type 1"},
		{"crc32c without chunks", protoRawResponse(0, 0, "", 2, 0, 0), "0 bytes per checksum"},
		{"chunk too big", protoRawResponse(0, 0, "", 2, MaxBytesPerChecksum+1, 0), "exceeds"},
		{"chunk huge", protoRawResponse(0, 0, "", 0, math.MaxUint32, 0), "exceeds"},
		{"negative first chunk", protoRawResponse(0, 0, "", 2, 512, -512), "negative first chunk"},
		{"negative block length", append(protoRawResponse(0, 0, "", 2, 512, 0)[:responseFixedLen-8], 0xff, 0, 0, 0, 0, 0, 0, 0), "negative block length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, n, err := DecodeResponse(tt.msg)
			wantProtocolError(t, err, StatusErrorInvalid, tt.want)
			if n != 0 {
				t.Fatalf("%d bytes taken beside the error, want 0", n)
			}
		})
	}
}

func TestProtocolPacketRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, 511, 512, 513, 4096, 10000, MaxPacketData} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := protoData(size)
			h := PacketHeader{Offset: 1 << 20, Seqno: 3, Last: size == 0}
			msg := AppendPacket(nil, h, data, BytesPerChecksum)
			if want := PacketHeaderLen + numChunks(size, 512)*4 + size; len(msg) != want || len(msg) > MaxPacketLen {
				t.Fatalf("packet of %d bytes, want %d (max %d)", len(msg), want, MaxPacketLen)
			}
			p, n, err := DecodePacket(append(msg, 1, 2, 3), BytesPerChecksum)
			if err != nil || n != len(msg) {
				t.Fatalf("decode: n = %d, err = %v", n, err)
			}
			if p.PacketHeader != h || !bytes.Equal(p.Data, data) {
				t.Fatalf("decoded header %+v, %d data bytes; want %+v, %d", p.PacketHeader, len(p.Data), h, size)
			}
			if err := p.Verify(5, BytesPerChecksum); err != nil {
				t.Fatal(err)
			}
			if cap(p.Data) != len(p.Data) || cap(p.Sums) != len(p.Sums) {
				t.Fatal("decoded slices let appends clobber the input")
			}
			for _, i := range []int{0, 3, 4, PacketHeaderLen - 1, PacketHeaderLen, len(msg) - 1} {
				if i >= 0 && i < len(msg) {
					if _, _, err := DecodePacket(msg[:i], BytesPerChecksum); err != ErrNeedMore {
						t.Fatalf("prefix %d: err = %v, want ErrNeedMore", i, err)
					}
				}
			}
			// The header-only encoder plus checksums and data is the same
			// packet (the sendfile path).
			alt := AppendPacketHeader(nil, h, size, BytesPerChecksum)
			alt = ChecksumChunks(alt, data, BytesPerChecksum)
			alt = append(alt, data...)
			if !bytes.Equal(alt, msg) {
				t.Fatal("AppendPacketHeader+ChecksumChunks differs from AppendPacket")
			}
		})
	}
}

func TestProtocolPacketLayout(t *testing.T) {
	data := []byte("123456789")
	got := AppendPacket(nil, PacketHeader{Offset: 512, Seqno: 1, Last: true}, data, 512)
	want := []byte{
		0, 0, 0, 38, // packet length: 25 + 4 + 9
		0, 0, 0, 0, 0, 0, 2, 0, // offset 512
		0, 0, 0, 0, 0, 0, 0, 1, // seqno
		1,          // last
		0, 0, 0, 9, // data length
		0xe3, 0x06, 0x92, 0x83, // CRC32C("123456789")
	}
	want = append(want, data...)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %x\nwant %x", got, want)
	}
}

func protoRawPacket(total uint32, off, seq int64, flags byte, dataLen uint32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, total)
	b = binary.BigEndian.AppendUint64(b, uint64(off))
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	b = append(b, flags)
	b = binary.BigEndian.AppendUint32(b, dataLen)
	return append(b, rest...)
}

func TestProtocolPacketMalformed(t *testing.T) {
	tests := []struct {
		name string
		msg  []byte
		bpc  int
		want string
	}{
		{"length below header", protoRawPacket(24, 0, 0, 0, 0, nil)[:4], 512, "packet length 24"},
		{"length above max", protoRawPacket(MaxPacketLen+1, 0, 0, 0, 0, nil)[:4], 512, "packet length"},
		{"length huge", []byte{0xff, 0xff, 0xff, 0xff}, 512, "packet length"},
		{"negative offset", protoRawPacket(25, -1, 0, 0, 0, nil), 512, "negative packet offset"},
		{"negative seqno", protoRawPacket(25, 0, -1, 0, 0, nil), 512, "negative packet seqno"},
		{"unknown flags", protoRawPacket(25, 0, 0, 2, 0, nil), 512, "unknown packet flags"},
		{"data too long", protoRawPacket(MaxPacketLen, 0, 0, 0, MaxPacketData+1, nil), 512, "exceeds"},
		{"offset overflows", protoRawPacket(25+4+1, math.MaxInt64, 0, 0, 1, nil), 512, "overflows"},
		{"length mismatch", protoRawPacket(25+4+10, 0, 0, 0, 9, nil), 512, "want 38"},
		{"missing checksums", protoRawPacket(25+9, 0, 0, 0, 9, nil), 512, "want 38"},
		{"chunks too small for max data", protoRawPacket(MaxPacketLen, 0, 0, 0, MaxPacketData, nil), 256, "want"},
		{"bad chunk size", protoRawPacket(25, 0, 0, 0, 0, nil), 0, "bytes per checksum 0"},
		{"huge chunk size", protoRawPacket(25, 0, 0, 0, 0, nil), MaxBytesPerChecksum + 1, "bytes per checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, n, err := DecodePacket(tt.msg, tt.bpc)
			wantProtocolError(t, err, StatusErrorInvalid, tt.want)
			if n != 0 {
				t.Fatalf("%d bytes taken beside the error, want 0", n)
			}
		})
	}
}

// A stream's packets follow HDFS's reader's sanity check: seqnos from 0
// up by one, data in every packet but the last, none in the last.
// The chunk size a packet is decoded with may be anything in [1,
// MaxBytesPerChecksum], the bounds included; outside, an error.
func TestProtocolPacketChunkSizeBounds(t *testing.T) {
	data := protoData(3000)
	for _, bpc := range []int{1, MaxBytesPerChecksum} {
		msg := AppendPacket(nil, PacketHeader{Offset: 7}, data, bpc)
		if p, n, err := DecodePacket(msg, bpc); err != nil || n != len(msg) || !bytes.Equal(p.Data, data) {
			t.Fatalf("chunks of %d: %v (%d of %d bytes)", bpc, err, n, len(msg))
		}
	}
	for _, bpc := range []int{0, MaxBytesPerChecksum + 1} {
		if _, _, err := DecodePacket(AppendPacket(nil, PacketHeader{}, data, 512), bpc); err == nil {
			t.Fatalf("chunks of %d accepted", bpc)
		}
	}
}

func TestProtocolPacketInSequence(t *testing.T) {
	data := []byte("x")
	tests := []struct {
		name string
		last int64
		p    Packet
		want string // "" for in sequence
	}{
		{"first data packet", -1, Packet{PacketHeader: PacketHeader{Seqno: 0}, Data: data}, ""},
		{"next data packet", 4, Packet{PacketHeader: PacketHeader{Seqno: 5}, Data: data}, ""},
		{"empty last packet", 5, Packet{PacketHeader: PacketHeader{Seqno: 6, Last: true}}, ""},
		{"empty stream's last packet", -1, Packet{PacketHeader: PacketHeader{Seqno: 0, Last: true}}, ""},
		{"first packet not 0", -1, Packet{PacketHeader: PacketHeader{Seqno: 1}, Data: data}, "seqno 1 after -1"},
		{"a seqno skipped", 2, Packet{PacketHeader: PacketHeader{Seqno: 4}, Data: data}, "seqno 4 after 2"},
		{"a seqno repeated", 2, Packet{PacketHeader: PacketHeader{Seqno: 2}, Data: data}, "seqno 2 after 2"},
		{"empty packet not last", 0, Packet{PacketHeader: PacketHeader{Seqno: 1}}, "empty packet 1 is not the last"},
		{"last packet with data", 0, Packet{PacketHeader: PacketHeader{Seqno: 1, Last: true}, Data: data}, "last packet 1 carries 1 data bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.InSequence(tt.last)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("InSequence(%d) = %v, want nil", tt.last, err)
				}
				return
			}
			wantProtocolError(t, err, StatusErrorInvalid, tt.want)
		})
	}
}

func TestProtocolVerifyReportsCorruptChunk(t *testing.T) {
	data := protoData(3*512 + 100) // three whole chunks and a short one
	const base = 8192
	msg := AppendPacket(nil, PacketHeader{Offset: base}, data, 512)
	for _, at := range []int{0, 511, 512, 1500, len(data) - 1} {
		corrupt := bytes.Clone(msg)
		p, _, err := DecodePacket(corrupt, 512)
		if err != nil {
			t.Fatal(err)
		}
		p.Data[at] ^= 0x40
		err = p.Verify(42, 512)
		var ce *ChecksumError
		if !errors.As(err, &ce) {
			t.Fatalf("byte %d: err = %v, want *ChecksumError", at, err)
		}
		if wantOff := int64(base + at/512*512); ce.Block != 42 || ce.Offset != wantOff || ce.Want == ce.Got {
			t.Fatalf("byte %d: %+v, want block 42 offset %d", at, ce, wantOff)
		}
		// Stored is the packet's sum, computed the data's: the message
		// names each.
		chunk := at / 512
		stored := binary.BigEndian.Uint32(p.Sums[4*chunk:])
		computed := crc32.Checksum(p.Data[chunk*512:min(chunk*512+512, len(p.Data))], crc32.MakeTable(crc32.Castagnoli))
		if want := fmt.Sprintf("stored %08x, computed %08x", stored, computed); ce.Want != stored || ce.Got != computed || !strings.Contains(err.Error(), want) {
			t.Fatalf("byte %d: %q (%+v), want %q", at, err, ce, want)
		}
		if StatusOf(err) != StatusErrorChecksum {
			t.Fatalf("StatusOf = %v", StatusOf(err))
		}
	}
	// A corrupt checksum is caught the same way.
	p, _, _ := DecodePacket(bytes.Clone(msg), 512)
	p.Sums[13] ^= 1
	var ce *ChecksumError
	if err := p.Verify(42, 512); !errors.As(err, &ce) || ce.Offset != base+3*512 {
		t.Fatalf("corrupt sum: %v", err)
	}
	// Wrong-length sums or chunk size are errors, not panics.
	if err := VerifyChunks(1, 0, data, p.Sums[:8], 512); err == nil {
		t.Fatal("short sums accepted")
	}
	if err := VerifyChunks(1, 0, data, p.Sums, 0); err == nil {
		t.Fatal("chunk size 0 accepted")
	}
}

func TestProtocolChecksumChunks(t *testing.T) {
	// The CRC32C check value.
	if got := ChecksumChunks(nil, []byte("123456789"), 512); !bytes.Equal(got, []byte{0xe3, 0x06, 0x92, 0x83}) {
		t.Fatalf("CRC32C(123456789) = %x", got)
	}
	data := protoData(1300)
	got := ChecksumChunks([]byte{0xaa}, data, 512)
	want := []byte{0xaa}
	for _, c := range [][]byte{data[:512], data[512:1024], data[1024:]} {
		want = binary.BigEndian.AppendUint32(want, crc32.Checksum(c, crc32.MakeTable(crc32.Castagnoli)))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
	if got := ChecksumChunks(nil, nil, 512); len(got) != 0 {
		t.Fatalf("checksums of nothing: %x", got)
	}
}

func TestProtocolStatus(t *testing.T) {
	for s := StatusSuccess; s <= StatusErrorUnsupported; s++ {
		b := AppendStatus([]byte{9}, s)
		got, n, err := DecodeStatus(b[1:])
		if err != nil || n != 2 || got != s {
			t.Fatalf("%v: decode = %v, %d, %v", s, got, n, err)
		}
	}
	if _, _, err := DecodeStatus([]byte{0}); err != ErrNeedMore {
		t.Fatalf("short: %v", err)
	}
	var pe *ProtocolError
	if _, n, err := DecodeStatus([]byte{0, 8}); !errors.As(err, &pe) || n != 0 {
		t.Fatalf("unknown status: %v", err)
	}
	if StatusChecksumOK.String() != "CHECKSUM_OK" || Status(99).String() != "Status(99)" || Op(1).String() != "Op(1)" {
		t.Fatal("String methods")
	}
}

func TestProtocolStatusOf(t *testing.T) {
	tests := []struct {
		err  error
		want Status
	}{
		{nil, StatusSuccess},
		{fmt.Errorf("x: %w", ErrNotExist), StatusErrorInvalid},
		{fmt.Errorf("x: %w", ErrStaleReplica), StatusErrorInvalid},
		{fmt.Errorf("x: %w", ErrOutOfRange), StatusErrorInvalid},
		{fmt.Errorf("x: %w", &ChecksumError{}), StatusErrorChecksum},
		{&ProtocolError{Status: StatusErrorUnsupported}, StatusErrorUnsupported},
		{ErrIO, StatusError},
	}
	for _, tt := range tests {
		if got := StatusOf(tt.err); got != tt.want {
			t.Errorf("StatusOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// Encoders into a reused buffer and the packet decoder must not allocate:
// they run once per packet on the data path.
func TestProtocolNoAllocs(t *testing.T) {
	data := protoData(MaxPacketData)
	buf := make([]byte, 0, MaxPacketLen)
	req := protoSampleRequest()
	resp := protoSampleResponse()
	msg := AppendPacket(nil, PacketHeader{}, data, BytesPerChecksum)
	okStatus := AppendStatus(nil, StatusChecksumOK)
	allocs := testing.AllocsPerRun(20, func() {
		buf = AppendPacket(buf[:0], PacketHeader{Seqno: 1}, data, BytesPerChecksum)
		buf = AppendRequest(buf[:0], req)
		buf = AppendResponse(buf[:0], resp)
		buf = AppendStatus(buf[:0], StatusChecksumOK)
		if _, _, err := DecodePacket(msg, BytesPerChecksum); err != nil {
			t.Fatal(err)
		}
		if _, _, err := DecodeStatus(okStatus); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}

// The wire carries a message of exactly 256 bytes and refuses one byte
// more.
func TestProtocolResponseMessageBound(t *testing.T) {
	msg := strings.Repeat("m", 256)
	got, _, err := DecodeResponse(AppendResponse(nil, Response{Status: StatusError, Message: msg}))
	if err != nil || got.Message != msg {
		t.Fatalf("a 256-byte message: %v, got %d bytes", err, len(got.Message))
	}
	if _, _, err := DecodeResponse(protoRawResponse(0, 257, strings.Repeat("m", 257), 2, 512, 0)); err == nil {
		t.Fatal("a 257-byte message was accepted")
	}
}
