package shortcircuit_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
)

// The domain connection a client caches after an fd request expires
// idleExpiry (3 s) after its last use, not after the first: reused 2 s
// after the first request, it is still there 1.5 s later (3.5 s after
// the first request), and then closed once it has sat idle 3 s.
func TestCachedDomainConnectionExpiresFromItsLastUse(t *testing.T) {
	var accepted [3]int
	var fdsBefore, fdsAfter int
	var after rest
	e := startEnvCfg(t, simWorld(), shortcircuit.ServerBugs{}, func(e *env) {
		loop := e.cp.MainLoop()
		read := func(block uint64, i int) func(next func()) {
			return func(next func()) {
				e.cl.Read(block, 0, 0, 100, func(model.Result) {
					e.dnProc.MainLoop().Post(func() {
						accepted[i] = e.srv.Stats().Accepted
						loop.Post(next)
					})
				})
			}
		}
		wait := func(d time.Duration) func(next func()) {
			return func(next func()) { loop.AfterFunc(d, next) }
		}
		steps(
			read(1, 0), wait(2*time.Second),
			read(2, 1), wait(1500*time.Millisecond),
			read(3, 2),
			func(next func()) { fdsBefore = e.cp.FDs().Open; next() },
			wait(3100*time.Millisecond),
			func(next func()) { fdsAfter = e.cp.FDs().Open; next() },
			e.finish(&after),
		)
	})
	if accepted[0] < 2 || accepted[1] != accepted[0] || accepted[2] != accepted[0] {
		t.Errorf("domain connections the datanode accepted after each read: %v; want the second and third fd requests on the first's connection", accepted)
	}
	if fdsAfter != fdsBefore-1 {
		t.Errorf("client fds %d with the connection cached, %d after 3.1 s idle; want it closed", fdsBefore, fdsAfter)
	}
	e.checkRest(t, after)
}

// A client closed while its fd request is under way does not cache the
// request's connection when the answer comes: it is closed, and nothing
// is left open once the client and its shared state are closed. Each
// delay closes the client at another point of its first read; at least
// one must fall while the fd request is with the datanode, unanswered
// (the datanode has counted it, the client has no fds yet), or the test
// no longer tests that.
func TestClientClosedMidRequestCachesNoConnection(t *testing.T) {
	inFlight := 0
	for d := time.Duration(0); d <= 400*time.Microsecond; d += 10 * time.Microsecond {
		t.Run(fmt.Sprintf("closed %v in", d), func(t *testing.T) {
			var after rest
			e := startEnvCfg(t, simWorld(), shortcircuit.ServerBugs{}, func(e *env) {
				steps(
					func(next func()) {
						e.cl.Read(1, 0, 0, 100, func(model.Result) {})
						e.cp.MainLoop().AfterFunc(d, func() {
							if e.srv.Stats().FDRequests == 1 && e.cl.Stats().FDsReceived == 0 {
								inFlight++
							}
							e.cl.Close()
							next()
						})
					},
					e.finish(&after),
				)
			})
			e.checkRest(t, after) // (the client's fds at rest among them)
		})
	}
	if inFlight == 0 {
		t.Errorf("no delay closed the client while its fd request was with the datanode")
	}
}
