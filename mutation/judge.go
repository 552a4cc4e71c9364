package mutation

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Verdicts.
const (
	Killed     = "killed"     // the checker (or a unit test) failed, crashed or hung
	Survived   = "survived"   // everything passed: a gap, or an equivalent mutant not yet listed
	Equivalent = "equivalent" // survived, and listed as behaving like the original (with why)
	Invalid    = "invalid"    // does not compile: not a bug anyone ships
)

// What killed a mutant.
const (
	ByCheck        = "check"         // a property failed
	ByCheckCrash   = "check-crash"   // check exited abnormally (a panic outside the harness)
	ByCheckTimeout = "check-timeout" // check ran past the timeout: a hang or a livelock
	ByVet          = "vet"           // go vet of the mutated package failed: CI runs it, so the mutant could not land
	ByTests        = "tests"         // go test of the mutated package (or of Judge.TestPackages) failed
	ByTestsTimeout = "tests-timeout"
)

// Result is the verdict on one mutant.
type Result struct {
	Mutant
	Status  string  `json:"status"`
	By      string  `json:"by,omitempty"`
	Detail  string  `json:"detail,omitempty"` // the failed property and seed, a test, or the compile error
	Reason  string  `json:"equivalent_because,omitempty"`
	Diff    string  `json:"diff"`
	BuildS  float64 `json:"build_s"`
	CheckS  float64 `json:"check_s"`
	TestS   float64 `json:"test_s"` // go vet's and go test's
	Seconds float64 `json:"seconds"`
}

// Judge builds the module with one file overlaid and runs the checker on
// the binary.
type Judge struct {
	Root  string // module root (absolute)
	Work  string // scratch directory, one subdirectory per slot
	Files map[string][]byte
	// Main is the package built and run as the checker, CheckArgs its
	// arguments: `./cmd/xceiver` and `check --seeds N --parallel 1
	// --max-failures 1 --no-shrink`.
	Main      string
	CheckArgs []string
	// BuildFlags go to every go build and go test: -gcflags=PKG=-l for
	// the mutated packages keeps function bodies out of their export
	// data, so a mutant recompiles its own package and relinks, not every
	// package that imports it (about a third of the CPU per mutant).
	BuildFlags   []string
	BuildTimeout time.Duration
	CheckTimeout time.Duration
	Tests        bool // also `go test` the mutated package when the check passes
	// TestPackages are more package directories whose tests run with
	// the mutated package's (Tests): other packages' tests exercise it
	// too (the simulator's and the properties' do model/).
	TestPackages []string
	TestTimeout  time.Duration
	Equivalents  map[string]string

	// groups are the process groups of the commands running (run).
	groups struct {
		sync.Mutex
		live    map[int]bool
		stopped bool // Stop has run: a group started after it is killed
	}
}

// Baseline builds and checks the unmutated module: it must pass, and its
// time sets the default timeouts.
func (j *Judge) Baseline(ctx context.Context, dirs []string) (check, tests time.Duration, err error) {
	dir := filepath.Join(j.Work, "baseline")
	if err := mkdir(dir); err != nil {
		return 0, 0, err
	}
	bin := filepath.Join(dir, "checker")
	if out, err := j.goCmd(ctx, j.BuildTimeout, j.args("build", "-o", bin, j.Main)...); err != nil {
		return 0, 0, fmt.Errorf("building %s: %v: %s", j.Main, err, compileError(out))
	}
	var pkgs []string
	for _, d := range dirs {
		pkgs = append(pkgs, "./"+d)
	}
	if out, err := j.goCmd(ctx, j.BuildTimeout, j.args(append([]string{"vet"}, pkgs...)...)...); err != nil {
		return 0, 0, fmt.Errorf("the unmutated code fails go vet (every mutant would seem killed by it): %v: %s", err, vetFailure(out))
	}
	start := time.Now()
	st, by, detail := j.check(ctx, bin, dir)
	check = time.Since(start)
	if st != Survived {
		return 0, 0, fmt.Errorf("the unmutated code fails the check (%s): %s", by, detail)
	}
	if j.Tests {
		start = time.Now()
		if out, err := j.goCmd(ctx, j.TestTimeout, j.args(append([]string{"test", "-vet=off", "-count=1"}, j.testPatterns(dirs...)...)...)...); err != nil {
			return 0, 0, fmt.Errorf("the unmutated code fails go test: %v: %s", err, testFailure(out))
		}
		tests = time.Since(start)
	}
	return check, tests, os.RemoveAll(dir)
}

// testPatterns are the packages go test runs: dirs, then TestPackages,
// each once.
func (j *Judge) testPatterns(dirs ...string) []string {
	var pkgs []string
	for _, d := range slices.Concat(dirs, j.TestPackages) {
		if !slices.Contains(pkgs, "./"+d) {
			pkgs = append(pkgs, "./"+d)
		}
	}
	return pkgs
}

// Run judges m, using the scratch slot given (one per worker).
func (j *Judge) Run(ctx context.Context, m Mutant, slot int) (r Result) {
	start := time.Now()
	src := j.Files[m.File]
	r = Result{Mutant: m, Diff: m.Diff(src)}
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	dir := filepath.Join(j.Work, fmt.Sprintf("slot%d", slot))
	defer os.RemoveAll(dir)
	if err := mkdir(dir); err != nil {
		r.Status, r.Detail = Invalid, err.Error()
		return r
	}
	// The overlay replaces one file; the rest is built from the tree as
	// it is now, so a tree edited during a run would judge a mix.
	if now, err := os.ReadFile(filepath.Join(j.Root, filepath.FromSlash(m.File))); err != nil || !bytes.Equal(now, src) {
		r.Status, r.Detail = Invalid, m.File+" changed since the mutants were enumerated: do not edit the tree during a run"
		return r
	}
	mutated := filepath.Join(dir, path.Base(m.File))
	overlay := filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(j.Root, filepath.FromSlash(m.File)): mutated}})
	if err := errors.Join(os.WriteFile(mutated, m.Apply(src), 0o644), os.WriteFile(overlay, ov, 0o644)); err != nil {
		r.Status, r.Detail = Invalid, err.Error()
		return r
	}
	bin := filepath.Join(dir, "checker")
	t := time.Now()
	out, err := j.goCmd(ctx, j.BuildTimeout, j.args("build", "-overlay", overlay, "-o", bin, j.Main)...)
	r.BuildS = time.Since(t).Seconds()
	if err != nil {
		r.Status, r.Detail = Invalid, compileError(out)
		if errors.Is(err, context.DeadlineExceeded) {
			r.Detail = "build timed out"
		}
		return r
	}
	t = time.Now()
	r.Status, r.By, r.Detail = j.check(ctx, bin, dir)
	r.CheckS = time.Since(t).Seconds()
	if r.Status == Survived {
		// A swapped format and argument, say, is no bug anyone ships:
		// vet refuses it (go test's own vet runs only a few analyzers,
		// and the tests below run without it).
		t = time.Now()
		out, err := j.goCmd(ctx, j.BuildTimeout, j.args("vet", "-overlay", overlay, "./"+path.Dir(m.File))...)
		r.TestS = time.Since(t).Seconds()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			r.Detail = fmt.Sprintf("go vet ran past %v: not judged by it", j.BuildTimeout)
		case err != nil:
			r.Status, r.By, r.Detail = Killed, ByVet, vetFailure(out)
		}
	}
	if r.Status == Survived && j.Tests {
		t = time.Now()
		out, err := j.goCmd(ctx, j.TestTimeout, j.args(append([]string{"test", "-overlay", overlay, "-vet=off", "-count=1"}, j.testPatterns(path.Dir(m.File))...)...)...)
		r.TestS += time.Since(t).Seconds()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			r.Status, r.By, r.Detail = Killed, ByTestsTimeout, fmt.Sprintf("go test ran past %v", j.TestTimeout)
		case err != nil:
			r.Status, r.By, r.Detail = Killed, ByTests, testFailure(out)
		}
	}
	if why, ok := j.Equivalents[m.ID]; ok {
		if r.Status == Survived {
			r.Status, r.Reason = Equivalent, why
		} else if r.Status == Killed {
			r.Detail += " (listed as equivalent: the list is wrong)"
		}
	}
	return r
}

// check runs the checker binary; exit 1 with a JSON report is a failed
// property, any other failure a crash, running past the timeout a hang.
func (j *Judge) check(ctx context.Context, bin, dir string) (status, by, detail string) {
	ctx, cancel := context.WithTimeout(ctx, j.CheckTimeout)
	defer cancel()
	args := append(append([]string{}, j.CheckArgs...), "--json", "--out", filepath.Join(dir, "failures"))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := j.run(cmd)
	if ctx.Err() == context.DeadlineExceeded {
		return Killed, ByCheckTimeout, fmt.Sprintf("check ran past %v", j.CheckTimeout)
	}
	if err == nil {
		return Survived, "", ""
	}
	var report struct {
		Failures []struct {
			Seed     uint64
			Property string
			Message  string
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && json.Unmarshal(stdout.Bytes(), &report) == nil && len(report.Failures) > 0 {
		f := report.Failures[0]
		return Killed, ByCheck, fmt.Sprintf("%s at seed %d: %s", f.Property, f.Seed, f.Message)
	}
	return Killed, ByCheckCrash, fmt.Sprintf("%v: %s", err, firstLine(stderr.String()))
}

// args puts BuildFlags after the go subcommand.
func (j *Judge) args(a ...string) []string {
	return append(append([]string{a[0]}, j.BuildFlags...), a[1:]...)
}

func (j *Judge) goCmd(ctx context.Context, timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = j.Root
	// rapid writes a fail file into the package's testdata for every
	// property a mutant's tests break, and replays those it finds: in a
	// shared tree one worker's mutant would meet another's counterexample,
	// and judging would leave files in the working tree.
	cmd.Env = append(os.Environ(), "RAPID_NOFAILFILE=1")
	// The go command leaves its go-build directory behind when it is
	// stopped (by an interrupt or a timeout, even asked as a Ctrl-C
	// asks it): kept under Work, it goes when Work does. (go test puts
	// its tests' temporary directories there too: the real world's Unix
	// sockets reach theirs through a short alias.)
	if tmp := filepath.Join(j.Work, "gotmp"); mkdir(tmp) == nil {
		cmd.Env = append(cmd.Env, "GOTMPDIR="+tmp)
	}
	// Stopped, it is stopped as a Ctrl-C stops it: its group (run) gets
	// SIGINT, its compilers and test binaries with it (go test alone
	// waits for its test binary); one that has not gone after WaitDelay
	// is killed.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := j.run(cmd)
	if ctx.Err() != nil {
		return out.Bytes(), ctx.Err()
	}
	return out.Bytes(), err
}

// run runs cmd in a process group of its own, and kills what is left of
// the group once it has ended. Its own group: a Ctrl-C at the terminal
// reaches mutate alone, which stops the command through its context (a
// check that took the signal itself would finish, exit 130 and pass for
// a crash). Killed after: os/exec's WaitDelay kills the leader alone,
// and a go command so killed leaves its compilers or test binary
// running.
func (j *Judge) run(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	j.groups.Lock()
	if j.groups.live == nil {
		j.groups.live = map[int]bool{}
	}
	j.groups.live[pid] = true
	if j.groups.stopped {
		// Started as Stop ran: killed as Stop would have.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	j.groups.Unlock()
	err := cmd.Wait()
	j.groups.Lock()
	delete(j.groups.live, pid)
	// Under the lock, so that Stop never kills a pid this has reaped
	// and dropped (and perhaps the system has given to another).
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	j.groups.Unlock()
	return err
}

// Stop kills every process group the judge has running and removes
// Work, for a process about to end without waiting for them (a second
// interrupt): their members would otherwise outlive it.
func (j *Judge) Stop() {
	j.groups.Lock()
	j.groups.stopped = true
	for pid := range j.groups.live {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	j.groups.Unlock()
	// Nothing makes Work again (mkdir), but what a killed compiler was
	// writing may land during the removal (ENOTEMPTY).
	for try := 0; try < 100 && os.RemoveAll(j.Work) != nil; try++ {
		time.Sleep(time.Millisecond)
	}
}

// mkdir makes dir in a directory that exists (Work): unlike
// os.MkdirAll, it never makes Work again once Stop has removed it. A dir
// already there is no error.
func mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// compileError is the first error the compiler printed (not the "# pkg"
// header).
func compileError(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return firstLine(string(out))
}

// testFailure is the first failing test's line.
func testFailure(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	first := ""
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "--- FAIL") || strings.HasPrefix(l, "panic:") {
			return l
		}
		if first == "" && l != "" {
			first = l
		}
	}
	return first
}

// vetFailure is the first finding in go vet's output (its "# package"
// headers skipped).
func vetFailure(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return "go vet failed"
}

//go:embed equivalent.txt
var defaultEquivalents string

// DefaultEquivalents is the committed list of mutants of model/ judged
// equivalent, each with why.
func DefaultEquivalents() map[string]string {
	m, _ := ParseEquivalents(defaultEquivalents)
	return m
}

// isMutantID reports whether id is written as a mutant's ID is: ten
// lower-case hex digits. Any other ten characters name no mutant, and a
// list holding them would mark nothing equivalent without a word.
func isMutantID(id string) bool {
	if len(id) != 10 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseEquivalents reads lines "ID reason"; # starts a comment.
func ParseEquivalents(s string) (map[string]string, error) {
	m := map[string]string{}
	for i, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		id, why, _ := strings.Cut(l, " ")
		if !isMutantID(id) || strings.TrimSpace(why) == "" {
			// (Quoted and cut short: the line may be megabytes, or binary.)
			if len(l) > 80 {
				l = l[:80] + "…"
			}
			return nil, fmt.Errorf("line %d: want \"ID reason\" with a 10-hex-digit ID, got %q", i+1, l)
		}
		m[id] = strings.TrimSpace(why)
	}
	return m, nil
}
