package shortcircuit_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// The datanode and its domain endpoint share one connection cap, so a full
// cap must make room by closing the oldest idle connection of either kind:
// each side closing only its own left a cap full of the other's idlers
// closed for nobody until their read timeouts, a minute.
//
// Here 7 to 12 TCP connections that send nothing fill a cap of 8 (a
// domain connection never takes TCP's last place, so from 8 on more than
// one must close), and a reader asks for a segment 1 ms in: it is
// answered once the oldest idlers have been silent for model.IdleGrace
// and the datanode has closed as many as it needs for room.
func TestDomainRequestEvictsIdleTCP(t *testing.T) {
	const asked = time.Millisecond
	for _, idlers := range []int{7, 8, 9, 12} {
		var (
			answered   bool
			status     model.Status
			answeredAt time.Duration
			asks       int
			evicted    int
		)
		cappedWorld(t, 8, shortcircuit.ServerConfig{}, nil, func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server) {
			p.MainLoop().AfterFunc(20*time.Millisecond, func() { asks, evicted = dn.Stats().IdleAsks, srv.Stats().Evicted })
			floodTCP(w, "tcp-idler", idlers)
			askShm(w, "reader", func(resp shortcircuit.Response, _ int, at time.Duration) {
				answered, status, answeredAt = true, resp.Status, at
			})
		})
		if !answered {
			t.Errorf("%d idle TCP connections: the REQUEST_SHM was never answered in 30 ms (datanode idle asks %d): the cap stayed full", idlers, asks)
			continue
		}
		if status != model.StatusSuccess {
			t.Errorf("%d idle TCP connections: the REQUEST_SHM got %s, want SUCCESS", idlers, status)
		}
		if limit := asked + model.IdleGrace + 500*time.Microsecond; answeredAt > limit {
			t.Errorf("%d idle TCP connections: the REQUEST_SHM answered at %v, want by %v", idlers, answeredAt, limit)
		}
		if asks < 1 || evicted != 0 {
			t.Errorf("%d idle TCP connections: datanode idle asks %d, domain evictions %d: want idle TCP connections closed, no domain one", idlers, asks, evicted)
		}
	}
}

// The other way round: 7 domain connections that send nothing hold all the
// cap but TCP's last place, and 20 TCP readers connect 3 ms in, each
// holding its connection after its read (it never sends the final
// status). The datanode serves up to 16 connections past its cap (with a
// handle pool) while it closes idle ones, but closing only its own it
// found none: 24 connections against a cap of 8, and 3 readers left in
// the listen backlog until a read timeout, a minute. Closing the oldest
// idle connection of either kind serves every reader at once.
func TestTCPReadersEvictIdleDomainConns(t *testing.T) {
	const (
		size    = 4096
		readers = 20
		connect = 3 * time.Millisecond
	)
	served := map[int]time.Duration{}
	var evicted, most int
	cappedWorld(t, 8, shortcircuit.ServerConfig{}, writeBlock(size), func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server) {
		w.AfterEach(func() { most = max(most, dn.Conns()+srv.Conns()) })
		p.MainLoop().AfterFunc(20*time.Millisecond, func() { evicted = srv.Stats().Evicted })
		floodDomain(w, "domain-idler", 7)
		req := readRequest(size)
		for i := range readers {
			holdRead(w, fmt.Sprintf("reader-%d", i), connect, 0, req, func(at time.Duration) { served[i] = at })
		}
	})
	late := 0
	for i := range readers {
		if at, ok := served[i]; !ok || at > connect+time.Millisecond {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d of %d TCP readers not answered within 1 ms of connecting (domain evictions %d, up to %d connections at once)", late, readers, evicted, most)
	}
	if evicted != 7 {
		t.Errorf("Stats().Evicted %d, want 7 (every idle domain connection closed for the readers)", evicted)
	}
}

// A domain connection kept waiting while the cap is full of busy TCP
// connections gets the room of a TCP connection that arrives later and
// sends nothing, once the datanode has asked every older one: the accept
// itself looks for room for the waiting peer. 7 readers hold their
// connections (a domain one may not take TCP's last place), a REQUEST_SHM
// waits from 1 ms, an idler connects at 5 ms and a reader goes at 6 ms:
// the REQUEST_SHM is answered once the idler is IdleGrace old and closed.
func TestWaitingPeerEvictsLaterIdleTCP(t *testing.T) {
	const idlerAt = 5 * time.Millisecond
	answered := time.Duration(-1)
	cappedWorld(t, 8, shortcircuit.ServerConfig{}, writeBlock(4096), func(w *sim.World, _ model.Process, _ *model.Datanode, _ *shortcircuit.Server) {
		for i := range 7 {
			closeAt := time.Duration(0)
			if i == 0 {
				closeAt = 6 * time.Millisecond
			}
			holdRead(w, fmt.Sprintf("reader-%d", i), 0, closeAt, readRequest(4096), func(time.Duration) {})
		}
		askShm(w, "shm-reader", func(_ shortcircuit.Response, _ int, at time.Duration) { answered = at })
		w.Spawn("tcp-idler", model.ProcessConfig{}, func(ip model.Process) {
			ip.MainLoop().AfterFunc(idlerAt, func() {
				if _, err := ip.Dial("tcp", "dn:50010", ip.MainLoop(), func(model.Events) {}); err != nil {
					w.Fail(err)
				}
			})
		})
	})
	if limit := idlerAt + model.IdleGrace + 500*time.Microsecond; answered < 0 || answered > limit {
		t.Errorf("the REQUEST_SHM answered at %v (-1: never), want by %v", answered, limit)
	}
}

// writeBlock writes block 1, size bytes, into the datanode's store.
func writeBlock(size int) func(p model.Process) error {
	return func(p model.Process) error {
		_, err := model.NewBlockStore(p.Disk(), "data").Write(1, model.BlockContent(1, size))
		return err
	}
}

// readRequest asks for the first length bytes of block 1, with a token.
func readRequest(length int64) []byte {
	tok := model.IssueToken(model.DefaultTokenKey, model.BlockToken{BlockID: 1, Modes: model.ModeRead, Expiry: time.Hour})
	return model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: 1, Length: length, ClientName: "reader", Token: tok})
}

// holdRead spawns a process named name that connects over TCP at at,
// sends req once connected, reads what comes and never sends the read's
// final status, so the datanode's connection stays busy until it closes
// it at closeAt (0: never); served hears when the first bytes came.
func holdRead(w *sim.World, name string, at, closeAt time.Duration, req []byte, served func(time.Duration)) {
	w.Spawn(name, model.ProcessConfig{}, func(rp model.Process) {
		l := rp.MainLoop()
		l.AfterFunc(at, func() {
			var c model.Conn
			if closeAt > 0 {
				l.AfterFunc(closeAt-at, func() { c.Close() })
			}
			sent, first := false, true
			c, err := rp.Dial("tcp", "dn:50010", l, func(ev model.Events) {
				if ev&model.Writable != 0 && !sent {
					// Connected: the request goes now, whole.
					sent = true
					c.Write(req)
				}
				if ev&model.Readable == 0 {
					return
				}
				if first {
					first = false
					served(l.Now())
				}
				var b [8192]byte
				for {
					if n, _ := c.Read(b[:]); n == 0 {
						return
					}
				}
			})
			if err != nil {
				w.Fail(err)
			}
		})
	})
}

// A cap exactly full, or full but for TCP's last place, with nothing
// waiting for room, needs no room: no idle connection is closed for it,
// however long its idlers stay silent (closing one at the cap, or for a
// peer that is not there, drops a client's connection for nobody).
func TestFullCapWithNoOneWaitingClosesNothing(t *testing.T) {
	for _, idlers := range []int{7, 8} {
		var asks, evicted, conns int
		cappedWorld(t, 8, shortcircuit.ServerConfig{}, nil, func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server) {
			p.MainLoop().AfterFunc(20*time.Millisecond, func() {
				asks, evicted, conns = dn.Stats().IdleAsks, srv.Stats().Evicted, dn.Conns()
			})
			floodTCP(w, "tcp-idler", idlers)
		})
		if asks != 0 || evicted != 0 || conns != idlers {
			t.Errorf("%d idle TCP connections, cap 8, no one waiting: datanode idle asks %d, domain evictions %d, %d connections left: want none asked or closed",
				idlers, asks, evicted, conns)
		}
	}
}

// The eviction closes the oldest idle connection of either kind first:
// one idle TCP connection and 6 idle domain ones (all the cap but TCP's
// last place), one kind 500µs before the other, and a REQUEST_SHM at 1 ms
// that needs one closed. Whichever connected first is closed, and only it.
func TestEvictionClosesTheOlderKindFirst(t *testing.T) {
	const later = 500 * time.Microsecond
	for _, tcpFirst := range []bool{true, false} {
		var asks, evicted int
		answered := false
		cappedWorld(t, 8, shortcircuit.ServerConfig{}, nil, func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server) {
			p.MainLoop().AfterFunc(20*time.Millisecond, func() { asks, evicted = dn.Stats().IdleAsks, srv.Stats().Evicted })
			tcpAt, domainAt := time.Duration(0), later
			if !tcpFirst {
				tcpAt, domainAt = later, 0
			}
			w.Spawn("idler", model.ProcessConfig{}, func(ip model.Process) {
				l := ip.MainLoop()
				l.AfterFunc(tcpAt, func() {
					if _, err := ip.Dial("tcp", "dn:50010", l, func(model.Events) {}); err != nil {
						w.Fail(err)
					}
				})
				l.AfterFunc(domainAt, func() {
					for range 6 {
						if _, err := ip.Dial("unix", "/run/dn_socket", l, func(model.Events) {}); err != nil {
							w.Fail(err)
						}
					}
				})
			})
			askShm(w, "reader", func(resp shortcircuit.Response, _ int, _ time.Duration) {
				answered = resp.Status == model.StatusSuccess
			})
		})
		wantAsks, wantEvicted := 1, 0
		if !tcpFirst {
			wantAsks, wantEvicted = 0, 1
		}
		if !answered || asks != wantAsks || evicted != wantEvicted {
			t.Errorf("TCP idler first %v: REQUEST_SHM answered %v, datanode idle asks %d, domain evictions %d: want answered, %d and %d",
				tcpFirst, answered, asks, evicted, wantAsks, wantEvicted)
		}
	}
}

// TCP readers that hold their connections take the datanode past its cap
// while the domain idlers that fill it are too young to close: once they
// are old enough, one walk closes as many of them as the cap needs (each
// closed gives back one place), not one per walk with no walk after it.
func TestOneWalkClosesEnoughIdleDomainConns(t *testing.T) {
	const readers = 4
	var evicted, conns, peers int
	cappedWorld(t, 8, shortcircuit.ServerConfig{}, writeBlock(4096), func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server) {
		p.MainLoop().AfterFunc(20*time.Millisecond, func() { evicted, conns, peers = srv.Stats().Evicted, dn.Conns(), srv.Conns() })
		floodDomain(w, "domain-idler", 7)
		for i := range readers {
			holdRead(w, fmt.Sprintf("reader-%d", i), 500*time.Microsecond, 0, readRequest(4096), func(time.Duration) {})
		}
	})
	if conns != readers || evicted != readers-1 || conns+peers > 8 {
		t.Errorf("%d busy TCP readers over 7 idle domain connections, cap 8: %d TCP and %d domain connections left, %d evicted: want %d evicted, none over the cap",
			readers, conns, peers, evicted, readers-1)
	}
}
