package properties

import (
	"encoding/json"
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

// A short-circuit case read from a file is validated before it runs; a
// valid one runs to an answer (a property verdict), never a panic.
func FuzzSCCase(f *testing.F) {
	f.Add([]byte(`{"seed":1,"shards":1,"capacity":4,"readers":2,"ops":[{"gap":1120000,"op":"read","block":1,"reader":1,"off":1227},{"gap":540000,"op":"delete","block":1,"data":65563},{"gap":1477000,"op":"read","block":1,"reader":1,"off":1746}]}`))
	f.Add([]byte(`{"seed":13,"bug":"HDFS-17978","shards":1,"capacity":3,"readers":1,"ops":[{"gap":0,"op":"append","block":1,"data":5},{"gap":0,"op":"squeeze","block":1,"left":2,"hold":7000000},{"gap":2981000,"op":"read","block":1,"off":1555}]}`))
	f.Add([]byte(`{"seed":2,"shards":0,"capacity":-1,"readers":99,"ops":[{"op":"nope","block":7}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c SCCase
		if json.Unmarshal(b, &c) != nil || c.Validate() != nil || len(c.Ops) > 8 || c.Readers > 4 {
			return
		}
		RunSC(c)
	})
}
