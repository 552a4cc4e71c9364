package main

import (
	"fmt"
	"testing"

	"xceiver/model"
)

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
	*r.log = append(*r.log, r.name+"/"+w.Kind())
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
// sims run first, a check run once keeps its place, and each check's
// rows are its own runs' with the seeds of its repeats.
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
		if code, stderr := cliJSON(t, &got, append([]string{"validate", "--cpu-scale", "1", "--json"}, args...)...); code != exitOK {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		return got.Rows
	}
	rows := rowsOf("--repeat", "2", "--seed", "5")
	want := []string{"a/sim", "a/sim", "b/sim", "b/sim", "a/real", "b/real", "a/real", "b/real", "once/sim", "once/real"}
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
	if rows := rowsOf("--scenario", "b", "--repeat", "3", "--seed", "1"); len(rows) != 1 || rows[0].Real != 302 || fmt.Sprint(log) != "[b/sim b/sim b/sim b/real b/real b/real]" {
		t.Errorf("--scenario b --repeat 3: rows %+v, runs %v", rows, log)
	}
	if rows := rowsOf("--repeat", "1", "--seed", "1"); len(rows) != 3 || rows[2].Real != 301 || fmt.Sprint(log) != "[a/sim b/sim a/real b/real once/sim once/real]" {
		t.Errorf("--repeat 1: rows %+v, runs %v", rows, log)
	}
}
