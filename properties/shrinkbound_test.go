package properties

import (
	"strings"
	"testing"
)

// A panic in model code ends the run as a harness failure with a trace,
// and check goes on.
func TestPanicBecomesHarnessFailure(t *testing.T) {
	found := false
	for seed := uint64(1); seed <= 200 && !found; seed++ {
		c, err := Draw(SeedSource(seed), seed, "empty-read-panic")
		if err != nil {
			t.Fatal(err)
		}
		r := Run(c, Options{})
		if r.Failure == nil {
			continue
		}
		if r.Failure.Property != PropHarness || !strings.Contains(r.Failure.Message, "panic") {
			t.Fatalf("seed %d: %v, want a harness failure naming the panic", seed, r.Failure)
		}
		if r.TraceHash == "" || r.Events == 0 {
			t.Fatalf("seed %d: no trace (%d events, hash %q)", seed, r.Events, r.TraceHash)
		}
		found = true
	}
	if !found {
		t.Fatal("empty-read-panic: no seed in 200 panicked")
	}
}

// Shrink candidates run within bounds derived from the failing run.
func TestShrinkCandidatesBounded(t *testing.T) {
	defer func() { shrinkObserver = nil }()
	for seed := uint64(1); seed <= 200; seed++ {
		c, _ := Draw(SeedSource(seed), seed, "HDFS-3357")
		r := Run(c, Options{})
		if r.Failure == nil {
			continue
		}
		n := 0
		shrinkObserver = func(opt Options, cr *Result) {
			n++
			if opt.MaxEvents == 0 || opt.MaxEvents > 2*r.Events+100_000 || opt.Limit == 0 || opt.Limit > 2*r.End+10e9 {
				t.Fatalf("candidate bounds %d events, %v; failing run %d events, %v", opt.MaxEvents, opt.Limit, r.Events, r.End)
			}
			if cr.End > opt.Limit || cr.Events > opt.MaxEvents+1 {
				t.Fatalf("candidate ran %d events to %v past its bounds %d, %v", cr.Events, cr.End, opt.MaxEvents, opt.Limit)
			}
			if cr.Cut && cr.Failure != nil {
				t.Fatalf("a cut run reports %v", cr.Failure)
			}
		}
		_, res, runs := Shrink(c, r, 60, Options{})
		if runs == 0 || n != runs || res.Failure == nil || res.Failure.Property != r.Failure.Property {
			t.Fatalf("shrink: %d runs, %d observed, result %v", runs, n, res.Failure)
		}
		return
	}
	t.Fatal("HDFS-3357: no failing seed in 200")
}
