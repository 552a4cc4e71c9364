package sim

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
)

// A task's clock runs ahead of the event that began it by the CPU it
// used. Between runs the world's clock reads the latest time any task
// reached: never earlier than the model saw it, whether a task stopped
// the run, failed it, or was the last before the queue emptied (with the
// old clock, tcp-pattern's latencies added up to more than the run with
// replies over 200,000 bytes).
func TestClockBetweenRunsIsTheLatestATaskReached(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(w *World)
		run  func(w *World) error
	}{
		{"Stop in Run", func(w *World) { w.Stop() }, func(w *World) error { return w.Run(time.Second) }},
		{"Fail in Run", func(w *World) { w.Fail(errors.New("done")) }, func(w *World) error { _ = w.Run(time.Second); return nil }},
		{"Stop in RunFor", func(w *World) { w.Stop() }, func(w *World) error { return w.RunFor(time.Second) }},
		{"queue empty", func(w *World) {}, func(w *World) error { return w.Run(time.Second) }},
		{"queue empty in RunFor", func(w *World) {}, func(w *World) error { return w.RunFor(time.Millisecond + 100*us) }},
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
				w.charge(200 * us) // a task goes on after Stop or Fail
				saw = l.Now()
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.run(w); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if saw-began < 500*us {
			t.Fatalf("%s: the task's clock moved %v, want its 500 µs of CPU", tc.name, saw-began)
		}
		if now := w.Now(); now < saw {
			t.Errorf("%s: after the run the clock reads %v, earlier than the %v the task saw", tc.name, now, saw)
		}
	}
}

// The latest time is any task's, not only the stopper's; and a run resumed
// after a task ran ahead fires the queued events at their own times (the
// run is the same as if it had not paused) while the clock between runs
// never goes back.
func TestClockBetweenRunsNeverGoesBack(t *testing.T) {
	w := New(DefaultConfig(1))
	var ahead, timerSaw time.Duration
	_, err := w.Spawn("p", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		l := p.MainLoop()
		l2, err := p.NewLoop("other")
		if err != nil {
			t.Fatal(err)
		}
		l2.AfterFunc(time.Millisecond, func() {
			w.charge(time.Millisecond)
			ahead = l2.Now()
		})
		l.AfterFunc(time.Millisecond+time.Microsecond, func() {
			w.charge(100 * us)
			w.Stop()
		})
		l.AfterFunc(time.Millisecond+400*us, func() { timerSaw = l.Now() })
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	first := w.Now()
	if ahead == 0 || first < ahead {
		t.Fatalf("after the first run the clock reads %v; the other loop's task reached %v", first, ahead)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if timerSaw < time.Millisecond+400*us || timerSaw > time.Millisecond+500*us {
		t.Errorf("the timer due at 1.4 ms ran at %v: a resumed run keeps the events' times", timerSaw)
	}
	if w.Now() < first {
		t.Errorf("the clock went back between runs: %v, then %v", first, w.Now())
	}
}
