package properties

import (
	"fmt"
	"testing"
)

// A scan of the hostile peers looks only at those whose connection
// changed since the last one (sim.WatchPeerEnd, a quit) until one
// may pass its bound; with scanAllHostile every scan looks at all of them,
// as scans once did. Over seeds with hostile peers (floods among them)
// the two give the same trace and verdict, and bugs that scans catch
// (a connection held past its peer's bound) fail the same way.
func TestHostileScanOfChangedPeersMatchesFullScan(t *testing.T) {
	want, floods := 24, 3
	if testing.Short() {
		want, floods = 8, 1
	}
	var visitsAll, visits int
	same := func(name string, c Case) *Result {
		t.Helper()
		all := Run(c, Options{scanAllHostile: true, hostileVisits: &visitsAll})
		def := Run(c, Options{hostileVisits: &visits})
		switch {
		case (all.Failure == nil) != (def.Failure == nil) || all.Failure != nil && *all.Failure != *def.Failure:
			t.Fatalf("%s: %v scanning every peer, %v scanning changed ones", name, all.Failure, def.Failure)
		case all.TraceHash != def.TraceHash || all.Events != def.Events:
			t.Fatalf("%s: trace %s (%d events) scanning every peer, %s (%d) scanning changed ones", name, all.TraceHash, all.Events, def.TraceHash, def.Events)
		}
		return def
	}
	ran, flooded := 0, 0
	for s := uint64(1); ran < want || flooded < floods; s++ {
		c, err := Draw(SeedSource(s), s, "")
		if err != nil {
			t.Fatal(err)
		}
		flood := false
		for _, p := range c.Config.Hostile {
			flood = flood || p.flood()
		}
		if len(c.Config.Hostile) == 0 || ran >= want && !flood {
			continue
		}
		if r := same(fmt.Sprint("seed ", s), c); r.Failure != nil {
			t.Fatalf("seed %d: %v", s, r.Failure)
		}
		ran++
		if flood {
			flooded++
		}
	}
	// The shortcut is the point: over these seeds the scans look at
	// peers some fifteen times less often than a look at every one
	// (3,233 against 50,157 when written). A scan that falls back to
	// every peer more than it must gives the same verdicts and traces,
	// so only this count tells.
	t.Logf("peers looked at: %d scanning changed ones, %d scanning every one", visits, visitsAll)
	if visits*10 > visitsAll {
		t.Fatalf("the scans looked at %d peers, more than a tenth of the %d a look at every one takes", visits, visitsAll)
	}
	caught := 0
	for _, bug := range []string{"no-send-timeout", "slowloris", "write-waiter-deaf"} {
		for s := uint64(1); s <= 4; s++ {
			c, err := Draw(SeedSource(s), s, bug)
			if err != nil {
				t.Fatal(err)
			}
			if r := same(fmt.Sprint(bug, " seed ", s), c); r.Failure != nil && r.Failure.Property == PropTimeout {
				caught++
			}
		}
	}
	t.Logf("%d bug runs failed %s", caught, PropTimeout)
	if caught == 0 {
		t.Fatalf("no bug failed %s in these seeds: the comparison tested no failure the scan finds", PropTimeout)
	}
}

// The floods the draw makes, of idle peers or of drippers, range from
// half the datanode's capacity to a quarter past it, whichever bounds it
// (the fd table, halved for a thread's epoll fd beside each socket, or
// MaxConns), so that its cap must close idlers for the clients to get in.
func TestFloodsGoPastTheDatanodesCapacity(t *testing.T) {
	past := map[string]int{}
	for seed := uint64(1); seed <= 3000; seed++ {
		c, err := Draw(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		capacity := c.Config.FDLimit
		if c.Config.Mode == "threaded" {
			capacity /= 2
		}
		if m := c.Config.MaxConns; m > 0 && m < capacity {
			capacity = m
		}
		for _, p := range c.Config.Hostile {
			if !p.flood() || (p.Kind != HostileIdle && p.Kind != HostileDrip) {
				continue
			}
			if p.Count < capacity/2 || p.Count > capacity+capacity/4 {
				t.Fatalf("seed %d: a flood of %d %s peers, the datanode's capacity %d (fd limit %d, %s, max conns %d): want %d to %d",
					seed, p.Count, p.Kind, capacity, c.Config.FDLimit, c.Config.Mode, c.Config.MaxConns, capacity/2, capacity+capacity/4)
			}
			if p.Count > capacity {
				past[p.Kind]++
			}
		}
	}
	if past[HostileIdle] == 0 || past[HostileDrip] == 0 {
		t.Errorf("floods past the capacity in datanode seeds 1-3000: %d idle, %d drip; want some of each", past[HostileIdle], past[HostileDrip])
	}
	t.Logf("floods past the capacity: %v", past)
}
