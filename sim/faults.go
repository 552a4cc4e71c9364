package sim

import (
	"fmt"
	"time"

	"xceiver/model"
)

// Fault injection (docs/ARCHITECTURE.md §3). Every fault is deterministic: it acts at
// the virtual time it is called (from a kernel event scheduled with At, or
// from a callback) and records a "fault" event in the trace, so a replay
// sees it at the same place.

// procFaults are the network faults in force on one process.
type procFaults struct {
	// netStall: no segment sent by or to the process leaves before this
	// time (a latency spike). Segments queue behind it in order.
	netStall time.Duration
	// rcvBuf, if not 0, is the receive buffer of the process's new TCP
	// connections (a slow reader: a small receive window).
	rcvBuf int
	// resetFDPass, if set, resets the Unix connection of the process's
	// next SCM_RIGHTS send (ResetNextFDPass).
	resetFDPass int
	// frag*: the path splits the first fragSpan bytes of every write on
	// the process's TCP connections into pieces (Fragment).
	fragPiece, fragSpan int
	fragGap             time.Duration
}

const (
	resetBeforePass = 1 + iota
	resetAfterPass
)

// At runs fn at virtual time t as a kernel event: outside every process
// and costing no CPU. Test harnesses use it to inject faults and to change
// phases at exact times. A time in the past means now. It never runs
// inside a callback (Config.Interleave): a fault strikes between them.
func (w *World) At(t time.Duration, fn func()) {
	w.at(t, func() {
		// The harness may touch any process's state.
		for _, p := range w.procs {
			p.bumpEpoch()
		}
		fn()
	}).barrier = true
}

// Note records a harness event (a phase change) in the trace.
func (w *World) Note(what string) { w.record(Event{Kind: "phase", S: what}) }

func (w *World) fault(proc string, conn uint64, what string) {
	w.record(Event{Proc: proc, Kind: "fault", Conn: conn, S: what})
}

// TCPConns lists the ids of p's open TCP connections, in fd order,
// including those not yet established and those closing.
func (p *Process) TCPConns() []uint64 {
	var ids []uint64
	for _, o := range p.fds.objs {
		if c, ok := o.(*tcpConn); ok && !c.fdClosed {
			ids = append(ids, c.id)
		}
	}
	return ids
}

// IdleTCPConns lists p's established TCP connections with nothing in
// flight and nothing unread in either direction: connections parked in a
// keep-alive wait or a peer cache.
func (p *Process) IdleTCPConns() []uint64 {
	var ids []uint64
	for _, o := range p.fds.objs {
		c, ok := o.(*tcpConn)
		if !ok || c.fdClosed || c.state != tcpEstablished || c.err != nil {
			continue
		}
		if c.sndEnd != c.sndUna || c.rcvQueued != 0 {
			continue
		}
		if pc := c.peer; pc != nil && (pc.sndEnd != pc.sndUna || pc.rcvQueued != 0) {
			continue
		}
		ids = append(ids, c.id)
	}
	return ids
}

// findTCP returns the open end of connection id (the end whose fd is still
// open; either end if both are).
func (w *World) findTCP(id uint64) *tcpConn {
	for _, p := range w.procs {
		for _, o := range p.fds.objs {
			if c, ok := o.(*tcpConn); ok && c.id == id {
				return c
			}
		}
	}
	return nil
}

// ResetConn resets connection id as a middlebox would: both ends receive
// a RST now. It reports whether the connection was found alive.
func (w *World) ResetConn(id uint64) bool {
	c := w.findTCP(id)
	if c == nil || c.state == tcpClosed {
		return false
	}
	w.fault(c.p.name, id, "reset")
	peer := c.peer
	c.receive(&segment{flags: flagRST})
	if peer != nil && peer.state != tcpClosed {
		peer.receive(&segment{flags: flagRST})
	}
	return true
}

// VanishConn makes connection id's path go dark, as when the peer host
// disappears without a FIN: from now on neither end's segments arrive.
// An end with unacknowledged data retransmits and fails with ETIMEDOUT
// after TCPConfig.RetryLimit; an idle end notices nothing. Segments already
// on the wire still arrive. It reports whether the connection was found
// established: a handshake is not taken dark (its lost SYN or SYN-ACK
// would be retried for a minute and more, which the simulator does not
// model), so a connection still connecting is refused.
func (w *World) VanishConn(id uint64) bool {
	c := w.findTCP(id)
	if c == nil || c.state != tcpEstablished {
		return false
	}
	w.fault(c.p.name, id, "vanish")
	for _, e := range []*tcpConn{c, c.peer} {
		if e == nil {
			continue
		}
		e.vanished = true
		e.armRetransmit()
	}
	return true
}

// Spike delays every segment sent by or to p for d from now (a latency
// spike: a stalled NIC, a GC pause of the host). Segments keep their
// order; they leave when the stall ends.
func (p *Process) Spike(d time.Duration) {
	now := p.w.Now()
	p.w.fault(p.name, 0, fmt.Sprintf("spike %v", d))
	p.netFaults.netStall = max(p.netFaults.netStall, now+d)
}

// Pause stops p for d, as SIGSTOP then SIGCONT or a long collector pause
// would: none of its threads starts a callback or a work item until d has
// passed (one running now finishes first), while its kernel goes on — its
// sockets take data and acknowledge it up to their buffers, connections
// complete into its accept queues, its timers come due and wait. Its peers
// see a process that says nothing, which is what a client's timeouts are
// for. A second pause extends the one in force if it ends later, and
// never shortens it.
func (p *Process) Pause(d time.Duration) {
	now := p.w.Now()
	p.w.fault(p.name, 0, fmt.Sprintf("pause %v", d))
	p.pausedUntil = max(p.pausedUntil, now+d)
}

// SlowReader gives p's TCP connections — open ones and those made from now
// on — a receive buffer of n bytes, so their peers see a small window.
// n = 0 restores the default for new connections (open ones keep theirs).
func (p *Process) SlowReader(n int) {
	p.w.fault(p.name, 0, fmt.Sprintf("slow-reader %d", n))
	p.netFaults.rcvBuf = n
	if n <= 0 {
		return
	}
	for _, o := range p.fds.objs {
		if c, ok := o.(*tcpConn); ok && !c.fdClosed {
			c.lockRcvBuf(n)
		}
	}
}

// Fragment makes the path of p's TCP connections split the first span
// bytes of every write into pieces of 1 to piece bytes, cut at random,
// each leaving up to gap (at random) after the one before: as a path with
// a small MTU, a re-segmenting middlebox or a busy sender's TCP would, so
// that the peer reads a message in arbitrary pieces with gaps between
// them. Loopback never splits a small write; a datanode must not depend
// on that. Only the delivery is split: the sender's TCP (Nagle, windows,
// probes) sees the segment it sent. piece <= 0 turns it off.
func (p *Process) Fragment(piece, span int, gap time.Duration) {
	p.w.fault(p.name, 0, fmt.Sprintf("fragment %d/%d/%v", piece, span, gap))
	if piece <= 0 || span <= 0 {
		piece, span, gap = 0, 0, 0
	}
	p.netFaults.fragPiece, p.netFaults.fragSpan, p.netFaults.fragGap = piece, span, max(gap, 0)
	if piece > 0 && p.w.fragRand == nil {
		p.w.fragRand = p.w.derivedRand("fragment")
	}
}

// applyNetFaults sets up a new TCP connection of p under p's faults.
func (p *Process) applyNetFaults(c *tcpConn) {
	if n := p.netFaults.rcvBuf; n > 0 {
		c.lockRcvBuf(n)
	}
}

// stallUntil is when segments between c's process and its peer's may
// leave.
func (c *tcpConn) stallUntil() time.Duration {
	if c.peer != nil {
		return stallBetween(c.p, c.peer.p)
	}
	return stallBetween(c.p, nil)
}

// stallBetween is when segments between processes a and b (nil: not known
// yet, as for a SYN) may leave under their latency spikes.
func stallBetween(a, b *Process) time.Duration {
	t := a.netFaults.netStall
	if b != nil {
		t = max(t, b.netFaults.netStall)
	}
	return t
}

// handshakeArrival is when a handshake segment that a sends to b at from
// arrives: after the spikes on either host, then the path's delay (the
// handshake does not go through xmit, which does this for data).
func (w *World) handshakeArrival(from time.Duration, a, b *Process) time.Duration {
	return max(from, stallBetween(a, b)) + w.cfg.TCP.Delay
}

// SetDiskFaults switches p's disk faults (EIO, slow I/O) and records it.
func (p *Process) SetDiskFaults(f DiskFaults) {
	p.disk.SetFaults(f)
	p.recordDiskFaults()
}

// AddDiskFaults is Disk.AddFaults on p's disk, recording the faults in
// force when f comes and when it goes.
func (p *Process) AddDiskFaults(f DiskFaults) (remove func()) {
	rm := p.disk.AddFaults(f)
	p.recordDiskFaults()
	return func() {
		rm()
		p.recordDiskFaults()
	}
}

func (p *Process) recordDiskFaults() {
	f := &p.disk.faults
	p.w.fault(p.name, 0, fmt.Sprintf("disk eio read %.3f write %.3f slow %.3f", f.ReadEIO, f.WriteEIO, f.SlowIO))
}

// filler is an fd held by FDPressure.
type filler struct {
	p    *Process
	fd   int
	gen  int
	dead bool
}

func (f *filler) kill() { f.dead = true }

// FDPressure opens filler fds (kind FDFile) in p until only leave fds are
// free under its limit, as another part of the process hogging files
// would. The returned function closes them (those a crash already closed
// are skipped). It reports how many it opened.
func (p *Process) FDPressure(leave int) (release func(), n int) {
	p.w.fault(p.name, 0, fmt.Sprintf("fd-pressure leave %d", leave))
	// The fillers in one array: a pressure fault opens hundreds. fills
	// ends as the ones opened.
	fills := make([]filler, max(p.fds.limit-leave-p.fds.open, 0))
	for i := range fills {
		f := &fills[i]
		*f = filler{p: p, gen: p.gen}
		fd, err := p.allocFD(model.FDFile, f)
		if err != nil {
			fills = fills[:i]
			break
		}
		f.fd = fd
	}
	released := false
	return func() {
		if released {
			return
		}
		released = true
		p.w.fault(p.name, 0, fmt.Sprintf("fd-pressure release %d", len(fills)))
		for i := range fills {
			if f := &fills[i]; !f.dead && f.gen == p.gen {
				f.dead = true
				p.freeFD(f.fd)
			}
		}
	}, len(fills)
}

// BusyUntil is when p's threads finish the callbacks and work items they
// started: each runs to completion in virtual time, so one that met a slow
// disk keeps its thread busy after the fault is gone.
func (p *Process) BusyUntil() time.Duration {
	var t time.Duration
	for _, l := range p.loops {
		if !l.dead() {
			t = max(t, l.busyUntil)
		}
	}
	for _, wp := range p.pools {
		if !wp.closed && wp.gen == p.gen {
			for _, th := range wp.workers {
				t = max(t, th.busyUntil)
			}
		}
	}
	return t
}

// Dark reports whether a simulated TCP connection's path went dark
// (VanishConn): its ends hear nothing more of each other, not even the
// reset a closed end answers data with.
func Dark(c model.Conn) bool {
	tc, ok := c.(*tcpConn)
	return ok && tc.vanished
}

// Heard reports whether c's own end has heard its peer close (a FIN or
// a reset arrived), read or not: what EPOLLRDHUP would report.
func Heard(c model.Conn) bool {
	tc, ok := c.(*tcpConn)
	return ok && tc.heard()
}

// heard reports whether this end has heard its peer close: a FIN or a
// reset arrived.
func (c *tcpConn) heard() bool { return c.finRcvd || c.err != nil }

// WatchPeerEnd has f called whenever what PeerEnd reports of c may have
// changed: the far end got its fd (accepted), closed it, or heard that c
// closed. A harness that watches many connections then looks only at
// those that changed, where a look at every one each millisecond was a
// tenth of a datanode seed's instructions. f runs inside the simulator's
// step (a delivery, a syscall): it should only note the change. It
// replaces a watcher set before, and reports false for a connection
// that is not a simulated TCP one.
func WatchPeerEnd(c model.Conn, f func()) bool {
	tc, ok := c.(*tcpConn)
	if ok {
		tc.peerWatch = f
	}
	return ok
}

// peerChanged tells c's peer's watcher that c changed what PeerEnd
// reports of it.
func (c *tcpConn) peerChanged() {
	if q := c.peer; q != nil && q.peerWatch != nil {
		q.peerWatch()
	}
}

// PeerEnd reports the far end of a simulated TCP connection: its id,
// whether it holds an fd now (accepted and not yet closed), and whether
// it has heard that c closed (a FIN or a reset arrived). Property checks
// use it to see how long a server keeps a connection to a peer they drive.
func PeerEnd(c model.Conn) (id uint64, open, heard bool) {
	tc, ok := c.(*tcpConn)
	if !ok || tc.peer == nil {
		return 0, false, false
	}
	p := tc.peer
	return p.id, p.fd >= 0 && !p.fdClosed, p.heard()
}
