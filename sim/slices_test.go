package sim

import (
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
