package shortcircuit

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// The cache cleaner stops when a pass leaves the cache empty and starts
// again on the next insert. An insert on another loop that lands while a
// pass is finishing (after the pass counted its shard, before it cleared
// its flag, its own loop busy meanwhile) finds the cleaner still running
// and does not start it, and the pass, having counted nothing, does not go
// on. The runs put a busy spell on the cleaner's loop and the insert at
// each point around the end of the pass that stops the cleaner.
func TestCleanerSurvivesInsertDuringPass(t *testing.T) {
	const expiry = 10 * time.Millisecond
	// The first pass (at one expiry) or the second stops the cleaner.
	for _, pass := range []time.Duration{expiry, 2 * expiry} {
		for busy := pass; busy < pass+30*time.Microsecond; busy += 200 * time.Nanosecond {
			for after := time.Duration(0); after < 20*time.Microsecond; after += time.Microsecond {
				if n := cleanerRun(t, expiry, busy, after); n != 0 {
					t.Fatalf("loop busy at %v, an insert on another loop %v later: %d replicas cached two expiries after their last use", busy, after, n)
				}
			}
		}
	}
}

// cleanerRun inserts replica 1 on the main loop (its cleaner runs there),
// makes that loop busy for a while at busy and inserts replica 2 on
// another loop after that; it returns how many replicas are cached two
// expiries after that insert.
func cleanerRun(t *testing.T, expiry, busy, after time.Duration) int {
	w := sim.New(sim.DefaultConfig(1))
	cached := -1
	if _, err := w.Spawn("client", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		sh, err := NewShared(p, SharedConfig{Cache: CacheConfig{Shards: 1, Capacity: 4, Expiry: expiry}})
		if err != nil {
			w.Fail(err)
			return
		}
		a := p.MainLoop()
		b, err := p.NewLoop("b")
		if err != nil {
			w.Fail(err)
			return
		}
		closes := 0
		insert := func(loop model.Loop, block uint64) {
			r := &Replica{Key: Key{block, 1}, Length: 4096, Data: &fakeFile{closed: &closes}, Meta: &fakeFile{closed: &closes}}
			sh.cache.Insert(loop, r, func() {
				sh.armCleaner(loop)
				sh.cache.Unref(loop, r, nil)
			})
		}
		insert(a, 1)
		a.AfterFunc(busy, func() { p.CPU(model.CPUCopy, 1<<20) })
		b.AfterFunc(busy+after, func() { insert(b, 2) })
		a.AfterFunc(busy+after+2*expiry+time.Millisecond, func() {
			sh.cache.Stats(a, func(_ CacheStats, n, _ int) {
				cached = n
				b.Close()
				w.Stop()
			})
		})
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	return cached
}

// The cleaner must outlive the reader loop whose insert started it (as
// HDFS's runs on its own thread): replicas inserted after that loop
// closed still expire.
func TestCleanerOutlivesItsLoop(t *testing.T) {
	const expiry = 10 * time.Millisecond
	w := sim.New(sim.DefaultConfig(1))
	cached := -1
	if _, err := w.Spawn("client", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		sh, err := NewShared(p, SharedConfig{Cache: CacheConfig{Shards: 1, Capacity: 4, Expiry: expiry}})
		if err != nil {
			w.Fail(err)
			return
		}
		a := p.MainLoop()
		b, err := p.NewLoop("reader")
		if err != nil {
			w.Fail(err)
			return
		}
		closes := 0
		insert := func(loop model.Loop, block uint64) {
			r := &Replica{Key: Key{block, 1}, Length: 4096, Data: &fakeFile{closed: &closes}, Meta: &fakeFile{closed: &closes}}
			sh.cache.Insert(loop, r, func() {
				sh.armCleaner(loop)
				sh.cache.Unref(loop, r, nil)
			})
		}
		b.Post(func() { insert(b, 1) })
		a.AfterFunc(time.Millisecond, func() {
			b.Close()
			insert(a, 2)
		})
		a.AfterFunc(time.Millisecond+2*expiry+time.Millisecond, func() {
			sh.cache.Stats(a, func(_ CacheStats, n, _ int) {
				cached = n
				w.Stop()
			})
		})
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if cached != 0 {
		t.Fatalf("%d replicas cached two expiries after their last use, the loop that started the cleaner closed", cached)
	}
}
