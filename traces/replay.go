package traces

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"xceiver/properties"
)

// Divergence is the first event where a replay differs from the trace.
type Divergence struct {
	Line int    // line of the trace file (the header is line 1)
	Want string // the recorded event ("" past the end of the trace)
	Got  string // the replayed event ("" if the replay ended first)
}

func (d *Divergence) String() string {
	switch {
	case d.Want == "":
		return fmt.Sprintf("line %d: the replay has more events than the trace: got %s", d.Line, d.Got)
	case d.Got == "":
		return fmt.Sprintf("line %d: the replay ended before the trace: want %s", d.Line, d.Want)
	}
	return fmt.Sprintf("line %d: want %s, got %s", d.Line, d.Want, d.Got)
}

// Report is what a replay found.
type Report struct {
	Divergence *Divergence // nil: every event matched
	Failure    *properties.Failure
	TraceHash  string
	Events     uint64
	Result     *properties.Result
}

// Reproduced reports whether the replay matched the trace event by event
// and failed the same property with the same message and hash.
func (r *Report) Reproduced(t *Trace) bool {
	return r.Divergence == nil && r.Failure != nil &&
		r.Failure.Property == t.Header.Property && r.Failure.Message == t.Header.Message &&
		r.TraceHash == t.Header.TraceHash && r.Events == t.Header.Events
}

// Printable is s as a terminal line may show it: quoted if it holds a
// control character. What a trace file says is input: a message with a
// newline in it printed a forged verdict line of its own, and escape
// sequences reached the terminal.
func Printable(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// Summary says in one line what the replay found.
func (r *Report) Summary(t *Trace) string {
	switch {
	case r.Reproduced(t):
		return fmt.Sprintf("reproduced: %s: %s (%d events, hash %s)", r.Failure.Property, r.Failure.Message, r.Events, r.TraceHash)
	case r.Divergence != nil:
		return "diverged at " + r.Divergence.String()
	case r.Failure == nil:
		return fmt.Sprintf("diverged: every event matched but no property failed (the trace says %s)", Printable(t.Header.Property))
	default:
		return fmt.Sprintf("diverged: every event matched but the run failed %s: %s, hash %s (the trace says %s: %s, hash %s)",
			r.Failure.Property, r.Failure.Message, r.TraceHash, Printable(t.Header.Property), Printable(t.Header.Message), Printable(t.Header.TraceHash))
	}
}

// comparer receives the replay's events, one JSON line per Write, and
// checks each against the trace.
type comparer struct {
	want  [][]byte
	n     int
	first *Divergence
}

func (c *comparer) Write(p []byte) (int, error) {
	line := bytes.TrimSuffix(p, []byte{'\n'})
	if c.first == nil {
		switch {
		case c.n >= len(c.want):
			c.first = &Divergence{Line: c.n + 2, Got: string(line)}
		case !bytes.Equal(c.want[c.n], line):
			c.first = &Divergence{Line: c.n + 2, Want: string(c.want[c.n]), Got: string(line)}
		}
	}
	c.n++
	return len(p), nil
}

// Replay re-runs the trace's case, comparing every event with the
// recorded one. opt.Trace is ignored.
func Replay(t *Trace, opt properties.Options) *Report {
	cmp := &comparer{want: t.Events}
	opt.Trace = cmp
	r := properties.Run(t.Header.Case(), opt)
	if cmp.first == nil && cmp.n < len(t.Events) {
		cmp.first = &Divergence{Line: cmp.n + 2, Want: string(t.Events[cmp.n])}
	}
	return &Report{Divergence: cmp.first, Failure: r.Failure, TraceHash: r.TraceHash, Events: r.Events, Result: r}
}
