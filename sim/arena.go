package sim

import "time"

// Arena carries a finished world's send-buffer arrays to the next world.
// check runs thousands of short worlds one after another; without an
// arena each starts with empty free lists and allocates (and zeroes) the
// arrays of its send buffers anew, which was a third of the bytes check
// allocated per seed. An arena is used by one world at a time: UseArena
// before the world runs, ReleaseArena once it is done with.
//
// What a world takes from an arena holds stale bytes from an earlier
// world; the send buffer writes every byte before a segment carries it,
// so no stale byte is ever read and the trace does not depend on what an
// earlier world left.
type Arena struct {
	free  [sndArrayClasses][]*sndArray
	bufs  [sndArrayClasses][][]byte // model buffers (NewBuffer)
	bytes int
}

// ArenaMaxBytes bounds what an arena keeps, so a check's memory stays flat
// however many worlds pass through it.
const ArenaMaxBytes = 32 << 20

// Bytes is what the arena holds for the next world.
func (a *Arena) Bytes() int { return a.bytes }

// UseArena makes the world draw its send-buffer arrays from a, and keep
// track of them for ReleaseArena.
func (w *World) UseArena(a *Arena) { w.arena = a }

// ReleaseArena hands every array the world used back to its arena (up to
// the arena's bound). The world must not run again afterwards: segments
// and connections still pointing into those arrays would share them with
// the next world.
func (w *World) ReleaseArena() {
	a := w.arena
	if a == nil {
		return
	}
	for _, arr := range w.arrays {
		c := sndArrayClass(len(arr.buf))
		if c >= sndArrayClasses || a.bytes+len(arr.buf) > ArenaMaxBytes {
			continue
		}
		arr.refs, arr.live, arr.pooled = 0, false, false
		a.free[c] = append(a.free[c], arr)
		a.bytes += len(arr.buf)
	}
	for _, b := range w.bufs {
		c := sndArrayClass(cap(b))
		if c >= sndArrayClasses || a.bytes+cap(b) > ArenaMaxBytes {
			continue
		}
		a.bufs[c] = append(a.bufs[c], b)
		a.bytes += cap(b)
	}
	w.arena, w.arrays, w.bufs, w.bufBytes = nil, nil, nil, 0
	w.freeSndArrays = [sndArrayClasses][]*sndArray{}
	w.stopped = true
}

// fromArena takes an array of class c from the world's arena, if any.
func (w *World) fromArena(c int) *sndArray {
	a := w.arena
	if a == nil || len(a.free[c]) == 0 {
		return nil
	}
	pool := a.free[c]
	arr := pool[len(pool)-1]
	pool[len(pool)-1] = nil
	a.free[c] = pool[:len(pool)-1]
	a.bytes -= len(arr.buf)
	w.arrays = append(w.arrays, arr)
	return arr
}

// NewBuffer implements model.BufferSource: with an arena, model buffers
// (packet and input buffers) come from the previous worlds' and go back
// with ReleaseArena; without one it is make. The capacity is exactly n,
// as make's, since the data path's memory bounds count capacities.
func (p *Process) NewBuffer(n int) []byte {
	w := p.w
	p.buffersMade++
	// What the real world pays for the allocation (an arena's reuse is
	// the simulator's own saving, not the data path's).
	w.charge(time.Duration(int64(n) * int64(w.cfg.CPU.AllocPerKB) / 1024))
	c := sndArrayClass(n)
	if w.arena == nil || c >= sndArrayClasses {
		return make([]byte, 0, n)
	}
	var b []byte
	if pool := w.arena.bufs[c]; len(pool) > 0 {
		b = pool[len(pool)-1]
		pool[len(pool)-1] = nil
		w.arena.bufs[c] = pool[:len(pool)-1]
		w.arena.bytes -= cap(b)
	} else {
		b = make([]byte, 1<<(sndArrayMinShift+c))
	}
	if w.bufBytes+cap(b) <= ArenaMaxBytes {
		// Kept for the arena only as far as it could take them back:
		// the model drops its buffers as it goes, and a run that made
		// thousands of connections kept every input buffer it ever
		// grew (3 GB; the arena takes back 32 MB at most).
		w.bufs = append(w.bufs, b[:0])
		w.bufBytes += cap(b)
	}
	return b[:0:n]
}
