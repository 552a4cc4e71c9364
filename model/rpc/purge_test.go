package rpc_test

import (
	"encoding/binary"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// A client that asks for answers larger than the socket buffers hold and
// then never reads again, nor closes (a stopped process), loses its
// connection once its answers have gone untaken for the idle timeout
// (500 ms): the server no longer holds them and the connection forever.
// MaxInFlight and MaxPending bound how much it holds, not for how long,
// and a 4 MiB answer alone stayed, with its connection, until the client
// closed at 61 s.
func TestUntakenAnswersArePurged(t *testing.T) {
	var at, later rpc.Pending
	e := world(t, rpc.ServerConfig{Handlers: 2, IdleTimeout: 500 * time.Millisecond}, rpc.ClientConfig{}, 1,
		func(e *env, _ int, p model.Process, cl *rpc.Client) {
			p.(*sim.Process).SlowReader(4096)
			for _, size := range []uint32{4 << 20, 300 << 10} {
				var n [4]byte
				binary.BigEndian.PutUint32(n[:], size)
				cl.Call(srvAddr, mBig, n[:], func(rpc.Reply) {})
			}
			cl.PauseReading(srvAddr)
			p.MainLoop().AfterFunc(200*time.Millisecond, func() { at = e.srv.Pending() })
			p.MainLoop().AfterFunc(800*time.Millisecond, func() { later = e.srv.Pending() })
			p.MainLoop().AfterFunc(61*time.Second, func() { cl.Close() })
		})
	if at.Conns != 1 || at.Bytes == 0 {
		t.Fatalf("at 200 ms the server holds %d connections and %d bytes of answers: want the stalled client's, with its answers (the case no longer stalls them)", at.Conns, at.Bytes)
	}
	if later.Conns != 0 || later.Bytes != 0 {
		t.Errorf("800 ms after its client stopped reading the server still holds %d connections and %d bytes of answers: want them purged within 1.5 idle timeouts (the idle scan runs every half of one)", later.Conns, later.Bytes)
	}
	if st := e.srv.Stats(); st.Purged != 1 {
		t.Errorf("%d connections purged, want 1 (stats %+v)", st.Purged, st)
	}
}

// A connection's input buffer goes back to what its input needs once a
// large call is queued, whatever follows it: a call of 1,000 KiB, then
// one of 100 KiB pipelined behind it. At every event the buffer is at
// most twice what it holds and the rest of the call it is reading, or
// InputKeep. (A buffer shrunk only when what followed was small kept the
// first call's 1 MB while it read the second: a review found it.)
func TestInputBufferShrinksAfterALargeCall(t *testing.T) {
	worst := 0
	done := 0
	worldEach(t, rpc.ServerConfig{Handlers: 1}, rpc.ClientConfig{}, 1,
		func(e *env) { worst = max(worst, e.srv.Input().Kept) },
		func(e *env, _ int, p model.Process, cl *rpc.Client) {
			for _, size := range []int{1000 << 10, 100 << 10} {
				cl.Call(srvAddr, mEcho, make([]byte, size), func(r rpc.Reply) {
					if r.Err != nil {
						e.w.Fail(r.Err)
					}
					if done++; done == 2 {
						cl.Close()
					}
				})
			}
		})
	if done != 2 {
		t.Fatalf("%d of the 2 calls answered", done)
	}
	if worst > 0 {
		t.Errorf("a connection's input buffer held %d bytes more than its input needed (twice it, or %d)", worst, rpc.InputKeep)
	}
}
