package model

import (
	"testing"
	"time"
)

// The latency figures run and bench report: nearest-rank percentiles,
// the first op as recorded, mean and max, and the stall share with the
// threshold itself counting as a stall.
func TestLatenciesSummarize(t *testing.T) {
	var l Latencies
	for i := 100; i >= 1; i-- { // recorded slowest first
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	got := l.Summarize()
	want := Summary{First: 100 * time.Millisecond, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond,
		Mean: 50500 * time.Microsecond, Max: 100 * time.Millisecond}
	if got != want {
		t.Errorf("1..100 ms: %+v, want %+v", got, want)
	}
	if l[0] != 100*time.Millisecond {
		t.Errorf("Summarize reordered its input")
	}
	one := Latencies{7 * time.Millisecond}.Summarize()
	if one != (Summary{First: 7 * time.Millisecond, P50: 7 * time.Millisecond, P99: 7 * time.Millisecond, Mean: 7 * time.Millisecond, Max: 7 * time.Millisecond}) {
		t.Errorf("one op: %+v", one)
	}
	if (Latencies{}).Summarize() != (Summary{}) || (Latencies{}).StallShare() != 0 {
		t.Errorf("no ops: not zero")
	}
	// Nearest rank is ceil(n·pct/100): a rank just past a whole number
	// (n·pct = 9801, 101) rounds up.
	for _, tc := range []struct {
		n, pct, want int
	}{{1, 50, 0}, {1, 99, 0}, {2, 50, 0}, {2, 99, 1}, {10, 50, 4}, {10, 99, 9}, {200, 99, 197}, {99, 99, 98}, {101, 1, 1}} {
		if got := percentileIndex(tc.n, tc.pct); got != tc.want {
			t.Errorf("percentileIndex(%d, %d) = %d, want %d", tc.n, tc.pct, got, tc.want)
		}
	}
	stalls := Latencies{StallThreshold - 1, StallThreshold, StallThreshold + 1, time.Millisecond}
	if got := stalls.StallShare(); got != 0.5 {
		t.Errorf("stall share %v, want 0.5 (the threshold counts)", got)
	}
}
