package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// stuckAnswerWrite runs a client that asks k empty reads, one a
// millisecond, each with its status pipelined, and reads none of the
// answers (a 4 KiB receive buffer; the datanode's send buffer 4 KiB), then
// a write of two 64 KiB packets and an empty packet at a wrong offset.
// It reports, 50 ms after that packet, whether the datanode's connection
// is still open flushing its answer (the answers before filled the socket,
// so the refusal cannot go out until the send timeout), and how much
// write room the datanode holds reserved then.
func stuckAnswerWrite(t *testing.T, k int) (flushing bool, reserved int) {
	const kib = 1 << 10
	dcfg := model.DatanodeConfig{MaxWrite: 256 * kib, MaxBuffered: 4 << 20, SendTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	datanodeWorld(t, dcfg, [][]byte{model.BlockContent(1, 100)}, "stuffer", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		dnProc.(*Process).SetSocketBuffers(4*kib, 0)
		pp.(*Process).SlowReader(4 * kib)
		s := &stepWriter{data: model.BlockContent(9, 256*kib)}
		l := pp.MainLoop()
		c, err := pp.Dial("tcp", "dn:50010", l, func(ev model.Events) { s.onEvent(ev) })
		if err != nil {
			w.Fail(err)
			return
		}
		s.c = c
		c.SetReadInterest(false)
		read := model.AppendStatus(request(model.OpReadBlock, 1, 0, 0, 0), model.StatusSuccess)
		for i := 0; i < k; i++ {
			l.AfterFunc(time.Duration(i+1)*time.Millisecond, func() {
				s.out = append(s.out, read...)
				s.flush()
			})
		}
		end := time.Duration(k+1) * time.Millisecond
		l.AfterFunc(end, func() {
			s.out = append(s.out, request(model.OpWriteBlock, 9, 0, 0, 256*kib)...)
			s.packet(64*kib, false)
			s.packet(64*kib, false)
			// An empty packet at a wrong offset: the write is refused.
			s.out = model.AppendPacket(s.out, model.PacketHeader{Offset: 1, Seqno: 2}, nil, model.BytesPerChecksum)
			s.flush()
		})
		l.AfterFunc(end+50*time.Millisecond, func() {
			reserved = dn.ReservedWriteBytes()
			dn.VisitMemory(func(m model.ConnMemory) {
				flushing = flushing || !m.Closed && m.Phase == "flushing"
			})
		})
		l.AfterFunc(end+time.Second, func() { c.Close() })
	})
	return flushing, reserved
}

// A write that is refused gives its data and its room back at once, not
// once its answer has gone out: a client that reads nothing holds the
// answer off for the send timeout, and with it room other writes wait
// for. The test looks for the number of empty reads before the write that
// leaves the refusal stuck behind their answers, and requires that the
// datanode then holds no room.
func TestRefusedWriteGivesRoomBackAtOnce(t *testing.T) {
	for k := 40; k <= 160; k++ {
		flushing, reserved := stuckAnswerWrite(t, k)
		if !flushing {
			continue
		}
		if reserved != 0 {
			t.Fatalf("%d empty reads, then a refused write: its answer is stuck, and the datanode holds %d bytes of write room for it; want none", k, reserved)
		}
		return
	}
	t.Fatal("no number of empty reads from 40 to 160 left a refused write's answer stuck: the test no longer reaches the case")
}
