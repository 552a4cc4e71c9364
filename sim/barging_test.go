package sim

import (
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// lockWorld runs one process of four cores with n loops of its own, on
// which setup arms what the test does; wake-ups take 20 µs and no host
// shares the cores. It returns once the world has run.
func lockWorld(t *testing.T, barging bool, n int, setup func(p model.Process, loops []model.Loop)) {
	t.Helper()
	cfg := DefaultConfig(1)
	cfg.HostCores = 0
	cfg.CPU.Wakeup = 20 * time.Microsecond
	cfg.BargingLocks = barging
	w := New(cfg)
	if _, err := w.Spawn("p", model.ProcessConfig{Cores: 4}, func(p model.Process) {
		loops := make([]model.Loop, n)
		for i := range loops {
			l, err := p.NewLoop("t")
			if err != nil {
				w.Fail(err)
				return
			}
			loops[i] = l
		}
		setup(p, loops)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
}

// lockRun starts one process with a loop per start; loop i takes a lock
// (write when writes[i]; a mutex when rw is false) at starts[i] and spends
// 10 µs inside. Wake-ups take 20 µs. It returns when each finished.
func lockRun(t *testing.T, barging, rw bool, writes []bool, starts []time.Duration) ([]time.Duration, int) {
	t.Helper()
	ends := make([]time.Duration, len(starts))
	var barged func() int
	lockWorld(t, barging, len(starts), func(p model.Process, loops []model.Loop) {
		var do func(i int, l model.Loop, f func())
		if rw {
			rwl := p.NewRWLock("ns").(*RWLock)
			barged = func() int { return rwl.Barged }
			do = func(i int, l model.Loop, f func()) {
				if writes[i] {
					rwl.Do(l, f)
				} else {
					rwl.RDo(l, f)
				}
			}
		} else {
			mu := p.NewLock("ns").(*Lock)
			barged = func() int { return mu.Barged }
			do = func(_ int, l model.Loop, f func()) { mu.Do(l, f) }
		}
		for i, l := range loops {
			l.AfterFunc(starts[i]-l.Now(), func() {
				do(i, l, func() {
					p.CPU(model.CPUParse, 50) // 10 µs
					ends[i] = l.Now()
				})
			})
		}
	})
	return ends, barged()
}

// A holder releases with a waiter queued; a third thread comes while the
// woken waiter is still waking. A fair lock makes it wait behind the
// waiter, the lock idle meanwhile; a barging lock lets it in, and the
// woken waiter, finding it taken, waits again and goes next. Both kinds of
// lock, exclusive use.
func TestBargingTakesFreeLockAheadOfWokenWaiter(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	starts := []time.Duration{ms, ms + 2*us, ms + 12*us} // A holds to ~1.010 ms; B waits; C comes at 1.012
	for _, rw := range []bool{false, true} {
		fair, fb := lockRun(t, false, rw, []bool{true, true, true}, starts)
		barge, bb := lockRun(t, true, rw, []bool{true, true, true}, starts)
		if !(fair[0] < fair[1] && fair[1] < fair[2]) || fb != 0 {
			t.Errorf("rw %v: fair ends %v (barged %d): want A, B, C in arrival order", rw, fair, fb)
		}
		if !(barge[0] < barge[2] && barge[2] < barge[1]) || bb != 1 {
			t.Errorf("rw %v: barging ends %v (barged %d): want A, then C ahead of the waking B, then B", rw, barge, bb)
		}
		// C's own timer wake-up (20 µs) and its 10 µs inside, no more.
		if d := barge[2] - starts[2]; d > 31*us {
			t.Errorf("rw %v: C done %v after it came to a free barging lock", rw, d)
		}
		if last, fl := max(barge[0], barge[1], barge[2]), max(fair[0], fair[1], fair[2]); last >= fl {
			t.Errorf("rw %v: barging done at %v, fair at %v: barging must not leave the lock idle while B wakes", rw, last, fl)
		}
	}
}

// A reader does not barge past a writer at the head of the line, woken or
// not: readers cannot starve writers on a barging lock.
func TestBargingReaderYieldsToQueuedWriter(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	// Reader A holds to ~1.010; writer B queues; reader C comes at 1.012
	// while B wakes.
	ends, barged := lockRun(t, true, true, []bool{false, true, false}, []time.Duration{ms, ms + 2*us, ms + 12*us})
	if !(ends[0] < ends[1] && ends[1] < ends[2]) || barged != 0 {
		t.Errorf("ends %v (barged %d): want reader A, writer B, then reader C", ends, barged)
	}
}

// A thread a lock woke goes to the front of the line for a core
// (waitFront), ahead of every arrival; once it has its core, the line is
// in arrival order again: a thread that kept an earlier turn (its
// dispatch waited out a callback of its process, deferDispatch) goes
// ahead of one that became runnable after it. The front is the threads
// put there and still waiting, not every one ever put there. One core,
// busy: A is woken by a lock, B queues, A gets the core, then C, stamped
// before B, queues: the line is C, B.
func TestLineFrontIsOnlyThreadsStillWaiting(t *testing.T) {
	w := New(DefaultConfig(1))
	w.now = ms
	c := newCPU(w, 1)
	c.cores[0] = w.now + 50*us // busy
	var ran []string
	arrC := w.arrive() // C's turn, kept from before B's
	c.waitFront(nil, func() { ran = append(ran, "A"); c.cores[0] = w.now + 10*us })
	c.wait(nil, func() { ran = append(ran, "B") }, new(uint64))
	// The core frees; the line's wake hands it to A, who takes it.
	w.now, c.cores[0] = w.now+50*us, w.now+50*us
	c.wakeArmed, c.wakeAt = true, w.now
	c.wake()
	if len(ran) != 1 || ran[0] != "A" || len(c.waitQ) != 1 {
		t.Fatalf("after the wake: ran %v, %d waiting; want A ran, B waiting", ran, len(c.waitQ))
	}
	turn := arrC
	c.wait(nil, func() { ran = append(ran, "C") }, &arrC)
	if len(c.waitQ) != 2 || c.waitQ[0].arrival != turn {
		var line []uint64
		for _, wt := range c.waitQ {
			line = append(line, wt.arrival)
		}
		t.Errorf("C (arrival %d) queued behind B: line of arrivals %v, want C first", turn, line)
	}
}

// A loop's two Do calls keep their order on every lock, barging or not
// (queuedOn), as a thread's second acquisition of a mutex follows its
// first. Loop B's first Do waits while A holds the lock; B's second is
// queued on B's loop behind a long callback, so it first runs after A
// has released, while the lock is free and its woken waiter still waits
// for its loop. That waiter is B's first Do, or, when C came between A
// and B, C's (B's first Do then still in line): either way B's second
// Do must not go ahead of its first.
func TestLoopsDoCallsKeepTheirOrder(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	for _, barging := range []bool{false, true} {
		for _, rw := range []bool{false, true} {
			for _, withC := range []bool{false, true} {
				var order []string
				lockWorld(t, barging, 3, func(p model.Process, loops []model.Loop) {
					var do func(l model.Loop, f func())
					if rw {
						do = p.NewRWLock("ns").Do
					} else {
						do = p.NewLock("ns").Do
					}
					a, b, c := loops[0], loops[1], loops[2]
					hold := func(name string) func() {
						return func() {
							p.CPU(model.CPUParse, 5)
							order = append(order, name)
						}
					}
					// Each timer's callback runs 20 µs late (a wake-up): A
					// holds the lock from about 1.020 ms to 1.030.
					a.AfterFunc(ms-a.Now(), func() {
						do(a, func() { p.CPU(model.CPUParse, 45); hold("A")() })
					})
					if withC {
						c.AfterFunc(ms+2*us-c.Now(), func() { do(c, hold("C")) })
					}
					b.AfterFunc(ms+3*us-b.Now(), func() {
						do(b, hold("B1")) // waits for A
						b.Post(func() {
							do(b, hold("B2"))          // queued on b behind the rest of this callback
							p.CPU(model.CPUParse, 100) // b busy for 20 µs, past A's release
						})
					})
				})
				want := "A B1 B2"
				if withC {
					want = "A C B1 B2"
				}
				if got := strings.Join(order, " "); got != want {
					t.Errorf("barging %v, rw %v, C %v: the lock was held by %s; want %s", barging, rw, withC, got, want)
				}
			}
		}
	}
}

// A woken waiter that has taken the lock is no longer counted as
// waiting: the same loop's next Do, at a lock nobody holds or wants,
// takes it at once, uncontended (a loop left among the woken would wait
// in line for a hand-off, its own earlier Do long done).
func TestWokenWaiterForgottenOnceItRan(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	for _, rw := range []bool{false, true} {
		var contended func() int
		var again, done time.Duration
		lockWorld(t, true, 2, func(p model.Process, loops []model.Loop) {
			var do func(l model.Loop, f func())
			if rw {
				lk := p.NewRWLock("ns").(*RWLock)
				do, contended = lk.Do, func() int { return lk.Contended }
			} else {
				lk := p.NewLock("ns").(*Lock)
				do, contended = lk.Do, func() int { return lk.Contended }
			}
			a, b := loops[0], loops[1]
			work := func() { p.CPU(model.CPUParse, 50) }
			a.AfterFunc(ms-a.Now(), func() { do(a, work) })
			b.AfterFunc(ms+3*us-b.Now(), func() { do(b, work) }) // waits for A, is woken
			b.AfterFunc(2*ms-b.Now(), func() {
				again = b.Now()
				do(b, func() { work(); done = b.Now() })
			})
		})
		if got := contended(); got != 1 {
			t.Errorf("rw %v: %d contended acquisitions, want 1 (B's first)", rw, got)
		}
		if d := done - again; d <= 0 || d > 11*us {
			t.Errorf("rw %v: B's Do at an idle lock took %v, want its 10 µs inside", rw, d)
		}
	}
}

// A waiter whose thread ended while it waited is passed over, and the
// one behind it gets the lock: A holds, B is handed the lock next, C and
// then D wait behind, and C's loop closes; after B, D goes in. Fair and
// barging locks alike.
func TestRWLockSkipsWaiterWhoseLoopClosed(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	for _, barging := range []bool{false, true} {
		var order []string
		lockWorld(t, barging, 4, func(p model.Process, loops []model.Loop) {
			lk := p.NewRWLock("ns")
			for i, l := range loops {
				name := string(rune('A' + i))
				l.AfterFunc(ms+time.Duration(i)*us-l.Now(), func() {
					lk.Do(l, func() { p.CPU(model.CPUParse, 50); order = append(order, name) })
				})
			}
			// Each callback runs ~20 µs late (a wake-up), so every Do has
			// queued by 1.024 ms; C's thread ends later, before its turn
			// (while the lock passes from A to B).
			loops[3].AfterFunc(ms+26*us-loops[3].Now(), func() { loops[2].Close() })
		})
		if got := strings.Join(order, " "); got != "A B D" {
			t.Errorf("barging %v: the lock was held by %s; want A B D", barging, got)
		}
	}
}
