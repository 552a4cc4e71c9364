package namespace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Methods of the namespace protocol (the rpc call's method byte).
const (
	MethodMkdir             uint8 = 1 // path → ()
	MethodCreate            uint8 = 2 // path, blocks → block ids
	MethodList              uint8 = 3 // path, after → entries (a page), remaining
	MethodGetBlockLocations uint8 = 4 // path → locations
	MethodComplete          uint8 = 5 // path, blocks (id, stamp, length) → ()
	MethodDelete            uint8 = 6 // path → ()
	MethodRename            uint8 = 7 // src, dst → ()
)

// MethodName names a method for logs and histories.
func MethodName(m uint8) string {
	switch m {
	case MethodMkdir:
		return "mkdir"
	case MethodCreate:
		return "create"
	case MethodList:
		return "list"
	case MethodGetBlockLocations:
		return "getBlockLocations"
	case MethodComplete:
		return "complete"
	case MethodDelete:
		return "delete"
	case MethodRename:
		return "rename"
	}
	return fmt.Sprintf("method(%d)", m)
}

// Code is a namespace error, carried as the payload of an rpc StatusError.
type Code uint8

const (
	OK          Code = 0
	ENOENT      Code = 1 // no such file or directory
	EEXIST      Code = 2
	ENOTDIR     Code = 3 // a path component is a file
	EISDIR      Code = 4
	EINVAL      Code = 5 // bad path, rename into itself, complete that does not match
	EINCOMPLETE Code = 6 // the file is still being written
	EBADREQ     Code = 7 // the request did not decode
	// EIO: the change could not be made durable. This namenode answers
	// it only for a change that came after its edit log was closed, and
	// leaves that change unmade; a failed sync is fatal instead, as in
	// HDFS (the catalogued bug Bugs.AnswerEIO answers EIO for a change
	// it has made).
	EIO Code = 8
)

var codeNames = [...]string{"ok", "ENOENT", "EEXIST", "ENOTDIR", "EISDIR", "EINVAL", "EINCOMPLETE", "EBADREQ", "EIO"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", uint8(c))
}

// Error is a namespace error returned to a client.
type Error struct{ Code Code }

func (e *Error) Error() string { return "namespace: " + e.Code.String() }

// IsCode reports whether err is a namespace error with code c.
func IsCode(err error, c Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}

// Limits on requests, as HDFS has (dfs.namenode.fs-limits).
const (
	MaxPathLen      = 4096
	MaxComponentLen = 255
	MaxBlocks       = 1 << 10 // blocks in one file
	// ListLimit bounds the entries one list answers (dfs.ls.limit): a
	// client pages through a bigger directory (Request.After,
	// Response.Remaining). Unpaged, 4,000 names of MaxComponentLen
	// answered more than an rpc frame may hold, and the client took
	// the answer for a broken stream. A full page is at most
	// ListLimit × (2 + MaxComponentLen + 9) bytes, 266 KB.
	ListLimit = 1000
)

// Location is where a block of a file lives.
type Location struct {
	Block    uint64
	Stamp    uint64
	Length   int64
	Datanode string
	Token    []byte // a read token for the block (getBlockLocations)
}

// Entry is one name in a directory listing.
type Entry struct {
	Name   string
	Dir    bool
	Length int64
}

// SplitPath checks an absolute path and returns its components ("/" has
// none).
func SplitPath(p string) ([]string, bool) {
	if len(p) == 0 || len(p) > MaxPathLen || p[0] != '/' {
		return nil, false
	}
	if p == "/" {
		return nil, true
	}
	parts := strings.Split(p[1:], "/")
	for _, c := range parts {
		if c == "" || c == "." || c == ".." || len(c) > MaxComponentLen {
			return nil, false
		}
	}
	return parts, true
}

// enc and dec are the payload codec: big-endian integers and strings with a
// uint16 length.
type enc struct{ b []byte }

func (e *enc) u8(v uint8)   { e.b = append(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) str(s string) {
	e.b = binary.BigEndian.AppendUint16(e.b, uint16(len(s)))
	e.b = append(e.b, s...)
}

type dec struct {
	b   []byte
	bad bool
	// s, if set, is b as a string, kept in step with it: str takes its
	// strings from it, one allocation for all of them, where a listing
	// of /big made a hundred.
	s string
}

func (d *dec) take(n int) []byte {
	if d.bad || len(d.b) < n {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	if d.s != "" {
		d.s = d.s[n:]
	}
	return v
}

func (d *dec) u8() uint8 {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *dec) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *dec) str() string {
	n := d.take(2)
	if n == nil {
		return ""
	}
	l := int(binary.BigEndian.Uint16(n))
	if l <= len(d.s) { // (s, when set, is as long as b)
		v := d.s[:l]
		d.take(l)
		return v
	}
	return string(d.take(l))
}

// bytes is str for binary data; empty is nil, so a round trip is exact.
func (d *dec) bytes() []byte {
	if s := d.str(); s != "" {
		return []byte(s)
	}
	return nil
}

// done reports whether the input decoded exactly, with nothing left over.
func (d *dec) done() bool { return !d.bad && len(d.b) == 0 }

// Request is a decoded namespace call.
type Request struct {
	Method uint8
	Path   string
	// After pages a list: the entries named after it (none: from the
	// first), as HDFS's getListing startAfter. On the wire only when
	// set, so an unpaged list is the bytes it always was.
	After  string
	Dst    string     // rename
	Blocks int        // create
	Done   []Location // complete: id, stamp, length (Datanode unused)
}

// EncodeRequest is the payload of a call.
func EncodeRequest(r Request) []byte {
	var e enc
	e.str(r.Path)
	switch r.Method {
	case MethodRename:
		e.str(r.Dst)
	case MethodList:
		if r.After != "" {
			e.str(r.After)
		}
	case MethodCreate:
		e.u32(uint32(r.Blocks))
	case MethodComplete:
		e.u32(uint32(len(r.Done)))
		for _, l := range r.Done {
			e.u64(l.Block)
			e.u64(l.Stamp)
			e.u64(uint64(l.Length))
		}
	}
	return e.b
}

// DecodeRequest decodes a call's payload; ok is false for a malformed one
// or a count over the limits.
func DecodeRequest(method uint8, payload []byte) (Request, bool) {
	d := dec{b: payload}
	r := Request{Method: method, Path: d.str()}
	switch method {
	case MethodRename:
		r.Dst = d.str()
	case MethodCreate:
		n := d.u32()
		if n > MaxBlocks {
			return r, false
		}
		r.Blocks = int(n)
	case MethodComplete:
		n := d.u32()
		if n > MaxBlocks || uint64(len(d.b)) < uint64(n)*24 {
			return r, false
		}
		for i := uint32(0); i < n; i++ {
			r.Done = append(r.Done, Location{Block: d.u64(), Stamp: d.u64(), Length: int64(d.u64())})
		}
	case MethodList:
		if len(d.b) > 0 {
			// (An empty After is never sent: refused, so that a
			// decoded request encodes to the bytes it came from.)
			if r.After = d.str(); r.After == "" {
				return r, false
			}
		}
	case MethodMkdir, MethodGetBlockLocations, MethodDelete:
	default:
		return r, false
	}
	return r, d.done()
}

// Response is a decoded answer.
type Response struct {
	Blocks  []uint64 // create
	Tokens  [][]byte // create: a write token per block
	Entries []Entry  // list
	// Remaining counts the entries of a listed directory after this
	// page (HDFS's DirectoryListing.remainingEntries): 0 when the page
	// holds the last. On the wire only when not 0.
	Remaining int
	Locations []Location // getBlockLocations
}

// EncodeResponse is the payload of a successful answer to method.
func EncodeResponse(method uint8, r Response) []byte { return encodeResponse(method, r, nil) }

// encodeResponse is EncodeResponse in the buffer buf returns, if buf is
// set (rpc.FrameEncoder's).
func encodeResponse(method uint8, r Response, buf func(n int) []byte) []byte {
	// Sized first: a listing of a big directory is tens of KB, and
	// growing it by appends copied it a dozen times (a tenth of an rpc
	// seed's CPU in check).
	var e enc
	if n := responseSize(method, r); n > 0 {
		if buf != nil {
			e.b = buf(n)
		} else {
			e.b = make([]byte, 0, n)
		}
	}
	switch method {
	case MethodCreate:
		e.u32(uint32(len(r.Blocks)))
		for i, b := range r.Blocks {
			e.u64(b)
			var tok []byte
			if i < len(r.Tokens) {
				tok = r.Tokens[i]
			}
			e.str(string(tok))
		}
	case MethodList:
		e.u32(uint32(len(r.Entries)))
		for _, en := range r.Entries {
			e.str(en.Name)
			if en.Dir {
				e.u8(1)
			} else {
				e.u8(0)
			}
			e.u64(uint64(en.Length))
		}
		if r.Remaining > 0 {
			e.u32(uint32(r.Remaining))
		}
	case MethodGetBlockLocations:
		e.u32(uint32(len(r.Locations)))
		for _, l := range r.Locations {
			e.u64(l.Block)
			e.u64(l.Stamp)
			e.u64(uint64(l.Length))
			e.str(l.Datanode)
			e.str(string(l.Token))
		}
	}
	return e.b
}

// responseSize is the length of EncodeResponse(method, r).
func responseSize(method uint8, r Response) int {
	n := 4 // the count
	switch method {
	default:
		return 0 // (no payload)
	case MethodCreate:
		for i := range r.Blocks {
			n += 8 + 2
			if i < len(r.Tokens) {
				n += len(r.Tokens[i])
			}
		}
	case MethodList:
		for _, en := range r.Entries {
			n += 2 + len(en.Name) + 1 + 8
		}
		if r.Remaining > 0 {
			n += 4
		}
	case MethodGetBlockLocations:
		for _, l := range r.Locations {
			n += 3*8 + 2 + len(l.Datanode) + 2 + len(l.Token)
		}
	}
	return n
}

// room is a slice with room for n entries a count announced, nil for
// none (as decoding none leaves it): made at once rather than grown an
// append at a time, but for at most 256 before they are decoded, so that
// a count no entries follow (garbage, which count bounds only by the
// payload's length) costs no more than the entries that do.
func room[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, 0, min(n, 256))
}

// DecodeResponse decodes a successful answer to method. The response
// shares no memory with payload.
func DecodeResponse(method uint8, payload []byte) (Response, error) {
	d := dec{b: payload}
	var r Response
	count := func(min int) int {
		n := d.u32()
		if uint64(n)*uint64(min) > uint64(len(d.b)) {
			d.bad = true
			return 0
		}
		return int(n)
	}
	switch method {
	case MethodCreate:
		n := count(10)
		r.Blocks, r.Tokens = room[uint64](n), room[[]byte](n)
		for ; n > 0; n-- {
			r.Blocks = append(r.Blocks, d.u64())
			r.Tokens = append(r.Tokens, d.bytes())
		}
	case MethodList:
		n := count(11)
		d.s = string(d.b)
		r.Entries = room[Entry](n)
		for ; n > 0; n-- {
			r.Entries = append(r.Entries, Entry{Name: d.str(), Dir: d.u8() == 1, Length: int64(d.u64())})
		}
		if len(d.b) == 4 {
			// (0 is never sent: refused, for an exact round trip.)
			if r.Remaining = int(d.u32()); r.Remaining == 0 {
				d.bad = true
			}
		}
	case MethodGetBlockLocations:
		n := count(28)
		r.Locations = room[Location](n)
		for ; n > 0; n-- {
			r.Locations = append(r.Locations, Location{Block: d.u64(), Stamp: d.u64(), Length: int64(d.u64()), Datanode: d.str(), Token: d.bytes()})
		}
	}
	if !d.done() {
		return Response{}, fmt.Errorf("namespace: malformed %s response", MethodName(method))
	}
	return r, nil
}
