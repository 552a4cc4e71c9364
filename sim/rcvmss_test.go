package sim

import (
	"testing"
	"time"
)

// Linux 6.6+ tcp_measure_rcv_mss (commit 4720852ed9af, "tcp: fix delayed
// ACKs for MSS boundary condition"): a segment of rcv_mss or more that
// carries PSH sets ICSK_ACK_PUSHED, so tcp_cleanup_rbuf ACKs at once when
// a receiver not in pingpong drains it. Without it a sender whose writes
// are all the same size waits 40 ms for every ACK.
func TestFullSizedPushedSegmentAckedOnDrain(t *testing.T) {
	h := newPair(t)
	h.exhaustQuick() // server: not pingpong, no quick-ACK credit, rcv_mss 536
	h.srv.setAutoRead(false)
	t0 := h.now()
	h.cli.write(600) // one segment of 600 ≥ rcv_mss, PSH set
	h.runTo(t0 + 5*ms)
	if h.srv.c.quick != 0 || h.srv.c.pingpong {
		t.Fatalf("server quick=%d pingpong=%v", h.srv.c.quick, h.srv.c.pingpong)
	}
	if _, ok := h.ackOf("server", int64(h.cli.wrote), t0); ok {
		t.Fatalf("ACK before the read")
	}
	h.srv.drain()
	if ack, ok := h.ackOf("server", int64(h.cli.wrote), t0); !ok || ack.T != t0+5*ms {
		h.runTo(t0 + 100*ms)
		ack, _ = h.ackOf("server", int64(h.cli.wrote), t0)
		t.Errorf("draining a full-sized PSH segment outside pingpong: ACK %v after the read, want at the read (ICSK_ACK_PUSHED)", ack.T-(t0+5*ms))
	}
}

// The user-visible effect: a sender with Nagle on whose messages are all
// one size (≥ rcv_mss) to a reader that does not answer. On Linux 6.6+
// each drained message is ACKed at the read, so the next message leaves
// at once; the sim before 2c6eee8 held it for the 40 ms delayed ACK.
func TestEqualSizedWritesDoNotStallOnNagle(t *testing.T) {
	h := newPair(t)
	h.exhaustQuick()
	t0 := h.now()
	h.cli.write(600)
	h.runTo(t0 + ms)
	h.cli.write(600)
	h.runTo(t0 + 100*ms)
	h.srv.checkGot(h.cli.wrote)
	segs := h.dataSegs("client", t0)
	if len(segs) != 2 {
		t.Fatalf("segments %v", lens(segs))
	}
	if d := segs[1].T - t0; d > 2*ms {
		t.Errorf("second 600-byte write left %v after the first, want at once (its predecessor was ACKed when the server read it)", d)
	}
}

// tcp_rcv_established (both the fast path and the slow path) queues a
// segment's data before it sends what the segment's ACK released
// (tcp_data_queue, then tcp_data_snd_check), so the released data carries
// the ACK of the data that just arrived and __tcp_ack_snd_check finds no
// ACK scheduled. The sim before 2c6eee8 sent the released data from
// onAck first, with the old rcv_nxt, and then delayed the ACK of the new
// data.
func TestReleasedDataAcksTheSegmentThatReleasedIt(t *testing.T) {
	h := newPair(t)
	step := func(d time.Duration, f func()) { f(); h.runTo(h.now() + d) }
	t0 := h.now()
	step(500*us, func() { h.cli.write(10) })
	step(500*us, func() { h.srv.write(10) }) // server: pingpong
	step(500*us, func() { h.cli.write(10) }) // client: pingpong
	step(500*us, func() { h.srv.write(10) }) // client delays its ACK
	step(500*us, func() { h.srv.write(10) }) // held by Nagle
	if !h.cli.c.pingpong || !h.srv.c.pingpong || h.srv.c.sndNxt == h.srv.c.sndEnd {
		t.Fatalf("setup: cli pingpong %v, srv pingpong %v, srv held %d", h.cli.c.pingpong, h.srv.c.pingpong, h.srv.c.sndEnd-h.srv.c.sndNxt)
	}
	t1 := h.now()
	step(500*us, func() { h.cli.write(10) }) // ACKs the server's data, releasing its tail
	want := int64(h.cli.wrote)
	step(100*ms, func() { h.cli.write(10) })
	h.srv.checkGot(h.cli.wrote)
	h.cli.checkGot(h.srv.wrote)
	released := h.dataSegs("server", t1)[0]
	if released.Ack < want {
		t.Errorf("server's released tail at %v acks %d, want %d: it should carry the ACK of the client's segment that released it", released.T-t0, released.Ack, want)
	}
	segs := h.dataSegs("client", t1)
	if d := segs[1].T - segs[0].T; d > ms {
		t.Errorf("client's next small write left %v after the previous one, want at once (that one was ACKed by the server's released data)", d)
	}
}

// tcp_measure_rcv_mss, for a segment below rcv_mss: one of 524 bytes or
// more (536+20 with the 32-byte header) records its size (last_seg_size);
// the next of the same size takes rcv_mss down to it and returns before
// marking ICSK_ACK_PUSHED. So the second of two equal small messages is
// not ACKed when a reader outside pingpong drains it: the delayed ACK
// (40 ms) is what lets a Nagle-held third message go. The sim before
// 2c6eee8 marked every small segment pushed and never lowered rcv_mss.
func TestSecondEqualSmallSegmentLowersRcvMss(t *testing.T) {
	h := newPair(t)
	h.exhaustQuick() // rcv_mss 536, not pingpong, no quick-ACK credit
	t0 := h.now()
	h.cli.write(530)
	h.runTo(t0 + ms)
	h.cli.write(530) // leaves at once: the first was ACKed at the read
	h.runTo(t0 + 2*ms)
	if got := h.srv.c.rcvMss; got != 530 {
		t.Errorf("rcv_mss after two 530-byte segments = %d, want 530 (last_seg_size rule)", got)
	}
	h.cli.write(530) // Nagle: held until the second is ACKed
	h.runTo(t0 + 100*ms)
	h.srv.checkGot(h.cli.wrote)
	segs := h.dataSegs("client", t0)
	if len(segs) != 3 || segs[1].T != t0+ms {
		t.Fatalf("segments %v", segs)
	}
	if d := segs[2].T - (t0 + 2*ms); d < 38*ms {
		t.Errorf("third write left %v after it was made, want it held for the delayed ACK of the second (≈40 ms)", d)
	}
}

// tcp_measure_rcv_mss's other size rule: a segment below 524 bytes
// (TCP_MSS_DEFAULT with the 20-byte header, counting the 32-byte header
// with timestamps) but of TCP_MIN_MSS+20 or more that carries no PSH
// (nor FIN: TCP_REMNANT) is taken for a sender's full size, since a
// sender leaves PSH off only inside a write; two of one size lower
// rcv_mss to it. Here a receive buffer of 1,200 bytes offers a 600-byte
// window, and the sender cuts a write into segments of half of it
// (tcp_bound_to_half_wnd), all but the last without PSH in the model,
// which sets PSH only at a write's end (Linux's forced_push also marks
// one inside a write once it passes half the peer's largest window: the
// model leaves that out).
func TestUnpushedSmallSegmentsLowerRcvMss(t *testing.T) {
	h := newPair(t, withBufs(0, 1200))
	t0 := h.now()
	h.cli.write(1500)
	h.runTo(t0 + 300*ms)
	h.srv.checkGot(1500)
	segs := h.dataSegs("client", t0)
	if len(segs) < 3 || segs[0].Len != 300 || segs[1].Len != 300 || segs[0].has('P') || segs[1].has('P') {
		t.Fatalf("segments %v (flags of the first %q), want unpushed ones of 300", lens(segs), segs[0].Flags)
	}
	if got := h.srv.c.rcvMss; got != 300 {
		t.Errorf("rcv_mss after unpushed 300-byte segments = %d, want 300", got)
	}
}

// The size rule's bound: the segment with its 32-byte header must reach
// 556 (TCP_MSS_DEFAULT and a 20-byte header), so two pushed segments of
// 523 bytes leave rcv_mss at 536, and two of 524 lower it.
func TestSmallSegmentSizeRuleStartsAt524Bytes(t *testing.T) {
	for _, tc := range []struct{ size, want int }{{523, 536}, {524, 524}} {
		h := newPair(t)
		h.exhaustQuick()
		t0 := h.now()
		h.cli.write(tc.size)
		h.runTo(t0 + ms)
		h.cli.write(tc.size)
		h.runTo(t0 + 2*ms)
		h.srv.checkGot(h.cli.wrote)
		if got := h.srv.c.rcvMss; got != tc.want {
			t.Errorf("rcv_mss after two pushed segments of %d = %d, want %d", tc.size, got, tc.want)
		}
	}
}
