package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"xceiver/mutation"
)

func TestMutateBadUsageIsOneLineAndExit2(t *testing.T) {
	cases := [][]string{
		{"mutate", "--seeds", "0"},
		{"mutate", "--parallel", "0"},
		{"mutate", "--shard", "3/2"},
		{"mutate", "--shard", "half"},
		{"mutate", "--sample", "-1"},
		{"mutate", "--timeout", "-1s"},
		{"mutate", "--operators", "negate,bogus"},
		{"mutate", "--system", "bogus"},
		{"mutate", "--list", "--system", "sc"},
		{"mutate", "--packages", "no/such/dir"},
		{"mutate", "--packages", ""},
		{"mutate", "--equivalent", "/no/such/file"},
		{"mutate", "--test-packages", "no/such/dir"},
		{"mutate", "--test-packages", " "},
		{"mutate", "--list", "--test-packages", "sim"},
		{"mutate", "--no-such-flag"},
		{"mutate", "extra-arg"},
	}
	for _, args := range cases {
		code, _, stderr := runCLI(args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
			t.Errorf("%q: error is not one line: %q", args, stderr)
		}
	}
}

// --list enumerates and samples without building anything: the same
// sample twice, the size asked for, each with its diff.
func TestMutateListIsDeterministic(t *testing.T) {
	args := []string{"mutate", "--list", "--json", "--sample", "5", "--seed", "3", "--operators", "negate,swap-args"}
	code, out1, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, out2, _ := runCLI(args...)
	if out1 != out2 {
		t.Errorf("two listings differ:\n%s\n%s", out1, out2)
	}
	var ms []struct {
		ID, File, Operator, Diff string
		Line                     int
	}
	if err := json.Unmarshal([]byte(out1), &ms); err != nil {
		t.Fatalf("not JSON: %v: %s", err, out1)
	}
	if len(ms) != 5 {
		t.Fatalf("%d mutants, want 5", len(ms))
	}
	for _, m := range ms {
		if (m.Operator != "negate" && m.Operator != "swap-args") || !strings.HasPrefix(m.File, "model/") || m.Line < 1 ||
			!strings.Contains(m.Diff, "- "+m.File) || !strings.Contains(m.Diff, "+ "+m.File) || len(m.ID) != 10 {
			t.Errorf("mutant %+v", m)
		}
	}
}

// --max-failures 1 --no-shrink (what mutate runs) stops at the first
// failing seed and does not shrink it.
func TestCheckNoShrink(t *testing.T) {
	code, stdout, stderr := runCLI("check", "--bug", "stale-handle", "--seeds", "200", "--parallel", "1", "--max-failures", "1", "--no-shrink", "--json", "--out", t.TempDir())
	if code != exitFail {
		t.Fatalf("exit %d, want 1: %s%s", code, stdout, stderr)
	}
	var got struct {
		Seeds, Passed, Failed int
		Failures              []struct {
			Seed       uint64
			ShrinkRuns int `json:"shrink_runs"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Failed != 1 || len(got.Failures) != 1 || got.Failures[0].ShrinkRuns != 0 || got.Passed+got.Failed >= got.Seeds {
		t.Errorf("want one unshrunk failure, and a stop there: %+v", got)
	}
}

func TestWilsonInterval(t *testing.T) {
	// Known values: 90 of 100 gives [0.826, 0.945]; 0 of 10 [0, 0.278].
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{{90, 100, 0.8256, 0.9448}, {0, 10, 0, 0.2775}, {10, 10, 0.7225, 1}} {
		lo, hi := wilson(tc.k, tc.n)
		if math.Abs(lo-tc.lo) > 0.001 || math.Abs(hi-tc.hi) > 0.001 {
			t.Errorf("wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// The score counts every kill; "check alone" only the check's (a failed
// property, a crash, a hang), not go vet's or the tests'.
func TestSummaryCheckAloneCountsOnlyCheck(t *testing.T) {
	var results []mutation.Result
	for _, by := range []string{mutation.ByCheck, mutation.ByCheckTimeout, mutation.ByVet, mutation.ByTests, mutation.ByTestsTimeout} {
		results = append(results, mutation.Result{Status: mutation.Killed, By: by})
	}
	results = append(results, mutation.Result{Status: mutation.Survived}, mutation.Result{Status: mutation.Equivalent})
	s := summarize(mutateOptions{}, nil, len(results), results, 0, 0)
	if s.Killed != 5 || s.Survived != 1 || s.Score != 5.0/6 || s.CheckScore != 2.0/6 {
		t.Errorf("killed %d, survived %d, score %v, check alone %v; want 5, 1, 5/6, 2/6", s.Killed, s.Survived, s.Score, s.CheckScore)
	}
}
