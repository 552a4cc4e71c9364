package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// syntheticShards are the two shards of a sweep of ten seeds from seed
// 100, consistent in every count: shard 1/2 has seeds 100, 102, ... 108
// (two listed failures), shard 2/2 seeds 101, 103, ... 109 (two
// failures, one of them not listed).
func syntheticShards() [2]checkSummary {
	fail := func(seed uint64, prop string) checkFailure {
		return checkFailure{System: "datanode", Seed: seed, Property: prop, Message: "m", Trace: fmt.Sprintf("out/seed-%d.trace", seed), Events: 9, Bytes: 100, Ops: 1}
	}
	f100, f104, f103 := fail(100, "fd-bounds"), fail(104, "fd-bounds"), fail(103, "availability")
	common := checkSummary{World: "sim", System: systemAll, Seeds: 5, SweepSeeds: 10, Checked: 5, FirstSeed: 100, Out: "out",
		ElapsedS: 1, SeedsPerS: 5, CPUS: 1, SeedsPerCPUS: 5, CodeVersion: "v", Properties: []string{"fd-bounds", "availability"}}
	a, b := common, common
	a.Shard, b.Shard = "1/2", "2/2"
	a.Systems = []systemCount{{System: "datanode", Checked: 4, Failed: 2, SimEvents: 400}, {System: "rpc", Checked: 1, SimEvents: 50}}
	a.SimEvents = 450
	a.Passed, a.Failed = 3, 2
	a.Failures = []checkFailure{f100, f104}
	a.ByProperty = []*propSummary{{Property: "fd-bounds", Count: 2, Smallest: &f100}}
	b.Systems = []systemCount{{System: "datanode", Checked: 5, Failed: 2, SimEvents: 500}}
	b.SimEvents = 500
	b.Passed, b.Failed = 3, 2
	b.Failures = []checkFailure{f103}
	b.NotListed = 1
	b.ByProperty = []*propSummary{{Property: "availability", Count: 2, Smallest: &f103}}
	return [2]checkSummary{a, b}
}

// asMap turns a result into the generic form a test edits: numbers stay
// json.Number, so 2^63-1 survives the round trip.
func asMap(t *testing.T, r checkSummary) map[string]any {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Results that do not hold together are refused, each with one line that
// names the file and what is wrong: a merged verdict is only as good as
// the counts it adds up.
func TestMergeRefusesInconsistentResults(t *testing.T) {
	dir := t.TempDir()
	files := []string{filepath.Join(dir, "s1.json"), filepath.Join(dir, "s2.json")}
	shards := syntheticShards()
	for k := range shards {
		writeJSON(t, files[k], shards[k])
	}
	var got checkSummary
	if code, stderr := cliJSON(t, &got, "merge", "--json", files[0], files[1]); code != exitFail || got.Checked != 10 || got.Passed != 6 || got.Failed != 4 ||
		got.NotListed != 1 || got.SimEvents != 950 || got.CPUS != 2 || got.SeedsPerS != 10 {
		t.Fatalf("the consistent shards: exit %d, %+v: %s", code, got, stderr)
	}

	const maxInt = "9223372036854775807"
	n := func(s string) json.Number { return json.Number(s) }
	prop := func(r map[string]any, i int) map[string]any { return r["by_property"].([]any)[i].(map[string]any) }
	failure := func(r map[string]any, i int) map[string]any { return r["failures"].([]any)[i].(map[string]any) }
	system := func(r map[string]any, i int) map[string]any { return r["systems"].([]any)[i].(map[string]any) }
	for _, c := range []struct {
		name string
		// edit changes shard k's result (0: 1/2, 1: 2/2; only 1/2 when
		// only is set).
		edit func(k int, r map[string]any)
		// only merges shard 1/2 alone, with --partial.
		only bool
		// file is the shard whose result the refusal names.
		file int
		want string
	}{
		{name: "failures counted, none listed or grouped", edit: func(k int, r map[string]any) {
			r["failed"], r["passed"] = n("5"), n("0")
			r["failures"], r["by_property"] = []any{}, []any{}
			delete(r, "failures_not_listed")
		}, want: "by_property counts add up to 0, not failed 5"},
		{name: "failed without passed to match", edit: func(k int, r map[string]any) {
			r["failed"] = n("5")
		}, want: "passed 3 + failed 5 is not checked 5"},
		{name: "a count past failed", edit: func(k int, r map[string]any) {
			prop(r, 0)["count"] = n(maxInt)
		}, want: "by_property counts add up to more than failed 2"},
		{name: "counts that wrap around to failed", only: true, edit: func(k int, r map[string]any) {
			g := prop(r, 0)
			g["count"] = n(maxInt)
			r["by_property"] = append(r["by_property"].([]any),
				map[string]any{"property": "b", "count": n(maxInt), "smallest": g["smallest"]},
				map[string]any{"property": "c", "count": n("4"), "smallest": g["smallest"]})
		}, want: "by_property counts add up to more than failed 2"},
		{name: "a group without its smallest failure", only: true, edit: func(k int, r map[string]any) {
			prop(r, 0)["smallest"] = nil
		}, want: "by_property fd-bounds: no smallest failure"},
		{name: "a group counted twice", only: true, edit: func(k int, r map[string]any) {
			g := prop(r, 0)
			g["count"] = n("1")
			r["by_property"] = append(r["by_property"].([]any), map[string]any{"property": "fd-bounds", "count": n("1"), "smallest": g["smallest"]})
		}, want: "by_property lists fd-bounds twice"},
		{name: "more listed than grouped", only: true, edit: func(k int, r map[string]any) {
			prop(r, 0)["count"] = n("1")
			r["by_property"] = append(r["by_property"].([]any), map[string]any{"property": "x", "count": n("1"), "smallest": failure(r, 0)})
		}, want: "failures list 2 of fd-bounds, more than its by_property count 1"},
		{name: "a failure of an ungrouped property", only: true, edit: func(k int, r map[string]any) {
			failure(r, 1)["property"] = "x"
		}, want: `failures: seed 104: property "x" has no by_property count`},
		{name: "a seed listed twice", only: true, edit: func(k int, r map[string]any) {
			failure(r, 1)["seed"] = n("100")
		}, want: "failures list seed 100 twice"},
		{name: "listed and unlisted not failed", only: true, edit: func(k int, r map[string]any) {
			r["failures_not_listed"] = n("3")
		}, want: "2 failures listed + 3 not listed is not failed 2"},
		// A shard relabelled as another: its failures' seeds are not
		// the other shard's.
		{name: "relabelled shard, merged alone", only: true, edit: func(k int, r map[string]any) {
			r["shard"] = "2/2"
		}, want: "failures: seed 100 is not in shard 2/2 of the seeds from 100"},
		{name: "relabelled shard beside the one it claims to be", edit: func(k int, r map[string]any) {
			r["shard"] = "2/2"
		}, want: "failures: seed 100 is not in shard 2/2 of the seeds from 100"},
		{name: "two shards that claim the same seeds", edit: func(k int, r map[string]any) {
			if k == 0 {
				r["failures"], r["by_property"], r["failures_not_listed"] = []any{}, []any{}, n("0")
				r["passed"], r["failed"] = n("5"), n("0")
				r["systems"] = []any{map[string]any{"system": "datanode", "checked": n("5"), "failed": n("0")}}
				r["sim_events"] = n("0")
				r["shard"] = "2/2"
			}
		}, file: 1, want: "shard 2/2 again (also in FILE0)"},
		{name: "a seed past the sweep", only: true, edit: func(k int, r map[string]any) {
			failure(r, 1)["seed"] = n("110")
		}, want: "failures: seed 110 is not in shard 1/2 of the seeds from 100"},
		{name: "a seed before the sweep", only: true, edit: func(k int, r map[string]any) {
			failure(r, 1)["seed"] = n("98")
		}, want: "failures: seed 98 is not in shard 1/2 of the seeds from 100"},
		{name: "a smallest failure from another shard", only: true, edit: func(k int, r map[string]any) {
			prop(r, 0)["smallest"].(map[string]any)["seed"] = n("101")
		}, want: "by_property fd-bounds: smallest failure: seed 101 is not in shard 1/2 of the seeds from 100"},
		{name: "seeds that are not the shard's", only: true, edit: func(k int, r map[string]any) {
			r["seeds"], r["checked"], r["passed"] = n("6"), n("6"), n("4")
			system(r, 1)["checked"] = n("2")
		}, want: "seeds 6, but shard 1/2 of 10 seeds has 5"},
		{name: "negative passed", only: true, edit: func(k int, r map[string]any) {
			r["passed"], r["failed"] = n("-1"), n("6")
		}, want: "passed -1 is negative"},
		{name: "negative checked", only: true, edit: func(k int, r map[string]any) {
			r["checked"], r["passed"], r["failed"] = n("-1"), n("-1"), n("0")
		}, want: "checked -1 is negative"},
		{name: "negative failed", only: true, edit: func(k int, r map[string]any) {
			r["failed"], r["passed"] = n("-2"), n("7")
		}, want: "failed -2 is negative"},
		{name: "negative seeds", only: true, edit: func(k int, r map[string]any) {
			r["seeds"] = n("-5")
		}, want: "seeds -5 is negative"},
		{name: "more checked than seeds", only: true, edit: func(k int, r map[string]any) {
			r["checked"], r["passed"] = n("6"), n("4")
		}, want: "checked 6, more than its 5 seeds"},
		{name: "fewer checked without stopping early", only: true, edit: func(k int, r map[string]any) {
			r["checked"], r["passed"] = n("4"), n("2")
		}, want: "checked 4 of 5 seeds without stopping early"},
		{name: "unknown world", only: true, edit: func(k int, r map[string]any) {
			r["world"] = "mars"
		}, want: `world "mars": want sim or real`},
		{name: "unknown system", only: true, edit: func(k int, r map[string]any) {
			r["system"] = "toaster"
		}, want: `system "toaster": want one of datanode, rpc, sc, scenario, all`},
		{name: "unknown system counted", only: true, edit: func(k int, r map[string]any) {
			system(r, 1)["system"] = "toaster"
		}, want: `systems: "toaster": want one of datanode, rpc, sc, scenario`},
		{name: "systems that do not add up", only: true, edit: func(k int, r map[string]any) {
			system(r, 1)["checked"] = n("2")
		}, want: "systems add up to checked 6 and failed 2, not 5 and 2"},
		{name: "a failure of an unknown system", only: true, edit: func(k int, r map[string]any) {
			failure(r, 0)["system"] = "toaster"
		}, want: `failures: seed 100: system "toaster": want one of datanode, rpc, sc, scenario`},
		{name: "negative CPU", only: true, edit: func(k int, r map[string]any) {
			r["cpu_s"] = n("-1")
		}, want: "cpu_s -1: want a finite number ≥ 0"},
		{name: "a system's negative busy time", only: true, edit: func(k int, r map[string]any) {
			system(r, 1)["busy_s"] = n("-0.5")
		}, want: "systems: rpc: busy_s -0.5: want a finite number ≥ 0"},
		{name: "a system's busy time past a float64", edit: func(k int, r map[string]any) {
			system(r, 0)["busy_s"] = n("1.7e308")
		}, file: 1, want: "systems: datanode: busy_s: the shards' total overflows"},
		{name: "CPU past a float64", edit: func(k int, r map[string]any) {
			r["cpu_s"] = n("1.7e308")
		}, file: 1, want: "cpu_s: the shards' total overflows"},
		{name: "speed past a float64", edit: func(k int, r map[string]any) {
			// A shard's speed is its seeds checked over its time: 5
			// seeds in 5e-308 s is 1e308 a second, twice past a float64.
			r["elapsed_s"] = n("5e-308")
		}, file: 1, want: "seeds_per_s: the shards' total overflows"},
		{name: "events past a uint64", edit: func(k int, r map[string]any) {
			r["sim_events"] = n("18446744073709551615")
			r["systems"] = []any{map[string]any{"system": "datanode", "checked": r["checked"], "failed": r["failed"], "sim_events": n("18446744073709551615")}}
		}, file: 1, want: "sim_events: the shards' total overflows"},
		{name: "a system's events past a uint64", only: true, edit: func(k int, r map[string]any) {
			system(r, 0)["sim_events"] = n("18446744073709551615")
		}, want: "systems' sim_events overflow"},
		{name: "events that do not add up", only: true, edit: func(k int, r map[string]any) {
			r["sim_events"] = n("451")
		}, want: "systems' sim_events add up to 450, not sim_events 451"},
		{name: "no checked (before check counted them)", only: true, edit: func(k int, r map[string]any) {
			delete(r, "checked")
		}, want: `no "checked": not the output of check --json`},
	} {
		t.Run(c.name, func(t *testing.T) {
			edited := []string{filepath.Join(dir, "e1.json"), filepath.Join(dir, "e2.json")}
			for k := range shards {
				r := asMap(t, shards[k])
				if k == 0 || !c.only {
					c.edit(k, r)
				}
				writeJSON(t, edited[k], r)
			}
			args := []string{"merge", "--json", edited[0], edited[1]}
			if c.only {
				args = []string{"merge", "--json", "--partial", edited[0]}
			}
			want := strings.ReplaceAll(c.want, "FILE0", edited[0])
			code, stdout, stderr := runCLI(args...)
			if code != exitUsage || stderr != "xceiver: merge: "+edited[c.file]+": "+want+"\n" || stdout != "" {
				t.Errorf("exit %d, %d bytes of output\nstderr %q\nwant   %q", code, len(stdout), stderr, "xceiver: merge: "+edited[c.file]+": "+want+"\n")
			}
		})
	}
}

// A result that is not a regular file, or too big to be one, is refused
// at once: /dev/zero grew until the runtime ran out of memory, and a FIFO
// nobody writes blocked for good.
func TestMergeRefusesUnboundedInput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(maxResultBytes + 1) // sparse: no disk
	f.Close()
	cases := []struct{ path, want string }{
		{fifo, fifo + " is not a regular file"},
		{big, fmt.Sprintf("%s is %d bytes, more than the %d this reads", big, maxResultBytes+1, maxResultBytes)},
		{dir, dir + " is a directory"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases = append(cases, struct{ path, want string }{"/dev/zero", "/dev/zero is not a regular file"})
	}
	for _, c := range cases {
		done := make(chan struct{})
		var code int
		var stderr string
		go func() {
			code, _, stderr = runCLI("merge", c.path)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("merge %s: still reading after 10 s", c.path)
		}
		if code != exitUsage || stderr != "xceiver: merge: "+c.want+"\n" {
			t.Errorf("merge %s: exit %d: %q, want %q", c.path, code, stderr, c.want)
		}
	}
}

// Genuine results merge, each system's too, and so do results from
// versions that wrote fewer fields. With --traces naming the directory
// the shards wrote their traces into, every trace keeps its bytes
// (merge truncated each to nothing: it created the copy over its source).
func TestMergeTracesIntoTheirOwnDirectory(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var files []string
	for _, shard := range []string{"1/2", "2/2"} {
		code, stdout, stderr := runCLI("check", "--bug", "HDFS-4911", "--seeds", "16", "--shard", shard, "--parallel", "1", "--json", "--out", out)
		if code != exitFail {
			t.Fatalf("shard %s: exit %d: %s", shard, code, stderr)
		}
		f := filepath.Join(dir, "s"+shard[:1]+".json")
		os.WriteFile(f, []byte(stdout), 0o644)
		files = append(files, f)
	}
	traces, _ := filepath.Glob(filepath.Join(out, "*.trace"))
	if len(traces) == 0 {
		t.Fatal("no traces to merge")
	}
	before := map[string][]byte{}
	for _, p := range traces {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %d bytes, %v", p, len(b), err)
		}
		before[p] = b
	}
	var got checkSummary
	code, stderr := cliJSON(t, &got, "merge", "--json", "--traces", out, files[0], files[1])
	if code != exitFail || got.Checked != 16 {
		t.Fatalf("merge: exit %d, %d checked: %s", code, got.Checked, stderr)
	}
	withTrace := 0
	for _, f := range got.Failures {
		if f.Trace != "" {
			withTrace++
		}
		if f.Trace != "" && filepath.Dir(f.Trace) != out {
			t.Errorf("seed %d: trace %q, want it in %s", f.Seed, f.Trace, out)
		}
	}
	if withTrace != len(traces) {
		t.Errorf("%d failures point at a trace, %d traces in %s", withTrace, len(traces), out)
	}
	for p, b := range before {
		if now, err := os.ReadFile(p); err != nil || !bytes.Equal(now, b) {
			t.Errorf("%s: %d bytes after the merge (%v), %d before", p, len(now), err, len(b))
		}
	}
	// Copied elsewhere, a trace already there is replaced whole, and no
	// temporary file is left behind.
	into := filepath.Join(dir, "into")
	os.Mkdir(into, 0o755)
	stale := filepath.Join(into, filepath.Base(traces[0]))
	os.WriteFile(stale, []byte("stale"), 0o644)
	if code, stderr := cliJSON(t, &got, "merge", "--json", "--traces", into, files[0], files[1]); code != exitFail {
		t.Fatalf("merge --traces %s: exit %d: %s", into, code, stderr)
	}
	entries, _ := os.ReadDir(into)
	if len(entries) != len(traces) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %q, want the %d traces", into, names, len(traces))
	}
	for p, b := range before {
		if now, err := os.ReadFile(filepath.Join(into, filepath.Base(p))); err != nil || !bytes.Equal(now, b) {
			t.Errorf("copy of %s: %d bytes (%v), want its %d", p, len(now), err, len(b))
		}
	}

	// Results from before check named its systems (no system, systems,
	// or failure's system), its CPU or its events still merge.
	var old []string
	for k, f := range files {
		var r map[string]any
		b, _ := os.ReadFile(f)
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&r); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"system", "systems", "cpu_s", "seeds_per_cpu_s", "sim_events", "sim_events_per_cpu_s"} {
			delete(r, key)
		}
		for _, f := range r["failures"].([]any) {
			delete(f.(map[string]any), "system")
		}
		p := filepath.Join(dir, fmt.Sprintf("old%d.json", k))
		writeJSON(t, p, r)
		old = append(old, p)
	}
	got = checkSummary{}
	if code, stderr := cliJSON(t, &got, "merge", "--json", old[0], old[1]); code != exitFail || got.Checked != 16 || got.CPUS != 0 || got.SimEvents != 0 {
		t.Errorf("older results: exit %d, %d checked, %v CPU-s, %d events: %s", code, got.Checked, got.CPUS, got.SimEvents, stderr)
	}
}

// A sweep of every system merges into the counts one check gives.
func TestMergeMixedSystems(t *testing.T) {
	files := checkShardResults(t, t.TempDir(), []string{"1/3", "2/3", "3/3"}, "--seeds", "30", "--seed", "7")
	var got checkSummary
	code, stderr := cliJSON(t, &got, append([]string{"merge", "--json"}, files...)...)
	if (code != exitOK && code != exitFail) || got.Checked != 30 || len(got.Systems) < 2 {
		t.Fatalf("merge: exit %d, %+v: %s", code, got, stderr)
	}
	sum := 0
	for _, s := range got.Systems {
		sum += s.Checked
	}
	if sum != 30 || math.IsInf(got.SeedsPerCPUS, 0) {
		t.Errorf("systems %+v add up to %d checked, want 30", got.Systems, sum)
	}
}

// A sweep that ends on the largest seed, which check allows, merges: the
// bound once counted one seed past the sweep's last.
func TestMergeSweepEndingOnTheLastSeed(t *testing.T) {
	files := checkShardResults(t, t.TempDir(), []string{"1/2", "2/2"}, "--seeds", "2", "--seed", "18446744073709551614")
	var got checkSummary
	code, stderr := cliJSON(t, &got, append([]string{"merge", "--json"}, files...)...)
	if (code != exitOK && code != exitFail) || got.Checked != 2 {
		t.Fatalf("merge: exit %d, %+v: %s", code, got, stderr)
	}
}

// A result file is input: a failure whose trace is not named as check
// names that seed's trace (another seed's, or any file at all) is neither
// copied nor printed as a trace, and no file is touched. (Merge copied
// /etc/passwd into --traces as seed 4's trace, and printed the replay
// command for it.)
func TestMergeTracesOfAnotherName(t *testing.T) {
	dir := t.TempDir()
	into, elsewhere := filepath.Join(dir, "into"), filepath.Join(dir, "elsewhere")
	os.Mkdir(into, 0o755)
	os.Mkdir(elsewhere, 0o755)
	a, b, c := filepath.Join(elsewhere, "seed-103.trace"), filepath.Join(into, "seed-103.trace"), filepath.Join(elsewhere, "passwd")
	os.WriteFile(a, []byte("another sweep's trace"), 0o644)
	os.WriteFile(b, []byte("seed 103's trace"), 0o644)
	os.WriteFile(c, []byte("not a trace"), 0o644)
	shards := syntheticShards()
	shards[0].Failures[0].Trace = a // seed 100
	shards[0].ByProperty[0].Smallest.Trace = a
	shards[0].Failures[1].Trace = c // seed 104
	shards[1].Failures[0].Trace = b // seed 103
	shards[1].ByProperty[0].Smallest.Trace = b
	files := []string{filepath.Join(dir, "s1.json"), filepath.Join(dir, "s2.json")}
	for k := range shards {
		writeJSON(t, files[k], shards[k])
	}
	var got checkSummary
	if code, stderr := cliJSON(t, &got, "merge", "--json", "--traces", into, files[0], files[1]); code != exitFail {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for p, want := range map[string]string{a: "another sweep's trace", b: "seed 103's trace", c: "not a trace"} {
		if b, err := os.ReadFile(p); string(b) != want {
			t.Errorf("%s: %q (%v), want %q", p, b, err, want)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(into, "*")); len(names) != 1 {
		t.Errorf("--traces holds %v, want only seed 103's trace", names)
	}
	for _, f := range got.Failures {
		switch want := map[uint64]string{103: b}[f.Seed]; {
		case f.Trace != want:
			t.Errorf("seed %d: trace %q, want %q", f.Seed, f.Trace, want)
		case want == "" && !strings.Contains(f.TraceError, "is not a name check gives seed"):
			t.Errorf("seed %d: trace_error %q, want a note of the name", f.Seed, f.TraceError)
		}
	}
	code, out, _ := runCLI("merge", files[0], files[1])
	if code != exitFail || !strings.Contains(out, "seed 104: no trace: "+c+" is not a name check gives seed 104's trace (seed-104.trace)") || strings.Contains(out, "replay "+a) {
		t.Errorf("exit %d, want 1, a line for seed 104's dropped trace and no replay of %s:\n%s", code, a, out)
	}
}

// FuzzMergeSummary feeds merge an arbitrary second shard beside a
// consistent first: whatever it accepts must add up, print and encode.
func FuzzMergeSummary(f *testing.F) {
	shards := syntheticShards()
	for _, r := range shards {
		b, _ := json.Marshal(r)
		f.Add(b)
		f.Add(bytes.Replace(b, []byte(`"count":2`), []byte(`"count":9223372036854775807`), 1))
		f.Add(bytes.Replace(b, []byte(`"cpu_s":1`), []byte(`"cpu_s":1.7e308`), 1))
		f.Add(bytes.Replace(b, []byte(`"smallest":{`), []byte(`"smallest":null,"x":{`), 1))
	}
	good, _ := json.Marshal(shards[0])
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		a, other := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
		os.WriteFile(a, good, 0o644)
		os.WriteFile(other, b, 0o644)
		m, err := mergeResults([]string{a, other}, true)
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), dir) {
				t.Fatalf("not one line naming the file: %q", err)
			}
			return
		}
		s := m.summary()
		if s.Passed+s.Failed != s.Checked || s.Checked > s.Seeds || s.NotListed < 0 || s.NotListed+len(s.Failures) != s.Failed {
			t.Fatalf("counts that do not add up: %d passed, %d failed, %d checked of %d seeds, %d listed, %d not", s.Passed, s.Failed, s.Checked, s.Seeds, len(s.Failures), s.NotListed)
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatal(err)
		}
		printGroups(io.Discard, s.ByProperty)
	})
}

// checkShardResults runs check with args as each of the shards (one
// core, traces into dir/out) and writes each shard's JSON result into
// dir, returning the files in shard order. A check that neither passes
// nor fails stops the test.
func checkShardResults(t *testing.T, dir string, shards []string, args ...string) []string {
	t.Helper()
	var files []string
	for _, shard := range shards {
		code, stdout, stderr := runCLI(append([]string{"check", "--shard", shard, "--parallel", "1", "--json", "--out", filepath.Join(dir, "out")}, args...)...)
		if code != exitOK && code != exitFail {
			t.Fatalf("shard %s: exit %d: %s", shard, code, stderr)
		}
		f := filepath.Join(dir, "s"+shard[:1]+".json")
		if err := os.WriteFile(f, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// A group's smallest failure that its shard did not list is held to the
// same rule, and its replay command is made again from its trace: the
// file's could name any file, or forge a line.
func TestMergeUnlistedSmallestTrace(t *testing.T) {
	dir := t.TempDir()
	shards := syntheticShards()
	f103 := shards[1].Failures[0]
	unlisted := checkFailure{System: "datanode", Seed: 105, Property: "leak-freedom", Message: "m", Trace: "/etc/passwd", Events: 9, Bytes: 100, Ops: 1}
	shards[1].ByProperty = []*propSummary{
		{Property: "availability", Count: 1, Smallest: &f103},
		{Property: "leak-freedom", Count: 1, Smallest: &unlisted, Replay: "xceiver replay /etc/passwd\n\x1b[31mFORGED"},
	}
	shards[1].Properties = append(shards[1].Properties, "leak-freedom")
	shards[0].Properties = shards[1].Properties
	files := []string{filepath.Join(dir, "s1.json"), filepath.Join(dir, "s2.json")}
	for k := range shards {
		writeJSON(t, files[k], shards[k])
	}
	code, out, errs := runCLI("merge", files[0], files[1])
	if code != exitFail || strings.Contains(out, "/etc/passwd") || strings.Contains(out, "\x1b") {
		t.Errorf("exit %d, want 1, no /etc/passwd and no escape:\n%s%s", code, out, errs)
	}
}
