package rpc_test

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// A call costs three parses of simulated CPU (model.CPUParse), one a side
// and one for the reply: the client encodes the call and decodes the
// answer, and the handler frames the reply. Each is on the call's path,
// so with a parse of 5 ms a call takes 15 ms longer than with none.
func TestCallCostsThreeParses(t *testing.T) {
	latency := func(parse time.Duration) time.Duration {
		t.Helper()
		cfg := sim.DefaultConfig(1)
		cfg.CPU.Parse = parse
		w := sim.New(cfg)
		var took time.Duration
		answered := false
		_, err := w.Spawn("server", model.ProcessConfig{Cores: 2}, func(p model.Process) {
			if _, err := rpc.StartServer(p, p.MainLoop(), &testService{}, rpc.ServerConfig{Addr: srvAddr, Handlers: 1}); err != nil {
				w.Fail(err)
				return
			}
			w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
				cl, err := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{IdleTimeout: time.Second})
				if err != nil {
					w.Fail(err)
					return
				}
				// The call timed goes on a connection made by a first
				// one: a dial's handshake overlaps the first call's
				// parse.
				cl.Call(srvAddr, mEcho, []byte("x"), func(rpc.Reply) {
					start := cp.MainLoop().Now()
					cl.Call(srvAddr, mEcho, []byte("x"), func(r rpc.Reply) {
						if r.Err != nil {
							t.Errorf("parse %v: %v", parse, r.Err)
						}
						took, answered = cp.MainLoop().Now()-start, true
					})
				})
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Run(time.Minute); err != nil {
			t.Fatal(err)
		}
		if !answered {
			t.Fatalf("parse %v: the call was never answered", parse)
		}
		return took
	}
	base, slow := latency(0), latency(5*time.Millisecond)
	// (Within 100 µs: the rest of the call's path, a few µs, overlaps
	// the parses a little differently.)
	if d := slow - base; d < 15*time.Millisecond-100*time.Microsecond || d > 15*time.Millisecond+100*time.Microsecond {
		t.Errorf("a call took %v with no parse cost and %v with 5 ms a parse: %v more, want 15 ms", base, slow, d)
	}
}
