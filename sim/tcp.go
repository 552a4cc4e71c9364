package sim

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"xceiver/model"
)

// TCPConfig holds the parameters of simulated TCP. The defaults are Linux
// 6.x on loopback (HZ=250).
type TCPConfig struct {
	MSS       int           // loopback: 65483
	Delay     time.Duration // one-way propagation
	Bandwidth int64         // bytes per second per direction
	SndBuf    int           // send buffer (bytes)
	// RcvBuf is a new connection's receive buffer (tcp_rmem[1]),
	// counted as Linux counts it: each queued segment costs its payload
	// plus SkbOverhead, and the window offered is the buffer's free
	// space times the payload's share of that cost (scaling_ratio).
	RcvBuf int
	// RcvBufMax is how far receive-buffer autotuning may grow the buffer
	// (tcp_rmem[2]: 32 MiB since Linux 6.16); at or below RcvBuf nothing
	// grows it. A buffer an application or a fault set is never
	// autotuned (SOCK_RCVBUF_LOCK). It also sets the window scale the
	// SYN announces (10 for 32 MiB), the unit every later window is
	// rounded up to.
	RcvBufMax int
	// SkbOverhead is what a received segment costs the receive buffer
	// beyond its payload (skb->truesize − len): on loopback the linear
	// head of an skb whose payload lies in page fragments. Linux 6.18 on
	// loopback showed a scaling ratio of 251/256 for 65483-byte segments
	// and offered 95232 after a fresh connection's first 32741-byte
	// segment; 1040 to 1056 give both.
	SkbOverhead int
	InitWindow  int           // window in the SYN (unscaled)
	Tick        time.Duration // jiffy: timers fire on this grid
	AtoMin      time.Duration // TCP_ATO_MIN = TCP_DELACK_MIN = 40 ms
	DelackMax   time.Duration // TCP_DELACK_MAX = 200 ms
	MaxQuick    int           // TCP_MAX_QUICKACKS = 16
	RTOMin      time.Duration // 200 ms
	SynRTO      time.Duration // first SYN retransmission: 1 s
	SynRetries  int           // tcp_syn_retries
	// RetryLimit is how long unacknowledged data is retransmitted before
	// the connection fails with ETIMEDOUT (tcp_retries2; shortened from
	// Linux's ≈15 minutes so runs stay short).
	RetryLimit time.Duration
	// Inline is loopback's timing: a segment is not carried by a link
	// but processed by the receiver's input path in the softirq of the
	// syscall that sent it, and what that sends back (an immediate ACK)
	// is processed by the sender when the syscall releases its socket
	// (release_sock), all before the syscall returns. So an ACK can land
	// between two writes of one handler. Off, segments take Delay plus
	// their transmission time, as on a wire. Segments delayed by a fault
	// (a spike) always take the timed path.
	Inline bool
	// InlineOvertakes brings back the inline test of before code
	// version 2026.12-03, which let a segment go inline while one of its
	// connection's was still on the timed path (check's seed 72953: a
	// write's tail overtook its two timed segments and was dropped). Only
	// a regression test sets it, to show that its saved case still
	// reaches the path the fix guards.
	InlineOvertakes bool
}

// DefaultTCPConfig returns Linux loopback defaults.
func DefaultTCPConfig() TCPConfig {
	return TCPConfig{
		MSS:         65483,
		Delay:       10 * time.Microsecond,
		Bandwidth:   4 << 30,
		SndBuf:      1 << 20,
		RcvBuf:      131072,
		RcvBufMax:   32 << 20,
		SkbOverhead: 1048,
		InitWindow:  65535,
		Tick:        4 * time.Millisecond,
		AtoMin:      40 * time.Millisecond,
		DelackMax:   200 * time.Millisecond,
		MaxQuick:    16,
		RTOMin:      200 * time.Millisecond,
		SynRTO:      time.Second,
		SynRetries:  6,
		RetryLimit:  10 * time.Second,
		Inline:      true,
	}
}

const tcpMSSDefault = 536 // TCP_MSS_DEFAULT: the first guess of rcv_mss

type segFlags uint8

const (
	flagSYN segFlags = 1 << iota
	flagACK
	flagFIN
	flagRST
	flagPSH
)

func (f segFlags) String() string {
	b := make([]byte, 0, 5)
	if f&flagSYN != 0 {
		b = append(b, 'S')
	}
	if f&flagFIN != 0 {
		b = append(b, 'F')
	}
	if f&flagRST != 0 {
		b = append(b, 'R')
	}
	if f&flagPSH != 0 {
		b = append(b, 'P')
	}
	if f&flagACK != 0 {
		b = append(b, '.')
	}
	return string(b)
}

var flagStrings [32]string

func init() {
	for i := range flagStrings {
		flagStrings[i] = segFlags(i).String()
	}
}

// segment is what crosses the simulated wire. Sequence numbers count data
// bytes only (SYN and FIN are flags), starting at 0 in each direction.
type segment struct {
	seq   uint64
	data  []byte
	arr   *sndArray  // the sender's buffer data points into
	more  *segPieces // the bytes after data, if the segment spans chunks
	ack   uint64
	wnd   int32 // (the window field's 16 bits, scaled: at most 1 GiB)
	flags segFlags
	// ackFin says the ACK covers the peer's FIN (FIN is outside the byte
	// sequence here).
	ackFin bool
	// The timestamp option (RFC 7323, on every loopback segment): the
	// sender's millisecond clock, and the peer's it echoes.
	tsval, tsecr uint32
}

// size is the segment's data bytes, in all its pieces.
func (s *segment) size() int {
	if s.more != nil {
		return len(s.data) + s.more.n
	}
	return len(s.data)
}

// hold takes a hold on every array the segment's bytes are in, as an
// skb holds its pages until the receiver has read them.
func (s *segment) hold() {
	if s.arr != nil {
		s.arr.refs++
	}
	if s.more != nil {
		s.more.hold()
	}
}

func (ps *segPieces) hold() {
	for i := range ps.list {
		ps.list[i].arr.refs++
	}
}

// release lets go of a held segment that will not be read.
func (s *segment) release(w *World) {
	s.arr.release(w)
	if s.more != nil {
		s.more.release(w)
		s.more = nil
	}
}

// release lets go of the pieces' arrays and recycles the list.
func (ps *segPieces) release(w *World) {
	for i := range ps.list {
		ps.list[i].arr.release(w)
	}
	w.putPieces(ps)
}

// gather puts a segment's pieces in one array of its own, for a path that
// cuts its bytes anywhere (xmitPieces); the array is held by nothing yet.
func (s *segment) gather(w *World) {
	if s.more == nil {
		return
	}
	n := s.size()
	arr := w.newSndArray(n)
	buf := arr.buf[:n:n]
	k := copy(buf, s.data)
	for i := range s.more.list {
		k += copy(buf[k:], s.more.list[i].data)
	}
	w.putPieces(s.more)
	s.data, s.arr, s.more = buf, arr, nil
}

type tcpState uint8

const (
	tcpSynSent tcpState = iota
	tcpSynRcvd
	tcpEstablished
	tcpClosed // reset, or both directions finished and the fd closed
)

// tcpConn is one end of a simulated TCP connection.
type tcpConn struct {
	w       *World
	p       *Process
	id      uint64
	fd      int
	local   string
	remote  string
	peer    *tcpConn
	ln      *listener // for a passive end until accepted
	passive bool      // made by a listener (announces the MSS less timestamps)
	state   tcpState
	cfg     *TCPConfig

	socketEvents

	// Send side. sndq holds bytes [sndUna, sndEnd) (sndbuf.go), which
	// segments in flight or unread share.
	sndq    sendQueue
	sndUna  uint64
	sndNxt  uint64
	sndEnd  uint64
	sndSml  uint64 // end of the last small segment sent (Minshall)
	sndBuf  int
	peerWnd int
	maxWnd  int
	nodelay bool
	cork    bool
	more    bool // the last write had MSG_MORE
	finQ    bool // FIN queued after sndEnd
	finSent bool
	finAckd bool
	lsndtm  time.Duration
	rtxEv   *event
	rtxFrom time.Duration
	// peerWatch, if set, is called when the far end changes what PeerEnd
	// reports of this end (WatchPeerEnd).
	peerWatch func()
	probeEv   *event // flushes corked data when nothing is in flight
	// Tail loss probe (tlp.go): segments in flight with their send
	// times, the smoothed RTT they measure, the probe timer, and the
	// probe of the current episode (none while tlpOn is false).
	inflight     []sentSeg
	inflightHead int
	srtt         time.Duration
	tlpEv        *event
	tlpOn        bool
	tlpHigh      uint64
	tlpFin       bool

	// Receive side.
	rcv       []rcvPiece // received segments' bytes; rcv[rcvHead:] are unread
	rcvHead   int
	rcvOff    int
	rcvQueued int
	rcvNxt    uint64
	rcvWup    uint64 // rcv_nxt when we last sent a window
	advWnd    int    // window we last advertised (rcv_wnd)
	rcvMss    int
	lastSeg   int // icsk_ack.last_seg_size: the last small segment's size, if it told rcv_mss anything
	// The receive buffer and the window it allows (see rcvwin.go).
	rcvBuf       int  // sk_rcvbuf
	rcvBufLocked bool // set by the application or a fault: not autotuned
	rmem         int  // sk_rmem_alloc: what the queued segments cost
	ratio        int  // scaling_ratio: window bytes per 256 of buffer
	windowClamp  int  // window_clamp: the most the window may be
	rcvSsthresh  int  // rcv_ssthresh: the window grows to it as data arrives
	wscale       int  // rcv_wscale: our windows go out in units of 1<<wscale
	mstamp       time.Duration
	rcvq         rcvqSpace
	rcvRTT       rcvRTTEst
	tsRecent     uint32 // the peer's timestamp we echo (ts_recent)
	lastTsecr    uint32 // the echo last sampled (rcv_rtt_last_tsecr)
	quick        int
	pingpong     bool
	ato          time.Duration
	lrcvtm       time.Duration
	ackSched     bool
	pushed       bool
	pushed2      bool
	delack       *event // &delackEv while the timer is pending
	delackEv     event  // the delayed-ACK timer's event, reused: one per conn, not per ACK
	finRcvd      bool
	linkFree     time.Duration
	// timedIn counts the segments on the timed path (deliver) to this
	// end that it has not received yet; the peer sends inline only
	// when there are none (xmit).
	timedIn   int
	fragUntil uint64 // sequence numbers below it leave in pieces (Fragment)
	vanished  bool   // the peer host vanished: our segments go nowhere
	segTag    uint64 // the trace's word for this end's segments (segTag)
	synTries  int
	synEv     *event
	// The first arrays of inflight, rcv and sndq's chunks, inside the
	// connection: most connections never queue more (an op each), and
	// growing each slice from nil cost three allocations or so apiece.
	inflight0 [4]sentSeg
	rcv0      [4]rcvPiece
	chunks0   [2]sndChunk
	fdClosed  bool
	err       error
	errReturn bool // the error was returned once (later writes get EPIPE, reads EOF)
	// act is what the application last did on this end (Activity).
	act Activity
	// spliced are the ranges of this end's stream it sent with
	// sendfile that the peer has not read yet, in order (kept only
	// while CPUConfig.TCPRecvSplicedPerKB is set).
	spliced []seqRange
}

// seqRange is the bytes [from, to) of a stream.
type seqRange struct{ from, to uint64 }

// splicedIn is how many of the n bytes from sequence number from, which
// c reads now, its peer sent with sendfile; it forgets the ranges read.
func (c *tcpConn) splicedIn(from uint64, n int) int {
	p := c.peer
	if p == nil {
		return 0
	}
	to := from + uint64(n)
	k := 0
	for len(p.spliced) > 0 {
		r := p.spliced[0]
		if r.from >= to {
			break
		}
		k += int(min(r.to, to) - max(r.from, from))
		if r.to > to {
			break
		}
		p.spliced = append(p.spliced[:0], p.spliced[1:]...)
	}
	return k
}

func (w *World) newTCPConn(p *Process, local, remote string) *tcpConn {
	w.nextID++
	c := &tcpConn{
		w: w, p: p, id: w.nextID, fd: -1, local: local, remote: remote,
		cfg:    &w.cfg.TCP,
		rcvMss: tcpMSSDefault,
	}
	c.inflight, c.rcv, c.sndq.chunks = c.inflight0[:0], c.rcv0[:0], c.chunks0[:0]
	c.socketEvents = socketEvents{src: c, tcp: c, readInterest: true}
	c.segTag = segTag(p, c.id)
	c.delackEv = event{w: w, index: -1, op: connDelack, conn: c}
	c.sndBuf = c.cfg.SndBuf
	if p.sockSnd > 0 {
		c.sndBuf = p.sockSnd
	}
	c.rcvBuf, c.rcvBufLocked = c.cfg.RcvBuf, c.cfg.RcvBufMax <= c.cfg.RcvBuf
	if p.sockRcv > 0 {
		c.rcvBuf, c.rcvBufLocked = p.sockRcv, true
	}
	c.initRcvWindow()
	p.applyNetFaults(c)
	c.wscale = c.windowScale()
	return c
}

// --- model.Conn ---

func (c *tcpConn) ID() uint64         { return c.id }
func (c *tcpConn) LocalAddr() string  { return c.local }
func (c *tcpConn) RemoteAddr() string { return c.remote }
func (c *tcpConn) Err() error         { return c.err }

// Activity is what an application last did on its end of a TCP
// connection, for a harness that holds a server to its own timeouts
// (a server's idle clock runs from what it read and wrote, which its
// peer cannot see): when it last read bytes, and last called write (one
// that queued nothing included); 0 for never.
type Activity struct {
	Open            bool // its fd is still open
	Read, WriteCall time.Duration
}

// ReceiveBuffer implements model.ReceiveBufferer: the receive buffer
// (SO_RCVBUF), as autotuning has grown it or as an application or a fault
// set it.
func (c *tcpConn) ReceiveBuffer() (int, error) { return c.rcvBuf, nil }

func (c *tcpConn) readiness() model.Events {
	var ev model.Events
	if c.rcvQueued > 0 || c.finRcvd || c.err != nil {
		ev |= model.Readable
	}
	if c.finRcvd || c.err != nil {
		// RCV_SHUTDOWN, which a reset sets too (tcp_done): EPOLLRDHUP.
		ev |= model.PeerClosed
	}
	if c.err != nil {
		ev |= model.Hangup | model.Writable
	} else if c.finQ {
		// Shut for writing: a write fails at once with EPIPE, so it
		// does not block (tcp_poll sets EPOLLOUT on SEND_SHUTDOWN).
		ev |= model.Writable
	} else if c.state == tcpEstablished {
		// sk_stream_is_writeable: free space at least half of what is queued.
		queued := int(c.sndEnd - c.sndUna)
		free := c.sndBuf - queued
		if free > 0 && free >= queued/2 {
			ev |= model.Writable
		}
	}
	return ev
}

func (c *tcpConn) fdOpen() bool   { return !c.fdClosed }
func (c *tcpConn) dispatchReady() { c.dispatch() }

func (c *tcpConn) Read(p []byte) (int, error) { return c.read(p, len(p), nil) }

// ReadView implements model.ViewReader: it consumes what Read into a
// buffer of max bytes would, at the same modelled cost, and hands the
// bytes to f (if not nil) where they lie, without copying them.
func (c *tcpConn) ReadView(max int, f func([]byte)) (int, error) { return c.read(nil, max, f) }

// read takes up to max bytes off the receive queue, copying them into p
// (if not nil) or showing them to f (if not nil).
func (c *tcpConn) read(p []byte, max int, f func([]byte)) (int, error) {
	if c.fdClosed {
		return 0, model.ErrClosed
	}
	c.calls++
	c.w.charge(c.w.cfg.CPU.Syscall)
	c.w.interleave()
	if c.rcvQueued > 0 && max > 0 {
		from := c.rcvNxt - uint64(c.rcvQueued)
		n := 0
		for n < max && c.rcvHead < len(c.rcv) {
			seg := c.rcv[c.rcvHead].data[c.rcvOff:]
			k := min(len(seg), max-n)
			if p != nil {
				copy(p[n:], seg[:k])
			} else if f != nil {
				f(seg[:k])
			}
			n += k
			if k == len(seg) {
				c.rmem -= c.rcv[c.rcvHead].size
				c.rcv[c.rcvHead].arr.release(c.w)
				// The read segment stays in its slot until an arrival
				// overwrites it (the queue's array is reused once it
				// drains). Clearing it, whole or just its two
				// pointers, cost write barriers on every segment read
				// while the collector marked: about 5% of
				// BenchmarkSimEvents at GOMAXPROCS 1. What that keeps
				// alive is bounded, not growing: on a connection gone
				// quiet, the last segments' bytes (a send-buffer
				// array, or the writer's own buffer for a shared write
				// or sendfile), at most the queue's capacity of them,
				// for as long as the connection lives.
				c.rcvHead++
				c.rcvOff = 0
			} else {
				c.rcvOff += k
			}
		}
		c.rcvQueued -= n
		c.act.Read = c.w.now
		if c.rcvHead == len(c.rcv) {
			// Drained: reuse the queue's array instead of growing a new one.
			c.rcv, c.rcvHead = c.rcv[:0], 0
		}
		c.w.charge(c.w.cfg.CPU.TCPRead + time.Duration(int64(c.w.cfg.CPU.CopyPerKB+c.w.cfg.CPU.TCPRecvPerKB)*int64(n)/1024))
		if perKB := c.w.cfg.CPU.TCPRecvSplicedPerKB; perKB > 0 {
			c.w.charge(time.Duration(int64(perKB) * int64(c.splicedIn(from, n)) / 1024))
		}
		// Linux measures after each skb it copies; its receive queue
		// coalesces arriving segments into large skbs, so one read
		// here is one measure. (Measured per segment instead,
		// tcp-pattern's buffer stopped at 560 KB, not 1.0 MB, further
		// from real's 1.2-9.8 MB.)
		c.rcvSpaceAdjust()
		c.cleanupRbuf(n)
		c.w.softirq()
		return n, nil
	}
	if c.err != nil {
		// As tcp_recvmsg: a FIN received ends the stream before any
		// error (SOCK_DONE; a reset in CLOSE_WAIT reads EOF), and an
		// error is returned once, by a read or a write; the receive
		// side is shut after it, so later reads see EOF.
		if c.finRcvd || c.errReturn {
			return 0, io.EOF
		}
		return 0, c.takeErr()
	}
	if c.finRcvd {
		return 0, io.EOF
	}
	return 0, model.ErrWouldBlock
}

// takeErr returns the connection's error: the reset itself once, then
// EPIPE for writers, as Linux does after ECONNRESET is reported.
func (c *tcpConn) takeErr() error {
	if c.errReturn {
		// sk_err went to an earlier call; tcp_done shut the socket,
		// so writes see EPIPE whatever the error was (a reset, a
		// timeout, a refused connect).
		return model.ErrPipe
	}
	c.errReturn = true
	return c.err
}

func (c *tcpConn) Write(p []byte) (int, error)     { return c.write(p, false, false, nil) }
func (c *tcpConn) WriteMore(p []byte) (int, error) { return c.write(p, true, false, nil) }

// WriteShared implements model.SharedWriter: the send buffer keeps p
// itself instead of a copy (the caller never changes it again), at the
// modelled cost of a copying write.
func (c *tcpConn) WriteShared(p []byte) (int, error) { return c.write(p, false, true, nil) }

// sendfile queues p, bytes of a file's page cache, as sendfile(2) does:
// no user-space copy, so the call costs the calibrated sendfile CPU
// (SendfilePerKB: the stack's work on spliced pages) instead of a copy
// and the write path's per-KiB cost. The send buffer holds p, bytes of
// ino's array, itself, as the kernel holds the pages, and marks ino lent
// when it does, so that the file copies its array before it changes them.
func (c *tcpConn) sendfile(ino *inode, p []byte) (int, error) { return c.write(p, false, false, ino) }

// sendRoom is what a write could queue now (0 when it could not).
func (c *tcpConn) sendRoom() int {
	if c.fdClosed || c.err != nil || c.finQ || c.state != tcpEstablished {
		return 0
	}
	return max(c.sndBuf-int(c.sndEnd-c.sndUna), 0)
}

// sharedMin is the least a shared write queues by reference: below it a
// copy is cheaper than a chunk of its own, and keeps small writes in one
// chunk for the segments Nagle coalesces.
const sharedMin = 1024

// write queues p (sendfile: bytes of pages' array, else nil).
func (c *tcpConn) write(p []byte, more, shared bool, pages *inode) (int, error) {
	if c.fdClosed {
		return 0, model.ErrClosed
	}
	c.calls++
	c.w.charge(c.w.cfg.CPU.Syscall)
	c.w.interleave()
	c.act.WriteCall = c.w.now
	if c.err != nil {
		return 0, c.takeErr()
	}
	if c.finQ {
		return 0, model.ErrPipe
	}
	if c.state != tcpEstablished {
		return 0, model.ErrWouldBlock
	}
	free := c.sndBuf - int(c.sndEnd-c.sndUna)
	if free <= 0 {
		return 0, model.ErrWouldBlock
	}
	n := min(len(p), free)
	switch {
	case shared && n >= sharedMin:
		c.sndq.appendShared(c.w, p[:n], c.p)
	case pages != nil && n >= sharedMin:
		pages.lent = true
		c.sndq.appendShared(c.w, p[:n], nil)
	default:
		c.sndq.appendCopy(c.w, p[:n], c.sndBuf)
	}
	if span := c.p.netFaults.fragSpan; span > 0 {
		c.fragUntil = max(c.fragUntil, c.sndEnd+uint64(min(n, span)))
	}
	c.sndEnd += uint64(n)
	perKB := c.w.cfg.CPU.CopyPerKB + c.w.cfg.CPU.TCPSendPerKB
	if pages != nil {
		perKB = c.w.cfg.CPU.SendfilePerKB
		if c.w.cfg.CPU.TCPRecvSplicedPerKB > 0 {
			from := c.sndEnd - uint64(n)
			if k := len(c.spliced); k > 0 && c.spliced[k-1].to == from {
				c.spliced[k-1].to = c.sndEnd
			} else {
				c.spliced = append(c.spliced, seqRange{from, c.sndEnd})
			}
		}
	}
	c.w.charge(time.Duration(int64(perKB) * int64(n) / 1024))
	// MSG_MORE corks only this call's push (tcp_push passes
	// TCP_NAGLE_CORK); later pushes, on an ACK, use the socket's Nagle.
	c.more = more
	c.push(false)
	c.more = false
	c.w.softirq()
	return n, nil
}

// retireSnd gives up the send buffer of a connection that is closed and
// will never send again.
func (c *tcpConn) retireSnd() { c.sndq.retire(c.w) }

func (c *tcpConn) SetNoDelay(on bool) error {
	if c.fdClosed {
		return model.ErrClosed
	}
	c.nodelay = on
	if on {
		// TCP_NAGLE_PUSH: this push overrides even TCP_CORK for the
		// bytes already queued (__tcp_sock_set_nodelay).
		c.push(true)
		c.w.softirq()
	}
	return nil
}

func (c *tcpConn) SetCork(on bool) error {
	if c.fdClosed {
		return model.ErrClosed
	}
	c.cork = on
	if !on {
		// Uncorking pushes the held partial segment; Nagle still applies
		// unless NODELAY is set (__tcp_sock_set_cork adds TCP_NAGLE_PUSH
		// only with TCP_NAGLE_OFF).
		c.push(c.nodelay)
		c.w.softirq()
	}
	return nil
}

func (c *tcpConn) QuickAck() error {
	if c.fdClosed {
		return model.ErrClosed
	}
	// __tcp_sock_set_quickack: leave pingpong, mark the ACK pushed and
	// let tcp_cleanup_rbuf decide: it ACKs once the receive queue is
	// drained (or a full frame is unacked), not while data sits unread.
	c.pingpong = false
	if c.ackSched && c.state == tcpEstablished {
		c.pushed = true
		c.cleanupRbuf(1)
		c.w.softirq()
	}
	return nil
}

func (c *tcpConn) SendFDs(p []byte, files []model.File) (int, error) {
	return 0, fmt.Errorf("sendmsg SCM_RIGHTS on TCP: %w", model.ErrNotSupported)
}

func (c *tcpConn) ReadFDs(p []byte) (int, []model.File, error) {
	return 0, nil, fmt.Errorf("recvmsg SCM_RIGHTS on TCP: %w", model.ErrNotSupported)
}

func (c *tcpConn) CloseWrite() error {
	if c.fdClosed {
		return model.ErrClosed
	}
	if c.err != nil || c.finQ {
		return nil
	}
	if c.state == tcpSynSent {
		// shutdown(SHUT_WR) while connecting aborts the connect
		// (inet_shutdown calls tcp_disconnect, which fails it with
		// ECONNRESET); a SYN-ACK that still comes is answered with a
		// reset (onSynAck). Queuing a FIN instead left it unsent, as
		// push sends nothing before the handshake, and the server
		// waited for ever for it.
		c.die(model.ErrReset)
		return nil
	}
	c.finQ = true
	c.push(false)
	c.w.softirq()
	return nil
}

func (c *tcpConn) Close() error {
	if c.fdClosed {
		return model.ErrClosed
	}
	c.w.charge(c.w.cfg.CPU.Syscall)
	c.w.interleave()
	c.release("close")
	c.w.softirq()
	return nil
}

// release drops the fd and starts the kernel's close: a reset if data
// was left unread (as tcp_close does), a FIN after queued data otherwise.
func (c *tcpConn) release(how string) {
	c.fdClosed = true
	c.peerChanged()
	c.handler = nil
	unread := c.rcvQueued
	c.w.record(Event{Proc: c.p.name, Kind: "close", Conn: c.id, A: int64(unread), S: how})
	c.p.freeFD(c.fd)
	switch {
	case c.err != nil || c.state == tcpClosed:
		c.state = tcpClosed
		c.retireSnd()
	case c.state == tcpSynSent:
		c.state = tcpClosed
		c.synEv.cancel()
	case c.finished():
		// Both directions done: Linux's socket is closed already
		// (TCP_CLOSE, its time-wait twin holding the port), so
		// tcp_close sends nothing, not even for data left unread.
		c.maybeFinish()
	case unread > 0 || how == "abort":
		c.sendRST()
	default:
		c.finQ = true
		c.push(false)
	}
}

func (c *tcpConn) Abort() error {
	if c.fdClosed {
		return model.ErrClosed
	}
	c.release("abort")
	c.w.softirq()
	return nil
}

func (c *tcpConn) kill() {
	if !c.fdClosed {
		c.release("exit")
	}
}

// --- sending ---

// mssNow is the segment size goal: the MSS, bounded by half the largest
// window the peer has offered (tcp_bound_to_half_wnd).
func (c *tcpConn) mssNow() int {
	mss := c.cfg.MSS
	cutoff := c.maxWnd
	if cutoff > tcpMSSDefault {
		cutoff /= 2
	}
	if cutoff > 0 && mss > cutoff {
		mss = max(cutoff, 68)
	}
	return mss
}

// push sends what Nagle, cork and the peer's window allow
// (tcp_write_xmit). force sends a held partial segment once, ignoring
// Nagle and cork (TCP_NAGLE_PUSH).
func (c *tcpConn) push(force bool) {
	if c.state != tcpEstablished || c.err != nil || c.peer == nil {
		return
	}
	corked, sent := false, false
	for {
		unsent := int(c.sndEnd - c.sndNxt)
		if unsent == 0 {
			break
		}
		mss := c.mssNow()
		inflight := c.sndNxt - c.sndUna
		avail := int64(c.sndUna) + int64(c.peerWnd) - int64(c.sndNxt)
		n := min(unsent, mss)
		if int64(n) > avail {
			// Window-limited (tcp_snd_wnd_test): the next segment,
			// a full MSS or the tail, must fit the window whole;
			// Linux sends no part of it while data is in flight,
			// whose ACK will open the window. With nothing in flight
			// it would wait for the zero-window probe to send what
			// fits; loopback reopens windows by itself, so send it.
			if avail <= 0 || inflight > 0 {
				break
			}
			n = int(avail)
		} else if n < mss && n == unsent && !force && !c.finQ {
			if c.cork || c.more {
				corked = true
				break
			}
			// Minshall's Nagle: hold a small tail only while the last
			// small segment sent is unacknowledged.
			if !c.nodelay && inflight > 0 && c.sndSml > c.sndUna && c.sndSml <= c.sndNxt {
				break
			}
		}
		data, arr, more := c.sndq.slice(c.w, c.sndNxt, n)
		seq := c.sndNxt
		c.sndNxt += uint64(n)
		if n < mss {
			c.sndSml = c.sndNxt
		}
		flags := flagACK
		if c.sndNxt == c.sndEnd {
			flags |= flagPSH
		}
		c.xmit(&segment{seq: seq, data: data, arr: arr, more: more, flags: flags})
		c.sentSeg(seq, c.sndNxt, false)
		sent = true
		c.dataSent()
		// Sending data arms the retransmission timer, which replaces a
		// pending probe (they share icsk_retransmit_timer).
		c.probeEv.cancel()
		c.probeEv = nil
	}
	if corked && c.sndNxt == c.sndUna {
		c.armProbe()
	}
	if c.finQ && !c.finSent && c.sndNxt == c.sndEnd {
		c.finSent = true
		c.xmit(&segment{seq: c.sndNxt, flags: flagFIN | flagACK})
		c.sentSeg(c.sndNxt, c.sndNxt, true)
		sent = true
	}
	if sent {
		c.scheduleTLP()
	}
	if c.vanished {
		c.armRetransmit()
	}
}

// armProbe starts the probe timer for a corked tail with nothing in
// flight (tcp_write_xmit returns true, tcp_check_probe_timer arms
// ICSK_TIME_PROBE0 for tcp_probe0_base: the RTO, at least TCP_RTO_MIN).
// When it fires, tcp_write_wakeup sends the tail regardless of the cork, so
// a MSG_MORE or TCP_CORK tail leaves ≈200 ms later instead of never
// (packetdrill's sendmsg_msg_more.pkt). Only corked data arms it: a window
// limit has no probe here (loopback reopens windows by itself), and a
// probe that re-armed forever would keep a run from quiescing.
func (c *tcpConn) armProbe() {
	if c.probeEv != nil || c.vanished {
		return
	}
	c.probeEv = c.w.atConn(c.onTick(c.w.Now(), c.cfg.RTOMin), connProbe, c)
}

func (c *tcpConn) onProbe() {
	c.probeEv = nil
	if c.state != tcpEstablished || c.err != nil || c.sndNxt != c.sndUna || c.sndNxt == c.sndEnd {
		return
	}
	c.w.record(Event{Proc: c.p.name, Kind: "probe", Conn: c.id, A: int64(c.sndEnd - c.sndNxt)})
	c.push(true)
}

// onTick is when a kernel timer set d after now fires: on the jiffy grid,
// never before now+d. A zero timeout (jiffies + 0) fires at the next tick.
func (c *tcpConn) onTick(now, d time.Duration) time.Duration {
	tick, phase := c.cfg.Tick, c.w.tickPhase
	if tick <= 0 {
		return now + d
	}
	t := now + d - phase
	k := t / tick
	if k*tick < t || d == 0 && k*tick == t {
		k++
	}
	return k*tick + phase
}

// dataSent is tcp_event_data_sent: sending within ato of the last receive
// makes this side interactive (pingpong, threshold 1).
func (c *tcpConn) dataSent() {
	now := c.w.Now()
	c.mstamp = now // tcp_write_xmit refreshes tcp_mstamp
	c.lsndtm = now
	if now-c.lrcvtm < c.ato {
		c.pingpong = true
	}
}

// tsNow is the TCP timestamp clock (tcp_time_stamp_ts): the kernel
// clock's milliseconds. The jiffies tick on the same clock, so its
// millisecond boundaries fall where the jiffies' do (tickPhase); the
// hour keeps it positive.
func (w *World) tsNow() uint32 {
	return uint32((w.Now() - w.tickPhase + time.Hour) / time.Millisecond)
}

// xmit puts a segment on the wire, carrying our ACK and window.
func (c *tcpConn) xmit(s *segment) {
	w := c.w
	if s.flags&flagRST == 0 && c.state != tcpSynSent {
		s.flags |= flagACK
		s.ack = c.rcvNxt
		wnd := c.selectWindow()
		s.wnd = int32(wnd)
		s.ackFin = c.finRcvd
		c.ackSent(wnd)
	}
	s.tsval, s.tsecr = w.tsNow(), c.tsRecent
	if s.size() > 0 && s.seq < c.fragUntil && c.p.netFaults.fragPiece > 0 && !c.vanished && c.peer != nil {
		c.xmitPieces(*s)
		return
	}
	w.recordSeg(c, s)
	now := w.Now()
	stall := c.stallUntil()
	// Inline only when no timed segment of this connection can still be
	// on its way: order on the wire is kept, and the receiver drops data
	// out of order (onData: loopback never reorders, so nothing would
	// retransmit it). The link's time alone cannot tell: now is the
	// running thread's clock, which may be past events the world has not
	// run, since softirq does not interleave and an ACK it delivers
	// makes the peer send on this thread's clock (check's seed 72953: a
	// write's tail went inline ahead of its two timed segments, was
	// dropped, and the write stalled). So the peer's count of timed
	// segments still to arrive decides too.
	inline := c.cfg.Inline && stall <= now && (c.linkFree == 0 || c.linkFree+c.cfg.Delay < now) &&
		(c.peer == nil || c.peer.timedIn == 0 || c.cfg.InlineOvertakes)
	if !inline {
		start := max(now, c.linkFree, stall)
		tx := time.Duration(int64(s.size()+40) * int64(time.Second) / c.cfg.Bandwidth)
		c.linkFree = start + tx
	}
	peer := c.peer
	if c.vanished || peer == nil {
		if s.more != nil {
			w.putPieces(s.more) // (nothing held yet)
		}
		return
	}
	// The segment holds the send buffer's arrays (as an skb holds
	// pages) until the receiver has read them.
	s.hold()
	if inline {
		// Filled in place: append(softq, softSeg{...}) builds the
		// value on the stack and copies it, 4% of BenchmarkSimEvents.
		// (A slot past len is one runSoftirq left; both fields are
		// overwritten.)
		if n := len(w.softq); n < cap(w.softq) {
			w.softq = w.softq[:n+1]
		} else {
			w.softq = append(w.softq, softSeg{})
		}
		q := &w.softq[len(w.softq)-1]
		q.to = peer
		q.s = *s
		return
	}
	w.deliver(c.linkFree+c.cfg.Delay, peer, s)
}

// xmitPieces sends s as the path of a fragmenting process delivers it
// (Process.Fragment): its bytes below fragUntil in pieces of random size,
// each a random gap after the one before, the rest in one piece after
// them; every piece takes the timed path, so pieces keep their order and
// what the connection sends next comes after them.
func (c *tcpConn) xmitPieces(s segment) {
	w := c.w
	f := &c.p.netFaults
	s.gather(w)
	at := max(w.Now(), c.linkFree, c.stallUntil())
	for len(s.data) > 0 {
		n := len(s.data)
		if s.seq < c.fragUntil {
			n = min(n, int(c.fragUntil-s.seq), 1+w.fragRand.IntN(f.fragPiece))
			at += time.Duration(w.fragRand.Int64N(int64(f.fragGap) + 1))
		}
		piece := s
		piece.data = s.data[:n]
		if n < len(s.data) {
			piece.flags &^= flagPSH
		}
		s.seq += uint64(n)
		s.data = s.data[n:]
		w.recordSeg(c, &piece)
		at += time.Duration(int64(n+40) * int64(time.Second) / c.cfg.Bandwidth)
		if piece.arr != nil {
			piece.arr.refs++ // each piece holds the array until read
		}
		w.deliver(at+c.cfg.Delay, c.peer, &piece)
	}
	c.linkFree = at
}

// softirq runs the input path for the segments sent inline, in order,
// including those that processing sends (ACKs, data an ACK released),
// until none is left. Every syscall that can send calls it before it
// returns, and the world calls it between events; it does not nest, so
// a connection never receives in the middle of its own send. Each segment
// then costs the running thread CPU.Softirq: the receiver's work is done
// on the sender's CPU.
func (w *World) softirq() {
	// Inlined: most calls (every read, every event) find nothing.
	if len(w.softq) > 0 && !w.inSoftirq {
		w.runSoftirq()
	}
}

func (w *World) runSoftirq() {
	w.inSoftirq = true
	for i := 0; i < len(w.softq); i++ {
		// The element, not a copy: receiving may append to softq,
		// which leaves it where it is (or in the old array).
		d := &w.softq[i]
		d.to.receive(&d.s)
		// (Not cleared, as read leaves its segments: the next
		// segments sent inline overwrite it; until then it keeps at
		// most the queue's peak of connections and bytes alive.)
		w.charge(w.cfg.CPU.Softirq)
	}
	w.softq = w.softq[:0]
	w.inSoftirq = false
}

// softSeg is a segment sent inline, for softirq to deliver.
type softSeg struct {
	to *tcpConn
	s  segment
}

// delivery is a segment on its way to its receiver. Its carrier and
// event are recycled (World.deliveries), so a segment in flight costs no
// allocation.
type delivery struct {
	to *tcpConn
	s  segment
}

func (w *World) deliver(at time.Duration, to *tcpConn, s *segment) {
	to.timedIn++
	w.post(at, w.deliveries.bind(delivery{to: to, s: *s}))
}

// arrive is a delivery's event.
func (d delivery) arrive() {
	d.to.timedIn--
	d.to.receive(&d.s)
}

// freshWindow is __tcp_select_window before the no-shrink rule: free
// receive space, bounded by rcv_ssthresh, which grows as data arrives.
// Below half the buffer's window, quick ACKs stop and a free space under
// rcv_mss (or a sixteenth of the buffer) offers nothing, so the window
// does not dribble open. A scaled window is rounded up to the scale's
// unit, so that it survives the shift; an unscaled one is kept while it
// is within an MSS of the free space, else rounded down to MSS multiples.
func (c *tcpConn) freshWindow() int {
	mss := c.rcvMss
	free := c.tcpSpace()
	allowed := c.fullSpace()
	full := min(c.windowClamp, allowed)
	if mss > full {
		mss = full
		if mss <= 0 {
			return 0
		}
	}
	if free < full>>1 {
		c.quick = 0
		free &^= 1<<c.wscale - 1 // round_down
		if free < allowed>>4 || free < mss {
			return 0
		}
	}
	free = min(free, c.rcvSsthresh)
	if c.wscale > 0 {
		return c.alignWindow(free)
	}
	win := c.advWnd
	switch {
	case win <= free-mss || win > free:
		win = free - free%mss
	case mss == full && free > win+full>>1:
		win = free
	}
	return win
}

// alignWindow rounds a window up to a multiple of the window scale's unit
// (ALIGN(window, 1 << rcv_wscale)).
func (c *tcpConn) alignWindow(win int) int {
	unit := 1 << c.wscale
	return (win + unit - 1) &^ (unit - 1)
}

// selectWindow is the window we offer (tcp_select_window): the fresh
// window, but never shrinking the right edge already offered (rounded up
// to the scale's unit, which small segments could otherwise push along
// for ever) — unless the queue costs more than the buffer: Linux drops
// the segment that does not fit (ICSK_ACK_NOMEM) and offers nothing. The
// sim keeps what arrived (loopback loses nothing) and closes the window.
func (c *tcpConn) selectWindow() int {
	if c.rmem > c.rcvBuf {
		return 0
	}
	win := c.freshWindow()
	if cur := int(int64(c.rcvWup) + int64(c.advWnd) - int64(c.rcvNxt)); win < cur {
		win = c.alignWindow(cur)
	}
	return win
}

// ackSent is tcp_event_ack_sent: any segment carries our ACK, so a pending
// delayed ACK is cancelled and quick-ACK credit spent. wnd is the window
// the segment offered; like tcp_select_window, remember exactly that
// (rcv_wnd) together with the rcv_nxt it was offered from (rcv_wup).
func (c *tcpConn) ackSent(wnd int) {
	if c.ackSched && c.quick > 0 {
		c.quick--
		if c.quick == 0 {
			c.ato = c.cfg.AtoMin
		}
	}
	c.ackSched, c.pushed, c.pushed2 = false, false, false
	if c.delack != nil {
		c.delack.disarm()
		c.delack = nil
	}
	c.rcvWup = c.rcvNxt
	c.advWnd = wnd
}

func (c *tcpConn) sendAck() {
	if c.peer == nil || c.state == tcpClosed {
		return
	}
	c.xmit(&segment{seq: c.sndNxt, flags: flagACK})
}

func (c *tcpConn) sendRST() {
	c.xmit(&segment{seq: c.sndNxt, flags: flagRST})
	c.die(nil)
}

// die ends the connection: nothing more is sent or received.
func (c *tcpConn) die(err error) {
	c.state = tcpClosed
	if c.fdClosed {
		c.retireSnd()
	}
	if err != nil && c.err == nil {
		c.err = err
		c.peerChanged()
	}
	if c.delack != nil {
		c.delack.disarm()
		c.delack = nil
	}
	c.rtxEv.cancel()
	c.rtxEv = nil
	c.probeEv.cancel()
	c.probeEv = nil
	c.tlpEv.cancel()
	c.tlpEv = nil
	c.synEv.cancel()
	c.notify()
}

// armRetransmit watches data the peer has yet to take. Loopback loses
// nothing, so it matters only when the peer vanished: after RetryLimit the
// connection fails with ETIMEDOUT. Unsent data counts as well as
// unacknowledged: held back by a zero window with nothing in flight, it is
// what Linux's persist timer probes (tcp_probe_timer), and unanswered
// probes end the connection the same way; without it a sender whose
// reader vanished behind a closed window waited forever.
func (c *tcpConn) armRetransmit() {
	if c.rtxEv != nil || c.state == tcpClosed || !c.awaitsPeer() {
		return
	}
	c.rtxFrom = c.w.Now()
	c.rtxEv = c.w.atConn(c.w.Now()+c.cfg.RTOMin, connRetransmit, c)
}

func (c *tcpConn) onRetransmit() {
	c.rtxEv = nil
	if c.state == tcpClosed || !c.awaitsPeer() {
		return
	}
	if !c.vanished {
		return // loopback delivers; the ACK is on its way
	}
	if c.w.now-c.rtxFrom >= c.cfg.RetryLimit {
		c.die(model.ErrTimedOut)
		return
	}
	c.rtxEv = c.w.atConn(c.w.now+c.cfg.RTOMin, connRetransmit, c)
}

// awaitsPeer reports whether the connection has sent data or a FIN the
// peer has not acknowledged, or queued data it has not yet sent.
func (c *tcpConn) awaitsPeer() bool {
	return c.sndUna != c.sndEnd || (c.finSent && !c.finAckd)
}

// --- receiving ---

func (c *tcpConn) receive(s *segment) {
	n := s.size()        // (onData takes the segment's pieces)
	c.mstamp = c.w.Now() // tcp_mstamp_refresh
	if s.seq <= c.rcvWup && int32(s.tsval-c.tsRecent) >= 0 {
		// tcp_replace_ts_recent: echo the newest timestamp (PAWS:
		// never an older one) of a segment that starts where we
		// last acknowledged.
		c.tsRecent = s.tsval
	}
	if n == 0 {
		// A segment without data only records the echo it carries
		// (the fast path's rcv_rtt_last_tsecr); data samples it
		// (measureRcvRTTTs).
		c.lastTsecr = s.tsecr
	}
	if c.state == tcpClosed {
		// A dead socket answers data or FIN with a reset.
		if s.flags&flagRST == 0 && (n > 0 || s.flags&flagFIN != 0) && c.peer != nil {
			c.xmitRSTTo()
		}
		return
	}
	if s.flags&flagRST != 0 {
		switch {
		case c.finished():
			// Linux's socket is closed already (its time-wait
			// twin takes the reset): nothing to report.
		case c.state == tcpSynSent:
			c.die(model.ErrRefused)
		case c.finRcvd:
			c.die(model.ErrPipe)
		default:
			c.die(model.ErrReset)
		}
		return
	}
	if c.state == tcpSynSent {
		return // the SYN-ACK is handled by the dial path
	}
	if s.flags&flagACK != 0 {
		c.onAck(s)
	}
	if n > 0 && s.seq+uint64(n) <= c.rcvNxt {
		// Loopback keeps order, so this is data sent again (a tail loss
		// probe): dropped and ACKed at once, even on a closed socket.
		c.measureRcvRTTTs(s) // the slow path samples it too
		s.release(c.w)
		c.onDuplicate()
	} else if n > 0 {
		if c.fdClosed {
			// Data for a closed socket: tcp_rcv_state_process aborts
			// with a reset (LINUX_MIB_TCPABORTONDATA).
			c.sendRST()
			return
		}
		c.onData(s)
	}
	if s.flags&flagFIN != 0 {
		if !c.finRcvd {
			c.finRcvd = true
			c.peerChanged()
			c.onFin()
			c.notify()
		} else if n == 0 {
			c.onDuplicate() // the FIN again: a tail loss probe
		}
	}
	// tcp_data_snd_check, after the data is queued (tcp_rcv_established
	// queues it before sending what the ACK released, fast path and
	// slow): what leaves now carries the ACK of what just arrived.
	if s.flags&flagACK != 0 && c.state != tcpClosed && (c.sndNxt != c.sndEnd || c.finQ || c.vanished) {
		c.push(false) // else it would find nothing to send and no timer to arm
	}
	if n > 0 && c.ackSched && c.state != tcpClosed {
		c.ackSndCheck()
	}
	c.maybeFinish()
}

// onFin is tcp_fin: the FIN is acknowledged at once only if we closed
// first (FIN_WAIT1/2). In ESTABLISHED the socket moves to CLOSE_WAIT and
// enters pingpong, so the ACK is delayed: by the delayed-ACK timer (≈40 ms)
// after data, and at the next tick for a bare FIN, whose ato is still 0
// (packetdrill's tcp_basic_server.pkt).
func (c *tcpConn) onFin() {
	if c.finSent {
		c.sendAck()
		return
	}
	c.pingpong = true
	c.ackSched = true
	c.scheduleDelack()
}

// xmitRSTTo answers a segment that reached a dead socket. The reset does
// not go through xmit (the socket sends nothing else), so it takes the
// spikes on either host as the handshake's segments do.
func (c *tcpConn) xmitRSTTo() {
	peer := c.peer
	c.w.record(Event{Proc: c.p.name, Kind: "seg", Conn: c.id, A: int64(c.sndNxt), S: flagStrings[flagRST]})
	c.w.postConn(c.w.handshakeArrival(c.w.Now(), c.p, peer.p), connRST, peer, nil)
}

func (c *tcpConn) onAck(s *segment) {
	if s.ack > c.sndUna && s.ack <= c.sndNxt {
		c.sndUna = s.ack
		c.sndq.ackTo(c.w, c.sndUna)
		c.rtxEv.cancel()
		c.rtxEv = nil
	}
	if s.ackFin && c.finSent {
		c.finAckd = true
	}
	if c.ackedInflight() {
		c.scheduleTLP()
	}
	c.peerWnd = int(s.wnd)
	if c.peerWnd > c.maxWnd {
		c.maxWnd = c.peerWnd
	}
	// An ACK changes only writability: with no write interest, notify
	// can find something only if the socket is readable (or dead), which
	// it is not in the common case of a drained receive queue, or if a
	// connect's completion is still to be told (connected: Writable
	// whatever the interest, as real keeps EPOLLOUT registered until it
	// has told it).
	if c.writeInterest || c.rcvQueued > 0 || c.finRcvd || c.err != nil || c.connected {
		c.notify()
	}
}

func (c *tcpConn) onData(s *segment) {
	if s.seq != c.rcvNxt {
		s.release(c.w)
		if s.seq > c.rcvNxt {
			// A gap: loopback keeps order and loses nothing, so
			// the simulator reordered a stream (see xmit), and the
			// bytes dropped here would never come again. Fail
			// here rather than as a peer's stall seconds later.
			c.w.Fail(fmt.Errorf("process %s, connection %d: data at sequence %d arrived while %d was expected: the simulator reordered a stream", c.p.name, c.id, s.seq, c.rcvNxt))
		}
		return // loopback keeps order; duplicates are handled in receive
	}
	n := s.size()
	c.measureRcvRTTTs(s)
	if s.more == nil {
		c.rcv = append(c.rcv, rcvPiece{data: s.data, arr: s.arr, size: c.truesize(n)})
	} else {
		c.rcv = append(c.rcv, rcvPiece{data: s.data, arr: s.arr})
		c.rcv = append(c.rcv, s.more.list...)
		c.rcv[len(c.rcv)-1].size = c.truesize(n)
		c.w.putPieces(s.more)
		s.more = nil
	}
	c.rcvQueued += n
	c.rmem += c.truesize(n)
	c.rcvNxt += uint64(n)
	// tcp_event_data_recv.
	c.ackSched = true
	// tcp_measure_rcv_mss: full-sized segments teach rcv_mss (and a new
	// size the scaling ratio); small ones mark the ACK as pushed (twice:
	// pushed2).
	lss := c.lastSeg
	c.lastSeg = 0
	if n >= c.rcvMss {
		if n != c.rcvMss {
			c.measureRatio(n)
		}
		c.rcvMss = min(n, c.cfg.MSS)
		// Linux 6.6+: a full-sized segment with PSH likely ends a
		// write, so a drain outside pingpong ACKs it at once.
		if s.flags&flagPSH != 0 {
			c.pushed = true
		}
	} else if hdr := tcpHeaderLen; n+hdr >= tcpMSSDefault+20 || n+hdr >= tcpMinMSS+20 && s.flags&flagPSH == 0 {
		// A segment this size is a size the sender uses: a second one
		// of the same size lowers rcv_mss to it, unpushed.
		c.lastSeg = n
		if n == lss {
			c.rcvMss = n
		} else {
			c.markPushed()
		}
	} else {
		c.markPushed()
	}
	c.measureRcvRTT()
	c.dataRecv()
	if n >= 128 {
		c.growWindow(n)
	}
	c.notifyReadable()
}

// ackSndCheck is tcp_ack_snd_check, after the data is queued and what
// can be sent was sent (receive).
func (c *tcpConn) ackSndCheck() {
	// __tcp_ack_snd_check: more than one full frame received and the
	// right edge of the window advancing at least as far (the fresh
	// window, from rcv_nxt, no smaller than the last one, from rcv_wup),
	// or quick-ACK mode. With unread data holding the window back, the
	// ACK waits for the application's read (tcp_cleanup_rbuf). The
	// SO_RCVLOWAT clause never holds here: the data just arrived unread.
	if int(c.rcvNxt-c.rcvWup) > c.rcvMss && c.freshWindow() >= c.advWnd || c.inQuickAck() {
		c.sendAck()
	} else {
		c.scheduleDelack()
	}
}

// tcpHeaderLen is a loopback segment's TCP header: 20 bytes and the
// timestamp option (tp->tcp_header_len).
const tcpHeaderLen = 20 + tcpTimestampLen

// tcpMinMSS is TCP_MIN_MSS.
const tcpMinMSS = 88

// markPushed is the end of tcp_measure_rcv_mss for a small segment: the
// ACK is pushed, twice if it was already.
func (c *tcpConn) markPushed() {
	if c.pushed {
		c.pushed2 = true
	}
	c.pushed = true
}

// dataRecv is tcp_event_data_recv: the first data starts quick-ACK mode;
// later arrivals adapt ato; a long silence restarts quick ACKs.
func (c *tcpConn) dataRecv() {
	now := c.w.Now()
	if c.ato == 0 {
		c.incrQuickAck(c.cfg.MaxQuick)
		c.ato = c.cfg.AtoMin
	} else {
		m := now - c.lrcvtm
		switch {
		case m <= c.cfg.AtoMin/2:
			c.ato = c.ato/2 + c.cfg.AtoMin/2
		case m < c.ato:
			c.ato = min(c.ato/2+m, c.cfg.RTOMin)
		case m > c.cfg.RTOMin:
			c.incrQuickAck(c.cfg.MaxQuick)
		}
	}
	c.lrcvtm = now
}

// incrQuickAck is tcp_incr_quickack: as many quick ACKs as half-windows
// of rcv_mss fit in the window last offered (rcv_wnd), two if none does.
// A first segment of half the SYN window or more gets one.
func (c *tcpConn) incrQuickAck(maxQuick int) {
	q := c.advWnd / (2 * c.rcvMss)
	if q == 0 {
		q = 2
	}
	q = min(q, maxQuick)
	if q > c.quick {
		c.quick = q
	}
}

func (c *tcpConn) inQuickAck() bool { return c.quick > 0 && !c.pingpong }

// scheduleDelack arms the delayed-ACK timer. On loopback the smoothed RTT
// is far below 40 ms, so Linux caps ato at TCP_DELACK_MIN; the timer is on
// the jiffy grid, so it fires 40–44 ms later.
func (c *tcpConn) scheduleDelack() {
	ato := min(c.ato, c.cfg.AtoMin)
	if c.delack != nil {
		// tcp_send_delayed_ack: a timer that expires within ato/4 (in
		// jiffies) of the current jiffy is not worth waiting for, so
		// the ACK goes now. The timer fires a jiffy after its expiry
		// (onTick), hence the +1.
		if tick := c.cfg.Tick; tick > 0 {
			now := c.w.Now()
			jiffy := now - c.w.tickPhase
			jiffy -= ((jiffy % tick) + tick) % tick
			if c.delack.at <= jiffy+c.w.tickPhase+(time.Duration(int64(ato/tick)>>2)+1)*tick {
				c.sendAck()
			}
		}
		return
	}
	// Only c holds this handle, and it has fired or is disarmed (still
	// queued, dead, which schedule revives), so reusing it cannot cancel
	// anything else.
	ev := &c.delackEv
	c.w.schedule(ev, c.onTick(c.w.Now(), ato), nil)
	c.delack = ev
}

// onDelack: the delayed ACK is due. Missing it in pingpong leaves
// pingpong; otherwise ato inflates.
func (c *tcpConn) onDelack() {
	c.delack = nil
	if !c.ackSched || c.state == tcpClosed {
		return
	}
	c.w.record(Event{Proc: c.p.name, Kind: "delack", Conn: c.id})
	if c.pingpong {
		c.pingpong = false
		c.ato = c.cfg.AtoMin
	} else {
		c.ato = min(2*c.ato, c.cfg.DelackMax)
	}
	c.sendAck()
}

// cleanupRbuf is tcp_cleanup_rbuf: after the application reads, ACK if a
// full frame is unacknowledged, if a drained queue held pushed segments,
// or if the window has opened enough to be worth announcing.
func (c *tcpConn) cleanupRbuf(copied int) {
	if c.state == tcpClosed {
		return
	}
	timeToAck := false
	if c.ackSched {
		if int(c.rcvNxt-c.rcvWup) > c.rcvMss {
			timeToAck = true
		} else if copied > 0 && c.rcvQueued == 0 && (c.pushed2 || c.pushed && !c.pingpong) {
			timeToAck = true
		}
	}
	if !timeToAck && copied > 0 && !c.finRcvd {
		now := int(int64(c.rcvWup) + int64(c.advWnd) - int64(c.rcvNxt))
		if 2*now <= c.windowClamp {
			if nw := c.freshWindow(); nw != 0 && nw >= 2*now {
				timeToAck = true
			}
		}
	}
	if timeToAck {
		c.sendAck()
	}
}

// maybeFinish forgets a connection whose fd is closed and whose both
// directions are done.
func (c *tcpConn) maybeFinish() {
	if c.fdClosed && c.finished() {
		c.die(nil)
	}
}

// finished reports that both directions are done: our FIN sent and
// acknowledged, the peer's received. With its fd still open Linux's
// socket is then closed (tcp_time_wait, or LAST_ACK's end, runs
// tcp_done), though reads still drain what is queued.
func (c *tcpConn) finished() bool {
	return c.finSent && c.finAckd && c.finRcvd
}

// --- listening, connecting, accepting ---

type listener struct {
	w       *World
	p       *Process
	network string
	addr    string
	fd      int
	backlog int
	loop    *Loop
	handler func()
	pending []model.Conn // established, waiting for accept
	synRcvd int
	closed  bool
	queued  bool
}

func (w *World) listenOn(p *Process, network, addr string, backlog int, l *Loop) (*listener, error) {
	if backlog <= 0 {
		backlog = model.DefaultBacklog
	}
	if addr == "" || addr[len(addr)-1] == ':' || len(addr) > 2 && addr[len(addr)-2:] == ":0" {
		w.nextPort++
		addr = fmt.Sprintf("%s:%d", p.name, w.nextPort)
	}
	key := network + "/" + addr
	if old := w.listen[key]; old != nil && !old.closed {
		return nil, fmt.Errorf("listen %s %s: %w", network, addr, model.ErrAddrInUse)
	}
	fd, err := p.allocFD(model.FDListener, nil)
	if err != nil {
		return nil, fmt.Errorf("listen %s %s: %w", network, addr, err)
	}
	ln := &listener{w: w, p: p, network: network, addr: addr, fd: fd, backlog: backlog, loop: l}
	p.setFDObject(fd, ln)
	w.listen[key] = ln
	w.record(Event{Proc: p.name, Kind: "listen", A: int64(backlog), S: network + " " + addr})
	return ln, nil
}

func (ln *listener) Addr() string { return ln.addr }

// ListenQueue reports the connections waiting on the socket listening at
// network and addr (TCP's half-open ones included) and its backlog, as any
// local user reads them on Linux (ss -lnt, /proc/net/tcp): a flooder that
// keeps the queue short fills a server's connection cap without dropping
// anyone's SYN (ok false: nothing listens there).
func (w *World) ListenQueue(network, addr string) (queued, backlog int, ok bool) {
	ln := w.listen[network+"/"+addr]
	if ln == nil || ln.closed {
		return 0, 0, false
	}
	return len(ln.pending) + ln.synRcvd, ln.backlog, true
}

func (ln *listener) SetHandler(h func()) {
	ln.handler = h
	ln.notify()
}

func (ln *listener) notify() {
	if ln.queued || ln.closed || ln.handler == nil || len(ln.pending) == 0 {
		return
	}
	ln.queued = true
	ln.loop.enqueue(task{conn: ln})
}

func (ln *listener) dispatchReady() {
	ln.queued = false
	if ln.closed || ln.handler == nil || len(ln.pending) == 0 {
		return
	}
	ln.handler()
	ln.notify()
}

func (ln *listener) Accept() (model.Conn, error) {
	if ln.closed {
		return nil, model.ErrClosed
	}
	ln.w.charge(ln.w.cfg.CPU.Syscall)
	if len(ln.pending) == 0 {
		return nil, model.ErrWouldBlock
	}
	next := ln.pending[0]
	kind := model.FDSocket
	fd, err := ln.p.allocFD(kind, nil)
	if err != nil {
		ln.p.fds.acceptFails++
		return nil, err // the connection stays queued, as in Linux
	}
	// Slide the queue down rather than re-slice it from the front, so
	// its array is used again instead of one allocated per accept.
	n := copy(ln.pending, ln.pending[1:])
	ln.pending[n] = nil
	ln.pending = ln.pending[:n]
	switch c := next.(type) {
	case *tcpConn:
		c.fd = fd
		c.ln = nil
		ln.p.setFDObject(fd, c)
		c.peerChanged()
		ln.w.charge(ln.w.cfg.CPU.TCPAccept)
		ln.w.record(Event{Proc: ln.p.name, Kind: "accept", Conn: c.id, S: c.remote})
	case *unixConn:
		c.fd = fd
		ln.p.setFDObject(fd, c)
		ln.w.record(Event{Proc: ln.p.name, Kind: "accept", Conn: c.id, S: c.remote})
	}
	return next, nil
}

func (ln *listener) Close() error {
	if ln.closed {
		return model.ErrClosed
	}
	ln.kill()
	return nil
}

// kill closes the listening socket; connections never accepted are reset.
func (ln *listener) kill() {
	ln.closed = true
	ln.p.freeFD(ln.fd)
	for _, c := range ln.pending {
		switch c := c.(type) {
		case *tcpConn:
			c.sendRST()
		case *unixConn:
			c.abortUnaccepted()
		}
	}
	ln.pending = nil
	if cur := ln.w.listen[ln.network+"/"+ln.addr]; cur == ln {
		delete(ln.w.listen, ln.network+"/"+ln.addr)
	}
}

func (w *World) dialTCP(p *Process, addr string, l *Loop, h model.Handler) (model.Conn, error) {
	fd, err := p.allocFD(model.FDSocket, nil)
	if err != nil {
		return nil, fmt.Errorf("dial tcp %s: %w", addr, err)
	}
	w.nextPort++
	// One allocation for the address, where Itoa's string and the
	// concatenation took two.
	var buf [64]byte
	local := append(append(buf[:0], p.name...), ':')
	c := w.newTCPConn(p, string(strconv.AppendInt(local, int64(w.nextPort), 10)), addr)
	c.fd = fd
	c.state = tcpSynSent
	p.setFDObject(fd, c)
	c.loop, c.handler = l, h
	w.charge(w.cfg.CPU.Syscall + w.cfg.CPU.TCPDial)
	w.record(Event{Proc: p.name, Kind: "connect", Conn: c.id, S: addr})
	c.sendSYN()
	return c, nil
}

// tcpTimestampLen is TCPOLEN_TSTAMP_ALIGNED: the timestamp option every
// loopback segment after the SYN carries.
const tcpTimestampLen = 12

// synWindow is the window a SYN or SYN-ACK offers (tcp_select_initial_window):
// the initial window, never more than the receive buffer holds, rounded
// down to a multiple of the MSS the side announces. A connecting side
// announces the full advmss (tcp_connect_init: no timestamp seen yet), the
// listener advmss less the timestamp option (tcp_openreq_init_rwin). On
// loopback that is 65495 in the SYN and 65483 in the SYN-ACK.
func (c *tcpConn) synWindow() int {
	mss := c.cfg.MSS
	if !c.passive {
		mss += tcpTimestampLen
	}
	win := min(c.cfg.InitWindow, c.windowClamp)
	if win > mss {
		win -= win % mss
	}
	return win
}

func (c *tcpConn) sendSYN() {
	w := c.w
	c.synTries++
	w.record(Event{Proc: c.p.name, Kind: "seg", Conn: c.id, D: int64(c.synWindow()), S: flagStrings[flagSYN]})
	// A latency spike (Process.Spike) on either host holds the
	// handshake's segments as it holds every other.
	var to *Process
	if ln := w.listen["tcp/"+c.remote]; ln != nil {
		to = ln.p
	}
	w.postConn(w.handshakeArrival(w.Now(), c.p, to), connSYN, c, nil)
	// Retransmit the SYN if no answer comes (a full accept queue drops it).
	rto := c.cfg.SynRTO << (c.synTries - 1)
	c.synEv = w.atConn(w.Now()+rto, connSYNTimeout, c)
}

// onSYNTimeout: no SYN-ACK came within the SYN's RTO.
func (c *tcpConn) onSYNTimeout() {
	c.synEv = nil
	if c.state != tcpSynSent {
		return
	}
	if c.synTries > c.cfg.SynRetries {
		c.die(model.ErrTimedOut)
		return
	}
	c.sendSYN()
}

// connOp is an event run on a connection (event.op): c.run(op, peer).
type connOp uint8

const (
	connFn           connOp = iota // not one: the event runs its fn
	connSYN                        // the SYN arrives: w.onSYN(c)
	connSYNTimeout                 // c.onSYNTimeout()
	connSynAck                     // the SYN-ACK arrives: c.onSynAck(peer)
	connHandshakeAck               // the handshake's ACK arrives: c.onHandshakeAck()
	connRST                        // an RST arrives at c
	connDelack                     // c.onDelack()
	// Timers armed through atConn: a method value (c.onRetransmit) put
	// in an event is a closure allocated at every arming.
	connRetransmit // c.onRetransmit()
	connProbe      // c.onProbe()
	connTLP        // c.onTLP()
)

func (c *tcpConn) run(op connOp, peer *tcpConn) {
	switch op {
	case connSYN:
		c.w.onSYN(c)
	case connSYNTimeout:
		c.onSYNTimeout()
	case connSynAck:
		c.onSynAck(peer)
	case connHandshakeAck:
		c.onHandshakeAck()
	case connRST:
		c.receive(&segment{flags: flagRST})
	case connDelack:
		c.onDelack()
	case connRetransmit:
		c.onRetransmit()
	case connProbe:
		c.onProbe()
	case connTLP:
		c.onTLP()
	}
}

// onSYN is the listener's side of the handshake.
func (w *World) onSYN(c *tcpConn) {
	if c.state != tcpSynSent || c.peer != nil {
		// Connected, given up, or a retransmitted SYN that found its
		// request sock: the SYN-ACK is already on its way.
		return
	}
	ln := w.listen["tcp/"+c.remote]
	if ln == nil || ln.closed || ln.p.crashed {
		// Nobody listening: RST.
		w.record(Event{Kind: "seg", Conn: c.id, S: flagStrings[flagRST]})
		w.postConn(w.handshakeArrival(w.now, c.p, nil), connRST, c, nil)
		return
	}
	// sk_acceptq_is_full is "queued > backlog": Linux holds backlog+1.
	if len(ln.pending)+ln.synRcvd > ln.backlog {
		w.record(Event{Proc: ln.p.name, Kind: "synDrop", Conn: c.id, A: int64(c.synTries), S: ln.addr})
		return
	}
	s := w.newTCPConn(ln.p, ln.addr, c.local)
	s.state = tcpSynRcvd
	s.ln = ln
	s.passive = true
	s.peer, c.peer = c, s
	s.peerWnd, s.maxWnd = c.synWindow(), c.synWindow()
	ln.synRcvd++
	w.record(Event{Proc: ln.p.name, Kind: "seg", Conn: s.id, D: int64(s.synWindow()), S: flagStrings[flagSYN|flagACK]})
	s.advWnd = s.synWindow()
	// Each side echoes the other's SYN timestamp (both taken now).
	ts := w.tsNow()
	s.tsRecent, c.tsRecent = ts, ts
	// Linux sets the child's buffer space up when the handshake's ACK
	// makes it; here the client's first data can arrive before that
	// ACK's event runs, so set it up now.
	s.initBufferSpace()
	w.postConn(w.handshakeArrival(w.now, s.p, c.p), connSynAck, c, s)
}

// onSynAck: the client is established and sends the handshake's last ACK.
func (c *tcpConn) onSynAck(s *tcpConn) {
	if c.state != tcpSynSent {
		// The client gave up: tell the server side.
		s.die(model.ErrReset)
		if s.ln != nil {
			s.ln.synRcvd--
		}
		return
	}
	c.synEv.cancel()
	c.synEv = nil
	c.state = tcpEstablished
	c.peerWnd, c.maxWnd = s.synWindow(), s.synWindow()
	c.advWnd = c.synWindow()
	c.initBufferSpace()
	// The handshake's last ACK is the first segment with a scaled
	// window: tcp_select_window rounds it up to the scale's unit (65495
	// becomes 65536), and the server takes it as its peer's window.
	c.advWnd = c.selectWindow()
	s.peerWnd, s.maxWnd = c.advWnd, max(s.maxWnd, c.advWnd)
	c.lrcvtm = c.w.Now()
	c.w.record(Event{Proc: c.p.name, Kind: "seg", Conn: c.id, D: int64(c.advWnd), S: flagStrings[flagACK]})
	c.w.postConn(c.w.handshakeArrival(c.w.now, c.p, s.p), connHandshakeAck, s, nil)
	c.connected = true
	c.notify()
}

func (s *tcpConn) onHandshakeAck() {
	ln := s.ln
	if ln != nil {
		ln.synRcvd--
	}
	if s.state != tcpSynRcvd {
		return
	}
	if ln == nil || ln.closed || ln.p.crashed {
		s.sendRST()
		return
	}
	s.state = tcpEstablished
	s.lrcvtm = s.w.Now()
	ln.pending = append(ln.pending, s)
	ln.notify()
}

// PeerNoDelay reports the TCP_NODELAY option the other end of c has set
// (ok false if c is not a simulated TCP connection with a peer): what
// `ss -i` would show a test about the process at the far end.
func PeerNoDelay(c model.Conn) (on, ok bool) {
	tc, isTCP := c.(*tcpConn)
	if !isTCP || tc.peer == nil {
		return false, false
	}
	return tc.peer.nodelay, true
}

// PeerActivity reports what the other end of c (the one a listener
// accepted, for a dialled one) last did; ok is false if c is not a
// simulated TCP connection or its peer does not exist yet.
func PeerActivity(c model.Conn) (a Activity, ok bool) {
	tc, isTCP := c.(*tcpConn)
	if !isTCP || tc.peer == nil {
		return Activity{}, false
	}
	a = tc.peer.act
	a.Open = !tc.peer.fdClosed
	return a, true
}
