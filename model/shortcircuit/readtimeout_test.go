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
// minute unless configured), timed from its accept: not before (the
// accept comes after the dial, so not before the dial's instant plus
// the timeout), and not left open for good (within a millisecond).
func TestSilentDomainConnectionClosedAtTheReadTimeout(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{{0, time.Minute}, {2 * time.Second, 2 * time.Second}} {
		conns := make([]*scriptedConn, 1)
		domainWorld(t, sim.DefaultConfig(1), tc.want+time.Second, 0, shortcircuit.ServerConfig{ReadTimeout: tc.set}, nil,
			func(w *sim.World, _ model.Process, _ *model.Datanode, _ *shortcircuit.Server) {
				scriptConns(w, "silent", conns, []time.Duration{0}, nil)
			})
		c := conns[0]
		if c == nil {
			t.Fatalf("read timeout %v: the connection never connected", tc.set)
		}
		if c.closedAt < c.openedAt+tc.want || c.closedAt > c.openedAt+tc.want+time.Millisecond {
			t.Errorf("read timeout %v: a silent connection dialed at %v closed at %v (-1: open); want it closed %v after its accept", tc.set, c.openedAt, c.closedAt, tc.want)
		}
	}
}
