package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"xceiver/properties"
	"xceiver/traces"
)

// defaultSeeds is how many seeds `xceiver check` runs without --seeds:
// about ten seconds on a quiet 2-core machine.
const defaultSeeds = 10000

type checkOptions struct {
	seeds    int
	seed     uint64
	parallel int
	shard    string
	shardI   int
	shardN   int
	out      string
	json     bool
	bug      string
	world    string
	system   string

	maxFailures int
	// skip is how many of the shard's first seeds are not checked:
	// those an interrupted check of the same flags checked.
	skip       int
	noShrink   bool
	cpuProfile string
	ignore     []string
}

func checkCommand() *command {
	return &command{
		name:    "check",
		summary: "check properties over many drawn cases (the main job); failures are shrunk and saved as traces",
		about: func() string {
			return `Every seed draws a system, then a configuration and a schedule of client
ops and faults for it, runs it in the simulator and checks its properties
(fd bounds, pool bounds, linearizability, availability, liveness,
leak-freedom and more). A failure is shrunk and written as a replayable
trace into --out.

systems (--system narrows the mix; each seed's system is drawn from the
seed, so --seed S --seeds 1 checks it again): ` + mixDescription() + `

bugs (--bug NAME, any case): ` + strings.Join(bugNames(), ", ") + `
rpc bugs (--system rpc implied): ` + strings.Join(rpcBugNames(), ", ") + `
short-circuit bugs (--system sc implied): ` + strings.Join(scBugNames(), ", ") + `
scenario bugs (--system scenario implied): ` + strings.Join(scenarioBugNames(), ", ")
		},
		example: []string{
			"xceiver check --seeds 1000",
			"xceiver check --system rpc --seeds 200",
			"xceiver check --bug HDFS-4911 --seeds 200",
			"xceiver check --seed 42 --json",
		},
		setup: func(c *call) func([]string) int {
			fs := c.fs
			var opt checkOptions
			fs.IntVar(&opt.seeds, "seeds", defaultSeeds, "check `N` seeds")
			fs.Uint64Var(&opt.seed, "seed", 1, "first seed `S` (alone: check just this seed)")
			fs.IntVar(&opt.parallel, "parallel", runtime.NumCPU(), "check `P` seeds at once")
			fs.StringVar(&opt.shard, "shard", "1/1", "check only shard `i/n` of the seeds (1 ≤ i ≤ n; default from JOB_COMPLETION_INDEX and JOB_COMPLETIONS when set)")
			fs.StringVar(&opt.out, "out", "xceiver-failures", "write failures' traces into `DIR`")
			fs.BoolVar(&opt.json, "json", false, "print one JSON object")
			fs.StringVar(&opt.bug, "bug", "", "switch on a catalogued bug `NAME` (list: show them)")
			fs.IntVar(&opt.maxFailures, "max-failures", 0, "stop after `N` failures (0: check every seed)")
			fs.IntVar(&opt.skip, "skip", 0, "skip the shard's first `K` seeds (the rest of an interrupted check: its summary gives K; merge joins the two)")
			fs.BoolVar(&opt.noShrink, "no-shrink", false, "report failures as drawn, unshrunk (a verdict sooner: mutate runs --max-failures 1 --no-shrink)")
			ignore := fs.String("ignore", "", "don't enforce the comma-separated properties `P,Q` (one that breaks at every seed hides the others)")
			fs.StringVar(&opt.world, "world", "sim", "world: `sim|real` (real: the same properties on real sockets, without faults, one seed at a time)")
			fs.StringVar(&opt.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof reads it)")
			fs.StringVar(&opt.system, "system", systemAll, "system checked: `datanode|rpc|sc|scenario|all` (rpc: the namenode's rpc server and namespace, end to end with the datanode; sc: short-circuit reads through a shared cache while blocks change; scenario: small runs of the scenarios run, validate and bench drive; all: each seed's system drawn from the seed)")
			return func(rest []string) int {
				stdout, stderr := c.stdout, c.stderr
				if len(rest) > 0 {
					return report(stderr, c.usagef("unexpected argument %q", rest[0]))
				}
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				if set["seed"] && !set["seeds"] {
					opt.seeds = 1
				}
				if *ignore != "" {
					for _, p := range strings.Split(*ignore, ",") {
						if !knownProperty(p) {
							return report(stderr, c.usagef("%s: unknown property %q (want one of %s)", c.typed("ignore"), p, strings.Join(systemProperties(systemAll), ", ")))
						}
						if !slices.Contains(opt.ignore, p) {
							opt.ignore = append(opt.ignore, p)
						}
					}
				}
				if strings.EqualFold(opt.bug, "list") {
					listBugs(stdout, opt.json)
					return exitOK
				}
				if opt.world == "real" && !set["seeds"] && !set["seed"] {
					opt.seeds = 10
				}
				if err := opt.validate(c); err != nil {
					return report(stderr, err)
				}
				if dryRun {
					return exitOK
				}
				var f *os.File
				var ew *errWriter
				if opt.cpuProfile != "" {
					var err error
					if opt.world == "sim" && pathWithin(opt.cpuProfile, opt.out) {
						// --out is made when the first trace is
						// written; a profile inside it needs it now.
						if err := os.MkdirAll(filepath.Dir(opt.cpuProfile), 0o755); err != nil {
							return report(stderr, c.usagef("%s: %v", c.typed("cpuprofile"), err))
						}
					}
					f, err = os.Create(opt.cpuProfile)
					if err != nil {
						return report(stderr, c.usagef("%s: %v", c.typed("cpuprofile"), err))
					}
					// pprof drops its write errors: kept here, so a full
					// disk does not pass for a profile written.
					ew = &errWriter{w: f}
					if err := pprof.StartCPUProfile(ew); err != nil {
						f.Close()
						return report(stderr, fmt.Errorf("%s: %w", c.typed("cpuprofile"), err))
					}
				}
				run := runCheck
				if opt.world == "real" {
					run = runCheckReal
				}
				code := run(opt, stdout, stderr)
				if opt.cpuProfile != "" {
					pprof.StopCPUProfile()
					if err := errors.Join(ew.err, f.Close()); err != nil {
						fmt.Fprintf(stderr, "xceiver: check: %s: %v\n", c.typed("cpuprofile"), err)
						// A check that passed but lost its profile did
						// not do all it was asked.
						if code == exitOK {
							code = exitFail
						}
					}
				}
				return code
			}
		},
	}
}

func bugNames() []string {
	var names []string
	for _, b := range properties.Bugs {
		names = append(names, b.Name)
	}
	return names
}

func (o *checkOptions) validate(c *call) error {
	switch {
	case o.world != "sim" && o.world != "real":
		return c.usagef("%s %q: want sim or real", c.typed("world"), o.world)
	case o.seeds < 1:
		return c.usagef("%s %d: want at least 1", c.typed("seeds"), o.seeds)
	case o.maxFailures < 0:
		return c.usagef("%s %d: want 0 (no limit) or more", c.typed("max-failures"), o.maxFailures)
	case o.parallel < 1 || o.parallel > 1024:
		return c.usagef("%s %d: want 1 to 1024", c.typed("parallel"), o.parallel)
	case o.seed > ^uint64(0)-uint64(o.seeds-1):
		return c.usagef("%s %d: the last seed would overflow (with --seeds %d)", c.typed("seed"), o.seed, o.seeds)
	case o.cpuProfile != "" && o.world == "sim" && pathWithin(o.out, o.cpuProfile):
		// Created first, a profile named like --out (or like a
		// directory above it) took the directory's place and every
		// trace was lost. A profile inside --out is harmless.
		return c.usagef("%s %s: at or above --out %s, where the traces go", c.typed("cpuprofile"), o.cpuProfile, o.out)
	case o.cpuProfile != "" && o.world == "sim" && samePath(filepath.Dir(o.cpuProfile), o.out) &&
		strings.HasPrefix(filepath.Base(o.cpuProfile), "seed-"):
		// A failure's trace of that name would be written over the
		// profile, or the profile over the trace.
		return c.usagef("%s %s: named like a trace in --out %s (seed-…)", c.typed("cpuprofile"), o.cpuProfile, o.out)
	case o.cpuProfile != "" && isDir(o.cpuProfile):
		return c.usagef("%s %s: a directory; the profile is a file", c.typed("cpuprofile"), o.cpuProfile)
	}
	if o.cpuProfile != "" && !(o.world == "sim" && pathWithin(o.cpuProfile, o.out)) {
		// What every output file is held to (not a trace, a FIFO, a
		// missing or unwritable directory). A profile inside --out has
		// its directory made with --out's.
		if err := checkOutFile(o.cpuProfile); err != nil {
			return c.usagef("%s: %v", c.typed("cpuprofile"), err)
		}
	}
	shardName := "" // the shard as the user gave it, for messages
	if set := isSet(c.fs, "shard"); !set {
		// In a Kubernetes Indexed Job each pod learns its index from
		// JOB_COMPLETION_INDEX (0-based); the manifest passes the
		// number of completions as JOB_COMPLETIONS.
		idx, hasIdx := os.LookupEnv("JOB_COMPLETION_INDEX")
		cnt, hasCnt := os.LookupEnv("JOB_COMPLETIONS")
		switch {
		case hasIdx && hasCnt:
			k, err1 := strconv.Atoi(idx)
			n, err2 := strconv.Atoi(cnt)
			if err1 != nil || err2 != nil || k < 0 || n < 1 || k >= n {
				return c.usagef("JOB_COMPLETION_INDEX=%q JOB_COMPLETIONS=%q: want 0 ≤ index < completions", idx, cnt)
			}
			o.shard = fmt.Sprintf("%d/%d", k+1, n)
			shardName = "shard " + o.shard + " (from JOB_COMPLETION_INDEX=" + idx + ")"
		case hasIdx:
			return c.usagef("JOB_COMPLETION_INDEX is set but JOB_COMPLETIONS is not: set it to the Job's completions, or give --shard")
		case hasCnt:
			// Else every pod would check the whole sweep as shard 1/1.
			return c.usagef("JOB_COMPLETIONS is set but JOB_COMPLETION_INDEX is not: run as an Indexed Job, or give --shard")
		}
	}
	if shardName == "" {
		shardName = c.typed("shard") + " " + o.shard
	}
	i, n, ok := strings.Cut(o.shard, "/")
	si, err1 := strconv.Atoi(i)
	sn, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return c.usagef("%s: want i/n, such as 1/4", shardName)
	}
	if sn < 1 || si < 1 || si > sn {
		return c.usagef("%s: want 1 ≤ i ≤ n", shardName)
	}
	if si > o.seeds {
		return c.usagef("%s: no seeds in this shard (only %d seed%s across %d shards)", shardName, o.seeds, plural(o.seeds, "", "s"), sn)
	}
	o.shardI, o.shardN = si, sn
	if o.skip < 0 || o.skip >= o.shardSeeds() {
		holds := fmt.Sprintf("%s holds %d seed%s", shardName, o.shardSeeds(), plural(o.shardSeeds(), "", "s"))
		if o.shardN == 1 {
			holds = fmt.Sprintf("%d seed%s to check", o.seeds, plural(o.seeds, "", "s"))
		}
		return c.usagef("%s %d: want 0 to %d (%s)", c.typed("skip"), o.skip, o.shardSeeds()-1, holds)
	}
	if o.system != systemAll && lookupSystem(o.system) == nil {
		return c.usagef("%s %q: want %s or %s", c.typed("system"), o.system, strings.Join(systemNames(), ", "), systemAll)
	}
	explicit := isSet(c.fs, "system") && o.system != systemAll
	if o.bug != "" {
		all := append(append(append(bugNames(), rpcBugNames()...), scBugNames()...), scenarioBugNames()...)
		name, ok := matchName(o.bug, all)
		if !ok {
			return c.usagef("%s %q: unknown bug (want one of %s, or list)", c.typed("bug"), o.bug, strings.Join(all, ", "))
		}
		o.bug = name
		// A bug is checked on its own system: every seed runs it.
		sys := "datanode"
		if _, ok := properties.LookupRPCBug(name); ok {
			sys = "rpc"
		} else if _, ok := properties.LookupSCBug(name); ok {
			sys = "sc"
		} else if _, ok := properties.LookupScenarioBug(name); ok {
			sys = "scenario"
		}
		if explicit && o.system != sys {
			return c.usagef("%s %s is %s; --system %s takes %s", c.typed("bug"), name, bugOf(sys), o.system, strings.Join(systemBugNames(o.system), ", "))
		}
		o.system = sys
	}
	if o.world == "real" && o.bug != "" && o.system != "datanode" {
		// The bug's own system, which the real world does not check.
		return c.usagef("%s %s is %s: checked in sim only (the real world checks the datanode)", c.typed("bug"), o.bug, bugOf(o.system))
	}
	if o.world == "real" && !isSet(c.fs, "system") {
		o.system = "datanode" // the real world checks the data path alone
	}
	if o.system == systemAll && o.world == "real" {
		return c.usagef("%s all: the real world checks the datanode only (--system datanode)", c.typed("system"))
	}
	if o.system == "sc" && o.world == "real" {
		return c.usagef("%s sc: checked in sim only (the real world runs short-circuit reads in xceiver run sc-read and go test ./real)", c.typed("system"))
	}
	if o.system == "rpc" && o.world == "real" {
		return c.usagef("%s rpc: checked in sim only (the real world runs the rpc server in xceiver run rpc and go test ./real)", c.typed("system"))
	}
	if o.system == "scenario" && o.world == "real" {
		return c.usagef("%s scenario: checked in sim only (the real world runs the scenarios in xceiver run --world real and xceiver validate)", c.typed("system"))
	}
	if o.world == "real" {
		// Refuse rather than ignore: a real-world check writes no traces
		// (re-run a failing seed in sim for one) and needs the whole OS
		// process to itself for its leak check.
		if set := setFlags(c.fs, c.typed, "out", "parallel", "no-shrink"); len(set) > 0 {
			return c.usagef("%s: a check in the real world runs one seed at a time and neither shrinks nor writes traces (check a failing seed in sim for its trace)", set[0])
		}
	}
	if o.world == "sim" {
		if err := checkOutDir(o.out); err != nil {
			return c.usagef("%s: %v", c.typed("out"), err)
		}
	}
	return nil
}

func listBugs(w io.Writer, asJSON bool) {
	if asJSON {
		type row struct {
			Name    string `json:"name"`
			What    string `json:"what"`
			Catches string `json:"caught_by"`
		}
		var rows []row
		for _, b := range properties.Bugs {
			rows = append(rows, row{b.Name, b.What, b.Catches})
		}
		for _, b := range properties.RPCBugs {
			rows = append(rows, row{b.Name, b.What, b.Catches})
		}
		for _, b := range properties.SCBugs {
			rows = append(rows, row{b.Name, b.What, b.Catches})
		}
		for _, b := range properties.ScenarioBugs {
			rows = append(rows, row{b.Name, b.What, b.Catches})
		}
		out, _ := json.Marshal(rows)
		fmt.Fprintln(w, string(out))
		return
	}
	for _, b := range properties.Bugs {
		fmt.Fprintf(w, "%-15s %-17s %s\n", b.Name, b.Catches, b.What)
	}
	for _, b := range properties.RPCBugs {
		fmt.Fprintf(w, "%-15s %-17s %s (--system rpc)\n", b.Name, b.Catches, b.What)
	}
	for _, b := range properties.SCBugs {
		fmt.Fprintf(w, "%-15s %-17s %s (--system sc)\n", b.Name, b.Catches, b.What)
	}
	for _, b := range properties.ScenarioBugs {
		fmt.Fprintf(w, "%-15s %-17s %s (--system scenario)\n", b.Name, b.Catches, b.What)
	}
}

// checkFailure is one failing seed, as reported.
type checkFailure struct {
	System           string `json:"system"`
	Seed             uint64 `json:"seed"`
	Property         string `json:"property"`
	Message          string `json:"message"`
	Trace            string `json:"trace,omitempty"`
	TraceError       string `json:"trace_error,omitempty"`
	Events           uint64 `json:"events"` // the trace's records, not the simulator's events
	Bytes            int64  `json:"bytes"`
	OriginalProperty string `json:"original_property"`
	OriginalOps      int    `json:"original_ops"`
	OriginalFaults   int    `json:"original_faults"`
	Ops              int    `json:"ops"`
	Faults           int    `json:"faults"`
	ShrinkRuns       int    `json:"shrink_runs"`
}

// progressEvery is the longest a check stays silent when its output is
// not a terminal (a CI log, a Job's log).
var progressEvery = 5 * time.Second

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// setFlags lists those of names the command line set, each as typed (with
// typed nil, as --name): what a refusal of flags that do nothing names.
func setFlags(fs *flag.FlagSet, typed func(string) string, names ...string) []string {
	var set []string
	for _, n := range names {
		if isSet(fs, n) {
			if typed == nil {
				set = append(set, "--"+n)
			} else {
				set = append(set, typed(n))
			}
		}
	}
	return set
}

// errWriter passes writes to w and keeps the first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// pathWithin reports whether path is dir or lies under it (lexically, after
// making both absolute).
func pathWithin(path, dir string) bool {
	rel, ok := relPath(path, dir)
	return ok && (rel == "." || filepath.IsLocal(rel))
}

// samePath reports whether a and b name the same path (lexically, after
// making both absolute).
func samePath(a, b string) bool {
	rel, ok := relPath(a, b)
	return ok && rel == "."
}

// relPath is path relative to dir, both made absolute first.
func relPath(path, dir string) (string, bool) {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return "", false
	}
	rel, err := filepath.Rel(d, p)
	return rel, err == nil
}

// shardSeeds is how many of the seeds fall in the shard (validate saw to
// it that at least one does). Written so that nothing can wrap: with
// --seeds or n near 2^63, the sum the usual ceiling divides did.
func (o *checkOptions) shardSeeds() int {
	return 1 + (o.seeds-o.shardI)/o.shardN
}

// shardSeed is the offset from --seed of the shard's j-th seed, j below
// shardSeeds (so it stays below --seeds: no stepping past it, which
// wrapped with a huge n and checked seeds of other shards).
func (o *checkOptions) shardSeed(j int) int {
	return o.shardI - 1 + j*o.shardN
}

// runCheck streams the shard's seeds to P workers: memory stays constant
// however many seeds there are.
func runCheck(opt checkOptions, stdout, stderr io.Writer) int {
	defer properties.TuneGC(opt.parallel)()
	total := opt.shardSeeds()
	var progOut io.Writer = stdout
	if opt.json {
		progOut = nil // one JSON object, nothing else
	}
	prog := newProgress(progOut, total-opt.skip, !opt.json && isTerminal(stdout))
	start, cpu0 := time.Now(), processCPU()

	var mu sync.Mutex
	t := newTally()
	// stop ends the handing out of seeds: closed by --max-failures
	// (stopped: a seed handed out after it is skipped) or by an interrupt
	// (every seed handed out is checked, so the seeds checked are the
	// shard's first ones and the run can be resumed after them).
	stop := make(chan struct{})
	stopped := false
	halt := sync.OnceFunc(func() { close(stop) })
	// Watched until the summary is out: an interrupt after the last seed
	// (summing up) changes nothing, where the signal's default action
	// would end the process before it. The watch takes no lock a worker
	// holds while it writes: a blocked stdout must not keep it waiting.
	var summing atomic.Bool
	signalled, unwatch := watch(func(s os.Signal) {
		if summing.Load() {
			return
		}
		if mu.TryLock() {
			prog.clear()
			mu.Unlock()
		}
		sayInterrupted(stderr, s)
		halt()
	})
	defer unwatch()
	next := make(chan uint64)
	var wg sync.WaitGroup
	for w := 0; w < opt.parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range next {
				// A seed handed out as the limit was reached is not
				// started: only seeds already running finish.
				mu.Lock()
				skip := stopped
				mu.Unlock()
				if skip {
					continue
				}
				sys := systemOf(seed, opt.system)
				began := time.Now()
				events, f := sys.check(seed, opt)
				busy := time.Since(began)
				mu.Lock()
				t.add(sys.name, events, busy, f)
				if f != nil && !opt.json {
					prog.clear()
					printFailure(stdout, f)
				}
				prog.done(t.passed, t.failed)
				if opt.maxFailures > 0 && t.failed >= opt.maxFailures && !stopped {
					stopped = true
					halt()
				}
				mu.Unlock()
			}
		}()
	}
	tickDone, tickStopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(tickStopped)
		tick := time.NewTicker(progressEvery / 5)
		defer tick.Stop()
		for {
			select {
			case <-tickDone:
				return
			case <-tick.C:
				mu.Lock()
				prog.tick()
				mu.Unlock()
			}
		}
	}()
	handed := 0
feed:
	for j := opt.skip; j < total; j++ {
		// (A select with a worker ready and stop closed picks either.)
		select {
		case <-stop:
			break feed
		default:
		}
		select {
		case next <- opt.seed + uint64(opt.shardSeed(j)):
			handed++
		case <-stop:
			break feed
		}
	}
	close(next)
	wg.Wait()
	summing.Store(true)
	close(tickDone)
	<-tickStopped // no progress line inside the summary
	prog.finish()
	t.stoppedEarly = stopped
	// An interrupt counts unless the check stopped for another reason,
	// or had nothing left to hand out.
	if name := signalled(); name != "" && !stopped && opt.skip+handed < total {
		t.interrupted = name
	}
	return printSummary(stdout, opt, "sim", total, t, time.Since(start), processCPU()-cpu0)
}

// maxListed bounds the failures a check keeps in detail, so a sweep with
// a bug switched on stays in constant memory; the summary by property
// counts them all.
const maxListed = 1000

// tally is what a check found so far.
type tally struct {
	passed, failed int
	listed         []checkFailure
	byProp         map[string]*propSummary
	bySystem       map[string]*systemCount
	stoppedEarly   bool
	// interrupted names the signal that stopped the check before its
	// last seed ("" if none did): the seeds checked are the shard's first
	// ones, every one of them finished.
	interrupted string
	// simEvents sums the seeds' weights (the events the simulator
	// processed in each drawn case); the real world counts none.
	simEvents uint64
}

// systemCount is how one system's seeds went.
type systemCount struct {
	System  string `json:"system"`
	Checked int    `json:"checked"`
	Failed  int    `json:"failed"`
	// SimEvents are the events the simulator processed in its seeds'
	// drawn cases.
	SimEvents uint64 `json:"sim_events,omitempty"`
	// BusyS is the time its seeds took on the workers that checked them
	// (the wall clock read around each seed): what one system's seeds
	// cost beside another's within a single run. With no more workers
	// than idle cores it is about their CPU, less the collector's
	// background work. (A thread's CPU clock would be exact, but a
	// worker locked to its thread is switched out and back in at every
	// yield of a run: 16,400 context switches for 2,000 seeds instead
	// of 985, and 0.94× as fast in ten pinned pairs.)
	BusyS float64 `json:"busy_s,omitempty"`
}

// propSummary is one line of the closing summary: a property, how many
// seeds broke it, and the smallest trace that shows it.
type propSummary struct {
	Property string        `json:"property"`
	Count    int           `json:"count"`
	Smallest *checkFailure `json:"smallest"`
	Replay   string        `json:"replay,omitempty"`
}

func newTally() *tally {
	return &tally{byProp: map[string]*propSummary{}, bySystem: map[string]*systemCount{}}
}

// add counts one seed of system, whose drawn case took simEvents events
// of the simulator (0 in the real world) and busy of its worker's time (0
// where unmeasured); f is its failure, nil when it passed.
func (t *tally) add(system string, simEvents uint64, busy time.Duration, f *checkFailure) {
	sc := t.bySystem[system]
	if sc == nil {
		sc = &systemCount{System: system}
		t.bySystem[system] = sc
	}
	sc.Checked++
	sc.SimEvents += simEvents
	sc.BusyS += busy.Seconds()
	t.simEvents += simEvents
	if f == nil {
		t.passed++
		return
	}
	sc.Failed++
	t.failed++
	if len(t.listed) < maxListed {
		t.listed = append(t.listed, *f)
	}
	g := t.byProp[f.Property]
	if g == nil {
		g = &propSummary{Property: f.Property}
		t.byProp[f.Property] = g
	}
	g.Count++
	if g.Smallest == nil || smaller(f, g.Smallest) {
		c := *f
		g.Smallest = &c
		g.Replay = ""
		if c.Trace != "" {
			g.Replay = replayCommandFor(c.Trace, c.Seed, c.System)
		}
	}
}

// smaller orders failures by how quickly a person can read them: one
// with a trace first, then fewer events, ops, faults, then the lower seed.
func smaller(a, b *checkFailure) bool {
	if (a.Trace != "") != (b.Trace != "") {
		return a.Trace != ""
	}
	if a.Events != b.Events {
		return a.Events < b.Events
	}
	if a.Ops+a.Faults != b.Ops+b.Faults {
		return a.Ops+a.Faults < b.Ops+b.Faults
	}
	return a.Seed < b.Seed
}

func replayCommandFor(trace string, seed uint64, system string) string {
	if s := lookupSystem(system); s != nil && !s.html {
		return "xceiver replay " + trace
	}
	return fmt.Sprintf("xceiver replay %s --html seed-%d.html", trace, seed)
}

// systems are the per-system counts, in the mix's order.
func (t *tally) systems() []systemCount {
	out := []systemCount{}
	for _, s := range checkSystems {
		if c := t.bySystem[s.name]; c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// groups are the property summaries, most frequent first.
func (t *tally) groups() []*propSummary {
	var gs []*propSummary
	for _, p := range slices.Sorted(maps.Keys(t.byProp)) {
		gs = append(gs, t.byProp[p])
	}
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].Count > gs[j].Count })
	return gs
}

// checkSummary is what check --json prints and merge reads and writes.
type checkSummary struct {
	World string `json:"world"`
	// System is --system: one system, or all (the mix); Systems counts
	// each system's seeds.
	System  string        `json:"system"`
	Systems []systemCount `json:"systems"`
	// Seeds are this shard's seeds; SweepSeeds all shards' (--seeds).
	Seeds      int    `json:"seeds"`
	SweepSeeds int    `json:"sweep_seeds"`
	Checked    int    `json:"checked"`
	FirstSeed  uint64 `json:"first_seed"`
	Shard      string `json:"shard"`
	Out        string `json:"out,omitempty"`
	Bug        string `json:"bug,omitempty"`
	// Skipped are the shard's first seeds --skip left unchecked; the
	// seeds checked follow them.
	Skipped      int  `json:"skipped,omitempty"`
	Passed       int  `json:"passed"`
	Failed       int  `json:"failed"`
	StoppedEarly bool `json:"stopped_early,omitempty"`
	// Interrupted says a signal (SIGINT, SIGTERM) stopped the check
	// after the shard's first Skipped + Checked seeds, every one of them
	// finished: the same flags with --skip that many check the rest, and
	// merge joins the two. In merge's summary, some shard's last piece
	// was interrupted (InterruptedShards: merged with --partial).
	Interrupted       bool     `json:"interrupted,omitempty"`
	InterruptedShards []string `json:"interrupted_shards,omitempty"`
	ElapsedS          float64  `json:"elapsed_s"`
	SeedsPerS         float64  `json:"seeds_per_s"`
	// CPUS is the CPU the check used (this process's, every thread, user
	// and system), and SeedsPerCPUS the seeds per CPU-second: on a shared
	// machine, whose speed moves by a third from one hour to the next,
	// the CPU is steadier than the wall clock for comparing two runs.
	CPUS         float64 `json:"cpu_s"`
	SeedsPerCPUS float64 `json:"seeds_per_cpu_s"`
	// SimEvents are the events the simulator processed in the seeds'
	// drawn cases (a seed run twice or shrunk counts its first run
	// once; the real world none), and SimEventsPerCPUS them per
	// CPU-second: unlike seeds per CPU-second, it holds when a system's
	// cases grow heavier or lighter. Compare like with like: systems
	// differ in CPU per event, and shrinking costs CPU without events.
	SimEvents        uint64         `json:"sim_events,omitempty"`
	SimEventsPerCPUS float64        `json:"sim_events_per_cpu_s,omitempty"`
	CodeVersion      string         `json:"code_version"`
	ByProperty       []*propSummary `json:"by_property"`
	Failures         []checkFailure `json:"failures"`
	NotListed        int            `json:"failures_not_listed,omitempty"`
	Properties       []string       `json:"properties"`
	// Ignored are the properties among Properties that --ignore left
	// unenforced, sorted ([] for none): shards that ignored different ones
	// are not one sweep, and merge refuses them. ignoredListed is whether
	// a result merge read had the field (older ones do not say).
	Ignored       []string `json:"ignored"`
	ignoredListed bool
	// Shards lists the shards a merged summary combines.
	Shards []string `json:"shards,omitempty"`
}

// printSummary ends a check, in either world, with the same JSON object
// or the same closing lines, and returns the exit code.
func printSummary(stdout io.Writer, opt checkOptions, world string, seeds int, t *tally, elapsed, cpu time.Duration) int {
	sort.Slice(t.listed, func(i, j int) bool { return t.listed[i].Seed < t.listed[j].Seed })
	checked := t.passed + t.failed
	codeVer, props := systemCodeVersion(opt.system), systemProperties(opt.system)
	if world == "real" {
		codeVer, props = realCodeVersion(), realPropertyNames()
	}
	ignored := append([]string{}, ignoredOf(opt.ignore, props)...) // [] for none
	slices.Sort(ignored)
	if opt.json {
		out, _ := json.Marshal(checkSummary{
			World: world, System: opt.system, Systems: t.systems(), Seeds: seeds, SweepSeeds: opt.seeds, Checked: checked, FirstSeed: opt.seed,
			Shard: fmt.Sprintf("%d/%d", opt.shardI, opt.shardN), Out: outIfSim(opt, world), Bug: opt.bug,
			Skipped: opt.skip, Passed: t.passed, Failed: t.failed, StoppedEarly: t.stoppedEarly, Interrupted: t.interrupted != "",
			ElapsedS: elapsed.Seconds(), SeedsPerS: perSecond(checked, elapsed),
			CPUS: cpu.Seconds(), SeedsPerCPUS: perSecond(checked, cpu),
			SimEvents: t.simEvents, SimEventsPerCPUS: perSecond(t.simEvents, cpu), CodeVersion: codeVer,
			ByProperty: nonNilGroups(t.groups()), Failures: nonNil(t.listed), NotListed: t.failed - len(t.listed),
			Properties: props, Ignored: ignored,
		})
		fmt.Fprintln(stdout, string(out))
	} else {
		printGroups(stdout, t.groups())
		if t.stoppedEarly {
			fmt.Fprintf(stdout, "stopped early: --max-failures %d reached (%d failed, counting seeds that were already running)\n", opt.maxFailures, t.failed)
		}
		if t.interrupted != "" {
			which := "the"
			if opt.shardN > 1 {
				which = fmt.Sprintf("shard %d/%d's", opt.shardI, opt.shardN)
			}
			done := opt.skip + checked
			fmt.Fprintf(stdout, "interrupted (%s) after %s first %d of %d seeds; the rest are the same flags with --skip %d (merge joins the results)\n",
				t.interrupted, which, done, seeds, done)
		}
		skipped := ""
		if opt.skip > 0 {
			skipped = fmt.Sprintf(", the first %d skipped", opt.skip)
		}
		fmt.Fprintf(stdout, "checked %d seed%s (from %d, shard %d/%d%s, %s%s) in %.1fs: %.1f seeds/s (%.1f CPU-s, %.1f seeds per CPU-second%s)\n",
			checked, plural(checked, "", "s"), opt.seed, opt.shardI, opt.shardN, skipped, world, systemsLine(opt.system, t.systems()), elapsed.Seconds(), perSecond(checked, elapsed),
			cpu.Seconds(), perSecond(checked, cpu), eventsLine(t.simEvents, checked, cpu))
		if line := systemsSpeedLine(t.systems()); line != "" {
			fmt.Fprintln(stdout, line)
		}
		printIgnored(stdout, ignored)
		fmt.Fprintf(stdout, "%d passed, %d failed\n", t.passed, t.failed)
	}
	switch {
	case t.interrupted != "":
		return exitInterrupted
	case t.failed > 0:
		return exitFail
	}
	return exitOK
}

// printIgnored says which properties a summary's seeds did not enforce
// (--ignore), so a pass is not read as theirs.
func printIgnored(w io.Writer, ignored []string) {
	if len(ignored) > 0 {
		fmt.Fprintf(w, "not enforced (--ignore): %s\n", strings.Join(ignored, ", "))
	}
}

// systemsSpeedLine is the summary's line of each system's seeds per
// second of a worker, when the seeds ran more than one system and their
// time was measured ("" otherwise).
func systemsSpeedLine(counts []systemCount) string {
	var parts []string
	for _, c := range counts {
		if c.BusyS <= 0 {
			return ""
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", c.System, float64(c.Checked)/c.BusyS))
	}
	if len(parts) < 2 {
		return ""
	}
	return "seeds per second of a worker: " + strings.Join(parts, ", ")
}

// eventsLine is the summary's note of the seeds' weight and the events
// simulated per CPU-second ("" when none were: the real world).
func eventsLine(events uint64, seeds int, cpu time.Duration) string {
	if events == 0 {
		return ""
	}
	return fmt.Sprintf("; %.0f simulated events a seed, %.2f M per CPU-second", float64(events)/float64(seeds), perSecond(events, cpu)/1e6)
}

// perSecond is n per second of d (0 for no time).
func perSecond[N int | uint64](n N, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// printGroups prints the failures by property: count, smallest trace
// and the command that opens it.
func printGroups(w io.Writer, gs []*propSummary) {
	if len(gs) == 0 {
		return
	}
	fmt.Fprintln(w, "failures by property (the smallest trace of each, and how to open it):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, g := range gs {
		f := g.Smallest
		what := fmt.Sprintf("seed %d: %s", f.Seed, traces.Printable(f.Message)) // (merge prints result files' messages)
		if f.Trace != "" {
			what = fmt.Sprintf("seed %d, %d op%s, %d fault%s, %d events", f.Seed, f.Ops, plural(f.Ops, "", "s"), f.Faults, plural(f.Faults, "", "s"), f.Events)
		}
		fmt.Fprintf(tw, "  %s\t%d seed%s\t%s\n", traces.Printable(g.Property), g.Count, plural(g.Count, "", "s"), what)
		if g.Replay != "" {
			fmt.Fprintf(tw, "  \t\t%s\n", traces.Printable(g.Replay))
		}
	}
	tw.Flush()
}

func outIfSim(opt checkOptions, world string) string {
	if world == "sim" {
		return opt.out
	}
	return ""
}

func nonNilGroups(g []*propSummary) []*propSummary {
	if g == nil {
		return []*propSummary{}
	}
	return g
}

func nonNil(f []checkFailure) []checkFailure {
	if f == nil {
		return []checkFailure{}
	}
	return f
}

// propertyNames are the datanode's properties: properties' list, which its
// traces' ignore entries are validated against and its seeds' --ignore is
// filtered by (one list, so no property is accepted and then dropped).
func propertyNames() []string { return slices.Clone(properties.Properties) }

// realPropertyNames are what a check in the real world checks: no
// determinism (that needs the simulator).
func realPropertyNames() []string {
	return []string{properties.PropFDBounds, properties.PropPoolBound, properties.PropNoCloseInUse, properties.PropLinearizable,
		properties.PropAvailability, properties.PropLeakFree}
}

// realCodeVersion names the code a real-world check ran: the build's VCS
// revision (the simulator's code version says nothing about it).
func realCodeVersion() string {
	v := readBuildVersion()
	if v.Revision != "" {
		r := v.Revision
		if v.Modified {
			r += "-modified"
		}
		return "xceiver-real-" + r
	}
	return "xceiver-real-" + v.Version
}

// systemsLine says which systems the seeds ran: ", rpc" for one, the
// counts of each for the mix.
func systemsLine(system string, counts []systemCount) string {
	if system != systemAll {
		return ", " + system
	}
	var parts []string
	for _, c := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", c.System, c.Checked))
	}
	if len(parts) == 0 {
		return "" // no seed checked (interrupted at once)
	}
	return ": " + strings.Join(parts, ", ")
}

// checkDatanodeSeed checks one seed of the datanode system; on failure it
// shrinks it and writes its trace.
func checkDatanodeSeed(seed uint64, opt checkOptions) (events uint64, _ *checkFailure) {
	// Every 50th seed also runs twice: the same seed must give the same
	// trace (determinism, docs/ARCHITECTURE.md §5).
	budget := properties.ShrinkBudget
	if opt.noShrink {
		budget = 0
	}
	o, err := properties.CheckSeedShrinking(seed, opt.bug, properties.Options{Ignore: ignoredOf(opt.ignore, propertyNames())}, runsTwice(seed), budget)
	if err != nil {
		return 0, &checkFailure{System: "datanode", Seed: seed, Property: properties.PropHarness, Message: err.Error()}
	}
	if !o.Failed() {
		return o.SimEvents, nil
	}
	if o.Result.Failure.Property == properties.PropDeterminism {
		// Nothing to shrink or replay: a trace is only worth keeping if
		// runs are deterministic.
		return o.SimEvents, &checkFailure{System: "datanode", Seed: seed, Property: o.Result.Failure.Property, Message: o.Result.Failure.Message}
	}
	sc := o.Case.Schedule
	f := &checkFailure{
		System: "datanode", Seed: seed, Property: o.Result.Failure.Property, Message: o.Result.Failure.Message,
		OriginalProperty: o.Original.Property, OriginalOps: o.OriginalOps, OriginalFaults: o.OriginalFaults,
		Ops: len(sc.Ops) + len(sc.Probe) + len(sc.Live), Faults: len(sc.Faults), ShrinkRuns: o.ShrinkRuns,
	}
	t, r := traces.Record(o.Case)
	if r.Failure == nil || r.Failure.Property != f.Property || r.TraceHash != o.Result.TraceHash {
		f.TraceError = "recording the shrunk case did not reproduce its failure (nondeterminism)"
	}
	f.Events, f.Bytes = t.Header.Events, t.Size()
	path := filepath.Join(opt.out, failureTraceName("datanode", seed, opt.bug))
	if err := os.MkdirAll(opt.out, 0o755); err != nil {
		f.TraceError = err.Error()
		return o.SimEvents, f
	}
	if err := t.WriteFile(path); err != nil {
		f.TraceError = err.Error()
		return o.SimEvents, f
	}
	f.Trace = path
	return o.SimEvents, f
}

func printFailure(w io.Writer, f *checkFailure) {
	switch {
	case f.Trace != "":
		// A trace saved although recording it did not fail as the
		// check did may not show the failure: the reader must know.
		but := ""
		if f.TraceError != "" {
			but = "; but " + f.TraceError
		}
		fmt.Fprintf(w, "FAIL seed %d: %s: %s (trace %s: shrunk from %d ops and %d faults to %d and %d, %d events%s)\n",
			f.Seed, f.Property, f.Message, f.Trace, f.OriginalOps, f.OriginalFaults, f.Ops, f.Faults, f.Events, but)
	case f.TraceError != "":
		fmt.Fprintf(w, "FAIL seed %d: %s: %s (no trace: %s)\n", f.Seed, f.Property, f.Message, f.TraceError)
	default:
		fmt.Fprintf(w, "FAIL seed %d: %s: %s\n", f.Seed, f.Property, f.Message)
	}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	if ew, ok := w.(*errWriter); ok {
		w = ew.w // run's watch on stdout's writes
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress shows how far a check is: a bar redrawn in place on a
// terminal; otherwise a plain line every tenth of the way and whenever
// progressEvery passed without one.
type progress struct {
	w        io.Writer
	total    int
	tty      bool
	start    time.Time
	lastDraw time.Time
	lastLine int
	drawn    bool
	n, fail  int
}

func newProgress(w io.Writer, total int, tty bool) *progress {
	return &progress{w: w, total: total, tty: tty, start: time.Now()}
}

func (p *progress) done(passed, failed int) {
	p.n, p.fail = passed+failed, failed
	if p.tty {
		if time.Since(p.lastDraw) >= 100*time.Millisecond || p.n == p.total {
			p.draw()
		}
		return
	}
	if p.w == nil || p.total < 10 {
		return
	}
	if step := p.n * 10 / p.total; step > p.lastLine {
		p.lastLine = step
		p.line()
	}
}

// tick prints a line when the check has been silent for progressEvery
// (not on a terminal, where the bar is redrawn).
func (p *progress) tick() {
	if p.tty || p.w == nil || p.n == p.total {
		return
	}
	last := p.lastDraw
	if last.IsZero() {
		last = p.start
	}
	if time.Since(last) >= progressEvery {
		p.line()
	}
}

func (p *progress) line() {
	rate := float64(p.n) / time.Since(p.start).Seconds()
	fmt.Fprintf(p.w, "checked %d/%d seeds, %d failed, %.1f seeds/s\n", p.n, p.total, p.fail, rate)
	p.lastDraw = time.Now()
}

func (p *progress) draw() {
	const width = 30
	filled := p.n * width / max(p.total, 1)
	rate := float64(p.n) / time.Since(p.start).Seconds()
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d seeds, %d failed, %.0f seeds/s ", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.n, p.total, p.fail, rate)
	p.lastDraw, p.drawn = time.Now(), true
}

func (p *progress) clear() {
	if p.tty && p.drawn {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 79))
		p.drawn = false
	}
}

func (p *progress) finish() { p.clear() }

// runCheckReal checks seeds in the real world: fault-free cases, one at a
// time (the leak check compares the whole OS process with its baseline).
// A failure names its seed; re-run it with `check --seed S` to get a
// replayable trace from the simulator, or here to see it again.
func runCheckReal(opt checkOptions, stdout, stderr io.Writer) int {
	start, cpu0 := time.Now(), processCPU()
	t := newTally()
	total := opt.shardSeeds()
	// A real seed is not cut short: its processes, sockets and files
	// are cleaned up, and the leak check that follows it still holds.
	signalled, unwatch := watch(func(s os.Signal) { sayInterrupted(stderr, s) })
	defer unwatch()
	for j := opt.skip; j < total; j++ {
		if t.interrupted = signalled(); t.interrupted != "" {
			break
		}
		seed := opt.seed + uint64(opt.shardSeed(j))
		c, err := properties.Draw(properties.SeedSource(seed), seed, opt.bug)
		if err != nil {
			return report(stderr, fmt.Errorf("check: seed %d: %w", seed, err))
		}
		c.Ignore = ignoredOf(opt.ignore, realPropertyNames())
		res, err := properties.RunReal(properties.ForReal(c, properties.DefaultRealLimits), "")
		if dying.Load() {
			// Its world removed under it, the seed's verdict is the
			// signal's, which is ending the process.
			return exitInterrupted
		}
		if err != nil {
			return report(stderr, fmt.Errorf("check: seed %d in the real world: %w", seed, err))
		}
		if res.Failure != nil {
			f := checkFailure{System: "datanode", Seed: seed, Property: res.Failure.Property, Message: res.Failure.Message, Ops: res.Ops}
			t.add("datanode", 0, 0, &f)
			if !opt.json {
				fmt.Fprintf(stdout, "FAIL seed %d (real): %s (check --seed %d in sim for a trace)\n", seed, res.Failure, seed)
			}
			if opt.maxFailures > 0 && t.failed >= opt.maxFailures {
				t.stoppedEarly = j+1 < total
				break
			}
			continue
		}
		t.add("datanode", 0, 0, nil)
		if !opt.json {
			fmt.Fprintf(stdout, "ok   seed %d (real): %s, %d clients, %d ops\n", seed, c.Config.Mode, c.Config.Clients, res.Ops)
		}
	}
	return printSummary(stdout, opt, "real", total, t, time.Since(start), processCPU()-cpu0)
}
