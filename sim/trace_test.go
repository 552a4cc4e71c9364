package sim

import (
	"strings"
	"testing"
)

// A string's precomputed words hash as the string does, whatever its
// length (the full words and the tail).
func TestStrHashFoldsAsFnvString(t *testing.T) {
	for n := 0; n <= 40; n++ {
		s := strings.Repeat("client-7x", 5)[:n]
		for _, h := range []uint64{fnvOffset, 1, 0xdeadbeefcafef00d} {
			if got, want := newStrHash(s).fold(h), fnvString(h, s); got != want {
				t.Fatalf("%q from %x: fold %x, fnvString %x", s, h, got, want)
			}
		}
	}
}

// recordSeg folds a segment into the trace hash the same way whether the
// run is watched (observers, a JSON trace) or not: both end with the same
// hash.
func TestRecordSegHashesAsRecord(t *testing.T) {
	run := func(watch bool) uint64 {
		h := newPair(t)
		if !watch {
			h.w.observers = nil
		}
		h.cli.write(70000)
		h.runTo(h.now() + ms)
		h.srv.write(3)
		h.runTo(h.now() + 300*ms)
		return h.w.TraceHash()
	}
	if a, b := run(true), run(false); a != b {
		t.Fatalf("trace hash %016x with an observer, %016x without", a, b)
	}
}

// A log line is hashed from its buffer when nobody watches (recordLog),
// and as a recorded event when someone does: both give the same hash.
func TestRecordLogHashesAsRecord(t *testing.T) {
	run := func(watch bool) uint64 {
		h := newPair(t)
		if !watch {
			h.w.observers = nil
		}
		for i, line := range []string{"", "x", "seven77", "eight888", "nine99999", strings.Repeat("a log line ", 4)} {
			h.cli.p.Log(line, "n", i, "s", line)
			h.runTo(h.now() + ms)
		}
		return h.w.TraceHash()
	}
	if a, b := run(true), run(false); a != b {
		t.Fatalf("trace hash %016x with an observer, %016x without", a, b)
	}
}
