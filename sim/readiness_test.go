package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// listenAndServe has process p listen on TCP address addr and hand every
// conn it accepts to serve.
func listenAndServe(t *testing.T, p model.Process, addr string, serve func(c model.Conn)) model.Listener {
	t.Helper()
	ln, err := p.Listen("tcp", addr, 16, p.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	stopped := func() bool { return false }
	ln.SetHandler(func() { model.AcceptAll(p, p.MainLoop(), ln, "accept-error", stopped, serve) })
	return ln
}

// abortingListener has p listen on "a:1" and abort each conn it accepts
// 30 ms later, reading nothing.
func abortingListener(t *testing.T, p model.Process) model.Listener {
	return listenAndServe(t, p, "a:1", func(c model.Conn) {
		c.SetReadInterest(false)
		c.SetHandler(p.MainLoop(), func(model.Events) {})
		p.MainLoop().AfterFunc(30*time.Millisecond, func() { c.Abort() })
	})
}

// A reset reaches a conn's handler as Hangup with read and write
// interest off, once to each handler set: the one that parked the conn,
// then a new owner. The real world does the same:
// real.TestResetReachesHandlerWithNoInterest.
func TestResetReachesHandlerWithNoInterest(t *testing.T) {
	var got []string
	note := func(who string, ev model.Events, err error) {
		got = append(got, fmt.Sprintf("%s hangup=%v reset=%v", who, ev&model.Hangup != 0, errors.Is(err, model.ErrReset)))
	}
	runA(t, New(DefaultConfig(1)), func(p model.Process) {
		ln := abortingListener(t, p)
		var c model.Conn
		c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			c.SetWriteInterest(false)
			c.SetReadInterest(false)
			c.SetHandler(p.MainLoop(), func(ev model.Events) { note("parked", ev, c.Err()) })
		})
		c.SetWriteInterest(true)
		p.MainLoop().AfterFunc(150*time.Millisecond, func() {
			c.SetHandler(p.MainLoop(), func(ev model.Events) { note("owner", ev, c.Err()) })
		})
		p.MainLoop().AfterFunc(300*time.Millisecond, func() { c.Close() })
	})
	if want := "[parked hangup=true reset=true owner hangup=true reset=true]"; fmt.Sprint(got) != want {
		t.Errorf("handlers heard %v, want %s", got, want)
	}
}

// A conn moved to another loop while its readiness callback is queued on
// the old one is served on the new loop only: the stale callback is
// dropped, as EPOLL_CTL_DEL takes the socket off the old epoll's ready
// list (the real world drops events of a loop the conn left).
func TestMovedConnServedOnItsNewLoopOnly(t *testing.T) {
	var calls []string
	runA(t, New(DefaultConfig(1)), func(p model.Process) {
		b, err := p.NewLoop("b")
		if err != nil {
			t.Fatal(err)
		}
		ln := listenAndServe(t, p, "a:1", func(c model.Conn) {
			c.SetHandler(p.MainLoop(), func(model.Events) {})
			p.MainLoop().AfterFunc(10*time.Millisecond, func() { c.Write([]byte("xyz")) })
		})
		var c model.Conn
		c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			c.SetWriteInterest(false)
			c.SetReadInterest(false)
		})
		c.SetWriteInterest(true)
		main := p.MainLoop()
		main.AfterFunc(20*time.Millisecond, func() {
			// Readable is queued on main, then the conn moves to b with a
			// handler that reads one byte a call.
			c.SetHandler(main, func(model.Events) { calls = append(calls, "old handler") })
			c.SetReadInterest(true)
			c.SetHandler(b, func(ev model.Events) {
				where := "main"
				if p.(*Process).w.running == &b.(*Loop).thread {
					where = "b"
				}
				n, _ := c.Read(make([]byte, 1))
				calls = append(calls, fmt.Sprintf("%s read %d", where, n))
			})
		})
		main.AfterFunc(100*time.Millisecond, func() { c.Close() })
	})
	if want := "[b read 1 b read 1 b read 1]"; fmt.Sprint(calls) != want {
		t.Errorf("calls %v, want %s", calls, want)
	}
}

// After CloseWrite a conn is writable (a write fails at once with EPIPE
// rather than blocking), as tcp_poll reports EPOLLOUT once the send side
// is shut; a handler keeping write interest on hears Writable.
func TestWritableAfterCloseWrite(t *testing.T) {
	var got []string
	runA(t, New(DefaultConfig(1)), func(p model.Process) {
		ln := listenAndServe(t, p, "a:1", func(c model.Conn) {
			c.SetReadInterest(false)
			c.SetHandler(p.MainLoop(), func(model.Events) {})
		})
		var c model.Conn
		c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			if err := c.CloseWrite(); err != nil {
				t.Errorf("CloseWrite: %v", err)
			}
			c.SetReadInterest(false)
			c.SetHandler(p.MainLoop(), func(ev model.Events) {
				_, err := c.Write([]byte("x"))
				got = append(got, fmt.Sprintf("writable=%v epipe=%v", ev&model.Writable != 0, errors.Is(err, model.ErrPipe)))
				if len(got) == 2 {
					c.SetWriteInterest(false)
				}
			})
		})
		c.SetWriteInterest(true)
		p.MainLoop().AfterFunc(100*time.Millisecond, func() { c.Close() })
	})
	if want := "[writable=true epipe=true writable=true epipe=true]"; fmt.Sprint(got) != want {
		t.Errorf("after CloseWrite the handler heard %v, want %s", got, want)
	}
}

// A listener asked for a backlog ≤ 0 queues model.DefaultBacklog
// connections and one more, as the real world's does
// (real.TestDefaultBacklog).
func TestDefaultBacklog(t *testing.T) {
	connected := 0
	runA(t, New(DefaultConfig(1)), func(p model.Process) {
		ln, err := p.Listen("tcp", "a:1", 0, p.MainLoop())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < model.DefaultBacklog+20; i++ {
			var c model.Conn
			c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
				if ev&model.Writable != 0 && c.Err() == nil {
					connected++
				}
				c.SetWriteInterest(false)
				c.SetReadInterest(false)
			})
			c.SetWriteInterest(true)
		}
		p.MainLoop().AfterFunc(300*time.Millisecond, func() { p.(*Process).Crash() })
	})
	if connected != model.DefaultBacklog+1 {
		t.Errorf("%d connections completed with nobody accepting, want %d", connected, model.DefaultBacklog+1)
	}
}

// SetHandler onto a loop the model closed fails the world, as it does in
// the real world (real.TestSetHandlerOnClosedLoopFails): a model doing it
// must not pass here and fail there.
func TestSetHandlerOnClosedLoopFails(t *testing.T) {
	w := New(DefaultConfig(1))
	w.Spawn("a", model.ProcessConfig{}, func(p model.Process) {
		ln := listenAndServe(t, p, "a:1", func(c model.Conn) {
			l, _ := p.NewLoop("x")
			l.Close()
			c.SetHandler(l, func(model.Events) {})
		})
		c, _ := p.Dial("tcp", ln.Addr(), p.MainLoop(), func(model.Events) {})
		c.SetReadInterest(false)
	})
	w.RunFor(time.Second)
	if err := w.Failure(); err == nil || !strings.Contains(err.Error(), "closed loop") {
		t.Errorf("the world's failure is %v, want SetHandler on a closed loop", err)
	}
}

// A handler that hands its conn over (SetHandler) while it hears the
// Hangup leaves the new owner to hear it too, as in the real world,
// which marks the Hangup told before the call.
func TestHandOverDuringHangup(t *testing.T) {
	var owner []string
	runA(t, New(DefaultConfig(1)), func(p model.Process) {
		ln := abortingListener(t, p)
		var c model.Conn
		c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			if ev&model.Hangup == 0 {
				c.SetWriteInterest(false)
				c.SetReadInterest(false)
				return
			}
			c.SetHandler(p.MainLoop(), func(ev model.Events) {
				owner = append(owner, fmt.Sprintf("hangup=%v", ev&model.Hangup != 0))
			})
		})
		c.SetWriteInterest(true)
		p.MainLoop().AfterFunc(100*time.Millisecond, func() { c.Close() })
	})
	if fmt.Sprint(owner) != "[hangup=true]" {
		t.Errorf("the new owner heard %v, want one Hangup", owner)
	}
}

// With Config.SpinLimit set, a handler called that many times in a row
// with readiness it neither reads nor writes on, and still asks for, fails
// the run: a loop spinning, as it would burn a core in the real world. A
// handler that reads, or turns the interest off, never trips it; nor does
// a spin with the limit off (tests' bare handlers spin, harmlessly).
func TestSpinningHandlerFailsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		serve func(c model.Conn, buf []byte)
		fails bool
	}{
		{"ignores its input", DefaultSpinLimit, func(model.Conn, []byte) {}, true},
		{"reads its input", DefaultSpinLimit, func(c model.Conn, buf []byte) { c.Read(buf) }, false},
		{"turns reading off", DefaultSpinLimit, func(c model.Conn, _ []byte) { c.SetReadInterest(false) }, false},
		{"ignores it, limit off", 0, func(model.Conn, []byte) {}, false},
	} {
		cfg := DefaultConfig(1)
		cfg.SpinLimit = tc.limit
		w := New(cfg)
		if _, err := w.Spawn("a", model.ProcessConfig{}, func(p model.Process) {
			ln := listenAndServe(t, p, "a:1", func(c model.Conn) {
				buf := make([]byte, 64)
				c.SetHandler(p.MainLoop(), func(model.Events) { tc.serve(c, buf) })
				p.MainLoop().AfterFunc(100*time.Millisecond, func() { c.Close() })
			})
			var c model.Conn
			c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
				c.SetWriteInterest(false)
				c.SetReadInterest(false)
				if ev&model.Writable != 0 {
					c.Write([]byte("unread"))
				}
			})
			c.SetWriteInterest(true)
			p.MainLoop().AfterFunc(200*time.Millisecond, func() { c.Close() })
		}); err != nil {
			t.Fatal(err)
		}
		_ = w.RunFor(time.Second)
		err := w.Failure()
		switch {
		case tc.fails && (err == nil || !strings.Contains(err.Error(), "spins: its handler was called 1000 times in a row with Readable ready")):
			t.Errorf("%s: run failed with %v, want a spin", tc.name, err)
		case !tc.fails && err != nil:
			t.Errorf("%s: run failed with %v, want none", tc.name, err)
		}
	}
}

// A handler that reads a little at each call makes progress, and is not a
// spin however many calls it takes: every read counts as the handler's
// doing, even one that leaves the socket readable.
func TestHandlerReadingAByteACallIsNoSpin(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.SpinLimit = DefaultSpinLimit
	w := New(cfg)
	const n = 3 * DefaultSpinLimit
	got := 0
	if _, err := w.Spawn("a", model.ProcessConfig{}, func(p model.Process) {
		ln := listenAndServe(t, p, "a:1", func(c model.Conn) {
			buf := make([]byte, 1)
			c.SetHandler(p.MainLoop(), func(model.Events) {
				k, _ := c.Read(buf)
				got += k
			})
		})
		var c model.Conn
		c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			c.SetWriteInterest(false)
			c.SetReadInterest(false)
			if ev&model.Writable != 0 {
				c.Write(make([]byte, n))
			}
		})
		c.SetWriteInterest(true)
	}); err != nil {
		t.Fatal(err)
	}
	_ = w.RunFor(time.Second)
	if err := w.Failure(); err != nil {
		t.Errorf("run failed with %v, want none (the handler read a byte at each of its %d calls)", err, got)
	}
	if got != n {
		t.Errorf("read %d bytes of %d", got, n)
	}
}
