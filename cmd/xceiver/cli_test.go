package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"xceiver/properties"
)

func TestHelpGoesToStdoutWithUsageFlagsAndExample(t *testing.T) {
	for _, cmd := range commandList() {
		for _, h := range []string{"-h", "--help"} {
			code, stdout, stderr := runCLI(cmd.name, h)
			if code != exitOK || stderr != "" {
				t.Errorf("%s %s: exit %d, stderr %q", cmd.name, h, code, stderr)
			}
			if !strings.HasPrefix(stdout, "usage: xceiver "+cmd.name) {
				t.Errorf("%s %s: no usage line first: %q", cmd.name, h, firstLine(stdout))
			}
			if !strings.Contains(stdout, "\nflags:\n") || !strings.Contains(stdout, "\nexample") {
				t.Errorf("%s %s: help lacks flags or an example:\n%s", cmd.name, h, stdout)
			}
		}
		for _, h := range []string{"help", "--help"} {
			code, stdout, _ := runCLI(h, cmd.name)
			if code != exitOK || !strings.HasPrefix(stdout, "usage: xceiver "+cmd.name) {
				t.Errorf("%s %s: exit %d: %q", h, cmd.name, code, firstLine(stdout))
			}
		}
	}
	_, benchHelp, _ := runCLI("bench", "-h")
	for _, n := range sortedExperimentNames() {
		if !strings.Contains(benchHelp, n) {
			t.Errorf("bench -h does not list experiment %s", n)
		}
	}
	if _, replayHelp, _ := runCLI("replay", "-h"); !strings.Contains(replayHelp, "TRACE is") {
		t.Errorf("replay -h does not explain TRACE")
	}
	_, runHelp, _ := runCLI("run", "-h")
	for _, sc := range scenarioList() {
		fs := newFlagSet(sc.name)
		sc.flags(fs)
		if !strings.Contains(runHelp, sc.name+" flags:") {
			t.Errorf("run -h has no section for %s's flags", sc.name)
		}
		_, one, _ := runCLI("run", sc.name, "-h")
		if !strings.Contains(one, sc.name+" flags:") {
			t.Errorf("run %s -h lacks its flags", sc.name)
		}
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}, {"help", "help"}, {"help", "-h"}, {"-h", "-h"}, {"--help", "help"}} {
		code, stdout, stderr := runCLI(args...)
		if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, "usage: xceiver COMMAND") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
	// Bad usage is one line, as everywhere: no command, or help with more
	// than it can answer.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, `xceiver: want a command (` + commandNames() + `); "xceiver help" describes them`},
		{[]string{"help", "run", "extra"}, `xceiver: help: want one command at most, got ["run" "extra"]`},
		{[]string{"-h", "run", "x"}, `xceiver: -h: want one command at most, got ["run" "x"]`},
		{[]string{"--help", "nope"}, `xceiver: --help: unknown command "nope" (want ` + commandNames() + `)`},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want+"\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// failingWriter takes nothing: a full disk, a closed file.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Output that could not be written fails the command, said in one line: a
// calibrate piped to a full disk lost its measurements with exit 0.
func TestStdoutWriteErrorFails(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"help"}, {"run", "tcp-pattern", "--ops", "2", "--json"}, {"check", "--seeds", "1", "--json", "--out", t.TempDir()}} {
		var errb bytes.Buffer
		code := run(args, failingWriter{}, &errb)
		if code != exitFail || errb.String() != "xceiver: writing the output: no space left on device\n" {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and the write error", args, code, errb.String())
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func TestFlagsBeforeAndAfterArguments(t *testing.T) {
	hashes := map[string]bool{}
	for _, args := range [][]string{
		{"run", "--json", "tcp-pattern", "--ops", "3"},
		{"run", "tcp-pattern", "--ops", "3", "--json"},
		{"run", "--ops", "3", "--world", "sim", "tcp-pattern", "--json"},
		{"run", "--ops=3", "--json", "TCP-Pattern"},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		var got struct {
			Ops       int    `json:"ops"`
			TraceHash string `json:"trace_hash"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Ops != 3 {
			t.Fatalf("%q: %v: %s", args, err, stdout)
		}
		hashes[got.TraceHash] = true
	}
	if len(hashes) != 1 {
		t.Errorf("the same run in four spellings gave hashes %v", hashes)
	}
	code, stdout, stderr := runCLI("replay", "--json", "traces/none.trace")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "no such file") {
		t.Errorf("replay --json before TRACE: exit %d: %q", code, stderr)
	}
}

func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct {
		args []string
		want string // the whole stderr line
	}{
		{[]string{"check", "--nope"}, `xceiver: check: unknown flag --nope ("xceiver check -h" lists the flags)`},
		{[]string{"check", "-nope"}, `xceiver: check: unknown flag -nope ("xceiver check -h" lists the flags)`},
		{[]string{"run", "tcp-pattern", "--nope"}, `xceiver: run: unknown flag --nope ("xceiver run -h" lists the flags)`},
		{[]string{"check", "--seeds", "x"}, `xceiver: check: --seeds "x": not valid (want an integer)`},
		{[]string{"check", "--seeds"}, `xceiver: check: --seeds needs a value`},
		{[]string{"check", "--out", ""}, `xceiver: check: --out is empty: give a value, or leave the flag out for its default (xceiver-failures)`},
		{[]string{"check", "--out", file}, `xceiver: check: --out: ` + file + ` is a file, not a directory`},
		{[]string{"check", "--out", filepath.Join(file, "sub")}, `xceiver: check: --out: cannot create ` + filepath.Join(file, "sub") + `: ` + file + ` is a file`},
		{[]string{"check", "--bug", ""}, `xceiver: check: --bug is empty: give a value, or leave the flag out`},
		{[]string{"check", "--bug", "HDFS-0"}, `xceiver: check: --bug "HDFS-0": unknown bug (want one of ` + strings.Join(append(append(append(bugNames(), rpcBugNames()...), scBugNames()...), scenarioBugNames()...), ", ") + `, or list)`},
		{[]string{"check", "--system", "nfs"}, `xceiver: check: --system "nfs": want datanode, rpc, sc, scenario or all`},
		{[]string{"check", "--system", "rpc", "--bug", "HDFS-4911"}, `xceiver: check: --bug HDFS-4911 is a datanode bug; --system rpc takes ` + strings.Join(rpcBugNames(), ", ")},
		{[]string{"check", "--seeds", "1", "--shard", "2/2"}, `xceiver: check: --shard 2/2: no seeds in this shard (only 1 seed across 2 shards)`},
		{[]string{"check", "--world", "real", "--out", dir}, `xceiver: check: --out: a check in the real world runs one seed at a time and neither shrinks nor writes traces (check a failing seed in sim for its trace)`},
		{[]string{"check", "--world", "real", "--parallel", "2"}, `xceiver: check: --parallel: a check in the real world runs one seed at a time and neither shrinks nor writes traces (check a failing seed in sim for its trace)`},
		{[]string{"check", "--world", "real", "--no-shrink"}, `xceiver: check: --no-shrink: a check in the real world runs one seed at a time and neither shrinks nor writes traces (check a failing seed in sim for its trace)`},
		{[]string{"check", "--world", "real", "--system", "all"}, `xceiver: check: --system all: the real world checks the datanode only (--system datanode)`},
		{[]string{"check", "--world", "real", "--bug", "HADOOP-6723"}, `xceiver: check: --bug HADOOP-6723 is an rpc bug: checked in sim only (the real world checks the datanode)`},
		{[]string{"check", "--world", "real", "--bug", "HDFS-7915"}, `xceiver: check: --bug HDFS-7915 is a short-circuit bug: checked in sim only (the real world checks the datanode)`},
		{[]string{"check", "--world", "real", "--system", "scenario"}, `xceiver: check: --system scenario: checked in sim only (the real world runs the scenarios in xceiver run --world real and xceiver validate)`},
		{[]string{"check", "--cpuprofile", dir}, `xceiver: check: --cpuprofile ` + dir + `: a directory; the profile is a file`},
		{[]string{"replay", ""}, `xceiver: replay: an empty TRACE file name`},
		{[]string{"merge", "", "x.json"}, `xceiver: merge: an empty RESULT.json file name`},
		{[]string{"mutate", "--ids", ",,", "--list"}, `xceiver: mutate: --ids ",,": an empty ID (want comma-separated IDs)`},
		{[]string{"check", "--max-failures", "-1"}, `xceiver: check: --max-failures -1: want 0 (no limit) or more`},
		{[]string{"check", "--seeds", "10", "--shard", "2/3", "--skip", "3"}, `xceiver: check: --skip 3: want 0 to 2 (--shard 2/3 holds 3 seeds)`},
		{[]string{"check", "--skip", "-1"}, `xceiver: check: --skip -1: want 0 to 9999 (10000 seeds to check)`},
		{[]string{"check", "--seed", "7", "--skip", "1"}, `xceiver: check: --skip 1: want 0 to 0 (1 seed to check)`},
		{[]string{"check", "--world", "mars"}, `xceiver: check: --world "mars": want sim or real`},
		{[]string{"replay", "--html", ""}, `xceiver: replay: --html is empty: give a value, or leave the flag out`},
		{[]string{"run", "tcp-pattern", "--trace", ""}, `xceiver: run: --trace is empty: give a value, or leave the flag out`},
		{[]string{"run", "tcp-pattern", "--trace", dir}, `xceiver: run tcp-pattern: --trace: ` + dir + ` is a directory`},
		{[]string{"run", "read", "--server", ""}, `xceiver: run: --server is empty: give a value, or leave the flag out for its default (reactor)`},
		{[]string{"run", "tcp-pattern", "--world", "mars"}, `xceiver: run tcp-pattern: --world "mars": want sim or real`},
		{[]string{"validate", "--scenario", ""}, `xceiver: validate: --scenario is empty: give a value, or leave the flag out`},
		{[]string{"bench", "nope"}, `xceiver: bench: unknown experiment "nope" (want ` + experimentNames() + `)`},
		{[]string{"run", "tcp-pattern", "--writes", "100000000"}, `xceiver: run tcp-pattern: --writes 100000000 × --ops 100 is 10000000000 writes; at most 1000000 in one run`},
		{[]string{"run", "read", "--cache-expiry", "0s", "--cache-capacity", "-1"}, `xceiver: run read: --cache-expiry 0s: want a positive duration`},
		{[]string{"run", "read", "--cache-capacity", "-1"}, `xceiver: run read: --cache-capacity -1: want 0 or more`},
		{[]string{"run", "tcp-pattern", "--ops", "0"}, `xceiver: run tcp-pattern: --ops must be at least 1 (got 0)`},
		{[]string{"run", "tcp-pattern", "--sizes", "8", "--writes", "3", "--msg", "100"}, `xceiver: run tcp-pattern: --writes, --msg: --sizes gives every write's bytes; use one or the other`},
		{[]string{"run", "tcp-pattern", "--msg", "100", "--sizes", "8,9"}, `xceiver: run tcp-pattern: --msg: --sizes gives every write's bytes; use one or the other`},
		{[]string{"run", "rpc", "--fanout", "65536", "--depth", "4"}, `xceiver: run rpc: tree: --fanout 65536 to the power --depth 4, times --files 4, is more than 1048576 files`},
		{[]string{"run", "rpc", "--files", "100", "--file-size", "100000000"}, `xceiver: run rpc: tree: 6400 files of --file-size 100000000 exceeds 4 GiB of block data (--read-data)`},
		{[]string{"run", "rpc", "--clients", "4097"}, `xceiver: run rpc: --clients 4097 outside [1, 4096]`},
		{[]string{"run", "rpc", "--handlers", "100000"}, `xceiver: run rpc: --handlers 100000 outside [1, 1024]`},
		{[]string{"run", "rpc", "--readers", "1025"}, `xceiver: run rpc: --readers 1025 outside [1, 1024]`},
		{[]string{"run", "tcp-pattern", "--writes", "1073741824", "--msg", "1", "--ops", "17179869184"}, `xceiver: run tcp-pattern: --writes 1073741824 × --ops 17179869184 is more than 1000000 writes; at most 1000000 in one run`},
		{[]string{"run", "read", "--keepalive", "2562047h"}, `xceiver: run read: --keepalive 2562047h0m0s: at most 1h0m0s`},
		{[]string{"check", "--seed", "18446744073709551615", "--seeds", "2"}, `xceiver: check: --seed 18446744073709551615: the last seed would overflow (with --seeds 2)`},
		{[]string{"check", "--out", dir, "--cpuprofile", dir}, `xceiver: check: --cpuprofile ` + dir + `: at or above --out ` + dir + `, where the traces go`},
		{[]string{"check", "--out", filepath.Join(dir, "t"), "--cpuprofile", dir}, `xceiver: check: --cpuprofile ` + dir + `: at or above --out ` + filepath.Join(dir, "t") + `, where the traces go`},
		{[]string{"check", "--out", dir, "--cpuprofile", filepath.Join(dir, "seed-3.trace")}, `xceiver: check: --cpuprofile ` + filepath.Join(dir, "seed-3.trace") + `: named like a trace in --out ` + dir + ` (seed-…)`},
		{[]string{"replay", file, "--html", file}, `xceiver: replay: --html ` + file + ` is the TRACE: the page would overwrite it`},
		{[]string{"run", "tcp-pattern", "--profile", file, "--trace", file}, `xceiver: run tcp-pattern: --trace ` + file + ` is the --profile file: the trace would overwrite it`},
		{[]string{"run", "tcp-pattern", "--profile", "/dev/zero"}, `xceiver: run tcp-pattern: --profile: /dev/zero is not a regular file`},
		{[]string{"run", "tcp-pattern", "--profile", dir}, `xceiver: run tcp-pattern: --profile: ` + dir + ` is a directory`},
		{[]string{"run", "tcp-pattern", "--world", "real", "--profile", file}, `xceiver: run tcp-pattern: --profile: the real world runs at the machine's own costs; the profile is the simulated world's`},
		{[]string{"run", "tcp-pattern", "--tmpdir", dir}, `xceiver: run tcp-pattern: --tmpdir: the simulated world keeps its files and sockets in memory; the directory is the real world's`},
		{[]string{"bench", "sim-speed", "--profile", file}, `xceiver: bench: --profile: sim-speed runs the simulator with its hand-set costs, not a profile's`},
		{[]string{"calibrate", "--out", filepath.Join(dir, "no", "p.json")}, `xceiver: calibrate: --out: no directory ` + filepath.Join(dir, "no")},
		{[]string{"run"}, `xceiver: run: want a SCENARIO (` + strings.Join(scenarioNames(), ", ") + `)`},
		{[]string{"run", "read", "--cpu-scale", "0"}, `xceiver: run read: --cpu-scale 0: want a factor from 0.1 to 10`},
		{[]string{"run", "read", "--cpu-scale", "NaN"}, `xceiver: run read: --cpu-scale NaN: want a factor from 0.1 to 10`},
		{[]string{"run", "read", "--server", "threaded", "--inline-io", "--selectors", "2"}, `xceiver: run read: --inline-io, --selectors: the reactor's; --server threaded has a thread per connection`},
		{[]string{"run", "read", "--server", "threaded", "--pool-max", "2"}, `xceiver: run read: --pool-max: the reactor's; --server threaded has a thread per connection`},
		{[]string{"run", "read", "--inline-io", "--workers", "8"}, `xceiver: run read: --workers: --inline-io has no worker pool; the selectors build the packets themselves`},
		{[]string{"run", "sc-read", "--path", "tcp", "--shards", "2", "--cache-capacity", "8", "--cache-expiry", "1s", "--skip-checksum"}, `xceiver: run sc-read: --shards, --cache-capacity, --cache-expiry, --skip-checksum: short-circuit reads'; --path tcp reads through the datanode`},
		{[]string{"run", "sc-read", "--path", "uds", "--skip-checksum"}, `xceiver: run sc-read: --skip-checksum: short-circuit reads'; --path uds reads through the datanode`},
		{[]string{"run", "rpc", "--world", "real", "--namenode-cores", "4", "--locks", "fair", "--wakeups=false"}, `xceiver: run rpc: --namenode-cores, --locks, --wakeups: the simulated world's; the real world runs on this machine's cores, with Go's locks and wake-ups`},
		{[]string{"run", "rpc", "--world", "real", "-wakeups=true"}, `xceiver: run rpc: -wakeups: the simulated world's; the real world runs on this machine's cores, with Go's locks and wake-ups`},
		{[]string{"run", "sc-read", "--cores", "2"}, `xceiver: run: unknown flag --cores ("xceiver run -h" lists the flags)`},
		{[]string{"run", "sc-read", "--path", "uds", "--no-transfer-to"}, `xceiver: run sc-read: --no-transfer-to: TCP reads'; the datanode copies --path uds's data traffic always, never sending it with sendfile`},
		{[]string{"run", "rpc", "--cpu-scale", "50"}, `xceiver: run rpc: --cpu-scale 50: want a factor from 0.1 to 10`},
		{[]string{"bench", "hadoop-6713", "--cpu-scale", "0.01"}, `xceiver: bench: --cpu-scale 0.01: want a factor from 0.1 to 10`},
		{[]string{"run", "read", "--cpu-scale", "2", "--world", "real"}, `xceiver: run read: --cpu-scale: the real world runs at the machine's own speed; the factor scales the simulated world's costs`},
		{[]string{"bench", "hdfs-918", "--cpu-scale", "2", "--world", "real"}, `xceiver: bench: --cpu-scale: the real world runs at the machine's own speed; the factor scales the simulated world's costs`},
		{[]string{"validate", "--cpu-scale", "-1"}, `xceiver: validate: --cpu-scale -1: want a factor from 0.1 to 10`},
		{[]string{"validate", "--cpu-scale", "fast"}, `xceiver: validate: --cpu-scale "fast": want auto or a number`},
		{[]string{"validate", "--max-steal", "2"}, `xceiver: validate: --max-steal 2: want a share from 0 to 1`},
		{[]string{"validate", "--host-steal", "some"}, `xceiver: validate: --host-steal "some": want measured or a share`},
		{[]string{"validate", "--host-steal", "0.95"}, `xceiver: validate: --host-steal 0.95: want 0, or a share from 0.001 to 0.9`},
		{[]string{"run", "read", "--host-steal", "-0.5"}, `xceiver: run read: --host-steal -0.5: want 0, or a share from 0.001 to 0.9`},
		{[]string{"run", "read", "--host-steal", "NaN"}, `xceiver: run read: --host-steal NaN: want 0, or a share from 0.001 to 0.9`},
		{[]string{"run", "read", "--host-steal", "1e-13"}, `xceiver: run read: --host-steal 1e-13: want 0, or a share from 0.001 to 0.9`},
		{[]string{"run", "read", "--host-steal", "0.2", "--host-steal-gap", "1µs"}, `xceiver: run read: --host-steal-gap 1µs: want 50µs to 100ms`},
		{[]string{"run", "read", "--host-steal-gap", "2ms"}, `xceiver: run read: --host-steal-gap: the gaps of a host that withholds nothing; give --host-steal S too`},
		{[]string{"run", "read", "--host-steal-gap", "2ms", "--world", "real"}, `xceiver: run read: --host-steal-gap: the real world's host leaves the gaps it does; the gap is the simulated host's`},
		{[]string{"run", "read", "--host-steal", "0.3", "--world", "real"}, `xceiver: run read: --host-steal: the real world's host withholds what it does (a real run reports it: host_steal_share); the share is the simulated host's`},
		{[]string{"validate", "--scenario", "tcp-nagle", "--repeat", "20", "--max-steal", "0.01"}, `xceiver: validate: --repeat, --max-steal: tcp-nagle runs once; the flags are for the repeated checks (read-scale-32k, read-scale-64k, loop-pairs, tcp-stalls)`},
		{[]string{"validate", "--scenario", "uds-vs-tcp", "-max-steal", "0.5"}, `xceiver: validate: -max-steal: uds-vs-tcp runs once; the flag is for the repeated checks (read-scale-32k, read-scale-64k, loop-pairs, tcp-stalls)`},
		{[]string{"validate", "--seed", "18446744073709551615", "--scenario", "loop-pairs", "--repeat", "2"}, `xceiver: validate: --seed 18446744073709551615: the last seed would overflow (with --repeat 2)`},
		{[]string{"validate", "--seed", "18446744073709551610"}, `xceiver: validate: --seed 18446744073709551610: the last seed would overflow (with --repeat 7)`},
		{[]string{"validate", "--max-steal", "NaN"}, `xceiver: validate: --max-steal NaN: want a share from 0 to 1`},
		{[]string{"validate", "--max-steal", "-0.1"}, `xceiver: validate: --max-steal -0.1: want a share from 0 to 1`},
		{[]string{"validate", "--calibrate", "--cpu-scale", "fast"}, `xceiver: validate: --cpu-scale "fast": want auto or a number`},
		{[]string{"validate", "--profile", "measured", "--cpu-scale", "auto"}, `xceiver: validate: --cpu-scale auto scales a profile of another day to this machine: give it one (--profile embedded or FILE); the measured profile is this machine already`},
		{[]string{"validate", "--calibrate", "--cpu-scale", "auto"}, `xceiver: validate: --cpu-scale auto scales a profile of another day to this machine: give it one (--profile embedded or FILE); the measured profile is this machine already`},
		{[]string{"validate", "--calibrate", "--profile", "embedded"}, `xceiver: validate: --calibrate and --profile embedded: give one`},
		{[]string{"validate", "--profile", dir}, `xceiver: validate: --profile: ` + dir + ` is a directory`},
		{[]string{"validate", "--profile", "/no/such/profile.json"}, `xceiver: validate: --profile: open /no/such/profile.json: no such file or directory`},
		{[]string{"mutate", "--list", "--tests", "--parallel", "2", "--seeds", "5", "--budget", "1m", "--timeout", "1m", "--equivalent", file}, `xceiver: mutate: --seeds, --parallel, --tests, --timeout, --equivalent, --budget: --list judges nothing; the flags set how mutants are judged`},
		{[]string{"mutate", "--list", "-seeds=5"}, `xceiver: mutate: -seeds: --list judges nothing; the flag sets how mutants are judged`},
		{[]string{"bench", "sim-speed", "--cpu-scale", "2"}, `xceiver: bench: --cpu-scale: sim-speed runs the simulator with its hand-set costs, which the factor does not scale`},
		{[]string{"--seeds", "3"}, `xceiver: flag --seeds before the command: flags follow it (xceiver COMMAND [flags])`},
	} {
		code, stdout, stderr := runCLI(c.args...)
		if code != exitUsage || stdout != "" || strings.TrimSuffix(stderr, "\n") != c.want {
			t.Errorf("%q: exit %d, stdout %q\nstderr %q\nwant   %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

func TestNamesAnyCase(t *testing.T) {
	code, stdout, stderr := runCLI("check", "--bug", "Stale-Handle", "--seed", "3", "--json", "--out", t.TempDir())
	if code == exitUsage || !strings.Contains(stdout, `"bug":"stale-handle"`) {
		t.Errorf("--bug Stale-Handle: exit %d: %s%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI("check", "--bug", "LIST"); code != exitOK || !strings.Contains(stdout, "HDFS-4911") {
		t.Errorf("--bug LIST: exit %d", code)
	}
}

// A run that hits the simulator's limit is neither a pass nor a failed
// check: it has its own exit code.
func TestResourceLimitExitCode(t *testing.T) {
	// 90000 ops of a 44 ms Nagle stall need more than the one hour of
	// virtual time tcp-pattern allows.
	code, _, stderr := runCLI("run", "tcp-pattern", "--ops", "90000")
	if code != exitLimit || !strings.Contains(stderr, "simulation limit reached") {
		t.Errorf("exit %d, want %d: %q", code, exitLimit, stderr)
	}
}

func TestTextOutputTidy(t *testing.T) {
	code, stdout, _ := runCLI("run", "read", "--clients", "2", "--ops", "3")
	if code != exitOK {
		t.Fatal(code)
	}
	col := -1
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if strings.Contains(l, "<nil>") {
			t.Errorf("prints <nil>: %q", l)
		}
		i := strings.Index(l, "  ")
		for i >= 0 && i+1 < len(l) && l[i+1] == ' ' {
			i++
		}
		if col < 0 {
			col = i
		} else if i != col {
			t.Errorf("misaligned: %q (value at column %d, want %d)", l, i, col)
		}
		if m := regexp.MustCompile(`\.\d{4,}`).FindString(l); m != "" {
			t.Errorf("too many decimals: %q", l)
		}
	}
	code, stdout, _ = runCLI("check", "--seed", "5", "--out", t.TempDir())
	if code != exitOK || !strings.HasPrefix(stdout, "checked 1 seed (") {
		t.Errorf("exit %d: %q", code, stdout)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version", "--json"}, {"--version", "--json"}} {
		code, stdout, _ := runCLI(args...)
		var v buildVersion
		if code != exitOK || json.Unmarshal([]byte(stdout), &v) != nil {
			t.Fatalf("%q: exit %d: %q", args, code, stdout)
		}
		if v.Go == "" || v.TraceFormat == 0 || v.CodeVersion == "" || v.Module == "" {
			t.Errorf("%q: %+v", args, v)
		}
	}
}

// README's command synopsis is the one help prints, and every flag and
// name the commands accept is documented in README's section for its
// command. Each error says exactly what to change.
func TestREADMEAgreesWithHelp(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	block := readmeSection(readme, "## Commands")
	if block == "" {
		t.Fatal(`README.md has no "## Commands" section`)
	}
	// The synopsis is the section's own text, before its subsections
	// (whose examples also start with "xceiver ").
	block, _, _ = strings.Cut(block, "\n### ")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "xceiver ") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	for _, cmd := range commandList() {
		want := cmd.synopsis()
		found := false
		for _, l := range lines {
			if l == want {
				found = true
			} else if strings.HasPrefix(l, "xceiver "+cmd.name+" ") || l == "xceiver "+cmd.name {
				t.Errorf("README.md, ## Commands: the synopsis of %s differs from help.\n  README: %s\n  help:   %s\n  %s", cmd.name, l, want, flagDiff(l, want))
				found = true
			}
		}
		if !found {
			t.Errorf("README.md, ## Commands: no synopsis line for %s; add:\n  %s", cmd.name, want)
		}
		own, sections := cmd.flagNames()
		_ = own // the synopsis covers them
		sec := readmeSection(readme, "### "+cmd.name)
		for title, names := range sections {
			for _, n := range names {
				if !regexp.MustCompile(`--` + regexp.QuoteMeta(n) + `\b`).MatchString(sec) {
					t.Errorf("README.md, ### %s: %s (%s) is not documented; mention `--%s` there", cmd.name, "--"+n, title, n)
				}
			}
		}
	}
	bench := readmeSection(readme, "### bench")
	for _, n := range sortedExperimentNames() {
		if !strings.Contains(bench, "`"+n+"`") {
			t.Errorf("README.md, ### bench: experiment `%s` is not described", n)
		}
	}
	validate := readmeSection(readme, "### validate")
	for _, c := range checks() {
		if !strings.Contains(validate, "`"+c.name+"`") {
			t.Errorf("README.md, ### validate: scenario `%s` is not listed", c.name)
		}
	}
	check := readmeSection(readme, "### check and replay")
	for _, n := range bugNames() {
		if !strings.Contains(check, n) {
			t.Errorf("README.md, ### check and replay: catalogued bug %s is not listed", n)
		}
	}
	run := readmeSection(readme, "### run")
	for _, n := range scenarioNames() {
		if !strings.Contains(run, "`"+n+"`") {
			t.Errorf("README.md, ### run: scenario `%s` is not described", n)
		}
	}
	// The scenario defaults check's config property holds the code to.
	rd, pd := properties.ReadDefaults, properties.ParallelReadDefaults
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if want := fmt.Sprintf("(by default %d client, %d reads of %d KiB, %d blocks of %d MiB), `--pattern random|sequential` (%s)",
		rd.Clients, rd.Ops, rd.ReadSize>>10, rd.Blocks, rd.BlockSize>>20, rd.Pattern); !strings.Contains(flat(run), want) {
		t.Errorf("README.md, ### run: read's defaults are not documented as %q", want)
	}
	if want := fmt.Sprintf("a %d KiB file on two datanodes; %d readers,", pd.FileSize>>10, pd.Readers); pd.Files != 1 || !strings.Contains(flat(readmeSection(readme, "### bench")), want) ||
		!strings.Contains(flat(readmeSection(readme, "### bench")), fmt.Sprintf("%d reads per reader", pd.Iterations)) {
		t.Errorf("README.md, ### bench: hdfs-941's defaults are not documented as %q and %d reads per reader", want, pd.Iterations)
	}
	for _, code := range []string{"0 success", "1 a check", "2 bad usage", "3 a run hit a resource limit", "130 check or mutate was interrupted"} {
		if !strings.Contains(strings.Join(strings.Fields(block), " "), code) {
			t.Errorf("README.md, ## Commands: exit code %q is not documented", code)
		}
	}
}

// readmeSection is the text under heading up to the next heading of the
// same or a higher level.
func readmeSection(readme, heading string) string {
	i := strings.Index(readme, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := readme[i+len(heading)+2:]
	level := strings.Count(strings.Fields(heading)[0], "#")
	for j := 0; j < len(rest); {
		k := strings.Index(rest[j:], "\n#")
		if k < 0 {
			break
		}
		at := j + k + 1
		h := strings.Fields(rest[at:])[0]
		if strings.Trim(h, "#") == "" && len(h) <= level {
			return rest[:at]
		}
		j = at
	}
	return rest
}

// flagDiff says which flags one synopsis has that the other lacks.
func flagDiff(readme, help string) string {
	re := regexp.MustCompile(`--[a-z0-9-]+`)
	set := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, f := range re.FindAllString(s, -1) {
			m[f] = true
		}
		return m
	}
	r, h := set(readme), set(help)
	var missing, extra []string
	for _, f := range re.FindAllString(help, -1) {
		if !r[f] {
			missing = append(missing, f)
		}
	}
	for _, f := range re.FindAllString(readme, -1) {
		if !h[f] {
			extra = append(extra, f)
		}
	}
	switch {
	case len(missing)+len(extra) == 0:
		return "(same flags: placeholders or order differ; copy the help line)"
	case len(extra) == 0:
		return "README lacks " + strings.Join(missing, " ")
	case len(missing) == 0:
		return "README has " + strings.Join(extra, " ") + ", which the command does not accept"
	}
	return "README lacks " + strings.Join(missing, " ") + "; README has " + strings.Join(extra, " ") + ", which the command does not accept"
}

// Every document a file of the repository points to is in the
// repository: markdown links, and paths ending in .md in comments and
// docs.
func TestDocReferencesResolve(t *testing.T) {
	root := "../.."
	ref := regexp.MustCompile(`(?:\]\(|[\s(` + "`" + `])((?:\.\./|\./)?[A-Za-z0-9_./-]*[A-Za-z0-9_-]+\.md)\b`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			candidates := []string{filepath.Join(root, target), filepath.Join(filepath.Dir(path), target)}
			found := false
			for _, c := range candidates {
				rel, err := filepath.Rel(root, c)
				if err != nil || strings.HasPrefix(rel, "..") {
					continue // outside the repository does not count
				}
				if _, err := os.Stat(c); err == nil {
					found = true
				}
			}
			if !found {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s refers to %s, which is not in the repository", rel, target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A window that saw no work is not a measurement of none: run pairs and
// run rpc printed rates of 0 with exit 0.
func TestRunWindowWithoutWorkFails(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "pairs", "--window", "1us"}, "xceiver: run pairs: no exchange completed in the 1µs window (8 of 8 clients saw none): lengthen --window\n"},
		{[]string{"run", "rpc", "--duration", "1us"}, "xceiver: run rpc: no call completed in the 1µs window after 50ms of warm-up: lengthen --duration or --warmup\n"},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		if code != exitFail || stdout != "" || stderr != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// --profile embedded names no file, even beside a file called embedded:
// a trace or plot of that name is not refused as overwriting the profile.
func TestEmbeddedProfileIsNoFile(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("embedded", []byte("an old trace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("run", "tcp-pattern", "--ops", "2", "--profile", "embedded", "--trace", "embedded")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile("embedded"); err != nil || !bytes.HasPrefix(b, []byte("{")) {
		t.Errorf("the trace was not written to ./embedded: %q, %v", b[:min(len(b), 40)], err)
	}
}

// An output flag never writes over a trace: given a trace's name by a
// slip, replay --html, run --trace, calibrate --out and check
// --cpuprofile destroyed it (the page, the event stream or the profile
// took its place).
func TestOutputFlagsSpareTraces(t *testing.T) {
	dir := t.TempDir()
	for _, src := range []string{"../../traces/corpus/HDFS-3359.trace", "../../traces/corpus/rpc/HADOOP-6723.json"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"replay", "../../traces/corpus/HDFS-4911.trace", "--html", dst},
			{"run", "tcp-pattern", "--ops", "5", "--trace", dst},
			{"calibrate", "--out", dst},
			{"check", "--seeds", "1", "--cpuprofile", dst},
		} {
			code, _, errs := runCLI(args...)
			if want := dst + " is a trace (replay reads it); name another file"; code != exitUsage || !strings.Contains(errs, want) {
				t.Errorf("%v: exit %d, %q; want 2 and %q", args, code, errs, want)
			}
			if now, _ := os.ReadFile(dst); !bytes.Equal(now, b) {
				t.Fatalf("%v changed %s", args, dst)
			}
		}
	}
}
