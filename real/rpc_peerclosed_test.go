package real

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
)

// holdService answers every call 2 s after it comes.
type holdService struct{}

func (holdService) Serve(loop model.Loop, _ uint8, payload []byte, done func(rpc.Status, []byte)) {
	loop.AfterFunc(2*time.Second, func() { done(rpc.StatusOK, payload) })
}

// A client that hangs up while the server has stopped reading it (one
// call in flight under MaxInFlight 1, two more unread in the socket
// ahead of the FIN) is heard through EPOLLRDHUP on real sockets: its
// connection is gone well before its held call is answered. A server
// deaf to a connection it does not read (DeafWhenNotReading) still holds
// it then.
func TestRPCThrottledHangupHeardReal(t *testing.T) {
	for _, deaf := range []bool{false, true} {
		t.Run(fmt.Sprintf("deaf=%v", deaf), func(t *testing.T) {
			w, srv := hangUpAfterCalls(t, holdService{}, rpc.ServerConfig{MaxInFlight: 1, Bugs: rpc.ServerBugs{DeafWhenNotReading: deaf}},
				3, 600*time.Millisecond) // past the FIN, well before the held call's answer
			conns, _, _, _, _ := srv.Quiet()
			throttled := srv.Stats().Throttled
			_ = w.Close()
			switch {
			case throttled == 0:
				t.Errorf("the connection was never throttled: the test no longer reaches a hangup the server does not read")
			case !deaf && conns != 0:
				t.Errorf("the server still holds %d connection(s) 600ms after its client hung up", conns)
			case deaf && conns != 1:
				t.Errorf("deaf to a connection it does not read, the server holds %d connection(s) 600ms after the hangup; want 1 (the test no longer tells the two apart)", conns)
			}
		})
	}
}

// hangUpAfterCalls runs, on real sockets, a server with one reader and one
// handler (cfg's Addr, Readers, Handlers and IdleTimeout set here) and a
// client that sends calls calls at once, hangs up 100 ms later (or once
// the handler has begun the first call, if that is later) and stops the
// world stop after it hangs up. It returns the world, run and not yet
// closed, for the caller to read the server's state before closing it.
func hangUpAfterCalls(t *testing.T, svc rpc.Service, cfg rpc.ServerConfig, calls int, stop time.Duration) (*World, *rpc.Server) {
	t.Helper()
	cfg.Addr, cfg.Readers, cfg.Handlers, cfg.IdleTimeout = "127.0.0.1:0", 1, 1, 10*time.Second
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Both tests need the first call in service when the client hangs
	// up; a handler loop running 100 ms late on a loaded machine had not
	// begun it.
	begun := &begunService{Service: svc, begun: make(chan struct{})}
	var srv *rpc.Server
	_, err = w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
		srv, err = rpc.StartServer(p, p.MainLoop(), begun, cfg)
		if err != nil {
			w.Fail(err)
			return
		}
		addr := srv.Addr()
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			loop := cp.MainLoop()
			cl, err := rpc.NewClient(cp, loop, rpc.ClientConfig{CallTimeout: time.Minute})
			if err != nil {
				w.Fail(err)
				return
			}
			for k := 0; k < calls; k++ {
				cl.Call(addr, 1, []byte{byte(k)}, func(rpc.Reply) {})
			}
			var hangUp func()
			hangUp = func() {
				select {
				case <-begun.begun:
					cl.Close()
					loop.AfterFunc(stop, w.Stop)
				default:
					loop.AfterFunc(10*time.Millisecond, hangUp)
				}
			}
			loop.AfterFunc(100*time.Millisecond, hangUp)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	return w, srv
}

// begunService is a Service that closes begun when it is given its first
// call. It hides any Decoder or FrameEncoder the wrapped service has (the
// server looks for them on its Service): wrap only services without.
type begunService struct {
	rpc.Service
	once  sync.Once
	begun chan struct{}
}

func (s *begunService) Serve(loop model.Loop, method uint8, payload []byte, done func(rpc.Status, []byte)) {
	s.once.Do(func() { close(s.begun) })
	s.Service.Serve(loop, method, payload, done)
}
