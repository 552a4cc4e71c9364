package properties

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
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

// Seeds a sweep failed on the harness, not the datanode. 4209: three
// users flood the domain socket, filling the cap with connections too
// young to close, and a rogue held 1 ms that sent a bad version got its
// refusal only once the oldest ripened; a rogue's unanswered request now
// has the probe's bound (scProbeBound) before it is judged. 948842326:
// two users flood the domain socket together, filling the cap 0.35 ms
// after they began, and a reader with a 2 ms timeout connecting then had
// its read go over TCP (local-reads) while the oldest connections were
// still too young to close; rogue users are no longer drawn with a
// timeout within scProbeBound (drawSCRogueUsers).
func TestShortCircuitRegressionSeeds(t *testing.T) {
	for _, seed := range []uint64{4209, 948842326} {
		c, err := DrawSC(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		if r := RunSC(c); r.Property != "" {
			t.Errorf("seed %d: %s: %s", seed, r.Property, r.Message)
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

// check's seeds 24470 and 43776 failed linearizability ("stale read")
// on correct code: a replace sent as the datanode crashed was lost with
// it (its effect unknown to the writer), an append after the restart grew
// the old contents, and a read of them was called stale because the
// harness had grown the lost replace's contents only.
// testdata/sc-lost-replace-append-cases.json holds both shrunk cases
// (replace, crash, append, read); they must pass, with the same events
// (pinned again whenever the model changes a run on purpose: last, the
// checks at rest, which now read the shared counters under their lock).
func TestSCAppendAfterLostReplace(t *testing.T) {
	b, err := os.ReadFile("testdata/sc-lost-replace-append-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []SCCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]string{24470: "107760bd5981045a", 43776: "50a1878756b8353a"}
	for _, c := range cases {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		r := RunSC(c)
		t.Logf("seed %d: %d events, hash %s", c.Seed, r.Events, r.TraceHash)
		if r.Property != "" {
			t.Errorf("seed %d: %s: %s", c.Seed, r.Property, r.Message)
		}
		if h, ok := want[c.Seed]; ok && r.TraceHash != h {
			t.Errorf("seed %d: trace hash %s, want %s (the run itself must not change)", c.Seed, r.TraceHash, h)
		}
	}
}

// An append after a change of unknown effect may have grown the contents
// before that change or after it, and nothing else: a read after the
// append may see either, never the contents without the append.
func TestSCAppendedBases(t *testing.T) {
	ms := time.Millisecond
	orig, lost, tail := []byte("orig"), []byte("lost"), []byte("+t")
	vs := []scVersion{
		{data: orig},
		{start: 1 * ms, end: 1 << 62, data: lost}, // sent, then the datanode crashed
	}
	grown, also := scAppended(vs, 5*ms, tail)
	if string(grown) != "lost+t" || len(also) != 1 || string(also[0]) != "orig+t" {
		t.Fatalf("append after a lost replace: %q, also %q; want \"lost+t\", also [\"orig+t\"]", grown, also)
	}
	vs = append(vs, scVersion{start: 5 * ms, end: 6 * ms, data: grown, also: also})
	var got []string
	for _, d := range scAllowed(vs, 7*ms, 8*ms) {
		got = append(got, string(d))
	}
	slices.Sort(got)
	if want := []string{"lost", "lost+t", "orig+t"}; !slices.Equal(got, want) {
		t.Errorf("a read after the append may return %q, want %q", got, want)
	}
	// With every change known there is one base, as before.
	if grown, also := scAppended(vs[:1], 5*ms, tail); string(grown) != "orig+t" || also != nil {
		t.Errorf("append after known changes: %q, also %q; want \"orig+t\" alone", grown, also)
	}
}

// check's seed 13732 failed linearizability ("stale read") on correct
// code: a read of block 2 returned the contents of a replace that was
// still in flight (it applied, then its answer came 8µs after the read
// ended), and the harness checked the read at once, against the changes
// that had returned. testdata/sc-read-during-change-case.json is the
// shrunk case; it must pass, with the same events. (Shrunk again when the
// datanode stopped charging a checksum it does not compute on reads: the
// old case no longer raced; and again, from seed 4502, when the datanode
// got scDatanodeFDs, whose squeeze of 8 ms opens half the files: seed
// 13732's case no longer raced. The harness without the wait for changes
// in flight fails this one: read 12 of block 1, stale.)
func TestSCReadDuringChange(t *testing.T) {
	b, err := os.ReadFile("testdata/sc-read-during-change-case.json")
	if err != nil {
		t.Fatal(err)
	}
	var c SCCase
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r := RunSC(c)
	if r.Property != "" {
		t.Errorf("%s: %s", r.Property, r.Message)
	}
	if r.Events != 8238 || r.TraceHash != "6c077a970af21d1a" {
		t.Errorf("%d events, hash %s; want 8238, 6c077a970af21d1a (the run itself must not change)", r.Events, r.TraceHash)
	}
}

// A hung datanode (a pause of seconds): the readers' domain-socket
// exchanges time out and the reads end within scReadBound timeouts, and
// the datanode, running again, answers readers that are gone; the case
// passes, nothing leaked. (Before the pauses no exchange ever timed out:
// the timeout was a minute.)
func TestSCHangTimesOutExchanges(t *testing.T) {
	cases, timeouts, lateAnswers := 0, 0, 0
	for seed := uint64(1); seed <= 2000 && cases < 5; seed++ {
		c, err := DrawSC(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(c.Ops, func(op SCOp) bool { return op.Op == "pause" && op.Hold >= time.Second }) {
			continue
		}
		cases++
		var b strings.Builder
		if r := RunSCTraced(c, &b); r.Property != "" {
			t.Errorf("seed %d: %s: %s", seed, r.Property, r.Message)
		}
		timeouts += strings.Count(b.String(), "no answer for")
		lateAnswers += strings.Count(b.String(), "sc-send-error")
	}
	t.Logf("%d hung cases: %d exchange timeouts, %d late answers", cases, timeouts, lateAnswers)
	if cases < 5 || timeouts == 0 || lateAnswers == 0 {
		t.Errorf("%d hung cases: %d exchanges timed out, %d late answers to gone readers; want 5 cases and some of each", cases, timeouts, lateAnswers)
	}
}

// An idle-read has the datanode close the domain connection each reader
// cached, so that the reader's next fd request meets it closed and asks
// again on a fresh one (the dead cached socket of HDFS's peer cache): a
// read of block 1 caches the connection of its fd request, and the
// idle-read of block 2 redials once. Without the close it would reuse
// the connection, and the case would not reach the retry at all.
func TestSCIdleReadRedials(t *testing.T) {
	c := SCCase{Seed: 1, Shards: 1, Capacity: 4, Readers: 1, Ops: []SCOp{
		{Op: "read", Block: 1},
		{Gap: time.Millisecond, Op: "idle-read", Block: 2},
	}}
	r := passingSC(t, c)
	if r.Readers.Redials != 1 || r.Readers.LocalReads != 2 {
		t.Errorf("%d fd requests asked again, %d reads local; want 1 and 2", r.Readers.Redials, r.Readers.LocalReads)
	}
}

// A reset armed while a read is in flight, with short-circuit due back
// when it began, fences that read out of local-reads' "due back" like
// one begun before: check seed 920053640 (--system sc), shrunk. Read 3
// began due back; the reset armed next reset its fd request, and its
// retry met the next reset; read 7 began after that reset had fired,
// with read 3 still in flight and its failure not yet heard, then found
// the path off that failure had turned off, and went over TCP, rightly.
func TestSCResetDuringADueBackReadFencesIt(t *testing.T) {
	c := SCCase{Seed: 920053640, Shards: 2, Capacity: 2, Expiry: 21 * time.Millisecond, Backlog: 1, Readers: 1, Ops: []SCOp{
		{Gap: 2363 * time.Microsecond, Op: "read", Block: 1, Off: 475},
		{Gap: 2490 * time.Microsecond, Op: "read", Block: 3, Off: 1825},
		{Op: "reset", Block: 1, After: true},
		{Gap: 2884 * time.Microsecond, Op: "read", Block: 2, Off: 2033},
		{Op: "reset", Block: 1},
		{Op: "rogue", Block: 1, Hold: 7 * time.Millisecond, Rogue: "pipelined"},
		{Op: "reset", Block: 1},
		{Op: "idle-read", Block: 1, Off: 1322},
	}}
	r := passingSC(t, c)
	if r.Readers.Fallbacks != 1 || r.Readers.TCPReads != 2 {
		t.Errorf("%d fallbacks, %d reads over TCP; want 1 and 2 (the reset read's and the idle-read's): the case no longer reaches the race", r.Readers.Fallbacks, r.Readers.TCPReads)
	}
}

// passingSC runs a valid case c that must pass every property.
func passingSC(t *testing.T, c SCCase) *SCResult {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r := RunSC(c)
	if r.Property != "" {
		t.Fatalf("%s: %s", r.Property, r.Message)
	}
	return r
}

// A hand-written case with rogues that fill the cap together beside
// readers whose timeout is within scProbeBound is refused, as the draws
// never make one (drawSCRogueUsers, drawSCTCPFlood): its reads may rightly
// fall back while they wait. One user's flood, or drips, may have it.
func TestSCCaseRefusesCapFillersWithShortTimeout(t *testing.T) {
	for _, tc := range []struct {
		rogue   string
		user    int
		timeout time.Duration
		refused bool
	}{
		{"flood", 1, 2 * time.Millisecond, true},
		{"squat", 2, scProbeBound, true},
		{"tcp-flood", 0, 3 * time.Millisecond, true},
		{"flood", 1, scProbeBound + time.Millisecond, false},
		{"flood", 0, 2 * time.Millisecond, false},
		{"flood", 1, 0, false},
	} {
		c := SCCase{Seed: 1, Shards: 1, Capacity: 1, Readers: 1, Timeout: tc.timeout,
			Ops: []SCOp{{Op: "rogue", Block: 1, Rogue: tc.rogue, User: tc.user, Hold: 5 * time.Millisecond}}}
		err := c.Validate()
		if (err != nil) != tc.refused || err != nil && !strings.Contains(err.Error(), "scProbeBound") {
			t.Errorf("%s by user %d, timeout %v: %v; refused want %v", tc.rogue, tc.user, tc.timeout, err, tc.refused)
		}
	}
	// Every drawn case is valid (DrawSC returns Validate's error).
	for seed := uint64(1); seed <= 2000; seed++ {
		if _, err := DrawSC(SeedSource(seed), seed, ""); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// ShrinkSC leaves no op to spare: with any one op of the shrunk case
// removed, the case no longer fails the same property (given the budget,
// which these cases do not use up).
func TestShrinkSCLeavesNoOpToSpare(t *testing.T) {
	for _, e := range []struct {
		bug  string
		seed uint64
	}{{"HDFS-7915", 3}, {"sc-local-unverified", 5}} {
		c, r, err := CheckSCSeed(e.seed, e.bug, 400)
		if err != nil {
			t.Fatal(err)
		}
		if r.Property == "" {
			t.Fatalf("%s seed %d: passed, want a failure to shrink", e.bug, e.seed)
		}
		for i := range c.Ops {
			cand := c
			cand.Ops = append(append([]SCOp(nil), c.Ops[:i]...), c.Ops[i+1:]...)
			if cr := RunSC(cand); cr.Property == r.Property {
				t.Errorf("%s seed %d, shrunk to %d ops: without op %d (%s) it still fails %s", e.bug, e.seed, len(c.Ops), i, c.Ops[i].Op, r.Property)
			}
		}
	}
}
