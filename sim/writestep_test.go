package sim

import (
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// stepWriter is a raw client's write: a request, then packets the test
// queues at its own times, flushed as the socket takes them.
type stepWriter struct {
	c    model.Conn
	out  []byte
	off  int64 // the next packet's offset in the block
	seq  int64
	data []byte
	resp []byte // the datanode's answer, as it arrives
}

// packet queues a packet of n bytes of data (the last, empty, if n is 0
// and last).
func (s *stepWriter) packet(n int, last bool) {
	s.out = model.AppendPacket(s.out, model.PacketHeader{Offset: s.off, Seqno: s.seq, Last: last}, s.data[s.off:s.off+int64(n)], model.BytesPerChecksum)
	s.off += int64(n)
	s.seq++
	s.flush()
}

func (s *stepWriter) flush() {
	for len(s.out) > 0 {
		n, err := s.c.Write(s.out)
		s.out = s.out[n:]
		if err == model.ErrWouldBlock {
			s.c.SetWriteInterest(true)
			return
		}
		if err != nil {
			s.out = nil // closed by the datanode: the test looks at its count
			break
		}
	}
	s.c.SetWriteInterest(false)
}

func (s *stepWriter) onEvent(ev model.Events) {
	if ev&model.Writable != 0 {
		s.flush()
	}
	if ev&model.Readable != 0 {
		var b [512]byte
		for {
			n, err := s.c.Read(b[:])
			s.resp = append(s.resp, b[:n]...)
			if err != nil && err != model.ErrWouldBlock {
				s.c.SetReadInterest(false) // the end of the stream, or a reset
				return
			}
			if n == 0 {
				return
			}
		}
	}
}

// startWrite dials the datanode and sends a write request of size bytes
// of block (nothing else yet).
func startWrite(w *World, pp model.Process, block uint64, size int) *stepWriter {
	s := &stepWriter{data: model.BlockContent(block, size)}
	l := pp.MainLoop()
	c, err := pp.Dial("tcp", "dn:50010", l, func(ev model.Events) { s.onEvent(ev) })
	if err != nil {
		w.Fail(err)
		return s
	}
	s.c = c
	s.out = request(model.OpWriteBlock, block, 0, 0, int64(size))
	c.SetReadInterest(true)
	s.flush()
	return s
}

// A write's read timeout runs from its last step of progress, a packet's
// worth of data (64 KiB) or the rest of the write, not from its last
// byte. A client that sends three 64 KiB packets and then the last 32 KiB
// 600 ms apart, and the empty last packet 600 ms after that, under a read
// timeout of 1 s, writes 224 KiB in 3 s: every packet a step, none of
// the waits a timeout. Were the timeout counted from the write's start
// (no step counted) it would be cut at 1 s; were the 32 KiB that end the
// data no step, at 2.8 s, before the last packet.
func TestWriteReadTimeoutRunsFromLastStep(t *testing.T) {
	dcfg := model.DatanodeConfig{ReadTimeout: time.Second}
	var s *stepWriter
	sizes := []int{model.MaxPacketData, model.MaxPacketData, model.MaxPacketData, model.MaxPacketData / 2, 0}
	datanodeWorld(t, dcfg, nil, "writer", func(w *World, dn *model.Datanode, _, pp model.Process) {
		total := 0
		for _, n := range sizes {
			total += n
		}
		s = startWrite(w, pp, 5, total)
		l := pp.MainLoop()
		for i, n := range sizes {
			l.AfterFunc(time.Duration(i+1)*600*time.Millisecond, func() { s.packet(n, n == 0) })
		}
		l.AfterFunc(5*time.Second, func() { s.c.Close() })
	})
	if len(s.resp) < 2 {
		t.Fatalf("no answer to the write (%d bytes)", len(s.resp))
	}
	resp, _, err := model.DecodeResponse(s.resp)
	if err != nil || resp.Status != model.StatusSuccess {
		t.Fatalf("write answered %v (%v), want success: a step every 600 ms is progress under a 1 s read timeout", resp.Status, err)
	}
}

// A write whose client sends packets of one byte every 200 ms after a
// first 64 KiB makes no step: its read timeout (1 s) runs out 1 s after
// that packet, though bytes keep coming. Nor does one that has sent all
// its data (64 KiB) and then sends empty packets that are not the last.
// With any byte counted as progress (WriteAnyByte) the connection stays
// open for as long as the client trickles.
func TestTricklingWriteTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name       string
		size, drip int // the write's data, and each later packet's
	}{
		{"one-byte packets", 4 * model.MaxPacketData, 1},
		{"empty packets after the data", model.MaxPacketData, 0},
	} {
		for _, anyByte := range []bool{false, true} {
			dcfg := model.DatanodeConfig{ReadTimeout: time.Second}
			dcfg.Bugs.WriteAnyByte = anyByte
			ats := []time.Duration{900 * time.Millisecond, 1200 * time.Millisecond, 3 * time.Second}
			open := make([]int, len(ats))
			sent := false
			datanodeWorld(t, dcfg, nil, "trickler", func(w *World, dn *model.Datanode, _, pp model.Process) {
				s := startWrite(w, pp, 5, tc.size)
				l := pp.MainLoop()
				l.AfterFunc(100*time.Millisecond, func() {
					sent = true
					s.packet(model.MaxPacketData, false)
					var drip func()
					drip = func() {
						if l.Now() < 4*time.Second {
							s.packet(tc.drip, false)
							l.AfterFunc(200*time.Millisecond, drip)
						}
					}
					l.AfterFunc(200*time.Millisecond, drip)
				})
				for i, at := range ats {
					l.AfterFunc(100*time.Millisecond+at, func() { open[i] = dn.Conns() })
				}
				l.AfterFunc(4*time.Second, func() { s.c.Close() })
			})
			if !sent {
				t.Fatalf("%s: the first packet was never sent", tc.name)
			}
			want := []int{1, 0, 0}
			if anyByte {
				want = []int{1, 1, 1}
			}
			for i, at := range ats {
				if open[i] != want[i] {
					t.Errorf("%s, any byte counted %v: %d connections %v after the last step, want %d", tc.name, anyByte, open[i], at, want[i])
				}
			}
		}
	}
}

// A write granted room after waiting for it counts from the grant: its
// step clock (it read nothing while it waited), and its wait's deadline
// is gone, so a later wait is a wait afresh. MaxBuffered is 128 KiB. A
// takes all of it (two 64 KiB packets, at 0 and 250 ms); B and C ask for
// room at 300 and 320 ms with a 4 KiB packet each and wait; A, without a
// step for a stall timeout (200 ms), is cut at 450 ms, and B and C get
// 64 KiB each. At 500 ms B sends 64 KiB more, which needs room again: it
// waits. At 550 ms D asks and presses the writers. At 600 ms B (waiting)
// and C (granted 150 ms ago, no step since) must both still be open.
// Were C's clock not reset at its grant it would be cut at 550 ms (its
// last step its request, 230 ms before); were B's deadline left set, its
// second wait would fail busy at once.
func TestWriteGrantedRoomCountsFromTheGrant(t *testing.T) {
	dcfg := model.DatanodeConfig{MaxWrite: 128 << 10, MaxBuffered: 128 << 10, StallTimeout: 200 * time.Millisecond,
		HandleWait: 2 * time.Second, ReadTimeout: 10 * time.Second}
	var a, b, c *stepWriter
	openAt := map[*stepWriter]bool{}
	datanodeWorld(t, dcfg, nil, "writers", func(w *World, dn *model.Datanode, _, pp model.Process) {
		l := pp.MainLoop()
		const kib = 1 << 10
		a = startWrite(w, pp, 1, 128*kib)
		a.packet(64*kib, false)
		l.AfterFunc(250*time.Millisecond, func() { a.packet(64*kib, false) })
		l.AfterFunc(300*time.Millisecond, func() {
			b = startWrite(w, pp, 2, 128*kib)
			b.packet(4*kib, false)
		})
		l.AfterFunc(320*time.Millisecond, func() {
			c = startWrite(w, pp, 3, 128*kib)
			c.packet(4*kib, false)
		})
		l.AfterFunc(500*time.Millisecond, func() { b.packet(64*kib, false) })
		var d *stepWriter
		l.AfterFunc(550*time.Millisecond, func() {
			d = startWrite(w, pp, 4, 128*kib)
			d.packet(4*kib, false)
		})
		l.AfterFunc(600*time.Millisecond, func() {
			for _, s := range []*stepWriter{a, b, c} {
				_, open, _ := PeerEnd(s.c)
				openAt[s] = open
			}
		})
		l.AfterFunc(3*time.Second, func() {
			for _, s := range []*stepWriter{a, b, c, d} {
				s.c.Close()
			}
		})
	})
	if openAt[a] {
		t.Fatalf("at 600 ms A, which took all the room and made no step since 250 ms, is still open: want it cut off at 450 ms")
	}
	if !openAt[b] || !openAt[c] {
		t.Errorf("at 600 ms: B (waiting for room again) open %v, C (granted room at 450 ms) open %v; want both open", openAt[b], openAt[c])
	}
}

// A write waiting for buffer room hears its client leave. MaxBuffered is
// 128 KiB and A holds all of it (a stall timeout of 10 s keeps A in). B
// asks for room at 100 ms with a 4 KiB packet and waits; its next packet,
// at 150 ms, stays in the socket, unread, and at 200 ms B closes. The
// datanode closes B's connection within 10 ms, though the unread packet
// lies before the FIN. With WriteWaiterDeaf it is still open at 1 s and
// is closed only once HandleWait (2 s) has passed.
func TestWriteWaitingForRoomHearsItsClientLeave(t *testing.T) {
	for _, deaf := range []bool{false, true} {
		dcfg := model.DatanodeConfig{MaxWrite: 128 << 10, MaxBuffered: 128 << 10, StallTimeout: 10 * time.Second,
			HandleWait: 2 * time.Second, ReadTimeout: 10 * time.Second}
		dcfg.Bugs.WriteWaiterDeaf = deaf
		ats := []time.Duration{190 * time.Millisecond, 210 * time.Millisecond, time.Second, 2500 * time.Millisecond}
		conns := make([]int, len(ats))
		waiting, holderWaiting := false, false
		datanodeWorld(t, dcfg, nil, "writers", func(w *World, dn *model.Datanode, _, pp model.Process) {
			l := pp.MainLoop()
			const kib = 1 << 10
			a := startWrite(w, pp, 1, 128*kib)
			a.packet(64*kib, false)
			l.AfterFunc(10*time.Millisecond, func() { a.packet(64*kib, false) })
			var b *stepWriter
			l.AfterFunc(100*time.Millisecond, func() {
				b = startWrite(w, pp, 2, 128*kib)
				b.packet(4*kib, false)
			})
			l.AfterFunc(150*time.Millisecond, func() {
				id, _, _ := PeerEnd(b.c)
				idA, _, _ := PeerEnd(a.c)
				waiting, holderWaiting = dn.ConnWaiting(id), dn.ConnWaiting(idA)
				b.packet(4*kib, false)
			})
			l.AfterFunc(200*time.Millisecond, func() { b.c.Close() })
			for i, at := range ats {
				l.AfterFunc(at, func() { conns[i] = dn.Conns() })
			}
			l.AfterFunc(3*time.Second, func() { a.c.Close() })
		})
		if !waiting || holderWaiting {
			t.Fatalf("deaf %v: at 150 ms B's write waiting for room %v, A's (holding it all) %v; want true and false", deaf, waiting, holderWaiting)
		}
		want := []int{2, 1, 1, 1}
		if deaf {
			want = []int{2, 2, 2, 1}
		}
		for i, at := range ats {
			if conns[i] != want[i] {
				t.Errorf("write waiter deaf %v: %d datanode connections at %v, want %d (B closed at 200 ms)", deaf, conns[i], at, want[i])
			}
		}
	}
}

// Writes that each hold part of the room and all wait for more give it
// up rather than hold it until HandleWait. MaxBuffered is 256 KiB; A and
// B each send two 64 KiB packets of a 256 KiB write (128 KiB of room
// each, all of it), then a third at 20 and 25 ms, for which each must
// grow to 256 KiB: both wait, and neither can ever get room from the
// other. A stall timeout (200 ms) into its wait, with B waiting too, A
// gives up, busy, and its room goes to B, whose write then completes.
// With HoldersWaitForRoom both wait until HandleWait (2 s) has passed.
func TestHoldersWaitingForRoomGiveItUp(t *testing.T) {
	for _, bug := range []bool{false, true} {
		dcfg := model.DatanodeConfig{MaxWrite: 256 << 10, MaxBuffered: 256 << 10, StallTimeout: 200 * time.Millisecond,
			HandleWait: 2 * time.Second, ReadTimeout: 10 * time.Second}
		dcfg.Bugs.HoldersWaitForRoom = bug
		var a, b *stepWriter
		var aOpen, bOpen bool
		datanodeWorld(t, dcfg, nil, "writers", func(w *World, dn *model.Datanode, _, pp model.Process) {
			l := pp.MainLoop()
			const kib = 1 << 10
			a = startWrite(w, pp, 1, 256*kib)
			a.packet(64*kib, false)
			a.packet(64*kib, false)
			l.AfterFunc(5*time.Millisecond, func() {
				b = startWrite(w, pp, 2, 256*kib)
				b.packet(64*kib, false)
				b.packet(64*kib, false)
			})
			l.AfterFunc(20*time.Millisecond, func() { a.packet(64*kib, false) })
			l.AfterFunc(25*time.Millisecond, func() { b.packet(64*kib, false) })
			l.AfterFunc(300*time.Millisecond, func() {
				_, aOpen, _ = PeerEnd(a.c)
				_, bOpen, _ = PeerEnd(b.c)
				b.packet(64*kib, false)
				b.packet(0, true)
			})
			l.AfterFunc(3*time.Second, func() {
				a.c.Close()
				b.c.Close()
			})
		})
		ra, _, errA := model.DecodeResponse(a.resp)
		rb, _, errB := model.DecodeResponse(b.resp)
		if bug {
			if !aOpen || !bOpen {
				t.Errorf("holders wait for room: at 300 ms A open %v, B open %v; want both still waiting", aOpen, bOpen)
			}
			continue
		}
		if aOpen || errA != nil || ra.Status == model.StatusSuccess || !strings.Contains(ra.Message, "busy: holding") {
			t.Errorf("A, waiting for room it can never get while B waits: open at 300 ms %v, answered %v %q (%v); want closed, refused busy", aOpen, ra.Status, ra.Message, errA)
		}
		if !bOpen || errB != nil || rb.Status != model.StatusSuccess {
			t.Errorf("B, given A's room: open at 300 ms %v, answered %v %q (%v); want its write done", bOpen, rb.Status, rb.Message, errB)
		}
	}
}

// Of writes holding room that all wait for more, the one holding the
// most gives it up, whichever looked: the one that looks asks it to. S
// (a write of 96 KiB) holds 64 KiB and at 10 ms asks for its last 32; L
// holds the other 128 KiB of MaxBuffered (192 KiB) and at 150 ms asks
// for 128 more: both wait. A stall timeout (200 ms) into its wait S
// looks and L gives its room up, busy, at once, not at its own look (350
// ms), after S's HandleWait (300 ms) would have run out; S's write
// completes. When the one that looked gave its own room up, S was
// refused at 210 ms (check seed 240024651: a well-behaved replace
// holding 64 KiB refused while 13 grabbers held 128 KiB each); without
// S's ask, at 310 ms. Reactor and threaded (each connection's loop its
// own thread: L gives up on its loop).
func TestLargestHolderGivesUpItsRoom(t *testing.T) {
	const kib = 1 << 10
	for _, mode := range []model.ServerMode{model.Reactor, model.Threaded} {
		dcfg := model.DatanodeConfig{Mode: mode, MaxWrite: 256 * kib, MaxBuffered: 192 * kib, StallTimeout: 200 * time.Millisecond,
			HandleWait: 300 * time.Millisecond, ReadTimeout: 10 * time.Second}
		var s, lw *stepWriter
		datanodeWorld(t, dcfg, nil, "writers", func(w *World, dn *model.Datanode, _, pp model.Process) {
			l := pp.MainLoop()
			s = startWrite(w, pp, 1, 96*kib)
			s.packet(64*kib, false)
			l.AfterFunc(5*time.Millisecond, func() {
				lw = startWrite(w, pp, 2, 256*kib)
				lw.packet(64*kib, false)
				lw.packet(64*kib, false)
			})
			l.AfterFunc(10*time.Millisecond, func() { s.packet(32*kib, false) })
			l.AfterFunc(150*time.Millisecond, func() { lw.packet(64*kib, false) })
			l.AfterFunc(250*time.Millisecond, func() { s.packet(0, true) })
			l.AfterFunc(3*time.Second, func() {
				s.c.Close()
				lw.c.Close()
			})
		})
		rs, _, errS := model.DecodeResponse(s.resp)
		rl, _, errL := model.DecodeResponse(lw.resp)
		if errS != nil || rs.Status != model.StatusSuccess {
			t.Errorf("%v: S, holding 64 KiB: answered %v %q (%v); want its write done", mode, rs.Status, rs.Message, errS)
		}
		if errL != nil || rl.Status == model.StatusSuccess || !strings.Contains(rl.Message, "busy: holding 131072") {
			t.Errorf("%v: L, holding 128 KiB: answered %v %q (%v); want refused busy, holding 131072 bytes", mode, rl.Status, rl.Message, errL)
		}
	}
}

// A write that holds room and waits for more, with no other holder
// waiting, keeps waiting: the room is the writes' that are receiving,
// which finish or are cut off. MaxBuffered is 256 KiB. R's write of 128
// KiB takes 64 KiB at 0 and grows to 128 KiB at 150 ms; H holds 128 KiB
// from 10 ms and at 20 ms asks for 128 KiB more, which waits; with a
// third write, X, X asks for its first 64 KiB at 160 ms and waits too,
// holding none. R, a step every 150 ms, is not stalled, and ends at 300
// ms: its room goes to H (and X), whose writes then complete, though H
// waited longer than a stall timeout (200 ms). (Giving up whenever any
// other write waited, H was refused busy at 220 ms: a review found it.)
func TestHolderWaitingAloneKeepsItsRoom(t *testing.T) {
	for _, third := range []bool{false, true} {
		holderWaitingAlone(t, third)
	}
}

func holderWaitingAlone(t *testing.T, third bool) {
	dcfg := model.DatanodeConfig{MaxWrite: 256 << 10, MaxBuffered: 256 << 10, StallTimeout: 200 * time.Millisecond,
		HandleWait: 2 * time.Second, ReadTimeout: 10 * time.Second}
	var r, h, x *stepWriter
	datanodeWorld(t, dcfg, nil, "writers", func(w *World, dn *model.Datanode, _, pp model.Process) {
		l := pp.MainLoop()
		const kib = 1 << 10
		r = startWrite(w, pp, 1, 128*kib)
		r.packet(64*kib, false)
		l.AfterFunc(10*time.Millisecond, func() {
			h = startWrite(w, pp, 2, 256*kib)
			h.packet(64*kib, false)
			h.packet(64*kib, false)
		})
		l.AfterFunc(20*time.Millisecond, func() { h.packet(64*kib, false) })
		l.AfterFunc(150*time.Millisecond, func() { r.packet(64*kib, false) })
		if third {
			l.AfterFunc(160*time.Millisecond, func() {
				x = startWrite(w, pp, 3, 64*kib)
				x.packet(64*kib, false)
			})
		}
		l.AfterFunc(300*time.Millisecond, func() { r.packet(0, true) })
		l.AfterFunc(400*time.Millisecond, func() {
			h.packet(64*kib, false)
			h.packet(0, true)
			if x != nil {
				x.packet(0, true)
			}
		})
		l.AfterFunc(3*time.Second, func() {
			for _, s := range []*stepWriter{r, h, x} {
				if s != nil {
					s.c.Close()
				}
			}
		})
	})
	for _, s := range []struct {
		name string
		w    *stepWriter
	}{{"R", r}, {"H", h}, {"X", x}} {
		if s.w == nil {
			continue
		}
		resp, _, err := model.DecodeResponse(s.w.resp)
		if err != nil || resp.Status != model.StatusSuccess {
			t.Errorf("with X %v: %s's write answered %v %q (%v); want done", third, s.name, resp.Status, resp.Message, err)
		}
	}
}

// A holder's give-up never takes back room its own ask was granted. R
// holds 128 KiB and ends about when H1, which with H2 holds the rest and
// waits for more, looks whether to give up (220 ms): R's room goes back,
// H1 asks again, and its ask may be on its way to the lock when H1 looks.
// Giving up then, H1 gave back the room that ask was granted, and the
// write went on with its buffer gone: its next packet was refused, "write
// packet at offset 131072, want 0" (a review found it). Across R's end
// from 219.5 to 220.1 ms each write completes or, if its holder looked
// before R's room came back, is refused busy; and no room stays reserved.
func TestYieldNeverTakesBackAGrantedAsk(t *testing.T) {
	const kib = 1 << 10
	dcfg := model.DatanodeConfig{MaxWrite: 256 * kib, MaxBuffered: 384 * kib, StallTimeout: 200 * time.Millisecond,
		HandleWait: 2 * time.Second, ReadTimeout: 10 * time.Second}
	for end := 219500 * time.Microsecond; end <= 220100*time.Microsecond; end += 20 * time.Microsecond {
		var r, h1, h2 *stepWriter
		reserved := -1
		datanodeWorld(t, dcfg, nil, "writers", func(w *World, dn *model.Datanode, _, pp model.Process) {
			l := pp.MainLoop()
			r = startWrite(w, pp, 1, 128*kib)
			r.packet(64*kib, false)
			l.AfterFunc(10*time.Millisecond, func() {
				h1 = startWrite(w, pp, 2, 256*kib)
				h1.packet(64*kib, false)
				h1.packet(64*kib, false)
			})
			l.AfterFunc(15*time.Millisecond, func() {
				h2 = startWrite(w, pp, 3, 256*kib)
				h2.packet(64*kib, false)
				h2.packet(64*kib, false)
			})
			l.AfterFunc(20*time.Millisecond, func() { h1.packet(64*kib, false) })
			l.AfterFunc(25*time.Millisecond, func() { h2.packet(64*kib, false) })
			l.AfterFunc(100*time.Millisecond, func() { r.packet(64*kib, false) })
			l.AfterFunc(end, func() { r.packet(0, true) })
			l.AfterFunc(400*time.Millisecond, func() {
				for _, h := range []*stepWriter{h1, h2} {
					h.packet(64*kib, false)
					h.packet(0, true)
				}
			})
			l.AfterFunc(3*time.Second, func() {
				reserved = dn.ReservedWriteBytes()
				for _, s := range []*stepWriter{r, h1, h2} {
					s.c.Close()
				}
			})
		})
		for _, s := range []struct {
			name string
			w    *stepWriter
		}{{"R", r}, {"H1", h1}, {"H2", h2}} {
			resp, _, err := model.DecodeResponse(s.w.resp)
			if err != nil || resp.Status != model.StatusSuccess && !strings.Contains(resp.Message, "busy: holding") {
				t.Errorf("R ends at %v: %s's write answered %v %q (%v); want done, or refused busy", end, s.name, resp.Status, resp.Message, err)
			}
		}
		if reserved != 0 {
			t.Errorf("R ends at %v: %d bytes of write room still reserved at 3 s, with every write over", end, reserved)
		}
	}
}
