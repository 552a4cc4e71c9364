package sim

import (
	"slices"
	"testing"
	"time"

	"xceiver/model"
)

func TestSlicesAreOrderedWithGapsOfTheirMeans(t *testing.T) {
	cfg := DefaultConfig(3)
	cfg.CPU.SliceOn, cfg.CPU.SliceOff = 300*us, 100*us
	w := New(cfg)
	s := w.hostCPU.slices
	var on, off time.Duration
	prev := window{}
	n := 0
	for at := time.Duration(0); at < 4*time.Second; {
		win := s.at(0, at, at)
		if win.start >= win.end || n > 0 && win.start <= prev.end {
			t.Fatalf("slice %d %+v after %+v: want non-empty, after a gap", n, win, prev)
		}
		if n > 0 {
			off += win.start - prev.end
			on += win.end - win.start
		}
		prev, at, n = win, win.end, n+1
	}
	n--
	if mOn, mOff := on/time.Duration(n), off/time.Duration(n); mOn < 285*us || mOn > 315*us || mOff < 95*us || mOff > 105*us {
		t.Errorf("mean slice %v, gap %v over %d slices; want about 300µs and 100µs", mOn, mOff, n)
	}
}

func TestSlicedCoreRunsCallbacksOnlyInItsSlices(t *testing.T) {
	run := func(on, off time.Duration) (elapsed, cpu time.Duration) {
		cfg := DefaultConfig(1)
		cfg.HostCores = 1
		cfg.CPU.SliceOn, cfg.CPU.SliceOff = on, off
		w := New(cfg)
		p, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
			l := p.MainLoop()
			start := l.Now()
			k := 0
			var step func()
			step = func() {
				p.CPU(model.CPUCopy, 1<<20) // 100 µs at the default 100 ns per KiB
				if k++; k < 2000 {
					l.Post(step)
					return
				}
				elapsed = l.Now() - start
			}
			l.Post(step)
		})
		if err != nil {
			t.Fatal(err)
		}
		w.RunFor(10 * time.Second)
		return elapsed, p.(*Process).CPUTime()
	}
	alone, cpuAlone := run(0, 0)
	shared, cpuShared := run(40*us, 40*us)
	// Half of the core's time is the world's: the same work takes about
	// twice as long, and uses the same CPU. The callbacks are longer than
	// the slices, so they must be preempted for that.
	if r := float64(shared) / float64(alone); r < 1.9 || r > 2.1 {
		t.Errorf("sliced run took %v, alone %v: ratio %.3f, want about 2", shared, alone, r)
	}
	if cpuShared != cpuAlone {
		t.Errorf("CPU used %v sliced, %v alone: want the same", cpuShared, cpuAlone)
	}
	// Slices need both figures: a machine with only one of them (a
	// profile may have either at 0) is a machine alone.
	for _, s := range [][2]time.Duration{{40 * us, 0}, {0, 40 * us}} {
		if elapsed, cpu := run(s[0], s[1]); elapsed != alone || cpu != cpuAlone {
			t.Errorf("slices on %v, off %v: %v (CPU %v), want the machine alone's %v (CPU %v)", s[0], s[1], elapsed, cpu, alone, cpuAlone)
		}
	}
}

func TestWokenThreadPreemptsARunnableOneWaitsForItsSlice(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.HostCores = 1
	cfg.CPU.SliceOn, cfg.CPU.SliceOff = 100*us, 10*ms
	w := New(cfg)
	s := w.hostCPU.slices
	first := s.at(0, 0, 0)
	next := s.at(0, 0, first.end)
	at := first.end + 10*us // inside the gap after the first slice
	var woke, again time.Duration
	_, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		l := p.MainLoop()
		l.AfterFunc(at-l.Now(), func() {
			woke = l.Now()
			// Still runnable: its next callback waits for a slice.
			l.Post(func() { again = l.Now() })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	w.RunFor(100 * ms)
	cb := cfg.CPU.Callback
	if woke != at+cb {
		t.Errorf("timer due at %v (in the gap %v-%v) ran at %v, want at once (+%v)", at, first.end, next.start, woke-cb, cb)
	}
	if again != next.start+cb {
		t.Errorf("the loop's next callback ran at %v, want at the next slice's start %v", again-cb, next.start)
	}
}

// A spin's CPU runs only in its core's slices: finish steps over the gaps
// and busy leaves them out, and both are plain arithmetic on a machine
// alone.
func TestSpinCPUCountsOnlyTheCoresSlices(t *testing.T) {
	// Core 0: slices [0,100) [150,200) [300,400) µs.
	s := &slicer{on: 100 * us, off: 50 * us, cores: [][]window{{{0, 100 * us}, {150 * us, 200 * us}, {300 * us, 400 * us}}}}
	for _, tc := range []struct{ from, d, end time.Duration }{
		{10 * us, 20 * us, 30 * us},   // within a slice
		{90 * us, 20 * us, 160 * us},  // 10 before the gap, 10 after it
		{90 * us, 70 * us, 310 * us},  // across two gaps
		{120 * us, 10 * us, 160 * us}, // from a gap: from the next slice
	} {
		if got := s.finish(0, 0, tc.from, tc.d); got != tc.end {
			t.Errorf("%v of CPU from %v ends at %v, want %v", tc.d, tc.from, got, tc.end)
		}
	}
	for _, tc := range []struct{ from, to, busy time.Duration }{
		{10 * us, 30 * us, 20 * us},
		{90 * us, 160 * us, 20 * us},
		{90 * us, 310 * us, 70 * us},
		{110 * us, 140 * us, 0},
		{50 * us, 50 * us, 0},
	} {
		if got := s.busy(0, 0, tc.from, tc.to); got != tc.busy {
			t.Errorf("the slices cover %v of [%v, %v), want %v", got, tc.from, tc.to, tc.busy)
		}
	}
	var alone *slicer
	if got := alone.finish(0, 0, 90*us, 20*us); got != 110*us {
		t.Errorf("alone: 20µs from 90µs ends at %v, want 110µs", got)
	}
	if got := alone.busy(0, 0, 90*us, 110*us); got != 20*us {
		t.Errorf("alone: [90µs, 110µs) is %v of CPU, want 20µs", got)
	}
}

// On a shared machine a wake-up's CPU spins only on a core that is in one
// of its slices, lasts that much of its slices, and a thread that cuts the
// spin short owes what of it was left in them.
func TestSpinOnASlicedCore(t *testing.T) {
	w := New(stackingConfig(887 * us))
	c := newCPU(w, 2)
	// Core 1: slices [0,100) [150,200) [300,1000) µs; core 0 alone in
	// effect (one long slice).
	c.slices = &slicer{on: 100 * us, off: 50 * us, cores: [][]window{{{0, time.Hour}}, {{0, 100 * us}, {150 * us, 200 * us}, {300 * us, 1000 * us}}}}
	c.spins = true
	w.now = 80 * us
	c.cores[0] = 90 * us // the woken thread's callback ends at 90µs
	c.spinTail(0, 90*us, 20*us)
	if !c.spinning[1] || c.cores[1] != 160*us || c.cores[0] != 90*us {
		t.Fatalf("spin of 20µs from 90µs: core 1 spinning %v until %v, core 0 busy until %v; want core 1 until 160µs (10µs before its gap, 10 after), core 0 until 90µs", c.spinning[1], c.cores[1], c.cores[0])
	}
	// At 95µs a thread takes the spinning core: 15µs of the spin is left
	// (5 before the gap, 10 after it), not the 65 to its end.
	w.now = 95 * us
	if i, ok := c.takeSpinning(w.now, false); !ok || i != 1 || c.owed[1] != 15*us {
		t.Errorf("at 95µs took core %d (%v), owing %v: want core 1, owing 15µs", i, ok, c.owed[1])
	}
	// The same spin at 120µs, in core 1's gap: the core is the other
	// process's, and no thread takes it there.
	c.cores[1], c.spinning[1], c.freeFrom[1], c.spinFrom[1], c.owed[1] = 160*us, true, 0, 90*us, 0
	w.now = 120 * us
	if i, ok := c.takeSpinning(w.now, false); ok {
		t.Errorf("at 120µs took core %d, in its gap", i)
	}
	// A callback ending in core 1's gap: no spin goes there; it stays on
	// the woken thread's core, in that core's slices (core 0's slice
	// ends at 230µs, the next starts at 280µs).
	c.slices.cores[0] = []window{{0, 230 * us}, {280 * us, time.Hour}}
	c.cores[0], c.cores[1], c.spinning[1], c.owed[1] = 220*us, 0, false, 0
	w.now = 210 * us
	c.take(1)
	c.spinTail(0, 220*us, 20*us)
	if c.spinning[1] || c.cores[0] != 290*us {
		t.Errorf("spin from 220µs, core 1 in a gap: core 1 spinning %v, core 0 until %v; want no spin there, core 0 until 290µs (10µs before its gap, 10 after)", c.spinning[1], c.cores[0])
	}
}

// A thread waiting for a core, when the only one it could have spins a
// wake-up's CPU paused in that core's gap, is woken as the core's next
// slice starts and takes the spin then, owing what of it was left; a
// thread just woken takes it in the gap at once, preempting the other
// process, as it may take an idle core there.
func TestSpinPausedInAGap(t *testing.T) {
	setup := func() (*World, *cpu) {
		w := New(stackingConfig(887 * us))
		c := newCPU(w, 2)
		// Core 1: slices [0,100) [150,200) [300,1000) µs.
		c.slices = &slicer{on: 100 * us, off: 50 * us, cores: [][]window{{{0, time.Hour}}, {{0, 100 * us}, {150 * us, 200 * us}, {300 * us, 1000 * us}}}}
		c.spins = true
		w.now = 80 * us
		c.cores[0] = 90 * us
		c.spinTail(0, 90*us, 20*us) // core 1 spins until 160µs, 10µs of it after the gap
		c.cores[0] = 500 * us       // core 0 busy a long time
		w.now = 120 * us            // core 1 in its gap
		return w, c
	}
	w, c := setup()
	ran := time.Duration(-1)
	var arrival uint64
	c.wait(nil, func() { ran = w.now }, &arrival)
	if !c.wakeArmed || c.wakeAt != 150*us {
		t.Fatalf("a waiter at 120µs: wake armed %v at %v, want at 150µs (core 1's next slice)", c.wakeArmed, c.wakeAt)
	}
	w.now = 150 * us
	c.wake()
	if ran != 150*us || c.owed[1] != 10*us {
		t.Errorf("the waiter ran at %v owing %v; want at 150µs, owing 10µs", ran, c.owed[1])
	}
	w, c = setup()
	if i, ok := c.free(&thread{}, true); !ok || i != 1 || c.owed[1] != 10*us {
		t.Errorf("a thread woken at 120µs got core %d (%v), owing %v; want core 1, owing 10µs", i, ok, c.owed[1])
	}
	_, c = setup()
	if i, ok := c.free(&thread{}, false); ok {
		t.Errorf("a runnable thread at 120µs got core %d, in its gap", i)
	}
}

// The rest of a cut spin, paid after the callback that cut it, runs in
// that core's slices too.
func TestOwedSpinRunsInTheCoresSlices(t *testing.T) {
	cfg := stackingConfig(887 * us)
	run := func(slices func(end time.Duration) *slicer, end time.Duration) (time.Duration, time.Duration) {
		w, proc, th := owingProcess(t, cfg)
		if slices != nil {
			proc.cpu.slices = slices(end)
		}
		end = w.runOn(th, 1, func() { proc.CPU(model.CPUParse, int(10*us/cfg.CPU.Parse)) })
		return end, proc.cpu.cores[1]
	}
	end, free := run(nil, 0)
	if free != end+20*us {
		t.Fatalf("alone: core 1 free at %v after a callback ending at %v, want %v", free, end, end+20*us)
	}
	// Core 1's slice ends 5µs after the callback, the next starts 50µs later.
	_, shared := run(func(end time.Duration) *slicer {
		return &slicer{on: time.Hour, off: 50 * us, cores: [][]window{{{0, time.Hour}}, {{0, end + 5*us}, {end + 55*us, time.Hour}}}}
	}, end)
	if want := end + 70*us; shared != want {
		t.Errorf("shared: core 1 free at %v, want %v (5µs of the owed 20 before the gap, 15 after)", shared, want)
	}
}

// Each core's slices are its own: looking one core's far ahead (a spin's
// end, say) leaves another's as they would have been.
func TestCoresSlicesAreDrawnApart(t *testing.T) {
	core1 := func(ahead bool) []window {
		cfg := DefaultConfig(7)
		cfg.CPU.SliceOn, cfg.CPU.SliceOff = 300*us, 100*us
		s := New(cfg).hostCPU.slices
		if ahead {
			s.at(0, 0, 50*ms)
		}
		var ws []window
		for at := time.Duration(0); at < 10*ms; {
			win := s.at(1, 0, at)
			ws = append(ws, win)
			at = win.end
		}
		return ws
	}
	if a, b := core1(false), core1(true); !slices.Equal(a, b) {
		t.Errorf("core 1's slices moved when core 0's were looked up 50ms ahead: %v, then %v", a, b)
	}
}

// Events interleaved into a callback run at later times than the
// callback's own, and the world's time goes back to the callback's after
// them: a slice they saw end is still the callback's to ask about.
func TestSliceSeenEndedInAnInterleaveIsKept(t *testing.T) {
	w := New(stackingConfig(887 * us))
	s := &slicer{w: w, on: 100 * us, off: 50 * us, cores: [][]window{{{90 * us, 140 * us}, {160 * us, 300 * us}, {400 * us, time.Hour}}}}
	// A callback at 100µs; an event interleaved into it at 150µs looks
	// core 0's slices up.
	w.depth = 1
	if win := s.at(0, 150*us, 150*us); win != (window{160 * us, 300 * us}) {
		t.Fatalf("at 150µs: slice %v, want [160µs, 300µs)", win)
	}
	w.depth = 0
	if win := s.at(0, 100*us, 120*us); win != (window{90 * us, 140 * us}) {
		t.Errorf("back in the callback at 100µs, 120µs is in slice %v, want [90µs, 140µs)", win)
	}
}
