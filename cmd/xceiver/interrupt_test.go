package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test run this binary as xceiver itself, for what only a
// separate process shows (a signal's delivery, the exit status): with
// XCEIVER_TEST_ARGS set (its arguments, one per line) it is the command.
func TestMain(m *testing.M) {
	if args := os.Getenv("XCEIVER_TEST_ARGS"); args != "" {
		os.Exit(runProcess(strings.Split(args, "\n")))
	}
	if os.Getenv("XCEIVER_TEST_WATCH") != "" {
		watchChild()
	}
	os.Exit(m.Run())
}

// interruptAfter makes the next check's interrupt watch fire after d, as
// a SIGINT would, and restores the real watch when the test ends.
func interruptAfter(t *testing.T, d time.Duration) {
	t.Helper()
	real := watchInterrupt
	t.Cleanup(func() { watchInterrupt = real })
	watchInterrupt = func(first func(os.Signal)) func() {
		tm := time.AfterFunc(d, func() { first(os.Interrupt) })
		return func() { tm.Stop() }
	}
}

type interruptedResult struct {
	Seeds, Checked, Passed, Failed int
	Interrupted                    bool
	StoppedEarly                   bool `json:"stopped_early"`
	Failures                       []struct{ Seed uint64 }
}

func (r interruptedResult) failedSeeds() []uint64 {
	var seeds []uint64
	for _, f := range r.Failures {
		seeds = append(seeds, f.Seed)
	}
	slices.Sort(seeds)
	return seeds
}

// An interrupted check stops handing out seeds, finishes those running
// and reports them, with exit 130: the seeds it checked are exactly the
// shard's first ones (the same verdicts as a check of only those), and
// the flags it prints check the rest of the shard.
func TestCheckInterruptedChecksAPrefix(t *testing.T) {
	const seeds = 1_000_000_000
	for _, shard := range []string{"1/1", "2/3"} {
		t.Run(strings.ReplaceAll(shard, "/", "of"), func(t *testing.T) {
			interruptAfter(t, 300*time.Millisecond)
			flags := []string{"--bug", "HDFS-3359", "--no-shrink", "--parallel", "2", "--shard", shard, "--out", t.TempDir()}
			var got interruptedResult
			code, stderr := cliJSON(t, &got, append([]string{"check", "--json", "--seed", "7", "--seeds", strconv.Itoa(seeds)}, flags...)...)
			if code != exitInterrupted || !got.Interrupted || got.StoppedEarly {
				t.Fatalf("exit %d, interrupted %v, stopped early %v: %s", code, got.Interrupted, got.StoppedEarly, stderr)
			}
			if got.Checked == 0 || got.Checked != got.Passed+got.Failed || got.Failed != len(got.Failures) {
				t.Fatalf("checked %d = %d passed + %d failed, %d failures listed", got.Checked, got.Passed, got.Failed, len(got.Failures))
			}
			interruptAfter(t, time.Hour)
			var prefix interruptedResult
			i, n, _ := strings.Cut(shard, "/")
			ni, ii := atoi(n), atoi(i)
			// The shard's first Checked seeds are a sweep of (Checked-1)·n+i
			// seeds, shard i/n.
			sweep := (got.Checked-1)*ni + ii
			code, stderr = cliJSON(t, &prefix, append([]string{"check", "--json", "--seed", "7", "--seeds", strconv.Itoa(sweep)}, flags...)...)
			if code != exitFail || prefix.Interrupted || prefix.Checked != got.Checked {
				t.Fatalf("the first %d seeds alone: exit %d, %+v: %s", got.Checked, code, prefix, stderr)
			}
			if !slices.Equal(prefix.failedSeeds(), got.failedSeeds()) || prefix.Passed != got.Passed {
				t.Errorf("interrupted: %d passed, failed %v; its seeds alone: %d passed, failed %v",
					got.Passed, got.failedSeeds(), prefix.Passed, prefix.failedSeeds())
			}

			interruptAfter(t, 300*time.Millisecond)
			code, stdout, _ := runCLI(append([]string{"check", "--seed", "7", "--seeds", strconv.Itoa(seeds)}, flags...)...)
			m := regexp.MustCompile(`(?m)^interrupted \(SIGINT\) after (?:the|shard \d+/\d+'s) first (\d+) of (\d+) seeds; the rest are the same flags with --skip (\d+) \(merge joins the results\)$`).FindStringSubmatch(stdout)
			if code != exitInterrupted || m == nil {
				t.Fatalf("exit %d, no line saying how to go on:\n%s", code, stdout)
			}
			if m[3] != m[1] || m[2] != strconv.Itoa(1+(seeds-ii)/ni) {
				t.Errorf("after %s seeds of %s: --skip %s", m[1], m[2], m[3])
			}
			c := regexp.MustCompile(`(?m)^checked (\d+) seeds .*\n(\d+) passed, (\d+) failed$`).FindStringSubmatch(stdout)
			if c == nil || c[1] != m[1] || atoi(c[2])+atoi(c[3]) != atoi(m[1]) {
				t.Errorf("the closing counts are not the %s seeds checked:\n%s", m[1], stdout)
			}
		})
	}
}

// In the real world the seed running when the interrupt comes is
// finished, its processes and files cleaned up, and the summary is of the
// seeds checked.
func TestRealCheckInterrupted(t *testing.T) {
	interruptAfter(t, time.Second)
	var got interruptedResult
	code, stderr := cliJSON(t, &got, "check", "--world", "real", "--seed", "11", "--seeds", "1000", "--json")
	if code != exitInterrupted || !got.Interrupted || got.Checked == 0 || got.Checked >= 1000 || got.Passed != got.Checked {
		t.Fatalf("exit %d, %+v: %s", code, got, stderr)
	}
}

// A sweep whose shard was interrupted, then resumed with --skip, merges
// into the verdicts of the sweep run whole. Without the rest, merge wants
// --partial, and says which shard is cut short.
func TestInterruptedShardResumedMerges(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"--bug", "HDFS-3359", "--no-shrink", "--seeds", "2000", "--out", dir, "--json"}
	save := func(name string, args ...string) (int, string) {
		t.Helper()
		code, stdout, stderr := runCLI(append(append([]string{"check"}, flags...), args...)...)
		if code != exitFail && code != exitInterrupted {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		return code, path
	}
	interruptAfter(t, time.Hour)
	_, whole := save("whole.json")
	_, s1 := save("s1.json", "--shard", "1/2")
	interruptAfter(t, 150*time.Millisecond)
	code, s2a := save("s2a.json", "--shard", "2/2")
	var cut interruptedResult
	b, _ := os.ReadFile(s2a)
	if err := json.Unmarshal(b, &cut); err != nil || code != exitInterrupted || !cut.Interrupted {
		t.Fatalf("shard 2/2 after 150 ms: exit %d, %v, %+v", code, err, cut)
	}
	interruptAfter(t, time.Hour)
	_, s2b := save("s2b.json", "--shard", "2/2", "--skip", strconv.Itoa(cut.Checked))

	want := fmt.Sprintf("--skip %d", cut.Checked)
	if code, _, stderr := runCLI("merge", s1, s2a); code != exitUsage || !strings.Contains(stderr, "was interrupted after") || !strings.Contains(stderr, want) {
		t.Errorf("merge without the rest: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI("merge", "--partial", s1, s2a)
	if code != exitFail || !strings.Contains(stdout, "interrupted before their last seed (merged with --partial): shard 2/2\n") {
		t.Errorf("merge --partial: exit %d: %s%s", code, stdout, stderr)
	}
	var partial struct {
		Interrupted       bool
		InterruptedShards []string `json:"interrupted_shards"`
	}
	if code, stderr := cliJSON(t, &partial, "merge", "--partial", "--json", s1, s2a); code != exitFail || !partial.Interrupted || !slices.Equal(partial.InterruptedShards, []string{"2/2"}) {
		t.Errorf("merge --partial --json: exit %d, %+v: %s", code, partial, stderr)
	}

	var full, merged interruptedResult
	b, _ = os.ReadFile(whole)
	if err := json.Unmarshal(b, &full); err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]string{{s1, s2a, s2b}, {s2b, s1, s2a}} {
		if code, stderr := cliJSON(t, &merged, append([]string{"merge", "--json"}, order...)...); code != exitFail || merged.Interrupted ||
			merged.Seeds != 2000 || merged.Checked != 2000 || merged.Passed != full.Passed || !slices.Equal(merged.failedSeeds(), full.failedSeeds()) {
			t.Errorf("merged %v: exit %d, %d seeds, %d checked, %d passed (whole: %d), failures equal %v: %s", order, code, merged.Seeds, merged.Checked,
				merged.Passed, full.Passed, slices.Equal(merged.failedSeeds(), full.failedSeeds()), stderr)
		}
	}
	// The shard's pieces ran one after another: their times add up.
	times := map[string]float64{}
	for _, f := range []string{s1, s2a, s2b} {
		var r struct {
			ElapsedS float64 `json:"elapsed_s"`
		}
		b, _ := os.ReadFile(f)
		_ = json.Unmarshal(b, &r)
		times[f] = r.ElapsedS
	}
	var timed struct {
		ElapsedS float64 `json:"elapsed_s"`
	}
	if _, stderr := cliJSON(t, &timed, "merge", "--json", s1, s2a, s2b); timed.ElapsedS != max(times[s1], times[s2a]+times[s2b]) {
		t.Errorf("elapsed %v, want the longer of %v and %v + %v: %s", timed.ElapsedS, times[s1], times[s2a], times[s2b], stderr)
	}

	// An interrupted piece that checked nothing says to go on with the
	// --skip it had: a piece of the shard, counted once, in any order.
	var zero map[string]any
	b, _ = os.ReadFile(s2a)
	if err := json.Unmarshal(b, &zero); err != nil {
		t.Fatal(err)
	}
	zero["checked"], zero["passed"], zero["failed"], zero["sim_events"] = 0.0, 0.0, 0.0, 0.0
	zero["failures"], zero["by_property"], zero["systems"] = []any{}, []any{}, []any{}
	s2z := filepath.Join(dir, "s2z.json")
	b, _ = json.Marshal(zero)
	if err := os.WriteFile(s2z, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]string{{s1, s2z, s2a, s2b}, {s1, s2a, s2z, s2b}} {
		if code, stderr := cliJSON(t, &merged, append([]string{"merge", "--json"}, order...)...); code != exitFail || merged.Seeds != 2000 || merged.Checked != 2000 {
			t.Errorf("merged %v: exit %d, %d seeds, %d checked: %s", order, code, merged.Seeds, merged.Checked, stderr)
		}
	}

	for _, bad := range []struct {
		files []string
		want  string
	}{
		{[]string{s1, s2b}, "skips its first"},
		{[]string{s1, s2a, s2b, s2b}, "again"},
		{[]string{s1, s2a, s2a}, "skips 0 seeds, but"},
	} {
		if code, _, stderr := runCLI(append([]string{"merge"}, bad.files...)...); code != exitUsage || !strings.Contains(stderr, bad.want) {
			t.Errorf("merge %v: exit %d: %s", bad.files, code, stderr)
		}
	}
}

// merge holds an interrupted result to what check writes: fewer seeds
// checked than the shard holds, not stopped early as well, and its
// failures among the seeds it checked.
func TestMergeRefusesForgedInterruptions(t *testing.T) {
	dir := t.TempDir()
	interruptAfter(t, 150*time.Millisecond)
	code, stdout, stderr := runCLI("check", "--json", "--bug", "HDFS-3359", "--no-shrink", "--seeds", "1000000", "--out", dir)
	if code != exitInterrupted {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	fails := r["failures"].([]any)
	if len(fails) == 0 {
		t.Fatal("no failure to forge")
	}
	for _, c := range []struct {
		forge func(r map[string]any)
		want  string
	}{
		{func(r map[string]any) { r["checked"], r["passed"], r["failed"] = r["seeds"], r["seeds"], 0.0 }, "interrupted, yet checked all"},
		{func(r map[string]any) { r["stopped_early"] = true }, "both interrupted and stopped early"},
		{func(r map[string]any) { fails[0].(map[string]any)["seed"] = 999_000.0 }, "not among the seeds the result checked"},
	} {
		var f map[string]any
		if err := json.Unmarshal([]byte(stdout), &f); err != nil {
			t.Fatal(err)
		}
		fails = f["failures"].([]any)
		c.forge(f)
		b, _ := json.Marshal(f)
		path := filepath.Join(dir, "forged.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runCLI("merge", "--partial", path); code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("want %q: exit %d: %s", c.want, code, stderr)
		}
	}
}

// The signal itself, in a process of its own: the first SIGINT ends the
// check after the seeds running, with every failure printed before it in
// the count, and exit 130.
func TestCheckTakesSIGINT(t *testing.T) {
	needSIGINT(t)
	cmd, sc, stderr := child(t, argsEnv("check", "--bug", "HDFS-3359", "--seeds", "1000000000", "--no-shrink", "--parallel", "2", "--out", t.TempDir()))
	// A FAIL line means the check is running, its watch installed.
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "FAIL ") {
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	fails := 1
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
		if strings.HasPrefix(sc.Text(), "FAIL ") {
			fails++
		}
	}
	out := strings.Join(rest, "\n")
	if ws := ended(t, cmd); ws.ExitStatus() != exitInterrupted {
		t.Fatalf("ended %v, want exit %d: %s\n%s", cmd.ProcessState, exitInterrupted, out, stderr.String())
	}
	if !strings.Contains(stderr.String(), "xceiver check: SIGINT: finishing the seeds already running") {
		t.Errorf("stderr: %q", stderr.String())
	}
	m := regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`).FindStringSubmatch(out)
	if m == nil || m[2] != strconv.Itoa(fails) || !strings.Contains(out, "interrupted (SIGINT) after the first ") {
		t.Errorf("%d FAIL lines; summary:\n%s", fails, out)
	}
}

// The watch takes the first signal only: once it has, the next SIGINT
// has its default action and ends the process, however long what the
// first one started takes.
func TestSecondInterruptEndsTheProcess(t *testing.T) {
	needSIGINT(t)
	cmd, sc, _ := child(t, "XCEIVER_TEST_WATCH=1")
	for _, want := range []string{"watching", "first SIGINT"} {
		if !sc.Scan() || sc.Text() != want {
			t.Fatalf("child said %q, want %q", sc.Text(), want)
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}
	if ws := ended(t, cmd); !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("ended %v, want killed by SIGINT", cmd.ProcessState)
	}
}

// watchChild is TestSecondInterruptEndsTheProcess's child: it says when it
// watches and when the first signal came, then works forever.
func watchChild() {
	routeInterrupts(os.Stderr)
	watchInterrupt(func(s os.Signal) { fmt.Println("first " + signalName(s)) })
	fmt.Println("watching")
	select {}
}

// A command that does not report on an interrupt (run, validate, bench)
// still removes the real world's temporary directories before the
// signal ends it.
func TestInterruptRemovesRealScratch(t *testing.T) {
	needSIGINT(t)
	tmp := t.TempDir()
	cmd, _, stderr := child(t, "TMPDIR="+tmp, argsEnv("run", "read", "--world", "real", "--ops", "10000000"))
	eventually(t, "a real world made", func() bool { return realMade(tmp) })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if ws := ended(t, cmd); !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("ended %v, want killed by SIGINT as before", cmd.ProcessState)
	}
	if realMade(tmp) || !strings.Contains(stderr.String(), "xceiver: SIGINT: removed the real world's temporary directories") {
		t.Errorf("left %s; stderr %q", tree(tmp), stderr.String())
	}
}

// A second interrupt, which ends a real-world check at once, removes its
// worlds' temporary directories first too.
func TestSecondInterruptRemovesRealScratch(t *testing.T) {
	needSIGINT(t)
	tmp := t.TempDir()
	cmd, _, stderr := child(t, "TMPDIR="+tmp, argsEnv("check", "--world", "real", "--seeds", "1000"))
	eventually(t, "a real world made", func() bool { return realMade(tmp) })
	_ = cmd.Process.Signal(os.Interrupt)
	eventually(t, "the first SIGINT taken", func() bool { return strings.Contains(stderr.String(), "interrupt again") })
	_ = cmd.Process.Signal(os.Interrupt)
	// Either the second signal ended it, or the seed it was finishing
	// had ended first and it exited with its summary.
	if ws := ended(t, cmd); !(ws.Signaled() && ws.Signal() == syscall.SIGINT) && ws.ExitStatus() != exitInterrupted {
		t.Errorf("ended %v", cmd.ProcessState)
	}
	if realMade(tmp) {
		t.Errorf("a real world's directory left after %v: %s\n%s", cmd.ProcessState, stderr.String(), tree(tmp))
	}
}

// needSIGINT skips a test whose child must take SIGINT: one started with
// it ignored (a background job) leaves it ignored.
func needSIGINT(t *testing.T) {
	if signal.Ignored(os.Interrupt) {
		t.Skip("SIGINT is ignored here (a background job), and so in the child")
	}
}

// argsEnv has TestMain run the child as xceiver with args.
func argsEnv(args ...string) string { return "XCEIVER_TEST_ARGS=" + strings.Join(args, "\n") }

// child starts this test binary again with env added (TestMain makes it
// the command, or the watch's child), its stderr kept; it is killed when
// the test ends.
func child(t *testing.T, env ...string) (*exec.Cmd, *bufio.Scanner, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(stdout), stderr
}

// ended waits up to a minute for cmd to end.
func ended(t *testing.T, cmd *exec.Cmd) syscall.WaitStatus {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("still running a minute after the signal")
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws
}

// eventually waits up to a minute for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not in a minute: %s", what)
		}
	}
}

// realMade reports whether dir holds a real world's directory.
func realMade(dir string) bool {
	made, _ := os.ReadDir(dir)
	return slices.ContainsFunc(made, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "xceiver-real-") })
}

// tree lists what is under dir, for a failure's message.
func tree(dir string) string {
	var paths []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		paths = append(paths, p)
		return nil
	})
	return strings.Join(paths, "\n")
}

// syncBuffer is a bytes buffer for a child's stderr, read while written.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An interrupted mutate stops its go commands, says so and exits 130,
// leaving no scratch directory behind.
func TestMutateInterrupted(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	interruptAfter(t, 300*time.Millisecond)
	start := time.Now()
	code, stdout, stderr := runCLI("mutate", "--packages", "model", "--sample", "2", "--seeds", "30")
	if code != exitInterrupted || !strings.Contains(stderr, "xceiver mutate: interrupted (SIGINT) before the unmutated code was judged") {
		t.Fatalf("exit %d after %v: %s%s", code, time.Since(start), stdout, stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
	interruptAfter(t, 300*time.Millisecond)
	var got struct {
		Judged, Selected int
		Interrupted      bool
		NotJudged        []string `json:"not_judged"`
	}
	if code, stderr := cliJSON(t, &got, "mutate", "--packages", "model", "--sample", "2", "--seeds", "30", "--json"); code != exitInterrupted || !got.Interrupted || got.Judged != 0 || got.Selected != 2 || len(got.NotJudged) != 2 {
		t.Fatalf("--json: exit %d, %+v: %s", code, got, stderr)
	}
	// The IDs are the sample's: --list of the same flags shows them.
	code, list, stderr := runCLI("mutate", "--packages", "model", "--sample", "2", "--list")
	for _, id := range got.NotJudged {
		if code != exitOK || !strings.Contains(list, " "+id+" ") {
			t.Errorf("not judged %s is not in the sample's list (exit %d): %s%s", id, code, list, stderr)
		}
	}
}

// An interrupted check whose summary could not be written did not report
// what it did: exit 1, not 130.
func TestInterruptedSummaryUnwrittenIsAFailure(t *testing.T) {
	interruptAfter(t, 100*time.Millisecond)
	var errb strings.Builder
	code := run([]string{"check", "--seeds", "1000000", "--out", t.TempDir()}, failingWriter{}, &errb)
	if code != exitFail || !strings.Contains(errb.String(), "writing the output") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
