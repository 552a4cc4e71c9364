package real

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"xceiver/model"
)

// A Unix dial that fails at once (no socket file) reports Hangup by a
// post; a handler set before that post runs must hear Hangup once.
func TestFailedDialHangupOnce(t *testing.T) { failedDialHangupOnce(t, "unix", "nobody") }

// The same for a TCP dial, whose failure epoll reports.
func TestFailedDialHangupOnceTCP(t *testing.T) { failedDialHangupOnce(t, "tcp", "127.0.0.1:1") }

func failedDialHangupOnce(t *testing.T, network, addr string) {
	w := newWorld(t)
	var h heard
	spawn(t, w, "a", 0, func(p model.Process) {
		c, err := p.Dial(network, addr, p.MainLoop(), func(ev model.Events) {
			h.add(fmt.Sprintf("first %v", ev))
		})
		if err != nil {
			failf(p, "dial: %v", err)
			return
		}
		c.SetHandler(p.MainLoop(), func(ev model.Events) {
			h.add(fmt.Sprintf("second hangup=%v", ev&model.Hangup != 0))
		})
		closeAndStopAfter(p, c, 100*time.Millisecond)
	})
	run(t, w, 5*time.Second)
	if h.String() != "[second hangup=true]" {
		t.Errorf("handlers heard %v, want [second hangup=true]", h.String())
	}
}

// heard is what handlers heard, noted from any goroutine.
type heard struct {
	mu  sync.Mutex
	got []string
}

func (h *heard) add(s string) {
	h.mu.Lock()
	h.got = append(h.got, s)
	h.mu.Unlock()
}

func (h *heard) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprint(h.got)
}

// closeAndStopAfter closes c and stops p's world d from now.
func closeAndStopAfter(p model.Process, c model.Conn, d time.Duration) {
	p.MainLoop().AfterFunc(d, func() {
		c.Close()
		p.World().Stop()
	})
}

// Turning interest off on a conn whose loop the model has closed is a
// no-op, as in the sim: the conn stays registered for errors (EPOLLERR,
// the sentinel), but asking nothing new of a closed loop must not fail
// the world.
func TestInterestOffOnClosedLoop(t *testing.T) {
	w := newWorld(t)
	serveTCP(t, w, func(p model.Process, c model.Conn) {
		l := extraLoop(p)
		if l == nil {
			return
		}
		c.SetHandler(l, func(model.Events) {})
		p.MainLoop().AfterFunc(10*time.Millisecond, func() {
			l.Close()
			c.SetReadInterest(false)
			c.Close()
		})
		p.MainLoop().AfterFunc(50*time.Millisecond, func() { p.World().Stop() })
	}, func(p model.Process, ln model.Listener) {
		if c := dialIdle(p, ln); c != nil {
			p.MainLoop().AfterFunc(40*time.Millisecond, func() { c.Close() })
		}
	})
	if err := w.Run(5 * time.Second); err != nil {
		t.Errorf("Run: %v, want nil (interest off on a closed loop's conn)", err)
	}
}

// A reset in CLOSE_WAIT whose EPIPE a write takes before epoll reports
// it still reaches the handler as Hangup, as the sim's does (die(ErrPipe)):
// EPIPE on a TCP conn not shut by its own CloseWrite marks it dead.
func TestCloseWaitResetTakenByWrite(t *testing.T) {
	w := newWorld(t)
	var werr error
	hangups := 0
	addr := make(chan string, 1)
	aborted := make(chan struct{})
	spawn(t, w, "b", 0, func(p model.Process) {
		ln := listenTCP(p, 4)
		acceptAll(p, ln, func(c model.Conn) {
			c.SetReadInterest(false)
			c.SetHandler(p.MainLoop(), func(model.Events) {})
			c.CloseWrite()
			p.MainLoop().AfterFunc(20*time.Millisecond, func() {
				c.Abort()
				close(aborted)
			})
		})
		addr <- ln.Addr()
	})
	spawn(t, w, "a", 0, func(p model.Process) {
		var c model.Conn
		c, err := p.Dial("tcp", <-addr, p.MainLoop(), func(ev model.Events) {
			c.SetWriteInterest(false)
			c.SetReadInterest(false)
			if ev&model.Hangup != 0 {
				hangups++
			}
		})
		if err != nil {
			failf(p, "dial: %v", err)
			return
		}
		c.SetWriteInterest(true)
		p.MainLoop().AfterFunc(10*time.Millisecond, func() {
			// A long callback: the FIN and RST land meanwhile. It waits
			// for the server's abort, not for a time (a server loop
			// running late aborted after the write), then a little for
			// the RST to be taken in.
			select {
			case <-aborted:
			case <-time.After(5 * time.Second):
				failf(p, "the server never aborted")
				return
			}
			time.Sleep(20 * time.Millisecond)
			_, werr = c.Write([]byte("x"))
			closeAndStopAfter(p, c, 200*time.Millisecond)
		})
	})
	run(t, w, 5*time.Second)
	if !errors.Is(werr, model.ErrPipe) || hangups != 1 {
		t.Errorf("write %v, hangups %d; want EPIPE and the reset heard once as Hangup", werr, hangups)
	}
}

// extraLoop makes a loop for p, or fails the world and returns nil.
func extraLoop(p model.Process) model.Loop {
	l, err := p.NewLoop("x")
	if err != nil {
		failf(p, "loop: %v", err)
		return nil
	}
	return l
}

// dialIdle dials ln with a handler that does nothing and read interest
// off, or fails the world and returns nil.
func dialIdle(p model.Process, ln model.Listener) model.Conn {
	c, err := p.Dial("tcp", ln.Addr(), p.MainLoop(), func(model.Events) {})
	if err != nil {
		failf(p, "dial: %v", err)
		return nil
	}
	c.SetReadInterest(false)
	return c
}
