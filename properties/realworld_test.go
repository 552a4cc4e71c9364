package properties

import (
	"testing"
)

// TestPropertiesHoldInTheRealWorld runs a few drawn cases, without
// faults, on real sockets and files. Not parallel: the world's leak check
// compares the whole OS process's fds and goroutines with its baseline.
func TestPropertiesHoldInTheRealWorld(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, seed := range seeds {
		c, err := Draw(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		c = ForReal(c, DefaultRealLimits)
		res, err := RunReal(c, t.TempDir())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res.Failure != nil {
			t.Errorf("seed %d (%s, %d clients): %s", seed, c.Config.Mode, c.Config.Clients, res.Failure)
		}
		t.Logf("seed %d: %s, %d clients × %d workers, %d ops, linearizable: %v", seed, c.Config.Mode, c.Config.Clients, c.Config.ClientWorkers, res.Ops, res.Lin)
	}
}

// A bug the simulator catches is caught on real sockets too.
func TestRealWorldCatchesStaleHandles(t *testing.T) {
	found := false
	for seed := uint64(1); seed <= 40 && !found; seed++ {
		c, err := Draw(SeedSource(seed), seed, "stale-handle")
		if err != nil {
			t.Fatal(err)
		}
		res, err := RunReal(ForReal(c, DefaultRealLimits), t.TempDir())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if res.Failure != nil {
			found = true
			t.Logf("seed %d: %s", seed, res.Failure)
		}
	}
	if !found {
		t.Error("no stale read found in 40 real runs with the stale-handle bug on")
	}
}
