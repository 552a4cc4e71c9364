package sim

import (
	"testing"
	"time"
)

// WatchPeerEnd tells of every change of what PeerEnd reports: the far end
// accepted (its fd opens), heard the near end close (a FIN, or the reset
// of an abort), and closed its own fd. After each event the test compares
// PeerEnd with what it was after the one before: a change must have come
// with a call of the watcher. A harness that looks only at the connections
// it was told changed (properties' hostile scan) relies on that.
func TestWatchPeerEndToldOfEveryChange(t *testing.T) {
	for _, abort := range []bool{false, true} {
		h := newServing(t)
		h.startClient(false)
		calls, toldSince := 0, false
		type seen struct{ open, heard bool }
		var last seen
		var changes []seen
		watched := false
		h.w.AfterEach(func() {
			if h.cli.c == nil {
				return
			}
			if !watched {
				if !WatchPeerEnd(h.cli.c, func() { calls++; toldSince = true }) {
					t.Fatal("WatchPeerEnd refused a TCP connection")
				}
				watched = true
			}
			_, open, heard := PeerEnd(h.cli.c)
			if now := (seen{open, heard}); now != last {
				if !toldSince {
					t.Errorf("abort %v, at %v: PeerEnd went from %+v to %+v untold", abort, h.now(), last, now)
				}
				last = now
				changes = append(changes, now)
			}
			toldSince = false
		})
		h.runTo(10 * ms)
		// (Each close in a callback: an event, after which the test looks.)
		h.cli.p.MainLoop().Post(func() {
			if abort {
				_ = h.cli.c.Abort()
			} else {
				_ = h.cli.c.Close()
			}
		})
		h.runTo(20 * ms)
		h.srv.p.MainLoop().Post(func() { _ = h.srv.c.Close() })
		h.runTo(30 * time.Millisecond)
		want := []seen{{true, false}, {true, true}, {false, true}}
		if len(changes) != len(want) {
			t.Fatalf("abort %v: PeerEnd went through %+v, want %+v", abort, changes, want)
		}
		for i := range want {
			if changes[i] != want[i] {
				t.Fatalf("abort %v: PeerEnd went through %+v, want %+v", abort, changes, want)
			}
		}
		if calls < len(want) {
			t.Errorf("abort %v: %d calls for %d changes", abort, calls, len(want))
		}
	}
	if WatchPeerEnd(nil, func() {}) {
		t.Error("WatchPeerEnd took a nil connection")
	}
}
