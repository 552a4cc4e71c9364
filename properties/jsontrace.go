package properties

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"unicode"
)

// The rpc, short-circuit and scenario systems keep their failures as JSON
// traces: a header (format, property, message, events, hash) beside the
// system's own case. What follows is the part the three share, so a change
// to how traces are checked or replayed is made once.

// maxJSONTrace bounds what readJSONTrace reads: a recorded trace is a
// few KB (the corpus's largest 3 KB), and the largest case any Validate
// lets through is an rpc case's 2048 renames of two 4096-byte paths,
// about 17 MB. A file past this is not a trace.
const maxJSONTrace = 32 << 20

// MaxJSONElements bounds the array elements a trace's JSON may hold, all
// arrays together, before it is decoded: far above what any case's
// Validate lets through (the most, a short-circuit case's 10,000 ops), and
// far below what decoding costs dearly. Decoded, each "{}" of an array of
// ops becomes a whole op: 21 million of them, in a file under the byte
// bound, took 6.5 GB before Validate could count them.
const MaxJSONElements = 100_000

// maxJSONDepth bounds how deep a trace's JSON nests: a case nests a few
// levels. (encoding/json's decoder stops at 10,000, but the token walk
// below does not, and 1.4 million "{"a":" took it 0.5 GB.)
const maxJSONDepth = 64

// CheckTraceJSON refuses data holding more than MaxJSONElements array
// elements, nested deeper than maxJSONDepth, or with an object that has a
// key twice as the decoder matches keys (without regard to case, Unicode
// folding included: "ſeed" is "seed"; the last one wins, so a second
// "Property" replaced "property" unseen). It walks the data token by
// token without decoding it.
func CheckTraceJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type open struct {
		array bool
		keys  map[string]bool // an object's keys so far, folded (made at its first key)
		key   bool            // an object's next token is a key
	}
	var stack []open
	n := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return nil // not JSON, or done: the decoder that follows says which
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			d, isDelim := t.(json.Delim)
			closing := isDelim && (d == ']' || d == '}')
			switch {
			case top.array && !closing:
				if n++; n > MaxJSONElements {
					return fmt.Errorf("more than %d array elements", MaxJSONElements)
				}
			case !top.array && top.key && !closing:
				k := foldKey(t.(string))
				if top.keys == nil {
					top.keys = map[string]bool{}
				}
				if top.keys[k] {
					return fmt.Errorf("key %q twice in one object", t)
				}
				top.keys[k] = true
				top.key = false
				continue
			case !top.array && !closing:
				top.key = true // the value read: a key comes next
			}
		}
		if d, ok := t.(json.Delim); ok {
			switch d {
			case '[', '{':
				if len(stack) == maxJSONDepth {
					return fmt.Errorf("nested deeper than %d", maxJSONDepth)
				}
				stack = append(stack, open{array: d == '[', key: d == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
		}
	}
}

// foldKey is key with each rune replaced by the least rune it folds with
// (unicode.SimpleFold's orbit), so two keys the decoder takes for one
// fold alike.
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, key)
}

// readJSONTrace reads path into t (a pointer to the system's trace type);
// kind names the trace in the error for a file that is not one ("an rpc").
// It reads a regular file only (a FIFO nobody writes would block it for
// good, /dev/zero never ends), of at most maxJSONTrace bytes, holding one
// object with no field the trace does not have (a misspelt one would be
// dropped, leaving its default in the run) and nothing after it.
func readJSONTrace(path, kind string, t any) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s: not %s trace: not a regular file", path, kind)
	case st.Size() > maxJSONTrace:
		return fmt.Errorf("%s: not %s trace: %d bytes, more than a trace's %d", path, kind, st.Size(), maxJSONTrace)
	}
	// (Read through the bound too: the file may grow as it is read.)
	data, err := io.ReadAll(io.LimitReader(f, maxJSONTrace+1))
	if err != nil {
		return fmt.Errorf("%s: not %s trace: %w", path, kind, err)
	}
	if len(data) > maxJSONTrace {
		return fmt.Errorf("%s: not %s trace: more than a trace's %d bytes", path, kind, maxJSONTrace)
	}
	if err := CheckTraceJSON(data); err != nil {
		return fmt.Errorf("%s: not %s trace: %w", path, kind, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil {
		return fmt.Errorf("%s: not %s trace: %w", path, kind, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%s: not %s trace: more after its object", path, kind)
	}
	return nil
}

// CheckVerdict refuses a trace (of any system) without the failure it
// records: check writes one only for a failing case, with its property,
// its event count and its hash (16 hex digits). Missing, they decoded as
// empty and the trace replayed as "diverged" (exit 1) instead of being
// refused as malformed.
func CheckVerdict(property string, events uint64, hash string) error {
	switch {
	case property == "":
		return fmt.Errorf("no property: a trace records a failure")
	case events == 0:
		return fmt.Errorf("no events: a trace records its run's event count")
	case len(hash) != 16 || strings.Trim(hash, "0123456789abcdef") != "":
		return fmt.Errorf("trace_hash %q: want 16 hex digits", hash)
	}
	return nil
}

// TraceHead is what a JSON trace of any system holds before its case: its
// format and the failure it records.
type TraceHead struct {
	Format    string `json:"format"`
	Property  string `json:"property"`
	Message   string `json:"message"`
	Events    uint64 `json:"events"`
	TraceHash string `json:"trace_hash"`
}

// check refuses the trace at path if its head is of another format than
// want (saying how to record the case again) or records no failure, or if
// its case would not pass the checks a drawn case does.
func (h TraceHead) check(path, want, system string, seed uint64, bug string, validate func() error) error {
	if h.Format != want {
		again := fmt.Sprintf("xceiver check --system %s --seed %d", system, seed)
		if bug != "" {
			again += " --bug " + bug
		}
		return fmt.Errorf("%s: format %q, want %q (record it again with %s)", path, h.Format, want, again)
	}
	if err := validate(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := CheckVerdict(h.Property, h.Events, h.TraceHash); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// The properties each system with JSON traces checks, which its cases'
// Ignore may name (check --ignore gives each system the ones it checks).
var (
	RPCProperties = []string{PropLinearizable, PropExactlyOnce, PropStream, PropQueueBound, PropMemory, PropFDBounds, PropAvailability,
		PropLiveness, PropLeakFree, PropDurable, PropTimeout, PropDeterminism, PropHarness}
	SCProperties       = []string{PropLinearizable, PropAvailability, PropLocalReads, PropSCOff, PropFDBounds, PropSCStats, PropSCRefusal, PropHostileAvail, PropLeakFree, PropDeterminism, PropHarness}
	ScenarioProperties = []string{PropLiveness, PropAvailability, PropStream, PropFDBounds, PropPoolBound, PropLeakFree,
		PropShared, PropReport, PropConfig, PropDeterminism, PropHarness}
)

// checkIgnore refuses an ignored property the system does not check: a
// misspelt name would leave the property it meant enforced.
func checkIgnore(what string, ignore, known []string) error {
	for _, p := range ignore {
		if !slices.Contains(known, p) {
			return fmt.Errorf("%s: ignore: unknown property %q (want one of %s)", what, p, strings.Join(known, ", "))
		}
	}
	return nil
}

// writeJSONTrace writes t to path, indented, with a final newline.
func writeJSONTrace(path string, t any) error {
	b, err := json.MarshalIndent(t, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReplayMismatch says how a replay (the property it failed, with message,
// and its events and hash) differs from the trace whose head is want, or
// nil when it failed the same way with the same events.
func ReplayMismatch(property, message string, events uint64, hash string, want TraceHead) error {
	switch {
	case property != want.Property:
		return fmt.Errorf("replay: property %q, trace says %q", property, want.Property)
	case message != want.Message:
		// (A trace whose message was edited replayed as reproduced,
		// and printed the edited message as the replay's.)
		return fmt.Errorf("replay: %s: %q, trace says %q", property, message, want.Message)
	case hash != want.TraceHash || events != want.Events:
		return fmt.Errorf("replay: %d events hash %s, trace says %d events hash %s", events, hash, want.Events, want.TraceHash)
	}
	return nil
}
