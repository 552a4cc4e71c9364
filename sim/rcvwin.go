package sim

import (
	"math/bits"
	"time"
)

// The receive window and its buffer, as Linux 6.18 sizes them on loopback.
//
// Three quantities bound the window a receiver offers. The buffer
// (sk_rcvbuf) is counted in what segments cost, payload plus skb overhead,
// so the window is the free buffer scaled by the payload's share of that
// cost (scaling_ratio, measured from segments as they arrive). rcv_ssthresh
// caps it from below the buffer and grows by two segments for each segment
// received, but only while the buffer has room beyond it: a 65483-byte
// segment in a fresh 131072 buffer leaves none, so the first window stays
// at one segment until smaller segments or reads make room. And dynamic
// right-sizing (DRS) grows the buffer itself: once each receive RTT (the
// least time a window's worth of data took to arrive) it compares what the
// application read in that RTT with the most it read before, and when that
// rose makes room for twice the new amount and twice the rise again.
//
// The window offered is then rounded to the window scale's unit, and
// nothing is offered when little is free or the queue costs more than the
// buffer (freshWindow and selectWindow in tcp.go).
//
// This matters for the stall row of validate: with Nagle, ops of several
// writes stall on the delayed ACK while rcv_ssthresh climbs towards the
// buffer, so how far DRS grows the buffer early decides how many do.

// tcpRmemToWinScale is TCP_RMEM_TO_WIN_SCALE: scaling_ratio is in 256ths.
const tcpRmemToWinScale = 8

// sockMinRcvbuf is SOCK_MIN_RCVBUF (TCP_SKB_MIN_TRUESIZE: 2048 plus an
// aligned struct sk_buff): window_clamp never goes below half of it.
const sockMinRcvbuf = 2048 + 256

// rcvqSpace is tp->rcvq_space: what DRS measured last.
type rcvqSpace struct {
	space int           // the most the application read in one receive RTT
	seq   uint64        // copied_seq when the current measure began
	time  time.Duration // and when (tcp_mstamp)
}

// rcvRTTEst is tp->rcv_rtt_est: the least window-based sample (the time
// from a segment to the first one at least a window later), raised by
// timestamp samples while the receive queue is empty (updateRcvRTT).
type rcvRTTEst struct {
	rtt  time.Duration // the estimate; 0: none yet
	seq  uint64        // the sample ends when rcv_nxt reaches it
	time time.Duration // when the sample began
	on   bool          // a sample is under way
}

// winFromSpace is tcp_win_from_space: the window a buffer of space bytes
// holds at the current scaling ratio.
func (c *tcpConn) winFromSpace(space int) int {
	return int(int64(space) * int64(c.ratio) >> tcpRmemToWinScale)
}

// spaceFromWin is tcp_space_from_win, the inverse.
func (c *tcpConn) spaceFromWin(win int) int {
	return int(int64(win) << tcpRmemToWinScale / int64(c.ratio))
}

// truesize is what a received segment of n bytes costs the receive
// buffer (skb->truesize; a Unix socket's chunks count theirs likewise,
// unixSkbOverhead).
func (c *tcpConn) truesize(n int) int { return n + c.cfg.SkbOverhead }

// fullSpace is tcp_full_space: the window the whole buffer holds.
func (c *tcpConn) fullSpace() int { return c.winFromSpace(c.rcvBuf) }

// tcpSpace is tcp_space: the window the free buffer holds.
func (c *tcpConn) tcpSpace() int { return c.winFromSpace(c.rcvBuf - c.rmem) }

// initRcvWindow sets a new socket's window state as the SYN is built
// (tcp_select_initial_window): no segment measured yet, so the default
// ratio (one half); the window may be the whole buffer's worth.
func (c *tcpConn) initRcvWindow() {
	c.ratio = 1 << (tcpRmemToWinScale - 1) // TCP_DEFAULT_SCALING_RATIO
	c.windowClamp = c.fullSpace()
	c.rcvSsthresh = min(c.cfg.InitWindow, c.windowClamp)
}

// rmemMax is net.core.rmem_max's default: the window scale covers at
// least it.
const rmemMax = 212992

// windowScale is the scale the SYN announces (tcp_select_initial_window):
// enough for the largest window the buffer may come to hold: its own, or
// tcp_rmem[2]'s or rmem_max's, or only its own when it is fixed
// (tcp_connect_init limits the clamp to a locked buffer's space).
func (c *tcpConn) windowScale() int {
	space := c.windowClamp
	if !c.rcvBufLocked {
		space = max(space, c.cfg.RcvBufMax, rmemMax)
	}
	ws := bits.Len(uint(max(space, 1))) - 1 - 15 // ilog2(space) - 15
	return min(max(ws, 0), 14)
}

// initBufferSpace is tcp_init_buffer_space, run as the connection is
// established: the clamp keeps a segment in reserve when the buffer is
// large, rcv_ssthresh starts at the window the SYN offered, and DRS
// starts measuring.
func (c *tcpConn) initBufferSpace() {
	maxwin := c.fullSpace()
	mss := c.cfg.MSS
	c.windowClamp = min(c.windowClamp, maxwin)
	if c.windowClamp > 2*mss && c.windowClamp+mss > maxwin {
		c.windowClamp = max(2*mss, maxwin-mss)
	}
	c.rcvSsthresh = min(c.advWnd, c.windowClamp)
	c.rcvq = rcvqSpace{
		space: min(c.rcvSsthresh, c.advWnd, 10*mss),
		seq:   c.rcvNxt,
		time:  c.w.Now(),
	}
	c.mstamp = c.w.Now()
}

// measureRatio is the scaling-ratio half of tcp_measure_rcv_mss: a
// segment of a new full size sets the ratio from its cost, and a changed
// ratio moves the clamp with it.
func (c *tcpConn) measureRatio(n int) {
	r := n << tcpRmemToWinScale / c.truesize(n)
	r = max(r, 1)
	if r == c.ratio {
		return
	}
	c.ratio = r
	c.setWindowClamp(c.fullSpace())
	if c.windowClamp < c.rcvq.space {
		c.rcvq.space = c.windowClamp
	}
}

// setWindowClamp is tcp_set_window_clamp: a lower clamp pulls rcv_ssthresh
// down with it; a higher one lets it rise to the window last offered.
func (c *tcpConn) setWindowClamp(val int) {
	clamp := max(sockMinRcvbuf/2, val)
	if clamp == c.windowClamp {
		return
	}
	old := c.windowClamp
	c.windowClamp = clamp
	if clamp < old {
		c.rcvSsthresh = min(c.rcvSsthresh, clamp)
	} else {
		c.rcvSsthresh = max(c.rcvSsthresh, min(c.advWnd, clamp))
	}
}

// growWindow is tcp_grow_window: while the buffer has room beyond
// rcv_ssthresh, each segment of 128 bytes or more raises it by two
// segments (loopback's segments cost little beyond their payload once
// coalesced, so Linux's overhead test always passes), and asks for a
// quick ACK to announce it.
func (c *tcpConn) growWindow(n int) {
	if c.rcvSsthresh >= c.windowClamp {
		return // grown all the way (the common case): no room
	}
	room := min(c.windowClamp, c.tcpSpace()) - c.rcvSsthresh
	if room <= 0 {
		return
	}
	c.rcvSsthresh += min(room, max(2*c.cfg.MSS, 2*n))
	c.quick |= 1
}

// measureRcvRTT is tcp_rcv_rtt_measure: a sample runs from one segment to
// the first that reaches a window (as last offered) beyond it; the
// estimate keeps the least.
func (c *tcpConn) measureRcvRTT() {
	if c.rcvBufLocked {
		return // only autotuning reads the estimate
	}
	e := &c.rcvRTT
	if e.on {
		if c.rcvNxt < e.seq {
			return
		}
		c.updateRcvRTT(max(c.mstamp-e.time, time.Microsecond), true)
	}
	e.on, e.seq, e.time = true, c.rcvNxt+uint64(c.advWnd), c.mstamp
}

// measureRcvRTTTs is tcp_rcv_rtt_measure_ts, before the segment is
// queued: a full-sized segment with a new echo gives a sample of the
// milliseconds since the echoed timestamp. On loopback that is 0 (no
// sample, since Linux 6.16) unless a millisecond boundary passed since
// this end's segment the peer echoes, and then a whole millisecond, which
// the estimate takes in by an eighth when the receive queue is empty.
func (c *tcpConn) measureRcvRTTTs(s *segment) {
	if c.rcvBufLocked || s.tsecr == c.lastTsecr {
		return
	}
	c.lastTsecr = s.tsecr
	if s.size() < c.rcvMss {
		return
	}
	if delta := int32(c.w.tsNow() - s.tsecr); delta > 0 {
		c.updateRcvRTT(time.Duration(delta)*time.Millisecond, false)
	}
}

// updateRcvRTT is tcp_rcv_rtt_update: a smaller sample replaces the
// estimate; a larger one is ignored if it is window-based (winDep) or the
// receive queue holds data, else averaged in with a weight of 1/8.
func (c *tcpConn) updateRcvRTT(sample time.Duration, winDep bool) {
	e := &c.rcvRTT
	switch {
	case e.rtt == 0 || sample < e.rtt:
		e.rtt = sample
	case winDep || c.rcvQueued > 0:
	default:
		e.rtt += (sample - e.rtt) / 8
	}
}

// rcvSpaceAdjust is tcp_rcv_space_adjust, after each read: once a receive
// RTT has passed since the measure began, what the application read in it
// (less what is still queued) grows the buffer if it beat the best so far.
// Like Linux, it takes the time from the last segment sent or received
// (tcp_mstamp), not the read's. Every read asks and nearly every one is
// told no, so the test is kept small enough to inline; a locked buffer
// is never grown, so it is not measured.
func (c *tcpConn) rcvSpaceAdjust() {
	if !c.rcvBufLocked && c.rcvRTT.rtt != 0 && c.mstamp-c.rcvq.time >= c.rcvRTT.rtt {
		c.rcvSpaceMeasure()
	}
}

// rcvSpaceMeasure ends a measure that has lasted a receive RTT.
func (c *tcpConn) rcvSpaceMeasure() {
	copiedSeq := c.rcvNxt - uint64(c.rcvQueued)
	copied := int(copiedSeq-c.rcvq.seq) - c.rcvQueued
	if copied > c.rcvq.space {
		c.rcvbufGrow(copied)
	}
	c.rcvq.seq, c.rcvq.time = copiedSeq, c.mstamp
}

// rcvbufGrow is tcp_rcvbuf_grow: DRS is one RTT late, so the window should
// hold twice what was read, and the sender may double its rate in slow
// start, so twice the rise again; the buffer grows to hold that window
// (up to RcvBufMax) and the clamp follows.
func (c *tcpConn) rcvbufGrow(newval int) {
	oldval := max(c.rcvq.space, 1)
	c.rcvq.space = newval
	if c.rcvBufLocked {
		return
	}
	rcvwin := int64(newval) << 1
	rcvwin += (rcvwin * int64(newval-oldval) / int64(oldval)) << 1
	rcvbuf := min(c.spaceFromWin(int(min(rcvwin, 1<<40))), c.cfg.RcvBufMax)
	if rcvbuf > c.rcvBuf {
		c.rcvBuf = rcvbuf
		c.windowClamp = c.fullSpace()
	}
}

// lockRcvBuf sets the receive buffer as SO_RCVBUF (or a fault) does: fixed
// from now on, and the window's bounds pulled down to it.
func (c *tcpConn) lockRcvBuf(n int) {
	c.rcvBuf, c.rcvBufLocked = n, true
	w := c.fullSpace()
	c.windowClamp = min(c.windowClamp, w)
	c.rcvSsthresh = min(c.rcvSsthresh, w)
}
