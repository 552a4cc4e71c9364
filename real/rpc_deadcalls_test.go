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
			svc := &slowService{}
			w, srv := hangUpAfterCalls(t, svc, rpc.ServerConfig{Bugs: rpc.ServerBugs{ServesDeadCalls: bug}},
				4, 400*time.Millisecond) // past the first call's end, before a second's
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
