package abuse

import (
	"fmt"
	"time"

	"xceiver/model"
)

// Regression is one of issue 9's defects as a scenario in any world: Run
// reports the defect's symptom, or nil. With bug set, the datanode runs
// with the defect switched back on (the test must then see the symptom).
type Regression struct {
	Name string // the catalogued bug (properties.Bugs)
	Run  func(w model.World, bug bool) error
}

// Regressions lists issue 9's defects, items 1 to 7.
var Regressions = []Regression{
	{"closed-conns-reachable", closedConnsReachable},
	{"write-prealloc", writePrealloc},
}

// checkAt runs s with one step after d and returns what check reported.
func checkAt(w model.World, s Scenario, d time.Duration, check func(dn *model.Datanode, peers *Peers) error) error {
	var symptom error
	s.After = []time.Duration{d}
	s.Then = func(_ int, dn *model.Datanode, peers *Peers) { symptom = check(dn, peers) }
	if err := Run(w, s, 30*time.Second); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return symptom
}

// Item 1: connections that announced writes and closed hold nothing.
func closedConnsReachable(w model.World, bug bool) error {
	s := Scenario{Attacks: []Attack{{Kind: AnnounceQuit, Count: 8, Length: 1 << 20}}}
	s.Datanode.Bugs.ClosedConnsReachable = bug
	return checkAt(w, s, 200*time.Millisecond, func(dn *model.Datanode, _ *Peers) error {
		if m := MemoryOf(dn); m.Closed > 0 || dn.Conns() > 0 {
			return fmt.Errorf("%d connections open, closed ones still hold %d bytes", dn.Conns(), m.Closed)
		}
		return nil
	})
}

// Item 2: a write's header reserves nothing; its buffer grows with data.
func writePrealloc(w model.World, bug bool) error {
	s := Scenario{Attacks: []Attack{{Kind: Announce, Count: 8, Length: 1 << 20}}}
	s.Datanode.Bugs.WritePrealloc = bug
	return checkAt(w, s, 200*time.Millisecond, func(dn *model.Datanode, _ *Peers) error {
		if m := MemoryOf(dn); m.WriteData > 0 || dn.Conns() != 8 {
			return fmt.Errorf("%d connections that announced 1 MiB writes and sent no data hold %d bytes of write buffers", dn.Conns(), m.WriteData)
		}
		return nil
	})
}
