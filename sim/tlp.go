package sim

import "time"

// Tail loss probe (RFC 8985 §7; Linux tcp_schedule_loss_probe and
// tcp_send_loss_probe). With two or more segments unacknowledged, a timer
// of 2·srtt + 2 ms (TCP_TIMEOUT_MIN_US), in whole jiffies, fires if no ACK
// comes first: it sends new data if the window allows (Nagle off), else
// the last segment again, whose duplicate the receiver ACKs at once. On
// loopback nothing is lost, so what the probe does is hurry an ACK the
// receiver was delaying: a FIN after unacknowledged data is ACKed ≈4–8 ms
// later instead of by the 40 ms delayed ACK. With one segment in flight
// Linux adds the minimum RTO (200 ms) to cover a delayed ACK, later than
// any ACK loopback delays, so the model arms no probe then.

// sentSeg is a segment in flight: its sequence range, when it was sent,
// whether it is the FIN, and whether it was sent again (its ACK then
// gives no RTT sample: Karn's rule).
type sentSeg struct {
	seq, end uint64
	at       time.Duration
	fin      bool
	again    bool
}

// tlpMin is TCP_TIMEOUT_MIN_US, added to 2·srtt.
const tlpMin = 2 * time.Millisecond

func (c *tcpConn) sentSeg(seq, end uint64, fin bool) {
	if c.inflightHead == len(c.inflight) {
		c.inflight, c.inflightHead = c.inflight[:0], 0
	}
	c.inflight = append(c.inflight, sentSeg{seq: seq, end: end, at: c.w.Now(), fin: fin})
}

// packetsOut is tp->packets_out: segments sent and not yet acknowledged.
func (c *tcpConn) packetsOut() int { return len(c.inflight) - c.inflightHead }

// ackedInflight drops the segments the ACK just covered, takes an RTT
// sample from the oldest of them (tcp_clean_rtx_queue; none if any was
// sent again) and ends a probe episode the ACK covers. It reports whether
// anything was acknowledged.
func (c *tcpConn) ackedInflight() bool {
	n, again := 0, false
	var first time.Duration
	for c.inflightHead < len(c.inflight) {
		e := &c.inflight[c.inflightHead]
		if e.fin && !c.finAckd || !e.fin && e.end > c.sndUna {
			break
		}
		if n == 0 {
			first = e.at
		}
		again = again || e.again
		n++
		c.inflightHead++
	}
	if n == 0 {
		return false
	}
	if !again {
		c.rttSample(c.w.Now() - first)
	}
	if c.tlpOn && c.sndUna >= c.tlpHigh && (!c.tlpFin || c.finAckd) {
		c.tlpOn = false
	}
	return true
}

// rttSample updates srtt as tcp_rtt_estimator does (gain 1/8).
func (c *tcpConn) rttSample(m time.Duration) {
	if c.srtt == 0 {
		c.srtt = max(m, 1)
		return
	}
	c.srtt += (m - c.srtt) / 8
}

// scheduleTLP arms the probe after data was sent or an ACK advanced, or
// stops it once fewer than two segments are in flight. One probe per
// episode: while one is unacknowledged no other is armed (Linux's timer
// then acts as the RTO, which loopback never needs).
func (c *tcpConn) scheduleTLP() {
	// The common case, inlined: one segment in flight and no probe.
	if c.tlpEv == nil && c.packetsOut() < 2 {
		return
	}
	c.rescheduleTLP()
}

func (c *tcpConn) rescheduleTLP() {
	if c.packetsOut() < 2 || c.tlpOn || c.vanished || c.state != tcpEstablished || c.err != nil {
		c.tlpEv.cancel()
		c.tlpEv = nil
		return
	}
	d := 2*c.srtt + tlpMin
	if tick := c.cfg.Tick; tick > 0 {
		d = (d + tick - 1) / tick * tick // usecs_to_jiffies rounds up
	}
	at := c.onTick(c.w.Now(), d)
	if c.tlpEv != nil {
		if c.tlpEv.at == at {
			return
		}
		c.tlpEv.cancel()
	}
	c.tlpEv = c.w.atConn(at, connTLP, c)
}

func (c *tcpConn) onTLP() {
	c.tlpEv = nil
	if c.packetsOut() == 0 || c.tlpOn || c.vanished || c.state != tcpEstablished || c.err != nil || c.peer == nil {
		return
	}
	// New data first, if the peer's window takes it (push ignores Nagle
	// and cork when forced).
	if c.sndNxt < c.sndEnd && int64(c.sndNxt) < int64(c.sndUna)+int64(c.peerWnd) {
		from := c.sndNxt
		c.w.record(Event{Proc: c.p.name, Kind: "tlp", Conn: c.id, A: int64(from), B: int64(c.sndEnd - from)})
		c.tlpOn, c.tlpHigh, c.tlpFin = true, c.sndEnd, false
		c.push(true)
		c.tlpHigh = c.sndNxt
		c.tlpFin = c.finSent
		c.w.softirq()
		return
	}
	e := &c.inflight[len(c.inflight)-1]
	e.again = true
	c.tlpOn, c.tlpHigh, c.tlpFin = true, c.sndNxt, e.fin
	c.w.record(Event{Proc: c.p.name, Kind: "tlp", Conn: c.id, A: int64(e.seq), B: int64(e.end - e.seq)})
	if e.fin {
		c.xmit(&segment{seq: e.seq, flags: flagFIN | flagACK})
	} else {
		data, arr, more := c.sndq.slice(c.w, e.seq, int(e.end-e.seq))
		c.xmit(&segment{seq: e.seq, data: data, arr: arr, more: more, flags: flagACK | flagPSH})
	}
	c.w.softirq()
}

// onDuplicate answers a segment received again (tcp_data_queue's
// retransmit case, or a FIN again in CLOSE_WAIT): quick-ACK mode, which
// leaves pingpong, and an ACK at once.
func (c *tcpConn) onDuplicate() {
	if c.state == tcpClosed {
		return
	}
	c.incrQuickAck(c.cfg.MaxQuick)
	c.pingpong = false
	c.ato = c.cfg.AtoMin
	c.ackSched = true
	c.sendAck()
}
