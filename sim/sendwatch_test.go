package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// A read whose client stopped taking data is watched at a coarse step: a
// look every StallTimeout while it holds a pool handle, until the send
// timeout closes it, not a poll every millisecond once it has stalled
// past the first step. Between 1 s and 2.5 s into a stall the world then
// runs a few dozen events at most (those looks, and TCP's zero-window
// probes, which back off); and the send timeout still ends it on time.
func TestStalledSendIsWatchedCoarsely(t *testing.T) {
	content := model.BlockContent(1, 4<<20)
	dcfg := model.DatanodeConfig{SendTimeout: 3 * time.Second, StallTimeout: 200 * time.Millisecond, ReadTimeout: time.Minute}
	var during uint64
	connsAt2, connsAt4 := -1, -1
	datanodeWorld(t, dcfg, [][]byte{content}, "stuck", func(w *World, dn *model.Datanode, _, pp model.Process) {
		l := pp.MainLoop()
		var c model.Conn
		c, _ = pp.Dial("tcp", "dn:50010", l, func(ev model.Events) {
			if ev&model.Writable != 0 {
				c.SetWriteInterest(false)
				if _, err := c.Write(request(model.OpReadBlock, 1, 0, 0, int64(len(content)))); err != nil {
					w.Fail(err)
				}
			}
		})
		c.SetReadInterest(false) // it never reads: its window closes
		c.SetWriteInterest(true)
		var at1 uint64
		l.AfterFunc(time.Second, func() { at1 = w.Events() })
		l.AfterFunc(2500*time.Millisecond, func() { during, connsAt2 = w.Events()-at1, dn.Conns() })
		l.AfterFunc(4*time.Second, func() {
			connsAt4 = dn.Conns()
			c.Close()
		})
	})
	if during == 0 || during > 100 {
		t.Errorf("%d events between 1 s and 2.5 s into the stall, want a few dozen at most", during)
	}
	if connsAt2 != 1 || connsAt4 != 0 {
		t.Errorf("the datanode held %d connections at 2.5 s and %d at 4 s: want the stalled read until its send timeout (3 s), then none", connsAt2, connsAt4)
	}
}
