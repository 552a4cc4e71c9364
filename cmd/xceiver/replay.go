package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"xceiver/properties"
	"xceiver/traces"
)

func cmdReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("replay", stderr)
	htmlPath := fs.String("html", "", "also write an HTML rendering of the run to this file")
	asJSON := fs.Bool("json", false, "print one JSON object")
	rest, err := parseFlags(fs, args, stderr)
	if err != nil {
		return report(stderr, err)
	}
	if len(rest) != 1 {
		return report(stderr, usagef("replay: want exactly one TRACE file (got %d arguments)", len(rest)))
	}
	t, err := traces.ReadFile(rest[0])
	if err != nil {
		return report(stderr, usagef("replay: %v", err))
	}
	var html *os.File
	if *htmlPath != "" {
		// Fail on a bad path before the run, not after.
		if html, err = os.Create(*htmlPath); err != nil {
			return report(stderr, usagef("replay: --html: %v", err))
		}
		defer html.Close()
	}
	rep := traces.Replay(t, properties.Options{Verbose: html != nil})
	ok := rep.Reproduced(t)
	if html != nil {
		if err := traces.WriteHTML(html, t, rep.Result); err != nil {
			return report(stderr, fmt.Errorf("replay: write %s: %w", *htmlPath, err))
		}
		if err := html.Close(); err != nil {
			return report(stderr, fmt.Errorf("replay: write %s: %w", *htmlPath, err))
		}
	}
	if *asJSON {
		out := map[string]any{
			"trace": rest[0], "seed": t.Header.Seed, "bug": t.Header.Bug, "property": t.Header.Property,
			"message": t.Header.Message, "events": t.Header.Events, "trace_hash": t.Header.TraceHash,
			"reproduced": ok, "replay_events": rep.Events, "replay_hash": rep.TraceHash, "summary": rep.Summary(t),
		}
		if rep.Divergence != nil {
			out["divergence"] = map[string]any{"line": rep.Divergence.Line, "want": rep.Divergence.Want, "got": rep.Divergence.Got}
		}
		if *htmlPath != "" {
			out["html"] = *htmlPath
		}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
	} else {
		h := &t.Header
		bug := ""
		if h.Bug != "" {
			bug = ", bug " + h.Bug
		}
		fmt.Fprintf(stdout, "trace %s: seed %d%s, %d events, %s: %s\n", rest[0], h.Seed, bug, h.Events, h.Property, h.Message)
		fmt.Fprintln(stdout, rep.Summary(t))
		if *htmlPath != "" {
			fmt.Fprintf(stdout, "wrote %s\n", *htmlPath)
		}
	}
	if !ok {
		return exitFail
	}
	return exitOK
}
