package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCommandLine feeds every command arbitrary arguments (split on
// spaces). Commands stop after validating (dryRun), so the target
// checks the parsers: no panic, a known exit code, and a usage error is
// exactly one line on stderr.
func FuzzCommandLine(f *testing.F) {
	dryRun = true
	defer func() { dryRun = false }()
	for _, s := range []string{
		"check --seeds 10 --shard 2/3",
		"check --seeds 1 --shard 2/2",
		"check --bug hdfs-4911 --out /nonexistent/dir",
		"check --seed 18446744073709551615",
		"run --json tcp-pattern --writes 2",
		"run tcp-pattern -- read",
		"run read --keepalive 0s --server threaded",
		"run --trace= tcp-pattern",
		"replay traces/corpus/none.trace --html x.html",
		"bench HDFS-941 --world both",
		"validate --scenario TCP-NAGLE",
		"version --json",
		"mutate --sample 3 --shard 2/2 --operators negate",
		"help run",
		"--version",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		if len(args) > 0 && lookupCommand(args[0]) == nil && args[0] != "help" && !strings.HasPrefix(args[0], "-") {
			return // unknown commands are one table lookup
		}
		code, _, stderr := runCLI(args...)
		switch code {
		case exitOK, exitFail, exitUsage:
		default:
			t.Fatalf("%q: exit %d", args, code)
		}
		if code == exitUsage && len(args) > 0 {
			if strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 || !strings.HasPrefix(stderr, "xceiver: ") {
				t.Fatalf("%q: error is not one line: %q", args, stderr)
			}
		}
	})
}

// FuzzMergeResult feeds merge a result file of arbitrary bytes beside a
// good one: no panic, and a refusal is one line naming the file.
func FuzzMergeResult(f *testing.F) {
	good := `{"world":"sim","seeds":2,"sweep_seeds":4,"checked":2,"first_seed":1,"shard":"1/2","passed":1,"failed":1,"elapsed_s":1,"seeds_per_s":2,"code_version":"x","by_property":[{"property":"fd-bounds","count":1,"smallest":{"seed":3,"property":"fd-bounds","message":"m","events":9,"bytes":1,"original_property":"","original_ops":0,"original_faults":0,"ops":1,"faults":0,"shrink_runs":0}}],"failures":[{"seed":3,"property":"fd-bounds","message":"m","events":9,"bytes":1,"original_property":"","original_ops":0,"original_faults":0,"ops":1,"faults":0,"shrink_runs":0}],"properties":[]}`
	f.Add([]byte(strings.Replace(good, `"1/2"`, `"2/2"`, 1)))
	f.Add([]byte(strings.Replace(good, `"count":1`, `"count":-5`, 1)))
	f.Add([]byte(`{"world":"sim","shard":"0/0"}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		a, other := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
		os.WriteFile(a, []byte(good), 0o644)
		os.WriteFile(other, b, 0o644)
		m, err := mergeResults([]string{a, other}, true)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("not one line: %q", err)
			}
			return
		}
		s := m.summary()
		if s.Failed < 0 || s.Checked < 0 {
			t.Fatalf("negative counts from a file that merged: %+v", s)
		}
	})
}
