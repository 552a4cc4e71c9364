package model

// The wire protocol between clients and datanodes, shaped like HDFS's
// DataTransferProtocol: a request (version, op, length-prefixed body), a
// response (status and checksum parameters), a stream of packets (header,
// CRC32C per chunk, data) ending with an empty last packet, and the client's
// final status. All integers are big-endian.
//
// Decoders are incremental and defensive: they take the bytes received so
// far and return the message, the bytes it used and an error that is
// ErrNeedMore (wait for more bytes), a *ProtocolError (malformed input: the
// connection is unusable) or nil. Every length is bounded before it is
// trusted, so a hostile peer can neither make a decoder panic nor make it
// allocate or wait for more than the bounds below. A field is rejected as
// soon as it is complete, so garbage is caught without waiting for the rest.
//
// Encoders append to a caller's buffer, so a loop or a worker can reuse one
// buffer for every message and encode without allocating.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// ProtocolVersion is the DataTransferProtocol version spoken here; HDFS
// has used 28 since 2.x.
const ProtocolVersion = 28

// Bounds and sizes of the wire format.
const (
	// MaxRequestLen bounds a request body.
	MaxRequestLen = 4096
	// MaxClientNameLen bounds Request.ClientName, in bytes.
	MaxClientNameLen = 256
	// MaxTokenLen bounds Request.Token.
	MaxTokenLen = 1024
	// MaxMessageLen bounds Response.Message, in bytes.
	MaxMessageLen = 256

	// BytesPerChecksum is the chunk size of CRC32C checksums, as in HDFS.
	BytesPerChecksum = 512
	// ChecksumSize is the size of one CRC32C checksum.
	ChecksumSize = 4
	// MaxBytesPerChecksum bounds the chunk size a response may announce:
	// a chunk must fit in one packet.
	MaxBytesPerChecksum = MaxPacketData

	// MaxPacketData bounds a packet's data (HDFS sends ≈64 KiB).
	MaxPacketData = 65536
	// PacketHeaderLen is the size of a packet header, length field
	// included.
	PacketHeaderLen = 25
	// MaxPacketLen bounds a whole packet: header, checksums and data. It
	// admits MaxPacketData bytes at BytesPerChecksum; with smaller chunks a
	// packet must carry less data.
	MaxPacketLen = PacketHeaderLen + MaxPacketData/BytesPerChecksum*ChecksumSize + MaxPacketData

	requestHeaderLen = 2 + 1 + 4                 // version, op, body length
	requestFixedLen  = 8 + 8 + 8 + 8             // block id, stamp, offset, length
	minRequestBody   = requestFixedLen + 2 + 2   // with empty name and token
	responseFixedLen = 2 + 2 + 1 + 4 + 8 + 8 + 8 // everything but the message
	statusLen        = 2                         // the client's final status
	packetLastFlag   = 1                         // the only defined packet flag
)

// Op is a request's operation.
type Op uint8

// Operations, numbered as in HDFS. Only OpReadBlock is served so far;
// servers answer the others with StatusErrorUnsupported.
const (
	OpWriteBlock             Op = 80
	OpReadBlock              Op = 81
	OpReplaceBlock           Op = 83
	OpRequestShortCircuitFDs Op = 87
	// OpAppendBlock and OpDeleteBlock are xceiver's: in HDFS an append
	// goes through a write pipeline and a delete through the namenode;
	// here the client asks the datanode directly, so the history checker
	// sees every change of a block.
	OpAppendBlock Op = 90
	OpDeleteBlock Op = 91
)

func (op Op) String() string {
	switch op {
	case OpWriteBlock:
		return "WRITE_BLOCK"
	case OpReadBlock:
		return "READ_BLOCK"
	case OpRequestShortCircuitFDs:
		return "REQUEST_SHORT_CIRCUIT_FDS"
	case OpReplaceBlock:
		return "REPLACE_BLOCK"
	case OpAppendBlock:
		return "APPEND_BLOCK"
	case OpDeleteBlock:
		return "DELETE_BLOCK"
	}
	return "Op(" + strconv.Itoa(int(op)) + ")"
}

func (op Op) known() bool {
	switch op {
	case OpWriteBlock, OpReadBlock, OpRequestShortCircuitFDs, OpReplaceBlock, OpAppendBlock, OpDeleteBlock:
		return true
	}
	return false
}

// Status is the outcome carried by a response or by the client's final
// status message.
type Status uint16

// Statuses, numbered as in HDFS's datatransfer.proto.
const (
	StatusSuccess          Status = 0
	StatusError            Status = 1
	StatusErrorChecksum    Status = 2
	StatusErrorInvalid     Status = 3
	StatusErrorExists      Status = 4
	StatusErrorAccessToken Status = 5
	StatusChecksumOK       Status = 6
	StatusErrorUnsupported Status = 7
)

var statusNames = [...]string{
	"SUCCESS", "ERROR", "ERROR_CHECKSUM", "ERROR_INVALID",
	"ERROR_EXISTS", "ERROR_ACCESS_TOKEN", "CHECKSUM_OK", "ERROR_UNSUPPORTED",
}

func (s Status) String() string {
	if s.known() {
		return statusNames[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

func (s Status) known() bool { return int(s) < len(statusNames) }

// Known reports whether s is a status of the protocol.
func (s Status) Known() bool { return s.known() }

// ChecksumType names a checksum algorithm.
type ChecksumType uint8

// Checksum types, numbered as in HDFS. Only CRC32C carries checksums;
// ChecksumNull lets an error response leave the checksum fields empty.
const (
	ChecksumNull   ChecksumType = 0
	ChecksumCRC32C ChecksumType = 2
)

// ErrNeedMore means the bytes so far are a valid prefix of a message: read
// more and decode again from the same start.
var ErrNeedMore = errors.New("model: need more bytes")

// ProtocolError reports malformed input. The peer cannot be trusted to be
// at a message boundary any more, so the connection must be closed, after
// answering with Status if a response is still due.
type ProtocolError struct {
	Status Status // what to answer: StatusErrorInvalid or StatusErrorUnsupported
	Msg    string
}

func (e *ProtocolError) Error() string { return "model: protocol: " + e.Msg }

func invalid(format string, args ...any) error {
	return &ProtocolError{Status: StatusErrorInvalid, Msg: fmt.Sprintf(format, args...)}
}

// ChecksumError reports data that does not match its stored checksum. No
// byte of the failed read is returned.
type ChecksumError struct {
	Block  uint64 // block id
	Offset int64  // offset in the block of the corrupt chunk's first byte
	Want   uint32 // stored checksum
	Got    uint32 // checksum of the data
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("model: checksum error in block %d, chunk at offset %d: stored %08x, computed %08x",
		e.Block, e.Offset, e.Want, e.Got)
}

// StatusOf maps an error from decoding or from the block store to the
// status a server answers with.
func StatusOf(err error) Status {
	if err == nil {
		return StatusSuccess
	}
	// (errors.AsType, not errors.As: As's target escapes, two allocations
	// for every failed op.)
	if pe, ok := errors.AsType[*ProtocolError](err); ok {
		return pe.Status
	}
	switch _, checksum := errors.AsType[*ChecksumError](err); {
	case checksum:
		return StatusErrorChecksum
	case errors.Is(err, ErrAccessToken):
		return StatusErrorAccessToken
	case errors.Is(err, ErrExist):
		return StatusErrorExists
	case errors.Is(err, ErrNotExist), errors.Is(err, ErrStaleReplica), errors.Is(err, ErrOutOfRange):
		return StatusErrorInvalid
	}
	return StatusError
}

// Request opens an operation on a block.
//
// Wire layout (request header, then body):
//
//	version  uint16  ProtocolVersion
//	op       uint8
//	bodyLen  uint32  ≤ MaxRequestLen
//	body:
//	  blockID   uint64
//	  genStamp  uint64
//	  offset    int64   ≥ 0
//	  length    int64   ≥ 0, offset+length must not overflow
//	  nameLen   uint16  ≤ MaxClientNameLen, then the name
//	  tokenLen  uint16  ≤ MaxTokenLen, then the token
//
// The body must hold exactly these fields.
type Request struct {
	Op         Op
	BlockID    uint64
	GenStamp   uint64
	Offset     int64 // first byte wanted
	Length     int64 // bytes wanted from Offset
	ClientName string
	Token      []byte // block access token
}

// Validate reports whether r is within the protocol's bounds; a peer
// rejects a request that is not.
func (r *Request) Validate() error {
	switch {
	case !r.Op.known():
		return &ProtocolError{Status: StatusErrorUnsupported, Msg: "unknown op " + r.Op.String()}
	case r.Offset < 0:
		return invalid("negative offset %d", r.Offset)
	case r.Length < 0:
		return invalid("negative length %d", r.Length)
	case r.Offset > math.MaxInt64-r.Length:
		return invalid("offset %d + length %d overflows", r.Offset, r.Length)
	case len(r.ClientName) > MaxClientNameLen:
		return invalid("client name of %d bytes exceeds %d", len(r.ClientName), MaxClientNameLen)
	case len(r.Token) > MaxTokenLen:
		return invalid("access token of %d bytes exceeds %d", len(r.Token), MaxTokenLen)
	}
	return nil
}

// AppendRequest appends the encoding of r to dst. It encodes r as given;
// call Validate first if r may break the protocol's bounds.
func AppendRequest(dst []byte, r Request) []byte {
	body := requestFixedLen + 2 + len(r.ClientName) + 2 + len(r.Token)
	dst = slices.Grow(dst, requestHeaderLen+body)
	dst = binary.BigEndian.AppendUint16(dst, ProtocolVersion)
	dst = append(dst, byte(r.Op))
	dst = binary.BigEndian.AppendUint32(dst, uint32(body))
	dst = binary.BigEndian.AppendUint64(dst, r.BlockID)
	dst = binary.BigEndian.AppendUint64(dst, r.GenStamp)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Offset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Length))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.ClientName)))
	dst = append(dst, r.ClientName...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.Token)))
	return append(dst, r.Token...)
}

// DecodeRequest decodes a request from the start of b. It returns the
// request and the number of bytes it used, ErrNeedMore if b is a valid
// prefix, or a *ProtocolError. The version, op and body length are checked
// as soon as they arrive. The token is copied out of b.
func DecodeRequest(b []byte) (Request, int, error) {
	var r Request
	if len(b) >= 2 {
		if v := binary.BigEndian.Uint16(b); v != ProtocolVersion {
			return r, 0, invalid("protocol version %d, want %d", v, ProtocolVersion)
		}
	}
	if len(b) >= 3 {
		if op := Op(b[2]); !op.known() {
			return r, 0, &ProtocolError{Status: StatusErrorUnsupported, Msg: "unknown op " + op.String()}
		}
	}
	if len(b) < requestHeaderLen {
		return r, 0, ErrNeedMore
	}
	bodyLen := binary.BigEndian.Uint32(b[3:])
	if bodyLen > MaxRequestLen {
		return r, 0, invalid("request body of %d bytes exceeds %d", bodyLen, MaxRequestLen)
	}
	if bodyLen < minRequestBody {
		return r, 0, invalid("request body of %d bytes is shorter than %d", bodyLen, minRequestBody)
	}
	n := requestHeaderLen + int(bodyLen)
	if len(b) < n {
		return r, 0, ErrNeedMore
	}
	r.Op = Op(b[2])
	body := b[requestHeaderLen:n]
	r.BlockID = binary.BigEndian.Uint64(body)
	r.GenStamp = binary.BigEndian.Uint64(body[8:])
	r.Offset = int64(binary.BigEndian.Uint64(body[16:]))
	r.Length = int64(binary.BigEndian.Uint64(body[24:]))
	rest := body[requestFixedLen:]

	name, rest, err := readField(rest, MaxClientNameLen, "client name")
	if err != nil {
		return Request{}, 0, err
	}
	token, rest, err := readField(rest, MaxTokenLen, "access token")
	if err != nil {
		return Request{}, 0, err
	}
	if len(rest) != 0 {
		return Request{}, 0, invalid("%d trailing bytes in request body", len(rest))
	}
	r.ClientName = string(name)
	if len(token) > 0 {
		r.Token = append([]byte(nil), token...)
	}
	if err := r.Validate(); err != nil {
		return Request{}, 0, err
	}
	return r, n, nil
}

// readField splits a uint16-length-prefixed field of at most max bytes off
// the front of b, which holds a complete message body.
func readField(b []byte, max int, what string) (field, rest []byte, err error) {
	if len(b) < 2 {
		return nil, nil, invalid("request body ends before the %s length", what)
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > max {
		return nil, nil, invalid("%s of %d bytes exceeds %d", what, n, max)
	}
	if len(b)-2 < n {
		return nil, nil, invalid("request body ends inside the %s", what)
	}
	return b[2 : 2+n], b[2+n:], nil
}

// Response answers a request: the status, a message for errors and the
// checksum parameters of the packets that follow.
//
// Wire layout:
//
//	status            uint16
//	messageLen        uint16  ≤ MaxMessageLen, then the message
//	checksumType      uint8   ChecksumNull or ChecksumCRC32C
//	bytesPerChecksum  uint32  ≤ MaxBytesPerChecksum; ≥ 1 for CRC32C
//	firstChunkOffset  int64   ≥ 0: block offset of the first packet's data
//	genStamp          uint64  the replica's generation stamp
//	blockLength       int64   ≥ 0: the replica's length
type Response struct {
	Status           Status
	Message          string
	ChecksumType     ChecksumType
	BytesPerChecksum int
	FirstChunkOffset int64
	// GenStamp and BlockLength describe the replica served (a read) or
	// written (a write, append or replace).
	GenStamp    uint64
	BlockLength int64
}

// Validate reports whether r is within the protocol's bounds.
func (r *Response) Validate() error {
	switch {
	case !r.Status.known():
		return invalid("unknown status %d", uint16(r.Status))
	case len(r.Message) > MaxMessageLen:
		return invalid("message of %d bytes exceeds %d", len(r.Message), MaxMessageLen)
	case r.ChecksumType != ChecksumNull && r.ChecksumType != ChecksumCRC32C:
		return invalid("unknown checksum type %d", r.ChecksumType)
	case r.BytesPerChecksum < 0 || r.BytesPerChecksum > MaxBytesPerChecksum:
		return invalid("bytes per checksum %d outside [0, %d]", r.BytesPerChecksum, MaxBytesPerChecksum)
	case r.ChecksumType == ChecksumCRC32C && r.BytesPerChecksum == 0:
		return invalid("CRC32C with 0 bytes per checksum")
	case r.FirstChunkOffset < 0:
		return invalid("negative first chunk offset %d", r.FirstChunkOffset)
	case r.BlockLength < 0:
		return invalid("negative block length %d", r.BlockLength)
	}
	return nil
}

// AppendResponse appends the encoding of r to dst. A message longer than
// MaxMessageLen is cut at a rune boundary, so servers may pass any error's
// text.
func AppendResponse(dst []byte, r Response) []byte {
	msg := r.Message
	if len(msg) > MaxMessageLen {
		cut := MaxMessageLen
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Status))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(msg)))
	dst = append(dst, msg...)
	dst = append(dst, byte(r.ChecksumType))
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.BytesPerChecksum))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.FirstChunkOffset))
	dst = binary.BigEndian.AppendUint64(dst, r.GenStamp)
	return binary.BigEndian.AppendUint64(dst, uint64(r.BlockLength))
}

// DecodeResponse decodes a response from the start of b, like
// DecodeRequest.
func DecodeResponse(b []byte) (Response, int, error) {
	var r Response
	if len(b) >= 2 {
		if s := Status(binary.BigEndian.Uint16(b)); !s.known() {
			return r, 0, invalid("unknown status %d", uint16(s))
		}
	}
	if len(b) < 4 {
		return r, 0, ErrNeedMore
	}
	msgLen := int(binary.BigEndian.Uint16(b[2:]))
	if msgLen > MaxMessageLen {
		return r, 0, invalid("message of %d bytes exceeds %d", msgLen, MaxMessageLen)
	}
	n := responseFixedLen + msgLen
	if len(b) < n {
		return r, 0, ErrNeedMore
	}
	r.Status = Status(binary.BigEndian.Uint16(b))
	r.Message = string(b[4 : 4+msgLen])
	p := b[4+msgLen : n]
	r.ChecksumType = ChecksumType(p[0])
	bpc := binary.BigEndian.Uint32(p[1:])
	if bpc > MaxBytesPerChecksum {
		return Response{}, 0, invalid("bytes per checksum %d exceeds %d", bpc, MaxBytesPerChecksum)
	}
	r.BytesPerChecksum = int(bpc)
	r.FirstChunkOffset = int64(binary.BigEndian.Uint64(p[5:]))
	r.GenStamp = binary.BigEndian.Uint64(p[13:])
	r.BlockLength = int64(binary.BigEndian.Uint64(p[21:]))
	if err := r.Validate(); err != nil {
		return Response{}, 0, err
	}
	return r, n, nil
}

// PacketHeader describes a packet.
type PacketHeader struct {
	Offset int64 // offset in the block of the packet's first data byte
	Seqno  int64 // 0, 1, 2, … within one response
	Last   bool  // the empty packet that ends a stream
}

// Packet is a decoded packet. Sums and Data alias the decoder's input.
//
// Wire layout:
//
//	packetLen  uint32  the whole packet, this field included; ≤ MaxPacketLen
//	offset     int64   ≥ 0
//	seqno      int64   ≥ 0
//	flags      uint8   bit 0: last; other bits must be 0
//	dataLen    uint32  ≤ MaxPacketData
//	sums       ChecksumSize bytes per chunk of bytesPerChecksum (the last
//	           chunk may be short): CRC32C, big-endian
//	data       dataLen bytes
type Packet struct {
	PacketHeader
	Sums []byte
	Data []byte
}

// Verify checks p's data against its checksums; see VerifyChunks.
func (p *Packet) Verify(block uint64, bytesPerChecksum int) error {
	return VerifyChunks(block, p.Offset, p.Data, p.Sums, bytesPerChecksum)
}

// numChunks is the number of checksum chunks covering n bytes.
func numChunks(n, bytesPerChecksum int) int {
	return (n + bytesPerChecksum - 1) / bytesPerChecksum
}

// AppendPacketHeader appends a packet header for dataLen bytes of data in
// chunks of bytesPerChecksum (positive). The caller appends the checksums
// and the data (or sends the data with Sendfile); AppendPacket does it all
// for data in memory.
func AppendPacketHeader(dst []byte, h PacketHeader, dataLen, bytesPerChecksum int) []byte {
	total := PacketHeaderLen + numChunks(dataLen, bytesPerChecksum)*ChecksumSize + dataLen
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.Offset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.Seqno))
	var flags byte
	if h.Last {
		flags |= packetLastFlag
	}
	dst = append(dst, flags)
	return binary.BigEndian.AppendUint32(dst, uint32(dataLen))
}

// AppendPacket appends a whole packet carrying data to dst, computing the
// checksums. The caller keeps data within MaxPacketData.
func AppendPacket(dst []byte, h PacketHeader, data []byte, bytesPerChecksum int) []byte {
	dst = AppendPacketHeader(dst, h, len(data), bytesPerChecksum)
	dst = ChecksumChunks(dst, data, bytesPerChecksum)
	return append(dst, data...)
}

// DecodePacket decodes a packet from the start of b, whose checksums cover
// chunks of bytesPerChecksum (from the response). It returns the packet,
// the number of bytes used, ErrNeedMore or a *ProtocolError. The header is
// checked before the rest is awaited. It does not verify the checksums:
// call Packet.Verify.
func DecodePacket(b []byte, bytesPerChecksum int) (Packet, int, error) {
	var p Packet
	if bytesPerChecksum < 1 || bytesPerChecksum > MaxBytesPerChecksum {
		return p, 0, invalid("bytes per checksum %d outside [1, %d]", bytesPerChecksum, MaxBytesPerChecksum)
	}
	if len(b) >= 4 {
		total := binary.BigEndian.Uint32(b)
		if total < PacketHeaderLen || total > MaxPacketLen {
			return p, 0, invalid("packet length %d outside [%d, %d]", total, PacketHeaderLen, MaxPacketLen)
		}
	}
	if len(b) < PacketHeaderLen {
		return p, 0, ErrNeedMore
	}
	total := int(binary.BigEndian.Uint32(b))
	p.Offset = int64(binary.BigEndian.Uint64(b[4:]))
	p.Seqno = int64(binary.BigEndian.Uint64(b[12:]))
	flags := b[20]
	p.Last = flags&packetLastFlag != 0
	dataLen32 := binary.BigEndian.Uint32(b[21:])
	switch {
	case p.Offset < 0:
		return Packet{}, 0, invalid("negative packet offset %d", p.Offset)
	case p.Seqno < 0:
		return Packet{}, 0, invalid("negative packet seqno %d", p.Seqno)
	case flags&^packetLastFlag != 0:
		return Packet{}, 0, invalid("unknown packet flags %#x", flags)
	case dataLen32 > MaxPacketData:
		return Packet{}, 0, invalid("packet data of %d bytes exceeds %d", dataLen32, MaxPacketData)
	}
	dataLen := int(dataLen32)
	if p.Offset > math.MaxInt64-int64(dataLen) {
		return Packet{}, 0, invalid("packet offset %d + length %d overflows", p.Offset, dataLen)
	}
	sumsLen := numChunks(dataLen, bytesPerChecksum) * ChecksumSize
	if want := PacketHeaderLen + sumsLen + dataLen; total != want {
		return Packet{}, 0, invalid("packet length %d, want %d for %d data bytes in chunks of %d",
			total, want, dataLen, bytesPerChecksum)
	}
	if len(b) < total {
		return Packet{}, 0, ErrNeedMore
	}
	s := PacketHeaderLen + sumsLen
	p.Sums = b[PacketHeaderLen:s:s]
	p.Data = b[s:total:total]
	return p, total, nil
}

// InSequence checks p against the packet before it in the same stream,
// whose seqno was last (-1 before the first), as HDFS's reader does
// (PacketHeader.sanityCheck) before it looks at the data: seqnos go up by
// one, only the last packet is empty, and the last packet carries no
// data. DecodePacket cannot judge these, since they depend on the stream.
func (p *Packet) InSequence(last int64) error {
	switch {
	case p.Seqno != last+1:
		return invalid("packet seqno %d after %d", p.Seqno, last)
	case len(p.Data) == 0 && !p.Last:
		return invalid("empty packet %d is not the last", p.Seqno)
	case p.Last && len(p.Data) > 0:
		return invalid("last packet %d carries %d data bytes", p.Seqno, len(p.Data))
	}
	return nil
}

// AppendStatus appends the client's final status message (StatusChecksumOK
// after a verified read, StatusSuccess, or an error): a uint16.
func AppendStatus(dst []byte, s Status) []byte {
	return binary.BigEndian.AppendUint16(dst, uint16(s))
}

// DecodeStatus decodes the client's final status message from the start
// of b.
func DecodeStatus(b []byte) (Status, int, error) {
	if len(b) < statusLen {
		return 0, 0, ErrNeedMore
	}
	s := Status(binary.BigEndian.Uint16(b))
	if !s.known() {
		return 0, 0, invalid("unknown status %d", uint16(s))
	}
	return s, statusLen, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ChecksumChunks appends to dst the CRC32C of each bytesPerChecksum-byte
// chunk of data (the last may be short), big-endian, ChecksumSize bytes
// each. bytesPerChecksum must be positive.
func ChecksumChunks(dst []byte, data []byte, bytesPerChecksum int) []byte {
	if bytesPerChecksum <= 0 {
		panic("model: ChecksumChunks: bytesPerChecksum must be positive")
	}
	for len(data) > 0 {
		n := min(len(data), bytesPerChecksum)
		dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(data[:n], castagnoli))
		data = data[n:]
	}
	return dst
}

// VerifyChunks checks data against sums, as ChecksumChunks would compute
// them. On a mismatch it returns a *ChecksumError naming the block and the
// first corrupt chunk; off, the block offset of data[0], is used only to
// name the chunk. Sums of the wrong length give a *ProtocolError.
func VerifyChunks(block uint64, off int64, data, sums []byte, bytesPerChecksum int) error {
	if bytesPerChecksum < 1 {
		return invalid("bytes per checksum %d", bytesPerChecksum)
	}
	if want := numChunks(len(data), bytesPerChecksum) * ChecksumSize; len(sums) != want {
		return invalid("%d checksum bytes for %d data bytes, want %d", len(sums), len(data), want)
	}
	for i := 0; len(data) > 0; i++ {
		n := min(len(data), bytesPerChecksum)
		want := binary.BigEndian.Uint32(sums[i*ChecksumSize:])
		if got := crc32.Checksum(data[:n], castagnoli); got != want {
			return &ChecksumError{Block: block, Offset: off + int64(i)*int64(bytesPerChecksum), Want: want, Got: got}
		}
		data = data[n:]
	}
	return nil
}
