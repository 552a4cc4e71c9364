package properties

import (
	"testing"
	"time"
)

// A rotted chunk fails the read that meets it, through the passed fds and
// then over TCP, until a change rewrites the block's files: an append
// keeps the rot, a replace or a delete does not. Unverified, the rotted
// data comes back as good (linearizability); a rotted checksum over
// unverified data reads the true contents. The checksum error leaves
// short-circuit on for the next miss; turning it off is caught.
func TestSCRotFailsReadsUntilRewritten(t *testing.T) {
	rot := func(off int64, meta bool) SCOp {
		return SCOp{Gap: time.Millisecond, Op: "rot", Block: 1, Off: off, Meta: meta}
	}
	read := SCOp{Gap: time.Millisecond, Op: "read", Block: 1, Off: 300} // chunks 0 and 1
	change := func(op string) SCOp { return SCOp{Gap: time.Millisecond, Op: op, Block: 1, Data: 7} }
	other := SCOp{Gap: time.Millisecond, Op: "read", Block: 2, Off: 300} // a miss
	for _, tc := range []struct {
		name      string
		bug       string
		ignore    []string
		ops       []SCOp
		prop      string
		localErrs int
	}{
		{"data", "", nil, []SCOp{rot(100, false), read}, "", 1},
		{"meta", "", nil, []SCOp{rot(100, true), read}, "", 1},
		{"second chunk", "", nil, []SCOp{rot(600, false), read}, "", 1},
		{"chunk not read", "", nil, []SCOp{rot(1100, false), read}, "", 0},
		{"cached replica", "", nil, []SCOp{read, rot(100, false), read}, "", 1},
		{"append keeps it", "", nil, []SCOp{rot(100, false), change("append"), read}, "", 1},
		{"replace drops it", "", nil, []SCOp{rot(100, true), change("replace"), read}, "", 0},
		{"delete drops it", "", nil, []SCOp{rot(100, false), change("delete"), change("append"), read}, "", 0},
		{"unverified data", "sc-local-unverified", nil, []SCOp{rot(400, false), read}, PropLinearizable, 0},
		{"unverified, cached", "sc-local-unverified", nil, []SCOp{read, rot(400, false), read}, PropLinearizable, 0},
		{"unverified, rot outside the bytes read", "sc-local-unverified", nil, []SCOp{rot(100, false), read}, "", 0},
		{"unverified meta", "sc-local-unverified", nil, []SCOp{rot(400, true), read}, "", 0},
		{"fallback first chunk", "sc-fallback-first-chunk", nil, []SCOp{rot(600, false), read}, PropLinearizable, 1},
		{"fallback, first chunk rotted", "sc-fallback-first-chunk", nil, []SCOp{rot(100, false), read}, "", 1},
		{"path stays on", "", nil, []SCOp{rot(100, false), read, other}, "", 1},
		{"off on checksum", "sc-off-on-checksum", nil, []SCOp{rot(100, false), read, other}, PropSCOff, 0},
		{"off on checksum, local reads", "sc-off-on-checksum", []string{PropSCOff}, []SCOp{rot(100, false), read, other}, PropLocalReads, 0},
	} {
		c := SCCase{Seed: 1, Bug: tc.bug, Ignore: tc.ignore, Shards: 1, Capacity: 2, Readers: 1, Ops: tc.ops}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := RunSC(c)
		if r.Property != tc.prop {
			t.Errorf("%s: property %q (%s), want %q", tc.name, r.Property, r.Message, tc.prop)
		}
		if r.Property == "" && r.Readers.LocalErrors != tc.localErrs {
			t.Errorf("%s: %d local errors, want %d", tc.name, r.Readers.LocalErrors, tc.localErrs)
		}
	}
}

// Drawn rot reaches the client's local-read error path in some seeds.
func TestSCRotDrawnReachesLocalErrors(t *testing.T) {
	seeds, hit := uint64(100), 0
	for seed := uint64(1); seed <= seeds; seed++ {
		c, err := DrawSC(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		if r := RunSC(c); r.Readers.LocalErrors > 0 {
			hit++
		}
	}
	t.Logf("%d of %d seeds met rot through passed fds", hit, seeds)
	if hit == 0 {
		t.Errorf("no seed of %d met rot through passed fds", seeds)
	}
}

// A read may meet rot in the chunks it reads, injected before it ended
// and not rewritten before it started.
func TestSCRotsMay(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rs := scRots{}
	rs.add(1, 700, ms(5)) // chunk 1
	rs.clear(1, ms(10))
	rs.add(1, 100, ms(12)) // chunk 0
	for _, tc := range []struct {
		block      uint64
		off        int64
		start, end int
		want       bool
	}{
		{1, 512, 3, 4, false},  // before the rot
		{1, 512, 4, 6, true},   // the rot during the read
		{1, 0, 4, 6, false},    // chunk 0 alone
		{1, 200, 4, 6, true},   // chunks 0 and 1
		{1, 1024, 4, 6, false}, // chunk 2
		{1, 513, 9, 11, true},  // began before the rewrite returned
		{1, 512, 10, 11, false},
		{1, 0, 11, 13, true}, // the second rot
		{2, 512, 4, 6, false},
	} {
		_, got := rs.may(tc.block, tc.off, 512, ms(tc.start), ms(tc.end))
		if got != tc.want {
			t.Errorf("block %d at %d during %d–%d ms: may %v, want %v", tc.block, tc.off, tc.start, tc.end, got, tc.want)
		}
	}
}
