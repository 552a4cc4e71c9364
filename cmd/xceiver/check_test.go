package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"xceiver/properties"
	"xceiver/traces"
)

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestCheckPasses(t *testing.T) {
	code, stdout, stderr := runCLI("check", "--seeds", "12", "--parallel", "2", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if got := lastLine(stdout); got != "12 passed, 0 failed" {
		t.Fatalf("last line %q", got)
	}
}

// --cpuprofile writes a profile pprof can read; a profile that could not
// be written fails the run, named on stderr, instead of passing for one
// written.
func TestCheckCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	code, stdout, stderr := runCLI("check", "--seeds", "4", "--parallel", "1", "--out", filepath.Join(dir, "out"), "--cpuprofile", prof)
	if fi, err := os.Stat(prof); code != exitOK || err != nil || fi.Size() == 0 {
		t.Fatalf("exit %d, profile %v: %s%s", code, err, stdout, stderr)
	}
	// Inside an --out not made yet: made for it (traces go there later).
	inOut := filepath.Join(dir, "new", "out", "cpu.prof")
	code, stdout, stderr = runCLI("check", "--seeds", "2", "--parallel", "1", "--out", filepath.Join(dir, "new", "out"), "--cpuprofile", inOut)
	if fi, err := os.Stat(inOut); code != exitOK || err != nil || fi.Size() == 0 {
		t.Fatalf("profile inside a new --out: exit %d, profile %v: %s%s", code, err, stdout, stderr)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	code, _, stderr = runCLI("check", "--seeds", "4", "--parallel", "1", "--out", filepath.Join(dir, "out"), "--cpuprofile", "/dev/full")
	if code != exitFail || !strings.Contains(stderr, "--cpuprofile: ") {
		t.Fatalf("profile to /dev/full: exit %d, stderr %q; want exit 1 naming --cpuprofile", code, stderr)
	}
}

// A shard's seeds are its own however large n is: stepped by n, a huge n
// wrapped and checked seeds of other shards and beyond the sweep.
func TestCheckHugeShardCount(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		seeds int
	}{
		{[]string{"--seeds", "6", "--shard", "6/9223372036854775807"}, 1},
		{[]string{"--seeds", "3", "--shard", "2/9223372036854775807"}, 1},
		{[]string{"--seeds", "10", "--shard", "2/3"}, 3},
	} {
		var got struct{ Seeds, Checked, Passed, Failed int }
		code, stderr := cliJSON(t, &got, append([]string{"check", "--json", "--no-shrink", "--parallel", "1"}, tc.args...)...)
		if code != exitOK || got.Seeds != tc.seeds || got.Passed+got.Failed != tc.seeds {
			t.Errorf("%v: exit %d (%s): %+v, want %d seeds", tc.args, code, stderr, got, tc.seeds)
		}
	}
}

func TestCheckJSONAndShards(t *testing.T) {
	total := 0
	for _, shard := range []string{"1/3", "2/3", "3/3"} {
		code, stdout, stderr := runCLI("check", "--seeds", "30", "--seed", "100", "--shard", shard, "--json")
		if code != exitOK {
			t.Fatalf("shard %s: exit %d: %s", shard, code, stderr)
		}
		var got struct {
			Seeds, Passed, Failed int
			Shard                 string
			Failures              []any
			CPU                   float64 `json:"cpu_s"`
			Elapsed               float64 `json:"elapsed_s"`
			PerCPU                float64 `json:"seeds_per_cpu_s"`
			SimEvents             uint64  `json:"sim_events"`
			EventsPerCPU          float64 `json:"sim_events_per_cpu_s"`
			Systems               []systemCount
		}
		if strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
			t.Fatalf("--json printed more than one line: %q", stdout)
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("not one JSON object: %v: %q", err, stdout)
		}
		if got.Passed != got.Seeds || got.Failed != 0 || got.Shard != shard || got.Failures == nil {
			t.Fatalf("shard %s: %+v", shard, got)
		}
		// The CPU a shard used, and its seeds per CPU-second, agree.
		if got.CPU <= 0 || math.Abs(got.PerCPU*got.CPU-float64(got.Seeds)) > 1e-6*float64(got.Seeds) {
			t.Fatalf("shard %s: %d seeds in %v CPU-s but %v seeds per CPU-second", shard, got.Seeds, got.CPU, got.PerCPU)
		}
		// So do its simulated events, the systems' and the whole's.
		var bySystem uint64
		var busyBySystem float64
		for _, s := range got.Systems {
			if s.SimEvents == 0 {
				t.Fatalf("shard %s: system %s's %d seeds simulated no events", shard, s.System, s.Checked)
			}
			if s.BusyS <= 0 {
				t.Fatalf("shard %s: system %s's %d seeds took no time (busy_s %v)", shard, s.System, s.Checked, s.BusyS)
			}
			bySystem += s.SimEvents
			busyBySystem += s.BusyS
		}
		// Two workers (the default): their seeds' time is at most
		// twice the run's.
		if busyBySystem > 2*got.Elapsed {
			t.Fatalf("shard %s: the systems' seeds took %v s of the two workers, more than twice the check's %v s", shard, busyBySystem, got.Elapsed)
		}
		if got.SimEvents == 0 || bySystem != got.SimEvents || math.Abs(got.EventsPerCPU*got.CPU-float64(got.SimEvents)) > 1e-6*float64(got.SimEvents) {
			t.Fatalf("shard %s: %d simulated events (systems: %d) in %v CPU-s but %v per CPU-second", shard, got.SimEvents, bySystem, got.CPU, got.EventsPerCPU)
		}
		total += got.Seeds
	}
	if total != 30 {
		t.Fatalf("shards covered %d seeds, want 30", total)
	}
}

// A seed's simulated events are its drawn case's first run: what the
// system's own run gives (not the trace's records, not the determinism
// rerun every 50th seed adds), and for a failing seed the same whether or
// not check shrinks it afterwards.
func TestCheckSimEventsAreTheFirstRuns(t *testing.T) {
	const seed = 100                                                       // a multiple of 50: check runs it twice
	src := func() properties.Source { return properties.SeedSource(seed) } // a fresh stream per draw
	direct := map[string]uint64{}
	if c, err := properties.Draw(src(), seed, ""); err == nil {
		direct["datanode"] = properties.Run(c, properties.Options{}).SimEvents
	}
	if c, err := properties.DrawRPC(src(), seed, ""); err == nil {
		direct["rpc"] = properties.RunRPC(c).SimEvents
	}
	if c, err := properties.DrawSC(src(), seed, ""); err == nil {
		direct["sc"] = properties.RunSC(c).SimEvents
	}
	if c, err := properties.DrawScenario(src(), seed, ""); err == nil {
		direct["scenario"] = properties.RunScenario(c).SimEvents
	}
	type summary struct {
		Failed    int
		SimEvents uint64 `json:"sim_events"`
	}
	check := func(args ...string) summary {
		t.Helper()
		_, stdout, stderr := runCLI(append([]string{"check", "--json", "--out", t.TempDir()}, args...)...)
		var s summary
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatalf("check %v: %v: %s%s", args, err, stdout, stderr)
		}
		return s
	}
	for _, sys := range systemNames() {
		got := check("--system", sys, "--seed", "100", "--seeds", "1")
		if got.Failed != 0 || direct[sys] == 0 || got.SimEvents != direct[sys] {
			t.Errorf("%s seed %d: check reports %d simulated events (%d failed), its run simulated %d", sys, seed, got.SimEvents, got.Failed, direct[sys])
		}
	}
	for _, bug := range []string{"HDFS-3359", "call-id-reuse", "HDFS-7915", "read-no-close"} {
		shrunk, drawn := check("--bug", bug, "--seeds", "6"), check("--bug", bug, "--seeds", "6", "--no-shrink")
		if shrunk.Failed == 0 || shrunk.SimEvents == 0 || shrunk.SimEvents != drawn.SimEvents {
			t.Errorf("--bug %s: %d failed, %d simulated events shrunk, %d with --no-shrink; want the same, failures' drawn runs", bug, shrunk.Failed, shrunk.SimEvents, drawn.SimEvents)
		}
	}
}

// A catalogued bug is found; its shrunk trace is written, and replaying it
// reproduces the failure with the same hash.
func TestCheckFindsBugAndTraceReplays(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("check", "--bug", "stale-handle", "--seeds", "8", "--out", out)
	if code != exitFail {
		t.Fatalf("exit %d, want 1: %s%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`^\d+ passed, [1-9]\d* failed$`).MatchString(lastLine(stdout)) {
		t.Fatalf("last line %q", lastLine(stdout))
	}
	m := regexp.MustCompile(`trace (\S+\.trace)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no trace path printed: %s", stdout)
	}
	html := filepath.Join(out, "view.html")
	code, rout, rerr := runCLI("replay", m[1], "--html", html)
	if code != exitOK || !strings.Contains(rout, "reproduced: linearizability") {
		t.Fatalf("replay: exit %d: %s%s", code, rout, rerr)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("html: %v", err)
	}
	tr, _ := traces.ReadFile(m[1])
	if !strings.Contains(rout, tr.Header.TraceHash) {
		t.Fatalf("replay does not show the trace hash %s: %s", tr.Header.TraceHash, rout)
	}
}

func TestCheckBugList(t *testing.T) {
	code, stdout, _ := runCLI("check", "--bug", "list")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, b := range properties.Bugs {
		if !strings.Contains(stdout, b.Name) {
			t.Errorf("list lacks %s", b.Name)
		}
	}
}

func TestCheckAndReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join("..", "..", "traces", "corpus", "stale-handle.trace"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	lines := strings.SplitAfter(string(good), "\n")
	truncated := write("truncated.trace", strings.Join(lines[:len(lines)/2], ""))
	edited := write("edited.trace", strings.Replace(string(good), `"kind":"seg"`, `"kind":"ges"`, 1))
	version := write("version.trace", strings.Replace(string(good), traces.CodeVersion, "xceiver-sim-0", 1))
	cases := [][]string{
		{"check", "--shard", "3/2"},
		{"check", "--shard", "0/2"},
		{"check", "--shard", "two"},
		{"check", "--seeds", "0"},
		{"check", "--parallel", "0"},
		{"check", "--bug", "HDFS-0"},
		{"check", "extra"},
		{"check", "--seeds", "x"},
		{"replay"},
		{"replay", filepath.Join(dir, "nope.trace")},
		{"replay", truncated},
		{"replay", edited},
		{"replay", version},
		{"replay", truncated, edited},
		{"replay", write("ok.trace", string(good)), "--html", filepath.Join(dir, "no", "such", "dir", "x.html")},
	}
	for _, args := range cases {
		code, _, stderr := runCLI(args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want 2 (%q)", args, code, stderr)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
			t.Errorf("%q: want a one-line error, got %q", args, stderr)
		}
	}
	_, _, stderr := runCLI("replay", version)
	if !strings.Contains(stderr, "code version") {
		t.Errorf("version mismatch not named: %q", stderr)
	}
}

// A trace that no longer matches what the code does (behaviour changed
// without a version bump): replay reports the divergence and exits 1.
func TestReplayDivergenceExits1(t *testing.T) {
	tr, err := traces.ReadFile(filepath.Join("..", "..", "traces", "corpus", "stale-handle.trace"))
	if err != nil {
		t.Fatal(err)
	}
	k := len(tr.Events) / 3
	tr.Events[k] = []byte(strings.Replace(string(tr.Events[k]), `"t_us":`, `"t_us":9`, 1))
	tr.Seal()
	path := filepath.Join(t.TempDir(), "changed.trace")
	if err := tr.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("replay", path)
	if code != exitFail || !strings.Contains(stdout, "diverged at line") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
}

// A failing check ends with one line per property: how many seeds, the
// smallest trace, and the replay command, which works as printed.
func TestCheckSummaryByProperty(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("check", "--bug", "HDFS-3359", "--seeds", "40", "--max-failures", "2", "--parallel", "1", "--out", out)
	if code != exitFail {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "failures by property") || !strings.Contains(stdout, "stopped early: --max-failures 2") {
		t.Fatalf("no summary or early stop:\n%s", stdout)
	}
	if got := lastLine(stdout); !regexp.MustCompile(`^\d+ passed, 2 failed$`).MatchString(got) {
		t.Errorf("last line %q: --max-failures 2 with one seed at a time stops at the second failure", got)
	}
	m := regexp.MustCompile(`(?m)^\s+xceiver (replay \S+ --html \S+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no replay command in the summary:\n%s", stdout)
	}
	args := strings.Fields(m[1])
	args[len(args)-1] = filepath.Join(out, args[len(args)-1])
	if code, rout, rerr := runCLI(args...); code != exitOK {
		t.Fatalf("%q: exit %d: %s%s", args, code, rout, rerr)
	}

	code, stdout, _ = runCLI("check", "--bug", "HDFS-3359", "--seeds", "40", "--max-failures", "2", "--parallel", "1", "--out", out, "--json")
	var got struct {
		Checked, Failed int
		StoppedEarly    bool `json:"stopped_early"`
		ByProperty      []struct {
			Property string
			Count    int
			Smallest struct{ Trace string }
			Replay   string
		} `json:"by_property"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitFail {
		t.Fatalf("exit %d, %v: %s", code, err, stdout)
	}
	if got.Checked < 2 || got.Failed != 2 || !got.StoppedEarly || len(got.ByProperty) != 1 || got.ByProperty[0].Count != 2 ||
		got.ByProperty[0].Property != "fd-bounds" || got.ByProperty[0].Smallest.Trace == "" ||
		!strings.HasPrefix(got.ByProperty[0].Replay, "xceiver replay "+got.ByProperty[0].Smallest.Trace) {
		t.Errorf("%+v", got)
	}
}

// A billion seeds start at once and in constant memory: seeds are
// streamed, not listed up front (which took 8 GB).
func TestCheckStreamsSeeds(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code, stdout, stderr := runCLI("check", "--bug", "HDFS-3359", "--seeds", "1000000000", "--max-failures", "1", "--parallel", "1", "--out", t.TempDir(), "--json")
	runtime.ReadMemStats(&after)
	if code != exitFail || !strings.Contains(stdout, `"seeds":1000000000`) || !strings.Contains(stdout, `"failed":1,`) || !strings.Contains(stdout, `"stopped_early":true`) {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<20 {
		t.Errorf("allocated %d MiB for one seed of a billion", alloc>>20)
	}
}

// Not on a terminal, a check that runs longer than progressEvery prints a
// line each time it passes.
func TestCheckProgressWhenNotTerminal(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	// Seeds take milliseconds each; fewer than 10 seeds print no
	// tenth-of-the-way lines, so a line comes from the clock alone.
	progressEvery = time.Millisecond
	code, stdout, _ := runCLI("check", "--seeds", "9", "--parallel", "1", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	if !regexp.MustCompile(`(?m)^checked [0-8]/9 seeds, 0 failed, [0-9.]+ seeds/s$`).MatchString(stdout) {
		t.Errorf("no progress line:\n%s", stdout)
	}
}

// run watches stdout's writes through an errWriter; check must still see
// a terminal through it (the progress bar was lost when it did not).
func TestIsTerminalThroughTheWriteWatch(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if !isTerminal(f) || !isTerminal(&errWriter{w: f}) {
		t.Errorf("a character device: isTerminal %v, through errWriter %v; want both true", isTerminal(f), isTerminal(&errWriter{w: f}))
	}
}

func TestCheckRealJSON(t *testing.T) {
	code, stdout, stderr := runCLI("check", "--world", "real", "--seed", "3", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	var got struct {
		World       string
		CodeVersion string `json:"code_version"`
		Properties  []string
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.World != "real" || !strings.HasPrefix(got.CodeVersion, "xceiver-real-") || slices.Contains(got.Properties, properties.PropDeterminism) {
		t.Errorf("%+v", got)
	}
}

// --ignore reaches real-world checks too (they dropped it: a seed failed
// with or without). Real runs are not repeatable, so the test finds a
// seed where close-in-use shows, then checks it again with every property
// a real check enforces ignored: that must pass, whatever the run does.
func TestCheckRealIgnore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real datanode")
	}
	var got struct {
		Failures []checkFailure `json:"failures"`
	}
	if code, stderr := cliJSON(t, &got, "check", "--world", "real", "--bug", "close-in-use", "--seeds", "10", "--max-failures", "1", "--json"); code != exitFail || len(got.Failures) == 0 {
		t.Skipf("close-in-use did not show in 10 real seeds (exit %d): %s", code, stderr)
	}
	seed := strconv.FormatUint(got.Failures[0].Seed, 10)
	args := []string{"check", "--world", "real", "--bug", "close-in-use", "--seed", seed, "--ignore", strings.Join(realPropertyNames(), ",")}
	if code, out, errs := runCLI(args...); code != exitOK {
		t.Errorf("%v: exit %d, want 0: %s%s", args, code, out, errs)
	}
}

// A failure whose trace was saved although recording it did not fail the
// same way says so on its line, as merge and --json do: the trace may not
// show the failure.
func TestPrintFailureKeepsTraceError(t *testing.T) {
	var b strings.Builder
	printFailure(&b, &checkFailure{Seed: 7, Property: "availability", Message: "m", Trace: "out/seed-7.trace",
		TraceError: "recording the shrunk case did not reproduce its failure (nondeterminism)"})
	if got := b.String(); !strings.Contains(got, "out/seed-7.trace") || !strings.Contains(got, "nondeterminism") {
		t.Errorf("printed %q", got)
	}
}
