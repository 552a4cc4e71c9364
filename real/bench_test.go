package real

import (
	"testing"
	"time"

	"xceiver/model"
)

// BenchmarkReadServers is HDFS-918's comparison on real loopback: 128
// concurrent clients doing 64 KiB random reads from the page cache, served
// by the reactor (one selector, a worker pool, pooled block files) and by
// a thread per connection. It reports throughput and the server's peak fds.
//
//	go test ./real -run XXX -bench ReadServers -benchtime 3x
func BenchmarkReadServers(b *testing.B) {
	for _, v := range []struct {
		name   string
		mode   model.ServerMode
		inline bool
	}{{"reactor", model.Reactor, false}, {"reactor-inline-io", model.Reactor, true}, {"threaded", model.Threaded, false}} {
		b.Run(v.name, func(b *testing.B) {
			var mbps, fds, p50 float64
			for i := 0; i < b.N; i++ {
				w, err := New(Config{Seed: uint64(i + 1)})
				if err != nil {
					b.Fatal(err)
				}
				s := model.DefaultReadScenario()
				s.Clients, s.Ops, s.ReadSize, s.StartTogether = 128, 40, 64<<10, true
				s.Server.Mode, s.Server.InlineIO = v.mode, v.inline
				s.Server.Keepalive, s.Server.PoolIdle = 200*time.Millisecond, 100*time.Millisecond
				s.Client.CacheExpiry = 100 * time.Millisecond
				res, err := model.RunRead(w, s, 2*time.Minute)
				if cerr := w.Close(); cerr != nil && err == nil {
					err = cerr
				}
				if err != nil {
					b.Fatal(err)
				}
				if res.Errors > 0 || res.Mismatches > 0 {
					b.Fatalf("%d errors, %d mismatches (first: %s)", res.Errors, res.Mismatches, res.FirstError)
				}
				mbps += res.ThroughputMBps()
				fds = max(fds, float64(res.ServerPeakFDs))
				p50 += float64(res.Latencies.Summarize().P50.Microseconds())
			}
			b.ReportMetric(mbps/float64(b.N), "MB/s")
			b.ReportMetric(fds, "peak-fds")
			b.ReportMetric(p50/float64(b.N), "p50-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}
