package rpc_test

import (
	"encoding/binary"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// A client on a slow link takes its answer a little at a time, for longer
// than the idle timeout, while it sends nothing more: it is reading, and
// its connection must not be purged. The purge is for answers untaken for
// the idle timeout (a stopped client), timed from their last move, not
// from the client's last call; no check case has a client drain an answer
// for that long (a purge timed from the wrong clock passed 300 seeds).
// Meanwhile Quiet, which check's leak test at rest reads, reports the
// connection and its answer.
func TestSlowLinkTakerIsNotPurged(t *testing.T) {
	const idle, size = 50 * time.Millisecond, 200 << 10
	cfg := sim.DefaultConfig(1)
	cfg.TCP.Inline = false
	cfg.TCP.Bandwidth = 1 << 20 // a second a MiB: 200 KiB take 4 idle timeouts
	w := sim.New(cfg)
	var srv *rpc.Server
	var rep rpc.Reply
	var took time.Duration
	var conns, pending int
	_, err := w.Spawn("server", model.ProcessConfig{Cores: 4}, func(p model.Process) {
		var err error
		if srv, err = rpc.StartServer(p, p.MainLoop(), &testService{}, rpc.ServerConfig{Addr: srvAddr, Handlers: 2, IdleTimeout: idle}); err != nil {
			w.Fail(err)
			return
		}
		// A small send buffer: the answer waits in the server for the
		// responder, where the purge looks.
		p.(*sim.Process).SetSocketBuffers(4<<10, 0)
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			cl, err := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{})
			if err != nil {
				w.Fail(err)
				return
			}
			l := cp.MainLoop()
			var n [4]byte
			binary.BigEndian.PutUint32(n[:], size)
			start := l.Now()
			cl.Call(srvAddr, mBig, n[:], func(r rpc.Reply) {
				rep, took = r, l.Now()-start
				cl.Close()
			})
			l.AfterFunc(idle, func() { conns, _, pending, _, _ = srv.Quiet() })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if rep.Err != nil || len(rep.Payload) != size {
		t.Fatalf("the answer: %d bytes, error %v; want %d", len(rep.Payload), rep.Err, size)
	}
	if took < 2*idle {
		t.Fatalf("the answer took %v, within 2 idle timeouts (%v): the case no longer drains slowly", took, 2*idle)
	}
	if st := srv.Stats(); st.Purged != 0 || st.IdleClosed != 0 {
		t.Errorf("a client taking its answer over %v was purged %d times, idle-closed %d (idle timeout %v)", took, st.Purged, st.IdleClosed, idle)
	}
	if conns != 1 || pending != 1 {
		t.Errorf("Quiet an idle timeout into the answer: %d connections, %d responses pending; want 1 and 1", conns, pending)
	}
}
