package properties

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"

	"xceiver/model"
)

// --- the model ---

type hop struct {
	call, ret int64 // ret < 0: unknown (+∞)
	in        LinInput
	out       LinOutput
}

func hist(ops ...hop) []porcupine.Operation {
	var h []porcupine.Operation
	for i, o := range ops {
		ret := o.ret
		if ret < 0 {
			ret = math.MaxInt64
		}
		h = append(h, porcupine.Operation{ClientId: i, Call: o.call, Return: ret, Input: o.in, Output: o.out})
	}
	return h
}

func initOp(b uint64, exists bool, stamp uint64, data string) hop {
	return hop{-2, -1, LinInput{Kind: kInit, Block: b, Exists: exists, Stamp: stamp, Data: data}, LinOutput{}}
}

func readOp(call, ret int64, b uint64, off, n int64, stamp uint64, data string, length int64) hop {
	return hop{call, ret, LinInput{Kind: kRead, Block: b, Off: off, Len: n}, LinOutput{Stamp: stamp, Length: length, Data: data}}
}

func mut(call, ret int64, k opKind, b uint64, data string, stamp uint64, length int64) hop {
	return hop{call, ret, LinInput{Kind: k, Block: b, Data: data}, LinOutput{Stamp: stamp, Length: length}}
}

func rejected(h hop, st model.Status) hop {
	h.out = LinOutput{Outcome: outRejected, Status: st}
	return h
}

func unknown(h hop) hop {
	h.out = LinOutput{Outcome: outUnknown}
	h.ret = -1
	return h
}

func TestModelAcceptsAndRejects(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
		h    []porcupine.Operation
	}{
		{"read-after-append", true, hist(initOp(1, true, 10, "ab"),
			mut(1, 2, kAppend, 1, "cd", 11, 4), readOp(3, 4, 1, 1, 3, 11, "bcd", 4))},
		{"stale-read-after-replace", false, hist(initOp(1, true, 10, "ab"),
			mut(1, 2, kReplace, 1, "xy", 11, 2), readOp(3, 4, 1, 0, 2, 10, "ab", 2))},
		{"concurrent-read-may-see-either", true, hist(initOp(1, true, 10, "ab"),
			mut(1, 5, kReplace, 1, "xy", 11, 2), readOp(2, 3, 1, 0, 2, 10, "ab", 2), readOp(2, 4, 1, 0, 2, 11, "xy", 2))},
		{"read-of-deleted", false, hist(initOp(1, true, 10, "ab"),
			mut(1, 2, kDelete, 1, "", 0, 0), readOp(3, 4, 1, 0, 1, 10, "a", 2))},
		{"rejected-read-of-deleted", true, hist(initOp(1, true, 10, "ab"),
			mut(1, 2, kDelete, 1, "", 0, 0), rejected(readOp(3, 4, 1, 0, 1, 0, "", 0), model.StatusErrorInvalid))},
		{"rejected-read-in-range", false, hist(initOp(1, true, 10, "ab"),
			rejected(readOp(3, 4, 1, 0, 1, 0, "", 0), model.StatusErrorInvalid))},
		{"rejected-read-past-end", true, hist(initOp(1, true, 10, "ab"),
			rejected(readOp(3, 4, 1, 1, 2, 0, "", 0), model.StatusErrorInvalid))},
		{"write-exists-rejected", true, hist(initOp(1, true, 10, "ab"),
			rejected(mut(1, 2, kWrite, 1, "zz", 0, 0), model.StatusErrorExists))},
		{"write-over-existing", false, hist(initOp(1, true, 10, "ab"),
			mut(1, 2, kWrite, 1, "zz", 11, 2))},
		{"stamp-reused-after-delete", false, hist(initOp(1, true, 10, "ab"),
			mut(1, 2, kDelete, 1, "", 0, 0), mut(3, 4, kWrite, 1, "new", 10, 3))},
		{"stamp-must-grow", false, hist(initOp(1, true, 10, "ab"),
			mut(1, 2, kAppend, 1, "c", 9, 3))},
		{"unknown-write-applied", true, hist(initOp(1, false, 0, ""),
			unknown(mut(1, 2, kWrite, 1, "zz", 0, 0)), readOp(3, 4, 1, 0, 2, 17, "zz", 2), readOp(5, 6, 1, 0, 1, 17, "z", 2))},
		{"unknown-write-not-applied", true, hist(initOp(1, false, 0, ""),
			unknown(mut(1, 2, kWrite, 1, "zz", 0, 0)), rejected(readOp(3, 4, 1, 0, 2, 0, "", 0), model.StatusErrorInvalid))},
		{"unknown-stamp-then-two-stamps", false, hist(initOp(1, false, 0, ""),
			unknown(mut(1, 2, kWrite, 1, "zz", 0, 0)), readOp(3, 4, 1, 0, 2, 17, "zz", 2), readOp(5, 6, 1, 0, 2, 18, "zz", 2))},
		{"other-block-independent", true, hist(initOp(1, true, 10, "ab"), initOp(2, false, 0, ""),
			mut(1, 2, kWrite, 2, "q", 11, 1), readOp(3, 4, 1, 0, 2, 10, "ab", 2), readOp(3, 4, 2, 0, 1, 11, "q", 1))},
	}
	for _, c := range cases {
		res, _, f := CheckHistory(c.h, DefaultLinBudget, false)
		if (res == porcupine.Ok) != c.ok || (f == nil) != c.ok {
			t.Errorf("%s: %v (failure %v), want ok=%v", c.name, res, f, c.ok)
		}
	}
}

// A history the checker cannot decide within its budget must be reported
// as a failure ("unknown"), never as a pass, and the same on every machine
// and at any load: the budget counts work, not time.
func TestLinearizabilityOverBudgetIsUnknownNotPass(t *testing.T) {
	ops := []hop{initOp(1, true, 10, "")}
	for i := 0; i < 40; i++ {
		ops = append(ops, unknown(mut(1, 2, kAppend, 1, string(rune('a'+i%26))+strings.Repeat("x", i), 0, 0)))
	}
	ops = append(ops, readOp(3, 4, 1, 0, 1, 99, "!", 1)) // fits no order: the search is exhaustive
	for range 2 {
		res, _, f := CheckHistory(hist(ops...), 300_000, false)
		if res != porcupine.Unknown {
			t.Fatalf("the checker decided (%v) a history it cannot search through in 300,000 steps", res)
		}
		if f == nil || f.Property != PropLinearizable || !strings.HasPrefix(f.Message, "unknown: the checker gave up after 300000 steps") {
			t.Fatalf("a check over its budget reported %v, want an unknown linearizability failure", f)
		}
	}
	// Within the budget the same checker decides what it can: the read of
	// a byte no append wrote fails with a single append before it.
	res, _, f := CheckHistory(hist(ops[0], ops[1], ops[len(ops)-1]), 300_000, false)
	if res != porcupine.Illegal || f == nil || strings.HasPrefix(f.Message, "unknown") {
		t.Fatalf("a small impossible history: %v, %v; want Illegal", res, f)
	}
}

// --- runs ---

func (s *RunStats) add(o RunStats) {
	s.Errors += o.Errors
	s.Rejected += o.Rejected
	s.Unknown += o.Unknown
	s.Timeouts += o.Timeouts
	s.DeadPeers += o.DeadPeers
	s.Retries += o.Retries
	s.Faults += o.Faults
	s.Crashes += o.Crashes
}

func TestSeedsPass(t *testing.T) {
	n := uint64(150)
	if testing.Short() {
		n = 30
	}
	var sum RunStats
	for s := uint64(1); s <= n; s++ {
		c, err := Draw(SeedSource(s), s, "")
		if err != nil {
			t.Fatal(err)
		}
		r := Run(c, Options{})
		if r.Failure != nil {
			b, _ := json.Marshal(c)
			t.Fatalf("seed %d: %v\ncase: %s", s, r.Failure, b)
		}
		sum.add(r.Stats)
	}
	// The seeds push the code into every outcome the run counts: failed,
	// rejected and unanswered ops, timeouts, cached peers found dead (each
	// retried), faults and crashes (30 seeds reach each of them). A draw
	// that stopped reaching one would leave its checks judging nothing.
	if sum.Errors == 0 || sum.Rejected == 0 || sum.Unknown == 0 || sum.Timeouts == 0 || sum.DeadPeers == 0 || sum.Faults == 0 || sum.Crashes == 0 {
		t.Errorf("seeds 1-%d reached no op of some outcome: %+v", n, sum)
	}
	if sum.Retries != sum.DeadPeers {
		t.Errorf("seeds 1-%d counted %d dead cached peers and %d retries of them", n, sum.DeadPeers, sum.Retries)
	}
}

// rapid draws cases (configuration and schedule, swarm style) and shrinks
// any that fails. It draws a fresh seed on every run (-rapid.seed=N
// replays one). Random seeds found, and these now pass:
//   - 9962580066681192302: the availability bound's mistake with small
//     send buffers (TestSmallSendBufferReadWithinBound);
//   - 11: a queued read slept beside the open handle of its block
//     (TestQueuedReadSharesOpenedHandle);
//   - 108, 109: a 150 ms client timeout with a pool of one handle, and
//     117: a flood outrunning the acceptor (draws fixed in hostile.go);
//   - 202: a parked read whose handle was evicted lost its replica to a
//     replace, which availability now excuses, exactly that
//     (TestParkedReadLostToReplaceIsExcused); after an append the read is
//     served (TestParkedReadSurvivesAppend).
func TestPropertiesRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c, err := Draw(RapidSource(rt), 0, "")
		if err != nil {
			rt.Fatal(err)
		}
		if r := Run(c, Options{}); r.Failure != nil {
			b, _ := json.Marshal(c)
			rt.Fatalf("%v\ncase: %s", r.Failure, b)
		}
	})
}

// The same seed gives the same trace, byte for byte.
func TestDeterminism(t *testing.T) {
	for _, s := range []uint64{1, 7, 42, 97, 188, 1050} {
		c, _ := Draw(SeedSource(s), s, "")
		var a, b strings.Builder
		ra := Run(c, Options{Trace: &a})
		rb := Run(c, Options{Trace: &b})
		if ra.TraceHash != rb.TraceHash || a.String() != b.String() {
			t.Fatalf("seed %d: two runs differ: hash %s vs %s, %d vs %d events", s, ra.TraceHash, rb.TraceHash, ra.Events, rb.Events)
		}
		if ra.Events == 0 {
			t.Fatalf("seed %d: no events", s)
		}
	}
}

// check's first run of a seed keeps no trace hash unless the seed runs
// twice; a failing seed is run again for its hash, which must be the
// hash of the case it reports, since the failure is saved with it.
func TestCheckHashesOnlyWhatItCompares(t *testing.T) {
	// HDFS-4911's seed 1 fails (found at once), its seed 2 passes.
	fail, err := CheckSeedShrinking(1, "HDFS-4911", Options{}, false, 0)
	if err != nil || !fail.Failed() {
		t.Fatalf("HDFS-4911 seed 1: %v, failed %v; want a failure", err, fail.Failed())
	}
	if want := Run(fail.Case, Options{}).TraceHash; fail.Result.TraceHash != want {
		t.Errorf("a failing seed reports trace hash %q, its case runs to %q", fail.Result.TraceHash, want)
	}
	pass, err := CheckSeedShrinking(2, "HDFS-4911", Options{}, false, 0)
	if err != nil || pass.Failed() {
		t.Fatalf("HDFS-4911 seed 2: %v, %v; want a pass", err, pass.Result.Failure)
	}
	if pass.Result.TraceHash != "unhashed" {
		t.Errorf("a passing seed run once kept trace hash %q", pass.Result.TraceHash)
	}
	twice, err := CheckSeedShrinking(2, "HDFS-4911", Options{}, true, 0)
	if err != nil || twice.Failed() {
		t.Fatalf("HDFS-4911 seed 2 twice: %v, %v; want a pass", err, twice.Result.Failure)
	}
	if want := Run(twice.Case, Options{}).TraceHash; twice.Result.TraceHash != want || twice.Result.Events != pass.Result.Events {
		t.Errorf("run twice: hash %q and %d events; want %q and the %d events of the unhashed run", twice.Result.TraceHash, twice.Result.Events, want, pass.Result.Events)
	}
}

// Every catalogued bug is found within 200 seeds, by the property the
// catalogue says, and shrinks to a small failing case that fails the same
// way when run again.
func TestBugsAreCaught(t *testing.T) {
	for _, b := range Bugs {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			for s := uint64(1); s <= 200; s++ {
				o, err := CheckSeed(s, b.Name, Options{}, false)
				if err != nil {
					t.Fatal(err)
				}
				if !o.Failed() {
					continue
				}
				f := o.Result.Failure
				if f.Property != b.Catches {
					t.Errorf("seed %d: caught by %s (%s), want %s", s, f.Property, f.Message, b.Catches)
				}
				sc := o.Case.Schedule
				ops := len(sc.Ops) + len(sc.Probe) + len(sc.Live)
				if ops > o.OriginalOps || len(sc.Faults) > o.OriginalFaults {
					t.Errorf("shrinking grew the case")
				}
				again := Run(o.Case, Options{})
				if again.Failure == nil || again.Failure.Property != f.Property || again.TraceHash != o.Result.TraceHash {
					t.Errorf("the shrunk case does not fail the same way again: %v", again.Failure)
				}
				t.Logf("%s: seed %d, %s; shrunk from %d ops/%d faults to %d/%d in %d runs; %d events",
					b.Name, s, f.Property, o.OriginalOps, o.OriginalFaults, ops, len(sc.Faults), o.ShrinkRuns, o.Result.Events)
				return
			}
			t.Fatalf("%s not found in 200 seeds", b.Name)
		})
	}
}

// request-in-one-read is found only because requests are drawn arriving
// in pieces: with the same cases delivered whole, nothing fails.
func TestRequestInPiecesFindsRequestInOneRead(t *testing.T) {
	found := 0
	for s := uint64(1); s <= 20; s++ {
		c, err := Draw(SeedSource(s), s, "request-in-one-read")
		if err != nil {
			t.Fatal(err)
		}
		if c.Config.FragPiece == 0 {
			t.Fatalf("seed %d: the bug's cases must arrive in pieces", s)
		}
		if Run(c, Options{}).Failure != nil {
			found++
		}
		c.Config.FragPiece, c.Config.FragGap = 0, 0
		if r := Run(c, Options{}); r.Failure != nil {
			t.Errorf("seed %d, requests whole: %s: %s", s, r.Failure.Property, r.Failure.Message)
		}
	}
	if found == 0 {
		t.Fatal("requests in pieces found nothing in 20 seeds")
	}
	t.Logf("requests in pieces: %d of 20 seeds fail", found)
}

// Without a bug a failure-free seed stays unchanged by Shrink.
func TestShrinkLeavesPassingCase(t *testing.T) {
	c, _ := Draw(SeedSource(3), 3, "")
	r := Run(c, Options{})
	got, _, runs := Shrink(c, r, 10, Options{})
	if runs != 0 || len(got.Schedule.Ops) != len(c.Schedule.Ops) {
		t.Fatalf("shrink ran %d times on a passing case", runs)
	}
}

// A sequence's gaps add up per worker for workload ops and per client
// for probes: nine minutes of gaps on one worker are refused, the same
// split over two workers of a client pass, and so do two clients'
// minutes of probes, where two minutes on one client are refused.
func TestCaseValidateGapsBySequence(t *testing.T) {
	base, _ := Draw(SeedSource(5), 5, "")
	base.Config.Clients, base.Config.ClientWorkers = 2, 2
	base.Schedule = Schedule{}
	gaps := func(client, worker int, n int, gap time.Duration) []Op {
		var ops []Op
		for range n {
			ops = append(ops, Op{Client: client, Worker: worker, Gap: gap, Kind: OpRead, Block: 1})
		}
		return ops
	}
	for _, tc := range []struct {
		name      string
		ops, prob []Op
		ok        bool
	}{
		{"nine minutes on one worker", gaps(1, 1, 9, time.Minute), nil, false},
		{"nine minutes over two workers", append(gaps(1, 0, 5, time.Minute), gaps(1, 1, 4, time.Minute)...), nil, true},
		{"a minute of probes on each client", nil, append(gaps(0, 0, 1, time.Minute), gaps(1, 0, 1, time.Minute)...), true},
		{"two minutes of probes on one client", nil, append(gaps(1, 0, 1, time.Minute), gaps(1, 1, 1, time.Minute)...), false},
	} {
		c := base
		c.Schedule.Ops, c.Schedule.Probe = tc.ops, tc.prob
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestCaseValidate(t *testing.T) {
	c, _ := Draw(SeedSource(5), 5, "")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Case){
		func(c *Case) { c.Config.Mode = "forked" },
		func(c *Case) { c.Config.Clients = 0 },
		func(c *Case) { c.Schedule.Ops = append(c.Schedule.Ops, Op{Client: 99, Kind: OpRead}) },
		func(c *Case) { c.Schedule.Ops = append(c.Schedule.Ops, Op{Kind: "frob"}) },
		func(c *Case) { c.Schedule.Faults = append(c.Schedule.Faults, Fault{Kind: "meteor"}) },
		func(c *Case) { c.Bug = "HDFS-0" },
		func(c *Case) { c.Config.Timeout = 0 },
	}
	for i, f := range bad {
		d := c
		d.Schedule = cloneSchedule(c.Schedule)
		f(&d)
		if d.Validate() == nil {
			t.Errorf("bad case %d validated", i)
		}
		if r := Run(d, Options{}); r.Failure == nil || r.Failure.Property != PropHarness {
			t.Errorf("bad case %d ran: %v", i, r.Failure)
		}
	}
}
