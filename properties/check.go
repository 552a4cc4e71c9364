package properties

import (
	"fmt"
	"os"
	"runtime/debug"
)

// CheckGCPercent is the collector's target while checking seeds. A seed
// allocates a few MB and keeps almost none of it, so at Go's default (100)
// the collector ran every seed or two over a small live heap. Now each
// checking goroutine also keeps an arena of recycled buffers (sim.Arena,
// up to 32 MB) live, which sets the heap goal: at 200 the collector runs
// every dozen seeds or so and check's peak RSS stays near 140 MB; at 400
// it was above 200 MB for no measurable gain. The heap stays bounded by
// the live data (at most 3× it), however many seeds run.
const CheckGCPercent = 200

// CheckMemoryPerWorker is the soft memory limit check sets per seed
// checked at once, above CheckMemoryBase. The live heap is about 35 MB a
// worker, but one heavy seed (a hostile flood) can hold 100 MB live, and
// at CheckGCPercent the heap then grows to three times that; the RSS
// stayed there: 144 MB after 2,000 seeds, 267 MB after 20,000, which
// met a heavier seed. Under a soft limit the collector works harder only
// near it: 152 MB after 20,000 seeds on one worker.
const (
	CheckMemoryBase      = 64 << 20
	CheckMemoryPerWorker = 96 << 20
)

// TuneGC sets the collector as check runs it, for workers seeds at once:
// CheckGCPercent unless the user chose a GOGC, and the soft memory limit
// unless the user chose a GOMEMLIMIT. It returns what puts the previous
// settings back; check and its benchmarks call it.
func TuneGC(workers int) (restore func()) {
	var undo []func()
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(CheckGCPercent)
		undo = append(undo, func() { debug.SetGCPercent(old) })
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		old := debug.SetMemoryLimit(CheckMemoryBase + CheckMemoryPerWorker*int64(max(workers, 1)))
		undo = append(undo, func() { debug.SetMemoryLimit(old) })
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}

// ShrinkBudget is how many re-runs Check spends shrinking a failure.
const ShrinkBudget = 400

// Outcome is what checking one seed found.
type Outcome struct {
	Seed uint64
	// Case is the case that ran; after a failure, the shrunk case.
	Case Case
	// Result is the run of Case (after a failure, of the shrunk case).
	Result *Result
	// Original is the failure before shrinking, with its size.
	Original       *Failure
	OriginalOps    int
	OriginalFaults int
	ShrinkRuns     int
	// SimEvents are the events the simulator processed in the drawn
	// case's run (its first, before any shrinking): the seed's weight,
	// which check sums for a speed that holds when a seed grows heavier
	// or lighter.
	SimEvents uint64
}

// Failed reports whether a property broke.
func (o *Outcome) Failed() bool { return o.Result.Failure != nil }

// CheckSeed draws the case of seed (with bug switched on, or "" for the
// correct code), runs it, and on failure shrinks it. With twice, a passing
// case runs again and must give the same trace hash (determinism).
func CheckSeed(seed uint64, bug string, opt Options, twice bool) (Outcome, error) {
	return CheckSeedShrinking(seed, bug, opt, twice, ShrinkBudget)
}

// CheckSeedShrinking is CheckSeed with at most budget shrinking runs; with
// 0 a failure is reported as drawn (what `check --no-shrink` wants: the
// verdict, soon).
func CheckSeedShrinking(seed uint64, bug string, opt Options, twice bool, budget int) (Outcome, error) {
	c, err := Draw(SeedSource(seed), seed, bug)
	if err != nil {
		return Outcome{}, err
	}
	c.Ignore = opt.Ignore
	// A passing run's trace hash is compared only when the seed runs
	// twice, so the first run keeps none unless it does. A failure is
	// shrunk and saved with its hash: the case runs again for it
	// (hashOnly), and must give the same events; its verdict stays the
	// first run's.
	first := opt
	if !twice && opt.Trace == nil {
		first.hashing = unhashed
	}
	r := Run(c, first)
	if first.hashing == unhashed && r.Failure != nil {
		hashOpt := opt
		hashOpt.hashing = hashOnly
		again := Run(c, hashOpt)
		if again.Events != r.Events || again.SimEvents != r.SimEvents {
			r.Failure = &Failure{PropDeterminism, fmt.Sprintf("two runs of the case differ: %d events (%d in the simulator) failing %v, then %d (%d)",
				r.Events, r.SimEvents, r.Failure, again.Events, again.SimEvents)}
			return Outcome{Seed: seed, Case: c, Result: r, Original: r.Failure, SimEvents: r.SimEvents}, nil
		}
		r.TraceHash = again.TraceHash
	}
	if twice && r.Failure == nil {
		if again := Run(c, opt); again.TraceHash != r.TraceHash || again.Events != r.Events {
			r.Failure = &Failure{PropDeterminism, fmt.Sprintf("two runs of the case differ: %d events, hash %s, then %d events, hash %s",
				r.Events, r.TraceHash, again.Events, again.TraceHash)}
			return Outcome{Seed: seed, Case: c, Result: r, Original: r.Failure, SimEvents: r.SimEvents}, nil
		}
	}
	o := Outcome{Seed: seed, Case: c, Result: r, SimEvents: r.SimEvents}
	if r.Failure == nil {
		return o, nil
	}
	o.Original = r.Failure
	o.OriginalOps = len(c.Schedule.Ops) + len(c.Schedule.Probe) + len(c.Schedule.Live)
	o.OriginalFaults = len(c.Schedule.Faults)
	o.Case, o.Result, o.ShrinkRuns = Shrink(c, r, budget, opt)
	return o, nil
}
