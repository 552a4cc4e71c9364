package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCheckShardFromJobEnv(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	t.Setenv("JOB_COMPLETIONS", "3")
	out := t.TempDir()
	var got checkSummary
	code, stdout, stderr := runCLI("check", "--seeds", "30", "--seed", "100", "--json", "--out", out)
	if code != exitOK || json.Unmarshal([]byte(stdout), &got) != nil {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if got.Shard != "2/3" || got.Checked != 10 {
		t.Errorf("from the environment: shard %s, %d seeds checked; want 2/3 and 10", got.Shard, got.Checked)
	}
	// --shard wins over the environment.
	code, stdout, _ = runCLI("check", "--seeds", "30", "--seed", "100", "--json", "--out", out, "--shard", "3/3")
	if code != exitOK || json.Unmarshal([]byte(stdout), &got) != nil || got.Shard != "3/3" {
		t.Errorf("--shard 3/3 with the environment set: exit %d, shard %s", code, got.Shard)
	}
	for _, env := range []struct{ idx, n, want string }{
		{"x", "3", `xceiver: check: JOB_COMPLETION_INDEX="x" JOB_COMPLETIONS="3": want 0 ≤ index < completions`},
		{"3", "3", `xceiver: check: JOB_COMPLETION_INDEX="3" JOB_COMPLETIONS="3": want 0 ≤ index < completions`},
		{"0", "", `xceiver: check: JOB_COMPLETION_INDEX="0" JOB_COMPLETIONS="": want 0 ≤ index < completions`},
		{"2", "3", `xceiver: check: shard 3/3 (from JOB_COMPLETION_INDEX=2): no seeds in this shard (only 2 seeds across 3 shards)`},
	} {
		t.Setenv("JOB_COMPLETION_INDEX", env.idx)
		t.Setenv("JOB_COMPLETIONS", env.n)
		code, _, stderr := runCLI("check", "--seeds", "2", "--out", out)
		if code != exitUsage || strings.TrimSpace(stderr) != env.want {
			t.Errorf("index %q of %q: exit %d\n%q\nwant %q", env.idx, env.n, code, stderr, env.want)
		}
	}
	os.Unsetenv("JOB_COMPLETIONS")
	if code, _, stderr := runCLI("check", "--seeds", "2", "--out", out); code != exitUsage || !strings.Contains(stderr, "JOB_COMPLETIONS is not") {
		t.Errorf("index without completions: exit %d: %q", code, stderr)
	}
}

// Three shards of a sweep with a bug on, collected into one directory
// (as a Job's shared volume would be, then copied elsewhere), merge into
// the summary one check of every seed gives.
func TestMergeShards(t *testing.T) {
	work := t.TempDir()
	results := filepath.Join(work, "results")
	os.Mkdir(results, 0o755)
	var files []string
	for k, shard := range []string{"1/3", "2/3", "3/3"} {
		out := filepath.Join(results, "traces-"+string(rune('0'+k)))
		code, stdout, stderr := runCLI("check", "--bug", "HDFS-3359", "--seeds", "15", "--shard", shard, "--parallel", "1", "--json", "--out", out)
		if code != exitFail {
			t.Fatalf("shard %s: exit %d: %s", shard, code, stderr)
		}
		f := filepath.Join(results, "shard-"+string(rune('0'+k))+".json")
		os.WriteFile(f, []byte(stdout), 0o644)
		files = append(files, f)
	}
	code, whole, _ := runCLI("check", "--bug", "HDFS-3359", "--seeds", "15", "--parallel", "1", "--json", "--out", filepath.Join(work, "whole"))
	var want checkSummary
	if code != exitFail || json.Unmarshal([]byte(whole), &want) != nil {
		t.Fatalf("whole sweep: exit %d", code)
	}

	// Collected elsewhere: the paths in the results no longer resolve
	// as written; merge finds the traces beside the results.
	moved := filepath.Join(work, "collected")
	if err := os.Rename(results, moved); err != nil {
		t.Fatal(err)
	}
	for i := range files {
		files[i] = filepath.Join(moved, filepath.Base(files[i]))
	}
	into := filepath.Join(work, "failures")
	code, stdout, stderr := runCLI(append([]string{"merge", "--json", "--traces", into}, files...)...)
	var got checkSummary
	if code != exitFail || json.Unmarshal([]byte(stdout), &got) != nil {
		t.Fatalf("merge: exit %d: %s%s", code, stdout, stderr)
	}
	if got.Checked != 15 || got.Seeds != 15 || got.SweepSeeds != 15 || got.Passed != want.Passed || got.Failed != want.Failed || len(got.Shards) != 3 {
		t.Errorf("merged %d checked, %d passed, %d failed over %v; one check: %d, %d, %d", got.Checked, got.Passed, got.Failed, got.Shards, want.Checked, want.Passed, want.Failed)
	}
	// The sweep's CPU is the shards' CPU added up.
	var shardCPU float64
	for _, f := range files {
		var r checkSummary
		b, _ := os.ReadFile(f)
		json.Unmarshal(b, &r)
		shardCPU += r.CPUS
	}
	if got.CPUS <= 0 || math.Abs(got.CPUS-shardCPU) > 1e-9 || math.Abs(got.SeedsPerCPUS*got.CPUS-15) > 1e-6 {
		t.Errorf("merged %v CPU-s and %v seeds per CPU-second; the shards used %v CPU-s", got.CPUS, got.SeedsPerCPUS, shardCPU)
	}
	// Its simulated events are the shards' added up, each system's too:
	// the same seeds simulate the same events however they are split.
	if got.SimEvents == 0 || got.SimEvents != want.SimEvents || math.Abs(got.SimEventsPerCPUS*got.CPUS-float64(got.SimEvents)) > 1e-6*float64(got.SimEvents) {
		t.Errorf("merged %d simulated events, %v per CPU-second over %v CPU-s; one check simulated %d", got.SimEvents, got.SimEventsPerCPUS, got.CPUS, want.SimEvents)
	}
	// Each system's busy time is its shards' added up (the same seeds'
	// time differs from run to run, so not the one check's).
	sysCPU := map[string]float64{}
	for _, f := range files {
		var r checkSummary
		b, _ := os.ReadFile(f)
		json.Unmarshal(b, &r)
		for _, c := range r.Systems {
			sysCPU[c.System] += c.BusyS
		}
	}
	if len(got.Systems) != len(want.Systems) || len(got.Systems) == 0 {
		t.Errorf("merged systems %+v, one check's %+v", got.Systems, want.Systems)
	}
	for i, c := range got.Systems {
		if i < len(want.Systems) {
			w := want.Systems[i]
			w.BusyS = c.BusyS
			if c != w {
				t.Errorf("merged system %+v, one check's %+v", c, want.Systems[i])
			}
		}
		if c.BusyS <= 0 || math.Abs(c.BusyS-sysCPU[c.System]) > 1e-9 {
			t.Errorf("merged system %s: busy %v s, the shards' %v", c.System, c.BusyS, sysCPU[c.System])
		}
	}
	// A shard result from before check reported its CPU: the sweep's CPU
	// is unknown, and merge gives no figure rather than a wrong one.
	old := filepath.Join(work, "no-cpu.json")
	b0, _ := os.ReadFile(files[0])
	noCPU := regexp.MustCompile(`"cpu_s":[0-9.e+-]+,"seeds_per_cpu_s":[0-9.e+-]+,`).ReplaceAllString(string(b0), "")
	noCPU = regexp.MustCompile(`,"busy_s":[0-9.e+-]+}`).ReplaceAllString(noCPU, "}") // each system's time
	os.WriteFile(old, []byte(noCPU), 0o644)
	code, stdout, stderr = runCLI(append([]string{"merge", "--json", "--traces", filepath.Join(work, "f2"), old}, files[1:]...)...)
	var partial checkSummary
	if json.Unmarshal([]byte(stdout), &partial) != nil || partial.CPUS != 0 || partial.SeedsPerCPUS != 0 || len(partial.Systems) == 0 || partial.Systems[0].BusyS != 0 {
		t.Errorf("merge with a shard without cpu_s: exit %d, %v CPU-s, %v seeds per CPU-second, want 0 and 0 (and no system's busy time): %s%s", code, partial.CPUS, partial.SeedsPerCPUS, stdout, stderr)
	}
	// Nor from before it reported its simulated events.
	noEvents := filepath.Join(work, "no-events.json")
	os.WriteFile(noEvents, []byte(regexp.MustCompile(`,?"sim_events(_per_cpu_s)?":[0-9.e+-]+`).ReplaceAllString(string(b0), "")), 0o644)
	code, stdout, stderr = runCLI(append([]string{"merge", "--json", "--traces", filepath.Join(work, "f3"), noEvents}, files[1:]...)...)
	var noEv checkSummary
	if json.Unmarshal([]byte(stdout), &noEv) != nil || noEv.SimEvents != 0 || noEv.SimEventsPerCPUS != 0 || noEv.Systems[0].SimEvents != 0 || noEv.CPUS <= 0 {
		t.Errorf("merge with a shard without sim_events: exit %d, %d events, %v per CPU-second, want 0 and 0 (and the CPU): %s%s", code, noEv.SimEvents, noEv.SimEventsPerCPUS, stdout, stderr)
	}
	if len(got.ByProperty) != len(want.ByProperty) || got.ByProperty[0].Count != want.ByProperty[0].Count ||
		got.ByProperty[0].Smallest.Seed != want.ByProperty[0].Smallest.Seed {
		t.Errorf("by property: merged %+v, one check %+v", got.ByProperty[0], want.ByProperty[0])
	}
	for _, f := range got.Failures {
		if filepath.Dir(f.Trace) != into {
			t.Errorf("seed %d: trace %q (%s), want it copied into %s", f.Seed, f.Trace, f.TraceError, into)
		} else if _, err := os.Stat(f.Trace); err != nil {
			t.Error(err)
		}
	}
	// Text: the summary and the replay command of the merged trace.
	code, stdout, _ = runCLI(append([]string{"merge"}, files...)...)
	if code != exitFail || !strings.Contains(stdout, "failures by property") || !strings.Contains(lastLine(stdout), "failed") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}

	bad := filepath.Join(work, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	other := filepath.Join(work, "other.json")
	b, _ := os.ReadFile(files[0])
	os.WriteFile(other, []byte(strings.Replace(string(b), `"sweep_seeds":15`, `"sweep_seeds":16`, 1)), 0o644)
	// A shard checked with --ignore: what it counts as passed is not what
	// the other shards count.
	ignoring := filepath.Join(work, "ignoring.json")
	b2, _ := os.ReadFile(files[2])
	if !strings.Contains(string(b2), `"ignored":[]`) {
		t.Fatalf("a shard checked in full does not say it ignored none: %s", b2)
	}
	os.WriteFile(ignoring, []byte(strings.Replace(string(b2), `"ignored":[]`, `"ignored":["availability"]`, 1)), 0o644)
	unknown := filepath.Join(work, "unknown.json")
	os.WriteFile(unknown, []byte(strings.Replace(string(b2), `"ignored":[]`, `"ignored":["nope"]`, 1)), 0o644)
	// A result from before check listed them may have ignored any.
	var unlisted []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		u := filepath.Join(work, "unlisted-"+filepath.Base(f))
		os.WriteFile(u, []byte(strings.Replace(string(b), `,"ignored":[]`, ``, 1)), 0o644)
		unlisted = append(unlisted, u)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", files[0], files[1]}, "xceiver: merge: shards missing: 3/3 (--partial merges what is there)"},
		{[]string{"merge", files[0], files[0]}, "xceiver: merge: " + files[0] + ": shard 1/3 again (also in " + files[0] + ")"},
		{[]string{"merge", files[1], other}, "xceiver: merge: " + other + ": seeds 16, but " + files[1] + " has 15: not the same sweep"},
		{[]string{"merge", files[0], files[1], ignoring}, "xceiver: merge: " + ignoring + ": ignored properties availability, but " + files[0] + " has none: not the same sweep"},
		{[]string{"merge", unknown}, "xceiver: merge: " + unknown + ": ignored \"nope\": not a property the result lists, once, in order"},
		{[]string{"merge", files[0], files[1], unlisted[2]}, "xceiver: merge: " + unlisted[2] + ": ignored properties not listed (a result from before check listed them), but " + files[0] + " has none: not the same sweep"},
		{[]string{"merge", bad}, "xceiver: merge: " + bad + ": not the output of check --json"},
		{[]string{"merge", filepath.Join(work, "none.json")}, "xceiver: merge: " + filepath.Join(work, "none.json") + ": no such file or directory"},
		{[]string{"merge"}, "xceiver: merge: want one or more RESULT.json files (check --json, one per shard)"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != exitUsage || strings.TrimSpace(stderr) != c.want {
			t.Errorf("%q: exit %d\n%q\nwant %q", c.args, code, stderr, c.want)
		}
	}
	if code, _, stderr := runCLI("merge", "--partial", files[0], files[1]); code != exitFail {
		t.Errorf("--partial: exit %d: %s", code, stderr)
	}
	// Results that all predate the list merge, as they did.
	if code, _, stderr := runCLI(append([]string{"merge"}, unlisted...)...); code != exitFail {
		t.Errorf("results without ignored: exit %d: %s", code, stderr)
	}
}
