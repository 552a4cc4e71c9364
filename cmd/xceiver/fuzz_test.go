package main

import (
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
