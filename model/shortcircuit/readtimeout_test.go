package shortcircuit_test

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// A domain connection that sends nothing is closed by the datanode once
// its read timeout passes (HDFS's dfs.datanode.socket.read.timeout, a
// minute unless configured): not before, and not left open for good.
func TestSilentDomainConnectionClosedAtTheReadTimeout(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{{0, time.Minute}, {2 * time.Second, 2 * time.Second}} {
		w := sim.New(sim.DefaultConfig(1))
		conns := make([]*scriptedConn, 1)
		var acceptedAt time.Duration = -1
		_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
			dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010"})
			if err != nil {
				w.Fail(err)
				return
			}
			srv, err := shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/dn_socket", ReadTimeout: tc.set})
			if err != nil {
				w.Fail(err)
				return
			}
			var poll func()
			poll = func() {
				if srv.Stats().Accepted == 1 {
					acceptedAt = p.MainLoop().Now()
					return
				}
				if p.MainLoop().Now() < 10*time.Millisecond {
					p.MainLoop().AfterFunc(time.Microsecond, poll)
				}
			}
			poll()
			scriptConns(w, "silent", conns, []time.Duration{0}, nil)
			p.MainLoop().AfterFunc(tc.want+time.Second, w.Stop)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Run(2 * tc.want); err != nil {
			t.Fatal(err)
		}
		c := conns[0]
		if c == nil || acceptedAt < 0 {
			t.Fatalf("read timeout %v: the connection was never accepted", tc.set)
		}
		if c.closedAt < acceptedAt+tc.want || c.closedAt > acceptedAt+tc.want+time.Millisecond {
			t.Errorf("read timeout %v: a silent connection accepted at %v closed at %v (-1: open); want it closed %v after its accept", tc.set, acceptedAt, c.closedAt, tc.want)
		}
	}
}
