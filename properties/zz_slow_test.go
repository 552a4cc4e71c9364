package properties

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestZZSlowSeeds(t *testing.T) {
	from, _ := strconv.ParseUint(os.Getenv("ZZFROM"), 10, 64)
	to, _ := strconv.ParseUint(os.Getenv("ZZTO"), 10, 64)
	if from == 0 {
		t.Skip()
	}
	var ms runtime.MemStats
	for s := from; s <= to; s++ {
		runtime.ReadMemStats(&ms)
		a0 := ms.TotalAlloc
		st := time.Now()
		o, err := CheckSeed(s, "", Options{}, false)
		d := time.Since(st)
		runtime.ReadMemStats(&ms)
		if d > 500*time.Millisecond || ms.TotalAlloc-a0 > 200<<20 {
			t.Logf("seed %d: %v, %d MB allocated, failed=%v err=%v", s, d, (ms.TotalAlloc-a0)>>20, o.Failed(), err)
		}
	}
}
