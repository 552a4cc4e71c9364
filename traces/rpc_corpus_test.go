package traces

import (
	"os"
	"path/filepath"
	"testing"

	"xceiver/properties"
)

// rpcCorpus holds one shrunk trace per catalogued rpc bug (JSON: the rpc
// case and what its run gave); -update records them again with the rest.
const rpcCorpus = "corpus/rpc"

// TestRPCCorpus replays each catalogued rpc bug's trace: the same property
// fails with the same event hash; and the same case with the bug switched
// off passes, so the check caught the bug and nothing else. With -update
// each is recorded again: the first failing seed ≤ 200, shrunk.
func TestRPCCorpus(t *testing.T) {
	if *update {
		if err := os.MkdirAll(rpcCorpus, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, b := range properties.RPCBugs {
			found := false
			for seed := uint64(1); seed <= 200 && !found; seed++ {
				c, r, err := properties.CheckRPCSeed(seed, b.Name, 300)
				if err != nil {
					t.Fatal(err)
				}
				if r.Failure == nil || r.Failure.Unknown() {
					continue
				}
				found = true
				tr, _ := properties.RecordRPC(c)
				if err := properties.WriteRPCTrace(filepath.Join(rpcCorpus, b.Name+".json"), tr); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: seed %d, %d ops, %d faults: %s: %s", b.Name, seed, len(c.Ops)+len(c.Live), len(c.Faults), tr.Property, tr.Message)
			}
			if !found {
				t.Errorf("%s: no failure in 200 seeds", b.Name)
			}
		}
	}
	for _, b := range properties.RPCBugs {
		tr, err := properties.ReadRPCTrace(filepath.Join(rpcCorpus, b.Name+".json"))
		if err != nil {
			t.Errorf("%s: %v (go test ./traces -update records it)", b.Name, err)
			continue
		}
		if tr.Case.Bug != b.Name {
			t.Errorf("%s: the trace's case has bug %q", b.Name, tr.Case.Bug)
		}
		if _, err := properties.ReplayRPC(tr); err != nil {
			t.Errorf("%s: %v (go test ./traces -update records it again)", b.Name, err)
		}
		if r := properties.RunRPC(tr.Case.Fixed(), 0); r.Failure != nil {
			t.Errorf("%s: the shrunk case fails without the bug too: %v", b.Name, r.Failure)
		}
	}
}
