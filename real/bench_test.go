package real

import (
	"syscall"
	"testing"
	"time"

	"xceiver/model"
)

// BenchmarkReadServers is HDFS-918's comparison on real loopback: 128
// concurrent clients doing 64 KiB random reads from the page cache, served
// by the reactor (one selector, a worker pool, pooled block files), by the
// reactor with inline I/O, by a thread per connection, and by the
// reference every one of them is measured against: GoServer, what plain Go
// does (a goroutine per net.Conn, ReadAt from shared files), without and
// with the CRC32C check. The same clients drive all of them. It reports
// throughput, the server's peak fds and the CPU the whole process spent
// per MB moved (clients included, the same for every server).
//
//	go test ./real -run XXX -bench ReadServers -benchtime 3x
func BenchmarkReadServers(b *testing.B) {
	for _, v := range ReadServerVariants() {
		b.Run(v.Name, func(b *testing.B) {
			var mbps, fds, p50, cpuPerMB float64
			for i := 0; i < b.N; i++ {
				w, err := New(Config{Seed: uint64(i + 1)})
				if err != nil {
					b.Fatal(err)
				}
				s := model.DefaultReadScenario()
				s.Clients, s.Ops, s.ReadSize, s.StartTogether = 128, 40, 64<<10, true
				s.Server.Keepalive, s.Server.PoolIdle = 200*time.Millisecond, 100*time.Millisecond
				s.Client.CacheExpiry = 100 * time.Millisecond
				v.Apply(&s)
				cpu0 := cpuTime()
				res, err := model.RunRead(w, s, 2*time.Minute)
				cpu := cpuTime() - cpu0
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
				cpuPerMB += cpu.Seconds() * 1e3 / (float64(res.BytesRead) / 1e6)
			}
			b.ReportMetric(mbps/float64(b.N), "MB/s")
			b.ReportMetric(fds, "peak-fds")
			b.ReportMetric(p50/float64(b.N), "p50-µs")
			b.ReportMetric(cpuPerMB/float64(b.N), "cpu-ms/MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpuTime is the CPU this process has used, every thread, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
