package model_test

// The loops, timers, locks and worker pools of both worlds against each
// other and against model/world.go's promises. Each test failed on one
// world before its fix (an audit of the seam, 3 December).

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

// A timer armed with a negative delay runs as one armed with 0, in
// creation order among equal deadlines. (Before, the sim's overtook
// timers armed with 0 and ran newest first.)
func TestNegativeDelayTimerOrder(t *testing.T) {
	sameInBoth(t, "A B C")(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		l := p.MainLoop()
		var got []string
		add := func(d time.Duration, s string) {
			l.AfterFunc(d, func() { got = append(got, s) })
		}
		add(0, "A")
		add(-time.Millisecond, "B")
		add(-time.Hour, "C")
		l.AfterFunc(5*time.Millisecond, func() { done(strings.Join(got, " ")) })
	}))
}

// The same with Reset: a timer reset to a negative delay runs as if reset
// to 0, after a zero-delay timer armed before it.
func TestNegativeResetOrder(t *testing.T) {
	sameInBoth(t, "A B")(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		l := p.MainLoop()
		var got []string
		l.AfterFunc(0, func() { got = append(got, "A") })
		b := l.AfterFunc(time.Hour, func() { got = append(got, "B") })
		b.Reset(-time.Millisecond)
		l.AfterFunc(5*time.Millisecond, func() { done(strings.Join(got, " ")) })
	}))
}

// Submit with no work function still posts done. (Before, the sim's
// called the nil function.)
func TestSubmitNilWork(t *testing.T) {
	sameInBoth(t, "done")(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		wp := p.NewWorkerPool("w", 1)
		wp.Submit(p.MainLoop(), nil, func() { done("done") })
	}))
}

// A closed loop's timers, due or not, leave the process's count of
// pending timers (Resources().Timers, which the leak properties compare
// with a baseline) at once, as the real world frees them. (Before, the
// sim kept a timer not yet due counted for good.) Sim only: the real
// world's count is of its timers' heap.
func TestClosedLoopFreesItsTimers(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var pr *sim.Process
	var atClose int
	var stopped bool
	w.Spawn("a", model.ProcessConfig{}, func(p model.Process) {
		pr = p.(*sim.Process)
		l, _ := p.NewLoop("x")
		tm := l.AfterFunc(time.Second, func() {})
		p.MainLoop().AfterFunc(time.Millisecond, func() {
			l.Close()
			atClose = pr.Resources().Timers
			stopped = tm.Stop() // its f never ran
		})
	})
	w.RunFor(10 * time.Millisecond)
	if n := pr.Resources().Timers; atClose != 0 || n != 0 || !stopped {
		t.Errorf("sim: %d timers pending after the loop closed and %d after a Stop, want 0 (Stop: %v, want true)", atClose, n, stopped)
	}
}

// Loop.Close: "Callbacks pending on it are dropped". Loop A has a Lock.Do
// waiting for the lock, which loop B holds; B closes A and releases the
// lock: A's f never runs. (Before, the real world's ran it after Close
// returned: A's goroutine was blocked on the mutex inside a callback.)
// B posts that it has closed A to the main loop, which then, a while
// later (time for A's waiter to run if it were going to), reads under the
// lock whether f ran: nothing is read on a timer that B may not have met.
func TestLockWaiterDroppedWithItsLoop(t *testing.T) {
	sameInBoth(t, "closed; fA ran: false")(untilDone(t, model.ProcessConfig{Cores: 2}, func(p model.Process, done func(string)) {
		lk := p.NewLock("k")
		la, _ := p.NewLoop("A")
		lb, _ := p.NewLoop("B")
		main := p.MainLoop()
		ran := false // written by A under the lock, if ever
		var a string // A's goroutine (real)
		la.Post(func() {
			a = goroutineID()
			lb.Post(func() {
				lk.Do(lb, func() {
					lk.Do(la, func() { ran = true })
					state := "closed"
					if p.World().Kind() == "real" {
						// A now blocks on the mutex, inside its callback.
						if !waitParked("sync.Mutex.Lock", "xceiver/real.(*lock).Do", a) {
							state = "A never waited"
						}
					} else {
						p.CPU(model.CPUParse, 5000)
					}
					la.Close()
					main.Post(func() {
						main.AfterFunc(50*time.Millisecond, func() {
							lk.Do(main, func() { done(fmt.Sprintf("%s; fA ran: %v", state, ran)) })
						})
					})
				})
			})
		})
	}))
}

// RWLock: "Waiters are served in arrival order". W1 holds the lock; W2
// then R arrive and wait: W2 goes first. (Before, the real world's
// sync.RWMutex woke the waiting readers first at Unlock.) W1 queues R only
// once W2 waits, and lets go only once R waits too. In the real world a
// waiting loop is blocked inside its callback and can post nothing, so
// the witness that it waits is the runtime: its goroutine parked in the
// lock's acquire; the sim's loops run W1 through in virtual time.
func TestRWLockArrivalOrder(t *testing.T) {
	sameInBoth(t, "W2 R")(untilDone(t, model.ProcessConfig{Cores: 4}, func(p model.Process, done func(string)) {
		lk := p.NewRWLock("ns")
		l1, _ := p.NewLoop("L1")
		l2, _ := p.NewLoop("L2")
		l3, _ := p.NewLoop("L3")
		main := p.MainLoop()
		var mu = make(chan struct{}, 1) // guards got across real loops
		var got []string
		reported := false
		report := func() { // on the main loop
			if !reported {
				reported = true
				mu <- struct{}{}
				s := strings.Join(got, " ")
				<-mu
				done(s)
			}
		}
		add := func(s string) {
			mu <- struct{}{}
			got = append(got, s)
			n := len(got)
			<-mu
			if n == 2 {
				main.Post(report)
			}
		}
		var w2, r string               // L2's and L3's goroutines (real)
		waiting := func(g ...string) { // until the goroutines g wait for the lock
			if p.World().Kind() == "real" {
				if !waitParked("chan receive", "xceiver/real.(*rwlock).acquire", g...) {
					add(fmt.Sprintf("(no %d waiters)", len(g)))
				}
			} else {
				p.CPU(model.CPUParse, 1000) // 200 µs
			}
		}
		l2.Post(func() {
			w2 = goroutineID()
			l3.Post(func() {
				r = goroutineID()
				l1.Post(func() {
					lk.Do(l1, func() {
						lk.Do(l2, func() { add("W2") })
						waiting(w2)
						lk.RDo(l3, func() { add("R") })
						waiting(w2, r)
					})
				})
			})
		})
		main.AfterFunc(3*time.Second, report) // the failure path: a waiter never ran
	}))
}

// model.Lock: "two Do calls on one loop keep their order in both worlds".
// Loop B holds the lock for 1 ms of CPU; meanwhile loop A calls Do(f1),
// posts a 2 ms callback h, then Do(f2). Real runs f1 before f2 (posted
// callbacks run in order); the sim with BargingLocks (used by the
// short-circuit scenario tests and scbench/rpc --barging) lets f2 barge
// ahead of f1's wake-up.
func TestLockDoOrderOnOneLoop(t *testing.T) {
	scenario := func(w model.World, rw bool, done func(string)) {
		w.Spawn("a", model.ProcessConfig{Cores: 2}, func(p model.Process) {
			var lk model.Lock = p.NewLock("k")
			if rw {
				lk = p.NewRWLock("k")
			}
			la, _ := p.NewLoop("A")
			lb, _ := p.NewLoop("B")
			var got []string
			lb.Post(func() {
				lk.Do(lb, func() { p.CPU(model.CPUParse, 5000) }) // 1 ms held
			})
			la.AfterFunc(100*time.Microsecond, func() {
				lk.Do(la, func() { got = append(got, "f1") })
				la.Post(func() { p.CPU(model.CPUParse, 10000) }) // 2 ms
				lk.Do(la, func() {
					got = append(got, "f2")
				})
				la.AfterFunc(20*time.Millisecond, func() { done(strings.Join(got, " ")) })
			})
		})
	}
	for _, c := range []struct{ barging, rwlock bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		barging := c.barging
		rw := c.rwlock
		cfg := sim.DefaultConfig(1)
		cfg.BargingLocks = barging
		sw := sim.New(cfg)
		var simGot, realGot string
		scenario(sw, rw, func(s string) { simGot = s })
		sw.RunFor(time.Second)
		rwd, err := real.New(real.Config{Seed: 1, Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		scenario(rwd, rw, func(s string) { realGot = s; rwd.Stop() })
		if err := rwd.Run(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		rwd.Close()
		t.Logf("barging=%v rwlock=%v", barging, rw)
		sameInBoth(t, "f1 f2")(simGot, realGot)
	}
}

// Stop: "asks Run to return once the current callback finishes". A loop
// that keeps posting to itself runs no callback after the one that called
// Stop. (Before, the real world's loops ran on until Run woke and closed
// the gate: 1 run in 20 with GOMAXPROCS=2 counted 101.)
func TestNoCallbackAfterStop(t *testing.T) {
	run := func(w model.World) (n int) {
		w.Spawn("a", model.ProcessConfig{}, func(p model.Process) {
			l := p.MainLoop()
			var tick func()
			tick = func() {
				n++
				if n == 100 {
					w.Stop()
				}
				l.Post(tick)
			}
			l.Post(tick)
		})
		if err := w.Run(5 * time.Second); err != nil {
			t.Error(err)
		}
		return n
	}
	sn := run(sim.New(sim.DefaultConfig(1)))
	// The race is narrow (1 run in 60 before the fix, pinned to one CPU
	// with GOMAXPROCS=2): 40 worlds give it a fair chance.
	rn := 0
	for range 40 {
		rw, err := real.New(real.Config{Seed: 1, Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		rn = max(rn, run(rw))
		rw.Close()
	}
	sameInBoth(t, "100")(fmt.Sprint(sn), fmt.Sprint(rn))
}

// waitParked waits, for 1 s at most, until each of the goroutines gs is
// parked in state (as runtime.Stack names it, "chan receive") with a
// frame of fn on its stack, and reports whether they were: in the real
// world, the only witness that a loop has reached a lock's wait, for it
// is blocked inside its callback and can post nothing. Goroutines are
// named by id (goroutineID, taken on the loop beforehand): another
// world's loop still parked in the same place must not count.
func waitParked(state, fn string, gs ...string) bool {
	buf := make([]byte, 1<<16)
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		k := runtime.Stack(buf, true)
		for k == len(buf) {
			buf = make([]byte, 2*len(buf))
			k = runtime.Stack(buf, true)
		}
		parked := 0
		for _, g := range strings.Split(string(buf[:k]), "\n\n") {
			head, _, _ := strings.Cut(g, "\n")
			if slices.Contains(gs, stackGoroutine(head)) && strings.Contains(head, "["+state) && strings.Contains(g, "\n"+fn) {
				parked++
			}
		}
		if parked == len(gs) {
			return true
		}
		if time.Since(start) > time.Second {
			return false
		}
	}
}

// goroutineID is the calling goroutine's id, as runtime.Stack prints it.
func goroutineID() string {
	var buf [64]byte
	return stackGoroutine(string(buf[:runtime.Stack(buf[:], false)]))
}

// stackGoroutine is the id in a runtime.Stack goroutine header
// ("goroutine 7 [chan receive]:").
func stackGoroutine(head string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(head, "goroutine "), " ")
	return id
}
