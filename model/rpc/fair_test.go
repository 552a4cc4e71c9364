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
// in after at most one of client 0's: it takes a few milliseconds, as in
// Hadoop's reader mode, where filling a connection's calls in one go made
// it wait 984 ms behind the 1,000.
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
