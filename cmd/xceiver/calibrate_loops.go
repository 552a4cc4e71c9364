package main

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

// pollerBusy is how long the sender of loopWakes' second probe stays
// busy after each write: longer than a wake-up from the poller takes.
const pollerBusy = 50 * time.Microsecond

// pollerWakes measures the real world's loops waking each other through
// Go's poller (loopWakes): three rounds of each probe, alternating, so
// both see the same moments of a shared machine. The idle probe's hops
// give the wake-up's percentiles; the busy probe's median less the busy
// time is how long a loop waits once the busy writer's processor is free
// (the median of the three rounds). That wait exists only when every
// core is busy: on an idle machine a thread on the free core waits in
// the poller and wakes the reader during the writer's spin, and missed
// comes out 0. The embedded profile's figure was measured under load.
func pollerWakes(p *sim.Profile) error {
	var idle, missed []float64
	for range 3 {
		lat, _, err := loopWakes(300, 0)
		if err != nil {
			return err
		}
		idle = append(idle, lat...)
		lat, _, err = loopWakes(300, pollerBusy)
		if err != nil {
			return err
		}
		missed = append(missed, max(pct(lat, 50, 0)-float64(pollerBusy.Nanoseconds()), 0))
	}
	slices.Sort(idle)
	p.PollerWakeP10Ns, p.PollerWakeP50Ns, p.PollerWakeP90Ns = pct(idle, 10, 0), pct(idle, 50, 0), pct(idle, 90, 0)
	p.PollerMissedNs = median(missed)
	return nil
}

// loopWakes measures a wake-up as the real world's loops take one: they
// park in Go's runtime poller, not in epoll_wait, so neither the old
// eventfd probe (wakeups) nor the hold of a processor by a blocked loop
// (syscallHold) describes them. Two real-world processes, each with its
// loop, bounce a 64-byte message n times over loopback TCP (NODELAY).
// Each hop is timed from the return of the sender's write to the start
// of the receiver's callback: the readiness reaching Go's poller, a
// thread finding the parked goroutine and running it, and the loop's
// dispatch up to the handler. With busy > 0, the sender spins that long
// after each write before its callback returns, so its processor is not
// free: the other must be woken from the poller, as when a handler
// writes several times in one callback.
//
// It returns the hops' latencies, sorted, in ns, and the process CPU per
// hop (both ends' write, read, wake-up, dispatch and Go's scheduler; the
// spin excluded).
func loopWakes(n int, busy time.Duration) (lat []float64, cpu float64, err error) {
	w, err := real.New(real.Config{Seed: 1})
	if err != nil {
		return nil, 0, err
	}
	lat = make([]float64, 0, 2*n)
	var sent atomic.Int64 // wall ns since start of the last write's return
	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) }
	msg := make([]byte, 64)
	// The two loops take turns, but on different goroutines.
	var mu sync.Mutex
	var spun time.Duration
	// hop reads a whole message from c and, unless done, writes one back.
	hop := func(c model.Conn, buf []byte, got *int, entered int64, timed bool) (bool, error) {
		for *got < len(msg) {
			k, err := c.Read(buf[*got:len(msg)])
			if errors.Is(err, model.ErrWouldBlock) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			*got += k
		}
		*got = 0
		if timed {
			mu.Lock()
			lat = append(lat, float64(entered-sent.Load()))
			mu.Unlock()
		}
		return true, nil
	}
	send := func(c model.Conn, spin bool) error {
		if _, err := c.Write(msg); err != nil {
			return err
		}
		sent.Store(since())
		if spin && busy > 0 {
			// The thread's CPU clock times the spin. Async preemption
			// can move a spinning goroutine to another thread, whose
			// clock has nothing to do with this one's (a CI run once
			// read 117 ms of spin in 20 ms of process CPU), so the
			// spin keeps its thread.
			runtime.LockOSThread()
			t, c := time.Now(), threadCPU()
			for time.Since(t) < busy {
			}
			d := threadCPU() - c
			runtime.UnlockOSThread()
			mu.Lock()
			spun += d
			mu.Unlock()
		}
		return nil
	}
	var c0, c1 time.Duration
	var runErr error
	fail := func(p model.Process, err error) {
		if runErr == nil {
			runErr = err
		}
		p.World().Stop()
	}
	_, err = w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
		ln, err := p.Listen("tcp", "127.0.0.1:0", 1, p.MainLoop())
		if err != nil {
			fail(p, err)
			return
		}
		buf, got := make([]byte, len(msg)), 0
		ln.SetHandler(func() {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, model.ErrWouldBlock) {
					fail(p, err)
				}
				return
			}
			c.SetNoDelay(true)
			c.SetHandler(p.MainLoop(), func(ev model.Events) {
				entered := since()
				for {
					done, err := hop(c, buf, &got, entered, true)
					if err != nil || !done {
						if err != nil {
							c.Close()
						}
						return
					}
					if err := send(c, false); err != nil {
						fail(p, err)
						return
					}
				}
			})
		})
		addr := ln.Addr()
		if _, err := w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			cbuf, cgot, left := make([]byte, len(msg)), 0, n
			var c model.Conn
			c, err := cp.Dial("tcp", addr, cp.MainLoop(), func(ev model.Events) {
				entered := since()
				if c0 == 0 {
					if ev&model.Writable == 0 {
						return
					}
					c.SetWriteInterest(false)
					c0 = processCPU()
					if err := send(c, true); err != nil {
						fail(cp, err)
					}
					return
				}
				for {
					done, err := hop(c, cbuf, &cgot, entered, busy == 0)
					if err != nil {
						fail(cp, err)
						return
					}
					if !done {
						return
					}
					if left--; left == 0 {
						c1 = processCPU()
						c.Close()
						cp.World().Stop()
						return
					}
					if err := send(c, true); err != nil {
						fail(cp, err)
						return
					}
				}
			})
			if err != nil {
				fail(cp, err)
				return
			}
			c.SetNoDelay(true)
			c.SetWriteInterest(true)
		}); err != nil {
			fail(p, err)
		}
	})
	if err == nil {
		err = w.Run(time.Minute)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = runErr
	}
	if err == nil && len(lat) < n-1 {
		err = fmt.Errorf("%d of %d hops timed", len(lat), n)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("loop wake-ups: %w", err)
	}
	// The first hops include the connection's set-up.
	lat = lat[min(2, len(lat)):]
	for i := range lat {
		lat[i] = max(lat[i], 0)
	}
	slices.Sort(lat)
	return lat, float64((c1 - c0 - spun).Nanoseconds()) / float64(2*n), nil
}
