package main

import (
	"encoding/json"
	"fmt"
	"os"

	"xceiver/properties"
	"xceiver/traces"
)

func replayCommand() *command {
	return &command{
		name:    "replay",
		args:    "TRACE",
		summary: "re-run a trace event by event: confirm its failure or report the first divergence",
		about: func() string {
			return `TRACE is a trace file written by check (into --out, default xceiver-failures/)
or one of traces/corpus/*.trace. Exit 0 when it reproduces (same property,
same event hash), 1 when it diverges, 2 when the file is not a valid trace
of this format and code version.`
		},
		example: []string{
			"xceiver replay traces/corpus/HDFS-4911.trace --html hdfs-4911.html",
		},
		setup: func(c *call) func([]string) int {
			htmlPath := c.fs.String("html", "", "also write an HTML rendering of the run to `FILE`")
			asJSON := c.fs.Bool("json", false, "print one JSON object")
			return func(rest []string) int {
				return replayMain(c, rest, *htmlPath, *asJSON)
			}
		},
	}
}

func replayMain(c *call, rest []string, htmlPath string, asJSON bool) int {
	stdout, stderr := c.stdout, c.stderr
	if len(rest) != 1 {
		return report(stderr, c.usagef("want exactly one TRACE file (got %d arguments)", len(rest)))
	}
	if rest[0] == "" {
		return report(stderr, c.usagef("an empty TRACE file name"))
	}
	if sameFile(htmlPath, rest[0]) {
		return report(stderr, c.usagef("%s %s is the TRACE: the page would overwrite it", c.typed("html"), htmlPath))
	}
	// Read once: a JSON trace's format names its system, or none this
	// xceiver has.
	format := jsonTraceFormat(rest[0])
	if sys := formatSystem(format); sys != "" {
		if htmlPath != "" {
			if err := checkOutFile(htmlPath); err != nil {
				return report(stderr, c.usagef("%s: %v", c.typed("html"), err))
			}
		}
		if dryRun {
			return exitOK
		}
		return replayJSONTrace(stdout, stderr, sys, rest[0], htmlPath, asJSON)
	}
	if format != "" {
		// A JSON trace of no system this xceiver has (a format string:
		// a data-path trace's is a number), not a data-path trace
		// without a header.
		return report(stderr, c.usagef("trace %s: format %q: this xceiver reads %s, %s and %s (and data-path traces)",
			traces.Printable(rest[0]), format, properties.RPCTraceFormat, properties.SCTraceFormat, properties.ScenarioTraceFormat))
	}
	t, err := traces.ReadFile(rest[0])
	if err != nil {
		return report(stderr, c.usagef("%v", err))
	}
	if htmlPath != "" {
		if err := checkOutFile(htmlPath); err != nil {
			return report(stderr, c.usagef("%s: %v", c.typed("html"), err))
		}
	}
	if dryRun {
		return exitOK
	}
	var html *os.File
	if htmlPath != "" {
		// Fail on a bad path before the run, not after.
		if html, err = os.Create(htmlPath); err != nil {
			return report(stderr, c.usagef("%s: %v", c.typed("html"), err))
		}
		defer html.Close()
	}
	rep := traces.Replay(t, properties.Options{Verbose: html != nil})
	ok := rep.Reproduced(t)
	// A page that could not be written is said after the verdict, which
	// it does not change (exit 1 either way: output lost).
	var htmlErr error
	if html != nil {
		htmlErr = traces.WriteHTML(html, t, rep.Result)
		if err := html.Close(); htmlErr == nil {
			htmlErr = err
		}
		if htmlErr != nil {
			htmlPath = ""
		}
	}
	if asJSON {
		out := map[string]any{
			"trace": rest[0], "seed": t.Header.Seed, "bug": t.Header.Bug, "property": t.Header.Property,
			"message": t.Header.Message, "events": t.Header.Events, "trace_hash": t.Header.TraceHash,
			"reproduced": ok, "replay_events": rep.Events, "replay_hash": rep.TraceHash, "summary": rep.Summary(t),
		}
		if rep.Divergence != nil {
			out["divergence"] = map[string]any{"line": rep.Divergence.Line, "want": rep.Divergence.Want, "got": rep.Divergence.Got}
		}
		if htmlPath != "" {
			out["html"] = htmlPath
		}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
	} else {
		h := &t.Header
		bug := ""
		if h.Bug != "" {
			bug = ", bug " + h.Bug
		}
		fmt.Fprintf(stdout, "trace %s: seed %d%s, %d events, %s: %s\n", traces.Printable(rest[0]), h.Seed, bug, h.Events, traces.Printable(h.Property), traces.Printable(h.Message))
		fmt.Fprintln(stdout, rep.Summary(t))
		if htmlPath != "" {
			fmt.Fprintf(stdout, "wrote %s\n", htmlPath)
		}
	}
	if htmlErr != nil {
		// (The error names the file: "write PATH: no space left".)
		return report(stderr, fmt.Errorf("replay: --html: %w", htmlErr))
	}
	if !ok {
		return exitFail
	}
	return exitOK
}
