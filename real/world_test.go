package real

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"xceiver/model"
)

// The tests in this package are not parallel: World.CheckFDs and the leak
// check in World.Close compare against the whole OS process.

// newWorld makes a world that the test closes at the end, failing if
// Close finds leaks.
func newWorld(t *testing.T) *World {
	t.Helper()
	w, err := New(Config{Seed: 1, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil && !errors.Is(err, ErrWorldClosed) {
			t.Errorf("World.Close: %v", err)
		}
	})
	return w
}

func spawn(t *testing.T, w *World, name string, limit int, main func(p model.Process)) model.Process {
	t.Helper()
	p, err := w.Spawn(name, model.ProcessConfig{FDLimit: limit}, main)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, w *World, limit time.Duration) {
	t.Helper()
	if err := w.Run(limit); err != nil {
		t.Fatal(err)
	}
}

// failf fails the world from a callback; the test sees it from Run.
func failf(p model.Process, format string, args ...any) {
	p.World().Fail(fmt.Errorf(format, args...))
}

func TestInterfaces(t *testing.T) {
	var _ model.World = (*World)(nil)
	var _ model.Process = (*process)(nil)
	var _ model.Loop = (*loop)(nil)
	var _ model.Timer = (*timer)(nil)
	var _ model.Conn = (*conn)(nil)
	var _ model.Listener = (*listener)(nil)
	var _ model.Disk = (*disk)(nil)
	var _ model.File = (*file)(nil)
	var _ model.WorkerPool = (*pool)(nil)
	var _ model.Lock = (*lock)(nil)
}

func TestNewBadRoot(t *testing.T) {
	if _, err := New(Config{Root: filepath.Join(t.TempDir(), "missing")}); err == nil || !strings.Contains(err.Error(), "world root") {
		t.Errorf("missing root: err = %v, want a world root error", err)
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := t.TempDir()
		os.Chmod(ro, 0o500)
		defer os.Chmod(ro, 0o700)
		if _, err := New(Config{Root: ro}); err == nil {
			t.Errorf("unwritable root: no error")
		}
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := New(Config{Root: f}); err == nil {
		t.Errorf("root is a file: no error")
	}
}

func TestSpawnErrors(t *testing.T) {
	w := newWorld(t)
	for _, name := range []string{"", ".", "..", "a/b"} {
		if _, err := w.Spawn(name, model.ProcessConfig{}, nil); err == nil {
			t.Errorf("Spawn(%q): no error", name)
		}
	}
	spawn(t, w, "dn", 0, nil)
	if _, err := w.Spawn("dn", model.ProcessConfig{}, nil); !errors.Is(err, model.ErrExist) {
		t.Errorf("second Spawn(dn): %v, want ErrExist", err)
	}
	if _, err := w.Spawn("tiny", model.ProcessConfig{FDLimit: 1}, nil); !errors.Is(err, model.ErrTooManyFiles) {
		t.Errorf("Spawn with room for no loop: %v, want ErrTooManyFiles", err)
	}
}

func TestRunStopFailLimit(t *testing.T) {
	w := newWorld(t)
	var ran atomic.Bool
	spawn(t, w, "a", 0, func(p model.Process) {
		ran.Store(true)
		p.MainLoop().AfterFunc(10*time.Millisecond, p.World().Stop)
	})
	if ran.Load() {
		t.Fatal("main ran before Run")
	}
	run(t, w, 5*time.Second)
	if !ran.Load() {
		t.Fatal("main did not run")
	}
	if err := w.Run(20 * time.Millisecond); !errors.Is(err, ErrRunLimit) {
		t.Errorf("Run with nothing to stop it: %v, want ErrRunLimit", err)
	}
	boom := errors.New("boom")
	p := spawn(t, w, "b", 0, func(p model.Process) { p.World().Fail(boom) })
	if err := w.Run(5 * time.Second); !errors.Is(err, boom) {
		t.Errorf("Run after Fail: %v, want boom", err)
	}
	if err := w.Run(time.Second); !errors.Is(err, boom) {
		t.Errorf("second Run after Fail: %v, want boom again", err)
	}
	_ = p
}

func TestPanicFailsWorld(t *testing.T) {
	w := newWorld(t)
	spawn(t, w, "a", 0, func(p model.Process) { panic("model bug") })
	err := w.Run(5 * time.Second)
	if err == nil || !strings.Contains(err.Error(), "model bug") {
		t.Errorf("Run: %v, want the panic", err)
	}
}

func TestTimers(t *testing.T) {
	w := newWorld(t)
	var got []string
	var stopped, late, resetPending, resetStopped bool
	spawn(t, w, "a", 0, func(p model.Process) {
		l := p.MainLoop()
		add := func(d time.Duration, s string) model.Timer {
			return l.AfterFunc(d, func() { got = append(got, s) })
		}
		add(30*time.Millisecond, "d")
		add(10*time.Millisecond, "b")
		add(20*time.Millisecond, "c")
		add(10*time.Millisecond, "b2") // same deadline: creation order
		add(0, "a")
		x := add(15*time.Millisecond, "x")
		stopped = x.Stop()
		resetStopped = x.Reset(35 * time.Millisecond) // armed again, as a new AfterFunc
		r := add(12*time.Millisecond, "r")
		resetPending = r.Reset(20 * time.Millisecond) // after c: its order is a new AfterFunc's
		fired := add(0, "a2")
		l.AfterFunc(5*time.Millisecond, func() { late = fired.Stop() })
		// A timer set from another goroutine wakes the loop.
		go func() { l.AfterFunc(40*time.Millisecond, func() { got = append(got, "e"); p.World().Stop() }) }()
	})
	run(t, w, 5*time.Second)
	if want := "a a2 b b2 c r d x e"; strings.Join(got, " ") != want {
		t.Errorf("timers ran in order %q, want %q", strings.Join(got, " "), want)
	}
	if !stopped {
		t.Errorf("Stop on a pending timer reported false")
	}
	if late {
		t.Errorf("Stop on a fired timer reported true")
	}
	if !resetPending || resetStopped {
		t.Errorf("Reset reported %v on a pending timer, %v on a stopped one; want true, false", resetPending, resetStopped)
	}
}

func TestWorkerPoolPostsToLoop(t *testing.T) {
	w := newWorld(t)
	const n = 200
	var doneCount, postCount int // touched only on the main loop; -race checks it
	var maxParallel atomic.Int32
	spawn(t, w, "a", 0, func(p model.Process) {
		l := p.MainLoop()
		wp := p.NewWorkerPool("io", 4)
		if now, _ := p.Threads(); now != 5 {
			failf(p, "Threads now = %d, want 5 (1 loop + 4 workers)", now)
		}
		var running atomic.Int32
		for i := range n {
			var result int
			wp.Submit(l, func() {
				r := running.Add(1)
				for {
					m := maxParallel.Load()
					if r <= m || maxParallel.CompareAndSwap(m, r) {
						break
					}
				}
				time.Sleep(time.Millisecond)
				result = i * i
				l.Post(func() { postCount++ }) // Post from a worker
				running.Add(-1)
			}, func() {
				if result != i*i {
					failf(p, "done %d saw result %d", i, result)
				}
				doneCount++
				if doneCount == n {
					l.AfterFunc(5*time.Millisecond, func() {
						wp.Close()
						if now, peak := p.Threads(); now != 1 || peak != 5 {
							failf(p, "Threads after Close = %d, %d; want 1, 5", now, peak)
						}
						p.World().Stop()
					})
				}
			})
		}
	})
	run(t, w, 10*time.Second)
	if doneCount != n || postCount != n {
		t.Errorf("done %d, posted %d; want %d each", doneCount, postCount, n)
	}
	if maxParallel.Load() < 2 {
		t.Errorf("at most %d work functions ran at once; want parallel workers", maxParallel.Load())
	}
}

func TestLockAcrossLoops(t *testing.T) {
	w := newWorld(t)
	const per = 500
	counter := 0 // shared by two loops, guarded by the Lock
	spawn(t, w, "client", 0, func(p model.Process) {
		k := p.NewLock("cache")
		l2, err := p.NewLoop("reader2")
		if err != nil {
			failf(p, "NewLoop: %v", err)
			return
		}
		finished := 0 // on the main loop
		for _, l := range []model.Loop{p.MainLoop(), l2} {
			for i := range per {
				k.Do(l, func() {
					counter++
					if i == per-1 {
						p.MainLoop().Post(func() {
							finished++
							if finished == 2 {
								l2.Close()
								p.World().Stop()
							}
						})
					}
				})
			}
		}
	})
	run(t, w, 10*time.Second)
	if counter != 2*per {
		t.Errorf("counter = %d, want %d", counter, 2*per)
	}
}

func TestLoopCloseReleasesFDs(t *testing.T) {
	w := newWorld(t)
	spawn(t, w, "a", 0, func(p model.Process) {
		l2, err := p.NewLoop("l2")
		if err != nil {
			failf(p, "NewLoop: %v", err)
			return
		}
		if s := p.FDs(); s.ByKind[model.FDEpoll] != 2 || s.ByKind[model.FDEventfd] != 2 {
			failf(p, "two loops hold %v", s.ByKind)
		}
		l2.Post(func() {
			l2.Close() // from its own callback: fds go at once
			if s := p.FDs(); s.ByKind[model.FDEpoll] != 1 || s.ByKind[model.FDEventfd] != 1 {
				failf(p, "after closing l2 from its own callback: %v", s.ByKind)
			}
			l2.Post(func() { failf(p, "callback ran on a closed loop") })
			p.MainLoop().AfterFunc(20*time.Millisecond, p.World().Stop)
		})
	})
	run(t, w, 5*time.Second)
	// From outside: an idle loop is stopped and waited for.
	p := spawn(t, w, "b", 0, nil)
	l3, err := p.NewLoop("l3")
	if err != nil {
		t.Fatal(err)
	}
	l3.Close()
	if s := p.FDs(); s.Open != 2 {
		t.Errorf("after closing an idle loop from outside: %d fds open, want 2", s.Open)
	}
	if now, peak := p.Threads(); now != 1 || peak != 2 {
		t.Errorf("Threads = %d, %d; want 1, 2", now, peak)
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}
}

func TestLogging(t *testing.T) {
	var b strings.Builder
	var entries []LogEntry
	w, err := New(Config{Root: t.TempDir(), LogWriter: &b, OnLog: func(e LogEntry) { entries = append(entries, e) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	spawn(t, w, "dn", 0, func(p model.Process) {
		p.Log("op.call", "block", 7, "len", 512)
		p.CPU(model.CPUChecksum, 512)
		p.World().Stop()
	})
	run(t, w, 5*time.Second)
	if len(entries) != 1 || entries[0].Kind != "op.call" || entries[0].Proc != "dn" {
		t.Errorf("entries = %+v", entries)
	}
	if !strings.Contains(b.String(), " dn op.call block=7 len=512\n") {
		t.Errorf("log line %q", b.String())
	}
}

func TestRandSeeded(t *testing.T) {
	draw := func(seed uint64, name string) uint64 {
		w, err := New(Config{Root: t.TempDir(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		p := spawn(t, w, name, 0, nil)
		if p.Rand().IntN(0) != 0 {
			t.Errorf("IntN(0) != 0")
		}
		return p.Rand().Uint64()
	}
	if draw(1, "a") != draw(1, "a") {
		t.Errorf("same seed and name gave different draws")
	}
	if draw(1, "a") == draw(1, "b") || draw(1, "a") == draw(2, "a") {
		t.Errorf("different seed or name gave the same draw")
	}
}

// TestLeakCheck leaves model objects open and checks that Close cleans up
// everything and that fds and goroutines are back to the baseline.
func TestLeakCheck(t *testing.T) {
	g0 := runtime.NumGoroutine()
	fds0, err := listFDs()
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen("tcp", "127.0.0.1:0", 8, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	ln.SetHandler(func() {}) // never accepts: the connection stays queued
	spawn(t, w, "cl", 0, func(p model.Process) {
		p.NewWorkerPool("w", 3)
		p.NewLoop("extra")
		f, err := p.Disk().Open("x", model.ReadWrite|model.Create, model.FDBlockFile)
		if err != nil {
			failf(p, "open: %v", err)
			return
		}
		f.WriteAt([]byte("data"), 0)
		p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			if ev&model.Writable != 0 {
				p.World().Stop()
			}
		})
	})
	run(t, w, 5*time.Second)
	if err := w.CheckFDs(); err != nil {
		t.Errorf("CheckFDs: %v", err)
	}
	// An fd nobody accounts for is caught.
	stray, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CheckFDs(); err == nil || !strings.Contains(err.Error(), "in no process's table") {
		t.Errorf("CheckFDs with a stray fd: %v", err)
	}
	unix.Close(stray)
	root := w.Root()
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("world root still there: %v", err)
	}
	if g := runtime.NumGoroutine(); g > g0 {
		t.Errorf("%d goroutines after Close, %d before New", g, g0)
	}
	fds1, _ := listFDs()
	for fd := range fds1 {
		if !fds0[fd] && !w.baseFDs[fd] {
			t.Errorf("fd %d open after Close", fd)
		}
	}
	if err := w.Close(); !errors.Is(err, ErrWorldClosed) {
		t.Errorf("second Close: %v", err)
	}
	if _, err := w.Spawn("late", model.ProcessConfig{}, nil); !errors.Is(err, ErrWorldClosed) {
		t.Errorf("Spawn after Close: %v", err)
	}
}

// accountingWorld is a world that accounts each callback's CPU
// (Config.AccountCPU), closed when the test ends.
func accountingWorld(t *testing.T) *World {
	t.Helper()
	w, err := New(Config{Seed: 1, Root: t.TempDir(), AccountCPU: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("World.Close: %v", err)
		}
	})
	return w
}

// spin burns d of the calling thread's CPU.
func spin(d time.Duration) {
	for t0 := threadCPU(); time.Duration(threadCPU()-t0) < d; {
	}
}

// With AccountCPU a process is charged what its own callbacks and work
// spent, and nothing of another process's.
func TestAccountCPUChargesTheProcessThatSpent(t *testing.T) {
	w := accountingWorld(t)
	busy := spawn(t, w, "busy", 0, func(p model.Process) {
		spin(20 * time.Millisecond)
		wp := p.NewWorkerPool("w", 1)
		wp.Submit(p.MainLoop(), func() { spin(20 * time.Millisecond) }, func() {
			wp.Close()
			p.World().Stop()
		})
	})
	idle := spawn(t, w, "idle", 0, func(model.Process) {})
	run(t, w, 10*time.Second)
	b, i := CPUTime(busy), CPUTime(idle)
	if b < 40*time.Millisecond || i > 5*time.Millisecond {
		t.Errorf("CPUTime: busy %v (spun 40ms: a callback's 20 and its work's 20), idle %v", b, i)
	}
	// Without it nothing is charged.
	w2 := newWorld(t)
	p := spawn(t, w2, "busy", 0, func(p model.Process) { spin(5 * time.Millisecond); p.World().Stop() })
	run(t, w2, 10*time.Second)
	if c := CPUTime(p); c != 0 {
		t.Errorf("CPUTime without AccountCPU = %v, want 0", c)
	}
}

// ThreadCPU splits the accounted CPU by kind of thread, across processes
// and numbered threads alike, and counts each callback and work item.
func TestThreadCPUByKind(t *testing.T) {
	w := accountingWorld(t)
	var procs []model.Process
	// The two processes' main loops are two goroutines.
	var left atomic.Int32
	left.Store(2)
	for _, name := range []string{"srv-1", "srv-2"} {
		procs = append(procs, spawn(t, w, name, 0, func(p model.Process) {
			sel, err := p.NewLoop("selector-0")
			if err != nil {
				t.Error(err)
				return
			}
			wp := p.NewWorkerPool("worker", 2)
			sel.Post(func() {
				spin(2 * time.Millisecond)
				wp.Submit(sel, func() { spin(3 * time.Millisecond) }, func() {
					wp.Close()
					sel.Close()
					p.MainLoop().Post(func() {
						if left.Add(-1) == 0 {
							p.World().Stop()
						}
					})
				})
			})
		}))
	}
	run(t, w, 10*time.Second)
	got := w.ThreadCPU()
	var names []string
	var sum time.Duration
	for _, k := range got {
		names = append(names, k.Thread)
		sum += k.CPU
	}
	if want := []string{"srv/main", "srv/selector", "srv/worker"}; !slices.Equal(names, want) {
		t.Fatalf("kinds %v, want %v", names, want)
	}
	// main: each process's main and its stop post; selector: the post and
	// the completion; worker: the items.
	if got[0].Callbacks != 4 || got[1].Callbacks != 4 || got[2].Callbacks != 2 {
		t.Errorf("callbacks %d, %d, %d; want 4, 4 and 2", got[0].Callbacks, got[1].Callbacks, got[2].Callbacks)
	}
	if got[1].CPU < 4*time.Millisecond || got[2].CPU < 6*time.Millisecond {
		t.Errorf("selector CPU %v (spun 2 × 2 ms), worker %v (2 × 3 ms)", got[1].CPU, got[2].CPU)
	}
	if all := CPUTime(procs[0]) + CPUTime(procs[1]); sum != all {
		t.Errorf("kinds' CPU %v, the processes' %v: want equal", sum, all)
	}
	// Without AccountCPU nothing is measured.
	if k := newWorld(t).ThreadCPU(); k != nil {
		t.Errorf("ThreadCPU without AccountCPU = %v, want nil", k)
	}
}

// AccountingCost times the accounting wrapper alone: two reads of the
// thread's CPU clock at least, which cost something on any machine, and
// nothing like a scheduler's time slice.
func TestAccountingCost(t *testing.T) {
	if c := AccountingCost(0); c != 0 {
		t.Errorf("AccountingCost(0) = %v, want 0", c)
	}
	c := AccountingCost(2000)
	if c <= 0 || c > 200*time.Microsecond {
		t.Errorf("AccountingCost(2000) = %v a call: want above 0 and far below a time slice", c)
	}
}
