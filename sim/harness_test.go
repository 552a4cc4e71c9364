package sim

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// The harness drives two simulated processes, "client" and "server",
// joined by one TCP connection. Test steps run between events, outside any
// callback, so what they do (a write, a read, an option) happens at exactly
// the virtual time the test chose; the wire is watched through Observe.

const (
	us = time.Microsecond
	ms = time.Millisecond

	harnessAddr = "server:7000"
)

// segRec is one "seg" trace event.
type segRec struct {
	T     time.Duration
	From  string
	Conn  uint64
	Seq   int64
	Len   int
	Ack   int64
	Win   int64
	Flags string
}

func (s segRec) has(flag byte) bool { return strings.IndexByte(s.Flags, flag) >= 0 }

type harness struct {
	t        *testing.T
	w        *World
	cli, srv *end
	ln       model.Listener
	segs     []segRec
	delacks  []Event
	events   []Event
	passed   []model.File // files received over Unix sockets
}

// end is one side of the connection.
type end struct {
	h        *harness
	name     string
	p        *Process
	c        *tcpConn
	autoRead bool // read everything as soon as it is readable
	wrote    int  // bytes accepted by Write so far
	got      []byte
	eof      bool
	err      error
	writable []time.Duration // when a Writable event was seen
}

type pairOpt func(*Config)

func withSeed(seed uint64) pairOpt { return func(c *Config) { c.Seed = seed } }
func withBufs(snd, rcv int) pairOpt {
	return func(c *Config) {
		if snd > 0 {
			c.TCP.SndBuf = snd
		}
		if rcv > 0 {
			// A buffer of this size, not one autotuning grows from it.
			c.TCP.RcvBuf, c.TCP.RcvBufMax = rcv, 0
		}
	}
}

// newHarness makes a world and starts watching it; no processes yet.
func newHarness(t *testing.T, opts ...pairOpt) *harness {
	t.Helper()
	cfg := DefaultConfig(1)
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, w: New(cfg)}
	h.w.Observe(h.observe)
	t.Cleanup(func() {
		if t.Failed() {
			h.dump()
		}
	})
	return h
}

// timesOutAtRetryLimit runs the world past the retry limit from t0, when
// c's peer vanished: c must still be alive margin before it, and have
// failed with ETIMEDOUT a second after.
func (h *harness) timesOutAtRetryLimit(c *tcpConn, t0, margin time.Duration) {
	h.t.Helper()
	limit := h.w.Config().TCP.RetryLimit
	h.runTo(t0 + limit - margin)
	if c.err != nil {
		h.t.Fatalf("failed %v before the retry limit %v: %v", margin, limit, c.err)
	}
	h.runTo(t0 + limit + time.Second)
	if !errors.Is(c.err, model.ErrTimedOut) {
		h.t.Fatalf("%v after the vanish: %v, want ETIMEDOUT", limit+time.Second, c.err)
	}
}

// idleProc spawns a process that runs nothing of its own, for tests that
// call its disk, buffers or faults directly.
func idleProc(t *testing.T, w *World, name string, pc model.ProcessConfig) *Process {
	t.Helper()
	p, err := w.Spawn(name, pc, func(model.Process) {})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Process)
}

// newServing returns a world whose server listens, with both ends set
// up to read everything they receive; the client is not started yet.
func newServing(t *testing.T, opts ...pairOpt) *harness {
	t.Helper()
	h := newHarness(t, opts...)
	h.srv = &end{h: h, name: "server", autoRead: true}
	h.cli = &end{h: h, name: "client", autoRead: true}
	h.startServer(model.ProcessConfig{}, 128)
	return h
}

// onceAfter calls at once, after the first event for which ready holds.
func (h *harness) onceAfter(ready func(h *harness) bool, at func(h *harness)) {
	done := false
	h.w.AfterEach(func() {
		if !done && ready(h) {
			done = true
			at(h)
		}
	})
}

// newPair returns a connected, idle pair at virtual time 10 ms; both ends
// read everything they receive.
func newPair(t *testing.T, opts ...pairOpt) *harness {
	t.Helper()
	h := newServing(t, opts...)
	h.startClient(false)
	h.runTo(10 * ms)
	if h.cli.c == nil || h.srv.c == nil || h.cli.c.state != tcpEstablished || h.srv.c.state != tcpEstablished {
		t.Fatalf("pair not connected by 10ms")
	}
	return h
}

func (h *harness) startServer(pc model.ProcessConfig, backlog int) {
	h.t.Helper()
	p, err := h.w.Spawn("server", pc, func(p model.Process) {
		ln, err := p.Listen("tcp", harnessAddr, backlog, p.MainLoop())
		if err != nil {
			h.t.Errorf("listen: %v", err)
			return
		}
		h.ln = ln
		ln.SetHandler(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				h.srv.attach(c)
			}
		})
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.srv.p = p.(*Process)
}

// serveEach has ln hand each connection it accepts to loop, with h as its
// handler.
func serveEach(ln model.Listener, loop model.Loop, h func(c model.Conn, ev model.Events)) {
	ln.SetHandler(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.SetHandler(loop, func(ev model.Events) { h(c, ev) })
	})
}

func (h *harness) startClient(writeInterest bool) {
	h.t.Helper()
	p, err := h.w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		c, err := p.Dial("tcp", harnessAddr, p.MainLoop(), h.cli.handle)
		if err != nil {
			h.t.Errorf("dial: %v", err)
			return
		}
		h.cli.c = c.(*tcpConn)
		if writeInterest {
			c.SetWriteInterest(true)
		}
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.cli.p = p.(*Process)
}

func (e *end) attach(c model.Conn) {
	e.c = c.(*tcpConn)
	c.SetHandler(e.p.MainLoop(), e.handle)
	if !e.autoRead {
		c.SetReadInterest(false)
	}
}

func (h *harness) observe(e *Event) {
	h.events = append(h.events, *e)
	switch e.Kind {
	case "seg":
		h.segs = append(h.segs, segRec{T: e.T, From: e.Proc, Conn: e.Conn, Seq: e.A, Len: int(e.B), Ack: e.C, Win: e.D, Flags: e.S})
	case "delack":
		h.delacks = append(h.delacks, *e)
	}
}

func (h *harness) dump() {
	for _, s := range h.segs {
		h.t.Logf("%12v %-7s conn %d seq %d len %d ack %d win %d %s", s.T, s.From, s.Conn, s.Seq, s.Len, s.Ack, s.Win, s.Flags)
	}
	for _, d := range h.delacks {
		h.t.Logf("%12v %-7s delack conn %d", d.T, d.Proc, d.Conn)
	}
}

// runTo processes every event up to and including virtual time t.
func (h *harness) runTo(t time.Duration) {
	h.t.Helper()
	if t < h.w.now {
		h.t.Fatalf("runTo(%v): already at %v", t, h.w.now)
	}
	if err := h.w.RunFor(t - h.w.now); err != nil {
		h.t.Fatalf("run: %v", err)
	}
}

func (h *harness) now() time.Duration { return h.w.now }

// --- the ends ---

func (e *end) handle(ev model.Events) {
	if ev&model.Writable != 0 {
		e.writable = append(e.writable, e.h.w.Now())
		e.c.SetWriteInterest(false)
	}
	if ev&model.Readable != 0 && e.autoRead {
		e.drain()
	}
	if ev&model.Hangup != 0 {
		if e.err == nil {
			e.err = e.c.Err()
		}
		// Hangup is level-triggered: stop listening, as a loop would
		// after closing.
		e.c.SetHandler(e.p.MainLoop(), nil)
	}
}

// drain reads until the socket would block; EOF and errors are recorded.
func (e *end) drain() int {
	buf := make([]byte, 256<<10)
	total := 0
	for {
		n, err := e.c.Read(buf)
		e.got = append(e.got, buf[:n]...)
		total += n
		switch {
		case err == nil:
			continue
		case errors.Is(err, model.ErrWouldBlock):
		case errors.Is(err, io.EOF):
			e.eof = true
			e.c.SetReadInterest(false)
		default:
			if e.err == nil {
				e.err = err
			}
			e.c.SetHandler(e.p.MainLoop(), nil)
		}
		return total
	}
}

func (e *end) setAutoRead(on bool) {
	e.autoRead = on
	e.c.SetReadInterest(on)
}

// pattern is the byte stream each side writes, so readers can check it.
func pattern(off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte((off + i) % 251)
	}
	return b
}

func (e *end) tryWrite(n int, more bool) (int, error) {
	var k int
	var err error
	if more {
		k, err = e.c.WriteMore(pattern(e.wrote, n))
	} else {
		k, err = e.c.Write(pattern(e.wrote, n))
	}
	e.wrote += k
	return k, err
}

// write writes n bytes and fails the test unless all were accepted.
func (e *end) write(n int) {
	e.h.t.Helper()
	k, err := e.tryWrite(n, false)
	if err != nil || k != n {
		e.h.t.Fatalf("%s: write(%d) = %d, %v", e.name, n, k, err)
	}
}

func (e *end) writeMore(n int) {
	e.h.t.Helper()
	k, err := e.tryWrite(n, true)
	if err != nil || k != n {
		e.h.t.Fatalf("%s: writeMore(%d) = %d, %v", e.name, n, k, err)
	}
}

// checkGot verifies that e received exactly n bytes of its peer's stream.
func (e *end) checkGot(n int) {
	e.h.t.Helper()
	if len(e.got) != n {
		e.h.t.Fatalf("%s received %d bytes, want %d", e.name, len(e.got), n)
	}
	if string(e.got) != string(pattern(0, n)) {
		e.h.t.Fatalf("%s received corrupted bytes", e.name)
	}
}

func (e *end) noDelay(on bool) {
	if err := e.c.SetNoDelay(on); err != nil {
		e.h.t.Fatal(err)
	}
}

// --- the wire ---

// dataSegs lists data segments sent by from at or after t0.
func (h *harness) dataSegs(from string, t0 time.Duration) []segRec {
	var out []segRec
	for _, s := range h.segs {
		if s.From == from && s.Len > 0 && s.T >= t0 {
			out = append(out, s)
		}
	}
	return out
}

// ackOf is the first segment from `from`, sent at or after t0, whose ACK
// covers sequence number ack.
func (h *harness) ackOf(from string, ack int64, t0 time.Duration) (segRec, bool) {
	for _, s := range h.segs {
		if s.From == from && s.T >= t0 && s.has('.') && s.Ack >= ack {
			return s, true
		}
	}
	return segRec{}, false
}

// mustAck is ackOf that fails the test when there is no such ACK.
func (h *harness) mustAck(from string, ack int64, t0 time.Duration) segRec {
	h.t.Helper()
	s, ok := h.ackOf(from, ack, t0)
	if !ok {
		h.t.Fatalf("no ACK of %d from %s after %v", ack, from, t0)
	}
	return s
}

// arrival is when a segment reaches the peer: at once when it is
// processed inline (loopback), else after the idle link carried it.
func (h *harness) arrival(s segRec) time.Duration {
	cfg := h.w.cfg.TCP
	if cfg.Inline {
		return s.T
	}
	return s.T + h.txTime(s) + cfg.Delay
}

// txTime is how long the timed link takes to carry s: its bytes and 40
// of headers at Bandwidth.
func (h *harness) txTime(s segRec) time.Duration {
	return time.Duration(int64(s.Len+40) * int64(time.Second) / h.w.cfg.TCP.Bandwidth)
}

func lens(segs []segRec) []int {
	out := make([]int, len(segs))
	for i, s := range segs {
		out[i] = s.Len
	}
	return out
}

// --- connection states the rules need ---

// warm makes the connection a reused one: the client sends a request of
// reqLen bytes at 10 ms and the server answers 1 ms later, which puts the
// server in pingpong mode (its ACKs are now delayed). Returns at 100 ms.
func (h *harness) warm(reqLen int) {
	h.t.Helper()
	h.cli.write(reqLen)
	h.runTo(h.now() + ms)
	h.srv.write(10)
	h.runTo(100 * ms)
	if !h.srv.c.pingpong {
		h.t.Fatalf("warm-up did not put the server in pingpong")
	}
	if h.srv.c.delack != nil || h.srv.c.ackSched {
		h.t.Fatalf("warm-up left an ACK pending")
	}
}

// exhaustQuick spends the server's quick-ACK credit with one-byte
// segments 1 ms apart, so the server is neither in quick-ACK mode nor in
// pingpong. Returns 100 ms later.
func (h *harness) exhaustQuick() {
	h.t.Helper()
	h.cli.noDelay(true)
	for i := 0; h.srv.c.quick > 0 || i == 0; i++ {
		if i > 40 {
			h.t.Fatalf("quick-ACK credit never ran out (quick=%d)", h.srv.c.quick)
		}
		h.cli.write(1)
		h.runTo(h.now() + ms)
	}
	h.cli.noDelay(false)
	h.runTo(h.now() + 100*ms)
	if h.srv.c.pingpong || h.srv.c.quick != 0 || h.srv.c.ackSched {
		h.t.Fatalf("server pingpong=%v quick=%d ackSched=%v", h.srv.c.pingpong, h.srv.c.quick, h.srv.c.ackSched)
	}
}
