package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// lockRun starts one process with a loop per start; loop i takes a lock
// (write when writes[i]; a mutex when rw is false) at starts[i] and spends
// 10 µs inside. Wake-ups take 20 µs. It returns when each finished.
func lockRun(t *testing.T, barging, rw bool, writes []bool, starts []time.Duration) ([]time.Duration, int) {
	t.Helper()
	cfg := DefaultConfig(1)
	cfg.HostCores = 0
	cfg.CPU.Wakeup = 20 * time.Microsecond
	cfg.BargingLocks = barging
	w := New(cfg)
	ends := make([]time.Duration, len(starts))
	var mu *Lock
	var rwl *RWLock
	_, err := w.Spawn("p", model.ProcessConfig{Cores: 4}, func(p model.Process) {
		if rw {
			rwl = p.NewRWLock("ns").(*RWLock)
		} else {
			mu = p.NewLock("ns").(*Lock)
		}
		for i := range starts {
			l, err := p.NewLoop("t")
			if err != nil {
				w.Fail(err)
				return
			}
			l.AfterFunc(starts[i]-l.Now(), func() {
				f := func() {
					p.CPU(model.CPUParse, 50) // 10 µs
					ends[i] = l.Now()
				}
				switch {
				case !rw:
					mu.Do(l, f)
				case writes[i]:
					rwl.Do(l, f)
				default:
					rwl.RDo(l, f)
				}
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if rw {
		return ends, rwl.Barged
	}
	return ends, mu.Barged
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
