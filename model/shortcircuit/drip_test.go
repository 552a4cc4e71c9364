package shortcircuit_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// A connection that has sent part of a request is not silent, and each
// byte restarts its read timeout: two users dripping a REQUEST_SHM a byte
// every 200 µs from 0.9 ms into 4 connections each, within
// MaxConnsPerUser, hold all
// the cap of 8 but TCP's last place. An honest client's REQUEST_SHM, 1 ms
// in, is answered once the oldest of them has kept its request partial for
// model.IdleGrace and is closed to make room. With Bugs.EvictSilentOnly
// (sc-drip) only connections that never sent a byte make room, and the
// request waits out the read timeout, a minute: past the 30 ms run.
func TestDripConnsMakeRoom(t *testing.T) {
	// The drippers connect at once and send their first bytes just
	// before the honest request: silent until then, partial after.
	const first = 900 * time.Microsecond
	for _, tc := range []struct {
		bugs     shortcircuit.ServerBugs
		answered bool
	}{
		{shortcircuit.ServerBugs{}, true},
		{shortcircuit.ServerBugs{EvictSilentOnly: true}, false},
	} {
		answeredAt, evicted, served := time.Duration(-1), 0, 0
		cappedWorld(t, 8, shortcircuit.ServerConfig{MaxConnsPerUser: 4, Bugs: tc.bugs}, nil, func(w *sim.World, p model.Process, _ *model.Datanode, srv *shortcircuit.Server) {
			p.MainLoop().AfterFunc(900*time.Microsecond, func() { served = srv.Conns() })
			p.MainLoop().AfterFunc(20*time.Millisecond, func() { evicted = srv.Stats().Evicted })
			for u := range 2 {
				dripDomain(w, fmt.Sprintf("dripper-%d", u), 4, first, 200*time.Microsecond)
			}
			askShm(w, "reader", func(resp shortcircuit.Response, fds int, at time.Duration) {
				if resp.Status == model.StatusSuccess && fds == 1 {
					answeredAt = at
				}
			})
		})
		if served != 7 {
			t.Errorf("%+v: %d dripping connections served, want 7 (the cap of 8 less TCP's place)", tc.bugs, served)
		}
		// Not before the oldest request has been partial for IdleGrace: a
		// request partial a moment ago may be on its way.
		from, limit := first+model.IdleGrace, time.Millisecond+model.IdleGrace+500*time.Microsecond
		if got := answeredAt >= 0 && answeredAt <= limit; got != tc.answered {
			t.Errorf("%+v: the honest REQUEST_SHM answered at %v (-1: not in 30 ms), want answered by %v: %v", tc.bugs, answeredAt, limit, tc.answered)
		}
		if answeredAt >= 0 && answeredAt < from {
			t.Errorf("%+v: the honest REQUEST_SHM answered at %v, before any dripped request was partial for IdleGrace (%v)", tc.bugs, answeredAt, from)
		}
		if tc.answered && evicted == 0 {
			t.Errorf("%+v: no dripping connection evicted", tc.bugs)
		}
	}
}

// dripDomain spawns a process named name that opens n domain connections
// and sends a byte of a REQUEST_SHM on each first after and every every
// after that, never its last.
func dripDomain(w *sim.World, name string, n int, first, every time.Duration) {
	w.Spawn(name, model.ProcessConfig{}, func(dp model.Process) {
		req := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: string(make([]byte, model.MaxClientNameLen))})
		var conns []model.Conn
		for range n {
			c, err := dp.Dial("unix", "/run/dn_socket", dp.MainLoop(), func(model.Events) {})
			if err != nil {
				w.Fail(err)
				return
			}
			conns = append(conns, c)
		}
		sent := 0
		var drip func()
		drip = func() {
			if sent == len(req)-1 {
				return
			}
			for _, c := range conns {
				c.Write(req[sent : sent+1])
			}
			sent++
			dp.MainLoop().AfterFunc(every, drip)
		}
		dp.MainLoop().AfterFunc(first, drip)
	})
}
