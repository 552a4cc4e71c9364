package model

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Model-based tests: each drives a stateful component with random
// actions (rapid's t.Repeat) next to a small reference model of what it
// should do, and compares the two after every step.

// --- the handle pool ---

// refHandle is the reference's view of one open handle.
type refHandle struct {
	block, stamp uint64
	refs         int
	parked       int
	retired      bool
	lastUse      time.Duration
}

type poolMachine struct {
	cfg   HandlePoolConfig
	store *BlockStore
	hp    *HandlePool
	now   time.Duration

	// The reference: open handles (real handle → reference), idle ones in
	// least-recently-used order, waiters, wake-ups delivered.
	ref     map[*Handle]*refHandle
	idle    []*Handle
	waiting []refWait // queued reads, first come first
	woken   []refWait // wake-ups the reference expects
	nextSeq int
	got     []uint64  // wake-ups the pool delivered: the woken reads' blocks,
	gotW    []*Waiter // their waiters (their places, to retry with),
	retried []bool    // and whether they tried again
	held    []*Handle
	parked  []*Handle // given back mid-read (Park), to be retaken

	// What each handle's reads see: the block's contents when it was
	// opened, and its lineage then (bumped by a replace or delete, not
	// by an append, which keeps the old contents as a prefix).
	content map[uint64][]byte
	lineage map[uint64]int
	view    map[*Handle]handleView
}

// refWait is a queued read in the reference: its block and its place.
type refWait struct {
	block uint64
	seq   int
}

type handleView struct {
	lineage int
	data    []byte
}

func (m *poolMachine) init(t *rapid.T) {
	m.cfg = HandlePoolConfig{
		Max:         2 * rapid.IntRange(1, 4).Draw(t, "max_handles"),
		IdleTimeout: time.Duration(rapid.IntRange(1, 5).Draw(t, "idle_ms")) * time.Millisecond,
	}
	m.cfg.Min = rapid.IntRange(0, m.cfg.Max/2).Draw(t, "min")
	m.store = NewBlockStore(newBSDisk(), "data")
	m.content = make(map[uint64][]byte)
	m.lineage = make(map[uint64]int)
	m.view = make(map[*Handle]handleView)
	for id := uint64(1); id <= 4; id++ {
		m.content[id] = BlockContent(id, 600)
		if _, err := m.store.Write(id, m.content[id]); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if m.hp, err = NewHandlePool(m.store, m.cfg); err != nil {
		t.Fatal(err)
	}
	m.ref = make(map[*Handle]*refHandle)
}

func (m *poolMachine) wake() {
	if len(m.waiting) > 0 {
		m.woken = append(m.woken, m.waiting[0])
		m.waiting = m.waiting[1:]
	}
}

// queue puts a read for block id in the reference's queue: a new one
// (seq 0) at the back, a woken one that must wait again at its place.
func (m *poolMachine) queue(id uint64, seq int) {
	if seq == 0 {
		m.nextSeq++
		m.waiting = append(m.waiting, refWait{id, m.nextSeq})
		return
	}
	i := 0
	for i < len(m.waiting) && m.waiting[i].seq < seq {
		i++
	}
	m.waiting = slices.Insert(m.waiting, i, refWait{id, seq})
}

// wakeSharers: reads queued for block id are woken once a handle of its
// current replica is handed out; they can share it, needing no room.
func (m *poolMachine) wakeSharers(id uint64) {
	m.waiting = slices.DeleteFunc(m.waiting, func(w refWait) bool {
		if w.block == id {
			m.woken = append(m.woken, w)
		}
		return w.block == id
	})
}

// waker records a wake-up of a read of block id, whose waiter the caller
// puts in *slot once the pool has returned it.
func (m *poolMachine) waker(id uint64, slot **Waiter) func() {
	return func() {
		m.got = append(m.got, id)
		m.gotW = append(m.gotW, *slot)
		m.retried = append(m.retried, false)
	}
}

func (m *poolMachine) closeRef(h *Handle) {
	delete(m.ref, h)
	if i := slices.Index(m.idle, h); i >= 0 {
		m.idle = slices.Delete(m.idle, i, i+1)
	}
}

func (m *poolMachine) open() int { return 2 * len(m.ref) }

func (m *poolMachine) acquire(t *rapid.T) {
	id := uint64(rapid.IntRange(1, 5).Draw(t, "block"))
	slot := new(*Waiter)
	h, w, err := m.hp.AcquireOrWait(id, 0, m.now, m.waker(id, slot), nil)
	*slot = w
	m.expectAcquire(t, id, h, err, 0)
}

// retry: a woken read tries again, with its old waiter: if there is no
// room (another read took it since), it waits at its old place, ahead of
// the reads that queued after it.
func (m *poolMachine) retry(t *rapid.T) {
	var can []int
	for k, done := range m.retried {
		if !done {
			can = append(can, k)
		}
	}
	if len(can) == 0 {
		t.Skip("no woken read")
	}
	k := can[rapid.IntRange(0, len(can)-1).Draw(t, "which")]
	m.retried[k] = true
	id := m.got[k]
	slot := new(*Waiter)
	h, w, err := m.hp.AcquireOrWait(id, 0, m.now, m.waker(id, slot), m.gotW[k])
	*slot = w
	m.expectAcquire(t, id, h, err, m.woken[k].seq)
}

// expectAcquire checks what acquiring block id gave and follows it in
// the reference.
func (m *poolMachine) expectAcquire(t *rapid.T, id uint64, h *Handle, err error, seq int) {
	cur, _, ok := m.store.Info(id)
	// The reference: reuse the live handle of (block, current stamp),
	// else make room by closing idle handles least recently used first,
	// else wait.
	var want *Handle
	for rh, r := range m.ref {
		if ok && !r.retired && r.block == id && r.stamp == cur {
			want = rh
		}
	}
	switch {
	case !ok:
		if !errors.Is(err, ErrNotExist) {
			t.Fatalf("acquire of missing block %d: %v, want ErrNotExist", id, err)
		}
	case want != nil:
		if err != nil || h != want {
			t.Fatalf("acquire of block %d: %v; want the open handle reused", id, err)
		}
		r := m.ref[h]
		if r.refs == 0 {
			m.closeRef(h)
			m.ref[h] = r
		}
		r.refs++
		r.lastUse = m.now
		m.held = append(m.held, h)
		m.wakeSharers(id)
	default:
		for m.open()+2 > m.cfg.Max && len(m.idle) > 0 {
			m.closeRef(m.idle[0])
		}
		if m.open()+2 > m.cfg.Max {
			if !errors.Is(err, ErrPoolFull) {
				t.Fatalf("acquire of block %d with every handle in use: %v, want ErrPoolFull", id, err)
			}
			m.queue(id, seq)
			return
		}
		if err != nil || h == nil || m.ref[h] != nil {
			t.Fatalf("acquire of block %d: %v; want a new handle", id, err)
		}
		m.ref[h] = &refHandle{block: id, stamp: cur, refs: 1, lastUse: m.now}
		m.view[h] = handleView{lineage: m.lineage[id], data: slices.Clone(m.content[id])}
		m.held = append(m.held, h)
		m.wakeSharers(id)
	}
	if !errors.Is(err, ErrPoolFull) && len(m.waiting) > 0 && (m.open()+2 <= m.cfg.Max || len(m.idle) > 0) {
		m.wake()
	}
}

func (m *poolMachine) release(t *rapid.T) {
	if len(m.held) == 0 {
		t.Skip("nothing held")
	}
	i := rapid.IntRange(0, len(m.held)-1).Draw(t, "which")
	h := m.held[i]
	m.held = slices.Delete(m.held, i, i+1)
	m.hp.Release(h, m.now)
	m.releaseRef(h)
}

func (m *poolMachine) releaseRef(h *Handle) {
	r := m.ref[h]
	r.refs--
	r.lastUse = m.now
	if r.refs == 0 {
		switch {
		case r.retired && r.parked > 0:
			return // pinned for the reads parked on it
		case r.retired:
			m.closeRef(h)
		default:
			m.idle = append(m.idle, h)
		}
		m.wake()
	}
}

// park gives a held handle back mid-read, to be retaken.
func (m *poolMachine) park(t *rapid.T) {
	if len(m.held) == 0 {
		t.Skip("nothing held")
	}
	i := rapid.IntRange(0, len(m.held)-1).Draw(t, "which")
	h := m.held[i]
	m.held = slices.Delete(m.held, i, i+1)
	m.parked = append(m.parked, h)
	m.hp.Park(h, m.now)
	r := m.ref[h]
	r.parked++
	if _, _, ok := m.store.Info(r.block); r.retired && r.refs == 1 && ok && m.lineage[r.block] == m.view[h].lineage {
		// Retired, but its replica can be opened again (only appended
		// to since): not pinned, its last user closes it, and its
		// parked reads retake the replica.
		r.refs = 0
		m.closeRef(h)
		m.wake()
		return
	}
	m.releaseRef(h)
}

// retake: a parked read wants its replica again: the same handle while
// it is open, a new one on the same replica if it was closed, and an
// error if the block changed.
func (m *poolMachine) retake(t *rapid.T) {
	if len(m.parked) == 0 {
		t.Skip("nothing parked")
	}
	i := rapid.IntRange(0, len(m.parked)-1).Draw(t, "which")
	h := m.parked[i]
	slot := new(*Waiter)
	got, w, err := m.hp.Retake(h, m.now, m.waker(h.Files.ID, slot), nil)
	*slot = w
	if r := m.ref[h]; r != nil {
		if err != nil || got != h {
			t.Fatalf("retake of an open handle of block %d: %v", r.block, err)
		}
		if r.refs == 0 && !r.retired {
			m.closeRef(h)
			m.ref[h] = r
		}
		r.refs++
		r.parked--
		r.lastUse = m.now
		m.parked = slices.Delete(m.parked, i, i+1)
		m.held = append(m.held, h)
		return
	}
	id, v := h.Files.ID, m.view[h]
	cur, _, ok := m.store.Info(id)
	switch {
	case ok && cur == h.Files.Stamp:
		if err == nil {
			m.parked = slices.Delete(m.parked, i, i+1)
		}
		m.expectAcquire(t, id, got, err, 0)
	case !ok || m.lineage[id] != v.lineage:
		// Replaced or deleted after h was closed: its bytes are gone.
		if !errors.Is(err, ErrStaleReplica) {
			t.Fatalf("retake of block %d after it was replaced or deleted: %v, want ErrStaleReplica", id, err)
		}
		m.parked = slices.Delete(m.parked, i, i+1)
		// It used no room: with room left, the next waiter is woken
		// (the read may have been woken for that room itself).
		if len(m.waiting) > 0 && (m.open()+2 <= m.cfg.Max || len(m.idle) > 0) {
			m.wake()
		}
	default:
		// Only appended to: the read gets a handle of its own on the
		// files, read as its replica, once there is room.
		for m.open()+2 > m.cfg.Max && len(m.idle) > 0 {
			m.closeRef(m.idle[0])
		}
		if m.open()+2 > m.cfg.Max {
			if !errors.Is(err, ErrPoolFull) {
				t.Fatalf("retake of appended block %d with every handle in use: %v, want ErrPoolFull", id, err)
			}
			m.queue(id, 0)
			return
		}
		if err != nil || got == nil || got == h || m.ref[got] != nil {
			t.Fatalf("retake of block %d after an append: %v; want a new handle of its own", id, err)
		}
		m.parked = slices.Delete(m.parked, i, i+1)
		m.ref[got] = &refHandle{block: id, stamp: h.Files.Stamp, refs: 1, retired: true, lastUse: m.now}
		m.view[got] = v
		m.held = append(m.held, got)
		// The replica it serves is the one the read started on, with
		// the checksums it had: every chunk verifies.
		data, _, rerr := got.Files.ReadChunks(nil, 0, len(v.data))
		if rerr != nil || !bytes.Equal(data, v.data) || got.Files.Length != int64(len(v.data)) {
			t.Fatalf("retaken replica of block %d after an append: length %d, read %v, equal %v; want the %d bytes it had",
				id, got.Files.Length, rerr, bytes.Equal(data, v.data), len(v.data))
		}
		if len(m.waiting) > 0 && (m.open()+2 <= m.cfg.Max || len(m.idle) > 0) {
			m.wake()
		}
	}
}

// unpark: a parked read gives up its replica.
func (m *poolMachine) unpark(t *rapid.T) {
	if len(m.parked) == 0 {
		t.Skip("nothing parked")
	}
	i := rapid.IntRange(0, len(m.parked)-1).Draw(t, "which")
	h := m.parked[i]
	m.parked = slices.Delete(m.parked, i, i+1)
	m.hp.Unpark(h)
	if r := m.ref[h]; r != nil {
		r.parked--
		if r.parked == 0 && r.refs == 0 && r.retired {
			m.closeRef(h)
			m.wake()
		}
	}
}

func (m *poolMachine) advance(t *rapid.T) {
	m.now += time.Duration(rapid.IntRange(0, 3).Draw(t, "ms")) * time.Millisecond
}

func (m *poolMachine) trim(t *rapid.T) {
	more := m.hp.Trim(m.now)
	for len(m.idle) > m.cfg.Min && m.now-m.ref[m.idle[0]].lastUse >= m.cfg.IdleTimeout {
		m.closeRef(m.idle[0])
	}
	if want := len(m.idle) > m.cfg.Min; more != want {
		t.Fatalf("Trim says idle handles remain above Min: %v, want %v", more, want)
	}
	// NextTrim is when the reference's next idle handle expires: after
	// now (Trim closed every one due), and none sooner.
	at, ok := m.hp.NextTrim()
	if want := len(m.idle) > m.cfg.Min; ok != want {
		t.Fatalf("NextTrim says a handle will expire: %v, want %v", ok, want)
	}
	if ok {
		if want := m.ref[m.idle[0]].lastUse + m.cfg.IdleTimeout; at != want || at <= m.now {
			t.Fatalf("NextTrim %v at %v, want %v, after now", at, m.now, want)
		}
	}
}

func (m *poolMachine) change(t *rapid.T) {
	m.changeBlock(uint64(rapid.IntRange(1, 5).Draw(t, "block")), rapid.IntRange(0, 2).Draw(t, "how"))
}

// appendParked appends to the block of a parked read: the change a read
// parked under contention meets when its own client appends (check's
// seed 5945), drawn more often than change alone would.
func (m *poolMachine) appendParked(t *rapid.T) {
	if len(m.parked) == 0 {
		t.Skip("nothing parked")
	}
	m.changeBlock(m.parked[rapid.IntRange(0, len(m.parked)-1).Draw(t, "which")].Files.ID, 1)
}

// changeBlock replaces (how 0), appends to (1) or deletes (2) block id.
func (m *poolMachine) changeBlock(id uint64, how int) {
	var err error
	switch how {
	case 0:
		data := BlockContent(id+7, 700)
		if _, err = m.store.Replace(id, data); err == nil {
			m.content[id] = data
			m.lineage[id]++
		}
	case 1:
		if _, err = m.store.Append(id, []byte("more")); err == nil {
			m.content[id] = append(slices.Clone(m.content[id]), "more"...)
		}
	default:
		if err = m.store.Delete(id); err == nil {
			delete(m.content, id)
			m.lineage[id]++
		}
	}
	if err != nil {
		return // a missing block: nothing changed
	}
	for h, r := range m.ref {
		if r.block == id {
			r.retired = true
			if r.refs == 0 && r.parked == 0 {
				m.closeRef(h)
			} else if i := slices.Index(m.idle, h); i >= 0 {
				m.idle = slices.Delete(m.idle, i, i+1) // pinned
			}
		}
	}
	m.wake()
}

func (m *poolMachine) Check(t *rapid.T) {
	hp := m.hp
	inUse := 0
	for h, r := range m.ref {
		if r.refs > 0 || (r.retired && r.parked > 0) { // (pinned for parked reads)
			inUse++
		}
		if h.closed || h.refs != r.refs || h.retired != r.retired || h.parked != r.parked {
			t.Fatalf("handle of block %d: closed %v, refs %d, retired %v; want open, refs %d, retired %v", r.block, h.closed, h.refs, h.retired, r.refs, r.retired)
		}
	}
	switch {
	case hp.Open() != m.open() || hp.Handles() != len(m.ref) || hp.InUse() != inUse:
		t.Fatalf("pool: %d fds, %d handles, %d in use; want %d, %d, %d", hp.Open(), hp.Handles(), hp.InUse(), m.open(), len(m.ref), inUse)
	case hp.Open() > m.cfg.Max:
		t.Fatalf("pool holds %d fds over its bound %d", hp.Open(), m.cfg.Max)
	case !slices.Equal(hp.idle, m.idle):
		t.Fatalf("idle handles %v, want %v (least recently used first)", m.blocks(hp.idle), m.blocks(m.idle))
	case hp.Waiting() != len(m.waiting) || !slices.Equal(m.got, m.wokenBlocks()):
		t.Fatalf("%d waiting, woken for blocks %v; want %d, %v", hp.Waiting(), m.got, len(m.waiting), m.woken)
	case hp.ClosedInUse != 0:
		t.Fatalf("%d handles closed in use", hp.ClosedInUse)
	}
}

func (m *poolMachine) wokenBlocks() []uint64 {
	var out []uint64
	for _, w := range m.woken {
		out = append(out, w.block)
	}
	return out
}

func (m *poolMachine) blocks(hs []*Handle) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%d@%v", h.key.block, h.lastUse))
	}
	return out
}

func TestHandlePoolStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &poolMachine{}
		m.init(t)
		t.Repeat(map[string]func(*rapid.T){
			"acquire": m.acquire,
			"release": m.release,
			"advance": m.advance,
			"trim":    m.trim,
			"change":  m.change,
			"append":  m.appendParked,
			"park":    m.park,
			"retake":  m.retake,
			"retry":   m.retry,
			"unpark":  m.unpark,
			"":        m.Check,
		})
	})
}

// --- the client's peer cache ---

// fakeLoop is a manual clock with timers, for components that only need
// Now and AfterFunc.
type fakeLoop struct {
	Loop
	now    time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	l       *fakeLoop
	at      time.Duration
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func (t *fakeTimer) Reset(d time.Duration) bool {
	was := t.Stop()
	t.at, t.stopped = t.l.now+d, false
	// Last among timers due at once, as a new AfterFunc would be.
	t.l.timers = append(slices.DeleteFunc(t.l.timers, func(u *fakeTimer) bool { return u == t }), t)
	return was
}

func (l *fakeLoop) Now() time.Duration { return l.now }

func (l *fakeLoop) AfterFunc(d time.Duration, f func()) Timer {
	t := &fakeTimer{l: l, at: l.now + d, f: f}
	l.timers = append(l.timers, t)
	return t
}

// advance moves the clock to to, firing due timers in time order.
func (l *fakeLoop) advance(to time.Duration) {
	for fired := 0; ; fired++ {
		if fired > 10000 {
			panic(fmt.Sprintf("timers keep firing at %v (a livelock)", l.now))
		}
		var next *fakeTimer
		for _, t := range l.timers {
			if !t.stopped && t.at <= to && (next == nil || t.at < next.at) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.stopped = true
		l.now = max(l.now, next.at)
		next.f()
	}
	l.now = to
}

// fakeConn is a connection whose only behaviour is being closed.
type fakeConn struct {
	Conn
	n      int
	closed bool
}

func (c *fakeConn) Close() error {
	if c.closed {
		return ErrClosed
	}
	c.closed = true
	return nil
}
func (c *fakeConn) SetReadInterest(bool)       {}
func (c *fakeConn) SetPeerClosedInterest(bool) {}
func (c *fakeConn) SetWriteInterest(bool)      {}
func (c *fakeConn) SetHandler(Loop, Handler)   {}

type refPeer struct {
	c     *fakeConn
	since time.Duration
}

type cacheMachine struct {
	loop  *fakeLoop
	cl    *Client
	ref   []refPeer // oldest first
	taken []*fakeConn
	n     int
}

func (m *cacheMachine) init(t *rapid.T) {
	m.loop = &fakeLoop{}
	m.cl = &Client{loop: m.loop, cfg: ClientConfig{
		CacheCapacity: rapid.IntRange(0, 4).Draw(t, "capacity"),
		CacheExpiry:   time.Duration(rapid.IntRange(1, 10).Draw(t, "expiry_ms")) * time.Millisecond,
	}}
}

func (m *cacheMachine) put(t *rapid.T) {
	var c *fakeConn
	if len(m.taken) > 0 && rapid.Bool().Draw(t, "return_taken") {
		c = m.taken[len(m.taken)-1]
		m.taken = m.taken[:len(m.taken)-1]
	} else {
		m.n++
		c = &fakeConn{n: m.n}
	}
	m.cl.putCached(c)
	cfg := m.cl.cfg
	if cfg.CacheCapacity == 0 {
		if !c.closed {
			t.Fatal("a cache of capacity 0 kept a peer")
		}
		return
	}
	if len(m.ref) >= cfg.CacheCapacity {
		m.ref[0].c.closed = true // the reference's expectation; compared below
		m.ref = m.ref[1:]
	}
	m.ref = append(m.ref, refPeer{c, m.loop.now})
}

func (m *cacheMachine) take(t *rapid.T) {
	got := m.cl.takeCached()
	// The reference: the most recent peer not yet expired; expired ones
	// met on the way are closed.
	var want *fakeConn
	for len(m.ref) > 0 {
		p := m.ref[len(m.ref)-1]
		m.ref = m.ref[:len(m.ref)-1]
		if m.loop.now-p.since >= m.cl.cfg.CacheExpiry {
			continue
		}
		want = p.c
		break
	}
	if want == nil {
		if got != nil {
			t.Fatalf("took peer %d, want none", got.(*fakeConn).n)
		}
		return
	}
	if got != Conn(want) {
		t.Fatalf("took %v, want peer %d (the most recent live one)", got, want.n)
	}
	m.taken = append(m.taken, want)
}

func (m *cacheMachine) advance(t *rapid.T) {
	m.loop.advance(m.loop.now + time.Duration(rapid.IntRange(0, 4000).Draw(t, "us"))*time.Microsecond)
	// The reaper closes every expired peer, oldest first.
	for len(m.ref) > 0 && m.loop.now-m.ref[0].since >= m.cl.cfg.CacheExpiry {
		m.ref = m.ref[1:]
	}
}

// late moves the clock on without running the timers due, as a busy
// loop runs its timers late: a take can then meet expired peers the
// reaper has not closed yet (takeCached closes and skips them).
func (m *cacheMachine) late(t *rapid.T) {
	m.loop.now += time.Duration(rapid.IntRange(0, 4000).Draw(t, "late_us")) * time.Microsecond
}

func (m *cacheMachine) Check(t *rapid.T) {
	cache := m.cl.cache
	if len(cache) != len(m.ref) {
		t.Fatalf("%d cached peers, want %d", len(cache), len(m.ref))
	}
	if len(cache) > m.cl.cfg.CacheCapacity {
		t.Fatalf("%d cached peers over capacity %d", len(cache), m.cl.cfg.CacheCapacity)
	}
	for i, p := range m.ref {
		if cache[i].c != Conn(p.c) || cache[i].since != p.since {
			t.Fatalf("cache slot %d holds another peer (want peer %d cached at %v)", i, p.c.n, p.since)
		}
		if p.c.closed {
			t.Fatalf("cached peer %d is closed", p.c.n)
		}
	}
	for _, c := range m.taken {
		if c.closed {
			t.Fatalf("peer %d, taken for use, was closed", c.n)
		}
	}
}

func TestPeerCacheStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &cacheMachine{}
		m.init(t)
		t.Repeat(map[string]func(*rapid.T){
			"put":     m.put,
			"take":    m.take,
			"advance": m.advance,
			"late":    m.late,
			"":        m.Check,
		})
	})
}

// --- the block store ---

type storeMachine struct {
	disk  *bsDisk
	store *BlockStore
	ref   map[uint64][]byte
}

func (m *storeMachine) init(t *rapid.T) {
	m.disk = newBSDisk()
	m.store = NewBlockStore(m.disk, "data")
	m.ref = make(map[uint64][]byte)
}

// update runs one write, append, replace or delete; with a drawn crash
// point it fails the update's k-th disk operation and every later one,
// then restarts the store.
func (m *storeMachine) update(t *rapid.T) {
	id := uint64(rapid.IntRange(1, 3).Draw(t, "block"))
	kind := rapid.SampledFrom([]string{"write", "append", "replace", "delete"}).Draw(t, "op")
	data := BlockContent(uint64(rapid.IntRange(1, 1000).Draw(t, "key")), rapid.IntRange(0, 1600).Draw(t, "size"))
	crashAt := -1
	if rapid.IntRange(0, 3).Draw(t, "crash") == 0 {
		crashAt = rapid.IntRange(0, 12).Draw(t, "crash_op")
	}
	ops := 0
	m.disk.fail = func(op, path string) error {
		if crashAt >= 0 && ops >= crashAt {
			return ErrIO
		}
		ops++
		return nil
	}
	old, exists := m.ref[id]
	var next []byte
	var err error
	switch kind {
	case "write":
		_, err = m.store.Write(id, data)
		next = data
		if exists {
			next = old
		}
	case "append":
		_, err = m.store.Append(id, data)
		next = append(slices.Clip(old), data...)
	case "replace":
		_, err = m.store.Replace(id, data)
		next = data
	default:
		err = m.store.Delete(id)
		next = nil
	}
	m.disk.fail = nil
	applies := exists != (kind == "write")
	crashed := crashAt >= 0 && ops >= crashAt
	switch {
	case !crashed && applies && err != nil:
		t.Fatalf("%s of block %d: %v", kind, id, err)
	case !crashed && !applies && err == nil:
		t.Fatalf("%s of block %d (exists %v) succeeded", kind, id, exists)
	case !crashed && applies:
		m.set(id, next)
	case crashed && applies:
		// Cut short: after a restart the block is old or new, nothing else.
		m.restart(t, id, old, exists, next, kind != "delete")
	}
}

func (m *storeMachine) set(id uint64, data []byte) {
	if data == nil {
		delete(m.ref, id)
		return
	}
	m.ref[id] = data
}

// restart reloads the store from disk after a crash during an update of
// block id, which must then hold its old or its new state.
func (m *storeMachine) restart(t *rapid.T, id uint64, old []byte, oldOK bool, next []byte, nextOK bool) {
	m.store = NewBlockStore(m.disk, "data")
	if err := m.store.Load(); err != nil {
		t.Fatalf("load after a crash: %v", err)
	}
	got, ok := m.read(t, id)
	switch {
	case ok == oldOK && (!ok || bytes.Equal(got, old)):
		m.set(id, nil)
		if ok {
			m.set(id, old)
		}
	case ok == nextOK && (!ok || bytes.Equal(got, next)):
		m.set(id, nil)
		if ok {
			m.set(id, next)
		}
	default:
		t.Fatalf("after a crash, block %d has %d bytes (exists %v): neither the old %d bytes (exists %v) nor the new %d (exists %v)",
			id, len(got), ok, len(old), oldOK, len(next), nextOK)
	}
}

func (m *storeMachine) restartClean(t *rapid.T) {
	m.store = NewBlockStore(m.disk, "data")
	if err := m.store.Load(); err != nil {
		t.Fatalf("load: %v", err)
	}
}

func (m *storeMachine) read(t *rapid.T, id uint64) ([]byte, bool) {
	f, err := m.store.OpenForRead(id, 0)
	if errors.Is(err, ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("open block %d: %v", id, err)
	}
	defer f.Close()
	data, _, err := f.ReadChunks(nil, 0, int(f.Length))
	if err != nil {
		t.Fatalf("read block %d: %v", id, err)
	}
	return data, true
}

func (m *storeMachine) Check(t *rapid.T) {
	for id := uint64(1); id <= 3; id++ {
		got, ok := m.read(t, id)
		want, wantOK := m.ref[id]
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("block %d: %d bytes (exists %v), want %d (exists %v)", id, len(got), ok, len(want), wantOK)
		}
	}
	if n := m.disk.openFDs(); n != 0 {
		t.Fatalf("%d fds left open", n)
	}
}

func TestBlockStoreStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &storeMachine{}
		m.init(t)
		t.Repeat(map[string]func(*rapid.T){
			"update":  m.update,
			"restart": m.restartClean,
			"":        m.Check,
		})
	})
}
