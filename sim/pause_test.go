package sim

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
)

// A paused process runs no callback until the pause ends, but its kernel
// does its part: a peer's bytes arrive and are acknowledged (the peer's
// send queue drains), and the paused reader gets them all when it wakes.
func TestPauseHoldsCallbacksNotKernel(t *testing.T) {
	h := newPair(t)
	t0 := h.now()
	h.srv.p.Pause(50 * ms)
	h.cli.write(1000)
	h.runTo(t0 + 40*ms)
	if len(h.srv.got) != 0 {
		t.Fatalf("the paused server read %d bytes", len(h.srv.got))
	}
	if c := h.cli.c; c.sndUna != c.sndNxt || c.sndNxt != c.sndEnd {
		t.Errorf("the paused server's kernel left %d bytes unacknowledged", c.sndEnd-c.sndUna)
	}
	h.runTo(t0 + 60*ms)
	if len(h.srv.got) != 1000 {
		t.Errorf("after the pause the server read %d of 1000 bytes", len(h.srv.got))
	}
}

// Timers that come due during a pause, tasks posted to it and work
// items submitted to its pools all wait for its end; a second pause that
// ends later extends it; a restart after a crash is not paused.
func TestPauseHoldsTimersTasksAndWork(t *testing.T) {
	h := newPair(t)
	p := h.srv.p
	t0 := h.now()
	var timerAt, postAt, workAt, doneAt time.Duration
	p.Pause(10 * ms)
	p.Pause(5 * ms) // within the first: no shorter
	loop := p.MainLoop()
	loop.AfterFunc(ms, func() { timerAt = h.now() })
	loop.Post(func() { postAt = h.now() })
	p.NewWorkerPool("w", 1).Submit(loop, func() { workAt = h.now() }, func() { doneAt = h.now() })
	h.runTo(t0 + 20*ms)
	for _, c := range []struct {
		what string
		at   time.Duration
	}{{"timer", timerAt}, {"posted task", postAt}, {"work item", workAt}, {"its completion", doneAt}} {
		if c.at < t0+10*ms {
			t.Errorf("%s ran at +%v, inside the 10 ms pause", c.what, c.at-t0)
		}
	}
	if timerAt == 0 || postAt == 0 || workAt == 0 || doneAt == 0 {
		t.Fatalf("not everything ran after the pause: timer %v, post %v, work %v, done %v", timerAt, postAt, workAt, doneAt)
	}

	p.Pause(time.Second)
	p.Crash()
	p.Restart()
	var ranAt time.Duration
	start := h.now()
	p.MainLoop().Post(func() { ranAt = h.now() })
	h.runTo(start + 10*ms)
	if ranAt == 0 || ranAt-start > ms {
		t.Errorf("a restarted process ran its first task at +%v (0: never), want at once", ranAt-start)
	}
}

// A paused process holds no core: on a shared host with the runtime's
// poller modelled, two busy loops of a stopped process leave the cores to
// another process, whose 1 ms timer keeps ticking through the pause. (A
// loop that had kept its core kept it for the whole pause, and the other
// process's timer did not fire once in 50 ms.)
func TestPauseHoldsNoCore(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.CPU = DefaultProfile().CPU()
	w := New(cfg)
	var busy *Process
	p, err := w.Spawn("busy", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		for i := range 2 {
			l, _ := p.NewLoop(fmt.Sprintf("spin-%d", i))
			var spin func()
			spin = func() { p.CPU(model.CPUCopy, 64<<10); l.Post(spin) }
			l.Post(spin)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	busy = p.(*Process)
	ticks := 0
	if _, err := w.Spawn("other", model.ProcessConfig{}, func(p model.Process) {
		var tick func()
		tick = func() { ticks++; p.MainLoop().AfterFunc(time.Millisecond, tick) }
		p.MainLoop().AfterFunc(time.Millisecond, tick)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(5 * ms); err != nil {
		t.Fatal(err)
	}
	busy.Pause(50 * ms)
	before := ticks
	if err := w.RunFor(50 * ms); err != nil {
		t.Fatal(err)
	}
	if n := ticks - before; n < 40 {
		t.Errorf("another process's 1 ms timer fired %d times during a 50 ms pause of a busy one, want about 50", n)
	}
}

// BusyUntil counts the work items a process's pools started, not only its
// loops' callbacks: a loop that spent 1 ms in a callback at 1 ms and
// handed a worker 5 ms of work is idle from 2 ms, but the process is busy
// until the item ends, and a harness waiting for it (properties' tryHeal,
// which heals only once the datanode has finished what a slow disk
// started) must wait for that.
func TestBusyUntilCountsWorkItems(t *testing.T) {
	w := New(DefaultConfig(1))
	var workEnd, cbEnd time.Duration
	p, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		l := p.MainLoop()
		wp := p.NewWorkerPool("w", 1)
		l.AfterFunc(ms, func() {
			w.charge(ms)
			wp.Submit(l, func() { w.charge(5 * ms); workEnd = w.Now() }, nil)
			cbEnd = l.Now()
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	sp := p.(*Process)
	var at3 time.Duration
	w.At(3*ms, func() { at3 = sp.BusyUntil() })
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if cbEnd > 3*ms || workEnd < 6*ms || at3 != workEnd {
		t.Errorf("at 3 ms, with the loop idle since %v and a work item running until %v, BusyUntil = %v; want the item's end", cbEnd, workEnd, at3)
	}
	if b := sp.BusyUntil(); b != workEnd {
		t.Errorf("at rest BusyUntil = %v, want the item's end %v", b, workEnd)
	}
}
