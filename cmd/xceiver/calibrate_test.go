package main

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"xceiver/sim"
)

// calibrate's profile must load as one (every cost finite, in range,
// the percentiles in order), with the machine's share and the loopback
// costs measured.
func TestCalibrateWritesAProfileTheSimLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the machine for about two seconds")
	}
	p, err := calibrate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.ParseProfile(b); err != nil {
		t.Fatalf("calibrate's profile does not load: %v\n%s", err, b)
	}
	if p.LoopbackSendPerKBNs <= 0 || p.LoopbackRecvPerKBNs <= 0 || p.WakeupCPUNs <= 0 {
		t.Errorf("loopback %v+%v ns/KiB, wake-up %v ns of CPU: want each measured", p.LoopbackSendPerKBNs, p.LoopbackRecvPerKBNs, p.WakeupCPUNs)
	}
	// A hop over TCP is an eventfd hop's wake-up and more; sysmon's
	// tick is 20 µs, and a processor is taken back after one at least.
	if p.PollerWakeP50Ns <= 0 || p.PollerMissedNs <= 0 {
		t.Errorf("poller wake-up p50 %v ns, missed %v ns: want both measured", p.PollerWakeP50Ns, p.PollerMissedNs)
	}
	if p.TCPHopCPUNs <= 0 || p.LoopCallbackNs <= 0 || p.SyscallHoldP10Ns < 20e3 || p.SyscallHoldP90Ns > 1e9 {
		t.Errorf("tcp hop %v ns of CPU, syscall hold %v to %v ns", p.TCPHopCPUNs, p.SyscallHoldP10Ns, p.SyscallHoldP90Ns)
	}
	// A spinning thread per core cannot get more than the cores, and
	// gets some of them however loaded the machine is.
	if n := float64(runtime.NumCPU()); p.AvailableCores <= 0 || p.AvailableCores > n*1.1 || p.SliceOnNs <= 0 || p.SliceOffNs < 0 {
		t.Errorf("%.2f of %v cores available, slices %v ns, gaps %v ns", p.AvailableCores, n, p.SliceOnNs, p.SliceOffNs)
	}
}

// The loop wake-up probe times every hop of its exchange, idle or with
// the sender busy after each write. What the sim's poller model rests on
// is checked too: a real-world loop woken by a write mostly runs only
// once the writer's callback has ended (Go's poller has no thread
// waiting in it while the writer runs).
func TestLoopWakesProbe(t *testing.T) {
	const busy = 50 * time.Microsecond
	for _, b := range []time.Duration{0, busy} {
		lat, cpu, err := loopWakes(200, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(lat) < 190 || cpu <= 0 {
			t.Fatalf("busy %v: %d hops timed, %v ns of CPU per hop", b, len(lat), cpu)
		}
		t.Logf("busy %v: wake p10 %.0f p50 %.0f p90 %.0f ns, cpu/hop %.0f ns", b, pct(lat, 10, 0), pct(lat, 50, 0), pct(lat, 90, 0), cpu)
		if b > 0 && pct(lat, 50, 0) < float64(b.Nanoseconds())/2 {
			t.Errorf("with the writer busy %v after each write, the median wake-up took %.0f ns: the reader ran during the writer's callback", b, pct(lat, 50, 0))
		}
	}
}
