package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// Reset is Stop and a new AfterFunc on the same timer: a pending timer
// reset to the deadline of another runs after it (a new timer's order),
// a stopped or fired one runs again, and the process counts each pending
// timer once.
func TestTimerResetIsStopAndAfterFunc(t *testing.T) {
	w := New(DefaultConfig(1))
	var got []string
	var pending, stopped []int
	var counts []int
	runA(t, w, func(p model.Process) {
		l := p.MainLoop()
		add := func(d time.Duration, s string) model.Timer {
			// (Truncated: the callbacks' CPU makes them run a little after.)
			return l.AfterFunc(d, func() { got = append(got, fmt.Sprintf("%s@%v", s, l.Now().Truncate(ms))) })
		}
		count := func() { counts = append(counts, w.Process("a").Resources().Timers) }
		add(10*ms, "b")
		r := add(5*ms, "r")
		x := add(7*ms, "x")
		x.Stop()
		count() // b, r
		if r.Reset(10 * ms) {
			pending = append(pending, 1)
		}
		if !x.Reset(20 * ms) {
			stopped = append(stopped, 1)
		}
		count() // b, r, x
		f := add(0, "f")
		l.AfterFunc(time.Millisecond, func() {
			if !f.Reset(2 * ms) { // fired: runs again at 3 ms
				stopped = append(stopped, 2)
			}
			count() // b, r, x, f
		})
	})
	if want := "f@0s f@3ms b@10ms r@10ms x@20ms"; strings.Join(got, " ") != want {
		t.Errorf("timers ran %q, want %q", strings.Join(got, " "), want)
	}
	if len(pending) != 1 || len(stopped) != 2 {
		t.Errorf("Reset reported pending %v (want [1]) and not pending %v (want [1 2])", pending, stopped)
	}
	if fmt.Sprint(counts) != "[2 3 4]" {
		t.Errorf("pending timers %v, want [2 3 4]", counts)
	}
	checkNoTimers(t, w)
}

// A timer reset after it came due but before its loop ran it runs once,
// at its new deadline: the task it had queued is void (as a stopped
// timer's is). Both timers are due at 1 ms; x, first, resets t.
func TestTimerResetAfterDueVoidsItsQueuedRun(t *testing.T) {
	w := New(DefaultConfig(1))
	var ran []time.Duration
	runA(t, w, func(p model.Process) {
		l := p.MainLoop()
		var tm model.Timer
		l.AfterFunc(ms, func() {
			if !tm.Reset(ms) {
				ran = append(ran, -1) // it had not run: Reset must say so
			}
		})
		tm = l.AfterFunc(ms, func() { ran = append(ran, l.Now().Truncate(ms)) })
	})
	if fmt.Sprint(ran) != "[2ms]" {
		t.Errorf("t ran at %v, want once at 2ms (-1: Reset reported it had run)", ran)
	}
	checkNoTimers(t, w)
}

// A timer that came due but whose loop closed before running it never
// runs, and Stop still reports that its f had not run (true), as the
// real world's does: model.Timer promises "whether f had not yet run".
// Both timers are due at 1 ms; x, first, closes the loop and stops t.
// (Before, Close marked t stopped, and Stop said false.)
func TestTimerStopAfterCloseDroppedItsDueRun(t *testing.T) {
	w := New(DefaultConfig(1))
	var stops []bool
	ran := false
	runA(t, w, func(p model.Process) {
		l, err := p.NewLoop("sel")
		if err != nil {
			t.Error(err)
			return
		}
		var tm model.Timer
		l.AfterFunc(ms, func() {
			l.Close()
			stops = append(stops, tm.Stop(), tm.Stop())
		})
		tm = l.AfterFunc(ms, func() { ran = true })
	})
	if ran || fmt.Sprint(stops) != "[true false]" {
		t.Errorf("t ran: %v; Stop after the close reported %v, want [true false]", ran, stops)
	}
	checkNoTimers(t, w)
}

// A nil callback is dropped, as the real world drops it: Post(nil),
// AfterFunc(d, nil) (a stopped timer) and Lock.Do(l, nil) neither crash
// the run nor leave anything pending. (Before, each was a nil call when
// its turn came.)
func TestNilCallbacksDropped(t *testing.T) {
	w := New(DefaultConfig(1))
	var stopped []bool
	runA(t, w, func(p model.Process) {
		l := p.MainLoop()
		l.Post(nil)
		tm := l.AfterFunc(ms, nil)
		stopped = append(stopped, tm.Stop(), tm.Reset(ms))
		p.NewLock("lk").Do(l, nil)
	})
	if fmt.Sprint(stopped) != "[false false]" {
		t.Errorf("Stop and Reset of AfterFunc(d, nil) reported %v, want a stopped timer's [false false]", stopped)
	}
	checkNoTimers(t, w)
}

// runA runs main as process "a" of w for a second of virtual time.
func runA(t *testing.T, w *World, main func(p model.Process)) {
	t.Helper()
	if _, err := w.Spawn("a", model.ProcessConfig{}, main); err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
}

// checkNoTimers: every timer of process "a" ran or was stopped.
func checkNoTimers(t *testing.T, w *World) {
	t.Helper()
	if n := w.Process("a").Resources().Timers; n != 0 {
		t.Errorf("%d timers pending at the end, want 0", n)
	}
}
