package main

import (
	"encoding/json"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

// calibrate's profile must load as one (every cost finite, in range,
// the percentiles in order), with the machine's share and the loopback
// costs measured.
func TestCalibrateWritesAProfileTheSimLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the machine for about seven seconds")
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
	// Missed is 0 on an idle machine: a thread on the idle core waits
	// in the poller and the reader never waits out the busy writer.
	if p.PollerWakeP50Ns <= 0 || p.PollerMissedNs < 0 {
		t.Errorf("poller wake-up p50 %v ns, missed %v ns: want the wake-up measured and missed not negative", p.PollerWakeP50Ns, p.PollerMissedNs)
	}
	if p.TCPHopCPUNs <= 0 || p.LoopCallbackNs <= 0 || p.SyscallHoldP10Ns < 20e3 || p.SyscallHoldP90Ns > 1e9 {
		t.Errorf("tcp hop %v ns of CPU, syscall hold %v to %v ns", p.TCPHopCPUNs, p.SyscallHoldP10Ns, p.SyscallHoldP90Ns)
	}
	// A spawn starts a loop and makes a directory besides; comparing
	// bytes costs something. (The accounting may measure 0 on a noisy
	// machine: it is a difference.)
	if p.ComparePerKBNs <= 0 || p.LoopStartNs <= 0 || p.SpawnNs <= p.LoopStartNs || p.AccountCPUNs < 0 {
		t.Errorf("compare %v ns/KiB, spawn %v ns, loop start %v ns, accounting %v ns", p.ComparePerKBNs, p.SpawnNs, p.LoopStartNs, p.AccountCPUNs)
	}
	// A large buffer allocated and dropped costs something.
	if p.AllocPerKBNs <= 0 {
		t.Errorf("allocation %v ns/KiB, want a cost", p.AllocPerKBNs)
	}
	// Goroutine pairs handing 32 KiB back and forth get some of the
	// cores, no more than there are, and their threads wait in a run
	// queue now and then (Linux keeps schedstat for every thread).
	noSchedstat := strings.Contains(p.Note, "no schedstat")
	if n := float64(runtime.NumCPU()); !noSchedstat && (p.StackWaitNs <= 0 || p.StackCores <= 0 || p.StackCores > n*1.1) {
		t.Errorf("stack probe: %v ns waited per run slice on %.2f of %v cores", p.StackWaitNs, p.StackCores, n)
	}
	// The connect probe's differences are finite and not negative (a
	// difference can be 0 where the sim already charges as much).
	if p.TCPDialNs < 0 || p.TCPAcceptNs < 0 || p.TCPDialNs+p.TCPAcceptNs > 1e6 {
		t.Errorf("connect probe: dial %v ns, accept %v ns beyond the sim's charges", p.TCPDialNs, p.TCPAcceptNs)
	}
	// The pairs probe's differences are finite and not negative (with
	// 8 pairs the work can cost no more than with one).
	if p.Callback8ConnsNs < 0 || p.Callback32ConnsNs < 0 || p.Callback128ConnsNs < 0 || p.Callback128ConnsNs > 1e6 {
		t.Errorf("pairs probe: a callback %v, %v and %v ns more with 8, 32 and 128 connections", p.Callback8ConnsNs, p.Callback32ConnsNs, p.Callback128ConnsNs)
	}
	// A spinning thread per core cannot get more than the cores, and
	// gets some of them however loaded the machine is.
	if n := float64(runtime.NumCPU()); p.AvailableCores <= 0 || p.AvailableCores > n*1.1 || p.SliceOnNs <= 0 || p.SliceOffNs < 0 {
		t.Errorf("%.2f of %v cores available, slices %v ns, gaps %v ns", p.AvailableCores, n, p.SliceOnNs, p.SliceOffNs)
	}
}

// The loop wake-up probe times every hop of its exchange, idle or with
// the sender busy after each write. Whether the reader runs during the
// writer's callback depends on the machine's load, not on Go: with a
// core idle, a thread waits in the poller and wakes the reader within a
// few microseconds (the sim's rule for an idle core); with every core
// taken, the reader waits for the writer's thread to park. So the probe
// is checked for what it measures, not for one machine's answer.
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
		p10, p50, p90 := pct(lat, 10, 0), pct(lat, 50, 0), pct(lat, 90, 0)
		t.Logf("busy %v: wake p10 %.0f p50 %.0f p90 %.0f ns, cpu/hop %.0f ns", b, p10, p50, p90, cpu)
		if p10 < 0 || p50 <= 0 || p10 > p50 || p50 > p90 {
			t.Errorf("busy %v: wake-up percentiles %.0f, %.0f, %.0f ns: want measured and in order", b, p10, p50, p90)
		}
	}
}

// run read's real runs account each callback's CPU, which costs the real
// world CPU: its simulated runs charge the profile's measured cost for
// it, and runs whose real counterpart does not account (bench's, which
// measure the whole process) do not.
func TestSimulatedReadChargesTheAccounting(t *testing.T) {
	dir := t.TempDir()
	cpu := func(account float64, whole bool) float64 {
		p := sim.DefaultProfile()
		p.AccountCPUNs = account
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		path := dir + "/p.json"
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s := model.DefaultReadScenario()
		s.Ops = 20
		res, err := runScenario("read", readRunner{s}, runOptions{world: "sim", seed: 1, profile: path, wholeProcessCPU: whole})
		if err != nil {
			t.Fatal(err)
		}
		return num(res, "cpu_us_per_op")
	}
	base := cpu(0, false)
	// Several callbacks per op (the client's request and response, the
	// datanode's selector and worker), 5 µs each.
	if d := cpu(5000, false) - base; d < 2*5 || d > 20*5 {
		t.Errorf("accounting at 5 µs a callback added %.1f µs an op, want a few callbacks' worth", d)
	}
	if d := cpu(5000, true) - cpu(0, true); d != 0 {
		t.Errorf("a run measured as a whole process charged %.1f µs an op for accounting, want none", d)
	}
}

// The connect probe makes its connections in either world, and each end
// spends CPU on every one: in sim exactly TCPDial and TCPAccept more per
// connection when they are set.
func TestConnectProbeCountsEachEnd(t *testing.T) {
	probe := func(dial, accept time.Duration) (d, a float64) {
		cfg := sim.DefaultConfig(1)
		cfg.CPU.TCPDial, cfg.CPU.TCPAccept = dial, accept
		d, a, err := connectProbe(sim.New(cfg))
		if err != nil {
			t.Fatal(err)
		}
		return d, a
	}
	d0, a0 := probe(0, 0)
	d, a := probe(10*time.Microsecond, 4*time.Microsecond)
	if d0 <= 0 || a0 <= 0 || math.Abs(d-d0-10e3) > 1 || math.Abs(a-a0-4e3) > 1 {
		t.Errorf("per connection: dialer %v → %v ns, acceptor %v → %v ns; want both positive and 10 µs and 4 µs more", d0, d, a0, a)
	}
}

// calibrate --rounds keeps each measured figure's median over the rounds
// (the mean of the middle two of an even count), and says so in the note.
func TestMedianProfileTakesEachFiguresMedian(t *testing.T) {
	ps := []sim.Profile{
		{Version: 1, Machine: "m", Cores: 2, Note: "measured by xceiver calibrate at T1", ReadNs: 300, WriteNs: 5, StackWaitNs: 9e5},
		{Version: 1, Machine: "other", Cores: 2, Note: "measured by xceiver calibrate at T2", ReadNs: 100, WriteNs: 7, StackWaitNs: 1e5},
		{Version: 1, Machine: "other", Cores: 2, Note: "measured by xceiver calibrate at T3", ReadNs: 200, WriteNs: 6, StackWaitNs: 5e5},
	}
	got := medianProfile(ps)
	if got.ReadNs != 200 || got.WriteNs != 6 || got.StackWaitNs != 5e5 {
		t.Errorf("medians: read %v, write %v, stack wait %v; want 200, 6, 5e5", got.ReadNs, got.WriteNs, got.StackWaitNs)
	}
	if got.Machine != "m" || got.Version != 1 || got.Cores != 2 {
		t.Errorf("machine %q version %d cores %d: want the first round's", got.Machine, got.Version, got.Cores)
	}
	if !strings.HasPrefix(got.Note, "measured by xceiver calibrate, each figure the median of 3 rounds") || !strings.Contains(got.Note, "T1") || !strings.Contains(got.Note, "T3") {
		t.Errorf("note %q: want the rounds it summarises", got.Note)
	}
	if ps[0].ReadNs != 300 {
		t.Error("medianProfile changed its input")
	}
	if even := medianProfile(ps[:2]); even.ReadNs != 200 || even.WriteNs != 6 {
		t.Errorf("two rounds: read %v, write %v, want the means of the two (200, 6)", even.ReadNs, even.WriteNs)
	}
}

// calibrate --rounds takes 1 to 20.
func TestCalibrateRoundsFlag(t *testing.T) {
	for _, bad := range []string{"0", "-1", "21"} {
		var out, errb strings.Builder
		if code := run([]string{"calibrate", "--rounds", bad}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "--rounds "+bad+": want 1 to 20") {
			t.Errorf("--rounds %s: exit %d, stderr %q", bad, code, errb.String())
		}
	}
}

// calibrate refuses to run with the real world's loops made late on
// purpose: the profile it writes would carry the sleeps as this
// machine's costs.
func TestCalibrateRefusesLateLoops(t *testing.T) {
	t.Setenv(real.LateEnv, "5ms")
	var out, errb strings.Builder
	if code := run([]string{"calibrate"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), real.LateEnv+`="5ms"`) || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want a usage error naming the variable and no profile", code, out.String(), errb.String())
	}
}
