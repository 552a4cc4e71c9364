package sim

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"xceiver/model"
)

// sendQueueMachine drives a send queue with writes (copied and shared),
// segment cuts, resends, reads and ACKs, next to a reference: the byte
// stream as a plain slice. Segments are held as the receiver holds them;
// their bytes must never change while held, whatever the queue does with
// its arrays afterwards (a copied write's source is scribbled over at
// once, arrays are recycled and refilled), and every array's holds must
// be counted exactly.
type sendQueueMachine struct {
	w      *World
	q      sendQueue
	ref    []byte // every byte written, from sequence 0
	una    uint64 // acknowledged up to
	nxt    uint64 // cut up to
	held   []segment
	shared [][]byte // buffers handed over by shared writes
	fill   byte
}

func (m *sendQueueMachine) bytesOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		m.fill++
		b[i] = m.fill
	}
	return b
}

func (m *sendQueueMachine) Write(t *rapid.T) {
	n := rapid.IntRange(1, 3000).Draw(t, "n")
	p := m.bytesOf(n)
	m.q.appendCopy(m.w, p, 4096)
	m.ref = append(m.ref, p...)
	for i := range p {
		p[i] = 0xEE // the caller reuses its buffer at once
	}
}

func (m *sendQueueMachine) WriteShared(t *rapid.T) {
	n := rapid.IntRange(1, 3000).Draw(t, "n")
	p := m.bytesOf(n)
	m.q.appendShared(m.w, p, nil)
	m.ref = append(m.ref, p...)
	m.shared = append(m.shared, p)
}

func (m *sendQueueMachine) cut(t *rapid.T, seq uint64, n int) {
	data, arr, more := m.q.slice(m.w, seq, n)
	s := segment{seq: seq, data: data, arr: arr, more: more}
	if s.size() != n {
		t.Fatalf("cut %d bytes at %d, the segment has %d", n, seq, s.size())
	}
	s.hold() // xmit's
	m.held = append(m.held, s)
}

func (m *sendQueueMachine) Cut(t *rapid.T) {
	left := int(uint64(len(m.ref)) - m.nxt)
	if left == 0 {
		t.Skip("nothing unsent")
	}
	n := rapid.IntRange(1, min(left, 5000)).Draw(t, "n")
	m.cut(t, m.nxt, n)
	m.nxt += uint64(n)
}

// Resend cuts bytes sent and not yet acknowledged again (a tail loss
// probe).
func (m *sendQueueMachine) Resend(t *rapid.T) {
	if m.nxt == m.una {
		t.Skip("nothing in flight")
	}
	from := rapid.Uint64Range(m.una, m.nxt-1).Draw(t, "from")
	n := rapid.IntRange(1, int(m.nxt-from)).Draw(t, "n")
	m.cut(t, from, n)
}

func (m *sendQueueMachine) Read(t *rapid.T) {
	if len(m.held) == 0 {
		t.Skip("nothing held")
	}
	i := rapid.IntRange(0, len(m.held)-1).Draw(t, "i")
	s := m.held[i]
	m.check(t, s)
	s.release(m.w)
	m.held = append(m.held[:i], m.held[i+1:]...)
}

func (m *sendQueueMachine) Ack(t *rapid.T) {
	if m.nxt == m.una {
		t.Skip("nothing in flight")
	}
	m.una = rapid.Uint64Range(m.una+1, m.nxt).Draw(t, "una")
	m.q.ackTo(m.w, m.una)
}

// AckAll acknowledges everything sent, which empties the queue when
// nothing is unsent: its arrays and cursor start over.
func (m *sendQueueMachine) AckAll(t *rapid.T) {
	if m.nxt == m.una {
		t.Skip("nothing in flight")
	}
	m.una = m.nxt
	m.q.ackTo(m.w, m.una)
}

func (m *sendQueueMachine) check(t *rapid.T, s segment) {
	got := s.data
	if s.more != nil {
		got = append(got[:len(got):len(got)], nil...)
		for _, p := range s.more.list {
			got = append(got, p.data...)
		}
	}
	if want := m.ref[s.seq : s.seq+uint64(s.size())]; !bytes.Equal(got, want) {
		t.Fatalf("segment at %d (%d bytes) changed while held", s.seq, s.size())
	}
}

func (m *sendQueueMachine) Check(t *rapid.T) {
	for _, s := range m.held {
		m.check(t, s)
	}
	queued := uint64(0)
	holds := map[*sndArray]int{}
	for _, ch := range m.q.chunks[m.q.head:] {
		queued += uint64(ch.end - ch.off)
		holds[ch.arr]++
	}
	if m.q.seq+queued != uint64(len(m.ref)) || m.q.seq > m.una {
		t.Fatalf("queue holds [%d, %d), want it to cover [%d, %d)", m.q.seq, m.q.seq+queued, m.una, len(m.ref))
	}
	for _, s := range m.held {
		holds[s.arr]++
		if s.more != nil {
			for _, p := range s.more.list {
				holds[p.arr]++
			}
		}
	}
	for a, n := range holds {
		if a.refs != n || a.pooled {
			t.Fatalf("an array has %d holds, refs says %d (pooled %v)", n, a.refs, a.pooled)
		}
	}
	for _, pool := range m.w.freeSndArrays {
		for _, a := range pool {
			if a.refs != 0 || a.live || holds[a] != 0 {
				t.Fatalf("a pooled array is held (refs %d, live %v)", a.refs, a.live)
			}
		}
	}
}

func TestSendQueueModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &sendQueueMachine{w: New(DefaultConfig(1))}
		t.Repeat(rapid.StateMachineActions(m))
	})
}

// A shared write and a view read move the same bytes as a copying write
// and read, at the same modelled cost: the wire (every segment, ACK and
// window) and the bytes received are identical, whatever the mix of
// write sizes, small buffers and Nagle make of them.
func TestSharedWritesSameWire(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		copied, cbytes := sharedWireRun(t, seed, false)
		shared, sbytes := sharedWireRun(t, seed, true)
		if copied != shared {
			t.Errorf("seed %d: trace hash %016x copying, %016x shared", seed, copied, shared)
		}
		if !bytes.Equal(cbytes, sbytes) {
			t.Errorf("seed %d: received %d bytes copying, %d shared (or they differ)", seed, len(cbytes), len(sbytes))
		}
	}
}

func sharedWireRun(t *testing.T, seed uint64, shared bool) (uint64, []byte) {
	opts := []pairOpt{withSeed(seed)}
	if seed%2 == 0 {
		opts = append(opts, withBufs(16<<10, 24<<10))
	}
	h := newPair(t, opts...)
	h.w.cfg.CheckShared = true
	h.srv.setAutoRead(false)
	rng := rand.New(rand.NewPCG(seed, 9))
	h.cli.noDelay(seed%3 == 0)
	var got []byte
	buf := make([]byte, 7000)
	for step := 0; step < 200; step++ {
		switch rng.IntN(3) {
		case 0, 1:
			n := 1 + rng.IntN(20000)
			if rng.IntN(2) == 0 {
				n = 1 + rng.IntN(1500)
			}
			p := pattern(h.cli.wrote, n)
			var k int
			var err error
			if shared {
				k, err = h.cli.c.WriteShared(p)
			} else {
				k, err = h.cli.c.Write(p)
			}
			if err != nil && !errors.Is(err, model.ErrWouldBlock) {
				t.Fatalf("write: %v", err)
			}
			h.cli.wrote += k
		default:
			max := 1 + rng.IntN(len(buf))
			var k int
			if shared {
				k, _ = h.srv.c.ReadView(max, func(b []byte) { got = append(got, b...) })
			} else {
				k, _ = h.srv.c.Read(buf[:max])
				got = append(got, buf[:k]...)
			}
			_ = k
		}
		h.runTo(h.now() + time.Duration(rng.IntN(300))*us)
	}
	for len(got) < h.cli.wrote {
		h.runTo(h.now() + 50*ms)
		k, _ := h.srv.c.ReadView(1<<20, func(b []byte) { got = append(got, b...) })
		if k == 0 && h.now() > 60*1000*ms {
			t.Fatalf("seed %d: %d of %d bytes arrived", seed, len(got), h.cli.wrote)
		}
	}
	h.runTo(h.now() + 300*ms)
	if !bytes.Equal(got, pattern(0, len(got))) {
		t.Fatalf("seed %d shared %v: received bytes differ from those written", seed, shared)
	}
	return h.w.TraceHash(), got
}

// CheckShared catches a writer that changes bytes it handed over: the
// receiver would read the new bytes, which a copying write would never
// let happen. Without the check the change goes through unseen.
func TestCheckSharedCatchesReuse(t *testing.T) {
	for _, check := range []bool{false, true} {
		h := newPair(t)
		h.w.cfg.CheckShared = check
		h.srv.setAutoRead(false)
		p := pattern(0, 4096)
		if k, err := h.cli.c.WriteShared(p); k != len(p) || err != nil {
			t.Fatalf("WriteShared = %d, %v", k, err)
		}
		h.runTo(h.now() + ms)
		p[100] ^= 0xFF // the writer reuses its buffer
		h.srv.setAutoRead(true)
		err := h.w.RunFor(100 * ms)
		if !check {
			if err != nil {
				t.Fatalf("without the check: %v", err)
			}
			if len(h.srv.got) != len(p) || h.srv.got[100] == pattern(0, 4096)[100] {
				t.Fatalf("without the check the reader should see the changed byte")
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "WriteShared") || !strings.Contains(err.Error(), "client") {
			t.Fatalf("with the check: run error %v, want the shared write's change reported", err)
		}
	}
}

// An array that was on a world's free list when the world gave its arrays
// to an arena is free again in the next world: it goes back to that
// world's free list once nothing holds it, instead of being lost to it.
func TestArenaArraysRecycleInTheNextWorld(t *testing.T) {
	a := new(Arena)
	w1 := New(DefaultConfig(1))
	w1.UseArena(a)
	arr := w1.newSndArray(4096)
	arr.recycle(w1) // nothing holds it: onto w1's free list
	w1.ReleaseArena()
	w2 := New(DefaultConfig(2))
	w2.UseArena(a)
	got := w2.newSndArray(4096)
	if got != arr {
		t.Fatalf("the second world did not take the arena's array")
	}
	got.refs++
	got.release(w2)
	if pool := w2.freeSndArrays[sndArrayClass(4096)]; len(pool) != 1 || pool[0] != arr {
		t.Fatalf("the array did not go back to the second world's free list (%d there)", len(pool))
	}
}

// A world with an arena keeps the model buffers it handed out only as far
// as the arena can take them back (ArenaMaxBytes): the model drops its
// buffers as it goes, and a run of many connections kept every input
// buffer it ever grew until the world ended (3 GB for one replayed case).
func TestArenaKeepsModelBuffersWithinItsBound(t *testing.T) {
	a := new(Arena)
	w := New(DefaultConfig(1))
	w.UseArena(a)
	p := idleProc(t, w, "p", model.ProcessConfig{})
	const n = 64 << 10
	for range 4 * ArenaMaxBytes / n {
		p.NewBuffer(n)
	}
	if held := len(w.bufs) * n; held > ArenaMaxBytes || w.bufBytes != held {
		t.Errorf("the world holds %d buffers (%d bytes, counted %d); bound %d bytes", len(w.bufs), held, w.bufBytes, ArenaMaxBytes)
	}
	w.ReleaseArena()
	if a.Bytes() == 0 || a.Bytes() > ArenaMaxBytes {
		t.Errorf("the arena took back %d bytes, want some and at most %d", a.Bytes(), ArenaMaxBytes)
	}
}

// A segment that spans chunks (a packet's header, copied, then its data,
// written shared or sent from a file) points into each chunk's array:
// none of its bytes is gathered into an array of its own.
func TestSegmentSpanningChunksIsNotCopied(t *testing.T) {
	w := New(DefaultConfig(1))
	var q sendQueue
	header := bytes.Repeat([]byte{'h'}, 100)
	data := bytes.Repeat([]byte{'d'}, 64<<10)
	next := bytes.Repeat([]byte{'n'}, 100)
	q.appendCopy(w, header, 4096)
	q.appendShared(w, data, nil)
	q.appendCopy(w, next, 4096)
	first, arr, more := q.slice(w, 50, 50+64<<10+20)
	s := segment{seq: 50, data: first, arr: arr, more: more}
	if s.size() != 50+64<<10+20 || more == nil || len(more.list) != 2 {
		t.Fatalf("segment of %d bytes in %d pieces, want %d in 3", s.size(), 1+len(more.list), 50+64<<10+20)
	}
	if !bytes.Equal(first, header[50:]) || &first[0] != &q.fill.buf[50] {
		t.Errorf("the first piece is not the header's bytes in the fill array")
	}
	if got := more.list[0].data; len(got) != len(data) || &got[0] != &data[0] {
		t.Errorf("the data piece (%d bytes) is not the shared buffer itself", len(got))
	}
	if got := more.list[1].data; !bytes.Equal(got, next[:20]) || &got[0] != &q.fill.buf[100] {
		t.Errorf("the last piece is not the next header's first bytes in the fill array")
	}
	s.hold()
	// The fill array holds both headers' chunks, so the queue holds it
	// twice and the segment twice (a piece in each).
	if arr.refs != 4 || more.list[0].arr.refs != 2 {
		t.Errorf("holds: fill array %d, shared array %d; want 4 and 2 (the queue's and the segment's)", arr.refs, more.list[0].arr.refs)
	}
	s.gather(w)
	if s.more != nil || s.size() != 50+64<<10+20 || !bytes.Equal(s.data[:50], header[50:]) || !bytes.Equal(s.data[50:50+64<<10], data) {
		t.Errorf("gathered, the segment lost its bytes")
	}
}

// An arena's Bytes is exactly what it holds: each array and model buffer
// a world gives back counts its size, and each the next world takes
// counts off again, down to nothing. (The bound, ArenaMaxBytes, is
// enforced on that count.)
func TestArenaCountsWhatItHolds(t *testing.T) {
	a := new(Arena)
	w1 := New(DefaultConfig(1))
	w1.UseArena(a)
	p1 := idleProc(t, w1, "p", model.ProcessConfig{})
	w1.newSndArray(4096)
	w1.newSndArray(64 << 10)
	p1.NewBuffer(1000)
	p1.NewBuffer(20000)
	want := 0
	for _, arr := range w1.arrays {
		want += len(arr.buf)
	}
	for _, b := range w1.bufs {
		want += cap(b)
	}
	w1.ReleaseArena()
	if got := a.Bytes(); got != want || want == 0 {
		t.Fatalf("the arena holds %d bytes after the release, want %d", got, want)
	}
	w2 := New(DefaultConfig(2))
	w2.UseArena(a)
	p2 := idleProc(t, w2, "p", model.ProcessConfig{})
	arr := w2.newSndArray(4096)
	want -= len(arr.buf)
	if got := a.Bytes(); got != want {
		t.Errorf("after the next world took a %d-byte array: %d bytes, want %d", len(arr.buf), got, want)
	}
	p2.NewBuffer(1000) // its array is its class's, 1 KiB
	want -= 1 << (sndArrayMinShift + sndArrayClass(1000))
	if got := a.Bytes(); got != want {
		t.Errorf("after the next world took a 1000-byte buffer: %d bytes, want %d", got, want)
	}
	w2.newSndArray(64 << 10)
	p2.NewBuffer(20000)
	if got := a.Bytes(); got != 0 {
		t.Errorf("with everything taken the arena counts %d bytes, want 0", got)
	}
}
