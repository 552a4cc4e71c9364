package shortcircuit

import (
	"runtime"
	"testing"
	"time"

	"xceiver/sim"
)

// The readers' data is checked where it arrives; only the verdicts queue
// for the main loop. With 64 readers and barging locks the main loop
// falls behind, and when each queued verdict carried its read's 64 KiB
// the live heap grew with every read done (bench hdfs-15202: 1.3 GB live
// by a third of one run, 11 GB peak).
func TestReadScenarioHoldsNoReadsQueued(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap over a 64-reader run")
	}
	s := DefaultReadScenario()
	s.Path, s.Readers, s.Cores, s.ReadSize = "sc", 64, 16, 64<<10
	s.Blocks, s.BlockSize = 8, 1<<20
	s.Ops = 150
	cfg := sim.DefaultConfig(1)
	cfg.HostCores = 0
	cfg.CPU.Poller = false
	cfg.BargingLocks = true
	w := sim.New(cfg)
	var peak uint64
	var probe func()
	probe = func() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
		w.At(w.Now()+5*time.Millisecond, probe)
	}
	w.At(5*time.Millisecond, probe)
	res, err := RunRead(w, s, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors > 0 || res.Mismatches > 0 || res.Ops != s.Readers*s.Ops {
		t.Fatalf("%d ops, %d errors, %d mismatches", res.Ops, res.Errors, res.Mismatches)
	}
	// 8 MiB of blocks and the world; 9,600 reads of 64 KiB are 600 MiB.
	if peak > 64<<20 {
		t.Errorf("live heap peaked at %d MiB during the run: reads' data held after they were checked", peak>>20)
	}
	t.Logf("live heap peak %d MiB", peak>>20)
}
