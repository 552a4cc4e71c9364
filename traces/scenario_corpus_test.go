package traces

import (
	"os"
	"path/filepath"
	"testing"

	"xceiver/properties"
)

// scenarioCorpus holds one shrunk trace per bug planted in scenario code
// (JSON: the case and what its run gave); -update records them again.
const scenarioCorpus = "corpus/scenario"

// TestScenarioCorpus replays each scenario bug's trace: the same property
// fails with the same event hash, and the case passes with the bug off.
// With -update each is recorded again: the first failing seed ≤ 200,
// shrunk.
func TestScenarioCorpus(t *testing.T) {
	if *update {
		if err := os.MkdirAll(scenarioCorpus, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, b := range properties.ScenarioBugs {
			found := false
			for seed := uint64(1); seed <= 200 && !found; seed++ {
				c, r, err := properties.CheckScenarioSeed(seed, b.Name, properties.ShrinkBudget)
				if err != nil {
					t.Fatal(err)
				}
				if r.Property == "" || r.Property == properties.PropHarness {
					continue
				}
				found = true
				tr, _ := properties.RecordScenario(c)
				if err := properties.WriteScenarioTrace(filepath.Join(scenarioCorpus, b.Name+".json"), tr); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: seed %d: %s: %s", b.Name, seed, tr.Property, tr.Message)
			}
			if !found {
				t.Errorf("%s: no failure in 200 seeds", b.Name)
			}
		}
	}
	for _, b := range properties.ScenarioBugs {
		tr, err := properties.ReadScenarioTrace(filepath.Join(scenarioCorpus, b.Name+".json"))
		if err != nil {
			t.Errorf("%s: %v (go test ./traces -update records it)", b.Name, err)
			continue
		}
		if tr.Case.Bug != b.Name || tr.Property != b.Catches {
			t.Errorf("%s: the trace's case has bug %q and fails %q; the catalogue says %q", b.Name, tr.Case.Bug, tr.Property, b.Catches)
		}
		if _, err := properties.ReplayScenario(tr); err != nil {
			t.Errorf("%s: %v (go test ./traces -update records it again)", b.Name, err)
		}
		fixed := tr.Case
		fixed.Bug = ""
		if r := properties.RunScenario(fixed); r.Property != "" {
			t.Errorf("%s: the shrunk case fails without the bug too: %s: %s", b.Name, r.Property, r.Message)
		}
	}
}
