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
// had. Each read, tcp-pattern, parallel-read and pairs seed also runs its case in
// four small worlds, none of which gets past its first events:
//
//   - invalid: one value out of range; the scenario returns Validate's
//     error and spawns nothing;
//   - name taken: a process already has the name of the scenario's first
//     process; the scenario returns the spawn error;
//   - address taken: another process listens where the scenario's server
//     listens in sim (its name, port 50010 for a datanode, 7000 for
//     tcp-pattern's server, 7100 for pairs'); the run fails with
//     ErrAddrInUse;
//   - stopped: the world is stopped at its first event, before any op
//     could finish; the scenario returns an error that says none did
//     ("0 of N"), and whose partial result reports 0 MB/s.

// setupRun is how to run the case's scenario in a given world.
type setupRun struct {
	first, addr string // the first process's name, its server's address
	// run runs the case within limit (invalid: with one value out of
	// range), and reports whether a result came back and the rate it
	// reports (MB/s; 0 for tcp-pattern, which reports none).
	run     func(w *sim.World, invalid bool, limit time.Duration) (got bool, rate float64, err error)
	stopped string // what a stopped run's error says
}

// setupLimit bounds the runs of the setup checks, which end at their
// first events or never start.
const setupLimit = time.Minute

func (r *scenarioRun) setupRun() (setupRun, bool) {
	switch r.c.Scenario {
	case ScenarioRead:
		return setupRun{first: "datanode", addr: "datanode:50010", stopped: "before every client finished",
			run: func(w *sim.World, invalid bool, limit time.Duration) (bool, float64, error) {
				s := r.c.readScenario()
				if invalid {
					s.Ops = 0
				}
				res, err := model.RunRead(w, s, limit)
				if res == nil {
					return false, 0, err
				}
				return true, res.ThroughputMBps(), err
			},
		}, true
	case ScenarioTCPPattern:
		return setupRun{first: "server", addr: "server:7000", stopped: fmt.Sprintf("0 of %d ops finished", r.c.Ops),
			run: func(w *sim.World, invalid bool, limit time.Duration) (bool, float64, error) {
				s := r.c.tcpPattern()
				if invalid {
					s.Writes = 0
				}
				res, err := model.RunTCPPattern(w, s, limit)
				return res != nil, 0, err
			},
		}, true
	case ScenarioParallelRead:
		return setupRun{first: "datanode-0", addr: "datanode-0:50010", stopped: fmt.Sprintf("0 of %d readers finished", r.c.Blocks*r.c.Clients),
			run: func(w *sim.World, invalid bool, limit time.Duration) (bool, float64, error) {
				s := r.c.parallelRead()
				// Readers and files have separate bounds: go past one of
				// them.
				switch {
				case invalid && r.c.Seed%2 == 0:
					s.Readers = 257
				case invalid:
					s.Files = 65
				}
				res, err := model.RunParallelRead(w, s, limit)
				if res == nil {
					return false, 0, err
				}
				return true, res.MBps(), err
			},
		}, true
	case ScenarioPairs:
		return setupRun{first: "server", addr: "server:7100", stopped: "the window never closed",
			run: func(w *sim.World, invalid bool, limit time.Duration) (bool, float64, error) {
				s := r.c.pairsScenario()
				if invalid {
					s.Pairs = 0
				}
				res, err := model.RunPairs(w, s, limit)
				if res == nil {
					return false, 0, err
				}
				return true, res.Rate, err
			},
		}, true
	}
	return setupRun{}, false
}

// checkSetup runs the four worlds of a setup that goes wrong.
func (r *scenarioRun) checkSetup() {
	if r.prop != "" {
		return
	}
	if sr, ok := r.setupRun(); ok {
		r.checkSetupOf(sr)
	}
}

// checkSetupOf is checkSetup for the scenario's run sr: an invalid
// configuration refused before any process is spawned, a first process
// that cannot be spawned and a taken address reported as errors, and a
// run stopped at its first event reporting nothing done.
func (r *scenarioRun) checkSetupOf(sr setupRun) {
	name := r.c.Scenario
	newWorld := func() *sim.World { return sim.New(worldConfig(r.c.Seed, 0, unhashed)) }

	w := newWorld()
	got, _, err := sr.run(w, true, setupLimit)
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
	if got, _, err := sr.run(w, false, setupLimit); err == nil || got {
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
	if _, _, err := sr.run(w, false, setupLimit); !errors.Is(err, model.ErrAddrInUse) {
		r.fail(PropReport, "%s whose address %s is taken returned %v, want an error wrapping %q", name, sr.addr, err, model.ErrAddrInUse)
		return
	}

	w = newWorld()
	w.At(0, w.Stop)
	_, rate, err := sr.run(w, false, setupLimit)
	switch {
	case rate != 0:
		// What was done so far is nothing in no time: 0, never NaN
		// (which `run --json` could not even print).
		r.fail(PropReport, "%s stopped at its first event reports %v MB/s", name, rate)
	case err == nil || errors.Is(err, sim.ErrLimit):
		r.fail(PropReport, "%s stopped at its first event returned %v, want an error saying it did not finish", name, err)
	case !strings.Contains(err.Error(), sr.stopped):
		r.fail(PropReport, "%s stopped at its first event: %q does not say %q", name, err, sr.stopped)
	}
}
