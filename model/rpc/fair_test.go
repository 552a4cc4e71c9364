package rpc_test

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
)

// A connection that pipelines many calls does not keep another
// connection's call, read by the same reader, out of the queue. One
// reader, one handler, a queue of one: client 0 pipelines 1,000 calls of
// 1 ms each; at 20 ms client 1 makes one. The reader, blocked on the full
// queue, refills one call a connection in turn, so client 1's call goes
// in after at most one of client 0's: it takes a few milliseconds in the
// batch reader, where filling a connection's calls in one go made it
// wait 984 ms behind the 1,000, as in Hadoop's reader mode.
func TestPipelinerDoesNotStarveItsReader(t *testing.T) {
	for _, hadoop := range []bool{false, true} {
		var took time.Duration
		var err error
		world(t, rpc.ServerConfig{Readers: 1, Handlers: 1, QueueSize: 1, HadoopReader: hadoop, IdleTimeout: 30 * time.Second}, rpc.ClientConfig{IdleTimeout: time.Second}, 2,
			func(e *env, i int, p model.Process, cl *rpc.Client) {
				l := p.MainLoop()
				if i == 0 {
					for k := 0; k < 1000; k++ {
						cl.Call(srvAddr, mSlow, []byte{byte(k)}, func(rpc.Reply) {})
					}
					return
				}
				l.AfterFunc(20*time.Millisecond, func() {
					start := l.Now()
					cl.Call(srvAddr, mEcho, []byte("v"), func(r rpc.Reply) { took, err = l.Now()-start, r.Err })
				})
			})
		if err != nil || took > 20*time.Millisecond {
			t.Errorf("Hadoop's reader %v: a call behind 1,000 pipelined on the same reader took %v (%v); want a few ms", hadoop, took, err)
		}
	}
}

// A connection that a refill closes for a fatal frame does not cost the
// others their turn. One reader, one handler, a queue of one: client 0
// pipelines 300 calls; at 10 ms client 1 sends the preamble and a frame
// whose length passes MaxFrame, read while the reader is blocked and
// refused (closing it) when its turn comes; at 20 ms client 2 makes one
// call, which must still be answered within a few milliseconds.
func TestFatalFrameMidRefillKeepsOthersTurns(t *testing.T) {
	var took time.Duration
	var err error
	world(t, rpc.ServerConfig{Readers: 1, Handlers: 1, QueueSize: 1, IdleTimeout: 30 * time.Second}, rpc.ClientConfig{IdleTimeout: time.Second}, 3,
		func(e *env, i int, p model.Process, cl *rpc.Client) {
			l := p.MainLoop()
			switch i {
			case 0:
				for k := 0; k < 300; k++ {
					cl.Call(srvAddr, mSlow, []byte{byte(k)}, func(rpc.Reply) {})
				}
			case 1:
				l.AfterFunc(10*time.Millisecond, func() {
					var c model.Conn
					c, derr := p.Dial("tcp", srvAddr, l, func(ev model.Events) {
						if ev&model.Writable != 0 {
							c.SetWriteInterest(false)
							c.Write(append(rpc.Preamble[:], 0xff, 0xff, 0xff, 0xff, 1))
						}
					})
					if derr != nil {
						e.w.Fail(derr)
						return
					}
					c.SetReadInterest(false)
					c.SetWriteInterest(true)
					l.AfterFunc(time.Second, func() { c.Close() })
				})
			case 2:
				l.AfterFunc(20*time.Millisecond, func() {
					start := l.Now()
					cl.Call(srvAddr, mEcho, []byte("v"), func(r rpc.Reply) { took, err = l.Now()-start, r.Err })
				})
			}
		})
	if err != nil || took > 20*time.Millisecond {
		t.Errorf("a call behind a pipeliner, with a garbage connection refused mid-refill, took %v (%v); want a few ms", took, err)
	}
}
