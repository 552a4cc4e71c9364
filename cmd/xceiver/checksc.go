package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"

	"xceiver/properties"
)

func scBugNames() []string {
	var names []string
	for _, b := range properties.SCBugs {
		names = append(names, b.Name)
	}
	return names
}

// replaySC re-runs a short-circuit trace (a JSON file check --system sc
// wrote).
func replaySC(stdout, stderr io.Writer, path string, asJSON bool) int {
	t, err := properties.ReadSCTrace(path)
	if err != nil {
		return report(stderr, usagef("replay: %v", err))
	}
	r, rerr := properties.ReplaySC(t)
	return replayVerdict(stdout, asJSON, jsonReplay{path, t.Case.Seed, t.Case.Bug, t.Property, t.Message, t.Events, t.TraceHash, r.Events, r.TraceHash}, rerr)
}

// jsonTraceFormat returns the format field of a JSON trace file, or ""
// when path is not one.
func jsonTraceFormat(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var head struct {
		Format string `json:"format"`
	}
	if json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&head) != nil {
		return ""
	}
	return head.Format
}

func isSCTrace(path string) bool {
	return strings.HasPrefix(jsonTraceFormat(path), "xceiver-sc-trace/")
}
