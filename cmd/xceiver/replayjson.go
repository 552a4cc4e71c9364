package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"xceiver/properties"
	"xceiver/traces"
)

// jsonTraceSystem names the system whose JSON trace path holds ("" for
// anything else, such as a data-path trace).
func jsonTraceSystem(path string) string { return formatSystem(jsonTraceFormat(path)) }

// formatSystem names the system whose JSON traces have format f, or "".
func formatSystem(f string) string {
	for _, s := range []string{"rpc", "sc", "scenario"} {
		if strings.HasPrefix(f, "xceiver-"+s+"-trace/") {
			return s
		}
	}
	return ""
}

// replayJSONTrace re-runs a JSON trace (rpc, sc, scenario) and reports
// whether it fails the same way; with htmlPath it also renders the
// replay's events.
func replayJSONTrace(stdout, stderr io.Writer, system, path, htmlPath string, asJSON bool) int {
	var events *bytes.Buffer
	var out io.Writer
	if htmlPath != "" {
		events = new(bytes.Buffer)
		out = events
	}
	// Each system's trace: its head (format and verdict), case and replay.
	var head properties.TraceHead
	var seed uint64
	var bug string
	var c any
	var got jsonReplay
	switch system {
	case "rpc":
		t, err := properties.ReadRPCTrace(path)
		if err != nil {
			return report(stderr, usagef("replay: %v", err))
		}
		r := properties.RunRPCTraced(t.Case, rpcLinTimeout, out)
		got = jsonReplay{replayEvents: r.Events, replayHash: r.TraceHash}
		if r.Failure != nil {
			got.property, got.msg = r.Failure.Property, r.Failure.Message
		}
		head, seed, bug, c = t.TraceHead, t.Case.Seed, t.Case.Bug, t.Case
	case "sc":
		t, err := properties.ReadSCTrace(path)
		if err != nil {
			return report(stderr, usagef("replay: %v", err))
		}
		r := properties.RunSCTraced(t.Case, out)
		got = jsonReplay{property: r.Property, msg: r.Message, replayEvents: r.Events, replayHash: r.TraceHash}
		head, seed, bug, c = t.TraceHead, t.Case.Seed, t.Case.Bug, t.Case
	default:
		t, err := properties.ReadScenarioTrace(path)
		if err != nil {
			return report(stderr, usagef("replay: %v", err))
		}
		r := properties.RunScenarioTraced(t.Case, out)
		got = jsonReplay{property: r.Property, msg: r.Message, replayEvents: r.Events, replayHash: r.TraceHash}
		head, seed, bug, c = t.TraceHead, t.Case.Seed, t.Case.Bug, t.Case
	}
	want := jsonReplay{path: path, seed: seed, bug: bug, property: head.Property, msg: head.Message, events: head.Events, hash: head.TraceHash}
	rerr := properties.ReplayMismatch(got.property, got.msg, got.replayEvents, got.replayHash, head)
	want.replayEvents, want.replayHash = got.replayEvents, got.replayHash
	want.replayProperty, want.replayMsg = got.property, got.msg
	var htmlErr error
	if htmlPath != "" {
		var lines [][]byte
		for _, l := range bytes.Split(events.Bytes(), []byte{'\n'}) {
			if len(l) > 0 {
				lines = append(lines, l)
			}
		}
		var page bytes.Buffer
		err := traces.WriteSystemHTML(&page, traces.SystemTrace{System: system, Seed: want.seed, Bug: want.bug, Property: want.property,
			Message: want.msg, Events: want.events, TraceHash: want.hash, Format: head.Format, Case: c, Reproduced: rerr == nil}, lines)
		if err == nil {
			err = os.WriteFile(htmlPath, page.Bytes(), 0o644)
		}
		htmlErr = err
	}
	code := replayVerdict(stdout, asJSON, want, rerr)
	if htmlErr != nil {
		// After the verdict, which it does not change (exit 1 either
		// way: output lost); the error names the file.
		return report(stderr, fmt.Errorf("replay: --html: %w", htmlErr))
	}
	if htmlPath != "" && !asJSON {
		fmt.Fprintf(stdout, "wrote %s\n", htmlPath)
	}
	return code
}

// jsonReplay is what a replay of a JSON trace (rpc, sc, scenario) reports.
type jsonReplay struct {
	path               string
	seed               uint64
	bug, property, msg string
	events             uint64
	hash               string
	replayEvents       uint64
	replayHash         string
	// What the replay found (the data-path JSON's summary says as much).
	replayProperty, replayMsg string
}

// replayVerdict prints a JSON trace's replay, the same for every system
// whose traces are JSON: reproduced (exit 0) or where it diverged (exit 1).
func replayVerdict(stdout io.Writer, asJSON bool, t jsonReplay, rerr error) int {
	if asJSON {
		summary := fmt.Sprintf("reproduced: %s: %s (%d events, hash %s)", t.property, t.msg, t.replayEvents, t.replayHash)
		if rerr != nil {
			summary = "diverged: " + rerr.Error()
		}
		out := map[string]any{"trace": t.path, "seed": t.seed, "bug": t.bug, "property": t.property, "message": t.msg,
			"events": t.events, "trace_hash": t.hash, "reproduced": rerr == nil, "replay_events": t.replayEvents, "replay_hash": t.replayHash,
			"replay_property": t.replayProperty, "replay_message": t.replayMsg, "summary": summary}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
	} else if rerr == nil {
		fmt.Fprintf(stdout, "reproduced: %s: %s (%d events, hash %s)\n", t.property, traces.Printable(t.msg), t.replayEvents, t.replayHash)
	} else {
		fmt.Fprintf(stdout, "diverged: %v\n", rerr)
	}
	if rerr != nil {
		return exitFail
	}
	return exitOK
}

// jsonTraceFormat returns the format field of a JSON trace file, or ""
// when path is not one.
func jsonTraceFormat(path string) string {
	var format string
	if json.Unmarshal(headFields(path, "format")["format"], &format) != nil {
		return ""
	}
	return format
}

// headFields returns the raw values of the named top-level keys of the
// JSON object path holds, or nil if it is not a regular file that begins
// with one. It reads only as far as the last of them, key by key, not the
// whole object: traces put these first (a valid trace over the 1 MiB once
// decoded here whole was taken for a data-path one).
func headFields(path string, names ...string) map[string]json.RawMessage {
	// Non-blocking and regular files only: a FIFO is left to the reader
	// that refuses it, rather than blocking here.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(f, 1<<20))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	found := map[string]json.RawMessage{}
	for len(found) < len(names) && dec.More() {
		key, err := dec.Token()
		if err != nil {
			return found
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return found
		}
		if k, _ := key.(string); slices.Contains(names, k) {
			found[k] = v
		}
	}
	return found
}
