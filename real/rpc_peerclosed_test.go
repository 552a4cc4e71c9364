package real

import (
	"fmt"
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
			w, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			var srv *rpc.Server
			_, err = w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
				srv, err = rpc.StartServer(p, p.MainLoop(), holdService{}, rpc.ServerConfig{Addr: "127.0.0.1:0", Readers: 1, Handlers: 1,
					MaxInFlight: 1, IdleTimeout: 10 * time.Second, Bugs: rpc.ServerBugs{DeafWhenNotReading: deaf}})
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
					for k := 0; k < 3; k++ {
						cl.Call(addr, 1, []byte{byte(k)}, func(rpc.Reply) {})
					}
					loop.AfterFunc(100*time.Millisecond, cl.Close)
					// Past the FIN, well before the held call's answer.
					loop.AfterFunc(700*time.Millisecond, w.Stop)
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Run(20 * time.Second); err != nil {
				t.Fatal(err)
			}
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
