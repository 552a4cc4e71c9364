package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// rwRun starts one process with len(ops) loops; loop i takes the lock
// (write when ops[i]) at starts[i] and spends 10 µs inside. It returns when
// each finished.
func rwRun(t *testing.T, cores int, ops []bool, starts []time.Duration) ([]time.Duration, *RWLock) {
	t.Helper()
	cfg := DefaultConfig(1)
	cfg.HostCores = 0
	w := New(cfg)
	ends := make([]time.Duration, len(ops))
	var lk *RWLock
	_, err := w.Spawn("p", model.ProcessConfig{Cores: cores}, func(p model.Process) {
		lk = p.NewRWLock("ns").(*RWLock)
		for i, write := range ops {
			l, err := p.NewLoop("t")
			if err != nil {
				w.Fail(err)
				return
			}
			l.AfterFunc(starts[i]-l.Now(), func() {
				f := func() {
					p.CPU(model.CPUParse, 50) // 10 µs
					ends[i] = l.Now()
				}
				if write {
					lk.Do(l, f)
				} else {
					lk.RDo(l, f)
				}
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	return ends, lk
}

func TestRWLockReadersOverlapWritersExclude(t *testing.T) {
	at := []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	ends, _ := rwRun(t, 4, []bool{false, false, false}, at)
	for i, e := range ends {
		if d := e - time.Millisecond; d > 12*time.Microsecond {
			t.Errorf("reader %d took %v; three readers on four cores should overlap (10 µs each)", i, d)
		}
	}
	ends, lk := rwRun(t, 4, []bool{true, true, true}, at)
	last := max(ends[0], ends[1], ends[2]) - time.Millisecond
	if last < 30*time.Microsecond {
		t.Errorf("three writers done after %v; they must take turns (≥ 30 µs)", last)
	}
	if lk.Contended != 2 {
		t.Errorf("contended %d, want 2", lk.Contended)
	}
}

// A writer arriving while readers hold the lock waits for them, and
// readers arriving after the writer wait for it: arrival order, so
// readers cannot starve a writer.
func TestRWLockFIFO(t *testing.T) {
	ms := time.Millisecond
	ends, _ := rwRun(t, 4, []bool{false, true, false}, []time.Duration{ms, ms + 2*time.Microsecond, ms + 4*time.Microsecond})
	if !(ends[0] < ends[1] && ends[1] < ends[2]) {
		t.Errorf("ends %v: want reader, then writer, then the late reader", ends)
	}
	if d := ends[2] - ends[1]; d < 10*time.Microsecond {
		t.Errorf("late reader finished %v after the writer; it must wait for it", d)
	}
}
