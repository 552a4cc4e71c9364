package real

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
)

// slowService answers every call 300 ms after it comes, and counts the
// calls it was given (its one handler's loop alone touches served).
type slowService struct{ served int }

func (s *slowService) Serve(loop model.Loop, _ uint8, payload []byte, done func(rpc.Status, []byte)) {
	s.served++
	loop.AfterFunc(300*time.Millisecond, func() { done(rpc.StatusOK, payload) })
}

// A client that pipelines four calls to a server with one handler and
// hangs up 100 ms later, on real sockets: the call being served then runs
// to its end, and the three still queued are skipped when the handler
// takes them, at 300 ms, where a server that serves them
// (ServesDeadCalls) spends the next 300 ms on one whose answer nobody
// reads.
func TestRPCDeadCallsSkippedReal(t *testing.T) {
	for _, bug := range []bool{false, true} {
		t.Run(fmt.Sprintf("serves-dead=%v", bug), func(t *testing.T) {
			w, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			var srv *rpc.Server
			svc := &slowService{}
			_, err = w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
				srv, err = rpc.StartServer(p, p.MainLoop(), svc, rpc.ServerConfig{Addr: "127.0.0.1:0", Readers: 1, Handlers: 1,
					IdleTimeout: 10 * time.Second, Bugs: rpc.ServerBugs{ServesDeadCalls: bug}})
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
					for k := 0; k < 4; k++ {
						cl.Call(addr, 1, []byte{byte(k)}, func(rpc.Reply) {})
					}
					loop.AfterFunc(100*time.Millisecond, cl.Close)
					// Past the first call's end, before a second's.
					loop.AfterFunc(500*time.Millisecond, w.Stop)
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Run(20 * time.Second); err != nil {
				t.Fatal(err)
			}
			st := srv.Stats()
			_ = w.Close()
			switch {
			case !bug && (svc.served != 1 || st.Skipped != 3 || st.DeadServed != 0):
				t.Errorf("served %d, skipped %d, served dead %d; want the call in service when the client hung up served, the 3 queued skipped", svc.served, st.Skipped, st.DeadServed)
			case bug && (svc.served != 2 || st.DeadServed != 1):
				t.Errorf("serving dead calls: served %d, %d of them dead; want 2, the second dead (the test no longer tells the two apart)", svc.served, st.DeadServed)
			}
		})
	}
}
