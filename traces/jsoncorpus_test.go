package traces

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"xceiver/properties"
)

// jsonCorpus is the corpus of a system whose traces are JSON (the case and
// what its run gave): one shrunk trace per catalogued bug, in dir.
type jsonCorpus struct {
	dir  string
	bugs [][2]string // name, the property that catches it ("": not checked)
	// record checks seed with bug on (shrinking the failure) and, if a
	// property failed, writes its trace to path and describes it; ok is
	// false when the seed passes or only the harness failed.
	record func(seed uint64, bug, path string) (desc string, ok bool, err error)
	// replay reads the trace at path and replays it, then runs its case
	// with the bug off; fixed is that run's failure ("" if it passes).
	replay func(path string) (bug, property string, replayErr error, fixed string, err error)
}

// testJSONCorpus replays each catalogued bug's trace: the same property
// fails with the same event hash; and the same case with the bug switched
// off passes, so the check caught the bug and nothing else. With -update
// each is recorded again: the first failing seed ≤ 200, shrunk.
func testJSONCorpus(t *testing.T, c jsonCorpus) {
	if *update {
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, b := range c.bugs {
			found := false
			for seed := uint64(1); seed <= 200 && !found; seed++ {
				desc, ok, err := c.record(seed, b[0], filepath.Join(c.dir, b[0]+".json"))
				if err != nil {
					t.Fatal(err)
				}
				if found = ok; ok {
					t.Logf("%s: seed %d, %s", b[0], seed, desc)
				}
			}
			if !found {
				t.Errorf("%s: no failure in 200 seeds", b[0])
			}
		}
	}
	for _, b := range c.bugs {
		bug, prop, replayErr, fixed, err := c.replay(filepath.Join(c.dir, b[0]+".json"))
		if err != nil {
			t.Errorf("%s: %v (go test ./traces -update records it)", b[0], err)
			continue
		}
		if bug != b[0] {
			t.Errorf("%s: the trace's case has bug %q", b[0], bug)
		}
		if b[1] != "" && prop != b[1] {
			t.Errorf("%s: the trace fails %q, the catalogue says %q", b[0], prop, b[1])
		}
		if replayErr != nil {
			t.Errorf("%s: %v (go test ./traces -update records it again)", b[0], replayErr)
		}
		if fixed != "" {
			t.Errorf("%s: the shrunk case fails without the bug too: %s", b[0], fixed)
		}
	}
}

func TestRPCCorpus(t *testing.T) {
	// The rpc catalogue's property is not held to its traces:
	// editlog-lost-waiter's is named availability, and its shrunk trace
	// fails leak-freedom (the unanswered calls' handlers are also held).
	var bugs [][2]string
	for _, b := range properties.RPCBugs {
		bugs = append(bugs, [2]string{b.Name, ""})
	}
	testJSONCorpus(t, jsonCorpus{
		dir:  "corpus/rpc",
		bugs: bugs,
		record: func(seed uint64, bug, path string) (string, bool, error) {
			c, r, err := properties.CheckRPCSeed(seed, bug, 300)
			if err != nil || r.Failure == nil || r.Failure.Unknown() {
				return "", false, err
			}
			tr, _ := properties.RecordRPC(c)
			return fmt.Sprintf("%d ops, %d faults: %s: %s", len(c.Ops)+len(c.Live), len(c.Faults), tr.Property, tr.Message),
				true, properties.WriteRPCTrace(path, tr)
		},
		replay: func(path string) (string, string, error, string, error) {
			tr, err := properties.ReadRPCTrace(path)
			if err != nil {
				return "", "", nil, "", err
			}
			_, replayErr := properties.ReplayRPC(tr)
			fixed := ""
			if r := properties.RunRPC(tr.Case.Fixed()); r.Failure != nil {
				fixed = fmt.Sprint(r.Failure)
			}
			return tr.Case.Bug, tr.Property, replayErr, fixed, nil
		},
	})
}

func TestSCCorpus(t *testing.T) {
	var bugs [][2]string
	for _, b := range properties.SCBugs {
		bugs = append(bugs, [2]string{b.Name, b.Catches})
	}
	testJSONCorpus(t, jsonCorpus{
		dir:  "corpus/sc",
		bugs: bugs,
		record: func(seed uint64, bug, path string) (string, bool, error) {
			c, r, err := properties.CheckSCSeed(seed, bug, 300)
			if err != nil || r.Property == "" || r.Property == properties.PropHarness {
				return "", false, err
			}
			tr, _ := properties.RecordSC(c)
			return fmt.Sprintf("%d ops: %s: %s", len(c.Ops), tr.Property, tr.Message), true, properties.WriteSCTrace(path, tr)
		},
		replay: func(path string) (string, string, error, string, error) {
			tr, err := properties.ReadSCTrace(path)
			if err != nil {
				return "", "", nil, "", err
			}
			_, replayErr := properties.ReplaySC(tr)
			fixed := tr.Case
			fixed.Bug = ""
			r := properties.RunSC(fixed)
			return tr.Case.Bug, tr.Property, replayErr, failureText(r.Property, r.Message), nil
		},
	})
}

func TestScenarioCorpus(t *testing.T) {
	var bugs [][2]string
	for _, b := range properties.ScenarioBugs {
		bugs = append(bugs, [2]string{b.Name, b.Catches})
	}
	testJSONCorpus(t, jsonCorpus{
		dir:  "corpus/scenario",
		bugs: bugs,
		record: func(seed uint64, bug, path string) (string, bool, error) {
			c, r, err := properties.CheckScenarioSeed(seed, bug, properties.ShrinkBudget)
			if err != nil || r.Property == "" || r.Property == properties.PropHarness {
				return "", false, err
			}
			tr, _ := properties.RecordScenario(c)
			return fmt.Sprintf("%s: %s", tr.Property, tr.Message), true, properties.WriteScenarioTrace(path, tr)
		},
		replay: func(path string) (string, string, error, string, error) {
			tr, err := properties.ReadScenarioTrace(path)
			if err != nil {
				return "", "", nil, "", err
			}
			_, replayErr := properties.ReplayScenario(tr)
			fixed := tr.Case
			fixed.Bug = ""
			r := properties.RunScenario(fixed)
			return tr.Case.Bug, tr.Property, replayErr, failureText(r.Property, r.Message), nil
		},
	})
}

// failureText is a run's failure as one line, "" when it passed.
func failureText(property, message string) string {
	if property == "" {
		return ""
	}
	return property + ": " + message
}
