package sim

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/abuse"
)

// Issue 9's defects stay fixed in the simulated world, and each test sees
// its defect when it is switched back on.
func TestAbuseRegressions(t *testing.T) {
	for _, r := range abuse.Regressions {
		t.Run(r.Name, func(t *testing.T) {
			if err := r.Run(New(DefaultConfig(1)), false); err != nil {
				t.Errorf("fixed: %v", err)
			}
			if err := r.Run(New(DefaultConfig(1)), true); err == nil {
				t.Errorf("with the defect switched on, the test saw nothing")
			}
		})
	}
}

// With the catalogued defect ResetWhenFull on, a walk that the evict
// timer starts (no newest connection to reset) and that finds every
// connection busy must end, not dereference the missing newest: drips
// arriving 1 ms apart fill a cap of 12 while the oldest is too young to
// ask, so the timer's walk is the one that runs out.
func TestResetWhenFullTimerWalkEnds(t *testing.T) {
	s := abuse.Scenario{Blocks: map[uint64]int{1: 1000},
		Attacks: []abuse.Attack{{Kind: abuse.Drip, Count: 14, Block: 1, Length: 1000, Every: time.Millisecond}}}
	s.FDLimit = 80 // a cap of 12 connections
	s.Datanode.PoolMax = 2
	s.Datanode.ReadTimeout = 10 * time.Second
	s.Datanode.RequestTimeout = 10 * time.Second
	s.Datanode.Bugs.ResetWhenFull = true
	s.After = []time.Duration{time.Second}
	s.Then = func(int, *model.Datanode, *abuse.Peers) {}
	if err := abuse.Run(New(DefaultConfig(1)), s, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}
