package model

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// poisonProc is a datanode process that poisons what is given back
// (Freed, as sim's poison fault does) and counts what it allocates.
type poisonProc struct {
	Process
	made int
}

const testPoison = 0xDB

func (p *poisonProc) NewBuffer(n int) []byte { p.made++; return make([]byte, 0, n) }
func (p *poisonProc) InFlight([]byte)        {}
func (p *poisonProc) Freed(b []byte) {
	for i := range b {
		b[i] = testPoison
	}
}

// procLoop is a fakeLoop that names its process, as a selector's loop
// does, and runs what is posted to it at once.
type procLoop struct {
	*fakeLoop
	p Process
}

func (l *procLoop) Process() Process { return l.p }
func (l *procLoop) Post(f func())    { f() }

// spareConn is a connection of the machine, whose buffers (a packet
// buffer lent, its input, a write's data) it fills with its own byte.
type spareConn struct {
	mark byte
	dc   *dnConn
}

func (c *spareConn) bufs() [][]byte {
	var bs [][]byte
	for _, b := range [][]byte{c.dc.out, c.dc.inBuf, c.dc.wdata} {
		if b != nil {
			bs = append(bs, b)
		}
	}
	return bs
}

// sparesMachine drives one selector's spares through its connections as
// the datanode does (serve counts a connection; it borrows a packet buffer
// and gives it back; readInput grows its input buffer and a write its
// data through newBuf and spare; close), and holds them to what users
// rely on: no buffer is lent to two connections at once, every byte
// given back is poisoned, a buffer given back is reused (a grown input
// buffer within the trim's second, unless the selector was at rest
// since), unused spares go within two trim periods, and with no
// connection left only the first-size input buffers and maxSpareBufs
// packet buffers stay, with no timer.
type sparesMachine struct {
	l     *procLoop
	p     *poisonProc
	dn    *Datanode
	s     *selector
	conns []*spareConn
	marks byte
	// warm is, by buffer size, when one was last given back, if nothing
	// took one since.
	warm    map[int]time.Duration
	lastUse time.Duration // the last get or put
}

func (m *sparesMachine) init(t *rapid.T) {
	m.p = &poisonProc{}
	m.l = &procLoop{fakeLoop: &fakeLoop{}, p: m.p}
	m.s = &selector{loop: m.l, size: 1000}
	m.dn = &Datanode{p: m.p, main: m.l, selectors: []*selector{m.s}}
	m.warm = map[int]time.Duration{}
}

func (m *sparesMachine) pick(t *rapid.T, ok func(*spareConn) bool) *spareConn {
	var cs []*spareConn
	for _, c := range m.conns {
		if ok(c) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		t.Skip("no such connection")
	}
	return cs[rapid.IntRange(0, len(cs)-1).Draw(t, "conn")]
}

// took checks a buffer the selector gave c for n bytes and fills it with
// c's byte.
func (m *sparesMachine) took(t *rapid.T, c *spareConn, b []byte, n int, madeBefore int) []byte {
	if len(b) != 0 || cap(b) != n {
		t.Fatalf("asked for %d bytes, got a buffer of length %d, capacity %d", n, len(b), cap(b))
	}
	full := b[:cap(b)]
	for _, o := range m.conns {
		for _, h := range o.bufs() {
			if &h[:cap(h)][0] == &full[0] {
				t.Fatalf("a buffer of %d bytes connection %d holds is given to connection %d too", n, o.mark, c.mark)
			}
		}
	}
	// The trim keeps maxSpareBufs packet buffers and every first-size
	// input buffer: those are reused however long they waited.
	lasting := n == inputFirst || n == m.s.size
	if at, ok := m.warm[n]; ok && (lasting || m.l.now < at+spareTrimEvery) && m.p.made != madeBefore {
		t.Fatalf("a buffer of %d bytes given back at %v was allocated anew at %v", n, at, m.l.now)
	}
	delete(m.warm, n)
	for i := range full {
		full[i] = c.mark
	}
	m.lastUse = m.l.now
	return b
}

// giveBack checks that bs still hold c's bytes (no other connection wrote
// them), and once give has given them back, that they are poisoned whole.
func (m *sparesMachine) giveBack(t *rapid.T, c *spareConn, bs [][]byte, give func()) {
	for _, b := range bs {
		for i, x := range b[:cap(b)] {
			if x != c.mark {
				t.Fatalf("byte %d of connection %d's buffer of %d is %#x, not its own %#x: another connection wrote it", i, c.mark, cap(b), x, c.mark)
			}
		}
	}
	give()
	for _, b := range bs {
		for i, x := range b[:cap(b)] {
			if x != testPoison {
				t.Fatalf("byte %d of %d of a buffer given back is %#x, not poisoned", i, cap(b), x)
			}
		}
		if m.kept(cap(b)) {
			m.warm[cap(b)] = m.l.now
		}
	}
	m.lastUse = m.l.now
}

// kept reports whether the selector keeps spares of n bytes: packet
// buffers, and input buffers of 4 KiB doubled up to 128 KiB.
func (m *sparesMachine) kept(n int) bool {
	for k := 0; k < 6; k++ {
		if n == 4096<<k {
			return true
		}
	}
	return n == m.s.size
}

// open starts a connection on the selector, as serve does.
func (m *sparesMachine) open(t *rapid.T) {
	if len(m.conns) >= 3*maxSpareBufs {
		t.Skip("enough connections")
	}
	if m.s.live == 0 {
		// It was at rest: its grown spares may have gone (atRest).
		for n := range m.warm {
			if n != inputFirst && n != m.s.size {
				delete(m.warm, n)
			}
		}
	}
	for inUse := true; inUse; {
		m.marks++
		inUse = m.marks == 0 || m.marks == testPoison
		for _, c := range m.conns {
			inUse = inUse || c.mark == m.marks
		}
	}
	dc := &dnConn{dn: m.dn, sel: m.s, loop: m.l, c: &fakeConn{}, index: -1}
	m.s.live++
	dc.live = true
	m.conns = append(m.conns, &spareConn{mark: m.marks, dc: dc})
}

func (m *sparesMachine) lendTo(t *rapid.T, c *spareConn) {
	made := m.p.made
	b := m.took(t, c, m.s.getBuf(), m.s.size, made)
	// A packet built into it fills it: given back, its bytes are what
	// is poisoned.
	c.dc.out, c.dc.lent = b[:cap(b)], true
}

// burst opens many connections at once, each with a packet buffer lent
// and its input grown to one size: enough to pass maxSpareBufs.
func (m *sparesMachine) burst(t *rapid.T) {
	n := rapid.IntRange(1, 2*maxSpareBufs).Draw(t, "burst")
	k := rapid.IntRange(0, inClasses-1).Draw(t, "class")
	for range n {
		m.open(t)
		c := m.conns[len(m.conns)-1]
		m.lendTo(t, c)
		made := m.p.made
		c.dc.inBuf = m.took(t, c, c.dc.newBuf(inputFirst<<k), inputFirst<<k, made)
	}
}

func (m *sparesMachine) lend(t *rapid.T) {
	m.lendTo(t, m.pick(t, func(c *spareConn) bool { return !c.dc.lent }))
}

// giveBackOut gives back the packet buffers of some connections (a burst
// of them done with their packets), which stay open.
func (m *sparesMachine) giveBackOut(t *rapid.T) {
	lent := func(c *spareConn) bool { return c.dc.lent }
	m.pick(t, lent)   // (skips if none is lent)
	n := len(m.conns) // all
	if rapid.Bool().Draw(t, "some") {
		n = rapid.IntRange(1, len(m.conns)).Draw(t, "back")
	}
	for ; n > 0 && slices.ContainsFunc(m.conns, lent); n-- {
		c := m.pick(t, lent)
		b := c.dc.out
		c.dc.out, c.dc.lent = nil, false
		m.giveBack(t, c, [][]byte{b}, func() { m.s.putBuf(b) })
	}
}

// size draws the size of a buffer a connection grows into: mostly the
// next doubling from have (as readInput grows), sometimes one the
// selector keeps none of (a write's data for an odd length, or past
// 128 KiB).
func size(t *rapid.T, have int) int {
	n := max(2*have, inputFirst)
	if rapid.IntRange(0, 9).Draw(t, "odd") == 0 {
		n += 512
	}
	return n
}

// growInto grows a connection's buffer (*buf: its input, or its write's
// data) as the datanode does: into a buffer of the next size, the one
// grown out of given back through spare.
func (m *sparesMachine) growInto(t *rapid.T, buf func(*spareConn) *[]byte, spare func(*dnConn, []byte)) (*spareConn, []byte) {
	c := m.pick(t, func(c *spareConn) bool { return cap(*buf(c)) < inputFirst<<inClasses })
	n := size(t, cap(*buf(c)))
	made := m.p.made
	b := m.took(t, c, c.dc.newBuf(n), n, made)
	if old := *buf(c); old != nil {
		m.giveBack(t, c, [][]byte{old}, func() { spare(c.dc, old) })
	}
	*buf(c) = b
	return c, b
}

// grow grows c's input buffer as readInput does.
func (m *sparesMachine) grow(t *rapid.T) {
	m.growInto(t, func(c *spareConn) *[]byte { return &c.dc.inBuf }, (*dnConn).spare)
}

// write takes a write's data buffer (grown into as grow does) and, once
// the store has copied it, maybe gives it back (apply).
func (m *sparesMachine) write(t *rapid.T) {
	c, b := m.growInto(t, func(c *spareConn) *[]byte { return &c.dc.wdata }, (*dnConn).spareWriteData)
	if rapid.Bool().Draw(t, "applied") {
		c.dc.wdata = nil
		m.giveBack(t, c, [][]byte{b}, func() { c.dc.spareWriteData(b) })
	}
}

// shut closes a connection (dnConn.close), which gives its buffers back.
func (m *sparesMachine) shut(t *rapid.T) {
	c := m.pick(t, func(*spareConn) bool { return true })
	m.conns = slices.DeleteFunc(m.conns, func(o *spareConn) bool { return o == c })
	m.giveBack(t, c, c.bufs(), func() { c.dc.close("test") })
}

func (m *sparesMachine) wait(t *rapid.T) {
	// (Drawn from a few, around the trim's second: rapid's small
	// integers would seldom add up to two idle seconds.)
	ms := rapid.SampledFrom([]int{1, 100, 500, 999, 1000, 1001, 2000, 2500}).Draw(t, "ms")
	m.l.advance(m.l.now + time.Duration(ms)*time.Millisecond)
}

func (m *sparesMachine) Check(t *rapid.T) {
	s := m.s
	for k := range s.in {
		if len(s.in[k].bufs) > maxSpareBufs {
			t.Fatalf("%d spare input buffers of %d bytes, more than %d", len(s.in[k].bufs), inputFirst<<k, maxSpareBufs)
		}
		for _, b := range s.in[k].bufs {
			if cap(b) != inputFirst<<k {
				t.Fatalf("a buffer of %d bytes kept among those of %d", cap(b), inputFirst<<k)
			}
		}
	}
	what := ""
	switch {
	case len(m.conns) == 0:
		what = "with no connection left"
	case m.l.now-m.lastUse >= 2*spareTrimEvery:
		what = fmt.Sprintf("%v after the last use", m.l.now-m.lastUse)
	default:
		return
	}
	if _, grown := m.dn.SpareInputBuffers(); grown > 0 {
		t.Fatalf("%s the selector keeps %d grown input buffers", what, grown)
	}
	if n := m.dn.SpareBuffers(); n > maxSpareBufs {
		t.Fatalf("%s the selector keeps %d packet buffers, more than %d", what, n, maxSpareBufs)
	}
	if len(m.conns) > 0 {
		return
	}
	if n := m.dn.SelectorsLive(); n != 0 {
		t.Fatalf("with no connection left the selector counts %d", n)
	}
	for _, tm := range m.l.timers {
		if !tm.stopped {
			t.Fatalf("with no connection left a timer is pending at %v (the spare trim's outlives the connections)", tm.at)
		}
	}
}

// A selector's spare buffers, driven by random connections, never lend
// one buffer twice, are poisoned whole when given back, are reused, and
// are let go when unused or at rest.
func TestSelectorSpares(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &sparesMachine{}
		m.init(t)
		t.Repeat(map[string]func(*rapid.T){
			"open":  m.open,
			"lend":  m.lend,
			"burst": m.burst,
			"back":  m.giveBackOut,
			"grow":  m.grow,
			"write": m.write,
			"shut":  m.shut,
			"wait":  m.wait,
			"":      m.Check,
		})
	})
}

// A spare taken and given back within the trim's second was used: the
// trim keeps it. A steady load of writes, one every half second, each
// taking its data buffer from the spares and giving it back, allocates
// none after the first (a trim that judged the spares by their count
// alone, not by the fewest left since it last looked, dropped the one in
// use every second).
func TestSpareInUseOutlivesTheTrim(t *testing.T) {
	p := &poisonProc{}
	l := &procLoop{fakeLoop: &fakeLoop{}, p: p}
	s := &selector{loop: l, size: 1000}
	s.live++ // a connection stays open: the selector is not at rest
	dc := &dnConn{sel: s}
	for i := range 8 {
		l.advance(time.Duration(i) * 500 * time.Millisecond)
		dc.spare(dc.newBuf(64 << 10))
	}
	if p.made != 1 {
		t.Errorf("8 writes half a second apart allocated %d data buffers, want 1", p.made)
	}
}

// A burst of connections closing gives back more input buffers than the
// next are likely to need: a selector keeps 64 of each size, the first
// and the grown (which the trim would drop only a second later), and
// SpareInputBuffers counts them.
func TestSparesKeep64OfEachSize(t *testing.T) {
	l := &procLoop{fakeLoop: &fakeLoop{}, p: &poisonProc{}}
	s := &selector{loop: l, size: 1000}
	s.live++ // another connection stays open: the selector is not at rest
	for k := range inClasses {
		for range 100 {
			s.putIn(make([]byte, 0, inputFirst<<k))
		}
	}
	dn := &Datanode{selectors: []*selector{s}}
	if first, grown := dn.SpareInputBuffers(); first != maxSpareBufs || grown != (inClasses-1)*maxSpareBufs {
		t.Errorf("after 100 buffers of each size came back, the selector keeps %d of the first size and %d grown, want %d and %d",
			first, grown, maxSpareBufs, (inClasses-1)*maxSpareBufs)
	}
}

// The last connection to close drops the selector's grown spares at
// once, even one that holds no packet buffer and gives back only a
// first-size input buffer: nothing will grow into them, and the trim's
// timer must not outlive the connections.
func TestLastCloseDropsTheGrownSpares(t *testing.T) {
	l := &procLoop{fakeLoop: &fakeLoop{}, p: &poisonProc{}}
	s := &selector{loop: l, size: 1000}
	dn := &Datanode{p: l.p, main: l, selectors: []*selector{s}}
	var conns [2]*dnConn
	for i := range conns {
		conns[i] = &dnConn{dn: dn, sel: s, loop: l, c: &fakeConn{}, index: -1, live: true}
		s.live++
	}
	conns[0].inBuf = conns[0].newBuf(64 << 10) // a write's, grown
	conns[1].inBuf = conns[1].newBuf(inputFirst)
	conns[0].close("done")
	conns[1].close("done")
	if _, grown := dn.SpareInputBuffers(); grown != 0 || s.trimSpare.Armed() {
		t.Errorf("with no connection left the selector keeps %d grown input buffers (trim armed: %v), want none", grown, s.trimSpare.Armed())
	}
}

// The last close leaves a selector with at most maxSpareBufs packet
// buffers and no trim armed, whether more were given back while a
// connection was open (100: the trim was armed at the 65th; the close
// drops those past the cap at once, not a trim's second later) or
// exactly maxSpareBufs (none to drop, and nothing armed that would look
// again every second for the selector's life).
func TestLastCloseLeavesTheCapAndNoTrim(t *testing.T) {
	for _, lent := range []int{maxSpareBufs, 100} {
		l := &procLoop{fakeLoop: &fakeLoop{}, p: &poisonProc{}}
		s := &selector{loop: l, size: 1000}
		dn := &Datanode{p: l.p, main: l, selectors: []*selector{s}}
		c := &dnConn{dn: dn, sel: s, loop: l, c: &fakeConn{}, index: -1, live: true}
		s.live++
		var bufs [][]byte
		for range lent {
			bufs = append(bufs, s.getBuf())
		}
		l.advance(l.now + 300*time.Millisecond)
		for _, b := range bufs {
			s.putBuf(b)
		}
		c.close("done")
		if n := len(s.free.bufs); n != min(lent, maxSpareBufs) || s.trimSpare.Armed() {
			t.Errorf("%d lent and given back: the last close leaves %d spare packet buffers (trim armed: %v), want %d and no trim", lent, n, s.trimSpare.Armed(), min(lent, maxSpareBufs))
		}
		l.advance(l.now + 5*time.Second)
		if s.trimSpare.Armed() {
			t.Errorf("%d lent and given back: a trim armed 5 s after the last close", lent)
		}
	}
}
