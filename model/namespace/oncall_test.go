package namespace_test

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/sim"
)

// OnCall hears each call's latency, from the call to its answer: the
// scenario's per-method latencies are made of it. check's rpc system does
// not use the hook, so nothing held what it reports.
func TestOnCallHearsTheCallsLatency(t *testing.T) {
	var heard []time.Duration
	var took time.Duration
	start(t, namespace.RWLock, func(_ *sim.World, p model.Process, c *namespace.Client) {
		l := p.MainLoop()
		c.Loop = l
		c.OnCall = func(m uint8, d time.Duration, err error) {
			if m != namespace.MethodMkdir || err != nil {
				t.Errorf("OnCall heard %s, error %v; want the mkdir, answered", namespace.MethodName(m), err)
			}
			heard = append(heard, d)
		}
		t0 := l.Now()
		c.Do(namespace.Request{Method: namespace.MethodMkdir, Path: "/a"}, func(namespace.Response, error) { took = l.Now() - t0 })
	})
	if len(heard) != 1 || heard[0] <= 0 || heard[0] > took {
		t.Errorf("OnCall heard latencies %v for a call answered in %v; want one, of at most that", heard, took)
	}
}
