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
		c := sendAndIgnore(w, pp, request(model.OpReadBlock, 1, 0, 0, int64(len(content))))
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

// By default a read whose client never takes its data holds its
// connection for HDFS's write timeout, 8 minutes after the datanode last
// got a byte out, and no longer: nothing else cuts it off while no other
// read waits for a handle.
func TestDefaultSendTimeoutIsEightMinutes(t *testing.T) {
	content := model.BlockContent(1, 4<<20)
	conns := map[time.Duration]int{}
	datanodeWorld(t, model.DatanodeConfig{}, [][]byte{content}, "stuck", func(w *World, dn *model.Datanode, _, pp model.Process) {
		l := pp.MainLoop()
		c := sendAndIgnore(w, pp, request(model.OpReadBlock, 1, 0, 0, int64(len(content))))
		for _, at := range []time.Duration{time.Minute + time.Second, 8*time.Minute - time.Second, 8*time.Minute + time.Second} {
			l.AfterFunc(at, func() { conns[at] = dn.Conns() })
		}
		l.AfterFunc(9*time.Minute, func() { c.Close() })
	})
	if conns[time.Minute+time.Second] != 1 || conns[8*time.Minute-time.Second] != 1 || conns[8*time.Minute+time.Second] != 0 {
		t.Errorf("the datanode held %v connections (by time): want the stuck read's until 8 minutes, then none", conns)
	}
}
