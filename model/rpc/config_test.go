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

// NewClient refuses a config with any one size or timeout negative, as
// StartServer does, and takes one with none: a negative CallTimeout
// alone would otherwise make a client whose calls never time out (Call
// arms a timer only for a positive one), where its user asked for a
// bound.
func TestNewClientRefusesBadConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  rpc.ClientConfig
		ok   bool
	}{
		{"defaults", rpc.ClientConfig{}, true},
		{"all set", rpc.ClientConfig{MaxFrame: 1 << 20, IdleTimeout: time.Second, CallTimeout: time.Second}, true},
		{"max frame", rpc.ClientConfig{MaxFrame: -1}, false},
		{"idle timeout", rpc.ClientConfig{IdleTimeout: -time.Second}, false},
		{"call timeout", rpc.ClientConfig{CallTimeout: -time.Second}, false},
	}
	w := sim.New(sim.DefaultConfig(1))
	ran := false
	_, err := w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		ran = true
		for _, c := range cases {
			cl, err := rpc.NewClient(p, p.MainLoop(), c.cfg)
			if ok := err == nil && cl != nil; ok != c.ok {
				t.Errorf("%s: made a client %v, error %v; want made %v", c.name, cl != nil, err, c.ok)
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
		t.Fatal("the client process never ran")
	}
}
