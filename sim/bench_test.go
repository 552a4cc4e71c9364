package sim

import (
	"syscall"
	"testing"
	"time"

	"xceiver/model"
)

// BenchmarkSimEvents measures the kernel's speed on a busy scenario:
// request/response over one keep-alive connection with NODELAY, one write
// per request and 32 KiB replies, 20000 ops per iteration. It reports
// simulated events and ops per second of wall time, and events per CPU
// second.
func BenchmarkSimEvents(b *testing.B) {
	cfg := model.TCPPattern{Writes: 1, Msg: 64, Reply: 32 << 10, Ops: 20000, NoDelay: true}
	var events, ops uint64
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		w := New(DefaultConfig(uint64(i) + 1))
		res, err := model.RunTCPPattern(w, cfg, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		events += w.Events()
		ops += uint64(res.Latencies.Len())
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(ops)/sec, "sim-ops/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
	b.ReportMetric(float64(events)/(cpuTime()-cpu0).Seconds(), "events/cpu-s")
}

// cpuTime is the CPU this process has used (every thread, user and
// system): on a shared machine, per-CPU-second rates are steadier than
// per-wall-second ones.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
