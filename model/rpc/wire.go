// Package rpc is a Hadoop-style IPC server and client over the model's
// world seam: length-prefixed calls carrying a call id, an acceptor, N
// reader loops (HADOOP-6713), a bounded call queue, M handler loops and a
// responder; a client that multiplexes many outstanding calls over one
// connection per server. A service (package model/namespace) plugs in
// behind the handlers. A reader throttles a connection that has
// ServerConfig.MaxInFlight calls in flight, or responses past MaxPending,
// by leaving its input in the socket until one of its responses is
// written: what a connection's server holds is bounded, and a client that
// pipelines many calls and reads their answers is slowed, never closed.
//
// Like package model, it is deterministic: no goroutines, no sync, no wall
// clock, no map-order dependence (model/imports_test.go checks it).
package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Preamble opens every connection, as Hadoop's "hrpc" header does: a
// server that reads anything else closes the connection without reading
// further, so a stray client of another protocol cannot be taken for a
// stream of calls.
var Preamble = [5]byte{'x', 'r', 'p', 'c', Version}

// Version is the wire version carried in the preamble.
const Version = 1

// Wire layout. A call is
//
//	uint32 length of what follows | uint32 call id | uint8 method | payload
//
// and a response is
//
//	uint32 length of what follows | uint32 call id | uint8 status | payload
//
// all big-endian, as Hadoop's DataOutput is.
const (
	frameHeader = 4 + 4 + 1
	// DefaultMaxFrame bounds a frame's length field (Hadoop's
	// ipc.maximum.data.length plays this part); a larger prefix is refused
	// before any of it is buffered.
	DefaultMaxFrame = 1 << 20
)

// FatalID is the call id of a response that is about the connection, not
// a call (Hadoop answers a fatal connection error with call id -1); the
// server closes the connection after sending it.
const FatalID = ^uint32(0)

// Status is a response's outcome.
type Status uint8

const (
	StatusOK            Status = 0
	StatusError         Status = 1 // the service refused the call (its payload says why)
	StatusUnknownMethod Status = 2
	StatusBadRequest    Status = 3 // the payload did not decode
	StatusFatal         Status = 4 // connection-level error; the server closes after it
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	case StatusUnknownMethod:
		return "unknown-method"
	case StatusBadRequest:
		return "bad-request"
	case StatusFatal:
		return "fatal"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Decoding errors. ErrShort is not an error of the stream: more bytes are
// needed.
var (
	ErrShort     = errors.New("rpc: incomplete frame")
	ErrTooLarge  = errors.New("rpc: frame length over the bound")
	ErrMalformed = errors.New("rpc: malformed frame")
	ErrPreamble  = errors.New("rpc: bad connection preamble")
)

// Frame is a decoded call or response. Code is the method of a call or the
// status of a response. Payload aliases the decoder's input.
type Frame struct {
	ID      uint32
	Code    uint8
	Payload []byte
}

// AppendFrame appends the encoding of f to b.
func AppendFrame(b []byte, f Frame) []byte {
	var h [frameHeader]byte
	putHeader(h[:], f)
	return append(append(b, h[:]...), f.Payload...)
}

// putHeader writes f's header, all but its payload, to b[:frameHeader]
// (AppendFrame's, and a handler's framing an answer encoded in place).
func putHeader(b []byte, f Frame) {
	binary.BigEndian.PutUint32(b, uint32(4+1+len(f.Payload)))
	binary.BigEndian.PutUint32(b[4:], f.ID)
	b[8] = f.Code
}

// FrameLen is the encoded size of a frame with an n-byte payload.
func FrameLen(n int) int { return frameHeader + n }

// DecodeFrame decodes the frame at the start of b and returns it with the
// bytes it used. A length over max is ErrTooLarge as soon as the prefix is
// in, so a bad prefix never makes a reader wait for (or buffer) data that
// will not come. A prefix too small to hold an id and a code is
// ErrMalformed.
func DecodeFrame(b []byte, max int) (Frame, int, error) {
	if len(b) < 4 {
		return Frame{}, 0, ErrShort
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(max) {
		return Frame{}, 0, fmt.Errorf("%w: %d > %d", ErrTooLarge, n, max)
	}
	if n < 5 {
		return Frame{}, 0, fmt.Errorf("%w: length %d", ErrMalformed, n)
	}
	if uint64(len(b)) < 4+uint64(n) {
		return Frame{}, 0, ErrShort
	}
	end := 4 + int(n)
	return Frame{ID: binary.BigEndian.Uint32(b[4:]), Code: b[8], Payload: b[9:end:end]}, end, nil
}

// CheckPreamble reports whether b starts with the preamble: nil when it
// does, ErrShort when b is a prefix of it, ErrPreamble otherwise.
func CheckPreamble(b []byte) error {
	n := min(len(b), len(Preamble))
	for i := 0; i < n; i++ {
		if b[i] != Preamble[i] {
			return ErrPreamble
		}
	}
	if n < len(Preamble) {
		return ErrShort
	}
	return nil
}
