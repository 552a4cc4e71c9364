package traces

import (
	"os"
	"path/filepath"
	"testing"

	"xceiver/properties"
)

// scCorpus holds one shrunk trace per catalogued short-circuit bug (JSON:
// the case and what its run gave); -update records them again with the
// rest.
const scCorpus = "corpus/sc"

// TestSCCorpus replays each catalogued short-circuit bug's trace: the same
// property fails with the same event hash; and the same case with the bug
// switched off passes, so the check caught the bug and nothing else. With
// -update each is recorded again: the first failing seed ≤ 200, shrunk.
func TestSCCorpus(t *testing.T) {
	if *update {
		if err := os.MkdirAll(scCorpus, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, b := range properties.SCBugs {
			found := false
			for seed := uint64(1); seed <= 200 && !found; seed++ {
				c, r, err := properties.CheckSCSeed(seed, b.Name, 300)
				if err != nil {
					t.Fatal(err)
				}
				if r.Property == "" || r.Property == properties.PropHarness {
					continue
				}
				found = true
				tr, _ := properties.RecordSC(c)
				if err := properties.WriteSCTrace(filepath.Join(scCorpus, b.Name+".json"), tr); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: seed %d, %d ops: %s: %s", b.Name, seed, len(c.Ops), tr.Property, tr.Message)
			}
			if !found {
				t.Errorf("%s: no failure in 200 seeds", b.Name)
			}
		}
	}
	for _, b := range properties.SCBugs {
		tr, err := properties.ReadSCTrace(filepath.Join(scCorpus, b.Name+".json"))
		if err != nil {
			t.Errorf("%s: %v (go test ./traces -update records it)", b.Name, err)
			continue
		}
		if tr.Case.Bug != b.Name {
			t.Errorf("%s: the trace's case has bug %q", b.Name, tr.Case.Bug)
		}
		if tr.Property != b.Catches {
			t.Errorf("%s: the trace fails %q, the catalogue says %q", b.Name, tr.Property, b.Catches)
		}
		if _, err := properties.ReplaySC(tr); err != nil {
			t.Errorf("%s: %v (go test ./traces -update records it again)", b.Name, err)
		}
		fixed := tr.Case
		fixed.Bug = ""
		if r := properties.RunSC(fixed); r.Property != "" {
			t.Errorf("%s: the shrunk case fails without the bug too: %s: %s", b.Name, r.Property, r.Message)
		}
	}
}
