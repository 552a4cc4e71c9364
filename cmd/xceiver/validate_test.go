package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

// validate --profile measured (or --calibrate) measures the machine
// first, which takes calibrate's seconds; this package's tests of
// validate get the embedded profile from that step instead, written to a
// file as calibrate's would be. TestValidateProfileFlag checks the step
// is taken, and taken only then.
func init() {
	measureProfile = embeddedProfileFile
}

func embeddedProfileFile() (string, func(), error) {
	f, err := os.CreateTemp("", "xceiver-test-profile-*.json")
	if err != nil {
		return "", nil, err
	}
	b, _ := json.Marshal(sim.DefaultProfile())
	_, err = f.Write(b)
	f.Close()
	return f.Name(), func() { os.Remove(f.Name()) }, err
}

// By default validate simulates the embedded profile; --profile measured
// and --calibrate measure the machine first, --profile FILE loads the
// file, and the JSON says which profile the sims had.
func TestValidateProfileFlag(t *testing.T) {
	measured := 0
	measureProfile = func() (string, func(), error) {
		measured++
		return embeddedProfileFile()
	}
	defer func() { measureProfile = embeddedProfileFile }()
	file, cleanup, err := embeddedProfileFile()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	for _, c := range []struct {
		args    []string
		profile string
		times   int
	}{
		{nil, "embedded", 0},
		{[]string{"--calibrate"}, "measured", 1},
		{[]string{"--calibrate", "--profile", "measured"}, "measured", 1},
		{[]string{"--profile", "measured"}, "measured", 1},
		{[]string{"--profile", "embedded"}, "embedded", 0},
		{[]string{"--profile", file}, file, 0},
	} {
		measured = 0
		var got struct {
			Profile string `json:"profile"`
		}
		args := append([]string{"validate", "--scenario", "tcp-nodelay", "--host-steal", "0", "--json"}, c.args...)
		if code, stderr := cliJSON(t, &got, args...); code != exitOK && code != exitFail {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		if measured != c.times || got.Profile != c.profile {
			t.Errorf("%v: measured %d times, profile %q; want %d and %q", c.args, measured, got.Profile, c.times, c.profile)
		}
	}
}

func TestMedianResultIsPerNumericField(t *testing.T) {
	runs := []result{
		{{"world", "real"}, {"p50_us", 90.0}, {"ops", 400}, {"trace_hash", nil}},
		{{"world", "real"}, {"p50_us", 70.0}, {"ops", 400}, {"trace_hash", nil}},
		{{"world", "real"}, {"p50_us", 200.0}, {"ops", 401}, {"trace_hash", nil}},
	}
	m := medianResult(runs)
	if got := num(m, "p50_us"); got != 90 {
		t.Errorf("p50_us median of 90, 70, 200 = %v, want 90", got)
	}
	if got := num(m, "ops"); got != 400 {
		t.Errorf("ops median = %v, want 400", got)
	}
	if m.get("world") != "real" || m.get("trace_hash") != nil {
		t.Errorf("non-numeric fields changed: %v", m)
	}
	if got := num(medianResult(runs[:2]), "p50_us"); got != 80 {
		t.Errorf("median of two (90, 70) = %v, want their mean 80", got)
	}
}

func TestCompareRepeatsJudgesTheMedianAndShowsTheSpread(t *testing.T) {
	c := check{
		runs: []runner{nil},
		rows: func(s, r []result) []row {
			return []row{within("x", "throughput_mbps", num(s[0], "throughput_mbps"), num(r[0], "throughput_mbps"), 0.25)}
		},
		noisy: true,
	}
	// Three seeds: one lucky, the median is the sim's figure.
	sims := [][]result{
		{{{"throughput_mbps", 100.0}}},
		{{{"throughput_mbps", 130.0}}},
		{{{"throughput_mbps", 90.0}}},
	}
	// One slow run of three: alone it is out of tolerance, the median is not.
	reals := [][]result{
		{{{"throughput_mbps", 95.0}}},
		{{{"throughput_mbps", 50.0}}},
		{{{"throughput_mbps", 110.0}}},
	}
	rows := compareRepeats(c, sims, reals)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	if r.Real != 95 || r.RealMin != 50 || r.RealMax != 110 || r.RealRuns != 3 || !r.Pass {
		t.Errorf("row = %+v, want real 95 [50–110] of 3 runs, passing", r)
	}
	if r.Sim != 100 || r.SimMin != 90 || r.SimMax != 130 || r.SimRuns != 3 {
		t.Errorf("row = %+v, want sim 100 [90–130] of 3 seeds", r)
	}
	// The lucky seed alone against the slow run: out, and no spread.
	one := compareRepeats(c, sims[1:2], reals[1:2])[0]
	if one.Pass || one.RealRuns != 0 || one.SimRuns != 0 || one.Sim != 130 {
		t.Errorf("a single slow run: %+v, want out of tolerance and no spread", one)
	}
}

// orderRunner records, in order, which check's run ran in which world,
// and answers with a value of its own: its check's number and the seed.
type orderRunner struct {
	name string
	id   int
	log  *[]string
}

func (r orderRunner) run(w model.World) (result, error) {
	entry := r.name + "/" + w.Kind()
	// A sim run on a host that withholds part of the machine says how
	// much.
	if sw, ok := w.(*sim.World); ok {
		if c := sw.Config().CPU; c.SliceOff > 0 {
			entry += fmt.Sprintf("@%.2f", float64(c.SliceOff)/float64(c.SliceOn+c.SliceOff))
			if c.SliceOff != sim.HostStealGap {
				entry += "/" + c.SliceOff.String()
			}
		}
	}
	*r.log = append(*r.log, entry)
	return result{{"x", 1.0}}, nil
}

// checkOf builds a check of one orderRunner whose row compares, in both
// worlds, id*100 + the seed of the run (runScenario's "seed" field).
func checkOf(name string, id int, noisy bool, log *[]string) check {
	v := func(r result) float64 { return float64(id*100) + num(r, "seed") }
	return check{name: name, desc: name, noisy: noisy, runs: []runner{orderRunner{name, id, log}},
		rows: func(s, r []result) []row { return []row{within(name, "v", v(s[0]), v(r[0]), 0.25)} }}
}

// The repeated checks' real runs go round by round across the checks, so
// a slow stretch of the machine falls on a few repeats of each; their
// sims run after them (so that --host-steal measured can give them what
// the host withheld from the real runs), a check run once keeps its place, real then
// sim, and each check's rows are its own runs' with the seeds of its
// repeats.
func TestValidateInterleavesTheRepeatedChecksRealRuns(t *testing.T) {
	var log []string
	defer func(old func() []check) { validateChecks = old }(validateChecks)
	validateChecks = func() []check {
		return []check{checkOf("a", 1, true, &log), checkOf("once", 2, false, &log), checkOf("b", 3, true, &log)}
	}
	rowsOf := func(args ...string) []row {
		t.Helper()
		log = nil
		var got struct{ Rows []row }
		if code, stderr := cliJSON(t, &got, append([]string{"validate", "--cpu-scale", "1", "--host-steal", "0", "--json"}, args...)...); code != exitOK {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		return got.Rows
	}
	rows := rowsOf("--repeat", "2", "--seed", "5")
	want := []string{"a/real", "b/real", "a/real", "b/real", "a/sim", "a/sim", "b/sim", "b/sim", "once/real", "once/sim"}
	if fmt.Sprint(log) != fmt.Sprint(want) {
		t.Errorf("runs in the order\n%v\nwant\n%v", log, want)
	}
	// Seeds 5 and 6: the median 5.5, from 5 to 6; run once, seed 5.
	for i, w := range []struct {
		name          string
		med, min, max float64
	}{{"a", 105.5, 105, 106}, {"once", 205, 0, 0}, {"b", 305.5, 305, 306}} {
		if i >= len(rows) {
			t.Fatalf("%d rows, want 3", len(rows))
		}
		r := rows[i]
		if r.Scenario != w.name || r.Sim != w.med || r.Real != w.med || r.RealMin != w.min || r.RealMax != w.max || r.SimMin != w.min || r.SimMax != w.max {
			t.Errorf("row %d: %+v, want %s with %v [%v–%v] in both worlds", i, r, w.name, w.med, w.min, w.max)
		}
	}
	// One repeated check alone, and every check once.
	if rows := rowsOf("--scenario", "b", "--repeat", "3", "--seed", "1"); len(rows) != 1 || rows[0].Real != 302 || fmt.Sprint(log) != "[b/real b/real b/real b/sim b/sim b/sim]" {
		t.Errorf("--scenario b --repeat 3: rows %+v, runs %v", rows, log)
	}
	if rows := rowsOf("--repeat", "1", "--seed", "1"); len(rows) != 3 || rows[2].Real != 301 || fmt.Sprint(log) != "[a/real b/real a/sim b/sim once/real once/sim]" {
		t.Errorf("--repeat 1: rows %+v, runs %v", rows, log)
	}
}

// A round of the repeated checks' real runs in which the host withheld
// more than --max-steal of the CPU time wanted runs again, with the same
// seeds, at most maxStealReruns times; rounds kept over the bound once
// those are spent are counted and said. (By default, --max-steal 1, no
// round runs again: a busy host's spells outlast a few rounds.)
func TestValidateRerunsRoundsTheHostStole(t *testing.T) {
	var log []string
	defer func(old func() []check) { validateChecks = old }(validateChecks)
	validateChecks = func() []check {
		return []check{checkOf("a", 1, true, &log), checkOf("once", 2, false, &log), checkOf("b", 3, true, &log)}
	}
	// The host steals until stolenRuns real runs have run: each read
	// (around each run and each check's runs) adds 100 ms busy, and as
	// much stolen while it steals.
	var stolenRuns int
	// stealOnA: the host steals instead while check a's run is the
	// latest (so from a's real runs, not b's, in the same rounds).
	var stealOnA bool
	var host real.HostCPU
	// The slice probe before each round sees gaps of 2 ms, then 4 ms,
	// and so on: the sims get their mean.
	probes := 0
	defer func(old func() time.Duration) { probeGaps = old }(probeGaps)
	probeGaps = func() time.Duration {
		probes++
		return time.Duration(2*probes) * time.Millisecond
	}
	defer func(old func() (real.HostCPU, error)) { readHostCPU = old }(readHostCPU)
	readHostCPU = func() (real.HostCPU, error) {
		reals := 0
		for _, l := range log {
			if strings.HasSuffix(l, "/real") {
				reals++
			}
		}
		host.Busy += 100 * time.Millisecond
		if stealOnA && len(log) > 0 && strings.HasPrefix(log[len(log)-1], "a/") || !stealOnA && reals < stolenRuns {
			host.Steal += 100 * time.Millisecond
		}
		return host, nil
	}
	type out struct {
		Rows        []row
		Steal       *float64 `json:"host_steal_share"`
		SimShare    *float64 `json:"sim_host_steal_share"`
		SimGap      *float64 `json:"sim_host_steal_gap_us"`
		Reruns      int      `json:"steal_reruns"`
		OverSteal   int      `json:"rounds_over_max_steal"`
		realRounds  int
		stderrLines string
	}
	run := func(stolen int, args ...string) out {
		t.Helper()
		log, stolenRuns, probes = nil, stolen, 0
		var got out
		code, stderr := cliJSON(t, &got, append([]string{"validate", "--cpu-scale", "1", "--json", "--repeat", "2", "--seed", "5", "--max-steal", "0.2", "--host-steal", "measured"}, args...)...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		for _, l := range log {
			if l == "a/real" {
				got.realRounds++
			}
		}
		got.stderrLines = stderr
		// The reruns keep each round's seed: the rows are as if none
		// had run again.
		if len(got.Rows) != 3 || got.Rows[0].Real != 105.5 || got.Rows[0].RealMin != 105 || got.Rows[2].Real != 305.5 {
			t.Errorf("stolen %d %q: rows %+v", stolen, args, got.Rows)
		}
		return got
	}
	// Round 1 stolen (its two runs), the rerun and round 2 not: the sims
	// of the kept rounds get the quiet host they had.
	if got := run(2); fmt.Sprint(log) != "[a/real b/real a/real b/real a/real b/real a/sim a/sim b/sim b/sim once/real once/sim]" {
		t.Errorf("one stolen round: runs %v", log)
	} else if got.Reruns != 1 || got.OverSteal != 0 || got.realRounds != 3 || got.Steal == nil || *got.Steal != 0 ||
		!strings.Contains(got.stderrLines, "round 1 of 2 took") || !strings.Contains(got.stderrLines, "(the host withheld 40% of the CPU time wanted), over --max-steal 0.2: running it again") {
		t.Errorf("one stolen round: %d reruns, %d over, %d rounds, steal %v; stderr:\n%s", got.Reruns, got.OverSteal, got.realRounds, got.Steal, got.stderrLines)
	}
	// A host that steals throughout: three reruns, then both rounds kept
	// over the bound, and the table's share is the host's.
	// Five rounds probed (three reruns): gaps of 2 to 10 ms, and the
	// two kept, 8 and 10 ms, 9 ms on average.
	if got := run(1000); !strings.HasSuffix(fmt.Sprint(log), "a/sim@0.50/9ms a/sim@0.50/9ms b/sim@0.50/9ms b/sim@0.50/9ms once/real once/sim@0.50/9ms]") || got.SimShare == nil || *got.SimShare != 0.5 || got.SimGap == nil || *got.SimGap != 9000 {
		t.Errorf("a busy host: the sims did not get its share and gaps (sim_host_steal_share %v, gap %v): %v", got.SimShare, got.SimGap, log)
	} else if got.Reruns != maxStealReruns || got.OverSteal != 2 || got.realRounds != 2+maxStealReruns || got.Steal == nil || *got.Steal != 0.5 {
		t.Errorf("a busy host: %d reruns, %d over, %d rounds, steal %v", got.Reruns, got.OverSteal, got.realRounds, got.Steal)
	}
	// --max-steal 1: never.
	if got := run(1000, "--max-steal", "1"); got.Reruns != 0 || got.OverSteal != 0 || got.realRounds != 2 {
		t.Errorf("--max-steal 1: %d reruns, %d over, %d rounds", got.Reruns, got.OverSteal, got.realRounds)
	}
	// --host-steal S: every sim run's host withholds S, whatever the
	// real host did.
	if run(1000, "--max-steal", "1", "--host-steal", "0.3"); fmt.Sprint(log) != "[a/real b/real a/real b/real a/sim@0.30 a/sim@0.30 b/sim@0.30 b/sim@0.30 once/real once/sim@0.30]" {
		t.Errorf("--host-steal 0.3: runs %v", log)
	}
	// Every sim run gets the share over all the repeated checks' real
	// runs, not its own run's: a's runs had the host's burst, b's in the
	// same rounds did not, and the check run once had none.
	stealOnA = true
	if run(0, "--max-steal", "1"); fmt.Sprint(log) != "[a/real b/real a/real b/real a/sim@0.33/3ms a/sim@0.33/3ms b/sim@0.33/3ms b/sim@0.33/3ms once/real once/sim@0.33/3ms]" {
		t.Errorf("a burst on a's runs: runs %v", log)
	}
	stealOnA = false
	// Without repeated checks, a check's sim gets its own real run's.
	log, stolenRuns, probes = nil, 1000, 0
	var lone out
	if code, stderr := cliJSON(t, &lone, "validate", "--scenario", "once", "--host-steal", "measured", "--json"); code != exitOK || fmt.Sprint(log) != "[once/real once/sim@0.50/2ms]" ||
		lone.SimShare == nil || *lone.SimShare != 0.5 || lone.SimGap == nil || *lone.SimGap != 2000 {
		t.Errorf("--scenario once: exit %d, runs %v, the sims' share %v and gap %v: %s", code, log, lone.SimShare, lone.SimGap, stderr)
	}
	// The machine alone: no host for the sims, and the JSON says so.
	log, stolenRuns, probes = nil, 1000, 0
	if code, _ := cliJSON(t, &lone, "validate", "--scenario", "once", "--host-steal", "0", "--json"); code != exitOK || lone.SimShare != nil || lone.SimGap != nil || probes != 0 {
		t.Errorf("--host-steal 0: exit %d, the sims' share %v and gap %v, %d probes", code, lone.SimShare, lone.SimGap, probes)
	}
	// The text says it under the table.
	log, stolenRuns, probes = nil, 1000, 0
	code, stdout, _ := runCLI("validate", "--repeat", "2", "--max-steal", "0.2", "--host-steal", "measured")
	if want := "the host withheld 50% of the CPU time this machine wanted while the real runs ran (steal, /proc/stat); 3 rounds run again for more than 0.2, and 2 of the 2 kept had more still: the real figures are the host's as much as the model's"; code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d; the table does not say %q:\n%s", code, want, stdout)
	}
	if want := "the sim runs' host withheld 50.0% of the CPU time wanted, what the host withheld from the repeated checks' real runs, in gaps of 9ms (--host-steal measured)"; !strings.Contains(stdout, want) {
		t.Errorf("the table does not say %q:\n%s", want, stdout)
	}
	// With the sim the machine alone (--host-steal 0), under a busy host
	// the table warns that the rows compare it with a shared one; not
	// with a quiet host, nor when the sim got the host's share (the
	// default).
	const warning = "a busy host: the throughput, p50 and cores rows compare the machine alone with one the host shared"
	for _, c := range []struct {
		stolen int
		args   []string
		warn   bool
	}{{1000, []string{"--host-steal", "0"}, true}, {0, []string{"--host-steal", "0"}, false}, {1000, nil, false}} {
		log, stolenRuns = nil, c.stolen
		code, stdout, _ := runCLI(append([]string{"validate", "--repeat", "2"}, c.args...)...)
		if code != exitOK || strings.Contains(stdout, warning) != c.warn {
			t.Errorf("stolen %d %q: exit %d, warned %v, want %v:\n%s", c.stolen, c.args, code, !c.warn, c.warn, stdout)
		}
	}
}

func TestStealNote(t *testing.T) {
	h := real.HostCPU{Busy: 300 * time.Millisecond, Steal: 100 * time.Millisecond}
	if got, want := stealNote(h, true), " (the host withheld 25% of the CPU time wanted)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := stealNote(h, false); got != "" {
		t.Errorf("unknown for some run: got %q, want nothing", got)
	}
	if got := stealNote(real.HostCPU{Busy: 50 * time.Millisecond}, true); got != "" {
		t.Errorf("too little wanted to say: got %q, want nothing", got)
	}
}

// bench's real runs say what the host withheld while they ran.
func TestHostStealDuring(t *testing.T) {
	var host real.HostCPU
	defer func(old func() (real.HostCPU, error)) { readHostCPU = old }(readHostCPU)
	readHostCPU = func() (real.HostCPU, error) { return host, nil }
	got, err := hostStealDuring(func() error {
		host = host.Add(real.HostCPU{Busy: 3 * time.Second, Steal: time.Second})
		return nil
	})
	if err != nil || got == nil || *got != 0.25 {
		t.Errorf("got %v, %v; want 0.25", got, err)
	}
	// Too little wanted to say, and a failed run's error.
	if got, err := hostStealDuring(func() error { return nil }); got != nil || err != nil {
		t.Errorf("nothing wanted: got %v, %v; want nil", got, err)
	}
	boom := fmt.Errorf("boom")
	if _, err := hostStealDuring(func() error { return boom }); err != boom {
		t.Errorf("got %v, want the run's error", err)
	}
	readHostCPU = func() (real.HostCPU, error) { return real.HostCPU{}, fmt.Errorf("no /proc") }
	if got, err := hostStealDuring(func() error { return nil }); got != nil || err != nil {
		t.Errorf("no /proc/stat: got %v, %v; want nil", got, err)
	}
}

// After the table, validate says whose costs the sim ran, and, when rows
// are out under the embedded profile (another machine's costs), which
// flags compare this machine with itself.
func TestValidateCostsNote(t *testing.T) {
	for _, c := range []struct {
		auto    bool
		scale   float64
		failed  int
		profile string
		want    string // a part of the note; "" for none
	}{
		{false, 1, 0, profileEmbedded, ""},
		{false, 1, 3, profileEmbedded, "--cpu-scale auto scales them to this machine, --calibrate measures its own"},
		{false, 1, 3, profileMeasured, ""},
		{false, 1, 3, "my.profile", ""},
		{true, 0.6, 3, profileEmbedded, "× 0.6 (--cpu-scale auto"},
		{false, 2, 0, profileEmbedded, "× 2 (--cpu-scale)"},
	} {
		got := costsNote(c.auto, c.scale, c.failed, c.profile)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("auto %v, scale %v, %d out, profile %s: %q, want %q", c.auto, c.scale, c.failed, c.profile, got, c.want)
		}
	}
}
