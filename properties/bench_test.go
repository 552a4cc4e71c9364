package properties

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"xceiver/sim"
)

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

// BenchmarkCheckSeeds measures what `xceiver check` does per seed: draw,
// run in the simulator, check every property (and shrink on failure,
// which the correct code never needs). It reports seeds per second on one
// core (and per CPU second, steadier on a shared machine), and the events
// a seed simulates and those per CPU second: a speed that holds when the
// seed grows heavier or lighter. The parallel variant uses every core, as
// check does. Both set the collector as check does (TuneGC).
func BenchmarkCheckSeeds(b *testing.B) {
	defer TuneGC(1)()
	seed, events := uint64(0), uint64(0)
	start, cpu0 := time.Now(), cpuTime()
	for b.Loop() {
		seed++
		events += checkPassing(b, seed)
	}
	cpu := (cpuTime() - cpu0).Seconds()
	b.ReportMetric(float64(seed)/time.Since(start).Seconds(), "seeds/s")
	b.ReportMetric(float64(seed)/cpu, "seeds/cpu-s")
	b.ReportMetric(float64(events)/float64(seed), "sim-events/seed")
	b.ReportMetric(float64(events)/cpu, "sim-events/cpu-s")
}

// checkPassing checks seed as check does and stops the benchmark unless
// it passes; it returns the events its run simulated.
func checkPassing(b *testing.B, seed uint64) uint64 {
	o, err := CheckSeed(seed, "", Options{}, false)
	if err != nil {
		b.Fatal(err)
	}
	if o.Failed() {
		b.Fatalf("seed %d: %v", seed, o.Result.Failure)
	}
	return o.SimEvents
}

// seedKind sorts datanode seeds by what makes them heavy, so that a change
// aimed at one kind is measured on that kind (in the mix of BenchmarkCheckSeeds
// a gain on the 5% of seeds that are floods is lost in the noise): flood
// (an idle or drip flood, up to past the connection cap), peers (other
// hostile peers), pieces (messages in pieces, no peers) and plain
// (neither).
func seedKind(c *Case) string {
	kind := "plain"
	if c.Config.FragPiece > 0 {
		kind = "pieces"
	}
	for _, h := range c.Config.Hostile {
		if (h.Kind == HostileIdle || h.Kind == HostileDrip) && h.flood() {
			return "flood"
		}
		kind = "peers"
	}
	return kind
}

// BenchmarkCheckSeedsByKind is BenchmarkCheckSeeds for one kind of
// datanode seed at a time (seedKind), taking the kind's seeds in order
// from seed 1. Besides seeds and events per CPU second it reports the
// kind's share of the seeds drawn, so share × CPU per seed says where a
// check's time goes. Those rates count the checks' CPU alone, not the
// draws that pass over other kinds' seeds (ns/op includes them). Give it
// a count (-benchtime 300x): a second holds about a hundred flood seeds.
func BenchmarkCheckSeedsByKind(b *testing.B) {
	defer TuneGC(1)()
	// The first seeds of a process grow its heap and the sim's arenas:
	// checked untimed, so that the first kind measured does not pay for
	// them (one of two unwarmed runs read 415 plain seeds per CPU second,
	// against 581-742 in six warmed ones).
	for seed := uint64(1); seed <= 100; seed++ {
		checkPassing(b, seed)
	}
	for _, kind := range []string{"plain", "pieces", "peers", "flood"} {
		b.Run(kind, func(b *testing.B) {
			seed, drawn, checked, events := uint64(0), 0, 0, uint64(0)
			var cpu time.Duration
			for b.Loop() {
				for miss := 0; ; miss++ {
					if miss == 100_000 {
						b.Fatalf("no %s seed among seeds %d to %d: the draw no longer makes this kind", kind, seed-uint64(miss)+1, seed)
					}
					seed++
					drawn++
					c, err := Draw(SeedSource(seed), seed, "")
					if err != nil {
						b.Fatal(err)
					}
					if seedKind(&c) == kind {
						break
					}
				}
				cpu0 := cpuTime()
				events += checkPassing(b, seed)
				cpu += cpuTime() - cpu0
				checked++
			}
			b.ReportMetric(float64(checked)/cpu.Seconds(), "seeds/cpu-s")
			b.ReportMetric(float64(events)/float64(checked), "sim-events/seed")
			b.ReportMetric(float64(events)/cpu.Seconds(), "sim-events/cpu-s")
			b.ReportMetric(100*float64(checked)/float64(drawn), "share-%")
		})
	}
}

func BenchmarkCheckSeedsParallel(b *testing.B) {
	defer TuneGC(runtime.GOMAXPROCS(0))()
	var next, done atomic.Uint64
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			seed := next.Add(1)
			o, err := CheckSeed(seed, "", Options{}, false)
			if err != nil {
				b.Error(err)
				return
			}
			if o.Failed() {
				b.Errorf("seed %d: %v", seed, o.Result.Failure)
				return
			}
			done.Add(1)
		}
	})
	b.ReportMetric(float64(done.Load())/time.Since(start).Seconds(), "seeds/s")
}

// Checking seeds keeps nothing from one to the next: the live heap after
// 300 seeds is what it was after 100 (what passed is garbage; the process
// peak is set by the largest seed, not by how many ran). The arenas that
// carry buffers from one run to the next are bounded by design; they are
// checked against their bound and let go before the heap is measured.
func TestCheckMemoryFlatOverSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 300 seeds")
	}
	live := func() uint64 {
		for _, held := range dropArenas() {
			if held > sim.ArenaMaxBytes {
				t.Errorf("an arena holds %d bytes, bound %d", held, sim.ArenaMaxBytes)
			}
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var at100 uint64
	for seed := uint64(1); seed <= 300; seed++ {
		if _, err := CheckSeed(seed, "", Options{}, seed%50 == 0); err != nil {
			t.Fatal(err)
		}
		if seed == 100 {
			at100 = live()
		}
	}
	at300 := live()
	t.Logf("live heap after 100 seeds %d KB, after 300 %d KB", at100>>10, at300>>10)
	if at300 > at100+at100/10+64<<10 {
		t.Errorf("live heap grew from %d KB after 100 seeds to %d KB after 300", at100>>10, at300>>10)
	}
}
