package properties

import (
	"testing"

	"xceiver/model"
)

// The stats property holds each of the datanode's counters to what the
// clients saw it do (and its errors to what it logged), and a counter
// that falls short fails it on its own: a datanode that forgets its
// reads, its writes, the bytes it sent, the ops it refused before taking
// them as a read or a write, or its errors is caught whatever the other
// counters say.
func TestStatsCatchEachCounterShort(t *testing.T) {
	// A seed that runs one datanode to the end (no crash), with reads
	// and writes answered and some ops rejected.
	const seed = 9
	c, err := Draw(SeedSource(seed), seed, "")
	if err != nil {
		t.Fatal(err)
	}
	r := Run(c, Options{})
	if r.Failure != nil {
		t.Fatalf("seed %d as drawn: %v", seed, r.Failure)
	}
	if r.Stats.Crashes != 0 || r.Stats.Rejected == 0 {
		t.Fatalf("seed %d: %+v; want no crash and some ops rejected (pick another seed)", seed, r.Stats)
	}
	for _, tc := range []struct {
		name   string
		tamper func(*model.DatanodeStats)
	}{
		{"reads", func(s *model.DatanodeStats) { s.Reads = 0 }},
		{"writes", func(s *model.DatanodeStats) { s.Writes = 0 }},
		{"bytes sent", func(s *model.DatanodeStats) { s.BytesSent = 0 }},
		{"ops refused before their kind", func(s *model.DatanodeStats) { s.Ops = s.Reads + s.Writes }},
		{"errors", func(s *model.DatanodeStats) { s.Errors = 0 }},
	} {
		r := Run(c, Options{tamperStats: tc.tamper})
		if r.Failure == nil || r.Failure.Property != PropStats {
			t.Errorf("datanode counting no %s: %v, want a %s failure", tc.name, r.Failure, PropStats)
		}
	}
}
