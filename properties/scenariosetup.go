package properties

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// Setup that goes wrong (property "report"): `run` must say why a
// scenario could not run or did not finish, never print figures as if it
// had. Each read, tcp-pattern and parallel-read seed also runs its case in
// four small worlds, none of which gets past its first events:
//
//   - invalid: one value out of range; the scenario returns Validate's
//     error and spawns nothing;
//   - name taken: a process already has the name of the scenario's first
//     process; the scenario returns the spawn error;
//   - address taken: another process listens where the scenario's server
//     listens in sim (its name, port 50010 for a datanode, 7000 for
//     tcp-pattern's server); the run fails with ErrAddrInUse;
//   - stopped: the world is stopped at its first event, before any op
//     could finish; the scenario returns an error that says none did
//     ("0 of N").

// setupRun is how to run the case's scenario in a given world.
type setupRun struct {
	first, addr string // the first process's name, its server's address
	invalid     func(w *sim.World) (bool, error)
	run         func(w *sim.World) (bool, error) // reports whether a result came back
	stopped     string                           // what a stopped run's error says ("" when it gives no count)
}

func (r *scenarioRun) setupRun() (setupRun, bool) {
	const limit = time.Minute
	switch r.c.Scenario {
	case ScenarioRead:
		s := r.c.readScenario()
		bad := s
		bad.Ops = 0
		return setupRun{first: "datanode", addr: "datanode:50010",
			invalid: func(w *sim.World) (bool, error) { res, err := model.RunRead(w, bad, limit); return res != nil, err },
			run:     func(w *sim.World) (bool, error) { res, err := model.RunRead(w, s, limit); return res != nil, err },
		}, true
	case ScenarioTCPPattern:
		s := r.c.tcpPattern()
		bad := s
		bad.Writes = 0
		return setupRun{first: "server", addr: "server:7000",
			invalid: func(w *sim.World) (bool, error) {
				res, err := model.RunTCPPattern(w, bad, limit)
				return res != nil, err
			},
			run:     func(w *sim.World) (bool, error) { res, err := model.RunTCPPattern(w, s, limit); return res != nil, err },
			stopped: fmt.Sprintf("0 of %d ops finished", s.Ops),
		}, true
	case ScenarioParallelRead:
		s := r.c.parallelRead()
		bad := s
		// Readers and files have separate bounds: go past one of them.
		if r.c.Seed%2 == 0 {
			bad.Readers = 257
		} else {
			bad.Files = 65
		}
		return setupRun{first: "datanode-0", addr: "datanode-0:50010",
			invalid: func(w *sim.World) (bool, error) {
				res, err := model.RunParallelRead(w, bad, limit)
				return res != nil, err
			},
			run: func(w *sim.World) (bool, error) {
				res, err := model.RunParallelRead(w, s, limit)
				return res != nil, err
			},
			stopped: fmt.Sprintf("0 of %d readers finished", s.Files*s.Readers),
		}, true
	}
	return setupRun{}, false
}

// checkSetup runs the four worlds of a setup that goes wrong.
func (r *scenarioRun) checkSetup() {
	if r.prop != "" {
		return
	}
	sr, ok := r.setupRun()
	if !ok {
		return
	}
	name := r.c.Scenario
	newWorld := func() *sim.World { return sim.New(sim.DefaultConfig(r.c.Seed)) }

	w := newWorld()
	got, err := sr.invalid(w)
	switch {
	case err == nil || got:
		r.fail(PropReport, "%s with an invalid configuration returned a result (%v), error %v", name, got, err)
		return
	case len(w.Processes()) != 0:
		r.fail(PropReport, "%s with an invalid configuration (%v) spawned %d processes", name, err, len(w.Processes()))
		return
	}

	w = newWorld()
	if _, err := w.Spawn(sr.first, model.ProcessConfig{}, func(model.Process) {}); err != nil {
		r.fail(PropHarness, "spawn %s: %v", sr.first, err)
		return
	}
	if got, err := sr.run(w); err == nil || got {
		r.fail(PropReport, "%s whose process %s could not be spawned returned a result (%v), error %v", name, sr.first, got, err)
		return
	}

	w = newWorld()
	if _, err := w.Spawn("squatter", model.ProcessConfig{}, func(p model.Process) {
		if _, err := p.Listen("tcp", sr.addr, 1, p.MainLoop()); err != nil {
			w.Fail(fmt.Errorf("squatter: %w", err))
		}
	}); err != nil {
		r.fail(PropHarness, "spawn squatter: %v", err)
		return
	}
	if _, err := sr.run(w); !errors.Is(err, model.ErrAddrInUse) {
		r.fail(PropReport, "%s whose address %s is taken returned %v, want an error wrapping %q", name, sr.addr, err, model.ErrAddrInUse)
		return
	}

	w = newWorld()
	w.At(0, w.Stop)
	_, err = sr.run(w)
	switch {
	case err == nil || errors.Is(err, sim.ErrLimit):
		r.fail(PropReport, "%s stopped at its first event returned %v, want an error saying it did not finish", name, err)
	case !strings.Contains(err.Error(), sr.stopped):
		r.fail(PropReport, "%s stopped at its first event: %q does not say %q", name, err, sr.stopped)
	}
}
