package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// scShrinkBudget bounds the runs spent shrinking one failing seed.
const scShrinkBudget = 300

// runCheckSC checks short-circuit seeds (model/shortcircuit with the
// datanode), shrinking each failure and writing its trace into --out. A
// seed runs in well under a millisecond of CPU, so seeds run one after
// another.
func runCheckSC(opt checkOptions, stdout, stderr io.Writer) int {
	budget := scShrinkBudget
	if opt.noShrink {
		budget = 0
	}
	var fails []systemFailure
	checked := 0
	for i := 0; i < opt.seeds; i++ {
		if i%opt.shardN != opt.shardI-1 {
			continue
		}
		if opt.maxFailures > 0 && len(fails) >= opt.maxFailures {
			break
		}
		seed := opt.seed + uint64(i)
		checked++
		c, r, err := properties.CheckSCSeed(seed, opt.bug, budget)
		if err != nil {
			return report(stderr, fmt.Errorf("check --system sc: seed %d: %w", seed, err))
		}
		if r.Property == "" {
			continue
		}
		path := filepath.Join(opt.out, systemTraceName("sc", seed, opt.bug))
		tr, _ := properties.RecordSC(c)
		err = os.MkdirAll(opt.out, 0o755)
		if err == nil {
			err = properties.WriteSCTrace(path, tr)
		}
		if err != nil {
			return report(stderr, fmt.Errorf("check --system sc: seed %d: writing its trace: %w", seed, err))
		}
		fails = append(fails, systemFailure{seed, r.Property, r.Message, path, len(c.Ops), nil})
	}
	return systemSummary(stdout, opt, "sc", checked, fails)
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
