package sim

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
)

// A task that stops the world has read the clock at its own time, ahead
// of the event that began it by the CPU it used. After Run (or RunFor)
// the world's clock reads no earlier than that: a model that timed its
// last op inside the task would otherwise have taken longer than the run
// (tcp-pattern's latencies added up to more than the run with replies
// over 200,000 bytes).
func TestClockAfterStopIsNoEarlierThanTheStopper(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(w *World)
		run  func(w *World) error
	}{
		{"Stop in Run", func(w *World) { w.Stop() }, func(w *World) error { return w.Run(time.Second) }},
		{"Fail in Run", func(w *World) { w.Fail(errors.New("done")) }, func(w *World) error { return w.Run(time.Second) }},
		{"Stop in RunFor", func(w *World) { w.Stop() }, func(w *World) error { return w.RunFor(time.Second) }},
	} {
		w := New(DefaultConfig(1))
		var began, saw time.Duration
		_, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
			l := p.MainLoop()
			l.AfterFunc(time.Millisecond, func() {
				began = l.Now()
				w.charge(300 * us)
				saw = l.Now()
				tc.stop(w)
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		err = tc.run(w)
		if tc.name == "Fail in Run" {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if saw-began < 300*us {
			t.Fatalf("%s: the task's clock moved %v, want its 300 µs of CPU", tc.name, saw-began)
		}
		if now := w.Now(); now < saw {
			t.Errorf("%s: after the run the clock reads %v, earlier than the %v the stopping task saw", tc.name, now, saw)
		}
	}
}
