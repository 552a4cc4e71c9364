package model

import "time"

// Deadline is a timer put back far more often than it fires: a read
// timeout re-armed at every message, an op's no-progress timeout at every
// write. It keeps one Timer and Resets it at each arming, where Stop and a
// new AfterFunc would allocate a timer a message; the order it fires in
// is the same either way.
type Deadline struct {
	loop  Loop
	t     Timer
	f     func()
	fireF func() // d.fire, bound once
	armed bool
}

// Arm runs f on loop after d from now, unless Stop or Arm comes first.
func (d *Deadline) Arm(loop Loop, after time.Duration, f func()) {
	d.f = f
	if d.t != nil && d.loop == loop {
		d.t.Reset(after)
		d.armed = true
		return
	}
	if d.armed {
		d.t.Stop()
	}
	if d.fireF == nil {
		d.fireF = d.fire
	}
	d.loop, d.t, d.armed = loop, loop.AfterFunc(after, d.fireF), true
}

// Stop cancels the deadline; it reports whether f had not yet run.
func (d *Deadline) Stop() bool {
	if !d.armed {
		return false
	}
	d.armed = false
	return d.t.Stop()
}

// Armed reports whether the deadline is set and f has not run.
func (d *Deadline) Armed() bool { return d.armed }

func (d *Deadline) fire() {
	d.armed = false
	d.f()
}
