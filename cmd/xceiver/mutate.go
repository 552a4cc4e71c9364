package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"xceiver/mutation"
)

type mutateOptions struct {
	seeds       int
	system      string
	packages    string
	json        bool
	parallel    int
	shard       string
	shardI      int
	shardN      int
	sample      int
	seed        uint64
	tests       bool
	testPkgs    string
	testDirs    []string // testPkgs expanded (runMutate)
	timeout     time.Duration
	equivalent  string
	operators   string
	list        bool
	ids         string
	budget      time.Duration
	equivalents map[string]string
	ops         []string
}

func mutateCommand() *command {
	return &command{
		name:    "mutate",
		summary: "measure check's bug-finding power: judge one-change mutants of the code under test by check",
		about: func() string {
			return `Every mutant (one operator applied at one place: ` + strings.Join(mutation.Operators, ", ") + `)
is built with go build -overlay, never touching the working tree, and judged
by check --seeds N --system S --parallel 1 --max-failures 1 --no-shrink: a
failed property, a crash or a run past --timeout kills it (--system narrows
check to the system whose code is mutated: sc for model/shortcircuit, rpc
for model/rpc and model/namespace, whose seeds are 7% of the mix each); a mutant check misses goes to go vet
of its package (CI runs it: one vet refuses could not land); with --tests it is also given
to go test of its package, and with --test-packages to those packages' tests
too (the simulator's and the properties' tests exercise model/ as well). A mutant that does not compile is invalid. Prints
each verdict, the survivors with their diffs, the score and the time per
mutant; exit 1 if a mutant survived. Needs the go command and the module's
source (run it inside the module).`
		},
		example: []string{
			"xceiver mutate --seeds 300 --sample 150 --seed 1 --parallel 2",
			"xceiver mutate --list --operators swap-args,drop-error",
		},
		setup: func(c *call) func([]string) int {
			var opt mutateOptions
			opt.flags(c.fs)
			return func(rest []string) int {
				if len(rest) > 0 {
					return report(c.stderr, c.usagef("unexpected argument %q", rest[0]))
				}
				if err := opt.validate(c); err != nil {
					return report(c.stderr, err)
				}
				if dryRun {
					return exitOK
				}
				code, err := runMutate(context.Background(), opt, c.stdout, c.stderr)
				if err != nil {
					return report(c.stderr, err)
				}
				return code
			}
		},
	}
}

func (o *mutateOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&o.seeds, "seeds", 300, "run check on `N` seeds per mutant")
	fs.StringVar(&o.system, "system", systemAll, "judge by check --system `S`: "+strings.Join(systemNames(), "|")+"|"+systemAll)
	fs.StringVar(&o.packages, "packages", "model", "mutate the package directories `DIRS`, comma-separated (dir/... for a tree)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object")
	fs.IntVar(&o.parallel, "parallel", 1, "build and check `P` mutants at once (each check runs on one core)")
	fs.StringVar(&o.shard, "shard", "1/1", "judge only shard `i/n` of the (sampled) mutants")
	fs.IntVar(&o.sample, "sample", 0, "judge `K` mutants drawn at random (seeded by --seed) instead of all")
	fs.Uint64Var(&o.seed, "seed", 1, "seed `S` of the sample")
	fs.BoolVar(&o.tests, "tests", false, "also run go test on the mutated package when check passes")
	fs.StringVar(&o.testPkgs, "test-packages", "", "with --tests (implied), also run the tests of the package directories `DIRS`, comma-separated (dir/... for a tree), such as sim,properties")
	fs.DurationVar(&o.timeout, "timeout", 0, "a check running longer than `D` has hung: killed (0: 20× the unmutated check, at least 60s)")
	fs.StringVar(&o.equivalent, "equivalent", "", "read the mutants judged equivalent (\"ID reason\" lines) from `FILE` (default: mutation/equivalent.txt as built in)")
	fs.StringVar(&o.operators, "operators", "", "apply only the operators `OPS`, comma-separated (default all)")
	fs.BoolVar(&o.list, "list", false, "list the selected mutants with their diffs, judge nothing")
	fs.DurationVar(&o.budget, "budget", 0, "start no mutant after `D` (0: judge them all); mutants are judged in the order of the seeded draw, so those judged are still a random sample")
	fs.StringVar(&o.ids, "ids", "", "judge only the mutants `IDS`, comma-separated (before --sample and --shard)")
}

func (o *mutateOptions) validate(c *call) error {
	switch {
	case o.seeds < 1:
		return c.usagef("%s %d: want at least 1", c.typed("seeds"), o.seeds)
	case o.parallel < 1 || o.parallel > 64:
		return c.usagef("%s %d: want 1 to 64", c.typed("parallel"), o.parallel)
	case o.sample < 0:
		return c.usagef("%s %d: want 0 (all) or more", c.typed("sample"), o.sample)
	case o.budget < 0:
		return c.usagef("%s %v: want 0 (none) or more", c.typed("budget"), o.budget)
	case o.timeout < 0:
		return c.usagef("%s %v: want 0 (automatic) or more", c.typed("timeout"), o.timeout)
	case strings.TrimSpace(o.packages) == "":
		return c.usagef("%s is empty", c.typed("packages"))
	case o.system != systemAll && lookupSystem(o.system) == nil:
		return c.usagef("%s %q: want %s or %s", c.typed("system"), o.system, strings.Join(systemNames(), ", "), systemAll)
	}
	if o.list {
		// The listing builds and checks nothing (listMutants): these
		// went unread, and the list passed for one they had shaped.
		if judging := setFlags(c.fs, c.typed, "seeds", "system", "parallel", "tests", "test-packages", "timeout", "equivalent", "budget"); len(judging) > 0 {
			return c.usagef("%s: --list judges nothing; %s how mutants are judged", strings.Join(judging, ", "), plural(len(judging), "the flag sets", "the flags set"))
		}
	}
	i, n, ok := strings.Cut(o.shard, "/")
	si, err1 := strconv.Atoi(i)
	sn, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return c.usagef("%s %q: want i/n, such as 1/4", c.typed("shard"), o.shard)
	}
	if sn < 1 || si < 1 || si > sn {
		return c.usagef("%s %s: want 1 ≤ i ≤ n", c.typed("shard"), o.shard)
	}
	o.shardI, o.shardN = si, sn
	if o.operators != "" {
		for _, op := range strings.Split(o.operators, ",") {
			op = strings.TrimSpace(op)
			if !slices.Contains(mutation.Operators, op) {
				return c.usagef("%s: unknown operator %q (want %s)", c.typed("operators"), op, strings.Join(mutation.Operators, ", "))
			}
			o.ops = append(o.ops, op)
		}
	}
	if o.testPkgs != "" {
		if strings.TrimSpace(o.testPkgs) == "" {
			return c.usagef("%s is empty", c.typed("test-packages"))
		}
		o.tests = true
	}
	o.equivalents = mutation.DefaultEquivalents()
	if o.equivalent != "" {
		b, err := readInput(o.equivalent, 16<<20)
		if err != nil {
			return c.usagef("%s: %v", c.typed("equivalent"), err)
		}
		if o.equivalents, err = mutation.ParseEquivalents(string(b)); err != nil {
			return c.usagef("%s %s: %v", c.typed("equivalent"), o.equivalent, err)
		}
	}
	return nil
}

// testsSaid is how the header names the tests that judge a mutant the
// check missed.
func testsSaid(tests bool, more []string) string {
	switch {
	case !tests:
		return ""
	case len(more) == 0:
		return " and go test"
	}
	return " and go test of the mutated package and " + strings.Join(more, ", ")
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "cmd", "xceiver")); err != nil {
				return "", usagef("mutate: %s is not the xceiver module (no cmd/xceiver)", dir)
			}
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", usagef("mutate: run it inside the xceiver module (no go.mod above the working directory)")
		}
		dir = parent
	}
}

type mutateSummary struct {
	Packages []string `json:"packages"`
	Seeds    int      `json:"seeds"`
	Tests    bool     `json:"tests"`
	// TestPackages are the packages whose tests also judge a mutant
	// (--test-packages), beside the mutated package's own.
	TestPackages []string `json:"test_packages,omitempty"`
	Enumerated   int      `json:"enumerated"`
	// BugOnly mutants (in `if …Bugs.X {` bodies) are left out of the
	// enumerated ones: they change only a catalogued bug's re-creation.
	BugOnly    int    `json:"bug_only_skipped"`
	Sample     int    `json:"sample"`
	SampleSeed uint64 `json:"sample_seed"`
	Shard      string `json:"shard"`
	Selected   int    `json:"selected"` // after --ids, --sample and --shard
	Judged     int    `json:"judged"`
	// StoppedByBudget: --budget ran out before every selected mutant was
	// judged (those judged are a prefix of the draw: still random).
	StoppedByBudget bool `json:"stopped_by_budget"`
	// Interrupted: a signal (SIGINT, SIGTERM) stopped the judging; the
	// mutants being judged then were dropped, so those judged are the
	// draw's first but for them.
	Interrupted bool `json:"interrupted,omitempty"`
	signal      string
	// NotJudged are the selected mutants without a verdict (stopped by
	// --budget or an interrupt), in the draw's order: --ids judges them.
	NotJudged  []string       `json:"not_judged,omitempty"`
	Killed     int            `json:"killed"`
	KilledBy   map[string]int `json:"killed_by"`
	Survived   int            `json:"survived"`
	Equivalent int            `json:"equivalent"`
	Invalid    int            `json:"invalid"`
	Score      float64        `json:"score"`       // killed / (killed + survived)
	CheckScore float64        `json:"check_score"` // killed by check alone / (killed + survived)
	// ScoreLow and ScoreHigh bound the score of all the mutants a sample
	// was drawn from (Wilson's 95% interval).
	ScoreLow     float64           `json:"score_low"`
	ScoreHigh    float64           `json:"score_high"`
	ByOperator   map[string][2]int `json:"by_operator"` // killed, survived
	ElapsedS     float64           `json:"elapsed_s"`
	PerMutantS   float64           `json:"per_mutant_s"` // mean wall time of one mutant (build, check, tests)
	BuildS       float64           `json:"mean_build_s"`
	CheckS       float64           `json:"mean_check_s"`
	TestS        float64           `json:"mean_test_s"`
	Parallel     int               `json:"parallel"`
	CheckTimeout float64           `json:"check_timeout_s"`
	Results      []mutation.Result `json:"results"`
}

func runMutate(ctx context.Context, opt mutateOptions, stdout, stderr io.Writer) (int, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return 0, usagef("mutate: the go command is needed to rebuild mutants: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		return 0, err
	}
	dirs, err := mutation.ExpandPackages(root, strings.Split(opt.packages, ","))
	if err != nil {
		return 0, usagef("mutate: --packages: %v", err)
	}
	if opt.testPkgs != "" {
		if opt.testDirs, err = mutation.ExpandPackages(root, strings.Split(opt.testPkgs, ",")); err != nil {
			return 0, usagef("mutate: --test-packages: %v", err)
		}
	}
	src, err := mutation.Load(ctx, root, dirs)
	if err != nil {
		return 0, fmt.Errorf("mutate: %w", err)
	}
	all := src.Mutants
	if len(opt.ops) > 0 {
		all = slices.DeleteFunc(slices.Clone(all), func(m mutation.Mutant) bool { return !slices.Contains(opt.ops, m.Operator) })
	}
	if opt.ids != "" {
		want := strings.Split(opt.ids, ",")
		all = slices.DeleteFunc(slices.Clone(all), func(m mutation.Mutant) bool { return !slices.Contains(want, m.ID) })
		var missing []string
		for i, id := range want {
			switch {
			case id == "":
				return 0, usagef("mutate: --ids %q: an empty ID (want comma-separated IDs)", opt.ids)
			case slices.Contains(want[:i], id):
				return 0, usagef("mutate: --ids: %s is given twice", id)
			case !slices.ContainsFunc(all, func(m mutation.Mutant) bool { return m.ID == id }):
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return 0, usagef("mutate: --ids: %s name%s no mutant of %s (the code changed?)", strings.Join(missing, ", "), plural(len(missing), "s", ""), strings.Join(dirs, ", "))
		}
	}
	bugOnly := 0
	if opt.ids == "" {
		// Code that runs only with a catalogued bug switched on is not
		// the code under test: check (without --bug) never runs it, by
		// design.
		n := len(all)
		all = slices.DeleteFunc(slices.Clone(all), func(m mutation.Mutant) bool { return m.BugOnly })
		bugOnly = n - len(all)
	}
	selected := mutation.Shard(mutation.Sample(all, opt.sample, opt.seed), opt.shardI, opt.shardN)
	if opt.list {
		return listMutants(stdout, opt, src, selected)
	}

	module, err := mutation.ModulePath(root)
	if err != nil {
		return 0, fmt.Errorf("mutate: %w", err)
	}
	work, err := os.MkdirTemp("", "xceiver-mutate-")
	if err != nil {
		return 0, fmt.Errorf("mutate: %w", err)
	}
	defer os.RemoveAll(work)
	// An interrupt stops the builds, checks and tests under way (in
	// process groups of their own, a Ctrl-C reaches mutate alone) and
	// drops those mutants, whose verdicts would be the interrupt's; the
	// summary is of the mutants judged before it, and the scratch
	// directory goes with the rest.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	signalled, unwatch := watch(func(sig os.Signal) {
		// Cancelled before mu is taken: a worker holding it may be
		// writing to a slow stdout.
		cancel()
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "xceiver mutate: %s: dropping the mutants being judged, then the summary (interrupt again to quit at once)\n", signalName(sig))
	})
	defer unwatch()
	j := &mutation.Judge{
		Root: root, Work: work, Files: src.Files, Main: "./cmd/xceiver",
		CheckArgs:    []string{"check", "--seeds", strconv.Itoa(opt.seeds), "--system", opt.system, "--parallel", "1", "--max-failures", "1", "--no-shrink"},
		BuildTimeout: 10 * time.Minute, CheckTimeout: time.Hour, TestTimeout: 10 * time.Minute,
		Tests: opt.tests, TestPackages: opt.testDirs, Equivalents: opt.equivalents,
		// Without a symbol table and DWARF the link, most of a mutant's
		// build, takes about an eighth less CPU; check needs neither.
		BuildFlags: append(mutation.NoInline(module, dirs), "-ldflags=-s -w"),
	}
	// A second interrupt ends mutate at once: the groups it started
	// would outlive it, and its scratch directory would stay.
	defer atInterruptExit(j.Stop)()
	checkT, testT, err := j.Baseline(ctx, dirs)
	if name := signalled(); name != "" {
		mu.Lock() // the watch's own line goes to stderr under it
		fmt.Fprintf(stderr, "xceiver mutate: interrupted (%s) before the unmutated code was judged: no mutant judged\n", name)
		mu.Unlock()
		if opt.json {
			s := summarize(opt, dirs, len(all), nil, 0, 0)
			s.Selected, s.BugOnly = len(selected), bugOnly
			s.Interrupted, s.signal = true, name
			s.NotJudged = notJudged(selected, opt.seed, nil)
			out, _ := json.Marshal(s)
			fmt.Fprintln(stdout, string(out))
		}
		return exitInterrupted, nil
	}
	if err != nil {
		return 0, fmt.Errorf("mutate: %w", err)
	}
	j.CheckTimeout = opt.timeout
	if j.CheckTimeout == 0 {
		j.CheckTimeout = max(60*time.Second, 20*checkT)
	} else if j.CheckTimeout < 2*checkT {
		// Every mutant would time out, and count as killed.
		return 0, usagef("mutate: --timeout %v: shorter than twice the unmutated check's %v, so every mutant would time out and count as killed", opt.timeout, checkT.Round(time.Millisecond))
	}
	j.TestTimeout = max(120*time.Second, 10*testT)
	if !opt.json {
		fmt.Fprintf(stdout, "%d mutants of %s (and %d only in catalogued bugs' code, not judged); judging %d (sample %d, seed %d, shard %s) with check --seeds %d --system %s%s; the unmutated check takes %.1fs, timeout %v\n",
			len(all), strings.Join(dirs, ", "), bugOnly, len(selected), opt.sample, opt.seed, opt.shard, opt.seeds, opt.system, testsSaid(opt.tests, opt.testDirs),
			checkT.Seconds(), j.CheckTimeout)
	}

	start := time.Now()
	results := make([]mutation.Result, len(selected))
	done := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for slot := 0; slot < opt.parallel; slot++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := j.Run(ctx, selected[i], slot)
				mu.Lock()
				if ctx.Err() != nil {
					mu.Unlock()
					continue // interrupted: its verdict may be the interrupt's
				}
				results[i] = r
				done++
				if !opt.json {
					fmt.Fprintf(stdout, "[%d/%d] %s\n", done, len(selected), resultLine(r))
				}
				mu.Unlock()
			}
		}()
	}
	// Judge in draw order: stopped by --budget, the mutants judged are
	// still a random sample of those selected.
	pos := map[string]int{}
	for i, m := range selected {
		pos[m.ID] = i
	}
	stopped, handed := false, 0
feed:
	for _, m := range mutation.Order(selected, opt.seed) {
		if opt.budget > 0 && time.Since(start) > opt.budget {
			stopped = true
			break
		}
		select {
		case next <- pos[m.ID]:
			handed++
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	interrupted := signalled()

	judged := slices.DeleteFunc(results, func(r mutation.Result) bool { return r.Status == "" })
	if len(judged) == handed && (stopped || handed == len(selected)) {
		interrupted = "" // it came after the last verdict: nothing was dropped
	}
	s := summarize(opt, dirs, len(all), judged, time.Since(start), j.CheckTimeout)
	s.Selected, s.StoppedByBudget, s.BugOnly = len(selected), stopped, bugOnly
	s.Interrupted, s.signal = interrupted != "", interrupted
	s.NotJudged = notJudged(selected, opt.seed, judged)
	if opt.json {
		out, _ := json.Marshal(s)
		fmt.Fprintln(stdout, string(out))
	} else {
		printMutateSummary(stdout, s)
	}
	switch {
	case s.Interrupted:
		return exitInterrupted, nil
	case s.Survived > 0:
		return exitFail, nil
	}
	return exitOK, nil
}

// notJudged are the IDs of the mutants of selected with no verdict in
// judged, in the order they were handed out (mutation.Order).
func notJudged(selected []mutation.Mutant, seed uint64, judged []mutation.Result) []string {
	done := make(map[string]bool, len(judged))
	for _, r := range judged {
		done[r.ID] = true
	}
	var ids []string
	for _, m := range mutation.Order(selected, seed) {
		if !done[m.ID] {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

func resultLine(r mutation.Result) string {
	verdict := r.Status
	if r.By != "" {
		verdict += " by " + r.By
	}
	line := fmt.Sprintf("%-22s %s:%d:%d %s %s %q → %q (%.1fs)", verdict, r.File, r.Line, r.Col, r.ID, r.Operator, r.Old, r.New, r.Seconds)
	if r.Detail != "" {
		line += ": " + r.Detail
	}
	return line
}

func summarize(opt mutateOptions, dirs []string, enumerated int, results []mutation.Result, elapsed, timeout time.Duration) mutateSummary {
	s := mutateSummary{
		Packages: dirs, Seeds: opt.seeds, Tests: opt.tests, TestPackages: opt.testDirs, Enumerated: enumerated, Sample: opt.sample, SampleSeed: opt.seed,
		Shard: opt.shard, Judged: len(results), KilledBy: map[string]int{}, ByOperator: map[string][2]int{},
		ElapsedS: elapsed.Seconds(), Parallel: opt.parallel, CheckTimeout: timeout.Seconds(), Results: results,
	}
	if s.Results == nil {
		s.Results = []mutation.Result{}
	}
	var total, build, check, test float64
	byCheck := 0
	for _, r := range results {
		total, build, check, test = total+r.Seconds, build+r.BuildS, check+r.CheckS, test+r.TestS
		k := s.ByOperator[r.Operator]
		switch r.Status {
		case mutation.Killed:
			s.Killed++
			s.KilledBy[r.By]++
			k[0]++
			if r.By == mutation.ByCheck || r.By == mutation.ByCheckCrash || r.By == mutation.ByCheckTimeout {
				byCheck++
			}
		case mutation.Survived:
			s.Survived++
			k[1]++
		case mutation.Equivalent:
			s.Equivalent++
		case mutation.Invalid:
			s.Invalid++
		}
		s.ByOperator[r.Operator] = k
	}
	if n := float64(len(results)); n > 0 {
		s.PerMutantS, s.BuildS, s.CheckS, s.TestS = total/n, build/n, check/n, test/n
	}
	if d := float64(s.Killed + s.Survived); d > 0 {
		s.Score, s.CheckScore = float64(s.Killed)/d, float64(byCheck)/d
		s.ScoreLow, s.ScoreHigh = wilson(s.Killed, s.Killed+s.Survived)
	}
	return s
}

// wilson is the 95% Wilson score interval of k successes in n trials.
func wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959964
	p, nf := float64(k)/float64(n), float64(n)
	centre := (p + z*z/(2*nf)) / (1 + z*z/nf)
	half := z / (1 + z*z/nf) * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return max(0, centre-half), min(1, centre+half)
}

func printMutateSummary(w io.Writer, s mutateSummary) {
	var survivors []mutation.Result
	for _, r := range s.Results {
		if r.Status == mutation.Survived {
			survivors = append(survivors, r)
		}
	}
	if len(survivors) > 0 {
		fmt.Fprintf(w, "\nsurviving mutants:\n")
		for _, r := range survivors {
			fmt.Fprintf(w, "%s:%d:%d %s %s in %s\n%s", r.File, r.Line, r.Col, r.ID, r.Operator, r.Func, r.Diff)
		}
	}
	ops := slices.Sorted(func(yield func(string) bool) {
		for op := range s.ByOperator {
			if !yield(op) {
				return
			}
		}
	})
	fmt.Fprintf(w, "\nby operator (killed/survived):")
	for _, op := range ops {
		fmt.Fprintf(w, " %s %d/%d", op, s.ByOperator[op][0], s.ByOperator[op][1])
	}
	fmt.Fprintln(w)
	by := slices.Sorted(func(yield func(string) bool) {
		for k := range s.KilledBy {
			if !yield(k) {
				return
			}
		}
	})
	var parts []string
	for _, k := range by {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.KilledBy[k]))
	}
	stop := ""
	switch {
	case s.Interrupted:
		stop = fmt.Sprintf(" (interrupted by %s: the mutants being judged were dropped)", s.signal)
	case s.StoppedByBudget:
		stop = " (--budget ran out)"
	}
	fmt.Fprintf(w, "judged %d of %d selected%s, of %d mutants: %d killed (%s), %d survived, %d equivalent, %d invalid\n",
		s.Judged, s.Selected, stop, s.Enumerated, s.Killed, strings.Join(parts, ", "), s.Survived, s.Equivalent, s.Invalid)
	if len(s.NotJudged) > 0 {
		fmt.Fprintf(w, "not judged: the same flags with --ids %s\n", strings.Join(s.NotJudged, ","))
	}
	fmt.Fprintf(w, "time per mutant %.1fs (build %.1fs, check %.1fs, vet and tests %.1fs); %.0fs in all with --parallel %d\n",
		s.PerMutantS, s.BuildS, s.CheckS, s.TestS, s.ElapsedS, s.Parallel)
	fmt.Fprintf(w, "mutation score %.1f%% (%d of %d non-equivalent mutants killed; 95%% interval %.1f–%.1f%%; check alone %.1f%%)\n",
		100*s.Score, s.Killed, s.Killed+s.Survived, 100*s.ScoreLow, 100*s.ScoreHigh, 100*s.CheckScore)
}

func listMutants(w io.Writer, opt mutateOptions, src *mutation.Source, ms []mutation.Mutant) (int, error) {
	if opt.json {
		type row struct {
			mutation.Mutant
			Diff string `json:"diff"`
		}
		rows := []row{}
		for _, m := range ms {
			rows = append(rows, row{m, m.Diff(src.Files[m.File])})
		}
		out, _ := json.Marshal(rows)
		fmt.Fprintln(w, string(out))
		return exitOK, nil
	}
	for _, m := range ms {
		fmt.Fprintf(w, "%s:%d:%d %s %s in %s\n%s", m.File, m.Line, m.Col, m.ID, m.Operator, m.Func, m.Diff(src.Files[m.File]))
	}
	fmt.Fprintf(w, "%d of %d mutants\n", len(ms), len(src.Mutants))
	return exitOK, nil
}
