package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"xceiver/properties"
)

// The mix gives each system its share of seeds (within a point over
// 20,000 seeds), whatever the first seed.
func TestSystemMixShares(t *testing.T) {
	for _, first := range []uint64{1, 1 << 40} {
		n := map[string]int{}
		const seeds = 20000
		for s := first; s < first+seeds; s++ {
			n[systemOf(s, systemAll).name]++
		}
		for _, sys := range checkSystems {
			got := float64(n[sys.name]) / seeds * mixTotal
			if d := got - float64(sys.share); d < -1 || d > 1 {
				t.Errorf("from seed %d: %s got %.1f%% of seeds, want %d%%", first, sys.name, got, sys.share)
			}
		}
	}
	if systemOf(7, "rpc").name != "rpc" {
		t.Error("--system rpc does not narrow the mix")
	}
}

// Plain check runs every system through one runner: one JSON result
// counting each, and the seed's system again when the seed runs alone.
func TestCheckMixRunsEverySystem(t *testing.T) {
	code, stdout, stderr := runCLI("check", "--seeds", "40", "--json", "--no-shrink", "--out", t.TempDir())
	var got checkSummary
	if code != exitOK || json.Unmarshal([]byte(stdout), &got) != nil {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	sum := 0
	for _, c := range got.Systems {
		sum += c.Checked
	}
	if got.System != systemAll || len(got.Systems) != len(checkSystems) || sum != 40 {
		t.Fatalf("system %q, systems %+v: want all %d systems, 40 seeds", got.System, got.Systems, len(checkSystems))
	}
	for _, p := range []string{"exactly-once", "queue-bound", "linearizability"} {
		if !strings.Contains(strings.Join(got.Properties, ","), p) {
			t.Errorf("properties %v lack %s", got.Properties, p)
		}
	}
	for _, sys := range checkSystems {
		seed := uint64(1)
		for systemOf(seed, systemAll).name != sys.name {
			seed++
		}
		code, stdout, _ := runCLI("check", "--seed", strconv.FormatUint(seed, 10), "--json", "--out", t.TempDir())
		var one checkSummary
		if code != exitOK || json.Unmarshal([]byte(stdout), &one) != nil || len(one.Systems) != 1 || one.Systems[0].System != sys.name {
			t.Errorf("check --seed %d (a %s seed): exit %d, %s", seed, sys.name, code, stdout)
		}
	}
}

// rpc failures go through the same runner: a FAIL line, the summary by
// property with a replay command that works as printed, and shards that
// merge into what one run gives.
func TestCheckRPCShardsMerge(t *testing.T) {
	work := t.TempDir()
	var files []string
	for _, shard := range []string{"1/2", "2/2"} {
		out := filepath.Join(work, "out")
		code, stdout, stderr := runCLI("check", "--bug", "call-id-reuse", "--seeds", "16", "--shard", shard, "--parallel", "1", "--json", "--out", out)
		if code != exitFail && code != exitOK {
			t.Fatalf("shard %s: exit %d: %s", shard, code, stderr)
		}
		f := filepath.Join(work, "shard-"+shard[:1]+".json")
		os.WriteFile(f, []byte(stdout), 0o644)
		files = append(files, f)
	}
	code, stdout, stderr := runCLI(append([]string{"merge", "--json"}, files...)...)
	var m checkSummary
	if code != exitFail || json.Unmarshal([]byte(stdout), &m) != nil {
		t.Fatalf("merge: exit %d: %s%s", code, stdout, stderr)
	}
	if m.System != "rpc" || m.Checked != 16 || m.Failed == 0 || len(m.Systems) != 1 || m.Systems[0].Failed != m.Failed {
		t.Fatalf("merged %+v", m)
	}
	g := m.ByProperty[0]
	if g.Smallest.System != "rpc" || g.Replay != "xceiver replay "+g.Smallest.Trace {
		t.Fatalf("smallest %+v, replay %q", g.Smallest, g.Replay)
	}
	if code, out, errs := runCLI(strings.Fields(g.Replay)[1:]...); code != exitOK || !strings.HasPrefix(out, "reproduced: exactly-once") {
		t.Errorf("%s: exit %d: %s%s", g.Replay, code, out, errs)
	}
	// Shards of another system are another sweep.
	_, other, _ := runCLI("check", "--system", "sc", "--seeds", "16", "--shard", "2/2", "--json", "--out", t.TempDir())
	os.WriteFile(files[1], []byte(other), 0o644)
	if code, _, errs := runCLI("merge", files[0], files[1]); code != exitUsage || !strings.Contains(errs, "system sc") {
		t.Errorf("merging rpc and sc shards: exit %d: %s", code, errs)
	}
}

// --ignore reaches every system's runs: a bug's property, ignored, no
// longer fails the seed that shows it. (dn-stats was accepted by --ignore
// and then dropped from datanode seeds: two lists of their properties.)
func TestCheckIgnoreReachesEverySystem(t *testing.T) {
	for _, c := range []struct{ bug, seed, prop string }{
		{"HDFS-6750", "1", "linearizability"},
		{"call-id-reuse", "16", "exactly-once"},
		{"first-op-reused", "5", "dn-stats"},
		// Verdicts taken once the run is over were not ignored.
		{"stale-handle", "4", "linearizability"},
		{"editlog-eio-answer", "1", "linearizability"},
		{"editlog-answer-before-sync", "1", "durability"},
	} {
		if code, out, _ := runCLI("check", "--bug", c.bug, "--seed", c.seed, "--out", t.TempDir()); code != exitFail {
			t.Errorf("--bug %s --seed %s: exit %d, want 1: %s", c.bug, c.seed, code, out)
		}
		code, out, _ := runCLI("check", "--bug", c.bug, "--seed", c.seed, "--ignore", c.prop, "--out", t.TempDir())
		if code != exitOK {
			t.Errorf("--bug %s --seed %s --ignore %s: exit %d, want 0: %s", c.bug, c.seed, c.prop, code, out)
		}
		// The summary says what its pass did not enforce.
		if !strings.Contains(out, "not enforced (--ignore): "+c.prop+"\n") {
			t.Errorf("--bug %s --ignore %s: the summary does not name the property:\n%s", c.bug, c.prop, out)
		}
	}
	// And so does its JSON, once each and sorted, for merge to hold the
	// shards of a sweep to the same list.
	code, out, _ := runCLI("check", "--bug", "HDFS-6750", "--seed", "1", "--ignore", "linearizability,availability,linearizability", "--json", "--out", t.TempDir())
	var s checkSummary
	if code != exitOK || json.Unmarshal([]byte(out), &s) != nil || !slices.Equal(s.Ignored, []string{"availability", "linearizability"}) {
		t.Errorf("--ignore linearizability,availability,linearizability --json: exit %d, ignored %q, want [availability linearizability]: %s", code, s.Ignored, out)
	}
	// A property of another system means nothing to a datanode seed, and
	// its trace (whose case records what it ignores) still replays.
	dir := t.TempDir()
	if code, out, _ := runCLI("check", "--bug", "HDFS-3359", "--seed", "1", "--ignore", "exactly-once", "--out", dir); code != exitFail {
		t.Fatalf("--bug HDFS-3359 --ignore exactly-once: exit %d, want 1: %s", code, out)
	}
	if code, out, errs := runCLI("replay", filepath.Join(dir, "seed-1-HDFS-3359.trace")); code != exitOK {
		t.Errorf("replay: exit %d: %s%s", code, out, errs)
	}
}

// A bug planted in scenario code (run read's clients never close) is
// found by check, and its trace replays.
func TestCheckScenarioBug(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI("check", "--bug", "read-no-close", "--seeds", "3", "--max-failures", "1", "--parallel", "1", "--out", dir)
	if code != exitFail || !strings.Contains(out, "FAIL seed 1: leak-freedom: client-0 finished") {
		t.Fatalf("check --bug read-no-close: exit %d\n%s%s", code, out, errs)
	}
	trace := filepath.Join(dir, "scenario-seed-1-read-no-close.json")
	if code, out, errs := runCLI("replay", trace); code != exitOK || !strings.HasPrefix(out, "reproduced: leak-freedom") {
		t.Errorf("replay %s: exit %d\n%s%s", trace, code, out, errs)
	}
	if code, out, errs := runCLI("check", "--system", "scenario", "--seeds", "10", "--out", dir); code != exitOK {
		t.Errorf("check --system scenario: exit %d\n%s%s", code, out, errs)
	}
}

// replay --html renders the JSON traces of rpc, sc and scenario too: the
// failure first, the replay's events as a sequence diagram, the case.
func TestReplayHTMLOfJSONTraces(t *testing.T) {
	for _, c := range []struct{ trace, prop, proc string }{
		{"../../traces/corpus/rpc/call-id-reuse.json", "exactly-once", "namenode"},
		{"../../traces/corpus/sc/HDFS-6750.json", "linearizability", "datanode"},
		{"../../traces/corpus/scenario/read-no-close.json", "leak-freedom", "client-0"},
	} {
		html := filepath.Join(t.TempDir(), "view.html")
		code, out, errs := runCLI("replay", c.trace, "--html", html)
		if code != exitOK || !strings.Contains(out, "wrote "+html) {
			t.Errorf("replay %s --html: exit %d\n%s%s", c.trace, code, out, errs)
			continue
		}
		b, err := os.ReadFile(html)
		page := string(b)
		if err != nil || !strings.Contains(page, `FAIL: <span class="prop">`+c.prop) || !strings.Contains(page, ">"+c.proc+"</text>") ||
			!strings.Contains(page, "replay: reproduced") || !strings.Contains(page, `<pre class="case">`) {
			t.Errorf("%s: the page lacks the failure, the %s lifeline or the case (%v)", c.trace, c.proc, err)
		}
	}
}

// A JSON trace whose message was edited does not replay as reproduced:
// it did, and printed the edited message as if the replay had found it.
func TestReplayJSONTraceComparesMessage(t *testing.T) {
	for _, trace := range []string{
		"../../traces/corpus/rpc/call-id-reuse.json",
		"../../traces/corpus/sc/HDFS-6750.json",
		"../../traces/corpus/scenario/read-no-close.json",
	} {
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["message"] = "something else"
		edited := filepath.Join(t.TempDir(), "edited.json")
		b, _ = json.Marshal(m)
		os.WriteFile(edited, b, 0o644)
		if code, out, errs := runCLI("replay", edited); code != exitFail || !strings.Contains(out, `trace says "something else"`) {
			t.Errorf("%s with its message edited: exit %d, want 1 and the two messages:\n%s%s", trace, code, out, errs)
		}
		// --json says what the replay found, as the data-path JSON does.
		var got struct {
			Reproduced     bool   `json:"reproduced"`
			Message        string `json:"message"`
			ReplayMessage  string `json:"replay_message"`
			ReplayProperty string `json:"replay_property"`
			Summary        string `json:"summary"`
		}
		if code, errs := cliJSON(t, &got, "replay", edited, "--json"); code != exitFail || got.Reproduced || got.Message != "something else" ||
			got.ReplayMessage == "" || got.ReplayMessage == got.Message || got.ReplayProperty == "" || !strings.HasPrefix(got.Summary, "diverged: ") {
			t.Errorf("%s --json: exit %d, %+v (%s)", trace, code, got, errs)
		}
	}
}

// A page replay could not write is said once, after the verdict, which
// is still printed (it was lost, and the path was named twice).
func TestReplayHTMLWriteFailure(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	for _, trace := range []string{"../../traces/corpus/HDFS-3359.trace", "../../traces/corpus/sc/HDFS-6750.json"} {
		code, out, errs := runCLI("replay", trace, "--html", "/dev/full")
		if want := "xceiver: replay: --html: write /dev/full: no space left on device\n"; code != exitFail || errs != want || !strings.Contains(out, "reproduced: ") {
			t.Errorf("replay %s --html /dev/full: exit %d, stdout %q, stderr %q; want 1, the verdict and %q", trace, code, out, errs, want)
		}
	}
}

// A JSON trace of a format no system has is named as such; it was called
// a data-path trace without a header.
func TestReplayUnknownJSONFormat(t *testing.T) {
	b, err := os.ReadFile("../../traces/corpus/rpc/HADOOP-6723.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.json")
	os.WriteFile(path, bytes.Replace(b, []byte(properties.RPCTraceFormat), []byte("xceiver-nfs-trace/1"), 1), 0o644)
	code, _, errs := runCLI("replay", path)
	if want := `format "xceiver-nfs-trace/1": this xceiver reads`; code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("exit %d, %q; want 2 and %q", code, errs, want)
	}
}

// check runs a seed without its trace hash unless it runs the seed twice
// (sim's Config.Unhashed); a failure is saved with the hash of a second
// run, so its trace replays even unshrunk, in every system.
func TestUnshrunkFailuresReplay(t *testing.T) {
	for _, bug := range []string{"HDFS-4911", "call-id-reuse", "HDFS-7915", "read-no-close"} {
		dir := t.TempDir()
		code, out, errs := runCLI("check", "--bug", bug, "--seeds", "60", "--max-failures", "1", "--parallel", "1", "--no-shrink", "--out", dir)
		if code != exitFail || strings.Contains(out, "nondeterminism") {
			t.Errorf("check --bug %s --no-shrink: exit %d\n%s%s", bug, code, out, errs)
			continue
		}
		traces, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(traces) != 1 {
			t.Errorf("check --bug %s --no-shrink saved %v, want one trace", bug, traces)
			continue
		}
		// (A seed that is a multiple of 50 runs twice, hashed both
		// times: not the path this tests.)
		_, rest, _ := strings.Cut(filepath.Base(traces[0]), "seed-")
		num, _, _ := strings.Cut(rest, "-")
		if seed, err := strconv.ParseUint(num, 10, 64); err != nil || seed%50 == 0 {
			t.Errorf("check --bug %s: trace %s is not of a seed run once", bug, traces[0])
		}
		if code, out, errs := runCLI("replay", traces[0]); code != exitOK || !strings.Contains(out, "reproduced: ") {
			t.Errorf("replay %s: exit %d\n%s%s", traces[0], code, out, errs)
		}
	}
}
