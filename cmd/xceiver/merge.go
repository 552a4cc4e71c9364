package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func mergeCommand() *command {
	return &command{
		name:    "merge",
		args:    "RESULT.json...",
		summary: "combine the JSON results of a sharded check (one per shard) into one summary",
		about: func() string {
			return `Each RESULT.json is the output of "xceiver check --json" for one shard of
the same sweep (same seeds, first seed, bug, world and code version). merge
refuses results that disagree, or that leave shards out (unless --partial),
and prints the summary check would have printed for the whole sweep: counts,
failures by property with the smallest trace of each, and the replay
command. With --traces DIR the failures' traces are copied into DIR (each is
looked for where its result says, then beside its RESULT.json) and the
summary points there. Exit 1 if any seed failed.`
		},
		example: []string{
			"xceiver merge results/shard-*.json --traces failures/",
		},
		setup: func(c *call) func([]string) int {
			asJSON := c.fs.Bool("json", false, "print one JSON object")
			tracesDir := c.fs.String("traces", "", "copy every failure's trace into `DIR`")
			partial := c.fs.Bool("partial", false, "merge even if some shards are missing")
			return func(rest []string) int {
				return mergeMain(c, rest, *asJSON, *tracesDir, *partial)
			}
		},
	}
}

func mergeMain(c *call, files []string, asJSON bool, tracesDir string, partial bool) int {
	if len(files) == 0 {
		return report(c.stderr, c.usagef("want one or more RESULT.json files (check --json, one per shard)"))
	}
	if tracesDir != "" {
		if err := checkOutDir(tracesDir); err != nil {
			return report(c.stderr, c.usagef("%s: %v", c.typed("traces"), err))
		}
	}
	if dryRun {
		return exitOK
	}
	m, err := mergeResults(files, partial)
	if err != nil {
		return report(c.stderr, c.usagef("%v", err))
	}
	if tracesDir != "" {
		if err := os.MkdirAll(tracesDir, 0o755); err != nil {
			return report(c.stderr, fmt.Errorf("merge: %w", err))
		}
		m.copyTraces(tracesDir)
	}
	s := m.summary()
	if asJSON {
		b, _ := json.Marshal(s)
		fmt.Fprintln(c.stdout, string(b))
	} else {
		printGroups(c.stdout, s.ByProperty)
		fmt.Fprintf(c.stdout, "merged %d shard%s of %d: checked %d of %d seed%s (from %d, %s%s)\n",
			len(s.Shards), plural(len(s.Shards), "", "s"), m.n, s.Checked, s.Seeds, plural(s.Seeds, "", "s"), s.FirstSeed, s.World, systemsLine(s.System, s.Systems))
		fmt.Fprintf(c.stdout, "%d passed, %d failed\n", s.Passed, s.Failed)
	}
	if s.Failed > 0 {
		return exitFail
	}
	return exitOK
}

// merged is a sweep's shards read back.
type merged struct {
	n       int // shards in the sweep
	results []*checkSummary
	dirs    []string // where each result file lives
	tally   *tally
}

func mergeResults(files []string, partial bool) (*merged, error) {
	m := &merged{tally: newTally()}
	seen := map[int]string{}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, unwrapPathError(err))
		}
		var r checkSummary
		if err := json.Unmarshal(b, &r); err != nil || r.Shard == "" || r.World == "" {
			return nil, fmt.Errorf("%s: not the output of check --json", path)
		}
		i, n, err := parseShard(r.Shard)
		if err != nil {
			return nil, fmt.Errorf("%s: shard %q: %v", path, r.Shard, err)
		}
		if len(m.results) == 0 {
			m.n = n
		} else {
			first := m.results[0]
			for _, d := range []struct {
				what      string
				got, want any
			}{
				{"world", r.World, first.World}, {"system", r.System, first.System}, {"seeds", r.SweepSeeds, first.SweepSeeds}, {"first seed", r.FirstSeed, first.FirstSeed},
				{"bug", r.Bug, first.Bug}, {"code version", r.CodeVersion, first.CodeVersion}, {"number of shards", n, m.n},
			} {
				if d.got != d.want {
					return nil, fmt.Errorf("%s: %s %v, but %s has %v: not the same sweep", path, d.what, d.got, files[0], d.want)
				}
			}
		}
		if other, dup := seen[i]; dup {
			return nil, fmt.Errorf("%s: shard %s again (also in %s)", path, r.Shard, other)
		}
		seen[i] = path
		m.results = append(m.results, &r)
		m.dirs = append(m.dirs, filepath.Dir(path))
	}
	if len(seen) < m.n && !partial {
		var missing []string
		for i := 1; i <= m.n && len(missing) < 10; i++ {
			if _, ok := seen[i]; !ok {
				missing = append(missing, fmt.Sprintf("%d/%d", i, m.n))
			}
		}
		more := ""
		if m.n-len(seen) > len(missing) {
			more = fmt.Sprintf(" and %d more", m.n-len(seen)-len(missing))
		}
		return nil, fmt.Errorf("shards missing: %s%s (--partial merges what is there)", strings.Join(missing, ", "), more)
	}
	return m, nil
}

func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("want i/n with 1 ≤ i ≤ n")
	}
	return i, n, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// copyTraces copies every listed failure's trace into dir and points the
// failures there; a trace it cannot find keeps a note instead.
func (m *merged) copyTraces(dir string) {
	for k, r := range m.results {
		for j := range r.Failures {
			f := &r.Failures[j]
			if f.Trace == "" {
				continue
			}
			src := findTrace(f.Trace, m.dirs[k], r.Out)
			if src == "" {
				f.TraceError = "trace " + f.Trace + " not found when merging"
				f.Trace = ""
				continue
			}
			dst := filepath.Join(dir, filepath.Base(f.Trace))
			if err := copyFile(src, dst); err != nil {
				f.TraceError = err.Error()
				f.Trace = ""
				continue
			}
			f.Trace = dst
		}
	}
}

// findTrace looks for a shard's trace where the shard wrote it, then
// beside its result file (a collected results directory).
func findTrace(trace, resultDir, out string) string {
	for _, p := range []string{
		trace,
		filepath.Join(resultDir, trace),
		filepath.Join(resultDir, filepath.Base(out), filepath.Base(trace)),
		filepath.Join(resultDir, filepath.Base(trace)),
	} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// summary is the whole sweep's summary: the shards' counts added up,
// failures by property regrouped (the smallest trace of all shards).
func (m *merged) summary() *checkSummary {
	first := m.results[0]
	s := &checkSummary{World: first.World, System: first.System, SweepSeeds: first.SweepSeeds, FirstSeed: first.FirstSeed, Bug: first.Bug,
		CodeVersion: first.CodeVersion, Properties: first.Properties, Shard: fmt.Sprintf("all of %d", m.n)}
	t := newTally()
	cpuKnown := true    // every shard reported its CPU (older results did not)
	eventsKnown := true // and its simulated events (the real world's and older results do not)
	for _, r := range m.results {
		s.Shards = append(s.Shards, r.Shard)
		s.Seeds += r.Seeds
		s.Checked += r.Checked
		s.Passed += r.Passed
		s.ElapsedS = max(s.ElapsedS, r.ElapsedS)
		s.SeedsPerS += r.SeedsPerS
		s.CPUS += r.CPUS
		cpuKnown = cpuKnown && r.CPUS > 0
		s.SimEvents += r.SimEvents
		eventsKnown = eventsKnown && r.SimEvents > 0
		s.StoppedEarly = s.StoppedEarly || r.StoppedEarly
		for j := range r.Failures {
			t.add(r.Failures[j].System, 0, &r.Failures[j])
		}
		// Failures a shard counted but did not list still count.
		for _, g := range r.ByProperty {
			listed := 0
			for _, f := range r.Failures {
				if f.Property == g.Property {
					listed++
				}
			}
			if extra := g.Count - listed; extra > 0 {
				if t.byProp[g.Property] == nil {
					t.byProp[g.Property] = &propSummary{Property: g.Property, Smallest: g.Smallest, Replay: g.Replay}
				}
				t.byProp[g.Property].Count += extra
				t.failed += extra
			}
		}
	}
	sort.Slice(s.Shards, func(i, j int) bool {
		a, _, _ := parseShard(s.Shards[i])
		b, _, _ := parseShard(s.Shards[j])
		return a < b
	})
	sort.Slice(t.listed, func(i, j int) bool { return t.listed[i].Seed < t.listed[j].Seed })
	// Per-system counts come from the shards' own counts, not from the
	// failures listed (a listed failure was counted there already).
	bySys := map[string]*systemCount{}
	for _, r := range m.results {
		for _, c := range r.Systems {
			if bySys[c.System] == nil {
				bySys[c.System] = &systemCount{System: c.System}
			}
			bySys[c.System].Checked += c.Checked
			bySys[c.System].Failed += c.Failed
			bySys[c.System].SimEvents += c.SimEvents
		}
	}
	t.bySystem = bySys
	s.Systems = t.systems()
	s.Failed = t.failed
	s.Failures = nonNil(t.listed)
	s.NotListed = s.Failed - len(t.listed)
	s.ByProperty = nonNilGroups(t.groups())
	if !eventsKnown {
		// Part of the sweep's events are unknown: no figure rather
		// than a wrong one.
		s.SimEvents = 0
		for i := range s.Systems {
			s.Systems[i].SimEvents = 0
		}
	}
	if cpuKnown {
		cpu := time.Duration(s.CPUS * float64(time.Second))
		s.SeedsPerCPUS = perSecond(s.Checked, cpu)
		s.SimEventsPerCPUS = perSecond(s.SimEvents, cpu)
	} else {
		s.CPUS = 0 // part of the sweep's CPU is unknown: no figure rather than a wrong one
	}
	return s
}
