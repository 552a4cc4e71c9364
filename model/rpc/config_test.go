package rpc_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// StartServer refuses a config with any one size or timeout negative (or
// no address, or no service), and makes nothing for it: no listener, no
// loop. A negative count of readers or handlers alone must be refused: it
// would start a server with none, whose first connection finds no reader.
func TestStartServerRefusesBadConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  rpc.ServerConfig
		svc  rpc.Service
	}{
		{"no address", rpc.ServerConfig{}, &testService{}},
		{"no service", rpc.ServerConfig{Addr: srvAddr}, nil},
		{"readers", rpc.ServerConfig{Addr: srvAddr, Readers: -1}, &testService{}},
		{"handlers", rpc.ServerConfig{Addr: srvAddr, Handlers: -1}, &testService{}},
		{"queue", rpc.ServerConfig{Addr: srvAddr, QueueSize: -1}, &testService{}},
		{"max frame", rpc.ServerConfig{Addr: srvAddr, MaxFrame: -1}, &testService{}},
		{"idle timeout", rpc.ServerConfig{Addr: srvAddr, IdleTimeout: -time.Second}, &testService{}},
		{"max pending", rpc.ServerConfig{Addr: srvAddr, MaxPending: -1}, &testService{}},
		{"max in flight", rpc.ServerConfig{Addr: srvAddr, MaxInFlight: -1}, &testService{}},
	}
	w := sim.New(sim.DefaultConfig(1))
	ran := false
	_, err := w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
		ran = true
		for i, c := range cases {
			fds := p.FDs().Open
			if c.cfg.Addr != "" {
				// (One address a case: a server the test failed to
				// refuse keeps its listener.)
				c.cfg.Addr = fmt.Sprintf("nn:%d", 9000+i)
			}
			if s, err := rpc.StartServer(p, p.MainLoop(), c.svc, c.cfg); err == nil || s != nil {
				t.Errorf("%s: started (%v), error %v; want refused", c.name, s != nil, err)
			}
			if n := p.FDs().Open; n != fds {
				t.Errorf("%s: %d fds open after the refusal, want %d", c.name, n, fds)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the server process never ran")
	}
}
