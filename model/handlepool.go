package model

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// HandlePool shares open block files among a datanode's connections
// (HDFS-918's BlockChannelPool). Handles are refcounted and keyed by block
// and generation stamp; the pool keeps at most Max block-file fds open (a
// handle holds two: data and meta); idle handles are closed least recently
// used first when room is needed, and down to Min after IdleTimeout; a
// handle in use is never closed; handles of a block that was replaced,
// appended to or deleted are retired: closed when their last user leaves
// and never handed out again.
//
// The pool is not safe for concurrent use: a datanode calls it under its
// store lock.
type HandlePool struct {
	store *BlockStore
	cfg   HandlePoolConfig

	byKey   map[handleKey]*Handle
	byBlock map[uint64][]*Handle // every live handle of a block, in open order
	idle    []*Handle            // refs == 0, least recently used first
	open    int                  // block-file fds held (2 per handle)
	waiters []*Waiter            // in arrival order (seq)
	seq     uint64               // of the last new waiter

	// Opened, Reused, Evicted and Waited count events, for experiments.
	Opened, Reused, Evicted, Waited int
	// PeakOpen is the most block-file fds ever open at once.
	PeakOpen int
	// ClosedInUse counts handles closed while a read held them, or while
	// pinned for parked reads after their block changed: always 0 unless
	// a bug is switched on. Properties check it at every event.
	ClosedInUse int
}

// HandlePoolConfig bounds a pool.
type HandlePoolConfig struct {
	Max         int           // block-file fds (data and meta count separately)
	Min         int           // idle handles kept open after IdleTimeout
	IdleTimeout time.Duration // how long an idle handle above Min stays open
	// KeyIgnoresStamp is the stale-handle bug: handles keyed by block id
	// alone and never retired, so a replaced block is read from its old
	// inode. Only tests and `check --bug` set it.
	KeyIgnoresStamp bool
	// CloseInUse is the use-after-close bug: eviction ignores refcounts.
	CloseInUse bool
	// SharersSleep: reads queued for a block are not woken when a handle
	// of it is opened for another read; they wait for a handle to be
	// freed though they could share the open one.
	SharersSleep bool
	// RetakeAppendedFails: a parked read whose handle was closed cannot
	// take its replica back once the block has been appended to, though
	// its bytes are still the prefix of the files: the client gets a
	// short stream.
	RetakeAppendedFails bool
	// RetireIdle: Retire marks retired a handle no read holds (its holder
	// parked it before the datanode's lock let the retire run), which
	// stays in the idle list pinned by its parked read, so an eviction
	// closes what the read will want again.
	RetireIdle bool
	// RetryToBack: a read woken from the queue that must wait again
	// (another read took the room first) queues at the back.
	RetryToBack bool
	// RetakeWakeLost: a retake that fails (its replica was replaced or
	// deleted while its handle was closed) wakes no one, though it used
	// no room: a read woken for that room swallows the wake-up, and the
	// reads queued behind it sleep beside an idle handle.
	RetakeWakeLost bool
}

type handleKey struct {
	block uint64
	stamp uint64
}

// Handle is an open replica shared by the reads that use it.
type Handle struct {
	Files   *BlockFiles
	key     handleKey
	refs    int
	parked  int // reads that gave it back mid-stream and will want it again
	retired bool
	closed  bool
	lastUse time.Duration
}

// InUse reports whether a read holds the handle.
func (h *Handle) InUse() bool { return h.refs > 0 }

// Closed reports whether the handle's files were closed.
func (h *Handle) Closed() bool { return h.closed }

// ErrPoolFull means every handle is in use and the pool is at its bound;
// the caller waits (see Acquire).
var ErrPoolFull = errors.New("handle pool full")

// NewHandlePool makes a pool over store and subscribes it to the store's
// changes.
func NewHandlePool(store *BlockStore, cfg HandlePoolConfig) (*HandlePool, error) {
	if cfg.Max < 2 {
		return nil, fmt.Errorf("handle pool: max %d fds cannot hold one handle (data + meta)", cfg.Max)
	}
	if cfg.Min < 0 || 2*cfg.Min > cfg.Max {
		return nil, fmt.Errorf("handle pool: min %d idle handles outside [0, max/2=%d]", cfg.Min, cfg.Max/2)
	}
	hp := &HandlePool{store: store, cfg: cfg, byKey: make(map[handleKey]*Handle), byBlock: make(map[uint64][]*Handle)}
	store.OnChange(hp.onChange)
	return hp, nil
}

// Open is the number of block-file fds the pool holds.
func (hp *HandlePool) Open() int { return hp.open }

// Handles is the number of open handles.
func (hp *HandlePool) Handles() int { return hp.open / 2 }

// InUse is the number of handles a read holds (or parked reads pin).
func (hp *HandlePool) InUse() int { return hp.open/2 - len(hp.idle) }

// Waiting is the number of reads waiting for room.
func (hp *HandlePool) Waiting() int { return len(hp.waiters) }

// Blocks is the number of blocks the pool tracks handles of: never more
// than its open handles, or it keeps an entry per block ever read.
func (hp *HandlePool) Blocks() int { return len(hp.byBlock) }

func (hp *HandlePool) key(id, stamp uint64) handleKey {
	if hp.cfg.KeyIgnoresStamp {
		return handleKey{block: id}
	}
	return handleKey{block: id, stamp: stamp}
}

// Acquire returns a handle for the current replica of block id (at least
// stamp), opening it if needed. When the pool is at its bound with every
// handle in use it returns ErrPoolFull and calls wake once room may have
// been made; the caller then tries again.
func (hp *HandlePool) Acquire(id, stamp uint64, now time.Duration, wake func()) (*Handle, error) {
	h, _, err := hp.AcquireOrWait(id, stamp, now, wake, nil)
	return h, err
}

// Waiter is a read waiting for room in the pool, to open a handle of
// block id.
type Waiter struct {
	wake func()
	id   uint64
	seq  uint64 // its place in the queue
	// gone: its reader gave up and a Withdraw is on its way (set by the
	// reader's loop without the lock; read only by the sim's checks,
	// through Abandoned, never by the pool).
	gone bool
}

// Abandoned is how many queued waiters' readers gave up with their
// Withdraw still to run (sim only: gone is written without the lock).
func (hp *HandlePool) Abandoned() int {
	n := 0
	for _, w := range hp.waiters {
		if w.gone {
			n++
		}
	}
	return n
}

// AcquireOrWait is Acquire that also returns, with ErrPoolFull, the
// waiter it queued, so that a read that stops waiting can Withdraw. A
// read woken from the queue passes its old waiter as prev: if it must
// wait again (another read took the room between its wake-up and its
// try), it keeps its place instead of going to the back, where every
// read that came after it would be served first.
func (hp *HandlePool) AcquireOrWait(id, stamp uint64, now time.Duration, wake func(), prev *Waiter) (*Handle, *Waiter, error) {
	h, w, err := hp.acquire(id, stamp, now, wake, prev)
	if err == nil {
		hp.wakeSharers(h)
	}
	if !errors.Is(err, ErrPoolFull) {
		hp.wakeIfRoom()
	}
	return h, w, err
}

// wakeIfRoom: a woken read may need no room (its block is gone, or its
// handle is open already): if room is left, wake the next one rather than
// let it sleep beside a free handle.
func (hp *HandlePool) wakeIfRoom() {
	if len(hp.waiters) > 0 && (hp.open+2 <= hp.cfg.Max || len(hp.idle) > 0) {
		hp.wakeOne()
	}
}

// wakeSharers wakes the reads queued for h's block while h is the handle
// new reads of that block share: they need no room. Left queued, a read
// that waited longest for the block would watch later arrivals share the
// handle it waits for (their reads in flight, not in the queue) and sleep
// until a handle is freed again, which may take longer than its client
// waits.
func (hp *HandlePool) wakeSharers(h *Handle) {
	if hp.cfg.SharersSleep || h.retired || h.closed || hp.byKey[h.key] != h {
		return
	}
	kept := hp.waiters[:0]
	var woken []*Waiter
	for _, w := range hp.waiters {
		if w.id == h.key.block {
			woken = append(woken, w)
		} else {
			kept = append(kept, w)
		}
	}
	if len(woken) == 0 {
		return
	}
	clear(hp.waiters[len(kept):])
	hp.waiters = kept
	for _, w := range woken {
		w.wake()
	}
}

// Park gives back a handle a read will want again (Retake) to finish
// what it started. Unused, it is idle like a released handle: it may be
// evicted, or handed to other reads; but if its block changes meanwhile
// it stays open (out of the idle list) until its parked reads have it
// again or give up (Unpark), for they cannot finish on another replica.
//
// A retired handle whose replica its reads can open again (Parkable: its
// block was only appended to, or only retired by the datanode) is not
// pinned: pinned, it would hold its room while the reads that wait for
// one wait, and its holder would keep it for as long as its client takes
// data, however slowly, though it gave it back each time the client's
// window closed. Its last user closes it, and each parked read retakes
// its replica (Retake: a new handle, or its files opened again).
func (hp *HandlePool) Park(h *Handle, now time.Duration) {
	h.parked++
	if h.retired && !h.closed && h.refs == 1 && hp.Parkable(h) {
		h.refs, h.lastUse = 0, now
		hp.shut(h)
		hp.wakeOne()
		return
	}
	hp.Release(h, now)
}

// Parkable reports whether a read holding h may park it: a handle not
// retired, or retired with a replica its reads can open again. A read
// whose handle's block was replaced or deleted could not finish once it
// gave the handle back: the datanode ends such a read rather than park
// it (see dnConn.park).
func (hp *HandlePool) Parkable(h *Handle) bool {
	return !h.retired || hp.store.reopenable(h.Files) == nil
}

// Unpark: a parked read will not want h again.
func (hp *HandlePool) Unpark(h *Handle) {
	if h.parked <= 0 {
		return
	}
	h.parked--
	if h.parked == 0 && h.refs == 0 && h.retired && !h.closed {
		hp.close(h)
		hp.wakeOne()
	}
}

// Pinned reports whether h is open only for reads that parked on it
// after its block changed: it holds room no new read can use.
func (hp *HandlePool) Pinned(h *Handle) bool {
	return h.retired && !h.closed && h.parked > 0 && h.refs == 0
}

// Retake gives a read that parked on h the same replica again: h itself
// while it is open (retired or not), else a new handle on that replica,
// queueing like AcquireOrWait when the pool is full. If h was closed and
// the block then appended to, the replica is still the prefix of the
// files: the read gets a handle of its own on them, read as h's replica
// (BlockStore.ReopenForRead), which no other read shares. If the block
// was replaced or deleted after h was closed, the replica is gone:
// ErrStaleReplica.
func (hp *HandlePool) Retake(h *Handle, now time.Duration, wake func(), prev *Waiter) (*Handle, *Waiter, error) {
	if !h.closed {
		if h.refs == 0 && !h.retired {
			hp.removeIdle(h)
		}
		h.parked--
		h.refs++
		h.lastUse = now
		hp.Reused++
		return h, nil, nil
	}
	id := h.Files.ID
	if cur, _, ok := hp.store.Info(id); ok && cur == h.Files.Stamp {
		got, w, err := hp.AcquireOrWait(id, h.Files.Stamp, now, wake, prev)
		if err == nil {
			h.parked--
		}
		return got, w, err
	}
	// A retake that fails uses no room, as AcquireOrWait's errors use
	// none: if room is left, wake the next waiter. The read may have
	// been woken from the queue for that room (a release woke it, and
	// its block was replaced or deleted while it waited); its client
	// sees a short stream and no one retries, so a read queued behind
	// it would sleep beside an idle handle until some other release,
	// past the press delay and a stall timeout (check seed 440179954).
	if err := hp.store.reopenable(h.Files); err != nil {
		hp.wakeIfRoomAfterRetake()
		return nil, nil, err
	}
	if hp.cfg.RetakeAppendedFails {
		hp.wakeIfRoomAfterRetake()
		return nil, nil, fmt.Errorf("model: read block %d: replica %d was appended to: %w", id, h.Files.Stamp, ErrStaleReplica)
	}
	if w := hp.makeRoom(id, wake, prev); w != nil {
		return nil, w, ErrPoolFull
	}
	files, err := hp.store.ReopenForRead(h.Files)
	if err == nil {
		h.parked--
		got := &Handle{Files: files, key: h.key, refs: 1, retired: true, lastUse: now}
		hp.opened(got)
		hp.Reused++
		hp.wakeIfRoom()
		return got, nil, nil
	}
	hp.wakeIfRoom()
	return nil, nil, err
}

// wakeIfRoomAfterRetake is wakeIfRoom for a failed retake, unless the
// RetakeWakeLost test switch brings the old behaviour back.
func (hp *HandlePool) wakeIfRoomAfterRetake() {
	if !hp.cfg.RetakeWakeLost {
		hp.wakeIfRoom()
	}
}

// Withdraw takes w out of the queue (nothing if it was woken already).
func (hp *HandlePool) Withdraw(w *Waiter) {
	for i, x := range hp.waiters {
		if x == w {
			hp.waiters = append(hp.waiters[:i], hp.waiters[i+1:]...)
			return
		}
	}
}

func (hp *HandlePool) acquire(id, stamp uint64, now time.Duration, wake func(), prev *Waiter) (*Handle, *Waiter, error) {
	cur, _, ok := hp.store.Info(id)
	if !ok {
		return nil, nil, fmt.Errorf("model: read block %d: %w", id, ErrNotExist)
	}
	if cur < stamp {
		return nil, nil, fmt.Errorf("model: read block %d: replica stamp %d < requested %d: %w", id, cur, stamp, ErrStaleReplica)
	}
	k := hp.key(id, cur)
	if h := hp.byKey[k]; h != nil {
		if h.refs == 0 {
			hp.removeIdle(h)
		}
		h.refs++
		h.lastUse = now
		hp.Reused++
		return h, nil, nil
	}
	if w := hp.makeRoom(id, wake, prev); w != nil {
		return nil, w, ErrPoolFull
	}
	files, err := hp.store.OpenForRead(id, cur)
	if err != nil {
		return nil, nil, err
	}
	h := &Handle{Files: files, key: k, refs: 1, lastUse: now}
	hp.byKey[k] = h
	hp.opened(h)
	return h, nil, nil
}

// makeRoom closes idle handles until a new one fits; if it cannot, it
// queues a waiter for block id and returns it: at the back, or at prev's
// place (see AcquireOrWait).
func (hp *HandlePool) makeRoom(id uint64, wake func(), prev *Waiter) *Waiter {
	for hp.open+2 > hp.cfg.Max {
		if hp.evictOne() {
			continue
		}
		hp.Waited++
		w := &Waiter{wake: wake, id: id}
		if prev == nil || hp.cfg.RetryToBack {
			hp.seq++
			w.seq = hp.seq
			hp.waiters = append(hp.waiters, w)
			return w
		}
		w.seq = prev.seq
		i, _ := slices.BinarySearchFunc(hp.waiters, w.seq, func(x *Waiter, seq uint64) int { return cmp.Compare(x.seq, seq) })
		hp.waiters = slices.Insert(hp.waiters, i, w)
		return w
	}
	return nil
}

// opened counts a new open handle h.
func (hp *HandlePool) opened(h *Handle) {
	id := h.key.block
	hp.byBlock[id] = append(hp.byBlock[id], h)
	hp.open += 2
	hp.Opened++
	if hp.open > hp.PeakOpen {
		hp.PeakOpen = hp.open
	}
}

// Release gives back a handle; the last user of a retired handle closes it.
func (hp *HandlePool) Release(h *Handle, now time.Duration) {
	if h.refs <= 0 {
		return
	}
	h.refs--
	h.lastUse = now
	if h.refs > 0 {
		return
	}
	switch {
	case h.retired && h.parked > 0 && !h.closed:
		return // pinned for its parked reads: no room freed
	case h.retired || h.closed:
		hp.close(h)
	default:
		hp.idle = append(hp.idle, h)
	}
	hp.wakeOne()
}

// Trim closes idle handles unused for IdleTimeout, keeping Min; a datanode
// calls it from a timer set for NextTrim. It reports whether idle handles
// remain above Min (the timer is needed again).
func (hp *HandlePool) Trim(now time.Duration) bool {
	for len(hp.idle) > hp.cfg.Min && now-hp.idle[0].lastUse >= hp.cfg.IdleTimeout {
		h := hp.idle[0]
		hp.removeIdle(h)
		hp.close(h)
	}
	return len(hp.idle) > hp.cfg.Min
}

// NextTrim is when Trim next closes a handle, unless one is taken or
// released first: when the least recently used idle handle above Min will
// have been idle IdleTimeout (false: Min or fewer are idle).
func (hp *HandlePool) NextTrim() (time.Duration, bool) {
	if len(hp.idle) <= hp.cfg.Min {
		return 0, false
	}
	return hp.idle[0].lastUse + hp.cfg.IdleTimeout, true
}

// CloseAll closes every idle handle (a datanode shutting down); handles in
// use close when released.
func (hp *HandlePool) CloseAll() {
	for len(hp.idle) > 0 {
		h := hp.idle[0]
		hp.removeIdle(h)
		hp.close(h)
	}
	for _, ids := range hp.sortedBlocks() {
		for _, h := range hp.byBlock[ids] {
			h.retired = true
		}
	}
}

func (hp *HandlePool) sortedBlocks() []uint64 {
	return slices.Sorted(maps.Keys(hp.byBlock))
}

// evictOne closes the least recently used idle handle. With the
// CloseInUse bug it closes the least recently used handle of all, in use
// or not.
func (hp *HandlePool) evictOne() bool {
	if hp.cfg.CloseInUse && len(hp.idle) == 0 {
		var victim *Handle
		for _, id := range hp.sortedBlocks() {
			for _, h := range hp.byBlock[id] {
				if !h.closed && (victim == nil || h.lastUse < victim.lastUse) {
					victim = h
				}
			}
		}
		if victim == nil {
			return false
		}
		hp.Evicted++
		hp.close(victim)
		return true
	}
	if len(hp.idle) == 0 {
		return false
	}
	h := hp.idle[0]
	hp.removeIdle(h)
	hp.close(h)
	hp.Evicted++
	return true
}

func (hp *HandlePool) removeIdle(h *Handle) {
	for i, x := range hp.idle {
		if x == h {
			copy(hp.idle[i:], hp.idle[i+1:])
			hp.idle[len(hp.idle)-1] = nil
			hp.idle = hp.idle[:len(hp.idle)-1]
			return
		}
	}
}

// close releases the handle's fds and forgets it.
func (hp *HandlePool) close(h *Handle) {
	if h.closed {
		return
	}
	if h.refs > 0 || (h.retired && h.parked > 0) {
		// In use, or pinned: parked reads would lose a replica they
		// cannot open again (the datanode's ParkedLost is only for
		// handles closed before their block changed).
		hp.ClosedInUse++
	}
	hp.shut(h)
}

// shut closes the handle's files and forgets it: close without the
// in-use count, for Park's unpinned close, whose parked reads can open
// their replica again.
func (hp *HandlePool) shut(h *Handle) {
	if h.closed {
		return
	}
	h.closed = true
	_ = h.Files.Close()
	hp.open -= 2
	if hp.byKey[h.key] == h {
		delete(hp.byKey, h.key)
	}
	list := hp.byBlock[h.key.block]
	for i, x := range list {
		if x == h {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(hp.byBlock, h.key.block)
	} else {
		hp.byBlock[h.key.block] = list
	}
}

// onChange retires a changed block's handles: readers holding one finish
// on the old inode; new reads open the new replica.
// Retire stops handing h out: it closes when its last user leaves, so
// reads that share it cannot keep it open forever while others wait for
// room (a datanode retires the handle of a holder that stalled). A handle
// no read holds is left as it is: the holder gave it back (parked it, say)
// before the datanode's lock let it retire it, and it is idle, evictable
// like any other. Retired, it would stay in the idle list while parked
// reads pin it, and an eviction would close what they will want again.
func (hp *HandlePool) Retire(h *Handle) {
	if h.retired || h.closed || (h.refs == 0 && !hp.cfg.RetireIdle) || hp.cfg.KeyIgnoresStamp {
		return
	}
	h.retired = true
	if hp.byKey[h.key] == h {
		delete(hp.byKey, h.key)
	}
}

func (hp *HandlePool) onChange(id, newStamp uint64, deleted bool) {
	if hp.cfg.KeyIgnoresStamp {
		return // the bug: the old handle keeps serving
	}
	for _, h := range append([]*Handle(nil), hp.byBlock[id]...) {
		h.retired = true
		if hp.byKey[h.key] == h {
			delete(hp.byKey, h.key)
		}
		if h.refs == 0 {
			hp.removeIdle(h)
			if h.parked == 0 {
				hp.close(h)
			}
		}
	}
	hp.wakeOne()
}

// WakeWaiter wakes the longest-waiting read, if any. A woken read that no
// longer wants a handle (its connection closed) calls it to pass the
// wake-up on.
func (hp *HandlePool) WakeWaiter() { hp.wakeOne() }

func (hp *HandlePool) wakeOne() {
	if len(hp.waiters) == 0 {
		return
	}
	w := hp.waiters[0]
	hp.waiters[0] = nil
	hp.waiters = hp.waiters[1:]
	w.wake()
}
