package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// model.Touched charges each page of a buffer once, at its first use
// (CPUFirstTouch at CPUConfig.PageFault a page).
func TestFirstTouchChargesEachPageOnce(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.CPU.PageFault = 10 * us
	w := New(cfg)
	var steps []time.Duration
	if _, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		l := p.MainLoop()
		var used model.Touched
		for _, n := range []int{5000, 6000, 8193, 100, 4096 * 4} {
			t0 := l.Now()
			used.Use(p, n)
			steps = append(steps, l.Now()-t0)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{20 * us, 0, 10 * us, 0, 10 * us}
	for i := range want {
		if i >= len(steps) || steps[i] != want[i] {
			t.Fatalf("charges %v, want %v (pages 2, 2, 3, 3, 4)", steps, want)
		}
	}
}
