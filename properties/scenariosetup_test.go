package properties

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// checkSetupOf holds a scenario's run to each of its four setups that go
// wrong: a fake run that behaves passes, and one that goes wrong in one
// way fails the report with what it did. (The fake tells the worlds apart
// by their processes and never runs them: that each world is set up as
// its name says, a squatter on the address, a stop at the first event, is
// the real scenarios' to show, in check's scenario seeds.)
func TestSetupCheckCatchesEachWrongSetup(t *testing.T) {
	const stopped = "the window never closed"
	// fake behaves, but for what wrong changes: it tells the worlds
	// apart by the processes the check spawned in them.
	fake := func(wrong string) setupRun {
		return setupRun{first: "server", addr: "server:7100", stopped: stopped,
			run: func(w *sim.World, invalid bool, _ time.Duration) (bool, float64, error) {
				has := func(name string) bool {
					for _, p := range w.Processes() {
						if p.Name() == name {
							return true
						}
					}
					return false
				}
				switch {
				case invalid:
					switch wrong {
					case "invalid: no error":
						return false, 0, nil
					case "invalid: a result":
						return true, 0, errors.New("pairs: 0 pairs")
					case "invalid: a process":
						_, _ = w.Spawn("server", model.ProcessConfig{}, func(model.Process) {})
					}
					return false, 0, errors.New("pairs: 0 pairs")
				case has("squatter"):
					if wrong == "taken: another error" {
						return false, 0, errors.New("listen: failed")
					}
					return false, 0, fmt.Errorf("listen server:7100: %w", model.ErrAddrInUse)
				case has("server"):
					switch wrong {
					case "first: no error":
						return false, 0, nil
					case "first: a result":
						return true, 0, errors.New("spawn server: exists")
					}
					return false, 0, errors.New("spawn server: exists")
				}
				switch wrong {
				case "stopped: a rate":
					return true, 1, errors.New(stopped)
				case "stopped: no error":
					return true, 0, nil
				case "stopped: another error":
					return true, 0, errors.New("it went wrong")
				case "stopped: the limit":
					return true, 0, fmt.Errorf("pairs: %w", sim.ErrLimit)
				}
				return true, 0, errors.New("pairs: " + stopped)
			}}
	}
	for _, e := range []struct{ wrong, says string }{
		{"", ""},
		{"invalid: no error", "with an invalid configuration returned a result"},
		{"invalid: a result", "with an invalid configuration returned a result"},
		{"invalid: a process", "spawned 1 processes"},
		{"first: no error", "could not be spawned returned a result"},
		{"first: a result", "could not be spawned returned a result"},
		{"taken: another error", "is taken returned"},
		{"stopped: a rate", "reports 1 MB/s"},
		{"stopped: no error", "want an error saying it did not finish"},
		{"stopped: another error", "does not say"},
		{"stopped: the limit", "want an error saying it did not finish"},
	} {
		c := &ScenarioCase{Scenario: ScenarioPairs, Seed: 1}
		r := &scenarioRun{c: c, w: sim.New(worldConfig(1, 0, unhashed))}
		r.checkSetupOf(fake(e.wrong))
		switch {
		case e.says == "" && r.prop != "":
			t.Errorf("a run that behaves: %s: %s", r.prop, r.msg)
		case e.says != "" && (r.prop != PropReport || !strings.Contains(r.msg, e.says)):
			t.Errorf("%s: %q (%s), want a %s failure saying %q", e.wrong, r.prop, r.msg, PropReport, e.says)
		}
	}
}

// checkLimitOf runs a case that passed again with a limit of 1 ns, and
// fails the report unless the run says it hit the limit; after a failure
// it runs nothing.
func TestLimitCheckRunsAfterAPassAndWantsTheLimit(t *testing.T) {
	for _, e := range []struct {
		name   string
		failed bool  // a property failed before the check
		err    error // what the run returns
		ran    bool
		says   string
	}{
		{"a pass, the limit's error", false, fmt.Errorf("pairs: %w", sim.ErrLimit), true, ""},
		{"a pass, no error", false, nil, true, "returned <nil>, want an error wrapping"},
		{"a pass, another error", false, errors.New("pairs: the window never closed"), true, "want an error wrapping"},
		{"a failure before", true, nil, false, ""},
	} {
		r := &scenarioRun{c: &ScenarioCase{Scenario: ScenarioPairs, Seed: 1}, w: sim.New(worldConfig(1, 0, unhashed))}
		if e.failed {
			r.prop, r.msg = PropLeakFree, "a failure before"
		}
		ran := false
		r.checkLimitOf(setupRun{run: func(w *sim.World, invalid bool, limit time.Duration) (bool, float64, error) {
			ran = true
			if invalid || limit != time.Nanosecond {
				t.Errorf("%s: run with invalid %v, limit %v; want a valid case within 1ns", e.name, invalid, limit)
			}
			return false, 0, e.err
		}})
		prop, msg := r.prop, r.msg
		if e.failed {
			prop, msg = "", ""
			if r.prop != PropLeakFree {
				t.Errorf("%s: the failure became %s: %s", e.name, r.prop, r.msg)
			}
		}
		switch {
		case ran != e.ran:
			t.Errorf("%s: ran %v, want %v", e.name, ran, e.ran)
		case e.says == "" && prop != "":
			t.Errorf("%s: %s: %s, want a pass", e.name, prop, msg)
		case e.says != "" && (prop != PropReport || !strings.Contains(msg, e.says)):
			t.Errorf("%s: %q (%s), want a %s failure saying %q", e.name, prop, msg, PropReport, e.says)
		}
	}
}
