package real

import (
	"sync/atomic"
	"testing"
	"time"

	"xceiver/model"
)

// A timer that comes due while the world is parked (between runs) has
// not run; Stop must cancel it and report true, and f must never run.
func TestStopTimerDueWhileParked(t *testing.T) {
	w := newWorld(t)
	p := spawn(t, w, "a", 0, nil)
	var fired atomic.Bool
	tm := p.MainLoop().AfterFunc(5*time.Millisecond, func() { fired.Store(true) })
	time.Sleep(50 * time.Millisecond) // due now; the world has not run
	stopped := tm.Stop()
	p.MainLoop().AfterFunc(30*time.Millisecond, func() { p.World().Stop() })
	run(t, w, 5*time.Second)
	if !stopped || fired.Load() {
		t.Errorf("Stop before any Run reported %v, and f ran afterwards: %v; want true, false", stopped, fired.Load())
	}
}

var _ = model.Readable

// Reset of a timer that came due while the world was parked re-arms it:
// f runs once, d after the Reset (as in the sim, where the due task goes
// stale), not once at the next Run and again after d.
func TestResetTimerDueWhileParked(t *testing.T) {
	w := newWorld(t)
	p := spawn(t, w, "a", 0, nil)
	var fired atomic.Int32
	tm := p.MainLoop().AfterFunc(5*time.Millisecond, func() { fired.Add(1) })
	time.Sleep(50 * time.Millisecond)
	tm.Reset(20 * time.Millisecond)
	p.MainLoop().AfterFunc(80*time.Millisecond, func() { p.World().Stop() })
	run(t, w, 5*time.Second)
	if n := fired.Load(); n != 1 {
		t.Errorf("f ran %d times after one AfterFunc and one Reset, want 1", n)
	}
}
