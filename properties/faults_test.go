package properties

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// The fault APIs of sim (sim/faults.go), seen from the model's side.

type faultPair struct {
	w        *sim.World
	srv, cli *sim.Process
	sc, cc   model.Conn
	got      []byte
	arrivals []time.Duration
	cerr     error
}

func newFaultPair(t *testing.T) *faultPair {
	t.Helper()
	fp := &faultPair{w: sim.New(sim.DefaultConfig(1))}
	sp, _ := fp.w.Spawn("server", model.ProcessConfig{FDLimit: 16}, func(p model.Process) {
		ln, err := p.Listen("tcp", "server:1", 8, p.MainLoop())
		if err != nil {
			t.Error(err)
			return
		}
		ln.SetHandler(func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fp.sc = c
			buf := make([]byte, 4096)
			c.SetHandler(p.MainLoop(), func(model.Events) {
				for {
					n, err := c.Read(buf)
					if n > 0 {
						fp.got = append(fp.got, buf[:n]...)
						fp.arrivals = append(fp.arrivals, p.MainLoop().Now())
						continue
					}
					if err != nil && !errors.Is(err, model.ErrWouldBlock) {
						c.Close()
					}
					return
				}
			})
		})
	})
	cp, _ := fp.w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		var c model.Conn
		c, _ = p.Dial("tcp", "server:1", p.MainLoop(), func(ev model.Events) {
			if ev&model.Hangup != 0 && fp.cerr == nil {
				fp.cerr = c.Err()
			}
			c.SetWriteInterest(false)
		})
		fp.cc = c
	})
	fp.srv, fp.cli = sp.(*sim.Process), cp.(*sim.Process)
	fp.w.RunFor(10 * time.Millisecond)
	if fp.sc == nil || fp.cc == nil {
		t.Fatal("no connection")
	}
	return fp
}

func TestFaultResetConn(t *testing.T) {
	fp := newFaultPair(t)
	if !fp.w.ResetConn(fp.cc.ID()) {
		t.Fatal("ResetConn found nothing")
	}
	fp.w.RunFor(time.Millisecond)
	if !errors.Is(fp.cerr, model.ErrReset) || !errors.Is(fp.sc.Err(), model.ErrReset) {
		t.Fatalf("after a reset: client %v, server %v", fp.cerr, fp.sc.Err())
	}
	if fp.w.ResetConn(fp.cc.ID()) {
		t.Fatal("reset a dead connection again")
	}
}

func TestFaultVanishConn(t *testing.T) {
	fp := newFaultPair(t)
	fp.w.VanishConn(fp.cc.ID())
	fp.cc.Write([]byte("lost"))
	fp.w.RunFor(time.Second)
	if len(fp.got) != 0 {
		t.Fatalf("data crossed a vanished path: %q", fp.got)
	}
	if fp.cerr != nil {
		t.Fatalf("failed before the retry limit: %v", fp.cerr)
	}
	fp.w.RunFor(fp.w.Config().TCP.RetryLimit)
	if !errors.Is(fp.cerr, model.ErrTimedOut) {
		t.Fatalf("after the retry limit: %v", fp.cerr)
	}
	if fp.sc.Err() != nil {
		t.Fatalf("the idle end noticed: %v", fp.sc.Err())
	}
}

func TestFaultSpikeDelaysInOrder(t *testing.T) {
	fp := newFaultPair(t)
	start := fp.w.Now()
	fp.srv.Spike(50 * time.Millisecond)
	fp.cc.Write([]byte("ab"))
	fp.w.RunFor(time.Millisecond)
	fp.cc.Write([]byte("cd"))
	fp.w.RunFor(100 * time.Millisecond)
	if string(fp.got) != "abcd" {
		t.Fatalf("got %q", fp.got)
	}
	if fp.arrivals[0]-start < 50*time.Millisecond {
		t.Fatalf("arrived %v after the spike began, want ≥ 50ms", fp.arrivals[0]-start)
	}
}

// A fragmenting path delivers a write's first span bytes in pieces of at
// most piece bytes, at distinct times and in order, and the rest whole.
func TestFaultFragmentSplitsWrites(t *testing.T) {
	fp := newFaultPair(t)
	fp.cli.Fragment(3, 40, 20*time.Microsecond)
	msg := model.BlockContent(7, 100)
	fp.cc.Write(msg)
	fp.w.RunFor(10 * time.Millisecond)
	fp.cc.Write(msg[:10])
	fp.w.RunFor(10 * time.Millisecond)
	if want := append(append([]byte(nil), msg...), msg[:10]...); string(fp.got) != string(want) {
		t.Fatalf("got %d bytes %x, want %x", len(fp.got), fp.got, want)
	}
	// 40 bytes in pieces of 1–3 bytes: at least 14 reads, then the 60
	// bytes past the span in one; then the second write's 10 in pieces.
	if len(fp.arrivals) < 14+1+4 {
		t.Fatalf("%d reads, want the first 40 bytes of each write in pieces of ≤ 3", len(fp.arrivals))
	}
	for i := 1; i < len(fp.arrivals); i++ {
		if fp.arrivals[i] < fp.arrivals[i-1] {
			t.Fatalf("read %d at %v before read %d at %v", i, fp.arrivals[i], i-1, fp.arrivals[i-1])
		}
	}
	fp.cli.Fragment(0, 0, 0)
	n := len(fp.arrivals)
	fp.cc.Write(msg)
	fp.w.RunFor(10 * time.Millisecond)
	if len(fp.arrivals) != n+1 {
		t.Fatalf("after Fragment(0): %d reads of one write, want 1", len(fp.arrivals)-n)
	}
}

func TestFaultSlowReaderAndFDPressure(t *testing.T) {
	fp := newFaultPair(t)
	fp.srv.SlowReader(2048)
	// The window already offered is not taken back (the right edge never
	// shrinks); past it, the client sends at most 2 KiB at a time.
	var sent, maxLate, lateSegs int64
	fp.w.Observe(func(e *sim.Event) {
		if e.Kind == "seg" && e.Proc == "client" && e.B > 0 {
			if sent >= 65535 {
				lateSegs++
				maxLate = max(maxLate, e.B)
			}
			sent += e.B
		}
	})
	fp.cc.Write(make([]byte, 100000))
	fp.w.RunFor(50 * time.Millisecond)
	if len(fp.got) != 100000 {
		t.Fatalf("a slow reader still reads everything: got %d", len(fp.got))
	}
	if maxLate > 2048 || lateSegs < (100000-65535)/2048 {
		t.Fatalf("past the old window, the client sent %d segments of up to %d bytes to a 2 KiB reader", lateSegs, maxLate)
	}
	release, n := fp.srv.FDPressure(0)
	if n == 0 || fp.srv.FDs().Open != fp.srv.FDs().Limit {
		t.Fatalf("pressure opened %d fds: %+v", n, fp.srv.FDs())
	}
	if _, err := fp.srv.Disk().Open("x", model.ReadWrite|model.Create, model.FDFile); !errors.Is(err, model.ErrTooManyFiles) {
		t.Fatalf("open under pressure: %v", err)
	}
	before := fp.srv.FDs().Open
	release()
	release()
	if got := fp.srv.FDs().Open; got != before-n {
		t.Fatalf("release left %d fds, want %d", got, before-n)
	}
	if fp.srv.BusyUntil() > fp.w.Now() {
		t.Fatalf("idle process busy until %v", fp.srv.BusyUntil())
	}
}
