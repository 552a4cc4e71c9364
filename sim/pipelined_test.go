package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// The whole-message deadline (RequestTimeout) counts from the first byte
// of a request, pipelined or not. A client sends a read, its status and
// the first byte of a next request in one write, then nothing: the
// datanode finishes the read, finds the byte behind the status, and must
// close the connection RequestTimeout (1 s) after it, not only at the read
// timeout (10 s), which a byte every 9 s would put off for good.
func TestPipelinedPartialRequestTimesOut(t *testing.T) {
	dcfg := model.DatanodeConfig{RequestTimeout: time.Second, ReadTimeout: 10 * time.Second, Keepalive: time.Minute}
	ats := []time.Duration{500 * time.Millisecond, 1100 * time.Millisecond}
	conns := make([]int, len(ats))
	datanodeWorld(t, dcfg, [][]byte{model.BlockContent(1, 100)}, "pipeliner", func(w *World, dn *model.Datanode, _, pp model.Process) {
		l := pp.MainLoop()
		msg := model.AppendStatus(request(model.OpReadBlock, 1, 0, 0, 100), model.StatusSuccess)
		msg = append(msg, request(model.OpReadBlock, 1, 0, 0, 100)[0])
		c := sendAndIgnore(w, pp, msg)
		if c == nil {
			return
		}
		for i, at := range ats {
			l.AfterFunc(at, func() { conns[i] = dn.Conns() })
		}
		l.AfterFunc(15*time.Second, func() { c.Close() })
	})
	if conns[0] != 1 || conns[1] != 0 {
		t.Errorf("a request's first byte pipelined behind a status, then nothing: %d datanode connections at %v and %d at %v; want 1, then 0 (RequestTimeout 1 s)", conns[0], ats[0], conns[1], ats[1])
	}
}

// sendAndIgnore dials the datanode from pp, writes msg once connected, and
// reads nothing: what the datanode answers stays in the socket. It
// returns the connection, or nil (the world failed) if the dial did.
func sendAndIgnore(w *World, pp model.Process, msg []byte) model.Conn {
	var c model.Conn
	sent := false
	c, err := pp.Dial("tcp", "dn:50010", pp.MainLoop(), func(ev model.Events) {
		if ev&model.Writable != 0 && !sent {
			sent = true
			c.SetWriteInterest(false)
			if _, err := c.Write(msg); err != nil {
				w.Fail(err)
			}
		}
	})
	if err != nil {
		w.Fail(err)
		return nil
	}
	c.SetReadInterest(false)
	c.SetWriteInterest(true)
	return c
}
