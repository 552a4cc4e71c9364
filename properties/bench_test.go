package properties

import (
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCheckSeeds measures what `xceiver check` does per seed: draw,
// run in the simulator, check every property (and shrink on failure,
// which the correct code never needs). It reports seeds per second on one
// core; the parallel variant uses every core, as check does.
func BenchmarkCheckSeeds(b *testing.B) {
	seed := uint64(0)
	start := time.Now()
	for b.Loop() {
		seed++
		o, err := CheckSeed(seed, "", Options{}, false)
		if err != nil {
			b.Fatal(err)
		}
		if o.Failed() {
			b.Fatalf("seed %d: %v", seed, o.Result.Failure)
		}
	}
	b.ReportMetric(float64(seed)/time.Since(start).Seconds(), "seeds/s")
}

func BenchmarkCheckSeedsParallel(b *testing.B) {
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
