package model

import (
	"testing"
	"time"
)

// A Deadline re-armed many times keeps one timer and fires once, at the
// last arming's deadline; Stop cancels it; on another loop it takes a
// timer there and cancels the first.
func TestDeadlineKeepsOneTimer(t *testing.T) {
	l := &fakeLoop{}
	var d Deadline
	fired := 0
	f := func() { fired++ }
	for i := range 5 {
		l.advance(time.Duration(i) * time.Millisecond)
		d.Arm(l, 10*time.Millisecond, f)
	}
	if len(l.timers) != 1 || !d.Armed() {
		t.Fatalf("%d timers after five armings (want 1), armed %v", len(l.timers), d.Armed())
	}
	l.advance(13 * time.Millisecond)
	if fired != 0 {
		t.Fatalf("fired at 13 ms; the last arming was at 4 ms for 10 ms")
	}
	l.advance(14 * time.Millisecond)
	if fired != 1 || d.Armed() {
		t.Fatalf("at 14 ms: fired %d times (want 1), armed %v (want false)", fired, d.Armed())
	}
	d.Arm(l, time.Millisecond, f)
	if !d.Stop() || d.Stop() || d.Armed() {
		t.Fatalf("Stop on an armed deadline: want true once, then false")
	}
	l.advance(20 * time.Millisecond)
	if fired != 1 {
		t.Fatalf("a stopped deadline fired")
	}
	other := &fakeLoop{now: l.now}
	d.Arm(l, time.Millisecond, f)
	d.Arm(other, time.Millisecond, f)
	l.advance(30 * time.Millisecond)
	other.advance(30 * time.Millisecond)
	if fired != 2 || len(other.timers) != 1 {
		t.Fatalf("moved to another loop: fired %d times (want 2: once, on it), %d timers there", fired, len(other.timers))
	}
}
