package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// On a machine other processes share, the scheduler gives this machine's
// threads a core in slices: runs of about CPUConfig.SliceOn, between
// which other processes have the core for about CPUConfig.SliceOff. A
// thread that stays runnable between slices waits in the run queue, while
// one just woken from sleep preempts the other process (cpu.free); a
// callback still running when its slice ends is preempted and resumes in
// the next. Each core's slices are drawn from its own stream (derived
// from the world's seed), every length uniform in [0, 2×mean): how far
// ahead one core's slices are looked up never moves another's.

// slicer holds each core's slices from now on, in order.
type slicer struct {
	w       *World
	on, off time.Duration
	rngs    []*rand.Rand // one per core
	cores   [][]window
}

type window struct{ start, end time.Duration }

func newSlicer(w *World, n int) *slicer {
	cfg := &w.cfg.CPU
	if cfg.SliceOn <= 0 || cfg.SliceOff <= 0 {
		return nil
	}
	w.slicers++
	s := &slicer{w: w, on: cfg.SliceOn, off: cfg.SliceOff, rngs: make([]*rand.Rand, n), cores: make([][]window, n)}
	for i := range s.cores {
		s.rngs[i] = w.derivedRand(fmt.Sprintf("slices:%d:%d", w.slicers, i))
		// Each core starts part-way into a slice, so the cores are not
		// in step.
		s.cores[i] = []window{{0, s.draw(i, s.on)}}
	}
	return s
}

func (s *slicer) draw(i int, mean time.Duration) time.Duration {
	return 1 + time.Duration(s.rngs[i].Int64N(int64(2*mean)))
}

// at returns the slice of core i that contains t or, if t falls between
// slices, the next one. now is the world's time (t is never earlier):
// slices that ended by then are dropped, but not while events are being
// interleaved into a callback (World.interleaveDue), whose earlier time
// the world goes back to after them. Dropping only saves the walk: the
// slices kept then go at the next lookup outside.
func (s *slicer) at(i int, now, t time.Duration) window {
	ws := s.cores[i]
	k := 0
	if s.w == nil || s.w.depth == 0 {
		for k < len(ws)-1 && ws[k].end <= now {
			k++
		}
	}
	ws = ws[k:]
	for j := 0; ; j++ {
		if j == len(ws) {
			last := ws[len(ws)-1]
			start := last.end + s.draw(i, s.off)
			ws = append(ws, window{start, start + s.draw(i, s.on)})
		}
		if t < ws[j].end {
			s.cores[i] = ws
			return ws[j]
		}
	}
}

// runnable reports when core i, free of this machine's work from t on,
// can next run a thread: t, or the start of its next slice.
func (s *slicer) runnable(i int, now, t time.Duration) time.Duration {
	if s == nil {
		return t
	}
	return max(t, s.at(i, now, t).start)
}

// finish is when d of CPU started on core i at from (from >= now) is
// done, running only in the core's slices: from+d on a machine alone.
// (Small enough to inline: on a machine alone, as check's, it costs
// spinTail a compare.)
func (s *slicer) finish(i int, now, from, d time.Duration) time.Duration {
	if s == nil {
		return from + d
	}
	return s.finishIn(i, now, from, d)
}

func (s *slicer) finishIn(i int, now, from, d time.Duration) time.Duration {
	t := from
	for {
		w := s.at(i, now, t)
		t = max(t, w.start)
		if t+d <= w.end {
			return t + d
		}
		d -= w.end - t
		t = w.end
	}
}

// busy is the time core i's slices cover between from and to (now <=
// from): the CPU a spin running from then to then has left.
func (s *slicer) busy(i int, now, from, to time.Duration) time.Duration {
	if s == nil {
		return max(to-from, 0)
	}
	return s.busyIn(i, now, from, to)
}

func (s *slicer) busyIn(i int, now, from, to time.Duration) time.Duration {
	var sum time.Duration
	for t := from; t < to; {
		w := s.at(i, now, t)
		if w.start >= to {
			break
		}
		sum += min(to, w.end) - max(t, w.start)
		t = w.end
	}
	return sum
}

// noSliceEnd is the slice end of a callback on a machine that is this
// world's alone: charges never reach it, so they never call preempt.
const noSliceEnd = time.Duration(1<<63 - 1)

// preempt moves the running callback's clock past the gaps between
// slices it has run into: its work resumes when its core's next slice
// starts.
func (w *World) preempt() {
	c := w.running.p.cpu
	if c.slices == nil {
		return
	}
	for w.ctx > w.sliceEnd {
		next := c.slices.at(w.core, w.now, w.sliceEnd)
		w.ctx += next.start - w.sliceEnd
		w.sliceWait += next.start - w.sliceEnd
		w.sliceEnd = next.end
	}
}
