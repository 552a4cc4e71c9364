// Package traces records a failing property run as a trace file, replays
// it event by event, and renders it as HTML (docs/ARCHITECTURE.md §6).
//
// A trace is JSON lines. Line 1 is the header: format version, code
// version, seed, the full configuration, the (shrunk) schedule, the
// property that failed and its message, the number of events, the run's
// trace hash and a checksum of the whole file. Then one line per event of
// the simulated run, as sim.Event.AppendJSON writes it.
//
// A trace names a case completely, so replaying it is re-running it: the
// replayer compares every event with the recorded one, reports the first
// divergence, and otherwise confirms the same failure and hash.
package traces

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"xceiver/properties"
)

// Format is the version of the file layout. Format 2 names an fd event's
// kind of fd "fd_kind" (format 1 repeated the key "kind").
//
// A trace of another format is not converted: its case is named by its
// seed and bug, and the same seed draws and shrinks to the same case, so
// `xceiver check --seed S [--bug B]` records it again in this format (the
// reader's error says so).
const Format = 2

// CodeVersion names the behaviour of the simulator and the data path a
// trace was recorded with. Bump it whenever a change alters the events a
// case produces (the corpus test says when): a trace from another code
// version is refused with a clear error instead of replaying into a
// spurious divergence.
const CodeVersion = "xceiver-sim-2026.12-54"

// Header is a trace's first line.
type Header struct {
	Format      int                 `json:"format"`
	CodeVersion string              `json:"code_version"`
	Seed        uint64              `json:"seed"`
	Bug         string              `json:"bug,omitempty"`
	Config      properties.Config   `json:"config"`
	Schedule    properties.Schedule `json:"schedule"`
	Property    string              `json:"property"`
	Message     string              `json:"message"`
	Events      uint64              `json:"events"`
	TraceHash   string              `json:"trace_hash"`
	// Checksum is sha256 over the header with Checksum empty, a newline,
	// and every event line: an edited or truncated file is refused.
	Checksum string `json:"checksum"`
}

// Case is the case the trace records.
func (h *Header) Case() properties.Case {
	return properties.Case{Seed: h.Seed, Bug: h.Bug, Config: h.Config, Schedule: h.Schedule}
}

// BadTraceError is a trace that cannot be replayed: missing, truncated,
// edited, or from another version. The command line exits 2 on it.
type BadTraceError struct{ Msg string }

func (e *BadTraceError) Error() string { return e.Msg }

func bad(format string, a ...any) error { return &BadTraceError{fmt.Sprintf(format, a...)} }

// IsBadTrace reports whether err is a BadTraceError.
func IsBadTrace(err error) bool {
	var b *BadTraceError
	return errors.As(err, &b)
}

// Trace is a decoded trace file.
type Trace struct {
	Header Header
	Events [][]byte // each event's JSON line, without the newline
}

// Record runs c with tracing and returns its trace. The run must fail
// (a trace records a failure); Record reports the run's result either way.
func Record(c properties.Case) (*Trace, *properties.Result) {
	var buf bytes.Buffer
	r := properties.Run(c, properties.Options{Trace: &buf})
	t := &Trace{Header: Header{
		Format: Format, CodeVersion: CodeVersion, Seed: c.Seed, Bug: c.Bug,
		Config: c.Config, Schedule: c.Schedule, Events: r.Events, TraceHash: r.TraceHash,
	}}
	if r.Failure != nil {
		t.Header.Property, t.Header.Message = r.Failure.Property, r.Failure.Message
	}
	t.Events = splitLines(buf.Bytes())
	t.Seal()
	return t, r
}

// rerecord is the command that records a trace's case again.
func rerecord(seed uint64, bug string) string {
	again := fmt.Sprintf("xceiver check --seed %d", seed)
	if bug != "" {
		again += " --bug " + bug
	}
	return again
}

// splitLF is bufio.ScanLines without its removal of a '\r'.
func splitLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

func splitLines(b []byte) [][]byte {
	var lines [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, b)
			break
		}
		lines = append(lines, b[:i])
		b = b[i+1:]
	}
	return lines
}

// Seal recomputes the checksum after the trace was changed in memory (a
// tool that rewrites traces; tests that fake a change of behaviour).
func (t *Trace) Seal() { t.Header.Checksum = t.checksum() }

func (t *Trace) checksum() string {
	h := t.Header
	h.Checksum = ""
	head, _ := json.Marshal(h)
	sum := sha256.New()
	sum.Write(head)
	sum.Write([]byte{'\n'})
	for _, e := range t.Events {
		sum.Write(e)
		sum.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(sum.Sum(nil))
}

// WriteTo writes the trace file.
func (t *Trace) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	head, err := json.Marshal(t.Header)
	if err != nil {
		return 0, err
	}
	n, _ := bw.Write(head)
	bw.WriteByte('\n')
	total := int64(n + 1)
	for _, e := range t.Events {
		n, _ := bw.Write(e)
		bw.WriteByte('\n')
		total += int64(n + 1)
	}
	return total, bw.Flush()
}

// WriteFile writes the trace to path.
func (t *Trace) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := t.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Size is the trace file's size in bytes.
func (t *Trace) Size() int64 {
	n, _ := t.WriteTo(io.Discard)
	return n
}

// ReadFile reads and verifies a trace file.
func ReadFile(path string) (*Trace, error) {
	// Non-blocking, and regular files only: a FIFO nobody writes would
	// block the read for good, and /dev/zero never ends.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, bad("trace %s: no such file", path)
		}
		return nil, bad("trace %s: %v", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, bad("trace %s: %v", path, err)
	case st.IsDir():
		return nil, bad("trace %s: a directory, not a trace", path)
	case !st.Mode().IsRegular():
		return nil, bad("trace %s: not a regular file", path)
	case st.Size() > maxTrace:
		return nil, bad("trace %s: %d bytes, more than the %d a trace may have", path, st.Size(), maxTrace)
	}
	t, err := read(io.LimitReader(f, maxTrace), st.Size())
	if err != nil {
		return nil, bad("trace %s: %v", path, err)
	}
	return t, nil
}

// maxLine bounds one line of a trace (the header holds the schedule, about
// 1 MB at every bound of Validate).
const maxLine = 8 << 20

// maxTrace bounds a trace file: check's largest are a few MB.
const maxTrace = 1 << 30

// Read decodes and verifies a trace: strictly (unknown fields, another
// format or code version, a count or checksum that does not match are all
// errors).
func Read(r io.Reader) (*Trace, error) { return read(io.LimitReader(r, maxTrace), 0) }

// read is Read of a file of size bytes (0 if unknown), which its event
// lines' buffer is made for at once rather than grown by doubling. r
// holds at most maxTrace bytes, so an offset into the lines fits an int32.
func read(r io.Reader, size int64) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	// Lines end at '\n' alone: bufio.ScanLines would drop a '\r' before
	// it, and a trace whose line endings were converted would then pass
	// its checksum.
	line := 0
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := splitLF(data, atEOF)
		if tok != nil {
			line++
			if bytes.HasSuffix(tok, []byte{'\r'}) {
				return 0, nil, bad("line %d ends in CR: the file's line endings were converted (traces use LF only)", line)
			}
		}
		return adv, tok, err
	})
	scanErr := func(err error) error {
		if errors.Is(err, bufio.ErrTooLong) {
			return bad("line %d is longer than a trace's lines may be (%d MiB)", line+1, maxLine>>20)
		}
		return bad("%v", err)
	}
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, scanErr(err)
		}
		return nil, bad("empty file, not a trace")
	}
	first := sc.Bytes()
	if err := properties.CheckTraceJSON(first); err != nil {
		return nil, bad("header: %v", err)
	}
	// Look at the versions before decoding strictly, so that a trace of
	// another version says so rather than failing on a field it has.
	var probe struct {
		Format      *int   `json:"format"`
		CodeVersion string `json:"code_version"`
		Seed        uint64 `json:"seed"`
		Bug         string `json:"bug"`
	}
	if err := json.Unmarshal(first, &probe); err != nil || probe.Format == nil {
		return nil, bad("line 1 is not a trace header")
	}
	if *probe.Format != Format {
		return nil, bad("trace format %d; this xceiver reads format %d: re-record it (%s)", *probe.Format, Format, rerecord(probe.Seed, probe.Bug))
	}
	if probe.CodeVersion != CodeVersion {
		return nil, bad("recorded by code version %q, this is %q: re-record it with this version (%s)", probe.CodeVersion, CodeVersion, rerecord(probe.Seed, probe.Bug))
	}
	t := &Trace{}
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t.Header); err != nil {
		return nil, bad("header: %v", err)
	}
	if dec.More() {
		return nil, bad("header: trailing data on line 1")
	}
	// The event lines are kept in one buffer, not one allocation each,
	// and each must be an event: 33 million lines of "{}" took 3.3 GB
	// (99 MB of file) before their count was compared with the header's.
	all := make([]byte, 0, max(size-int64(len(first)), 0))
	var ends []int32 // (a trace is at most maxTrace bytes)
	for sc.Scan() {
		if uint64(len(ends)) == t.Header.Events {
			// Stop here rather than keep every line to the end: lines
			// appended by the million filled memory before the count
			// was compared.
			return nil, bad("more event lines than the %d the header says (edited or appended to)", t.Header.Events)
		}
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(`{"t_us":`)) || !json.Valid(line) {
			return nil, bad("line %d is not an event (truncated or edited)", len(ends)+2)
		}
		all = append(all, line...)
		ends = append(ends, int32(len(all)))
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(err)
	}
	if uint64(len(ends)) != t.Header.Events {
		return nil, bad("%d event lines, the header says %d (truncated or edited)", len(ends), t.Header.Events)
	}
	// (Sliced only now: a file whose count is wrong costs no slice
	// header a line.)
	t.Events = make([][]byte, len(ends))
	start := int32(0)
	for i, end := range ends {
		t.Events[i] = all[start:end:end]
		start = end
	}
	if sum := t.checksum(); sum != t.Header.Checksum {
		return nil, bad("checksum mismatch: the file was edited or damaged")
	}
	if err := properties.CheckVerdict(t.Header.Property, t.Header.Events, t.Header.TraceHash); err != nil {
		return nil, bad("header: %v", err)
	}
	c := t.Header.Case()
	if err := c.Validate(); err != nil {
		return nil, bad("header: %v", err)
	}
	return t, nil
}
