package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// A connection leaves no timer behind when it closes: its keep-alive
// wait's, read timeout's and request deadline's go with it, rather than
// fire later into a closed connection. Each would hold the connection
// until it fired: with HDFS's 60 s read timeout, a flood's closed
// connections would all stay reachable for a minute. The datanode keeps
// its one handle (PoolMin), so it arms no trim timer of its own either.
func TestClosedConnectionLeavesNoTimers(t *testing.T) {
	content := model.BlockContent(1, 8192)
	dcfg := model.DatanodeConfig{Keepalive: 5 * time.Second, ReadTimeout: time.Minute, PoolMin: 4}
	cases := []struct {
		name string
		// open makes a connection that the datanode then sees closed;
		// done runs once the client side has closed it.
		open func(w *World, pp model.Process, done func())
	}{
		{"closed in its keep-alive wait", func(w *World, pp model.Process, done func()) {
			cl, err := model.NewClient(pp, pp.MainLoop(), 1, model.ClientConfig{Datanode: "dn:50010", CacheCapacity: 1})
			if err != nil {
				w.Fail(err)
				return
			}
			cl.Read(1, 0, 0, 1000, func(r model.Result) {
				if r.Err != nil {
					w.Fail(r.Err)
				}
				cl.Close() // closes the cached connection: FIN
				done()
			})
		}},
		{"closed mid-request", func(w *World, pp model.Process, done func()) {
			var c model.Conn
			c, _ = pp.Dial("tcp", "dn:50010", pp.MainLoop(), func(ev model.Events) {
				if ev&model.Writable != 0 {
					c.SetWriteInterest(false)
					c.Write(request(model.OpReadBlock, 1, 0, 0, 10)[:10])
					pp.MainLoop().AfterFunc(100*time.Millisecond, func() { c.Close(); done() })
				}
			})
			c.SetWriteInterest(true)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after Resources
			var conns int
			datanodeWorld(t, dcfg, [][]byte{content}, "peer", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
				before = dnProc.(*Process).Resources()
				tc.open(w, pp, func() {
					pp.MainLoop().AfterFunc(50*time.Millisecond, func() {
						after, conns = dnProc.(*Process).Resources(), dn.Conns()
						w.Stop()
					})
				})
			})
			if conns != 0 {
				t.Fatalf("the datanode still holds %d connections", conns)
			}
			if after.Timers != before.Timers {
				t.Errorf("datanode: %d timers pending after the connection closed, %d before it", after.Timers, before.Timers)
			}
		})
	}
}
