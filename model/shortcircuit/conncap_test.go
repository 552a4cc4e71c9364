package shortcircuit_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// Domain connections count against the datanode's connection cap
// (Datanode.TakePeer), whoever holds them: three users flooding 4 idle
// connections each, every one within MaxConnsPerUser, hold no more than
// MaxConns-1 between them (one is left for TCP; the rest wait in the
// accept queue), and an honest client's REQUEST_SHM is answered once the
// oldest of them have been silent for model.IdleGrace, each closed to make
// room. With Bugs.UncappedConns (sc-conns-uncapped) all 12 are served,
// and nothing bounds them but each user's own bound.
func TestDomainConnsCountAgainstDatanodeCap(t *testing.T) {
	for _, tc := range []struct {
		bugs                shortcircuit.ServerBugs
		peers, evicted      int
		answeredAfterGrace  bool
		finalPeersAtMostCap bool
	}{
		{shortcircuit.ServerBugs{}, 7, 6, true, true},
		{shortcircuit.ServerBugs{UncappedConns: true}, 12, 0, false, false},
	} {
		r := connCapRun(t, tc.bugs)
		if r.peers != tc.peers {
			t.Errorf("%+v: %d domain connections served during the flood, want %d", tc.bugs, r.peers, tc.peers)
		}
		if r.status != model.StatusSuccess || r.fds != 1 {
			t.Errorf("%+v: the honest REQUEST_SHM got %s with %d fds, want SUCCESS with 1", tc.bugs, r.status, r.fds)
		}
		if after := r.answeredAt >= model.IdleGrace; after != tc.answeredAfterGrace {
			t.Errorf("%+v: the honest REQUEST_SHM answered at %v (IdleGrace %v)", tc.bugs, r.answeredAt, model.IdleGrace)
		}
		if r.evicted != tc.evicted {
			t.Errorf("%+v: Stats().Evicted %d, want %d", tc.bugs, r.evicted, tc.evicted)
		}
		if r.maxPeers > 7 && tc.finalPeersAtMostCap {
			t.Errorf("%+v: up to %d domain connections at once, cap 8 with 1 left for TCP", tc.bugs, r.maxPeers)
		}
	}
}

type connCapResult struct {
	peers, maxPeers, evicted, fds int
	status                        model.Status
	answeredAt                    time.Duration
}

func connCapRun(t *testing.T, bugs shortcircuit.ServerBugs) (r connCapResult) {
	r.status = model.Status(255)
	cappedWorld(t, 8, shortcircuit.ServerConfig{MaxConnsPerUser: 4, Bugs: bugs}, nil, func(w *sim.World, p model.Process, _ *model.Datanode, srv *shortcircuit.Server) {
		var sample func()
		sample = func() {
			r.maxPeers = max(r.maxPeers, srv.Conns())
			if p.MainLoop().Now() < 20*time.Millisecond {
				p.MainLoop().AfterFunc(100*time.Microsecond, sample)
			}
		}
		sample()
		p.MainLoop().AfterFunc(time.Millisecond, func() { r.peers = srv.Conns() })
		p.MainLoop().AfterFunc(20*time.Millisecond, func() { r.evicted = srv.Stats().Evicted })
		for u := range 3 {
			floodDomain(w, fmt.Sprintf("flooder-%d", u), 4)
		}
		askShm(w, "reader", func(resp shortcircuit.Response, fds int, at time.Duration) {
			r.status, r.fds, r.answeredAt = resp.Status, fds, at
		})
	})
	return r
}

// cappedWorld runs, for 30 ms of a sim world, a datanode with maxConns
// and its domain endpoint at /run/dn_socket (scfg, its Path set here);
// setup (nil: none) runs on the datanode's process before either starts,
// script once both are up.
func cappedWorld(t *testing.T, maxConns int, scfg shortcircuit.ServerConfig, setup func(p model.Process) error,
	script func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server)) {
	t.Helper()
	cappedWorldCfg(t, sim.DefaultConfig(1), maxConns, scfg, setup, script)
}

// cappedWorldCfg is cappedWorld in a world of cfg.
func cappedWorldCfg(t *testing.T, cfg sim.Config, maxConns int, scfg shortcircuit.ServerConfig, setup func(p model.Process) error,
	script func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server)) {
	t.Helper()
	domainWorld(t, cfg, 30*time.Millisecond, maxConns, scfg, setup, script)
}

// domainWorld is cappedWorldCfg run for d of world time (the world's
// limit is then twice that, at least a minute).
func domainWorld(t *testing.T, cfg sim.Config, d time.Duration, maxConns int, scfg shortcircuit.ServerConfig, setup func(p model.Process) error,
	script func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server)) {
	t.Helper()
	w := sim.New(cfg)
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		if setup != nil {
			if err := setup(p); err != nil {
				w.Fail(err)
				return
			}
		}
		dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010", MaxConns: maxConns})
		if err != nil {
			w.Fail(err)
			return
		}
		scfg.Path = "/run/dn_socket"
		srv, err := shortcircuit.Start(dn, scfg)
		if err != nil {
			w.Fail(err)
			return
		}
		script(w, p, dn, srv)
		p.MainLoop().AfterFunc(d, w.Stop)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(max(time.Minute, 2*d)); err != nil {
		t.Fatal(err)
	}
}

// floodDomain spawns a process named name that opens n domain
// connections and sends nothing on them.
func floodDomain(w *sim.World, name string, n int) { flood(w, name, "unix", "/run/dn_socket", n) }

// floodTCP is floodDomain on the datanode's TCP port.
func floodTCP(w *sim.World, name string, n int) { flood(w, name, "tcp", "dn:50010", n) }

func flood(w *sim.World, name, network, addr string, n int) {
	w.Spawn(name, model.ProcessConfig{}, func(fl model.Process) {
		for range n {
			if _, err := fl.Dial(network, addr, fl.MainLoop(), func(model.Events) {}); err != nil {
				w.Fail(err)
			}
		}
	})
}

// askShm spawns a process named name that, 1 ms in, sends a REQUEST_SHM
// on a domain connection of its own; got hears the first response, with
// the fds that came with it and when.
func askShm(w *sim.World, name string, got func(resp shortcircuit.Response, fds int, at time.Duration)) {
	w.Spawn(name, model.ProcessConfig{}, func(rp model.Process) {
		l := rp.MainLoop()
		l.AfterFunc(time.Millisecond, func() {
			var c model.Conn
			var in []byte
			var files []model.File
			answered := false
			c, err := rp.Dial("unix", "/run/dn_socket", l, func(model.Events) {
				var b [256]byte
				n, fs, _ := c.ReadFDs(b[:])
				in, files = append(in, b[:n]...), append(files, fs...)
				if resp, _, err := shortcircuit.DecodeResponse(in); err == nil && !answered {
					answered = true
					got(resp, len(files), l.Now())
				}
			})
			if err != nil {
				w.Fail(err)
				return
			}
			c.Write(shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: name}))
		})
	})
}

// A burst of domain connections that each ask for data (handed over to
// the datanode) never takes the datanode past its cap: a connection's
// room passes from the domain endpoint to the datanode in one step
// (Adopt). When the endpoint gave it back at the hand-over and the
// datanode took it up only in a task posted for later, the room was
// counted by neither in between, and 30 such connections reached 10
// against a cap of 8 (a burst of 1,500 filled a 1,024-fd table).
func TestHandOverKeepsTheCap(t *testing.T) {
	const size = 1 << 20
	most := 0
	cappedWorld(t, 8, shortcircuit.ServerConfig{}, writeBlock(size), func(w *sim.World, _ model.Process, dn *model.Datanode, srv *shortcircuit.Server) {
		w.AfterEach(func() { most = max(most, dn.Conns()+srv.Conns()) })
		w.Spawn("reader", model.ProcessConfig{}, func(rp model.Process) {
			// Whole-block reads, never read back: each holds its
			// connection busy for the rest of the run.
			req := model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: 1, Length: size, ClientName: "reader"})
			for range 30 {
				c, err := rp.Dial("unix", "/run/dn_socket", rp.MainLoop(), func(model.Events) {})
				if err != nil {
					w.Fail(err)
					return
				}
				c.Write(req)
			}
		})
	})
	if most == 0 || most > 8 {
		t.Errorf("up to %d connections, the datanode's and the domain endpoint's together, with a cap of 8", most)
	}
}

// With the cap full of connections that are not idle (each keeps a
// segment), a new connection waits unread for room; when one of them
// closes, the waiting one is let in at once. Nothing else lets it in:
// there is no idle connection of either kind to close, and the endpoint
// does not poll for room. A segment's connection holds an fd but no place
// in MaxConns (Datanode.WatchPeer), so the cap here is the fd table's:
// 138 fds, less the 130 the datanode keeps in reserve (64, the pool's 64
// and two a selector), leave 8.
func TestCloseLetsWaitingConnIn(t *testing.T) {
	const closeAt = 3500 * time.Microsecond
	answeredAt := time.Duration(-1)
	cfg := sim.DefaultConfig(1)
	cfg.FDLimit = 138
	cappedWorldCfg(t, cfg, 0, shortcircuit.ServerConfig{}, nil, func(w *sim.World, p model.Process, _ *model.Datanode, srv *shortcircuit.Server) {
		w.Spawn("squatter", model.ProcessConfig{}, func(sq model.Process) {
			var conns []model.Conn
			for range 7 { // the cap's 8 less the one left for TCP
				c, err := sq.Dial("unix", "/run/dn_socket", sq.MainLoop(), func(model.Events) {})
				if err != nil {
					w.Fail(err)
					return
				}
				c.Write(shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "squatter"}))
				conns = append(conns, c)
			}
			sq.MainLoop().AfterFunc(closeAt, func() { conns[0].Close() })
		})
		askShm(w, "reader", func(resp shortcircuit.Response, fds int, at time.Duration) {
			if resp.Status == model.StatusSuccess && fds == 1 {
				answeredAt = at
			}
		})
	})
	if answeredAt < closeAt || answeredAt > closeAt+200*time.Microsecond {
		t.Errorf("the REQUEST_SHM waiting for room was answered at %v; a connection closed at %v, want within 200µs of it", answeredAt, closeAt)
	}
}

// A cap with no room for any domain connection (MaxConns 1: its one
// place is kept for TCP clients) refuses each at once, as past the cap:
// one kept waiting for room that can never come held its fd after its
// client gave up, and the endpoint accepted nothing more. Both of two
// connections are closed as accepted, and counted refused.
func TestDomainConnsRefusedWhenNoneFit(t *testing.T) {
	conns := make([]*scriptedConn, 2)
	refused := -1
	cappedWorld(t, 1, shortcircuit.ServerConfig{}, nil, func(w *sim.World, p model.Process, _ *model.Datanode, srv *shortcircuit.Server) {
		p.MainLoop().AfterFunc(20*time.Millisecond, func() { refused = srv.Stats().Refused })
		scriptConns(w, "subject", conns, []time.Duration{0, time.Millisecond}, nil)
	})
	for i, c := range conns {
		if c == nil {
			t.Fatalf("connection %d never connected", i)
		}
		if c.closedAt < 0 || c.closedAt > time.Duration(i+1)*time.Millisecond {
			t.Errorf("connection %d, opened at %v: closed at %v (-1: open); want it closed as soon as accepted", i, time.Duration(i)*time.Millisecond, c.closedAt)
		}
	}
	if refused != 2 {
		t.Errorf("%d refused, want 2", refused)
	}
}

// A segment's connection gives its place in MaxConns back once the
// segment is granted, keeping only its fd counted, as HDFS's DataXceiver
// releases the peer it hands to its DomainSocketWatcher. At MaxConns 2
// (one place for a domain connection: PeerRoom keeps the last for TCP
// clients) a reader's fd request then finds the place its segment's
// request used: two reads of different blocks are short-circuit and take
// a millisecond at most. Counted as a place for as long as the segment
// lived (SegmentKeepsPlace, as before), the segment held the one place,
// and the first fd request waited out its timeout (a minute by default,
// 2 s here) before the read went over TCP.
func TestSegmentTakesNoPlaceInTheCap(t *testing.T) {
	for _, bug := range []bool{false, true} {
		var took [2]time.Duration
		var st shortcircuit.ClientStats
		var after rest
		e := startEnvDN(t, simWorld(), model.DatanodeConfig{Addr: "dn:50010", MaxConns: 2}, "/run/dn_socket", shortcircuit.ServerBugs{SegmentKeepsPlace: bug},
			shortcircuit.SharedConfig{Timeout: 2 * time.Second}, shortcircuit.ClientConfig{}, func(e *env) {
				read := func(i int, block uint64) func(next func()) {
					return func(next func()) {
						start := e.cp.MainLoop().Now()
						e.cl.Read(block, 0, 0, blockLen, func(r model.Result) {
							took[i] = e.cp.MainLoop().Now() - start
							if r.Err != nil || !bytes.Equal(r.Data, model.BlockContent(block, blockLen)) {
								e.w.Fail(fmt.Errorf("read of block %d: err %v, %d bytes", block, r.Err, len(r.Data)))
							}
							next()
						})
					}
				}
				steps(read(0, 1), read(1, 2), func(next func()) { st = e.cl.Stats(); next() }, e.finish(&after))
			})
		slow := took[0] > time.Millisecond || took[1] > time.Millisecond || st.LocalReads != 2
		if slow != bug {
			t.Errorf("segment keeps its place %v: reads took %v and %v, %d of 2 short-circuit; want both short-circuit within 1 ms unless it does", bug, took[0], took[1], st.LocalReads)
		}
		e.checkRest(t, after)
	}
}

// A segment's grant gives its connection's place back at once, and lets
// in a connection kept waiting for it. At MaxConns 2 (one place for
// domain connections) a connection dialed at 1 ms takes the place, and
// one dialed at 1.05 ms waits unread (the first is too young to close
// for room); both ask for a segment at 1.2 ms. The first's grant must let
// the second in: nothing else would, since no connection closes and the
// endpoint does not poll for room.
func TestSegmentGrantLetsWaitingConnIn(t *testing.T) {
	conns := make([]*scriptedConn, 2)
	answered := []time.Duration{-1, -1}
	cappedWorld(t, 2, shortcircuit.ServerConfig{}, nil, func(w *sim.World, p model.Process, _ *model.Datanode, srv *shortcircuit.Server) {
		scriptConns(w, "subject", conns, []time.Duration{time.Millisecond, 1050 * time.Microsecond}, func(sp model.Process) {
			l := sp.MainLoop()
			l.AfterFunc(1200*time.Microsecond, func() {
				for i, c := range conns {
					c.got = func() {
						if resp, _, err := shortcircuit.DecodeResponse(c.res.got); err == nil && answered[i] < 0 && resp.Status == model.StatusSuccess && len(c.res.files) == 1 {
							answered[i] = l.Now()
						}
					}
					c.c.Write(shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "subject"}))
				}
			})
		})
	})
	if answered[0] < 0 || answered[1] < 0 || answered[1] > answered[0]+100*time.Microsecond {
		t.Errorf("segments granted at %v and %v (-1: never): want the second within 100µs of the first, let in by its grant", answered[0], answered[1])
	}
}
