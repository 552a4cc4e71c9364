package rpc_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// TestCallTableAndQueueModel drives a server and two clients with random
// calls, pauses and time steps, and checks them against a reference: each
// client's table holds exactly the calls issued and not yet answered, every
// answer is the one its call asked for and comes once, the call queue never
// passes its bound (checked at every event), and once the clients read
// again everything is answered and the server is left holding nothing.
func TestCallTableAndQueueModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := sim.New(sim.DefaultConfig(rapid.Uint64().Draw(rt, "seed")))
		scfg := rpc.ServerConfig{
			Addr:      srvAddr,
			Readers:   rapid.IntRange(1, 3).Draw(rt, "readers"),
			Handlers:  rapid.IntRange(1, 3).Draw(rt, "handlers"),
			QueueSize: rapid.IntRange(1, 4).Draw(rt, "queue"),
			// Hadoop's reader, one call per event and decoded by the
			// reader, or ours, everything buffered.
			HadoopReader: rapid.Bool().Draw(rt, "hadoopReader"),
		}
		var svc rpc.Service = &testService{}
		if scfg.HadoopReader {
			svc = &decodingService{}
		}
		var srv *rpc.Server
		var fail error
		type client struct {
			p   model.Process
			cl  *rpc.Client
			ref map[uint64]bool // call number → waiting
		}
		clients := make([]*client, 2)
		w.Spawn("server", model.ProcessConfig{Cores: 2}, func(p model.Process) {
			var err error
			if srv, err = rpc.StartServer(p, p.MainLoop(), svc, scfg); err != nil {
				w.Fail(err)
			}
		})
		for i := range clients {
			c := &client{ref: map[uint64]bool{}}
			clients[i] = c
			w.Spawn(fmt.Sprintf("client%d", i), model.ProcessConfig{}, func(p model.Process) {
				c.p = p
				c.cl, _ = rpc.NewClient(p, p.MainLoop(), rpc.ClientConfig{})
			})
		}
		w.AfterEach(func() {
			if srv != nil && srv.QueueLen() > srv.QueueCap() && fail == nil {
				fail = fmt.Errorf("call queue %d over its bound %d", srv.QueueLen(), srv.QueueCap())
			}
		})
		if err := w.RunFor(time.Millisecond); err != nil {
			rt.Fatal(err)
		}
		var next uint64
		check := func() {
			if fail != nil {
				rt.Fatal(fail)
			}
			for i, c := range clients {
				waiting := 0
				for _, w := range c.ref {
					if w {
						waiting++
					}
				}
				if got := c.cl.Outstanding(); got != waiting {
					rt.Fatalf("client %d: %d calls in its table, reference has %d waiting", i, got, waiting)
				}
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				c := clients[rapid.IntRange(0, len(clients)-1).Draw(rt, "client")]
				m := rapid.SampledFrom([]uint8{mEcho, mSlow, mBig}).Draw(rt, "method")
				next++
				n := next
				payload := binary.BigEndian.AppendUint64(nil, n)
				want := payload
				if m == mBig {
					size := rapid.IntRange(0, 300<<10).Draw(rt, "size")
					payload = binary.BigEndian.AppendUint32(nil, uint32(size))
					want = make([]byte, size)
				}
				c.p.MainLoop().Post(func() {
					c.ref[n] = true
					c.cl.Call(srvAddr, m, payload, func(r rpc.Reply) {
						switch {
						case !c.ref[n]:
							fail = fmt.Errorf("call %d answered twice or unasked", n)
						case r.Err != nil:
							fail = fmt.Errorf("call %d: %w", n, r.Err)
						case !bytes.Equal(r.Payload, want):
							fail = fmt.Errorf("call %d: wrong answer (%d bytes)", n, len(r.Payload))
						}
						c.ref[n] = false
					})
				})
			},
			"pause": func(rt *rapid.T) {
				c := clients[rapid.IntRange(0, len(clients)-1).Draw(rt, "client")]
				c.p.MainLoop().Post(func() { c.cl.PauseReading(srvAddr) })
			},
			"resume": func(rt *rapid.T) {
				c := clients[rapid.IntRange(0, len(clients)-1).Draw(rt, "client")]
				c.p.MainLoop().Post(func() { c.cl.ResumeReading(srvAddr) })
			},
			"run": func(rt *rapid.T) {
				d := time.Duration(rapid.IntRange(0, 3000).Draw(rt, "us")) * time.Microsecond
				if err := w.RunFor(d); err != nil {
					rt.Fatal(err)
				}
			},
			"": func(rt *rapid.T) { check() },
		})
		for _, c := range clients {
			c.p.MainLoop().Post(func() { c.cl.ResumeReading(srvAddr) })
		}
		if err := w.Run(time.Hour); err != nil {
			rt.Fatal(err)
		}
		check()
		for i, c := range clients {
			for n, waiting := range c.ref {
				if waiting {
					rt.Fatalf("client %d: call %d never answered", i, n)
				}
			}
		}
		conns, queued, pending, busy, blocked := srv.Quiet()
		if conns+queued+pending+busy+blocked != 0 {
			rt.Fatalf("server not quiet: conns %d queued %d pending %d busy %d blocked %d", conns, queued, pending, busy, blocked)
		}
	})
}
