package shortcircuit_test

import (
	"testing"
	"time"

	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// shardedReads runs reads readers on cores of their own through a cache
// of shards shards, with wake-up costs (the embedded profile's) or none,
// and returns the virtual time the reads took.
func shardedReads(t *testing.T, shards int, wakeups bool) time.Duration {
	t.Helper()
	s := shortcircuit.DefaultReadScenario()
	s.Path, s.Readers, s.Cores, s.ReadSize = "sc", 32, 8, 64<<10
	s.Blocks, s.BlockSize = 20, 1<<20
	s.Ops = 4000 / s.Readers
	s.Cache.Shards = shards
	cfg := sim.DefaultConfig(1)
	cfg.HostCores = 0
	cfg.CPU = sim.DefaultProfile().CPU()
	// HDFS's readers are Java threads the kernel wakes, not loops parked
	// in Go's poller, on cores of their own: neither Go's poller nor
	// the cost of many goroutines sharing this machine's two cores
	// (CallbackByConns, from Go goroutine pairs) applies.
	cfg.CPU.Poller = false
	cfg.CPU.CallbackByConns = [3]time.Duration{}
	if !wakeups {
		cfg.CPU.Wakeup, cfg.CPU.WakeupSpread = 0, 0
	}
	res, err := shortcircuit.RunRead(sim.New(cfg), s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors > 0 || res.Mismatches > 0 || res.Ops != 4000 {
		t.Fatalf("%d ops, %d errors (%s), %d mismatches", res.Ops, res.Errors, res.FirstError, res.Mismatches)
	}
	return res.Elapsed
}

// HDFS-15202's mechanism: with many readers on many cores, one cache lock
// is always queued, and each hand-off waits for the next holder's thread
// to wake, so sharding the cache N ways divides the time by about N while
// the lock is the bound. Without wake-up costs the same runs are bound by
// the readers' CPU and sharding buys much less.
func TestShardingRelievesTheLockHandOff(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 16,000 simulated reads")
	}
	one, five := shardedReads(t, 1, true), shardedReads(t, 5, true)
	if r := float64(one) / float64(five); r < 3 {
		t.Errorf("with wake-ups: 1 shard %v, 5 shards %v: speed-up %.2f, want ≥ 3", one, five, r)
	}
	oneNW, fiveNW := shardedReads(t, 1, false), shardedReads(t, 5, false)
	if r := float64(oneNW) / float64(fiveNW); r > 2 {
		t.Errorf("without wake-ups: 1 shard %v, 5 shards %v: speed-up %.2f, want < 2 (CPU-bound)", oneNW, fiveNW, r)
	}
	t.Logf("with wake-ups %v → %v (%.2f×); without %v → %v (%.2f×)", one, five, float64(one)/float64(five), oneNW, fiveNW, float64(oneNW)/float64(fiveNW))
}
