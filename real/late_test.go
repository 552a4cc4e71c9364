package real

import (
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// With Late, a loop's wake-ups run late: twenty hand-offs between two
// loops, each woken late by a draw below 40 ms, cannot all come within
// 100 ms (the draws' mean is 20 ms; without Late a hand-off takes
// microseconds). Only the lower bound is asserted: a loaded machine can
// add time, never take it away.
func TestLateLoopsRunLate(t *testing.T) {
	w, err := New(Config{Seed: 1, Root: t.TempDir(), Late: 40 * time.Millisecond, LateShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var elapsed time.Duration
	spawn(t, w, "a", 0, func(p model.Process) {
		b, err := p.NewLoop("b")
		if err != nil {
			failf(p, "loop: %v", err)
			return
		}
		main := p.MainLoop()
		start := time.Now()
		hops := 0
		var hop func()
		hop = func() {
			if hops++; hops == 20 {
				elapsed = time.Since(start)
				b.Close()
				p.World().Stop()
				return
			}
			if hops%2 == 1 {
				b.Post(hop)
			} else {
				main.Post(hop)
			}
		}
		main.Post(hop)
	})
	run(t, w, 10*time.Second)
	if elapsed < 100*time.Millisecond {
		t.Errorf("20 hand-offs with every wake-up late by up to 40 ms took %v, want at least 100 ms", elapsed)
	}
}

// XCEIVER_REAL_LATE sets Late (and its share) for a world whose Config
// leaves Late zero; a value that does not parse is New's error, naming
// the variable.
func TestLateFromTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env   string
		late  time.Duration
		share float64
		bad   bool
	}{
		{"", 0, 0, false},
		{"20ms", 20 * time.Millisecond, 0.1, false},
		{"5ms@0.5", 5 * time.Millisecond, 0.5, false},
		{"soon", 0, 0, true},
		{"-1ms", 0, 0, true},
		{"5ms@2", 0, 0, true},
		{"5ms@", 0, 0, true},
		{"0ms", 0, 0, true},
		{"2s", 0, 0, true},
		{"10ms@0", 0, 0, true},
		{"10ms@NaN", 0, 0, true},
		{" 10ms", 0, 0, true},
		{"10ms@0.5@1", 0, 0, true},
		{"1s@1", time.Second, 1, false},
	} {
		t.Setenv(LateEnv, tc.env)
		w, err := New(Config{Root: t.TempDir()})
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), LateEnv) {
				t.Errorf("%s=%q: New gave %v, want an error naming the variable", LateEnv, tc.env, err)
			}
			if w != nil {
				w.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%s=%q: %v", LateEnv, tc.env, err)
			continue
		}
		if w.cfg.Late != tc.late || (tc.late > 0 && w.cfg.LateShare != tc.share) {
			t.Errorf("%s=%q: Late %v share %v, want %v and %v", LateEnv, tc.env, w.cfg.Late, w.cfg.LateShare, tc.late, tc.share)
		}
		w.Close()
	}
	t.Setenv(LateEnv, "")
	for _, cfg := range []Config{{Late: -time.Millisecond}, {Late: 2 * time.Second}, {LateShare: 7}, {Late: time.Millisecond, LateShare: -0.5}} {
		cfg.Root = t.TempDir()
		if w, err := New(cfg); err == nil {
			t.Errorf("Late %v, LateShare %v: New took them", cfg.Late, cfg.LateShare)
			w.Close()
		}
	}
	t.Setenv(LateEnv, "20ms")
	w, err := New(Config{Root: t.TempDir(), Late: time.Millisecond})
	if err != nil || w.cfg.Late != time.Millisecond {
		t.Errorf("a Config's own Late is kept over the environment's: %v, %v", w, err)
	}
	if w != nil {
		w.Close()
	}
}
