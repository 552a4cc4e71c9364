// Package shortcircuit is HDFS's short-circuit local read path (HDFS-347)
// and its sharded cache (HDFS-15202), over the model world seam: the
// datanode's Unix-domain endpoint, which serves data traffic, block fds
// passed with SCM_RIGHTS and shared-memory slots; and the client's local
// block reader and short-circuit cache, falling back to TCP.
package shortcircuit

import (
	"encoding/binary"
	"errors"
	"fmt"

	"xceiver/model"
)

// The domain-socket protocol. A connection's first request decides what
// it is: an ordinary DataTransferProtocol read (data traffic over the
// domain socket), handed to the datanode, or one of the short-circuit
// requests below, each answered with a Response and, for REQUEST_SHM and
// REQUEST_FDS, fds passed with the response's bytes.
//
// Request wire layout (integers big-endian):
//
//	version  uint16  model.ProtocolVersion
//	op       uint8   OpRequestFDs, OpReleaseSlot or OpRequestShm
//	bodyLen  uint32  ≤ MaxRequestLen
//	body:
//	  blockID  uint64   (REQUEST_FDS)
//	  stamp    uint64   (REQUEST_FDS)
//	  shmID    uint64   (REQUEST_FDS, RELEASE)
//	  slot     uint32   (REQUEST_FDS, RELEASE)
//	  tokenLen uint16, token (REQUEST_FDS), ≤ model.MaxTokenLen
//	  nameLen  uint16, client name (REQUEST_SHM), ≤ model.MaxClientNameLen
//
// Every op's body carries all fields (unused ones zero or empty), so one
// decoder bounds them all.
//
// Response wire layout:
//
//	status  uint16  a model.Status
//	msgLen  uint16  ≤ model.MaxMessageLen, then the message
//	shmID   uint64  the segment (REQUEST_SHM)
//	size    uint32  the segment's size (REQUEST_SHM)
//	stamp   uint64  the replica's stamp (REQUEST_FDS)
//	length  int64   the replica's length (REQUEST_FDS), ≥ 0
//	receipt uint8   1: the datanode waits for a one-byte receipt after
//	                passing fds (HDFS-7915's USE_RECEIPT_VERIFICATION), 0:
//	                it does not

// Ops of the domain socket, numbered as in HDFS.
const (
	OpRequestFDs  = model.OpRequestShortCircuitFDs // 87
	OpReleaseSlot = model.Op(88)                   // RELEASE_SHORT_CIRCUIT_FDS
	OpRequestShm  = model.Op(89)                   // REQUEST_SHORT_CIRCUIT_SHM
)

// Sizes of the wire format and of segments.
const (
	MaxRequestLen    = 2048
	requestHeaderLen = 2 + 1 + 4
	requestFixedLen  = 8 + 8 + 8 + 4
	minRequestBody   = requestFixedLen + 2 + 2
	responseFixedLen = 2 + 2 + 8 + 4 + 8 + 8 + 1

	// SlotSize is one slot: flags, block id, stamp, padding to a cache
	// line, as in HDFS's ShortCircuitShm.
	SlotSize = 64
	// SegmentSize is a segment's size: one page, 64 slots.
	SegmentSize = 4096
	// SlotsPerSegment is the number of slots in a segment.
	SlotsPerSegment = SegmentSize / SlotSize

	// slot words
	slotFlags = 0
	slotBlock = 8
	slotStamp = 16
	// flagValid: the datanode vouches for the replica; cleared when the
	// block is deleted, replaced or its stamp bumped.
	flagValid = 1 << 63
)

// Request is a short-circuit request.
type Request struct {
	Op       model.Op
	BlockID  uint64
	Stamp    uint64
	ShmID    uint64
	Slot     uint32
	Token    []byte
	ClientID string
}

// Response answers a Request.
type Response struct {
	Status  model.Status
	Message string
	ShmID   uint64
	Size    uint32
	Stamp   uint64
	Length  int64
	// Receipt asks the client to confirm it received the passed fds by
	// sending one byte (ReceiptByte) on the same connection; until it
	// arrives the datanode's slot is provisional, and it is freed if the
	// connection fails first.
	Receipt bool
}

// ReceiptByte is what a client sends to confirm passed fds.
const ReceiptByte = 0

// IsShortCircuitOp reports whether op is served by this package (the
// others on a domain socket go to the datanode as data traffic).
func IsShortCircuitOp(op model.Op) bool {
	return op == OpRequestFDs || op == OpReleaseSlot || op == OpRequestShm
}

func invalid(format string, args ...any) error {
	return &model.ProtocolError{Status: model.StatusErrorInvalid, Msg: fmt.Sprintf(format, args...)}
}

// AppendRequest appends r's encoding to dst.
func AppendRequest(dst []byte, r Request) []byte {
	body := minRequestBody + len(r.Token) + len(r.ClientID)
	dst = binary.BigEndian.AppendUint16(dst, model.ProtocolVersion)
	dst = append(dst, byte(r.Op))
	dst = binary.BigEndian.AppendUint32(dst, uint32(body))
	dst = binary.BigEndian.AppendUint64(dst, r.BlockID)
	dst = binary.BigEndian.AppendUint64(dst, r.Stamp)
	dst = binary.BigEndian.AppendUint64(dst, r.ShmID)
	dst = binary.BigEndian.AppendUint32(dst, r.Slot)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.Token)))
	dst = append(dst, r.Token...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.ClientID)))
	return append(dst, r.ClientID...)
}

// DecodeRequest decodes a request from the start of b: the request and the
// bytes used, model.ErrNeedMore for a valid prefix, or a
// *model.ProtocolError. Version, op and length are checked as soon as they
// arrive.
func DecodeRequest(b []byte) (Request, int, error) {
	var r Request
	if len(b) >= 2 {
		if v := binary.BigEndian.Uint16(b); v != model.ProtocolVersion {
			return r, 0, invalid("protocol version %d, want %d", v, model.ProtocolVersion)
		}
	}
	if len(b) >= 3 && !IsShortCircuitOp(model.Op(b[2])) {
		return r, 0, &model.ProtocolError{Status: model.StatusErrorUnsupported, Msg: "op " + model.Op(b[2]).String() + " is not a short-circuit op"}
	}
	if len(b) < requestHeaderLen {
		return r, 0, model.ErrNeedMore
	}
	bodyLen := binary.BigEndian.Uint32(b[3:])
	if bodyLen > MaxRequestLen || bodyLen < minRequestBody {
		return r, 0, invalid("short-circuit request body of %d bytes outside [%d, %d]", bodyLen, minRequestBody, MaxRequestLen)
	}
	n := requestHeaderLen + int(bodyLen)
	if len(b) < n {
		return r, 0, model.ErrNeedMore
	}
	body := b[requestHeaderLen:n]
	r.Op = model.Op(b[2])
	r.BlockID = binary.BigEndian.Uint64(body)
	r.Stamp = binary.BigEndian.Uint64(body[8:])
	r.ShmID = binary.BigEndian.Uint64(body[16:])
	r.Slot = binary.BigEndian.Uint32(body[24:])
	rest := body[requestFixedLen:]
	tok, rest, err := field(rest, model.MaxTokenLen, "token")
	if err != nil {
		return Request{}, 0, err
	}
	name, rest, err := field(rest, model.MaxClientNameLen, "client name")
	if err != nil {
		return Request{}, 0, err
	}
	if len(rest) != 0 {
		return Request{}, 0, invalid("%d trailing bytes in a short-circuit request", len(rest))
	}
	if len(tok) > 0 {
		r.Token = append([]byte(nil), tok...)
	}
	r.ClientID = string(name)
	return r, n, nil
}

func field(b []byte, max int, what string) (f, rest []byte, err error) {
	if len(b) < 2 {
		return nil, nil, invalid("short-circuit request ends before the %s length", what)
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > max {
		return nil, nil, invalid("%s of %d bytes exceeds %d", what, n, max)
	}
	if len(b)-2 < n {
		return nil, nil, invalid("short-circuit request ends inside the %s", what)
	}
	return b[2 : 2+n], b[2+n:], nil
}

// AppendResponse appends r's encoding to dst; a long message is cut.
func AppendResponse(dst []byte, r Response) []byte {
	msg := r.Message
	if len(msg) > model.MaxMessageLen {
		msg = msg[:model.MaxMessageLen]
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Status))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(msg)))
	dst = append(dst, msg...)
	dst = binary.BigEndian.AppendUint64(dst, r.ShmID)
	dst = binary.BigEndian.AppendUint32(dst, r.Size)
	dst = binary.BigEndian.AppendUint64(dst, r.Stamp)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Length))
	if r.Receipt {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// DecodeResponse decodes a response from the start of b, like
// DecodeRequest.
func DecodeResponse(b []byte) (Response, int, error) {
	var r Response
	if len(b) >= 2 {
		if s := model.Status(binary.BigEndian.Uint16(b)); !s.Known() {
			return r, 0, invalid("unknown status %d", uint16(s))
		}
	}
	if len(b) < 4 {
		return r, 0, model.ErrNeedMore
	}
	msgLen := int(binary.BigEndian.Uint16(b[2:]))
	if msgLen > model.MaxMessageLen {
		return r, 0, invalid("message of %d bytes exceeds %d", msgLen, model.MaxMessageLen)
	}
	n := responseFixedLen + msgLen
	if len(b) < n {
		return r, 0, model.ErrNeedMore
	}
	r.Status = model.Status(binary.BigEndian.Uint16(b))
	r.Message = string(b[4 : 4+msgLen])
	p := b[4+msgLen : n]
	r.ShmID = binary.BigEndian.Uint64(p)
	r.Size = binary.BigEndian.Uint32(p[8:])
	r.Stamp = binary.BigEndian.Uint64(p[12:])
	r.Length = int64(binary.BigEndian.Uint64(p[20:]))
	if r.Length < 0 {
		return Response{}, 0, invalid("negative replica length %d", r.Length)
	}
	switch p[28] {
	case 0:
	case 1:
		r.Receipt = true
	default:
		return Response{}, 0, invalid("receipt flag %d, want 0 or 1", p[28])
	}
	return r, n, nil
}

// ErrFallback marks a short-circuit failure after which the read goes
// over TCP.
var ErrFallback = errors.New("short-circuit read failed")
