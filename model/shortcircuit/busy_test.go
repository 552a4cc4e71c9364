package shortcircuit_test

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// A domain connection reads nothing while its request is served: a client
// that asks for a segment and closes 20 µs later, while another datanode
// loop holds the datanode's lock for 2 ms (as a replace's fsyncs do),
// brings an EOF the request cannot yet act on. Left reading, the
// connection's handler was called at every turn of the loop for it, and
// the sim's spin check (on, as in check) failed the run.
func TestBusyDomainConnDoesNotSpin(t *testing.T) {
	cfg := sim.DefaultConfig(1)
	cfg.SpinLimit = sim.DefaultSpinLimit
	w := sim.New(cfg)
	var srv *shortcircuit.Server
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010"})
		if err != nil {
			w.Fail(err)
			return
		}
		if srv, err = shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/dn_socket"}); err != nil {
			w.Fail(err)
			return
		}
		hog, err := p.NewLoop("hog")
		if err != nil {
			w.Fail(err)
			return
		}
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			l := cp.MainLoop()
			c, err := cp.Dial("unix", "/run/dn_socket", l, func(model.Events) {})
			if err != nil {
				w.Fail(err)
				return
			}
			if _, err := c.Write(shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm})); err != nil {
				w.Fail(err)
				return
			}
			hog.Post(func() {
				dn.Lock().Do(hog, func() { p.CPU(model.CPUInode, 20000) })
			})
			l.AfterFunc(20*time.Microsecond, func() { c.Close() })
			l.AfterFunc(50*time.Millisecond, w.Stop)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatalf("a request served while its client closed: %v", err)
	}
	if srv == nil {
		t.Fatal("the domain endpoint never started")
	}
}
