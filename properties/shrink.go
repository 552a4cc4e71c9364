package properties

import "time"

// Shrink looks for a smaller case that still fails the property c failed:
// deterministic delta debugging of the schedule (drop chunks of faults,
// ops, probes and liveness reads, halving the chunk size down to single
// items), then halving what remains (gaps, sizes, lengths, durations). It
// re-runs the simulation for every candidate, at most budget times, and
// returns the smallest failing case with its result.
func Shrink(c Case, failed *Result, budget int, opt Options) (Case, *Result, int) {
	if failed == nil || failed.Failure == nil || failed.Failure.Unknown() {
		// A check that gave up shrinks to cases it finishes: nothing
		// smaller fails.
		return c, failed, 0
	}
	// A candidate runs at most a little longer than the run it shrinks,
	// in events and in virtual time: one that does not fail by then is
	// not kept (it fails differently, or later, or not at all).
	if shrinkBounded {
		opt.MaxEvents = 2*failed.Events + 100_000
		opt.Limit = 2*failed.End + 10*time.Second
	}
	s := shrinker{prop: failed.Failure.Property, peer: failed.FailurePeer, budget: budget, opt: opt, best: c, bestRes: failed}
	for progress := true; progress && s.runs < s.budget; {
		progress = false
		progress = dropChunks(&s, func(c *Case) *[]Fault { return &c.Schedule.Faults }) || progress
		progress = dropChunks(&s, func(c *Case) *[]Op { return &c.Schedule.Ops }) || progress
		progress = dropChunks(&s, func(c *Case) *[]Op { return &c.Schedule.Live }) || progress
		progress = dropChunks(&s, func(c *Case) *[]Op { return &c.Schedule.Probe }) || progress
		progress = dropChunks(&s, func(c *Case) *[]Op { return &c.Schedule.Rogue }) || progress
		progress = dropChunks(&s, func(c *Case) *[]Op { return &c.Schedule.Close }) || progress
		progress = dropChunks(&s, func(c *Case) *[]InitBlock { return &c.Config.Blocks }) || progress
		progress = dropChunks(&s, func(c *Case) *[]HostilePeer { return &c.Config.Hostile }) || progress
		progress = s.fewerHostile() || progress
		progress = s.fewerLies() || progress
		progress = s.halve() || progress
	}
	return s.best, s.bestRes, s.runs
}

// Test hooks: shrinkObserver sees every candidate's run; shrinkBounded
// off measures what the bounds save.
var (
	shrinkObserver func(Options, *Result)
	shrinkBounded  = true
)

type shrinker struct {
	prop    string
	peer    string
	budget  int
	runs    int
	opt     Options
	best    Case
	bestRes *Result
}

// try runs a candidate and keeps it if it fails the same way.
func (s *shrinker) try(c Case) bool {
	if s.runs >= s.budget || c.Validate() != nil {
		return false
	}
	s.runs++
	r := Run(c, s.opt)
	if shrinkObserver != nil {
		shrinkObserver(s.opt, r)
	}
	if r.Cut || r.Failure == nil || r.Failure.Property != s.prop || r.FailurePeer != s.peer || r.Failure.Unknown() {
		return false
	}
	s.best, s.bestRes = c, r
	return true
}

// dropChunks removes chunks of one list (ddmin's complement step).
func dropChunks[T any](s *shrinker, list func(*Case) *[]T) bool {
	shrunk := false
	n := 2
	for {
		items := *list(&s.best)
		if len(items) == 0 || s.runs >= s.budget {
			return shrunk
		}
		n = min(n, len(items))
		chunk := (len(items) + n - 1) / n
		removed := false
		for start := 0; start < len(items); start += chunk {
			cand := s.best
			cand.Schedule = cloneSchedule(s.best.Schedule)
			cand.Config.Blocks = append([]InitBlock(nil), s.best.Config.Blocks...)
			l := list(&cand)
			end := min(start+chunk, len(items))
			*l = append(append([]T(nil), items[:start]...), items[end:]...)
			if s.try(cand) {
				removed, shrunk = true, true
				break
			}
		}
		switch {
		case removed:
			n = max(n-1, 2)
		case chunk == 1:
			return shrunk
		default:
			n *= 2
		}
	}
}

func cloneSchedule(sc Schedule) Schedule {
	return Schedule{
		Ops:    append([]Op(nil), sc.Ops...),
		Faults: append([]Fault(nil), sc.Faults...),
		Probe:  append([]Op(nil), sc.Probe...),
		Live:   append([]Op(nil), sc.Live...),
		Rogue:  append([]Op(nil), sc.Rogue...),
		Close:  append([]Op(nil), sc.Close...),
	}
}

// halve tries, for every op and fault, halving each of its numbers.
func (s *shrinker) halve() bool {
	shrunk := false
	halveDur := func(d *time.Duration) bool {
		if *d <= time.Microsecond {
			return false
		}
		*d /= 2
		return true
	}
	halveInt := func(n *int) bool {
		if *n <= 1 {
			return false
		}
		*n /= 2
		return true
	}
	halveI64 := func(n *int64) bool {
		if *n <= 1 {
			return false
		}
		*n /= 2
		return true
	}
	lists := []func(*Case) []Op{
		func(c *Case) []Op { return c.Schedule.Ops },
		func(c *Case) []Op { return c.Schedule.Probe },
		func(c *Case) []Op { return c.Schedule.Live },
	}
	for _, list := range lists {
		for i := range list(&s.best) {
			for field := 0; field < 4 && s.runs < s.budget; field++ {
				cand := s.best
				cand.Schedule = cloneSchedule(s.best.Schedule)
				op := &list(&cand)[i]
				changed := false
				switch field {
				case 0:
					changed = halveDur(&op.Gap)
				case 1:
					changed = halveInt(&op.Size)
				case 2:
					changed = halveI64(&op.Len)
				case 3:
					changed = halveI64(&op.Off)
				}
				if changed && s.try(cand) {
					shrunk = true
				}
			}
		}
	}
	for i := range s.best.Schedule.Faults {
		for field := 0; field < 2 && s.runs < s.budget; field++ {
			cand := s.best
			cand.Schedule = cloneSchedule(s.best.Schedule)
			f := &cand.Schedule.Faults[i]
			changed := false
			switch field {
			case 0:
				changed = halveDur(&f.At)
			case 1:
				changed = halveDur(&f.Dur)
			}
			if changed {
				sortFaults(cand.Schedule.Faults)
				if s.try(cand) {
					shrunk = true
				}
			}
		}
	}
	return shrunk
}
