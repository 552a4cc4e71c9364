package shortcircuit_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// Which domain connection the shared cap's eviction closes for room. In
// each case the cap (8, so 7 domain places) is filled by the connections
// under test (a segment's takes no place once granted: WatchPeer) and by
// silent flooders that connect at 600µs, and a
// REQUEST_SHM at 1 ms needs one place: exactly one connection must be
// closed, the one idle longest (silent since its accept, or holding part
// of a request since it began), and never one that holds nothing after a
// request served, which the client caches for its next.
func TestEvictionClosesTheLongestIdle(t *testing.T) {
	const floodAt = 600 * time.Microsecond
	for _, tc := range []struct {
		name string
		// subjects runs the connections under test (n of them, with
		// the flooders filling the rest); closed is the one that must
		// be closed, -1 for a flooder.
		subjects func(w *sim.World, conns []*scriptedConn)
		n        int
		segs     int // of the n, those that keep a segment
		closed   int
		cfg      func(*sim.Config)
	}{{
		// The fd connection a reader keeps after its receipt has been
		// quiet the longest, but it is no idler: closing it for room
		// sends the reader to the back of the accept queue.
		name: "cached fd connection", n: 2, segs: 1, closed: -1,
		subjects: func(w *sim.World, conns []*scriptedConn) { cachedFDConn(w, conns, nil) },
	}, {
		// A request pipelined behind one that began before the
		// flooders came but was whole only after them is partial from
		// when that one was taken off, not from its first byte.
		name: "request pipelined behind a late one", n: 2, segs: 1, closed: -1,
		subjects: func(w *sim.World, conns []*scriptedConn) {
			cachedFDConn(w, conns, func(p model.Process, start time.Duration, shm uint64) {
				rel := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpReleaseSlot, ShmID: shm, Slot: 0})
				f, l := conns[1], p.MainLoop()
				l.AfterFunc(start+300*time.Microsecond-l.Now(), func() { f.c.Write(rel[:1]) })
				l.AfterFunc(start+900*time.Microsecond-l.Now(), func() { f.c.Write(append(rel[1:], rel[0])) })
			})
		},
	}, {
		// The later connection has been silent since before the
		// earlier one's first byte: it is the older idler, and the
		// walk in accept order must not stop at the earlier one.
		name: "later accept, idle longer", n: 2, closed: 1,
		subjects: func(w *sim.World, conns []*scriptedConn) {
			scriptConns(w, "subject", conns, []time.Duration{0, 200 * time.Microsecond}, func(p model.Process) {
				p.MainLoop().AfterFunc(400*time.Microsecond, func() { conns[0].c.Write([]byte{1}) })
			})
		},
	}, {
		// Two requests begun at the same instant (no CPU costs, so
		// both reads see one clock): the first accepted is closed. (A
		// zero CPUConfig is the defaults: the token's cost stays, and
		// nothing here issues one.)
		name: "tie", n: 2, closed: 0,
		cfg: func(c *sim.Config) { c.CPU = sim.CPUConfig{Token: time.Nanosecond} },
		subjects: func(w *sim.World, conns []*scriptedConn) {
			scriptConns(w, "subject", conns, []time.Duration{0, 200 * time.Microsecond}, func(p model.Process) {
				p.MainLoop().AfterFunc(400*time.Microsecond, func() {
					conns[0].c.Write([]byte{1})
					conns[1].c.Write([]byte{1})
				})
			})
		},
	}} {
		cfg := sim.DefaultConfig(1)
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		conns := make([]*scriptedConn, tc.n)
		var flooders []*scriptedConn
		answered, evicted := false, 0
		cappedWorldCfg(t, cfg, 8, shortcircuit.ServerConfig{}, writeBlock(4096), func(w *sim.World, p model.Process, _ *model.Datanode, srv *shortcircuit.Server) {
			p.MainLoop().AfterFunc(20*time.Millisecond, func() { evicted = srv.Stats().Evicted })
			tc.subjects(w, conns)
			flooders = make([]*scriptedConn, 7-tc.n+tc.segs)
			scriptConns(w, "flooder", flooders, []time.Duration{floodAt}, nil)
			askShm(w, "reader", func(resp shortcircuit.Response, fds int, _ time.Duration) {
				answered = resp.Status == model.StatusSuccess && fds == 1
			})
		})
		var closed []string
		for i, c := range conns {
			if c == nil {
				t.Fatalf("%s: subject %d never connected", tc.name, i)
			}
			if c.closedAt >= 0 {
				closed = append(closed, fmt.Sprintf("subject %d", i))
			}
		}
		for _, c := range flooders {
			if c.closedAt >= 0 {
				closed = append(closed, "flooder")
			}
		}
		want := "flooder"
		if tc.closed >= 0 {
			want = fmt.Sprintf("subject %d", tc.closed)
		}
		if !answered || evicted != 1 || len(closed) != 1 || closed[0] != want {
			t.Errorf("%s: REQUEST_SHM answered %v, %d evicted, closed %v: want answered, 1 evicted, [%s]", tc.name, answered, evicted, closed, want)
		}
	}
}

// The connection picked for room is read first, and closed only if it is
// still as idle as when picked: one whose first byte is read then has
// kept a request partial only from now, and one whose whole request is
// read then is being served. A domain connection silent since 0 and 6
// flooders from 1 ms fill the cap; at 2.5 ms the acceptor loop, busy for
// 20µs, posts a walk for room as the connection's bytes arrive (written
// 1µs before, 2µs on the way), their readiness queued behind the walk.
// The connection is left open (a whole request answered), and nothing is
// evicted: no flooder is IdleGrace old yet.
func TestEvictionSparesAConnWhoseIdleMoved(t *testing.T) {
	const at = 2500 * time.Microsecond
	req := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "subject"})
	for _, tc := range []struct {
		name string
		send func(c model.Conn)
	}{
		{"first byte", func(c model.Conn) { c.Write(req[:1]) }},
		{"whole request", func(c model.Conn) { c.Write(req) }},
	} {
		conns := make([]*scriptedConn, 1)
		evicted := -1
		cappedWorld(t, 8, shortcircuit.ServerConfig{}, nil, func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server) {
			p.MainLoop().AfterFunc(20*time.Millisecond, func() { evicted = srv.Stats().Evicted })
			scriptConns(w, "subject", conns, []time.Duration{0}, func(sp model.Process) {
				sp.MainLoop().AfterFunc(at-time.Microsecond-sp.MainLoop().Now(), func() { tc.send(conns[0].c) })
			})
			scriptConns(w, "flooder", make([]*scriptedConn, 6), []time.Duration{time.Millisecond}, nil)
			p.MainLoop().AfterFunc(at-p.MainLoop().Now(), func() {
				p.CPU(model.CPUParse, 100)
				p.MainLoop().Post(dn.MakePeerRoom)
			})
		})
		c := conns[0]
		if c == nil {
			t.Fatalf("%s: the connection never connected", tc.name)
		}
		answered := len(c.res.files) == 1
		if resp, _, err := shortcircuit.DecodeResponse(c.res.got); err != nil || resp.Status != model.StatusSuccess {
			answered = false
		}
		if c.closedAt >= 0 || evicted != 0 || answered != (tc.name == "whole request") {
			t.Errorf("%s came as the connection was picked for room: closed at %v (-1: open), %d evicted, answered %v; want it open, none evicted, a whole request answered",
				tc.name, c.closedAt, evicted, answered)
		}
	}
}

// scriptedConn is a domain connection a test drives by hand: res is what
// came back, closedAt when the datanode closed it (-1: open), and got
// (nil: none) hears each read.
type scriptedConn struct {
	c        model.Conn
	res      rawResult
	openedAt time.Duration // when it was dialed
	closedAt time.Duration
	got      func()
}

// scriptConns spawns a process named name that opens len(conns) domain
// connections into conns, the i-th at at[i] (the last of at for the
// rest), and sends nothing itself; then (nil: nothing) runs once the
// process is up.
func scriptConns(w *sim.World, name string, conns []*scriptedConn, at []time.Duration, then func(p model.Process)) {
	w.Spawn(name, model.ProcessConfig{}, func(p model.Process) {
		for i := range conns {
			p.MainLoop().AfterFunc(at[min(i, len(at)-1)], func() { conns[i] = dialScripted(w, p) })
		}
		if then != nil {
			then(p)
		}
	})
}

func dialScripted(w *sim.World, p model.Process) *scriptedConn {
	l := p.MainLoop()
	sc := &scriptedConn{openedAt: l.Now(), closedAt: -1}
	c, err := p.Dial("unix", "/run/dn_socket", l, func(model.Events) {
		if sc.closedAt >= 0 {
			return
		}
		if sc.res.take(sc.c) {
			sc.closedAt = l.Now()
			sc.c.Close() // or its EOF, still readable, calls again and again
		}
		if sc.got != nil {
			sc.got()
		}
	})
	if err != nil {
		w.Fail(err)
	}
	sc.c = c
	return sc
}

// cachedFDConn spawns a reader that, from the start, asks for a segment on
// conns[0] and for block 1's fds on conns[1], sends the receipt and keeps
// conns[1] for its next request, as the client caches it: served, holding
// nothing. then (nil: nothing) runs once the receipt is sent, told when
// the reader started (the times of the other processes' scripts count
// from then too) and its segment.
func cachedFDConn(w *sim.World, conns []*scriptedConn, then func(p model.Process, start time.Duration, shm uint64)) {
	w.Spawn("cached-reader", model.ProcessConfig{}, func(p model.Process) {
		start := p.MainLoop().Now()
		seg := dialScripted(w, p)
		conns[0] = seg
		seg.got = func() {
			resp, _, err := shortcircuit.DecodeResponse(seg.res.got)
			if err != nil || len(seg.res.files) != 1 {
				return
			}
			seg.got = nil
			seg.res.files[0].Close()
			f := dialScripted(w, p)
			conns[1] = f
			f.got = func() {
				if _, _, err := shortcircuit.DecodeResponse(f.res.got); err != nil || len(f.res.files) != 2 {
					return
				}
				f.got = nil
				for _, fl := range f.res.files {
					fl.Close()
				}
				f.c.Write([]byte{shortcircuit.ReceiptByte})
				if then != nil {
					then(p, start, resp.ShmID)
				}
			}
			f.c.Write(fdsReq(1, 0, resp.ShmID, 0, goodToken(1, 0)))
		}
		seg.c.Write(shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "cached-reader"}))
	})
}
