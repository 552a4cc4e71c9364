package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// BenchmarkSimEvents measures the kernel's speed on a busy scenario:
// request/response over one keep-alive connection with NODELAY, one write
// per request and 32 KiB replies, 20000 ops per iteration. It reports
// simulated events and ops per second of wall time.
func BenchmarkSimEvents(b *testing.B) {
	cfg := model.TCPPattern{Writes: 1, Msg: 64, Reply: 32 << 10, Ops: 20000, NoDelay: true}
	var events, ops uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := New(DefaultConfig(uint64(i) + 1))
		res, err := model.RunTCPPattern(w, cfg, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		events += w.Events()
		ops += uint64(len(res.Latencies))
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(ops)/sec, "sim-ops/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
