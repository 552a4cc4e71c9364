package sim

import (
	"testing"
	"time"
)

// The receive window's rules (rcvwin.go), each against what Linux 6.18
// showed on loopback: tcp_rcvbuf_grow tracepoints (perf record -e
// tcp:tcp_rcvbuf_grow) and segments captured on lo, from real run
// tcp-pattern --writes 4 --msg 40000.

// Before any data the window is half the buffer (the default scaling
// ratio); a segment of a new full size sets the ratio from its cost, and
// the clamp follows the buffer at that ratio. Linux's tracepoints showed
// ratios of 249 to 252 on loopback, and window_clamp 128512 for a
// 131072-byte buffer at 251.
func TestScalingRatioFromFullSegment(t *testing.T) {
	h := newPair(t)
	c := h.srv.c
	if c.ratio != 128 || c.windowClamp != 65536 {
		t.Fatalf("before data: ratio %d clamp %d, want 128 and 65536", c.ratio, c.windowClamp)
	}
	h.cli.write(1_000_000)
	h.runTo(h.now() + 10*ms)
	h.srv.checkGot(1_000_000)
	if c.rcvMss != 65483 || c.ratio != 251 || c.windowClamp != c.rcvBuf*251>>8 {
		t.Errorf("after the transfer: rcv_mss %d ratio %d clamp %d (buffer %d), want 65483, 251 and the buffer's 251/256", c.rcvMss, c.ratio, c.windowClamp, c.rcvBuf)
	}
	// Small segments (below rcv_mss) leave the ratio alone.
	h.cli.noDelay(true)
	h.cli.write(300)
	h.runTo(h.now() + ms)
	if c.ratio != 251 {
		t.Errorf("a 300-byte segment moved the ratio to %d", c.ratio)
	}
	c.rcvBuf = 131072
	c.setWindowClamp(c.winFromSpace(c.rcvBuf))
	if c.windowClamp != 128512 {
		t.Errorf("clamp %d for a 131072-byte buffer at 251, want Linux's 128512", c.windowClamp)
	}
}

// rcv_ssthresh grows by two segments for each segment received, but only
// up to the free buffer's window: the first segment of a fresh connection
// (32741 bytes, half the SYN window) raises it from 65483 to what the
// buffer holds beside that segment, 94242, offered rounded up to the
// window scale's unit as 95232, the window Linux offered; and the write's
// 7259-byte tail, arriving with the first still unread, finds no room and
// leaves it.
func TestRcvSsthreshGrowsOnlyWithRoom(t *testing.T) {
	h := newPair(t)
	h.srv.setAutoRead(false)
	c := h.srv.c
	if c.rcvSsthresh != 65483 || c.wscale != 10 {
		t.Fatalf("rcv_ssthresh %d, window scale %d before data; want the SYN-ACK's window 65483 and 10 (32 MiB)", c.rcvSsthresh, c.wscale)
	}
	t0 := h.now()
	h.cli.write(32741)
	h.runTo(t0 + ms)
	space := c.tcpSpace()
	if c.rcvSsthresh != space || space != 94242 {
		t.Fatalf("after 32741 bytes: rcv_ssthresh %d, free window %d; want both 94242", c.rcvSsthresh, space)
	}
	if ack := h.mustAck("server", 32741, t0); ack.Win != 95232 {
		t.Errorf("ACK offered %d, want 95232", ack.Win)
	}
	h.cli.write(7259)
	h.runTo(t0 + 2*ms)
	if c.rcvSsthresh != 94242 {
		t.Errorf("the tail moved rcv_ssthresh to %d with no room above it", c.rcvSsthresh)
	}
}

// The receive RTT is the least window-based sample: from a segment to the
// first one a window (as last offered) beyond it.
func TestRcvRTTIsLeastWindowSample(t *testing.T) {
	c := &tcpConn{advWnd: 1000}
	at := func(now time.Duration, rcvNxt uint64) {
		c.mstamp, c.rcvNxt = now, rcvNxt
		c.measureRcvRTT()
	}
	at(10*us, 100) // starts a sample to 1100
	at(20*us, 900)
	if c.rcvRTT.rtt != 0 {
		t.Fatalf("rtt %v before the sample ended", c.rcvRTT.rtt)
	}
	at(50*us, 1200) // 40 µs; next to 2200
	at(150*us, 2300)
	if c.rcvRTT.rtt != 40*us {
		t.Errorf("rtt %v after samples of 40 and 100 µs, want the least", c.rcvRTT.rtt)
	}
	at(160*us, 3400) // 10 µs
	if c.rcvRTT.rtt != 10*us {
		t.Errorf("rtt %v after a 10 µs sample", c.rcvRTT.rtt)
	}
}

// tcp_rcvbuf_grow: Linux's first grow on the tcp-pattern server read
// 102144 bytes in a receive RTT against the 65483 it started from, at
// scaling ratio 251, and set the buffer to 441656 and the clamp to 433029.
func TestRcvbufGrowMatchesLinux(t *testing.T) {
	h := newPair(t)
	c := h.srv.c
	c.ratio, c.rcvq.space = 251, 65483
	c.rcvbufGrow(102144)
	if c.rcvBuf != 441656 || c.windowClamp != 433029 || c.rcvq.space != 102144 {
		t.Errorf("buffer %d clamp %d space %d, want 441656, 433029 and 102144", c.rcvBuf, c.windowClamp, c.rcvq.space)
	}
	// Growth stops at RcvBufMax, and a buffer set by the application
	// (or a fault) is never grown.
	c.rcvbufGrow(10 << 20)
	if c.rcvBuf != c.cfg.RcvBufMax {
		t.Errorf("buffer %d after a huge measure, want RcvBufMax %d", c.rcvBuf, c.cfg.RcvBufMax)
	}
	c.lockRcvBuf(65536)
	c.rcvbufGrow(20 << 20)
	if c.rcvBuf != 65536 {
		t.Errorf("locked buffer grew to %d", c.rcvBuf)
	}
}

// Autotuning end to end: a default connection's buffer grows from
// RcvBuf while the reader keeps up, and one whose buffer was fixed
// (autotuning off) keeps it.
func TestReceiveBufferAutotunes(t *testing.T) {
	run := func(opts ...pairOpt) *tcpConn {
		h := newPair(t, opts...)
		for range 20 {
			h.cli.write(160_000)
			h.runTo(h.now() + 200*us)
		}
		h.runTo(h.now() + 100*ms)
		h.srv.checkGot(20 * 160_000)
		return h.srv.c
	}
	if c := run(); c.rcvBuf <= c.cfg.RcvBuf || c.rcvBuf > c.cfg.RcvBufMax || c.rcvRTT.rtt == 0 {
		t.Errorf("default: buffer %d (from %d, at most %d), rtt %v; want it grown", c.rcvBuf, c.cfg.RcvBuf, c.cfg.RcvBufMax, c.rcvRTT.rtt)
	}
	if c := run(withBufs(0, 131072)); c.rcvBuf != 131072 {
		t.Errorf("fixed buffer grew to %d", c.rcvBuf)
	}
}

// A fresh connection's first op of four 40000-byte writes with Nagle, the
// server reading late (its first read maps a fresh buffer), as captured on
// lo: the client sends 32741 (half the SYN window), the server ACKs it at
// once (one quick ACK: rcv_wnd / (2·rcv_mss) = 1), the write's 7259-byte
// tail goes unacknowledged, and one more full segment fills the window
// (47616, half of the 95232 offered); the rest waits for the server's
// read, since the next full segment does not fit the window
// (tcp_snd_wnd_test), and leaves after it as a segment and a tail, 47616
// and 24768, as on Linux.
func TestFreshConnectionFirstOpMatchesCapture(t *testing.T) {
	h := newPair(t)
	h.srv.setAutoRead(false)
	t0 := h.now()
	for range 4 {
		h.cli.write(40000)
	}
	h.runTo(t0 + ms)
	if got := lens(h.dataSegs("client", t0)); len(got) != 3 || got[0] != 32741 || got[1] != 7259 || got[2] != 47616 {
		t.Fatalf("segments before the server reads %v, want [32741 7259 47616]", got)
	}
	acks := 0
	for _, s := range h.segs {
		if s.From == "server" && s.T >= t0 {
			acks++
		}
	}
	if acks != 1 {
		t.Errorf("%d server segments before its read, want one ACK (of the first segment)", acks)
	}
	h.srv.drain()
	h.runTo(t0 + 2*ms)
	h.srv.drain()
	if got := lens(h.dataSegs("client", t0)); len(got) != 5 || got[3] != 47616 || got[4] != 24768 {
		t.Errorf("segments %v, want the rest as 47616 and 24768 after the read", got)
	}
	h.srv.checkGot(160000)
}

// __tcp_select_window: once the free buffer's window is under half the
// buffer's, quick ACKs stop (icsk_ack.quick = 0), so a receiver filling
// up no longer ACKs each segment at once, even in quick-ACK mode.
func TestQuickAckStopsWhenBufferHalfFull(t *testing.T) {
	h := newPair(t)
	h.srv.setAutoRead(false)
	h.cli.noDelay(true)
	t0 := h.now()
	h.cli.write(1)
	h.runTo(t0 + ms)
	if ack := h.mustAck("server", 1, t0); ack.T != t0 {
		t.Fatalf("first byte ACKed at %v, want at once (quick-ACK mode)", ack.T)
	}
	h.cli.write(70000) // 70001 unread: under half of the buffer's window is free
	h.runTo(t0 + 2*ms)
	if c := h.srv.c; c.quick != 0 || c.tcpSpace() >= min(c.windowClamp, c.winFromSpace(c.rcvBuf))/2 {
		t.Fatalf("quick %d, free window %d of %d with 70001 bytes unread", c.quick, c.tcpSpace(), c.windowClamp)
	}
	t1 := h.now()
	h.cli.write(1)
	h.runTo(t1 + 100*ms)
	seg := h.dataSegs("client", t1)[0]
	// (Here the tail loss probe's copy, 5.5 ms later, is ACKed first.)
	if ack := h.mustAck("server", int64(h.cli.wrote), t1); ack.T == h.arrival(seg) {
		t.Errorf("byte after the half-full buffer ACKed at once (%v)", ack.T)
	}
}

// tcp_rcv_rtt_measure_ts and tcp_rcv_rtt_update: a timestamp sample is
// the whole milliseconds since the echoed timestamp, taken only from a
// full-sized segment with a new echo, and a larger one is averaged in by
// an eighth only while the receive queue is empty.
func TestRcvRTTTimestampSamples(t *testing.T) {
	h := newPair(t)
	c := h.srv.c
	c.rcvMss, c.rcvQueued, c.rcvRTT.rtt = 1000, 0, 200*us
	now := c.w.tsNow()
	full := make([]byte, 1000)
	step := func(s segment, want time.Duration, why string) {
		t.Helper()
		c.measureRcvRTTTs(&s)
		if c.rcvRTT.rtt != want {
			t.Errorf("%s: rtt %v, want %v", why, c.rcvRTT.rtt, want)
		}
	}
	step(segment{data: full, tsecr: now - 1}, 300*us, "a 1 ms sample, queue empty: 200 + (1000 - 200)/8")
	step(segment{data: full, tsecr: now - 1}, 300*us, "the same echo again")
	step(segment{data: full[:999], tsecr: now - 2}, 300*us, "below rcv_mss")
	step(segment{data: full, tsecr: now}, 300*us, "under a millisecond (no sample since 6.16)")
	c.rcvQueued = 1
	step(segment{data: full, tsecr: now - 3}, 300*us, "data still queued")
	c.rcvQueued = 0
	c.rcvRTT.rtt = 5 * ms
	step(segment{data: full, tsecr: now - 2}, 2*ms, "a smaller sample replaces the estimate")
}

// tcp_select_initial_window: the scale covers the largest window the
// buffer may come to hold, tcp_rmem[2]'s (32 MiB: 10) when it autotunes,
// only its own when it is fixed (1 MiB, whose window is 512 KiB: 4; 4096
// bytes: none).
func TestWindowScaleFromBuffers(t *testing.T) {
	for _, tc := range []struct {
		opts  []pairOpt
		scale int
	}{{nil, 10}, {[]pairOpt{withBufs(0, 1<<20)}, 4}, {[]pairOpt{withBufs(0, 4096)}, 0}} {
		h := newPair(t, tc.opts...)
		if c := h.srv.c; c.wscale != tc.scale {
			t.Errorf("buffer %d (fixed %v): scale %d, want %d", c.rcvBuf, c.rcvBufLocked, c.wscale, tc.scale)
		}
	}
	// A buffer an application fixes under a tcp_rmem[2] of 32 MiB: its
	// own window decides.
	cfg := DefaultTCPConfig()
	c := &tcpConn{cfg: &cfg, windowClamp: 2048, rcvBufLocked: true}
	if ws := c.windowScale(); ws != 0 {
		t.Errorf("fixed 4096-byte buffer: scale %d, want 0", ws)
	}
	c.rcvBufLocked = false
	if ws := c.windowScale(); ws != 10 {
		t.Errorf("autotuned buffer: scale %d, want 10", ws)
	}
}

// A receiver that stops reading closes its window: with little free
// (under rcv_mss) it offers nothing (__tcp_select_window), and small
// segments, which the no-shrink rule's rounding would let through a few
// bytes at a time for ever, stop once the queue costs more than the
// buffer (Linux drops the next and offers 0: ICSK_ACK_NOMEM).
func TestWindowClosesWhenReaderStops(t *testing.T) {
	for _, size := range []int{300_000, 100} {
		h := newPair(t)
		h.srv.setAutoRead(false)
		h.cli.noDelay(true)
		t0 := h.now()
		if size > 1000 {
			h.cli.tryWrite(size, false)
			h.runTo(t0 + 100*ms)
		} else {
			for i := 0; i < 3000; i++ {
				h.cli.tryWrite(size, false)
				h.runTo(h.now() + 2*ms)
			}
		}
		c := h.srv.c
		var last segRec
		for _, s := range h.segs {
			if s.From == "server" && s.T >= t0 {
				last = s
			}
		}
		if last.Win != 0 {
			t.Errorf("%d-byte writes: the server's last window %d, want 0", size, last.Win)
		}
		if c.rmem > c.rcvBuf+c.cfg.MSS {
			t.Errorf("%d-byte writes: the queue costs %d, past the %d-byte buffer by more than a segment", size, c.rmem, c.rcvBuf)
		}

	}
}

// Segments carry the timestamp option: each end echoes the newest
// timestamp of its peer, from the SYNs on, so the first data already
// echoes one (a receiver's first timestamp sample can come from it).
func TestTimestampsEchoed(t *testing.T) {
	h := newPair(t)
	if h.srv.c.tsRecent == 0 || h.cli.c.tsRecent == 0 {
		t.Fatalf("after the handshake: echoes %d and %d, want the SYNs' timestamps", h.cli.c.tsRecent, h.srv.c.tsRecent)
	}
	h.cli.write(100)
	h.runTo(h.now() + 10*ms)
	h.srv.write(100)
	h.runTo(h.now() + 10*ms)
	if want := h.w.tsNow(); h.cli.c.tsRecent != want-10 {
		t.Errorf("client echoes %d, want the server's reply's timestamp, 10 ms before %d", h.cli.c.tsRecent, want)
	}
}

// __tcp_select_window's rules, state by state: above half the buffer's
// window free, the free window (capped by rcv_ssthresh) rounded up to the
// scale's unit; below half, no quick ACKs, and nothing offered under
// rcv_mss; unscaled, a window kept while within an MSS of the free
// space, else rounded down to whole MSS.
func TestSelectWindowRules(t *testing.T) {
	cfg := DefaultTCPConfig()
	conn := func(rmem int) *tcpConn {
		return &tcpConn{cfg: &cfg, rcvBuf: 131072, ratio: 251, windowClamp: 128512, rcvSsthresh: 128512,
			rcvMss: 65483, wscale: 10, rmem: rmem, quick: 5}
	}
	for _, tc := range []struct {
		rmem, win, quick int
	}{
		{0, 129024, 5},    // free 128512, rounded up to 126 × 1024
		{60000, 70656, 5}, // free 69687 ≥ half of 128512
		{70000, 0, 0},     // free 59884: under half and under rcv_mss
		{131072, 0, 0},    // nothing free
	} {
		c := conn(tc.rmem)
		if w := c.freshWindow(); w != tc.win || c.quick != tc.quick {
			t.Errorf("queue costing %d: window %d, quick %d; want %d and %d", tc.rmem, w, c.quick, tc.win, tc.quick)
		}
	}
	// Under half free but above rcv_mss: rounded down to the unit first
	// (free 50074 offers 49152, not 50176).
	c := conn(80000)
	c.rcvMss = 1000
	if w := c.freshWindow(); w != 49152 || c.quick != 0 {
		t.Errorf("free 50074, rcv_mss 1000: window %d, quick %d; want 49152 and 0", w, c.quick)
	}
	// The no-shrink rule keeps what is left of the last window, rounded
	// up to the unit; past the buffer (the queue costing more than it),
	// nothing (ICSK_ACK_NOMEM).
	c = conn(131072)
	c.rcvWup, c.advWnd, c.rcvNxt = 0, 2000, 1000
	if w := c.selectWindow(); w != 1024 {
		t.Errorf("1000 left of the last window, nothing free: window %d, want 1024", w)
	}
	c.rmem = 131073
	if w := c.selectWindow(); w != 0 {
		t.Errorf("queue past the buffer: window %d, want 0", w)
	}
	// Unscaled (a small fixed buffer): the last window kept while
	// within an MSS of the free space, else whole MSS.
	c = &tcpConn{cfg: &cfg, rcvBuf: 16384, ratio: 128, windowClamp: 8192, rcvSsthresh: 8192, rcvMss: 1000}
	for _, tc := range []struct{ adv, win int }{{7500, 7500}, {3000, 8000}, {9000, 8000}} {
		c.advWnd = tc.adv
		if w := c.freshWindow(); w != tc.win {
			t.Errorf("unscaled, free 8192, last offered %d: window %d, want %d", tc.adv, w, tc.win)
		}
	}
}

// A full-sized segment arriving at an empty queue with an echo a few
// milliseconds old raises the receive RTT by an eighth of the difference
// (tcp_rcv_rtt_measure_ts, as it arrives); a segment without data only
// records its echo, so data repeating that echo gives no sample.
func TestTimestampSampleOnArrival(t *testing.T) {
	h := newPair(t)
	c := h.srv.c
	c.rcvMss, c.rcvRTT.rtt = 65483, 100*us
	now := h.w.tsNow()
	c.receive(&segment{seq: c.rcvNxt, tsecr: now - 3}) // a bare ACK
	c.receive(&segment{seq: c.rcvNxt, data: make([]byte, 65483), tsecr: now - 3})
	if c.rcvRTT.rtt != 100*us {
		t.Errorf("rtt %v after data repeating a bare ACK's echo, want 100µs", c.rcvRTT.rtt)
	}
	h.runTo(h.now() + ms) // the harness reads it
	now = h.w.tsNow()
	c.receive(&segment{seq: c.rcvNxt, data: make([]byte, 65483), tsecr: now - 2})
	if want := 100*us + (2*ms-100*us)/8; c.rcvRTT.rtt != want {
		t.Errorf("rtt %v after a full segment echoing 2 ms back, want %v", c.rcvRTT.rtt, want)
	}
}

// SO_RCVBUF (or a slow-reader fault) on an open connection fixes its
// buffer, and the model pulls the window's bounds down to it at once:
// the clamp (window_clamp) and the slow-start threshold of the offered
// window (rcv_ssthresh) may not exceed what the smaller buffer holds.
// (Linux leaves both fields and bounds the window it offers by the
// buffer's full space when it selects one, which offers the same.)
func TestLockedReceiveBufferClampsTheWindow(t *testing.T) {
	h := newPair(t)
	c := h.srv.c
	h.cli.write(1_000_000) // grows the buffer, the clamp and rcv_ssthresh
	h.runTo(h.now() + 10*ms)
	h.srv.checkGot(1_000_000)
	if w := c.winFromSpace(8192); c.windowClamp <= w || c.rcvSsthresh <= w {
		t.Fatalf("setup: window_clamp %d, rcv_ssthresh %d, want both above an 8192-byte buffer's window %d", c.windowClamp, c.rcvSsthresh, w)
	}
	c.lockRcvBuf(8192)
	full := c.fullSpace()
	if c.windowClamp > full || c.rcvSsthresh > full {
		t.Errorf("after SO_RCVBUF 8192: window_clamp %d, rcv_ssthresh %d, want both within the buffer's window %d", c.windowClamp, c.rcvSsthresh, full)
	}
}

// tcp_set_window_clamp: a lower clamp pulls rcv_ssthresh down to it; a
// higher one lets rcv_ssthresh rise to the window last offered, no
// further.
func TestWindowClampMovesRcvSsthresh(t *testing.T) {
	h := newPair(t)
	c := h.srv.c
	c.windowClamp, c.rcvSsthresh, c.advWnd = 100_000, 90_000, 95_000
	c.setWindowClamp(50_000)
	if c.windowClamp != 50_000 || c.rcvSsthresh != 50_000 {
		t.Errorf("lowered to 50000: clamp %d, rcv_ssthresh %d, want both 50000", c.windowClamp, c.rcvSsthresh)
	}
	c.setWindowClamp(200_000)
	if c.windowClamp != 200_000 || c.rcvSsthresh != 95_000 {
		t.Errorf("raised to 200000: clamp %d, rcv_ssthresh %d, want 200000 and the window offered, 95000", c.windowClamp, c.rcvSsthresh)
	}
}
