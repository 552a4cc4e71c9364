package sim

import (
	"fmt"
	"io"
	"strconv"
	"time"
)

// Event is one entry of a simulated run's trace. The fields mean what
// FieldNames says for the kind; a fixed layout keeps recording cheap enough
// to do for every segment of a long run.
type Event struct {
	T    time.Duration
	Proc string
	Kind string
	Conn uint64
	A, B int64
	C, D int64
	S    string
}

// FieldNames names Conn, A, B, C, D and S for each kind of event, for the
// JSON form of a trace. An empty name means the field is unused.
var FieldNames = map[string][6]string{
	"seg":     {"conn", "seq", "len", "ack", "win", "flags"},
	"delack":  {"conn", "", "", "", "", ""},
	"tlp":     {"conn", "seq", "len", "", "", ""},
	"spawn":   {"", "", "", "", "", ""},
	"crash":   {"", "fds", "", "", "", ""},
	"fd":      {"fd", "open", "total", "", "", "fd_kind"},
	"listen":  {"", "backlog", "", "", "", "addr"},
	"connect": {"conn", "", "", "", "", "addr"},
	"accept":  {"conn", "", "", "", "", "addr"},
	"synDrop": {"conn", "try", "", "", "", "addr"},
	"close":   {"conn", "unread", "", "", "", "how"},
	"uds":     {"conn", "len", "fds", "", "", ""},
	"disk":    {"ino", "off", "len", "", "", "op"},
	"diskErr": {"ino", "off", "len", "", "", "err"},
	"fail":    {"", "", "", "", "", "error"},
	"log":     {"", "", "", "", "", "msg"},
	"fault":   {"conn", "", "", "", "", "what"},
	"phase":   {"", "", "", "", "", "what"},
}

// traceState keeps the running hash and the optional JSON-lines writer.
type traceState struct {
	hash  uint64
	off   bool // Config.Unhashed: hash stays fnvOffset
	out   io.Writer
	buf   []byte
	count uint64
	err   error
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvU64 folds a word into the hash at once (FNV-1a's xor-multiply on
// the whole word, then a shift so high bits reach low ones): every event
// is hashed, and a byte at a time cost a tenth of the simulator's time.
func fnvU64(h, x uint64) uint64 {
	h = (h ^ x) * fnvPrime
	return h ^ h>>29
}

func fnvString[T string | []byte](h uint64, s T) uint64 {
	n := len(s)
	for len(s) >= 8 {
		h = fnvU64(h, uint64(s[0])|uint64(s[1])<<8|uint64(s[2])<<16|uint64(s[3])<<24|
			uint64(s[4])<<32|uint64(s[5])<<40|uint64(s[6])<<48|uint64(s[7])<<56)
		s = s[8:]
	}
	var tail uint64
	for i := len(s) - 1; i >= 0; i-- {
		tail = tail<<8 | uint64(s[i])
	}
	return fnvU64(fnvU64(h, tail), uint64(n))
}

// strHash is the words fnvString folds for a string, worked out once for
// strings hashed at every segment (process names, kinds, flags).
type strHash []uint64

func newStrHash(s string) strHash {
	var words strHash
	n := len(s)
	for len(s) >= 8 {
		words = append(words, uint64(s[0])|uint64(s[1])<<8|uint64(s[2])<<16|uint64(s[3])<<24|
			uint64(s[4])<<32|uint64(s[5])<<40|uint64(s[6])<<48|uint64(s[7])<<56)
		s = s[8:]
	}
	var tail uint64
	for i := len(s) - 1; i >= 0; i-- {
		tail = tail<<8 | uint64(s[i])
	}
	return append(words, tail, uint64(n))
}

// fold is fnvString(h, s).
func (sh strHash) fold(h uint64) uint64 {
	for _, x := range sh {
		h = fnvU64(h, x)
	}
	return h
}

// segKindHash is the words of "seg": shorter than a word, its tail and
// its length.
var segKindHash = [2]uint64(newStrHash("seg"))

// segTag is the word a connection's segments fold for their process,
// kind and connection: fnvString of the process name and of "seg", then
// the connection's id, worked out once per connection (newTCPConn).
func segTag(p *Process, id uint64) uint64 {
	h := p.nameHash.fold(fnvOffset)
	h = fnvU64(fnvU64(h, segKindHash[0]), segKindHash[1])
	return fnvU64(h, id)
}

// segHash is how a segment's event is hashed: its time, the
// connection's tag (segTag), the sequence and ACK numbers, and its
// length, window and flags packed in one word (a segment is at most an
// MSS, below 2^24 bytes, and a window below 2^35). Five folds instead of
// the dozen the field-by-field form takes: a segment is hashed for
// every one sent, and the folds are a chain of dependent multiplies.
func segHash(h uint64, t time.Duration, tag, seq, ack uint64, n, wnd int, flags segFlags) uint64 {
	h = fnvU64(h, uint64(t))
	h = fnvU64(h, tag)
	h = fnvU64(h, seq)
	h = fnvU64(h, ack)
	return fnvU64(h, uint64(n)|uint64(wnd)<<24|uint64(flags&31)<<59)
}

// recordSeg is record(Event{Kind: "seg", ...}) for a segment c sends,
// hashed by segHash, and without building the event unless someone
// watches: it is recorded for every segment.
func (w *World) recordSeg(c *tcpConn, s *segment) {
	t := &w.trace
	now := w.Now()
	if !t.off {
		t.hash = segHash(t.hash, now, c.segTag, s.seq, s.ack, s.size(), int(s.wnd), s.flags)
	}
	t.count++
	if w.watched() {
		w.emit(Event{T: now, Proc: c.p.name, Kind: "seg", Conn: c.id, A: int64(s.seq), B: int64(s.size()), C: int64(s.ack), D: int64(s.wnd), S: flagStrings[s.flags&31]})
	}
}

// TraceTo makes the world write every event as a JSON line to out.
//
// A traced world keeps its hash, which the trace carries, even with
// Config.Unhashed: so a runner may ask for an unhashed world and still
// trace it. It must be traced from its first event, then.
func (w *World) TraceTo(out io.Writer) {
	if out != nil && w.trace.off {
		if w.trace.count > 0 {
			panic("sim: TraceTo an unhashed world after its first event: its hash would miss them")
		}
		w.trace.off = false
	}
	w.trace.out = out
}

// TraceHash is the running hash of every event recorded so far: two runs
// with the same seed and configuration must end with the same hash.
// (With Config.Unhashed it stays at FNV's offset basis.)
func (w *World) TraceHash() uint64 { return w.trace.hash }

// TraceHashString is TraceHash in the form the command line prints.
func (w *World) TraceHashString() string {
	if w.trace.off {
		return "unhashed"
	}
	return fmt.Sprintf("%016x", w.trace.hash)
}

// TraceEvents is the number of events recorded in the trace.
func (w *World) TraceEvents() uint64 { return w.trace.count }

// TraceErr reports a failure to write the trace.
func (w *World) TraceErr() error { return w.trace.err }

// watched reports whether anyone sees the events (observers or a trace
// file): only then is an Event built beyond what the hash needs.
func (w *World) watched() bool { return len(w.observers) > 0 || w.trace.out != nil }

// eventHash folds e into h, with s as its S: record and recordLog hash
// one layout, whether S is a string or a line still in its buffer.
func eventHash[S string | []byte](h uint64, e *Event, s S) uint64 {
	h = fnvU64(h, uint64(e.T))
	h = fnvString(h, e.Proc)
	h = fnvString(h, e.Kind)
	h = fnvU64(h, e.Conn)
	h = fnvU64(h, uint64(e.A))
	h = fnvU64(h, uint64(e.B))
	h = fnvU64(h, uint64(e.C))
	h = fnvU64(h, uint64(e.D))
	return fnvString(h, s)
}

// skipLog counts a log event nobody would read (the world unhashed and
// unwatched) and reports so: Process.Log then builds no line.
func (w *World) skipLog() bool {
	if w.trace.off && !w.watched() {
		w.trace.count++
		return true
	}
	return false
}

// recordLog is record(Event{Proc: proc, Kind: "log", S: string(line)})
// without the string unless someone watches: processes log on every
// failed op and dropped connection, and the line is built in a buffer on
// the caller's stack.
func (w *World) recordLog(proc string, line []byte) {
	if w.watched() {
		w.record(Event{Proc: proc, Kind: "log", S: string(line)})
		return
	}
	e := Event{T: w.Now(), Proc: proc, Kind: "log"}
	w.trace.hash = eventHash(w.trace.hash, &e, line)
	w.trace.count++
}

func (w *World) record(e Event) {
	e.T = w.Now()
	t := &w.trace
	if !t.off {
		t.hash = eventHash(t.hash, &e, e.S)
	}
	t.count++
	if w.watched() {
		w.emit(e)
	}
}

// emit shows a recorded event to the observers and writes it out.
func (w *World) emit(e Event) {
	t := &w.trace
	if len(w.observers) > 0 {
		// Observers get their own copy, so e itself stays on the stack
		// when nobody observes (the common, fast case).
		ev := e
		for _, f := range w.observers {
			f(&ev)
		}
	}
	if t.out != nil && t.err == nil {
		t.buf = e.AppendJSON(t.buf[:0])
		t.buf = append(t.buf, '\n')
		_, t.err = t.out.Write(t.buf)
	}
}

// AppendJSON appends e as one JSON object: time in microseconds (with
// nanosecond precision), process, kind, then the kind's named fields.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"t_us":`...)
	b = strconv.AppendFloat(b, float64(e.T)/1e3, 'f', 3, 64)
	b = append(b, `,"proc":`...)
	b = strconv.AppendQuote(b, e.Proc)
	b = append(b, `,"kind":`...)
	b = strconv.AppendQuote(b, e.Kind)
	names, ok := FieldNames[e.Kind]
	if !ok {
		names = [6]string{"conn", "a", "b", "c", "d", "s"}
	}
	ints := [5]int64{int64(e.Conn), e.A, e.B, e.C, e.D}
	for i, v := range ints {
		if names[i] == "" {
			continue
		}
		b = append(b, ',', '"')
		b = append(b, names[i]...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, v, 10)
	}
	if names[5] != "" && e.S != "" {
		b = append(b, ',', '"')
		b = append(b, names[5]...)
		b = append(b, '"', ':')
		b = strconv.AppendQuote(b, e.S)
	}
	return append(b, '}')
}
