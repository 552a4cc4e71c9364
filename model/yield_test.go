package model_test

import (
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// rawWrite is a raw client's write: a request, then packets the test
// sends at its own times, flushed as the socket takes them.
type rawWrite struct {
	c        model.Conn
	out      []byte
	off, seq int64
	data     []byte
	resp     []byte // the datanode's answer, as it arrives
}

func startRawWrite(w *sim.World, pp model.Process, block uint64, size int) *rawWrite {
	s := &rawWrite{data: model.BlockContent(block, size)}
	c, err := pp.Dial("tcp", "dn:50010", pp.MainLoop(), s.onEvent)
	if err != nil {
		w.Fail(err)
		return s
	}
	s.c = c
	tok := model.IssueToken(model.DefaultTokenKey, model.BlockToken{BlockID: block, Modes: model.ModeFor(model.OpWriteBlock), Expiry: time.Hour})
	s.out = model.AppendRequest(nil, model.Request{Op: model.OpWriteBlock, BlockID: block, Length: int64(size), ClientName: "raw", Token: tok})
	s.flush()
	return s
}

func (s *rawWrite) packet(n int) {
	s.out = model.AppendPacket(s.out, model.PacketHeader{Offset: s.off, Seqno: s.seq}, s.data[s.off:s.off+int64(n)], model.BytesPerChecksum)
	s.off += int64(n)
	s.seq++
	s.flush()
}

func (s *rawWrite) flush() {
	for len(s.out) > 0 {
		n, err := s.c.Write(s.out)
		s.out = s.out[n:]
		if err == model.ErrWouldBlock {
			s.c.SetWriteInterest(true)
			return
		}
		if err != nil {
			s.out = nil
		}
	}
	s.c.SetWriteInterest(false)
}

func (s *rawWrite) onEvent(ev model.Events) {
	if ev&model.Writable != 0 {
		s.flush()
	}
	if ev&model.Readable != 0 {
		var b [512]byte
		for {
			n, err := s.c.Read(b[:])
			s.resp = append(s.resp, b[:n]...)
			if err != nil && err != model.ErrWouldBlock {
				s.c.SetReadInterest(false)
				return
			}
			if n == 0 {
				return
			}
		}
	}
}

// A write that gives its room up is no longer waiting for room from the
// moment it does (properties ask ConnWaiting at any event). A and B each
// hold 128 KiB, all of MaxBuffered, and each then needs 256 KiB: both
// wait, and a stall timeout (200 ms) into its wait A gives up, busy.
func TestYieldedWriteStopsWaitingAtOnce(t *testing.T) {
	const kib = 1 << 10
	w := sim.New(sim.DefaultConfig(1))
	dcfg := model.DatanodeConfig{Addr: "dn:50010", MaxWrite: 256 * kib, MaxBuffered: 256 * kib,
		StallTimeout: 200 * time.Millisecond, HandleWait: 2 * time.Second, ReadTimeout: 10 * time.Second}
	var dn *model.Datanode
	var dnProc *sim.Process
	var a *rawWrite
	yields, waitingAfter := 0, 0
	w.AfterEach(func() {
		if dnProc == nil || a == nil {
			return
		}
		if n := dnProc.Logged("dn-write-yielded"); n > yields {
			yields = n
			if id, _, _ := sim.PeerEnd(a.c); dn.ConnWaiting(id) {
				waitingAfter++
			}
		}
	})
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dnProc = p.(*sim.Process)
		var err error
		if dn, err = model.StartDatanode(p, p.MainLoop(), dcfg); err != nil {
			w.Fail(err)
			return
		}
		w.Spawn("writers", model.ProcessConfig{}, func(pp model.Process) {
			l := pp.MainLoop()
			a = startRawWrite(w, pp, 1, 256*kib)
			a.packet(64 * kib)
			a.packet(64 * kib)
			var b *rawWrite
			l.AfterFunc(5*time.Millisecond, func() {
				b = startRawWrite(w, pp, 2, 256*kib)
				b.packet(64 * kib)
				b.packet(64 * kib)
			})
			l.AfterFunc(20*time.Millisecond, func() { a.packet(64 * kib) })
			l.AfterFunc(25*time.Millisecond, func() { b.packet(64 * kib) })
			l.AfterFunc(time.Second, func() {
				a.c.Close()
				b.c.Close()
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	r, _, err := model.DecodeResponse(a.resp)
	if err != nil || !strings.Contains(r.Message, "busy: holding 131072") || yields != 1 {
		t.Fatalf("A answered %v %q (%v), %d yields; want one, A refused busy", r.Status, r.Message, err, yields)
	}
	if waitingAfter != 0 {
		t.Errorf("A still waiting for room after it gave its room up")
	}
}
