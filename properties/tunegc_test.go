package properties

import (
	"runtime/debug"
	"testing"
)

// TuneGC sets check's collector settings, CheckGCPercent and a soft
// memory limit for the workers, only where the user set none (GOGC,
// GOMEMLIMIT), and its restore puts the previous ones back.
func TestTuneGCLeavesTheUsersSettings(t *testing.T) {
	gc, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
	defer func() { debug.SetGCPercent(gc); debug.SetMemoryLimit(limit) }()
	for _, e := range []struct {
		gogc, gomemlimit string
		wantGC           int
		wantLimit        int64
	}{
		{"", "", CheckGCPercent, CheckMemoryBase + 3*CheckMemoryPerWorker},
		{"100", "", 100, CheckMemoryBase + 3*CheckMemoryPerWorker},
		{"", "1GiB", CheckGCPercent, 1 << 40},
		{"100", "1GiB", 100, 1 << 40},
	} {
		t.Setenv("GOGC", e.gogc)
		t.Setenv("GOMEMLIMIT", e.gomemlimit)
		restore := TuneGC(3)
		// (SetMemoryLimit with a negative value reads the limit;
		// SetGCPercent has no such reader: -1, at once put back.)
		gotGC, gotLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
		debug.SetGCPercent(gotGC)
		restore()
		afterGC, afterLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
		debug.SetGCPercent(afterGC)
		if gotGC != e.wantGC || gotLimit != e.wantLimit || afterGC != 100 || afterLimit != 1<<40 {
			t.Errorf("GOGC %q, GOMEMLIMIT %q: GC percent %d, limit %d, then %d and %d restored; want %d, %d, then 100 and %d",
				e.gogc, e.gomemlimit, gotGC, gotLimit, afterGC, afterLimit, e.wantGC, e.wantLimit, int64(1)<<40)
		}
	}
}
