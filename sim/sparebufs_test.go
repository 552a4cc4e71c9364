package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// A selector keeps the packet buffers its connections give back, but not
// those that go unused: past 64, every second it drops the ones that
// stayed free all the while. 100 readers ask for a 1 MiB block and read
// nothing (a 4 KiB receive buffer, the datanode's send buffer 16 KiB), so
// each stays mid-packet with a buffer lent; at 1 s they close. Kept
// without bound, all 100 buffers stayed in the free list for the
// datanode's life; now the trim a second after the first was given back
// finds them all unused since, and 64 are left by 3 s.
func TestSpareBuffersAreBounded(t *testing.T) {
	const readers = 100
	dcfg := model.DatanodeConfig{Selectors: 1, PoolMax: 2 * readers, MaxConns: 4 * readers, SendTimeout: time.Minute,
		StallTimeout: time.Minute, HandleWait: time.Minute}
	block := model.BlockContent(1, 1<<20)
	peak, spare, out, kept := 0, -1, -1, -1
	datanodeWorld(t, dcfg, [][]byte{block}, "readers", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		dnProc.(*Process).SetSocketBuffers(16<<10, 0)
		pp.(*Process).SlowReader(4096)
		l := pp.MainLoop()
		var conns []model.Conn
		for i := 0; i < readers; i++ {
			var c model.Conn
			sent := false
			c, err := pp.Dial("tcp", "dn:50010", l, func(ev model.Events) {
				if ev&model.Writable != 0 && !sent {
					sent = true
					c.SetWriteInterest(false)
					if _, err := c.Write(request(model.OpReadBlock, 1, 0, 0, int64(len(block)))); err != nil {
						w.Fail(err)
					}
				}
			})
			if err != nil {
				w.Fail(err)
				return
			}
			c.SetReadInterest(false)
			c.SetWriteInterest(true)
			conns = append(conns, c)
		}
		l.AfterFunc(time.Second, func() {
			peak = dn.BuffersOut()
			for _, c := range conns {
				c.Close()
			}
		})
		l.AfterFunc(1500*time.Millisecond, func() { kept = dn.SpareBuffers() })
		l.AfterFunc(3*time.Second, func() { spare, out = dn.SpareBuffers(), dn.BuffersOut() })
	})
	if peak < readers {
		t.Fatalf("%d packet buffers lent with %d readers stuck mid-packet: want one each (the test no longer fills the free list)", peak, readers)
	}
	if kept != readers {
		t.Errorf("half a second after the readers closed, %d buffers kept for reuse; want all %d (none has gone unused for a second yet)", kept, readers)
	}
	if out != 0 || spare != 64 {
		t.Errorf("2 s after the readers closed: %d buffers lent, %d kept for reuse; want 0 and 64", out, spare)
	}
}
