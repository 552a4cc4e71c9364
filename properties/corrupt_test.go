package properties

import (
	"bytes"
	"strings"
	"testing"
)

// The corruption faults and reach draws do something: over a sample of
// seeds of the correct code each of them strikes (a rotted bit, a flip in
// flight, a crash point that fires, a read failed on its checksum, a
// poisoned free list, a stream read) and every property holds.
func TestCorruptionFaultsStrike(t *testing.T) {
	seeds := uint64(150)
	if testing.Short() {
		seeds = 60
	}
	want := []string{"bit rot", "bit flip in flight", `"kind":"crash"`, "client-checksum", "poison true", "crash at disk op"}
	seen := map[string]int{}
	streams, smallBuf := 0, 0
	for seed := uint64(1); seed <= seeds; seed++ {
		c, err := Draw(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range c.Schedule.Ops {
			if op.Stream {
				streams++
			}
		}
		if c.Config.SndBuf > 0 {
			smallBuf++
		}
		var buf bytes.Buffer
		r := Run(c, Options{Trace: &buf})
		if r.Failure != nil {
			t.Fatalf("seed %d: %v", seed, r.Failure)
		}
		s := buf.String()
		for _, w := range want {
			seen[w] += strings.Count(s, w)
		}
	}
	for _, w := range want {
		if seen[w] == 0 {
			t.Errorf("%q never happened in %d seeds", w, seeds)
		}
	}
	if streams == 0 || smallBuf == 0 {
		t.Errorf("%d stream reads, %d cases with small send buffers drawn", streams, smallBuf)
	}
}
