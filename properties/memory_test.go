package properties

import (
	"testing"

	"xceiver/model"
)

// The bounded-memory check after each event looks only at connections
// whose buffers changed and keeps a running total; with MemoryScan 1 it
// also scans every connection after every event and fails on any
// difference. Over these seeds (hostile peers, floods, writes, faults) the
// two agree at every event, and the check's verdict and trace are those
// of the default, which scans now and then.
func TestMemoryAccountingMatchesScan(t *testing.T) {
	n := uint64(60)
	if testing.Short() {
		n = 15
	}
	for s := uint64(1); s <= n; s++ {
		c, err := Draw(SeedSource(s), s, "")
		if err != nil {
			t.Fatal(err)
		}
		every := Run(c, Options{MemoryScan: 1})
		if every.Failure != nil {
			t.Fatalf("seed %d: %v", s, every.Failure)
		}
		if def := Run(c, Options{}); def.TraceHash != every.TraceHash {
			t.Fatalf("seed %d: trace %s with a scan after every event, %s without", s, every.TraceHash, def.TraceHash)
		}
	}
	// The bugs bounded-memory was built for fail the same way with a scan
	// after every event as without.
	for _, bug := range []string{"write-prealloc", "closed-conns-reachable"} {
		for s := uint64(1); s <= 5; s++ {
			c, err := Draw(SeedSource(s), s, bug)
			if err != nil {
				t.Fatal(err)
			}
			every, def := Run(c, Options{MemoryScan: 1}), Run(c, Options{})
			if def.Failure == nil || def.Failure.Property != PropMemory {
				t.Fatalf("%s seed %d: %v, want a %s failure", bug, s, def.Failure, PropMemory)
			}
			if every.Failure == nil || *every.Failure != *def.Failure || every.TraceHash != def.TraceHash {
				t.Fatalf("%s seed %d: %v (trace %s) with a scan after every event, %v (%s) without", bug, s, every.Failure, every.TraceHash, def.Failure, def.TraceHash)
			}
		}
	}
}

// Each per-connection bound of bounded-memory, judged on one connection:
// the reservation rule holds only for open connections (a closed one has
// given its reservation back and must hold no buffers at all).
func TestMemCheckJudgesAConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    model.ConnMemory
		why  string
	}{
		{"reserved as held", model.ConnMemory{Buffered: 8192, WriteData: 4096, Reserved: 4096, Received: 4096}, ""},
		{"idle", model.ConnMemory{Buffered: 4096}, ""},
		{"reserved more than held", model.ConnMemory{Buffered: 8192, WriteData: 4096, Reserved: 12288, Received: 4096}, "reserved"},
		{"held unreserved", model.ConnMemory{Buffered: 8192, WriteData: 4096, Received: 4096}, "reserved"},
		{"closed, reserved", model.ConnMemory{Closed: true, Reserved: 4096}, ""},
		{"closed, holding", model.ConnMemory{Closed: true, Buffered: 10}, "closed"},
		{"fixed buffers over", model.ConnMemory{Buffered: connFixed + 1}, "fixed"},
		{"unreceived", model.ConnMemory{Buffered: 2*writeSlack + 8, WriteData: 2*writeSlack + 8, Reserved: 2*writeSlack + 8}, "unreceived"},
	} {
		var c memCheck
		c.visit(tc.m)
		if c.why != tc.why {
			t.Errorf("%s: judged %q, want %q", tc.name, c.why, tc.why)
		}
	}
}
