package sim

import (
	"slices"
	"time"

	"xceiver/model"
)

// RWLock is a modelled read-write lock shared by a process's loops. Like
// Lock, a callback holds it for the virtual time it spends inside; readers
// overlap one another, a writer holds it alone. Waiters are served in
// arrival order (a fair lock): when it frees, a writer at the head gets it
// alone, or every reader at the head of the line gets it together. A waiter
// handed the lock is woken like Lock's (a callback on its loop, ahead of
// other runnable threads), so contention costs wake-ups as well as waits.
// A barging lock (Config.BargingLocks) wakes the waiters instead of
// handing them the lock: a thread that finds it free takes it, a reader
// unless a writer heads the line; the woken that find it taken wait again
// at the head. The reservations then count woken waiters not yet run.
type RWLock struct {
	p         *Process
	name      string
	wUntil    time.Duration // a writer holds it until then
	rUntil    time.Duration // readers hold it until then
	reservedW bool          // handed to a writer that has not run yet
	reservedR int           // readers handed it that have not run yet
	waiters   []rwWaiter
	woken     wokenLoops // barging: loops woken whose tries have not run
	barging   bool
	// Acquisitions, Contended and ReadShared count uses, for experiments;
	// Barged counts acquisitions ahead of a woken waiter (barging only).
	Acquisitions, Contended, Shared, Barged int
}

type rwWaiter struct {
	l     *Loop
	f     func()
	write bool
}

// NewRWLock implements model.Process.
func (p *Process) NewRWLock(name string) model.RWLock {
	return &RWLock{p: p, name: name, barging: p.w.cfg.BargingLocks}
}

// Do implements model.RWLock: f runs holding the lock exclusively.
func (lk *RWLock) Do(loop model.Loop, f func()) { lk.enter(loop, f, true) }

// RDo implements model.RWLock: f runs holding the lock shared.
func (lk *RWLock) RDo(loop model.Loop, f func()) { lk.enter(loop, f, false) }

func (lk *RWLock) enter(loop model.Loop, f func(), write bool) {
	l, ok := loop.(*Loop)
	if !ok || f == nil {
		return
	}
	l.enqueue(task{fn: func() { lk.try(l, f, write, false) }})
}

func (lk *RWLock) try(l *Loop, f func(), write, granted bool) {
	now := lk.p.w.Now()
	if lk.barging {
		lk.tryBarging(l, f, write, granted)
		return
	}
	if granted {
		if write {
			lk.reservedW = false
		} else {
			lk.reservedR--
		}
	} else {
		free := !lk.reservedW && len(lk.waiters) == 0 && now >= lk.wUntil
		if write {
			free = free && lk.reservedR == 0 && now >= lk.rUntil
		}
		if !free {
			lk.Contended++
			lk.waiters = append(lk.waiters, rwWaiter{l, f, write})
			lk.handOff()
			return
		}
	}
	lk.hold(f, write, now)
}

func (lk *RWLock) tryBarging(l *Loop, f func(), write, woken bool) {
	now := lk.p.w.Now()
	if woken {
		if write {
			lk.reservedW = false
		} else {
			lk.reservedR--
		}
		lk.woken.remove(l)
	}
	free := now >= lk.wUntil
	if write {
		free = free && now >= lk.rUntil
	} else if !woken && (lk.reservedW || len(lk.waiters) > 0 && lk.waiters[0].write) {
		free = false // a writer heads the line, woken or not
	}
	if free && !woken && queuedOn(lk.woken, lk.waiters, l) {
		free = false // not ahead of the same loop's earlier Do (queuedOn)
	}
	if !free {
		if woken {
			lk.waiters = slices.Insert(lk.waiters, 0, rwWaiter{l, f, write})
		} else {
			lk.Contended++
			lk.waiters = append(lk.waiters, rwWaiter{l, f, write})
		}
		lk.handOff()
		return
	}
	if lk.reservedW || lk.reservedR > 0 {
		lk.Barged++
	}
	lk.hold(f, write, now)
}

// hold runs f holding the lock (taken at now), then hands it on.
func (lk *RWLock) hold(f func(), write bool, now time.Duration) {
	lk.Acquisitions++
	if !write && now < lk.rUntil {
		lk.Shared++
	}
	f()
	if end := lk.p.w.Now(); write {
		lk.wUntil = end
	} else {
		lk.rUntil = max(lk.rUntil, end)
	}
	lk.handOff()
}

// handOff grants the lock to the head of the line once it frees: a writer
// when readers and writer are done, or the run of readers at the head when
// the writer is done.
func (lk *RWLock) handOff() {
	for len(lk.waiters) > 0 && !lk.reservedW {
		head := lk.waiters[0]
		if head.l.dead() {
			lk.waiters[0] = rwWaiter{}
			lk.waiters = lk.waiters[1:]
			continue
		}
		if head.write {
			if lk.reservedR > 0 {
				return // the granted readers hand off when they have run
			}
			lk.waiters[0] = rwWaiter{}
			lk.waiters = lk.waiters[1:]
			lk.reservedW = true
			lk.grant(head, max(lk.wUntil, lk.rUntil))
			return
		}
		lk.waiters[0] = rwWaiter{}
		lk.waiters = lk.waiters[1:]
		lk.reservedR++
		lk.grant(head, lk.wUntil)
	}
}

func (w rwWaiter) loop() *Loop { return w.l }

func (lk *RWLock) grant(wt rwWaiter, at time.Duration) {
	if lk.barging {
		lk.woken.add(wt.l)
	}
	release := func() {
		if wt.write {
			lk.reservedW = false
		} else {
			lk.reservedR--
		}
		lk.woken.remove(wt.l)
		lk.handOff()
	}
	lk.p.w.at(max(at, lk.p.w.Now()), func() {
		if wt.l.dead() {
			release()
			return
		}
		wt.l.boost = true
		wt.l.enqueue(task{fn: func() { lk.try(wt.l, wt.f, wt.write, true) }, onDrop: release})
	})
}
