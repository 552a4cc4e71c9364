package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"xceiver/properties"
)

func rpcBugNames() []string {
	var names []string
	for _, b := range properties.RPCBugs {
		names = append(names, b.Name)
	}
	return names
}

// systemFailure is one failing seed of a system checked apart from the
// data path (rpc, sc). Faults is nil for systems that draw none.
type systemFailure struct {
	Seed     uint64 `json:"seed"`
	Property string `json:"property"`
	Message  string `json:"message"`
	Trace    string `json:"trace"`
	Ops      int    `json:"ops"`
	Faults   *int   `json:"faults,omitempty"`
}

// systemTraceName names the trace file of a failing seed of system.
func systemTraceName(system string, seed uint64, bug string) string {
	if bug != "" {
		return fmt.Sprintf("%s-seed-%d-%s.json", system, seed, bug)
	}
	return fmt.Sprintf("%s-seed-%d.json", system, seed)
}

// systemSummary prints a system's failures and its closing line (or the
// JSON result) and returns the exit code.
func systemSummary(stdout io.Writer, opt checkOptions, system string, checked int, fails []systemFailure) int {
	if opt.json {
		b, _ := json.Marshal(map[string]any{"system": system, "seeds": checked, "bug": opt.bug,
			"passed": checked - len(fails), "failed": len(fails), "failures": fails})
		fmt.Fprintln(stdout, string(b))
	} else {
		for _, f := range fails {
			faults := ""
			if f.Faults != nil {
				faults = fmt.Sprintf(", %d faults", *f.Faults)
			}
			fmt.Fprintf(stdout, "seed %d: %s: %s (%d ops%s)\n  xceiver replay %s\n", f.Seed, f.Property, f.Message, f.Ops, faults, f.Trace)
		}
		fmt.Fprintf(stdout, "%s: %d passed, %d failed\n", system, checked-len(fails), len(fails))
	}
	if len(fails) > 0 {
		return exitFail
	}
	return exitOK
}

// runCheckRPC checks rpc seeds (model/rpc and model/namespace end to end
// with the datanode), shrinking each failure and writing its trace into
// --out; replay re-runs one.
func runCheckRPC(opt checkOptions, stdout, stderr io.Writer) int {
	var seeds []uint64
	for i := 0; i < opt.seeds; i++ {
		if i%opt.shardN == opt.shardI-1 {
			seeds = append(seeds, opt.seed+uint64(i))
		}
	}
	budget := properties.ShrinkBudget
	if opt.noShrink {
		budget = 0
	}
	results := make([]*systemFailure, len(seeds))
	errs := make([]error, len(seeds))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := 0
	for w := 0; w < min(opt.parallel, len(seeds)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := opt.maxFailures > 0 && failed >= opt.maxFailures
				mu.Unlock()
				if i >= len(seeds) || stop {
					return
				}
				seed := seeds[i]
				c, r, err := properties.CheckRPCSeed(seed, opt.bug, budget)
				if err != nil {
					errs[i] = err
					continue
				}
				if r.Failure == nil {
					continue
				}
				path := filepath.Join(opt.out, systemTraceName("rpc", seed, opt.bug))
				tr, _ := properties.RecordRPC(c)
				if err := os.MkdirAll(opt.out, 0o755); err == nil {
					err = properties.WriteRPCTrace(path, tr)
				}
				mu.Lock()
				failed++
				mu.Unlock()
				faults := len(c.Faults)
				results[i] = &systemFailure{seed, r.Failure.Property, r.Failure.Message, path, len(c.Ops) + len(c.Live), &faults}
			}
		}()
	}
	wg.Wait()
	var fails []systemFailure
	checked := 0
	for i := range seeds {
		if errs[i] != nil {
			return report(stderr, fmt.Errorf("check --system rpc: seed %d: %w", seeds[i], errs[i]))
		}
		if i < next {
			checked++
		}
		if f := results[i]; f != nil {
			fails = append(fails, *f)
		}
	}
	checked = min(checked, len(seeds))
	if opt.maxFailures > 0 && len(fails) > opt.maxFailures {
		fails = fails[:opt.maxFailures] // workers in flight finished after the limit
	}
	return systemSummary(stdout, opt, "rpc", checked, fails)
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
