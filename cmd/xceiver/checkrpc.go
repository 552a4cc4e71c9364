package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"xceiver/properties"
)

func rpcBugNames() []string {
	var names []string
	for _, b := range properties.RPCBugs {
		names = append(names, b.Name)
	}
	return names
}

// replayRPC re-runs an rpc trace (a JSON file check --system rpc wrote).
func replayRPC(stdout, stderr io.Writer, path string, asJSON bool) int {
	t, err := properties.ReadRPCTrace(path)
	if err != nil {
		return report(stderr, usagef("replay: %v", err))
	}
	r, rerr := properties.ReplayRPC(t)
	return replayVerdict(stdout, asJSON, jsonReplay{path, t.Case.Seed, t.Case.Bug, t.Property, t.Message, t.Events, t.TraceHash, r.Events, r.TraceHash}, rerr)
}

// isRPCTrace reports whether path holds an rpc trace (JSON with an rpc
// case) rather than a data-path trace.
func isRPCTrace(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head struct {
		Format string `json:"format"`
	}
	if json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&head) != nil {
		return false
	}
	return strings.HasPrefix(head.Format, "xceiver-rpc-trace/")
}

// jsonReplay is what a replay of a JSON trace (rpc or sc) reports.
type jsonReplay struct {
	path               string
	seed               uint64
	bug, property, msg string
	events             uint64
	hash               string
	replayEvents       uint64
	replayHash         string
}

// replayVerdict prints a JSON trace's replay, the same for every system
// whose traces are JSON: reproduced (exit 0) or where it diverged (exit 1).
func replayVerdict(stdout io.Writer, asJSON bool, t jsonReplay, rerr error) int {
	if asJSON {
		out := map[string]any{"trace": t.path, "seed": t.seed, "bug": t.bug, "property": t.property, "message": t.msg,
			"events": t.events, "trace_hash": t.hash, "reproduced": rerr == nil, "replay_events": t.replayEvents, "replay_hash": t.replayHash}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
	} else if rerr == nil {
		fmt.Fprintf(stdout, "reproduced: %s: %s (%d events, hash %s)\n", t.property, t.msg, t.replayEvents, t.replayHash)
	} else {
		fmt.Fprintf(stdout, "diverged: %v\n", rerr)
	}
	if rerr != nil {
		return exitFail
	}
	return exitOK
}
