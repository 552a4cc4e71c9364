package shortcircuit_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// With the datanode's cap full of idle domain connections, the endpoint
// keeps one accepted connection waiting and accepts nothing more until it
// gets in; once it does, accepting must start again, or every connection
// behind it stays in the accept queue for good. Two honest readers arrive
// while three idle connections fill a cap of 4 (one left for TCP): both
// REQUEST_SHMs are answered, each once an idler has been silent for
// model.IdleGrace and is closed to make room. (Mutation testing found
// that check, at 300 seeds, missed an endpoint that never accepted again
// after its first wait.)
func TestAcceptResumesAfterWaiting(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	answered := map[string]model.Status{}
	var evicted int
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010", MaxConns: 4})
		if err != nil {
			w.Fail(err)
			return
		}
		srv, err := shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/dn_socket"})
		if err != nil {
			w.Fail(err)
			return
		}
		p.MainLoop().AfterFunc(20*time.Millisecond, func() { evicted = srv.Stats().Evicted })
		w.Spawn("flooder", model.ProcessConfig{}, func(fl model.Process) {
			for range 3 {
				if _, err := fl.Dial("unix", "/run/dn_socket", fl.MainLoop(), func(model.Events) {}); err != nil {
					w.Fail(err)
				}
			}
		})
		for i := range 2 {
			name := fmt.Sprintf("reader-%d", i)
			w.Spawn(name, model.ProcessConfig{}, func(rp model.Process) {
				l := rp.MainLoop()
				l.AfterFunc(time.Millisecond, func() {
					var c model.Conn
					var in []byte
					c, err := rp.Dial("unix", "/run/dn_socket", l, func(model.Events) {
						var b [256]byte
						n, _, _ := c.ReadFDs(b[:])
						in = append(in, b[:n]...)
						if resp, _, err := shortcircuit.DecodeResponse(in); err == nil {
							if _, ok := answered[name]; !ok {
								answered[name] = resp.Status
							}
						}
					})
					if err != nil {
						w.Fail(err)
						return
					}
					c.Write(shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: name}))
				})
			})
		}
		p.MainLoop().AfterFunc(30*time.Millisecond, w.Stop)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		name := fmt.Sprintf("reader-%d", i)
		switch st, ok := answered[name]; {
		case !ok:
			t.Errorf("%s's REQUEST_SHM never answered, want SUCCESS", name)
		case st != model.StatusSuccess:
			t.Errorf("%s's REQUEST_SHM answered %s, want SUCCESS", name, st)
		}
	}
	if evicted != 2 {
		t.Errorf("Stats().Evicted %d, want 2 (one idler closed for each reader)", evicted)
	}
}
