package properties

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// Drawn scenario cases pass on the correct code, and every scenario is
// drawn.
func TestScenarioSeedsPass(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 20
	}
	drawn := map[string]int{}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c, err := DrawScenario(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		drawn[c.Scenario]++
		if r := RunScenario(c); r.Property != "" {
			t.Errorf("seed %d (%s): %s: %s", seed, c.Scenario, r.Property, r.Message)
		}
	}
	for _, s := range Scenarios {
		if drawn[s] == 0 {
			t.Errorf("%d seeds drew no %s case", n, s)
		}
	}
}

// Cases Draw never makes but Validate allows pass on the correct code:
// tcp-pattern's replies up to the 1 MiB bound (with more than 200,000
// bytes the last op's read ran past the clock the run ended on, and
// report failed).
func TestScenarioValidCasesBeyondDrawPass(t *testing.T) {
	for _, reply := range []int{300_000, 1 << 20} {
		c := ScenarioCase{Scenario: ScenarioTCPPattern, Seed: 1, Ops: 20, Writes: 2, Msg: 100, Reply: reply}
		if err := c.Validate(); err != nil {
			t.Fatalf("reply %d: %v", reply, err)
		}
		if r := RunScenario(c); r.Property != "" {
			t.Errorf("reply %d: %s: %s", reply, r.Property, r.Message)
		}
	}
}

// Each planted scenario bug fails its property within 20 seeds; the
// shrunk case passes with the bug off, so the check caught the bug and
// nothing else.
func TestScenarioBugsFound(t *testing.T) {
	for _, b := range ScenarioBugs {
		found := false
		for seed := uint64(1); seed <= 20 && !found; seed++ {
			c, r, err := CheckScenarioSeed(seed, b.Name, ShrinkBudget)
			if err != nil {
				t.Fatal(err)
			}
			if r.Property == "" {
				continue
			}
			found = true
			if r.Property != b.Catches {
				t.Errorf("%s: seed %d fails %s (%s), the catalogue says %s", b.Name, seed, r.Property, r.Message, b.Catches)
			}
			c.Bug = ""
			if fixed := RunScenario(c); fixed.Property != "" {
				t.Errorf("%s: the shrunk case fails without the bug: %s: %s", b.Name, fixed.Property, fixed.Message)
			}
		}
		if !found {
			t.Errorf("%s: not found in 20 seeds", b.Name)
		}
	}
}

// Two runs of a case give the same events.
func TestScenarioDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		c, _ := DrawScenario(SeedSource(seed), seed, "")
		a, b := RunScenario(c), RunScenario(c)
		if a.TraceHash != b.TraceHash || a.Events != b.Events {
			t.Errorf("seed %d (%s): %d events %s, then %d events %s", seed, c.Scenario, a.Events, a.TraceHash, b.Events, b.TraceHash)
		}
	}
}

// A scenario case read from a trace is validated; whatever passes
// validation runs without a panic or a hang.
func FuzzScenarioCase(f *testing.F) {
	f.Add([]byte(`{"seed":1,"bug":"read-no-close","scenario":"read","clients":1,"ops":1,"read_size":2897,"blocks":1,"block_size":4096,"pattern":"sequential","server":"threaded","nodelay":true,"keepalive":2944293000,"pool_max":64,"cache_capacity":4,"cache_expiry":3454446000}`))
	f.Add([]byte(`{"seed":4,"scenario":"tcp-pattern","ops":3,"writes":2,"msg":8,"reply":4096}`))
	f.Add([]byte(`{"seed":2,"scenario":"rpc","clients":1,"threads":1,"readers":1,"handlers":1,"lock":"mutex","fanout":1,"files":1,"block_size":1,"reads":1,"duration":2000000}`))
	f.Add([]byte(`{"seed":3,"scenario":"nfs","clients":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c ScenarioCase
		if json.Unmarshal(b, &c) != nil || c.Validate() != nil || c.Clients > 4 || c.Ops > 20 || c.BlockSize > 64<<10 ||
			c.Reply > 64<<10 || c.Msg > 64<<10 || c.Writes > 8 || c.Threads > 4 || c.Duration > 10e6 || c.Blocks > 4 {
			return
		}
		RunScenario(c)
	})
}

// sc-read's readers over the domain socket (uds), connecting at once to
// an accept queue that holds two (Backlog 1), find it full and retry
// their connects; every read must still be done. Until the draw gave
// sc-read a backlog, no check seed reached the client's retry (mutant
// 09a6efd450, a retry that ended the op as if its client had closed,
// survived 20,000 seeds; it now fails this case, and check within 112
// scenario seeds). The retries are counted, so the case shows it still
// reaches them; with the default queue there are none.
func TestSCReadRetriesFullAcceptQueue(t *testing.T) {
	c := ScenarioCase{Scenario: ScenarioSCRead, Seed: 1, Path: "uds", Clients: 4, Ops: 3, Blocks: 1, BlockSize: 4 << 10,
		ReadSize: 1 << 10, Pattern: "random", Shards: 1, CacheCapacity: 1, Backlog: 1}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if r := RunScenario(c); r.Property != "" {
		t.Fatalf("%s: %s", r.Property, r.Message)
	}
	for _, backlog := range []int{1, 0} {
		c.Backlog = backlog
		res, err := shortcircuit.RunRead(sim.New(sim.DefaultConfig(1)), c.scRead(), scenarioLimit)
		switch {
		case err != nil:
			t.Fatalf("backlog %d: %v", backlog, err)
		case res.Errors > 0 || res.Ops != c.Clients*c.Ops:
			t.Errorf("backlog %d: %d reads done, %d failed (%s)", backlog, res.Ops, res.Errors, res.FirstError)
		case backlog == 1 && res.DialRetries == 0:
			t.Errorf("backlog 1: no connect retried: the readers no longer meet a full accept queue")
		case backlog == 0 && res.DialRetries > 0:
			t.Errorf("default backlog: %d connects retried", res.DialRetries)
		}
	}
}

// A case's bug belongs to its scenario; a trace naming another's is
// refused, and the error names the bug before the scenarios.
func TestScenarioCaseRefusesAnotherScenariosBug(t *testing.T) {
	b := ScenarioBugs[0]
	other := Scenarios[0]
	if other == b.Scenario {
		other = Scenarios[1]
	}
	c := ScenarioCase{Scenario: other, Bug: b.Name}
	want := fmt.Sprintf("scenario case: bug %s is in scenario %s, not %s", b.Name, b.Scenario, other)
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("bug %s in scenario %s: %v, want %q", b.Name, other, err, want)
	}
}

// The read scenario's report is checked figure by figure against what the
// clients and the datanode did: a report wrong in any one of them fails
// the run, as the figure's property (the report, or leak-freedom for the
// fds left at the end).
func TestReadReportCheckedFigureByFigure(t *testing.T) {
	var c ScenarioCase
	for s := uint64(1); c.Scenario == ""; s++ {
		if s > 1000 {
			t.Fatal("no read scenario with two clients or more in seeds 1-1000")
		}
		d, err := DrawScenario(SeedSource(s), s, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.Scenario == ScenarioRead && d.Clients > 1 {
			c = d
		}
	}
	if r := runScenarioTampered(c, nil, unhashed, nil); r.Property != "" {
		t.Fatalf("seed %d as drawn: %s: %s", c.Seed, r.Property, r.Message)
	}
	for _, tc := range []struct {
		name   string
		prop   string
		tamper func(*model.ReadResult)
	}{
		{"ops", PropReport, func(r *model.ReadResult) { r.Ops++ }},
		{"errors", PropReport, func(r *model.ReadResult) { r.Errors++ }},
		{"bytes read", PropReport, func(r *model.ReadResult) { r.BytesRead++ }},
		{"elapsed", PropReport, func(r *model.ReadResult) { r.Elapsed++ }},
		{"latencies", PropReport, func(r *model.ReadResult) { r.Latencies = model.LatencyLog{} }},
		{"a latency more", PropReport, func(r *model.ReadResult) { r.Latencies.Add(time.Millisecond) }},
		{"latencies folded", PropReport, func(r *model.ReadResult) {
			for range 5000 {
				r.Latencies.Add(time.Millisecond)
			}
		}},
		{"client dials", PropReport, func(r *model.ReadResult) { r.ClientStats.Dials++ }},
		{"datanode ops", PropReport, func(r *model.ReadResult) { r.Server.Ops++ }},
		{"peak block files", PropReport, func(r *model.ReadResult) { r.PeakBlockFiles++ }},
		{"connections at the end", PropReport, func(r *model.ReadResult) { r.ServerEndConns++ }},
		{"buffers at the end", PropReport, func(r *model.ReadResult) { r.ServerEndBufs++ }},
		{"handles at the end", PropReport, func(r *model.ReadResult) { r.ServerEndHandles++ }},
		{"peak fds", PropReport, func(r *model.ReadResult) { r.ServerPeakFDs++ }},
		{"fds at the end", PropReport, func(r *model.ReadResult) { r.ServerEndFDs++ }},
		{"peak threads", PropReport, func(r *model.ReadResult) { r.ServerPeakThr++ }},
		{"baseline fds", PropLeakFree, func(r *model.ReadResult) { r.ServerBaselineFDs++ }},
	} {
		r := runScenarioTampered(c, nil, unhashed, tc.tamper)
		if r.Property != tc.prop {
			t.Errorf("a report with %s one off: %q (%s), want a %s failure", tc.name, r.Property, r.Message, tc.prop)
		}
	}
}

// tcp-pattern's report goes through its latencies one by one: a log that
// folded them into buckets lists none, so it fails the report rather than
// pass with nothing to check. (Check's runs, 100 ops at most, are far
// from folding.)
func TestPatternReportWantsEveryLatencyListed(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{10, ""}, {5000, PropReport}} {
		w := sim.New(sim.DefaultConfig(1))
		w.RunFor(time.Minute) // the ops' latencies add up to less than the run
		var log model.LatencyLog
		for range c.n {
			log.Add(time.Microsecond)
		}
		r := &scenarioRun{c: &ScenarioCase{Scenario: ScenarioTCPPattern}, w: w}
		if r.checkPatternReport(&log); r.prop != c.want {
			t.Errorf("a log of %d latencies (exact %v): %q (%s), want %q", c.n, log.Exact(), r.prop, r.msg, c.want)
		}
	}
}

// A probe named by a number ("cores 1024", "queue -1") sets a field to
// that number: a probe at a bound that set one less would pass a model
// that refuses the bound itself.
func TestConfigProbesSetTheNumberTheyName(t *testing.T) {
	ints := func(v reflect.Value) map[int64]bool {
		found := map[int64]bool{}
		var walk func(reflect.Value)
		walk = func(v reflect.Value) {
			switch v.Kind() {
			case reflect.Struct:
				for i := range v.NumField() {
					walk(v.Field(i))
				}
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				found[v.Int()] = true
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				found[int64(v.Uint())] = true
			}
		}
		walk(v)
		return found
	}
	// edited is the numbers in a zero value of what edit edits, edited.
	edited := func(edit any) map[int64]bool {
		f := reflect.ValueOf(edit)
		v := reflect.New(f.Type().In(0).Elem())
		f.Call([]reflect.Value{v})
		return ints(v.Elem())
	}
	named := regexp.MustCompile(`^[a-z ]+ (-?[0-9]+)$`)
	probes := 0
	for _, p := range scenarioConfigProbes {
		m := named.FindStringSubmatch(p.name)
		if m == nil {
			continue
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		for _, edit := range []any{p.read, p.pat, p.par, p.pairs, p.rpc, p.sc} {
			if reflect.ValueOf(edit).IsNil() {
				continue
			}
			probes++
			if !edited(edit)[n] {
				t.Errorf("probe %q sets no field to %d", p.name, n)
			}
		}
	}
	if probes < 60 {
		t.Errorf("%d probes named by a number: want more", probes)
	}
}

// The rpc tree's probes make a tree of the size they name, at the bound
// and one past it, whatever fanout and depth the case drew: a past probe
// that also set a depth of 1 would make its tree fanout times too big,
// and pass a bound off by up to that much.
func TestRPCTreeProbesStraddleTheBound(t *testing.T) {
	want := map[string]int{"files 2^20": namespace.MaxFiles, "files 2^20 + 1": namespace.MaxFiles + 1, "files 4^10": namespace.MaxFiles}
	for _, p := range scenarioConfigProbes {
		n, ok := want[p.name]
		if !ok {
			continue
		}
		delete(want, p.name)
		s := namespace.Scenario{Fanout: 3, Depth: 2, Files: 2}
		p.rpc(&s)
		files := s.Files
		for range s.Depth {
			files *= s.Fanout
		}
		if files != n || p.ok != (n == namespace.MaxFiles) {
			t.Errorf("probe %q makes a tree of %d files (ok %v): want %d", p.name, files, p.ok, n)
		}
	}
	for name := range want {
		t.Errorf("no probe %q", name)
	}
}

// A probe of a bound wants its value accepted at the bound and refused,
// with an error naming it, past it; anything else is what it reports.
func TestConfigProbeVerdicts(t *testing.T) {
	at := configProbe{name: "ops 1", ok: true}
	past := configProbe{name: "ops 0", says: "--ops 0:"}
	for _, tc := range []struct {
		p    configProbe
		err  error
		want string
	}{
		{at, nil, ""},
		{at, errors.New("--ops 1: too few"), `ops 1 refused at its bound: --ops 1: too few`},
		{past, errors.New("--ops 0: want at least 1"), ""},
		{past, nil, "ops 0 accepted"},
		{past, errors.New("bad ops"), `ops 0 refused with "bad ops", which does not say "--ops 0:"`},
	} {
		if got := tc.p.wrong(tc.err); got != tc.want {
			t.Errorf("%s given %v: %q, want %q", tc.p.name, tc.err, got, tc.want)
		}
	}
}
