package sim

import (
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// run pairs measures over its window what every pair did, the same for
// the same seed, and cannot keep more cores busy than the host has.
func TestPairsMeasuresItsWindow(t *testing.T) {
	run := func(pairs int) *model.PairsResult {
		t.Helper()
		w := New(DefaultConfig(3))
		s := model.DefaultPairs()
		s.Pairs = pairs
		s.CPUTime = func() time.Duration {
			var c time.Duration
			for _, p := range w.Processes() {
				c += p.CPUTime()
			}
			return c
		}
		res, err := model.RunPairs(w, s, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		// (The server's loop runs its timers between callbacks, so a
		// busy one runs them a little late.)
		if d := res.Elapsed - s.Window; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("%d pairs: window %v, want %v within 1 ms", pairs, res.Elapsed, s.Window)
		}
		if res.Exchanges <= 0 || res.CPU <= 0 {
			t.Errorf("%d pairs: %d exchanges, %v CPU in the window", pairs, res.Exchanges, res.CPU)
		}
		if cores := res.CPU.Seconds() / res.Elapsed.Seconds(); cores > float64(DefaultConfig(3).HostCores)+0.01 {
			t.Errorf("%d pairs kept %.2f cores busy, more than the host's %d", pairs, cores, DefaultConfig(3).HostCores)
		}
		return res
	}
	one, eight := run(1), run(8)
	if again := run(8); *again != *eight {
		t.Errorf("the same seed measured %+v, then %+v", eight, again)
	}
	// One pair is a strict ping-pong: eight pairs get more done.
	if eight.Exchanges <= one.Exchanges {
		t.Errorf("8 pairs made %d exchanges, 1 pair %d: want more", eight.Exchanges, one.Exchanges)
	}
}

func TestPairsRefusesWhatCannotRun(t *testing.T) {
	for _, c := range []struct {
		mut  func(*model.Pairs)
		want string
	}{
		{func(s *model.Pairs) { s.Pairs = 0 }, "--pairs"},
		{func(s *model.Pairs) { s.Pairs = 1025 }, "--pairs"},
		{func(s *model.Pairs) { s.WarmUp = time.Hour }, "--warm-up"},
		{func(s *model.Pairs) { s.Request = 0 }, "--request"},
		{func(s *model.Pairs) { s.Reply = 1 << 30 }, "--reply"},
		{func(s *model.Pairs) { s.WarmUp = -time.Second }, "--warm-up"},
		{func(s *model.Pairs) { s.Window = 0 }, "--window"},
	} {
		s := model.DefaultPairs()
		c.mut(&s)
		_, err := model.RunPairs(New(DefaultConfig(1)), s, time.Minute)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %s", s, err, c.want)
		}
	}
}

// The window opens only once every pair runs: spawning 300 clients at
// the profile's 0.17 ms each takes 50 ms, five times the warm-up, so
// the window opens past 50 ms, and the clients count in it. (Opened at
// a fixed time, 10 ms, it was over before the last clients began.)
func TestPairsWindowOpensOnceEveryPairRuns(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.CPU = DefaultProfile().CPU()
	w := New(cfg)
	s := model.DefaultPairs()
	s.Pairs, s.WarmUp, s.Window = 300, 10*time.Millisecond, 20*time.Millisecond
	res, err := model.RunPairs(w, s, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Opened < 50*time.Millisecond+s.WarmUp {
		t.Errorf("the window opened at %v, before the 300 clients' spawns (50 ms) and the warm-up were over", res.Opened)
	}
	if res.Exchanges == 0 || res.Rate <= 0 || res.Starved == s.Pairs {
		t.Errorf("%d exchanges, %.0f a second, %d of %d clients with none", res.Exchanges, res.Rate, res.Starved, s.Pairs)
	}
}

// A pair's handler answers one message a callback: readiness is
// level-triggered, so the next one is an event of its own. Reading on in
// the same callback, a server connection whose client answered within
// the callback's clock (interleave) stayed in that one callback for
// good: in sim a process's callbacks do not overlap, so the server's
// main loop never accepted the second pair (20 million events at 77 µs,
// check's scenario seed 56; and, while the line for a core still let a
// callback's interleaved events jump it, with seven pairs the six other
// server connections never replied once). Each run ends in order: every
// request the server read was answered and read.
func TestPairsHandlerAnswersOneMessageACallback(t *testing.T) {
	for _, c := range []struct {
		seed  uint64
		pairs model.Pairs
	}{
		{56, model.Pairs{Pairs: 2, Request: 1, Reply: 200000, WarmUp: 1790 * time.Microsecond, Window: 3180 * time.Microsecond}},
		{9, model.Pairs{Pairs: 7, Request: 1000, Reply: 200000, WarmUp: 3 * time.Millisecond, Window: 5 * time.Millisecond}},
	} {
		cfg := DefaultConfig(c.seed)
		cfg.MaxEvents = 1_000_000
		w := New(cfg)
		res, err := model.RunPairs(w, c.pairs, time.Second)
		if err != nil {
			t.Errorf("seed %d, %d pairs: %v (the window opened at %v)", c.seed, c.pairs.Pairs, err, res.Opened)
			continue
		}
		if res.Starved != 0 || res.Requests != res.Replies {
			t.Errorf("seed %d: %d of %d pairs starved in the window; %d requests read, %d replies", c.seed, res.Starved, c.pairs.Pairs, res.Requests, res.Replies)
		}
	}
}
