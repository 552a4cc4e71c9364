package sim

import (
	"bytes"
	"errors"
	"fmt"
)

// The send buffer holds a connection's bytes from sndUna to sndEnd as a
// queue of chunks, each a run of bytes in one array. A segment carries a
// slice of each chunk it spans and holds their arrays until the receiver
// has read them, as an skb holds its pages: the bytes cross the simulated
// wire without being copied. A plain write copies into the connection's fill array (the one
// copy a kernel makes); a shared write (WriteShared) queues the caller's
// own bytes, which the caller has promised never to change, and so costs
// the simulator no copy at all. Both cost the same modelled CPU. Sendfile
// queues a file's bytes the same way (no owner): the file copies its
// array before it changes them.

// ErrSharedWrite is the failure Config.CheckShared reports: bytes handed
// to WriteShared changed before the peer had read them.
var ErrSharedWrite = errors.New("bytes written with WriteShared changed before the peer read them (the writer reused its buffer)")

// sndArray is the memory behind chunks and segments. refs counts the
// chunks queued in a send buffer and the segments delivered and not yet
// read that point into it; an array that is no connection's fill array
// (live) and that nothing holds goes back to the world's pool. A segment
// dropped unread keeps its array out of the pool, which costs memory,
// never correctness.
type sndArray struct {
	buf    []byte
	refs   int
	live   bool
	pooled bool // on a free list: never put there twice
	// A shared array is a caller's buffer (WriteShared) or a file's
	// bytes (sendfile), not the world's: it goes back to a pool of
	// headers, never to the arrays. With Config.CheckShared, a
	// caller's has orig, a copy of its bytes, compared when the last
	// holder lets go, and owner, the writer; a file's has neither (the
	// file copies before it changes them).
	shared bool
	orig   []byte
	owner  *Process
}

// sndArrayClasses are the pooled array sizes: powers of two from 512
// bytes (a request fits) to 128 MiB.
const (
	sndArrayMinShift = 9
	sndArrayClasses  = 19
)

func sndArrayClass(n int) int {
	c := 0
	for n > 1<<(sndArrayMinShift+c) {
		c++
	}
	return c
}

// newSndArray returns an array of at least n bytes, recycled if one is
// free.
func (w *World) newSndArray(n int) *sndArray {
	c := sndArrayClass(n)
	if c < sndArrayClasses {
		if pool := w.freeSndArrays[c]; len(pool) > 0 {
			a := pool[len(pool)-1]
			pool[len(pool)-1] = nil
			w.freeSndArrays[c] = pool[:len(pool)-1]
			a.pooled = false
			return a
		}
		if a := w.fromArena(c); a != nil {
			return a
		}
	}
	a := &sndArray{buf: make([]byte, 1<<(sndArrayMinShift+c))}
	if w.arena != nil {
		w.arrays = append(w.arrays, a)
	}
	return a
}

// sharedArray wraps a caller's bytes (owner's; nil: a file's pages,
// which the file copies before changing, so CheckShared need not watch
// them).
func (w *World) sharedArray(p []byte, owner *Process) *sndArray {
	var a *sndArray
	if n := len(w.freeShared); n > 0 {
		a = w.freeShared[n-1]
		w.freeShared[n-1] = nil
		w.freeShared = w.freeShared[:n-1]
		a.pooled = false
	} else {
		a = &sndArray{shared: true}
	}
	a.buf = p
	if w.cfg.CheckShared && owner != nil {
		a.orig = append(a.orig[:0], p...)
		a.owner = owner
	}
	return a
}

// release drops one hold on a.
func (a *sndArray) release(w *World) {
	if a == nil {
		return
	}
	a.refs--
	a.recycle(w)
}

func (a *sndArray) recycle(w *World) {
	if a.live || a.refs > 0 || a.pooled {
		return
	}
	if a.shared {
		if w.cfg.CheckShared && a.owner != nil && !bytes.Equal(a.buf, a.orig) {
			w.Fail(fmt.Errorf("process %s, a shared write of %d bytes: %w", a.owner.name, len(a.buf), ErrSharedWrite))
		}
		a.buf, a.owner = nil, nil
		if len(w.freeShared) < 256 {
			a.pooled = true
			w.freeShared = append(w.freeShared, a)
		}
		return
	}
	if c := sndArrayClass(len(a.buf)); c < sndArrayClasses && len(w.freeSndArrays[c]) < 256 {
		a.pooled = true
		w.freeSndArrays[c] = append(w.freeSndArrays[c], a)
	}
}

// sndChunk is buf[off:end] of one array.
type sndChunk struct {
	arr      *sndArray
	off, end int
}

// sendQueue is a send buffer's bytes [seq, seq+queued) as chunks; chunks
// before head are acknowledged and gone. cur and curSeq remember where
// the last segment was cut, so cutting the next one does not walk the
// queue from its head.
type sendQueue struct {
	chunks []sndChunk
	head   int
	seq    uint64 // sequence number of chunks[head]'s first byte
	cur    int
	curSeq uint64
	// fill is the array plain writes copy into, fillLen how much of it
	// is written.
	fill    *sndArray
	fillLen int
}

// appendCopy queues a copy of p (a plain write). Successive writes share
// one chunk while they fit in the fill array; bytes already written are
// never written over while anything holds them, since appends only go
// past them, and a full array is left to its holders for a fresh one.
func (q *sendQueue) appendCopy(w *World, p []byte, sndBuf int) {
	if len(p) == 0 {
		return
	}
	if q.fill != nil && q.fill.refs == 0 {
		q.fillLen = 0 // nothing holds any of it: start at its front
	}
	if q.fill == nil || q.fillLen+len(p) > len(q.fill.buf) {
		size := len(p)
		if q.fill != nil {
			// Grow while below the buffer's size, so a busy
			// connection settles on few arrays.
			size = max(size, min(2*len(q.fill.buf), max(sndBuf, len(q.fill.buf))))
		}
		q.setFill(w, w.newSndArray(size))
	}
	start := q.fillLen
	q.fillLen += copy(q.fill.buf[start:], p)
	if n := len(q.chunks); n > q.head {
		if last := &q.chunks[n-1]; last.arr == q.fill && last.end == start {
			last.end = q.fillLen
			return
		}
	}
	q.fill.refs++
	q.chunks = append(q.chunks, sndChunk{arr: q.fill, off: start, end: q.fillLen})
}

// appendShared queues p itself (WriteShared, or sendfile's pages with no
// owner).
func (q *sendQueue) appendShared(w *World, p []byte, owner *Process) {
	if len(p) == 0 {
		return
	}
	a := w.sharedArray(p, owner)
	a.refs++
	q.chunks = append(q.chunks, sndChunk{arr: a, off: 0, end: len(p)})
}

// setFill makes arr the array plain writes copy into, retiring the old
// one (recycled once nothing holds it).
func (q *sendQueue) setFill(w *World, arr *sndArray) {
	if old := q.fill; old != nil {
		old.live = false
		old.recycle(w)
	}
	q.fill, q.fillLen = arr, 0
	if arr != nil {
		arr.live = true
	}
}

// slice returns the n queued bytes from sequence number seq: the first
// chunk's share and the array it is in, and, when the bytes span chunks,
// the rest as pieces of the chunks after it (a segment is one skb, its
// pieces its frags). No byte is copied. The caller takes its own holds
// on the arrays (segment.hold).
func (q *sendQueue) slice(w *World, seq uint64, n int) ([]byte, *sndArray, *segPieces) {
	i, at := q.head, q.seq
	if q.cur >= q.head && q.cur < len(q.chunks) && q.curSeq <= seq {
		i, at = q.cur, q.curSeq
	}
	for {
		ch := &q.chunks[i]
		size := uint64(ch.end - ch.off)
		if seq < at+size {
			break
		}
		at += size
		i++
	}
	q.cur, q.curSeq = i, at
	ch := q.chunks[i]
	start := ch.off + int(seq-at)
	if start+n <= ch.end {
		return ch.arr.buf[start : start+n : start+n], ch.arr, nil
	}
	return ch.arr.buf[start:ch.end:ch.end], ch.arr, q.pieces(w, i+1, n-(ch.end-start))
}

// pieces are the n bytes from the start of chunk i on, for a segment
// that spans chunks (kept out of slice, whose common case is one chunk).
func (q *sendQueue) pieces(w *World, i, n int) *segPieces {
	more := w.newPieces()
	more.n = n
	for k := 0; k < n; i++ {
		ch := q.chunks[i]
		m := min(ch.end-ch.off, n-k)
		more.list = append(more.list, rcvPiece{data: ch.arr.buf[ch.off : ch.off+m : ch.off+m], arr: ch.arr})
		k += m
	}
	return more
}

// segPieces are a segment's bytes after its first slice, when it spans
// chunks of the send queue (a packet's header, copied, then its data,
// sent from the file): each piece holds its array, as an skb's frags hold
// their pages. Gathering them into one array instead was a sixth of the
// CPU of a busy run read (512 clients), every byte of every packet copied
// once more before the read's own copy.
type segPieces struct {
	list []rcvPiece
	n    int // their bytes
}

func (w *World) newPieces() *segPieces {
	if n := len(w.freePieces); n > 0 {
		ps := w.freePieces[n-1]
		w.freePieces[n-1] = nil
		w.freePieces = w.freePieces[:n-1]
		return ps
	}
	return &segPieces{}
}

// putPieces recycles ps once its pieces are queued for reading or let go.
func (w *World) putPieces(ps *segPieces) {
	clear(ps.list)
	ps.list, ps.n = ps.list[:0], 0
	if len(w.freePieces) < 256 {
		w.freePieces = append(w.freePieces, ps)
	}
}

// rcvPiece is bytes of a receive queue, a slice of the sender's array,
// which it holds until they are read. size is what reading its last byte
// frees of the receive buffer: the truesize of its whole segment on the
// segment's last piece, nothing on the others (Linux frees an skb once
// all of it is read).
type rcvPiece struct {
	data []byte
	arr  *sndArray
	size int
}

// ackTo drops the chunks wholly below una.
func (q *sendQueue) ackTo(w *World, una uint64) {
	for q.head < len(q.chunks) {
		ch := &q.chunks[q.head]
		size := uint64(ch.end - ch.off)
		if q.seq+size > una {
			break
		}
		ch.arr.release(w)
		*ch = sndChunk{}
		q.seq += size
		q.head++
	}
	if q.cur < q.head {
		q.cur, q.curSeq = q.head, q.seq
	}
	switch {
	case q.head == len(q.chunks):
		q.chunks, q.head, q.cur = q.chunks[:0], 0, 0
	case q.head >= 32 && q.head >= len(q.chunks)/2:
		n := copy(q.chunks, q.chunks[q.head:])
		clear(q.chunks[n:])
		q.chunks = q.chunks[:n]
		q.cur -= q.head
		q.head = 0
	}
}

// retire gives up the queue of a connection that will never send again:
// its arrays go back to the pool once no unread segment holds them,
// instead of staying with the dead connection.
func (q *sendQueue) retire(w *World) {
	for i := q.head; i < len(q.chunks); i++ {
		q.chunks[i].arr.release(w)
	}
	q.setFill(w, nil)
	q.chunks, q.head, q.cur, q.curSeq = nil, 0, 0, q.seq
}
