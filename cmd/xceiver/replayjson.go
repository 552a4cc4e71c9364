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
	var rep jsonReplay
	var c any
	switch system {
	case "rpc":
		t, err := properties.ReadRPCTrace(path)
		if err != nil {
			return report(stderr, usagef("replay: %v", err))
		}
		r := properties.RunRPCTraced(t.Case, out)
		rep = jsonReplay{seed: t.Case.Seed, bug: t.Case.Bug, head: t.TraceHead, events: r.Events, hash: r.TraceHash}
		if r.Failure != nil {
			rep.property, rep.msg = r.Failure.Property, r.Failure.Message
		}
		c = t.Case
	case "sc":
		t, err := properties.ReadSCTrace(path)
		if err != nil {
			return report(stderr, usagef("replay: %v", err))
		}
		r := properties.RunSCTraced(t.Case, out)
		rep = jsonReplay{seed: t.Case.Seed, bug: t.Case.Bug, head: t.TraceHead, property: r.Property, msg: r.Message, events: r.Events, hash: r.TraceHash}
		c = t.Case
	default:
		t, err := properties.ReadScenarioTrace(path)
		if err != nil {
			return report(stderr, usagef("replay: %v", err))
		}
		r := properties.RunScenarioTraced(t.Case, out)
		rep = jsonReplay{seed: t.Case.Seed, bug: t.Case.Bug, head: t.TraceHead, property: r.Property, msg: r.Message, events: r.Events, hash: r.TraceHash}
		c = t.Case
	}
	rep.path = path
	head := rep.head
	rerr := properties.ReplayMismatch(rep.property, rep.msg, rep.events, rep.hash, head)
	var htmlErr error
	if htmlPath != "" {
		var lines [][]byte
		for _, l := range bytes.Split(events.Bytes(), []byte{'\n'}) {
			if len(l) > 0 {
				lines = append(lines, l)
			}
		}
		var page bytes.Buffer
		err := traces.WriteSystemHTML(&page, traces.SystemTrace{System: system, Seed: rep.seed, Bug: rep.bug, Property: head.Property,
			Message: head.Message, Events: head.Events, TraceHash: head.TraceHash, Format: head.Format, Case: c, Reproduced: rerr == nil}, lines)
		if err == nil {
			err = os.WriteFile(htmlPath, page.Bytes(), 0o644)
		}
		htmlErr = err
	}
	code := replayVerdict(stdout, asJSON, rep, rerr)
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
	path string
	seed uint64
	bug  string
	head properties.TraceHead // what the trace records
	// What the replay found.
	property, msg string
	events        uint64
	hash          string
}

// replayVerdict prints a JSON trace's replay, the same for every system
// whose traces are JSON: reproduced (exit 0) or where it diverged (exit 1).
func replayVerdict(stdout io.Writer, asJSON bool, t jsonReplay, rerr error) int {
	if asJSON {
		summary := fmt.Sprintf("reproduced: %s: %s (%d events, hash %s)", t.head.Property, t.head.Message, t.events, t.hash)
		if rerr != nil {
			summary = "diverged: " + rerr.Error()
		}
		out := map[string]any{"trace": t.path, "seed": t.seed, "bug": t.bug, "property": t.head.Property, "message": t.head.Message,
			"events": t.head.Events, "trace_hash": t.head.TraceHash, "reproduced": rerr == nil, "replay_events": t.events, "replay_hash": t.hash,
			"replay_property": t.property, "replay_message": t.msg, "summary": summary}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
	} else if rerr == nil {
		fmt.Fprintf(stdout, "reproduced: %s: %s (%d events, hash %s)\n", t.head.Property, traces.Printable(t.head.Message), t.events, t.hash)
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
