package properties

import (
	"testing"
)

func TestShortCircuitProperties(t *testing.T) {
	seeds := uint64(200)
	if testing.Short() {
		seeds = 40
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		c, err := DrawSC(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		if r := RunSC(c); r.Property != "" {
			t.Fatalf("seed %d: %s: %s", seed, r.Property, r.Message)
		}
	}
}

// Each catalogued short-circuit bug fails its property within 200 seeds.
func TestShortCircuitPropertiesFindBugs(t *testing.T) {
	for _, b := range SCBugs {
		found := uint64(0)
		for seed := uint64(1); seed <= 200 && found == 0; seed++ {
			c, err := DrawSC(SeedSource(seed), seed, b.Name)
			if err != nil {
				t.Fatal(err)
			}
			if r := RunSC(c); r.Property != "" {
				found = seed
				t.Logf("%s: seed %d: %s: %s", b.Name, seed, r.Property, r.Message)
				if r.Property != b.Catches {
					t.Errorf("%s: caught by %s, catalogue says %s", b.Name, r.Property, b.Catches)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s not found in 200 seeds", b.Name)
		}
	}
}
