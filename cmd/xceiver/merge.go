package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"xceiver/traces"
)

// maxResultBytes bounds a result file merge reads. A result lists at most
// maxListed failures of a few hundred bytes each (their messages are one
// line), so a genuine one stays within a few MB; /dev/zero given as a
// result grew until the runtime ran out of memory.
const maxResultBytes = 64 << 20

func mergeCommand() *command {
	return &command{
		name:    "merge",
		args:    "RESULT.json...",
		summary: "combine the JSON results of a sharded check (one per shard) into one summary",
		about: func() string {
			return `Each RESULT.json is the output of "xceiver check --json" for one shard of
the same sweep (same seeds, first seed, bug, world, system, code version
and --ignore). merge refuses results that disagree, that do not add up
(counts, failures and their seeds), or that leave shards out (unless
--partial), and prints the summary check would have printed for the whole
sweep: counts, failures by property with the smallest trace of each, and
the replay command. With --traces DIR the failures' traces are copied
into DIR (each is looked for where its result says, then beside its
RESULT.json; a trace already in DIR stays, and another file of its name
there is replaced) and the summary points there. Exit 1 if any seed
failed.`
		},
		example: []string{
			"xceiver merge results/shard-*.json --traces failures/",
		},
		setup: func(c *call) func([]string) int {
			asJSON := c.fs.Bool("json", false, "print one JSON object")
			tracesDir := c.fs.String("traces", "", "copy every failure's trace into `DIR`")
			partial := c.fs.Bool("partial", false, "merge even if some shards are missing, or were interrupted and not resumed to their end")
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
	if slices.Contains(files, "") {
		return report(c.stderr, c.usagef("an empty RESULT.json file name"))
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
	m.dropForeignTraces()
	if tracesDir != "" {
		if err := os.MkdirAll(tracesDir, 0o755); err != nil {
			return report(c.stderr, fmt.Errorf("merge: %w", err))
		}
		m.copyTraces(tracesDir)
	}
	s := m.summary()
	if asJSON {
		b, err := json.Marshal(s)
		if err != nil {
			// An empty line and exit 0 would pass for a sweep that
			// passed; mergeResults refuses what JSON cannot carry, so
			// this is a last guard.
			return report(c.stderr, c.usagef("cannot write the summary as JSON: %v", err))
		}
		fmt.Fprintln(c.stdout, string(b))
	} else {
		// A trace --traces could not bring along is said, not only
		// left out of the groups (the JSON's trace_error).
		for _, f := range s.Failures {
			switch {
			case f.TraceError != "" && f.Trace == "":
				fmt.Fprintf(c.stdout, "seed %d: no trace: %s\n", f.Seed, traces.Printable(f.TraceError))
			case f.TraceError != "":
				fmt.Fprintf(c.stdout, "seed %d: trace note: %s\n", f.Seed, traces.Printable(f.TraceError))
			}
		}
		printGroups(c.stdout, s.ByProperty)
		fmt.Fprintf(c.stdout, "merged %d shard%s of %d: checked %d of %d seed%s (from %d, %s%s)\n",
			len(s.Shards), plural(len(s.Shards), "", "s"), m.n, s.Checked, s.Seeds, plural(s.Seeds, "", "s"), s.FirstSeed, s.World, systemsLine(s.System, s.Systems))
		if cut := s.InterruptedShards; len(cut) > 0 {
			fmt.Fprintf(c.stdout, "interrupted before their last seed (merged with --partial): shard%s %s\n", plural(len(cut), "", "s"), strings.Join(cut, ", "))
		}
		printIgnored(c.stdout, s.Ignored)
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
	cut     []string // shards whose last piece was interrupted (--partial)
	dirs    []string // where each result file lives
	// sum holds the shards' counts, added up as each file is read so
	// that a sum that overflows is blamed on the file that tipped it.
	sum   checkSummary
	bySys map[string]*systemCount
	// busyUnknown: systems some shard counted seeds of without their
	// workers' time.
	busyUnknown map[string]bool
}

func mergeResults(files []string, partial bool) (*merged, error) {
	m := &merged{bySys: map[string]*systemCount{}, busyUnknown: map[string]bool{}}
	pieces := map[int][]int{} // each shard's results, by index
	for _, path := range files {
		r, i, n, err := readResult(path)
		if err != nil {
			return nil, err
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
				{"ignored properties", ignoredList(r), ignoredList(first)},
			} {
				if d.got != d.want {
					return nil, fmt.Errorf("%s: %s %v, but %s has %v: not the same sweep", path, d.what, d.got, files[0], d.want)
				}
			}
		}
		if err := checkResult(r, i, n); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if err := m.add(r); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		pieces[i] = append(pieces[i], len(m.results))
		m.results = append(m.results, r)
		m.dirs = append(m.dirs, filepath.Dir(path))
	}
	// A shard may come in pieces: an interrupted check, then the same
	// flags with --skip for the rest. Each piece must start where the
	// one before stopped.
	for _, i := range slices.Sorted(maps.Keys(pieces)) {
		ps := pieces[i]
		// By the seeds skipped; of two that skipped as many, the one that
		// checked fewer first (an interrupted piece that checked nothing
		// says to go on with the --skip it had).
		slices.SortStableFunc(ps, func(a, b int) int {
			ra, rb := m.results[a], m.results[b]
			return cmp.Or(cmp.Compare(ra.Skipped, rb.Skipped), cmp.Compare(ra.Checked, rb.Checked))
		})
		first := m.results[ps[0]]
		if first.Skipped > 0 {
			return nil, fmt.Errorf("%s: shard %s skips its first %d seeds, and no result checked them", files[ps[0]], first.Shard, first.Skipped)
		}
		for k := 1; k < len(ps); k++ {
			a, b := m.results[ps[k-1]], m.results[ps[k]]
			switch {
			case b.Seeds != first.Seeds:
				return nil, fmt.Errorf("%s: shard %s of %d seeds, but %s says %d", files[ps[k]], b.Shard, b.Seeds, files[ps[0]], first.Seeds)
			case !a.Interrupted:
				return nil, fmt.Errorf("%s: shard %s again (also in %s)", files[ps[k]], b.Shard, files[ps[k-1]])
			case b.Skipped != a.Skipped+a.Checked:
				return nil, fmt.Errorf("%s: shard %s skips %d seeds, but %s stopped after %d", files[ps[k]], b.Shard, b.Skipped, files[ps[k-1]], a.Skipped+a.Checked)
			}
		}
		if last := m.results[ps[len(ps)-1]]; last.Interrupted {
			if !partial {
				done := last.Skipped + last.Checked
				return nil, fmt.Errorf("%s: shard %s was interrupted after %d of its %d seeds: check the rest with the same flags and --skip %d and merge that too, or merge with --partial", files[ps[len(ps)-1]], last.Shard, done, last.Seeds, done)
			}
			m.cut = append(m.cut, last.Shard)
		}
		if err := m.addShard(ps); err != nil {
			return nil, fmt.Errorf("%s: %v", files[ps[len(ps)-1]], err)
		}
	}
	if len(pieces) < m.n && !partial {
		var missing []string
		for i := 1; i <= m.n && len(missing) < 10; i++ {
			if _, ok := pieces[i]; !ok {
				missing = append(missing, fmt.Sprintf("%d/%d", i, m.n))
			}
		}
		more := ""
		if m.n-len(pieces) > len(missing) {
			more = fmt.Sprintf(" and %d more", m.n-len(pieces)-len(missing))
		}
		return nil, fmt.Errorf("shards missing: %s%s (--partial merges what is there)", strings.Join(missing, ", "), more)
	}
	return m, nil
}

// requiredFields are what every check --json has written since it
// counted seeds checked and failures by property; without them a file's
// verdict cannot be checked, only guessed. Fields added since (system,
// systems, sweep_seeds, cpu_s, sim_events) may be missing.
var requiredFields = []string{"seeds", "checked", "first_seed", "passed", "failed", "code_version", "by_property", "failures"}

// readResult reads one shard's result: its shard, i of n, and that its
// world and system are ones check writes.
func readResult(path string) (r *checkSummary, i, n int, err error) {
	b, err := readInput(path, maxResultBytes)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, 0, 0, fmt.Errorf("%s: %v", path, pe.Err)
		}
		return nil, 0, 0, err // readInput's own errors name the file
	}
	r = &checkSummary{}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, r); err != nil || r.Shard == "" || r.World == "" || json.Unmarshal(b, &fields) != nil {
		return nil, 0, 0, fmt.Errorf("%s: not the output of check --json", path)
	}
	for _, f := range requiredFields {
		if _, ok := fields[f]; !ok {
			return nil, 0, 0, fmt.Errorf("%s: no %q: not the output of check --json", path, f)
		}
	}
	i, n, err = parseShard(r.Shard)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: shard %q: %v", path, r.Shard, err)
	}
	switch {
	case r.World != "sim" && r.World != "real":
		return nil, 0, 0, fmt.Errorf("%s: world %q: want sim or real", path, r.World)
	case r.System != "" && r.System != systemAll && lookupSystem(r.System) == nil:
		// No system at all is a result from before check had others
		// than the datanode.
		return nil, 0, 0, fmt.Errorf("%s: system %q: want one of %s, %s", path, r.System, strings.Join(systemNames(), ", "), systemAll)
	}
	_, r.ignoredListed = fields["ignored"]
	for k, p := range r.Ignored {
		if !slices.Contains(r.Properties, p) || k > 0 && r.Ignored[k-1] >= p {
			return nil, 0, 0, fmt.Errorf("%s: ignored %q: not a property the result lists, once, in order", path, p)
		}
	}
	return r, i, n, nil
}

// ignoredList names a result's ignored properties for merge's errors. A
// result from before check listed them may have ignored any: it merges
// only with others that do not say either.
func ignoredList(r *checkSummary) string {
	switch {
	case !r.ignoredListed:
		return "not listed (a result from before check listed them)"
	case len(r.Ignored) == 0:
		return "none"
	}
	return strings.Join(r.Ignored, ",")
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

// checkResult checks that r, shard i of n, holds together as check writes
// it. merge adds the counts up and trusts the failures' seeds: a file
// edited by hand, or relabelled as another shard, would otherwise give
// the whole sweep a wrong verdict (five failures neither listed nor
// grouped merged as a pass).
func checkResult(r *checkSummary, i, n int) error {
	for _, c := range []struct {
		name string
		v    int
	}{{"seeds", r.Seeds}, {"sweep_seeds", r.SweepSeeds}, {"skipped", r.Skipped}, {"checked", r.Checked}, {"passed", r.Passed}, {"failed", r.Failed}, {"failures_not_listed", r.NotListed}} {
		if c.v < 0 {
			return fmt.Errorf("%s %d is negative", c.name, c.v)
		}
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"elapsed_s", r.ElapsedS}, {"seeds_per_s", r.SeedsPerS}, {"cpu_s", r.CPUS}} {
		if !(c.v >= 0) || math.IsInf(c.v, 1) {
			return fmt.Errorf("%s %v: want a finite number ≥ 0", c.name, c.v)
		}
	}
	if r.Seeds == 0 {
		return errors.New("seeds 0: a shard has at least one seed")
	}
	// A result from before merge has no sweep_seeds: the size of its
	// shard cannot be checked, only that its seeds are the shard's.
	if r.SweepSeeds > 0 {
		if want := shardSize(r.SweepSeeds, i, n); r.Seeds != want {
			return fmt.Errorf("seeds %d, but shard %s of %d seeds has %d", r.Seeds, r.Shard, r.SweepSeeds, want)
		}
		if r.FirstSeed > math.MaxUint64-uint64(r.SweepSeeds-1) {
			return fmt.Errorf("first_seed %d + sweep_seeds %d - 1 is past the largest seed", r.FirstSeed, r.SweepSeeds)
		}
	}
	switch {
	case r.Passed > r.Checked || r.Failed != r.Checked-r.Passed:
		return fmt.Errorf("passed %d + failed %d is not checked %d", r.Passed, r.Failed, r.Checked)
	case r.Skipped >= r.Seeds && r.Seeds > 0:
		return fmt.Errorf("skipped %d of its %d seeds: check leaves at least one", r.Skipped, r.Seeds)
	case r.Checked > r.Seeds-r.Skipped && r.Skipped == 0:
		return fmt.Errorf("checked %d, more than its %d seeds", r.Checked, r.Seeds)
	case r.Checked > r.Seeds-r.Skipped:
		return fmt.Errorf("checked %d after skipping %d, more than its %d seeds", r.Checked, r.Skipped, r.Seeds)
	case r.Checked < r.Seeds-r.Skipped && !r.StoppedEarly && !r.Interrupted:
		return fmt.Errorf("checked %d of %d seeds without stopping early", r.Checked, r.Seeds-r.Skipped)
	case r.Interrupted && r.Checked == r.Seeds-r.Skipped:
		return fmt.Errorf("interrupted, yet checked all of its %d seeds", r.Seeds-r.Skipped)
	case r.Interrupted && r.StoppedEarly:
		return errors.New("both interrupted and stopped early: check says one or the other")
	}
	// The seeds checked: the shard's from skipped on, up to skipped +
	// checked if a signal stopped the check (those it checked are the
	// first; --max-failures stops with no such order).
	lo, hi := uint64(r.Skipped), uint64(r.Seeds)
	if r.Interrupted {
		hi = lo + uint64(r.Checked)
	}

	// check gives shard i of n the seeds first+k for k = i-1, i-1+n, ...
	inShard := func(seed uint64) error {
		k := seed - r.FirstSeed
		if seed < r.FirstSeed || k%uint64(n) != uint64(i-1) || k/uint64(n) >= uint64(r.Seeds) {
			return fmt.Errorf("seed %d is not in shard %s of the seeds from %d", seed, r.Shard, r.FirstSeed)
		}
		if j := k / uint64(n); j < lo || j >= hi {
			return fmt.Errorf("seed %d is not among the seeds the result checked (the shard's %d to %d)", seed, lo, hi-1)
		}
		return nil
	}
	listed := map[string]int{}
	seeds := map[uint64]bool{}
	for _, f := range r.Failures {
		if err := inShard(f.Seed); err != nil {
			return fmt.Errorf("failures: %v", err)
		}
		if seeds[f.Seed] {
			return fmt.Errorf("failures list seed %d twice", f.Seed)
		}
		// No system is a result from before check had others than the
		// datanode.
		if f.System != "" && lookupSystem(f.System) == nil {
			return fmt.Errorf("failures: seed %d: system %q: want one of %s", f.Seed, f.System, strings.Join(systemNames(), ", "))
		}
		seeds[f.Seed] = true
		listed[f.Property]++
	}
	counted := map[string]int{}
	sum := 0
	for _, g := range r.ByProperty {
		if g == nil {
			return errors.New("by_property lists null")
		}
		if _, dup := counted[g.Property]; dup {
			return fmt.Errorf("by_property lists %s twice", g.Property)
		}
		switch {
		case g.Count < 1:
			return fmt.Errorf("by_property %s: count %d: want at least 1", g.Property, g.Count)
		case g.Smallest == nil:
			return fmt.Errorf("by_property %s: no smallest failure", g.Property)
		case g.Count > r.Failed-sum: // compared so, the sum cannot overflow
			return fmt.Errorf("by_property counts add up to more than failed %d", r.Failed)
		}
		if err := inShard(g.Smallest.Seed); err != nil {
			return fmt.Errorf("by_property %s: smallest failure: %v", g.Property, err)
		}
		counted[g.Property] = g.Count
		sum += g.Count
	}
	if sum != r.Failed {
		return fmt.Errorf("by_property counts add up to %d, not failed %d", sum, r.Failed)
	}
	for _, f := range r.Failures {
		c, ok := counted[f.Property]
		if !ok {
			return fmt.Errorf("failures: seed %d: property %q has no by_property count", f.Seed, f.Property)
		}
		if listed[f.Property] > c {
			return fmt.Errorf("failures list %d of %s, more than its by_property count %d", listed[f.Property], f.Property, c)
		}
	}
	if len(r.Failures) > r.Failed || r.NotListed != r.Failed-len(r.Failures) {
		return fmt.Errorf("%d failures listed + %d not listed is not failed %d", len(r.Failures), r.NotListed, r.Failed)
	}

	if len(r.Systems) == 0 {
		return nil // a result from before check counted each system
	}
	var checked, failed int
	var events uint64
	have := map[string]bool{}
	for _, c := range r.Systems {
		switch {
		case lookupSystem(c.System) == nil:
			return fmt.Errorf("systems: %q: want one of %s", c.System, strings.Join(systemNames(), ", "))
		case have[c.System]:
			return fmt.Errorf("systems lists %s twice", c.System)
		case r.System != "" && r.System != systemAll && c.System != r.System:
			return fmt.Errorf("systems: %s, but system is %s", c.System, r.System)
		case c.Checked < 0 || c.Failed < 0 || c.Failed > c.Checked:
			return fmt.Errorf("systems: %s: checked %d and failed %d: want 0 ≤ failed ≤ checked", c.System, c.Checked, c.Failed)
		case !(c.BusyS >= 0) || math.IsInf(c.BusyS, 1):
			return fmt.Errorf("systems: %s: busy_s %v: want a finite number ≥ 0", c.System, c.BusyS)
		}
		have[c.System] = true
		var ok1, ok2, ok3 bool
		checked, ok1 = addCount(checked, c.Checked)
		failed, ok2 = addCount(failed, c.Failed)
		events, ok3 = addCount(events, c.SimEvents)
		if !ok1 || !ok2 {
			return errors.New("systems' counts overflow")
		}
		if !ok3 {
			return errors.New("systems' sim_events overflow")
		}
	}
	if checked != r.Checked || failed != r.Failed {
		return fmt.Errorf("systems add up to checked %d and failed %d, not %d and %d", checked, failed, r.Checked, r.Failed)
	}
	if events != r.SimEvents {
		return fmt.Errorf("systems' sim_events add up to %d, not sim_events %d", events, r.SimEvents)
	}
	return nil
}

// shardSize is how many of sweep seeds shard i of n has, as check's
// shardSeeds counts them, without its sum that can overflow.
func shardSize(sweep, i, n int) int {
	if sweep < i {
		return 0
	}
	return (sweep-i)/n + 1
}

// addCount adds two counts of at least 0, and reports whether the sum
// fits.
func addCount[N int | uint64](a, b N) (N, bool) {
	s := a + b
	return s, s >= a
}

// add adds r's counts to the sweep's. A sum that overflowed would be
// printed wrapped negative, or as +Inf, which JSON cannot carry (merge
// --json printed an empty line and exit 0).
func (m *merged) add(r *checkSummary) error {
	s := &m.sum
	for _, c := range []struct {
		name string
		sum  *int
		v    int
	}{{"checked", &s.Checked, r.Checked}, {"passed", &s.Passed, r.Passed}, {"failed", &s.Failed, r.Failed}} {
		var ok bool
		if *c.sum, ok = addCount(*c.sum, c.v); !ok {
			return fmt.Errorf("%s: the shards' total overflows", c.name)
		}
	}
	var ok bool
	if s.SimEvents, ok = addCount(s.SimEvents, r.SimEvents); !ok {
		return errors.New("sim_events: the shards' total overflows")
	}
	if s.CPUS += r.CPUS; math.IsInf(s.CPUS, 0) {
		return errors.New("cpu_s: the shards' total overflows")
	}
	// Each file's systems add up to its own counts (checkResult), so
	// no system's total can pass the sweep's.
	for _, c := range r.Systems {
		t := m.bySys[c.System]
		if t == nil {
			t = &systemCount{System: c.System}
			m.bySys[c.System] = t
		}
		t.Checked += c.Checked
		t.Failed += c.Failed
		t.SimEvents += c.SimEvents
		if c.Checked > 0 && c.BusyS == 0 {
			// A shard that did not measure it (the real world, an
			// older result): the system's total would be part of it.
			m.busyUnknown[c.System] = true
		}
		if t.BusyS += c.BusyS; math.IsInf(t.BusyS, 0) {
			return fmt.Errorf("systems: %s: busy_s: the shards' total overflows", c.System)
		}
	}
	return nil
}

// addShard adds what is counted per shard, not per result, from the
// results of one shard (ps, in order): its seeds once, however many
// pieces it came in, and its time and speed. Pieces ran one after
// another: their times add up, and the shard's speed is its seeds
// checked over that time; shards ran side by side: the sweep took the
// longest shard's time, and its speed is the shards' added up.
func (m *merged) addShard(ps []int) error {
	first := m.results[ps[0]]
	var ok bool
	if m.sum.Seeds, ok = addCount(m.sum.Seeds, first.Seeds); !ok {
		return errors.New("seeds: the shards' total overflows")
	}
	elapsed, checked := 0.0, 0
	for _, p := range ps {
		elapsed += m.results[p].ElapsedS
		checked += m.results[p].Checked
	}
	if m.sum.SeedsPerS += finiteRate(float64(checked), elapsed); math.IsInf(m.sum.SeedsPerS, 0) {
		return errors.New("seeds_per_s: the shards' total overflows")
	}
	if math.IsInf(elapsed, 0) {
		return errors.New("elapsed_s: the pieces' total overflows")
	}
	m.sum.ElapsedS = max(m.sum.ElapsedS, elapsed)
	return nil
}

// dropForeignTraces drops each failure's trace that check would not have
// named so: a result file is input, and one that names any file as a
// seed's trace would have merge print it, and copy it with --traces.
func (m *merged) dropForeignTraces() {
	drop := func(f *checkFailure, bug string) {
		if want := failureTraceName(f.System, f.Seed, bug); f.Trace != "" && filepath.Base(f.Trace) != want {
			f.TraceError = fmt.Sprintf("%s is not a name check gives seed %d's trace (%s)", f.Trace, f.Seed, want)
			f.Trace = ""
		}
	}
	for _, r := range m.results {
		for j := range r.Failures {
			drop(&r.Failures[j], r.Bug)
		}
		// A group's smallest may be a failure the shard did not list.
		for _, g := range r.ByProperty {
			if g.Smallest != nil {
				drop(g.Smallest, r.Bug)
			}
		}
	}
}

// copyTraces copies every listed failure's trace into dir and points the
// failures there; a trace it cannot find keeps a note instead. Each
// copy's name is its seed's (dropForeignTraces), and a sweep lists each
// seed once, so no copy lands on another's name.
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
			if err := copyTrace(src, dst); err != nil {
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

// copyTrace copies the trace at src to dst through a temporary file beside
// dst, renamed over it once complete: a copy that fails part way leaves
// dst as it was. A src that is dst already (--traces naming the directory
// the shards wrote to) stays: creating dst truncated it before it was
// read.
func copyTrace(src, dst string) (err error) {
	// Non-blocking: findTrace saw a regular file, but a FIFO put in its
	// place since would hold the open for good.
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if d, err := os.Stat(dst); err == nil && os.SameFile(st, d) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, in); err != nil {
		return err
	}
	// CreateTemp makes the file private; the copy reads as its source.
	if err = tmp.Chmod(st.Mode().Perm()); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// summary is the whole sweep's summary: the shards' counts added up,
// failures by property regrouped (the smallest trace of all shards).
func (m *merged) summary() *checkSummary {
	first := m.results[0]
	s := &checkSummary{World: first.World, System: first.System, SweepSeeds: first.SweepSeeds, FirstSeed: first.FirstSeed, Bug: first.Bug,
		CodeVersion: first.CodeVersion, Properties: first.Properties, Ignored: first.Ignored, Shard: fmt.Sprintf("all of %d", m.n),
		Seeds: m.sum.Seeds, Checked: m.sum.Checked, Passed: m.sum.Passed, CPUS: m.sum.CPUS, SeedsPerS: m.sum.SeedsPerS, ElapsedS: m.sum.ElapsedS, SimEvents: m.sum.SimEvents}
	t := newTally()
	cpuKnown := true    // every shard reported its CPU (older results did not)
	eventsKnown := true // and its simulated events (the real world's and older results do not)
	s.Interrupted, s.InterruptedShards = len(m.cut) > 0, m.cut
	for _, r := range m.results {
		if !slices.Contains(s.Shards, r.Shard) {
			s.Shards = append(s.Shards, r.Shard)
		}
		cpuKnown = cpuKnown && r.CPUS > 0
		eventsKnown = eventsKnown && r.SimEvents > 0
		s.StoppedEarly = s.StoppedEarly || r.StoppedEarly
		for j := range r.Failures {
			t.add(r.Failures[j].System, 0, 0, &r.Failures[j])
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
					// The replay command is made again from the trace
					// (a result file's could say anything).
					replay := ""
					if f := g.Smallest; f != nil && f.Trace != "" {
						replay = replayCommandFor(f.Trace, f.Seed, f.System)
					}
					t.byProp[g.Property] = &propSummary{Property: g.Property, Smallest: g.Smallest, Replay: replay}
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
	t.bySystem = m.bySys
	for sys := range m.busyUnknown {
		m.bySys[sys].BusyS = 0
	}
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
		// In float64, not perSecond's Duration: added up, the shards'
		// CPU may pass the 292 years a Duration holds.
		s.SeedsPerCPUS = finiteRate(float64(s.Checked), s.CPUS)
		s.SimEventsPerCPUS = finiteRate(float64(s.SimEvents), s.CPUS)
	} else {
		s.CPUS = 0 // part of the sweep's CPU is unknown: no figure rather than a wrong one
	}
	return s
}

// finiteRate is n per second of secs, or 0 (no figure) when that is not
// finite: check measures CPU in nanoseconds, so only an edited result
// has a CPU time too small to divide by.
func finiteRate(n, secs float64) float64 {
	r := n / secs
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return 0
	}
	return r
}
