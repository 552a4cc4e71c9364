package real

import (
	"testing"
	"time"

	"xceiver/model"
)

// run pairs in real: every client's count reaches the server's loop
// (each counts on its own goroutine), the window closes whatever order
// the loops' timers fire in, the run ends in order, and the world tears
// down clean.
func TestPairsRunsInReal(t *testing.T) {
	for _, n := range []int{1, 8} {
		w, err := New(Config{Seed: 1, Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		s := model.DefaultPairs()
		// The window is long beside how late a loop runs on a loaded
		// machine (its opening timer, on a loop among 8 pairs' busy
		// ones, ran up to 40 ms late while its closing one did not).
		s.Pairs, s.WarmUp, s.Window = n, 20*time.Millisecond, 200*time.Millisecond
		res, err := model.RunPairs(w, s, time.Minute)
		if cerr := w.Close(); cerr != nil {
			t.Errorf("%d pairs: close: %v", n, cerr)
		}
		if err != nil {
			t.Fatalf("%d pairs: %v", n, err)
		}
		// (The window is what the server's loop saw between its two
		// timers, each run late on a loaded machine, the opening one by
		// up to 40 ms seen: a quarter of it is a floor no punctuality
		// decides, and still catches a window that closes as it opens.)
		if res.Exchanges <= 0 || res.Elapsed < s.Window/4 {
			t.Errorf("%d pairs: %d exchanges in %v, want some in about %v", n, res.Exchanges, res.Elapsed, s.Window)
		}
		// The orderly end: every client's count reached the server's
		// loop before the last connection's end stopped the world.
		if res.Requests != res.Replies {
			t.Errorf("%d pairs: the server read %d requests in full, the clients report %d replies", n, res.Requests, res.Replies)
		}
	}
}
