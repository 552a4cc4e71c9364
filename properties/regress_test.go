package properties

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"xceiver/model"
	"xceiver/sim"
)

// Regression tests for the data-path bugs the checks found (fixed in
// model/): each failed `xceiver check` on the correct code before its fix.

// inProcess runs f as the main of a fresh simulated process.
func inProcess(t *testing.T, f func(p model.Process)) *sim.World {
	t.Helper()
	w := sim.New(sim.DefaultConfig(1))
	if _, err := w.Spawn("p", model.ProcessConfig{}, f); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	return w
}

// A deleted block's stamp is never handed out again, even after a
// restart (Load alone only sees the stamps still on disk).
func TestStampNotReusedAfterDeleteAndRestart(t *testing.T) {
	inProcess(t, func(p model.Process) {
		s := model.NewBlockStore(p.Disk(), "d")
		s.KeepStampRecord(model.StampRecord)
		if err := s.Load(); err != nil {
			t.Fatal(err)
		}
		old, _ := s.Write(1, []byte("old"))
		if err := s.Delete(1); err != nil {
			t.Fatal(err)
		}
		again := model.NewBlockStore(p.Disk(), "d") // a restart
		again.KeepStampRecord(model.StampRecord)
		if err := again.Load(); err != nil {
			t.Fatal(err)
		}
		st, err := again.Write(1, []byte("new"))
		if err != nil || st <= old {
			t.Errorf("after delete and restart block 1 got stamp %d (err %v); it had %d: one (block, stamp), two contents", st, err, old)
		}
	})
}

// A woken read that no longer needs room (its block was deleted while it
// waited, or its connection closed) must not swallow the wake-up: the
// next waiter gets the free handle.
func TestPoolWakeUpIsNotLost(t *testing.T) {
	inProcess(t, func(p model.Process) {
		s := model.NewBlockStore(p.Disk(), "d")
		for id := uint64(1); id <= 4; id++ {
			s.Write(id, []byte("data"))
		}
		pool, err := model.NewHandlePool(s, model.HandlePoolConfig{Max: 2, IdleTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		h4, _ := pool.Acquire(4, 0, 0, nil) // the only room
		woke := map[string]bool{}
		wait := func(name string, block uint64) {
			if _, err := pool.Acquire(block, 0, 0, func() { woke[name] = true }); !errors.Is(err, model.ErrPoolFull) {
				t.Fatalf("%s: %v, want to wait", name, err)
			}
		}
		wait("X", 2)
		wait("A", 1)
		wait("B", 3)
		s.Delete(1) // wakes the head waiter, X, which finds no room and waits again
		if !woke["X"] {
			t.Fatal("delete woke no one")
		}
		wait("X", 2)
		pool.Release(h4, 0) // wakes A
		if !woke["A"] || woke["B"] {
			t.Fatalf("release woke %v, want A", woke)
		}
		if _, err := pool.Acquire(1, 0, 0, nil); !errors.Is(err, model.ErrNotExist) {
			t.Fatalf("A: %v", err)
		}
		if !woke["B"] {
			t.Fatal("A took no room, yet B sleeps beside a free handle")
		}
		h3, err := pool.Acquire(3, 0, 0, nil) // B
		if err != nil {
			t.Fatal(err)
		}
		woke["X"] = false
		pool.Release(h3, 0) // wakes X, whose connection has closed:
		pool.WakeWaiter()   // it passes the wake-up on (to no one here)
		if !woke["X"] || pool.Waiting() != 0 {
			t.Fatalf("woke %v, %d waiting", woke, pool.Waiting())
		}
	})
}

// A client that vanishes mid-request does not hold a datanode connection
// forever: the read timeout closes it.
func TestDatanodeReadTimeoutClosesHalfRequest(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var dn *model.Datanode
	w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		var err error
		dn, err = model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:1", ReadTimeout: time.Second})
		if err != nil {
			t.Error(err)
		}
	})
	var c model.Conn
	w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		req := model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: 1, Length: 10})
		sent := false
		c, _ = p.Dial("tcp", "dn:1", p.MainLoop(), func(ev model.Events) {
			if !sent && ev&model.Writable != 0 {
				sent = true
				c.Write(req[:5])
				c.SetWriteInterest(false)
			}
		})
	})
	w.RunFor(100 * time.Millisecond)
	if dn == nil || dn.Conns() != 1 {
		t.Fatal("no connection")
	}
	w.VanishConn(c.ID())
	w.RunFor(500 * time.Millisecond)
	if dn.Conns() != 1 {
		t.Fatal("closed before the read timeout")
	}
	w.RunFor(time.Second)
	if dn.Conns() != 0 {
		t.Fatalf("%d connections held for a vanished client past the read timeout", dn.Conns())
	}
}

// Rapid's seed 11 failed hostile-availability: a client whose timeout was
// drawn at 150 ms gave up waiting for a read of block 1 (shrunk: pool of
// one handle, a 2 KiB send buffer, so a 5 KB read then took two delayed
// ACKs, 88 ms). Its read queued first for block 1; another read of block 2 came
// in between while it was being woken and took the handle; then a later
// read of block 1 was woken first, opened block 1 and was served for 88 ms
// while the first read slept in the queue beside the handle it wanted. The
// pool now wakes the reads queued for a block when its handle is handed
// out. testdata/sharers-case.json is seed 11's case shrunk with that
// switched off (PoolSharersSleep): it must pass with the wake-ups and
// fail without them. (Re-found once more when the sim stopped letting a
// callback's interleaved events jump the line for a core: the case with
// its ops' gaps redrawn, then shrunk; and again when the sim's receive
// window took Linux's sizing, which moved every read's timing: the
// timeout drawn at 120 ms, the gaps redrawn; and again when a full-sized
// segment with PSH came to be ACKed at the read, as Linux 6.6+ does,
// which shortened the read: the timeout now 80 ms, and with the wake-ups
// off the case fails at 60 to 80 ms.)
func TestQueuedReadSharesOpenedHandle(t *testing.T) {
	c := mustPass(t, "testdata/sharers-case.json")
	c.Config.PoolSharersSleep = true
	mustFail(t, c, PropHostileAvail, "", "with the reads left asleep")
}

// check's seed 5945 failed hostile-availability (shrunk to 10 ops): with
// a pool of one handle, a read of block 2 waited behind a client that
// stopped reading, got the handle, and parked it when its own client's
// window closed while others waited; its idle handle was evicted for a
// read of block 3, then the same client appended to block 2, and the
// parked read could not take its replica back: a short stream. An append
// keeps the bytes the read was sending, so the pool now reopens the
// replica as it was (BlockStore.ReopenForRead, with its last partial
// chunk's checksum from memory). testdata/retake-appended-case.json is
// the shrunk case: it must pass, and fail with the old behaviour
// (PoolRetakeAppendedFails).
func TestParkedReadSurvivesAppend(t *testing.T) {
	c := mustPass(t, "testdata/retake-appended-case.json")
	c.Config.PoolRetakeAppendedFails = true
	mustFail(t, c, PropHostileAvail, "", "with a retake after an append failing")
}

// Rapid's seed 202 failed hostile-availability: a parked read's handle was
// evicted and its block then replaced by another client, so the bytes it
// was sending were gone. The datanode counts that loss (ParkedLost) and
// availability excuses exactly it: a short stream, counted, with a
// replace or delete of the block overlapping the read. The case must pass.
func TestParkedReadLostToReplaceIsExcused(t *testing.T) {
	mustPass(t, "testdata/parked-replaced-case.json")
}

// The saved parking cases again, with the datanode sending data through
// a buffer (NoTransferTo, drawn in 30% of check's runs) instead of
// sendfile. A read that parked there has its packet copied out already:
// once the packet is sent it takes its replica back with nothing pending
// and must go on to its next packet. retired-append-park is the case that
// takes that path; with takeHandle's sendNext removed (mutant 7f0b1c4dbe,
// which survived 3,000 check seeds) its read stalls until the client
// times out. Every case must pass.
func TestParkedReadsWithoutTransferTo(t *testing.T) {
	for _, name := range []string{"parked-replaced", "press-requeue", "retake-appended", "retire-parked", "retired-append-park", "retired-delete-park"} {
		c := loadCase(t, "testdata/"+name+"-case.json")
		c.Config.NoTransferTo = true
		if r := Run(c, Options{}); r.Failure != nil {
			t.Errorf("%s without transferTo: %s: %s", name, r.Failure.Property, r.Failure.Message)
		}
	}
}

// A random rapid draw (seed 9962580066681192302) failed availability with
// no fault and no hostile peer: a 67 KB read through a datanode send
// buffer drawn at 2 KiB took 27 delayed ACKs of 44 ms (1.19 s > 1 s). The
// bound now allows one delayed ACK per buffer's worth of a read when the
// buffer is drawn small; the case must pass.
func TestSmallSendBufferReadWithinBound(t *testing.T) {
	mustPass(t, "testdata/small-sndbuf-case.json")
}

// mustPass loads the case saved at path and fails the test unless every
// property holds on it; it returns the case, for a test that then switches
// a bug on.
func mustPass(t *testing.T, path string) Case {
	t.Helper()
	c := loadCase(t, path)
	if r := Run(c, Options{}); r.Failure != nil {
		t.Fatalf("%s: %s", r.Failure.Property, r.Failure.Message)
	}
	return c
}

// mustFail runs c, which switches an old behaviour on (what says which),
// and fails the test unless it fails prop with a message containing
// text: the saved case still reaches the path its fix changed.
func mustFail(t *testing.T, c Case, prop, text, what string) {
	t.Helper()
	r := Run(c, Options{})
	switch {
	case r.Failure == nil || r.Failure.Property != prop:
		t.Fatalf("%s: %v, want a %s failure", what, r.Failure, prop)
	case !strings.Contains(r.Failure.Message, text):
		t.Fatalf("%s: %s, want a message with %q", what, r.Failure.Message, text)
	}
}

// loadCase reads a drawn case saved as JSON.
func loadCase(t *testing.T, path string) Case {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c Case
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// check's seed 424 failed leak-freedom once the harness compared the
// datanode's write reservations with zero at quiescence: a threaded
// connection closed mid-write gave its reservation back through its own
// thread's loop, and the lock callback, still waiting behind a write's
// apply on a slow disk, was dropped when the thread closed: MaxBuffered
// shrank for good. testdata/release-case.json is the shrunk case of the
// catalogued bug that re-creates it (thread-release-lost): it must fail
// with the bug and pass without it.
func TestThreadCloseGivesBackReservation(t *testing.T) {
	c := loadCase(t, "testdata/release-case.json")
	if !c.Config.ReleaseOnThread {
		t.Fatal("the case does not switch the bug on")
	}
	mustFail(t, c, PropLeakFree, "", "with the bug")
	c.Config.ReleaseOnThread = false
	if r := Run(c, Options{}); r.Failure != nil {
		t.Fatalf("%s: %s", r.Failure.Property, r.Failure.Message)
	}
}

// Rapid's seed 9245888382777016345 failed hostile-availability (threaded,
// an fd limit of 160: 19 connections; an idle flood, other hostile peers,
// requests sent a byte a segment): the flood's idle peers had been closed
// and the other slots were busy, so when the datanode went over its cap
// the oldest connection it had heard nothing from was a client's, accepted
// 50 µs earlier, whose request was still in the datanode's input queue
// behind hundreds of one-byte segments. It closed it as idle; the client's
// fresh connection ended in an EOF. The datanode now counts a connection
// idle only once it has been open IdleGrace with nothing received, and
// looks again when the oldest is old enough. testdata/evict-fresh-case.json
// is the shrunk case: it must pass, and fail with the old eviction
// (EvictFresh, the catalogued bug evict-fresh).
func TestFreshConnectionIsNotEvicted(t *testing.T) {
	c := mustPass(t, "testdata/evict-fresh-case.json")
	c.Config.EvictFresh = true
	mustFail(t, c, PropHostileAvail, "datanode closed the connection", "with fresh connections evicted")
}

// Rapid's seed 899080127305464025 failed token: a rogue's read with an
// expired token was answered "no such file", not ERROR_ACCESS_TOKEN. The
// datanode had checked the token at 1.246 ms, before the rogue minted it
// at 1.252 ms: a connection thread's read blocked 1 s in a slow disk, and
// interleaving inside that callback ran the world to 1.46 ms, while the
// core the wait left free was counted free from the wait's start, so the
// acceptor and the new connection's thread then ran at their earlier
// times on what had happened since. The sim now interleaves a callback
// only up to where its device wait began (sim
// TestInterleaveStopsWhereADeviceWaitBegins fails on the old code). The
// shrunk case, testdata/device-wait-case.json, must pass.
func TestTokenCheckedAfterItIsMinted(t *testing.T) {
	mustPass(t, "testdata/device-wait-case.json")
}

// Rapid's seed 2054220441202865832 failed hostile-availability once a
// full datanode waited 10 ms before counting a connection idle: "client
// 2: read of block 2 took 1.005629307s > 1s" (threaded, a cap of 38
// connections, 153 idle peers arriving 50 µs apart). While none of the
// flood was old enough to close, the datanode stopped accepting, the
// listen backlog of 128 filled, the client's SYN was dropped and sent
// again after TCP's 1 s initial RTO. IdleGrace is now 2 ms (about 40
// queued at the flood's rate). testdata/flood-backlog-case.json, the
// shrunk case, must pass.
func TestFloodDoesNotOverflowBacklogDuringIdleGrace(t *testing.T) {
	mustPass(t, "testdata/flood-backlog-case.json")
}

// Rapid's seed 13661035114163955932 failed no-close-in-use: "the handle
// pool closed 1 handle(s) a read was using". A read's stall timer asked,
// under the lock, to retire its handle; by then the read had parked it, so
// Retire marked an idle handle with a parked read: pinned, yet still in
// the idle list, and the next eviction closed it (model
// TestHandlePoolRetireLeavesAnIdleParkedHandle fails on the old Retire).
// testdata/retire-parked-case.json, the shrunk case, must pass.
//
// That case is kept but no longer reaches the fix (found on 5 December: it
// passed on the old Retire, which it calls only for handles a read holds),
// but check found the old behaviour again at seed 13058 among 20,000 (four
// kinds of hostile peer, three non-readers among them; a replace and an
// append of block 1, and a probe read of block 2).
// testdata/retire-idle-case.json, that seed shrunk, must pass, and fail
// no-close-in-use with the old Retire (PoolRetireIdle).
func TestRetireLeavesParkedHandle(t *testing.T) {
	mustPass(t, "testdata/retire-parked-case.json")
	c := mustPass(t, "testdata/retire-idle-case.json")
	c.Config.PoolRetireIdle = true
	mustFail(t, c, PropNoCloseInUse, "", "with the old Retire")
}

// A parked read that finds the pool full when its client takes data again
// waits in the pool's queue like a new read, and when a handle frees it
// must take its replica back and go on sending. check reaches that path
// in about one seed in 300 (67 wake-ups in 20,000 seeds), so a wake-up
// that dropped a parked read (mutant b413106559: "gone", the wake-up
// passed on) survived check's 300 seeds and every test; at 20,000 seeds it
// fails at 9463, 13547 and 17991. testdata/parked-woken-case.json, seed
// 17991 shrunk (four reads, three non-readers, one handle), must pass; with
// the parked read dropped (ParkedWakeLost, the mutant's behaviour),
// client 0's read of block 5 makes no progress for 2 s.
func TestParkedReadWokenFromQueueResumes(t *testing.T) {
	c := mustPass(t, "testdata/parked-woken-case.json")
	c.Config.ParkedWakeLost = true
	mustFail(t, c, PropHostileAvail, "no progress", "with the woken parked read dropped")
}

// A read that waited the press delay was woken when a holder parked, and
// a new read took the handle first (barging): the queue looked empty, so
// the datanode dropped the press and the new holder was not contended,
// and the woken read queued again behind a fresh press delay: 500.27 ms
// against a bound of 500 (hostile-availability, check seed 24768 once the
// non-readers' runs had a 256 KiB send buffer; seed 49461 likewise). A
// read that queues again after the press delay presses at once.
//
// testdata/press-requeue-case.json, the case shrunk then, is kept but no
// longer barges (found on 5 December: it passed with the immediate press
// taken out, as did 40,000 check seeds; in its variants that barge, other
// reads still wait, so the press stands and the new holder is contended).
// It still must pass. testdata/press-requeue-alone-case.json is built from
// it to barge again: one non-reader holds the one handle, a second waits
// alone, and a third asks for a block in the microsecond between the
// second's wake-up and its try. It must pass (the woken read presses at
// once and waits 250 ms), and fail with the old behaviour
// (PressDelayAgain: 500.07 ms). A press timer left set after it fired
// (mutant aa868975ea, which survived 150,000 check seeds) fails it too:
// the read never presses again and waits out the new holder's stall.
func TestRequeuedReadPressesAgain(t *testing.T) {
	mustPass(t, "testdata/press-requeue-case.json")
	c := mustPass(t, "testdata/press-requeue-alone-case.json")
	c.Config.PressDelayAgain = true
	mustFail(t, c, PropHostileAvail, "for a pool handle", "with a requeued read waiting a second press delay")
}

// check's seed 440179954 failed hostile-availability: a read waited 962 ms
// for the pool's one handle (bound 500 ms). A parked read whose block was
// replaced while it queued was woken for an idle handle; its retake failed
// and woke no one, so the new read queued behind it slept until other
// reads barged in and parked. A failed retake now wakes the next waiter
// if room is left. The shrunk case must pass, and fail with the wake-up
// lost (PoolRetakeWakeLost).
func TestFailedRetakePassesWakeUpOn(t *testing.T) {
	c := mustPass(t, "testdata/retake-stale-wake-case.json")
	c.Config.PoolRetakeWakeLost = true
	mustFail(t, c, PropHostileAvail, "for a pool handle", "with a failed retake's wake-up lost")
}

// The pool-level rule, in the trace's order: parked P queues behind X and
// ahead of new read N; P's block is replaced; X takes the room and parks
// at once, waking P; P's retake fails and must wake N.
func TestPoolFailedRetakeWakesNext(t *testing.T) {
	for _, lost := range []bool{false, true} {
		inProcess(t, func(p model.Process) {
			s := model.NewBlockStore(p.Disk(), "d")
			for id := uint64(1); id <= 4; id++ {
				s.Write(id, []byte("data"))
			}
			pool, err := model.NewHandlePool(s, model.HandlePoolConfig{Max: 2, IdleTimeout: time.Second, RetakeWakeLost: lost})
			if err != nil {
				t.Fatal(err)
			}
			h1, _ := pool.Acquire(1, 0, 0, nil)
			pool.Park(h1, 0) // P parks mid-read
			h2, err := pool.Acquire(2, 0, 0, nil)
			if err != nil || !h1.Closed() {
				t.Fatalf("acquire of block 2: %v; P's handle closed %v, want evicted", err, h1.Closed())
			}
			woke := map[string]int{}
			waker := func(name string) func() { return func() { woke[name]++ } }
			_, wx, err := pool.AcquireOrWait(3, 0, 0, waker("X"), nil)
			if !errors.Is(err, model.ErrPoolFull) {
				t.Fatalf("X: %v, want to wait", err)
			}
			if _, _, err := pool.Retake(h1, 0, waker("P"), nil); !errors.Is(err, model.ErrPoolFull) {
				t.Fatalf("P: %v, want to wait", err)
			}
			if _, err := pool.Acquire(4, 0, 0, waker("N")); !errors.Is(err, model.ErrPoolFull) {
				t.Fatalf("N: %v, want to wait", err)
			}
			s.Replace(1, []byte("new data")) // wakes X, which finds no room
			if woke["X"] != 1 {
				t.Fatalf("the replace woke %v, want X", woke)
			}
			if _, wx, err = pool.AcquireOrWait(3, 0, 0, waker("X"), wx); !errors.Is(err, model.ErrPoolFull) {
				t.Fatalf("X again: %v, want to wait at its place", err)
			}
			pool.Release(h2, 0) // wakes X
			h3, _, err := pool.AcquireOrWait(3, 0, 0, nil, wx)
			if woke["X"] != 2 || err != nil {
				t.Fatalf("X after the release: %v, woken %v", err, woke)
			}
			pool.Park(h3, 0) // its client reads nothing: wakes P
			if woke["P"] != 1 || woke["N"] != 0 {
				t.Fatalf("X's park woke %v, want P", woke)
			}
			if _, _, err := pool.Retake(h1, 0, nil, nil); !errors.Is(err, model.ErrStaleReplica) {
				t.Fatalf("P's retake after the replace: %v, want ErrStaleReplica", err)
			}
			if got := woke["N"] == 1; got == lost {
				t.Fatalf("RetakeWakeLost %v: N woken %v, with X's handle idle", lost, got)
			}
		})
	}
}

// check's seeds 36609 and 46409 failed leak-freedom: "datanode: 61
// connections still open" (and 40). An idle flood's peers returned while
// the datanode, restarted after a crash point, spent seconds starting on a
// slow disk: its accept queue filled and the other peers' SYNs were
// dropped and sent again on TCP's backoff, connecting at their sixth try,
// 10 and 13 s into quiescence; the datanode rightly held them for its read
// timeout (5 s, 60 s), past the leak check. The datanode leaked nothing:
// quiescence stopped the peers' future returns but not a connect already
// under way. It now gives those up too (stopHostile). The two shrunk
// cases, testdata/hostile-syn-retry*-case.json, must pass.
func TestQuiescenceGivesUpHostileConnects(t *testing.T) {
	for _, path := range []string{"testdata/hostile-syn-retry-case.json", "testdata/hostile-syn-retry-2-case.json"} {
		t.Run(path, func(t *testing.T) { mustPass(t, path) })
	}
}

// check's seed 72953 failed hostile-availability: "client 3: write of
// block 2 failed though no fault was injected in this run: no progress
// for 2s". The datanode was not at fault: the simulator lost the write's
// last 751 bytes. The client's path fragments the first 256 bytes of a
// write, so the bytes after them went on the timed path too, due at
// 153 µs and 161 µs; the datanode's read at 146 µs ACKed the first 256,
// and in that read's softirq, where nothing interleaves, the ACK released
// the client's Nagle-held tail on the reader's clock, by then 161.2 µs:
// the link looked free, the tail went inline ahead of the two timed
// segments, and the datanode's TCP dropped it as out of order, for good
// (loopback never retransmits). A segment now goes inline only when none
// of its connection's is still on the timed path (sim
// TestSegmentNeverOvertakesATimedOne). testdata/inline-overtake-case.json,
// the shrunk case, must pass.
//
// That case no longer reaches the fix (found on 5 December: it passed
// with the peer's timed-segment count left out of xmit's test; no segment
// of it was held back by the count). With the count left out, check
// fails at seed 123, a replace of 95,798 bytes through a fragmenting
// path, on the simulator's own gap check ("data at sequence 65482
// arrived while 32741 was expected"). testdata/inline-overtake-2-case.json,
// that seed shrunk to its one op, must pass, and fail with the old test
// (the simulator's InlineOvertakes), so that it cannot decay unseen.
func TestWriteTailNotLostBehindFragments(t *testing.T) {
	mustPass(t, "testdata/inline-overtake-case.json")
	c := mustPass(t, "testdata/inline-overtake-2-case.json")
	c.Config.InlineOvertakes = true
	mustFail(t, c, PropHarness, "data at sequence 65482 arrived while 32741 was expected", "with a segment let inline past its connection's timed ones")
}

// check's seed 92263 failed linearizability with "unknown: the checker
// gave up after 5s on 89 ops": one block's 34 ops held 16 mutations whose
// outcome was unknown (timed out), and the plain model let porcupine try
// each of them anywhere, over 3 million steps in 5 s. Such a block now
// falls to Model, which keeps one placement of each unknown op
// (CheckHistory). testdata/lin-unknowns-case.json, the unshrunk case
// (Draw(SeedSource(92263), 92263, "")), must pass, and its history
// (testdata/lin-unknowns-history.json, as the run made it on 5 December)
// must be decided, and pass, within the default limit. CheckHistory no
// longer gets to Model on it (witness, added since, decides block 2
// first), so Model must also decide block 2 alone within the limit: the
// test once passed with Model broken, found on 5 December.
func TestUnknownMutationsDecidedInTime(t *testing.T) {
	mustPass(t, "testdata/lin-unknowns-case.json")
	h := loadHistory(t, "testdata/lin-unknowns-history.json")
	if res, _, f := CheckHistory(h, DefaultLinBudget, false); res != porcupine.Ok || f != nil {
		t.Fatalf("%v: %v", res, f)
	}
	for _, part := range byBlock(h) {
		if part[0].Input.(LinInput).Block != 2 {
			continue
		}
		m := Model()
		search := (newLinBudget(DefaultLinBudget)).meter(&m, math.MaxInt64)
		if !porcupine.CheckOperations(m, pinUnknowns(part)) {
			t.Fatalf("block 2 by Model alone: no linearization in %d steps (cut short: %v)", search.steps, search.cut)
		}
		return
	}
	t.Fatal("no block 2 in the history")
}

// Model alone took check's seed 6026 from 0.03 s to 1.4 s and 1.6 GB
// (block 1: 687,587 steps; the plain model needs 3,413): its refusals
// keep unknown ops pending, tried and backtracked over at every later
// point. Every block of testdata/lin-plain-case.json (Draw(SeedSource(6026),
// 6026, "")) must be decided by the plain model within its step budget:
// its history as the run made it on 5 December
// (testdata/lin-plain-history.json), since a saved case's run changes
// with the simulator.
func TestPlainModelDecidesWithinBudget(t *testing.T) {
	budget := newLinBudget(DefaultLinBudget) // shared by the blocks, as in CheckHistory
	parts := byBlock(loadHistory(t, "testdata/lin-plain-history.json"))
	if len(parts) < 4 {
		t.Fatalf("%d blocks, want 4", len(parts))
	}
	for _, part := range parts {
		res, plain := checkBlock(part, budget)
		if res != porcupine.Ok || !plain {
			t.Errorf("block %d: %v, plain model decided: %v", part[0].Input.(LinInput).Block, res, plain)
		}
	}
}

// check's seed 235722 failed linearizability with "unknown: the checker
// gave up after 5s on 75 ops": block 4's 23 ops held 10 mutations whose
// outcome was unknown (connection reset), all called after the append
// that returned stamp 2031, and three reads called after them all saw
// 2031, so none took effect before them. Both models tried the unknown
// ops' subsets and orders before each read (686k and 280k steps in
// 10 s). pinUnknowns moves their calls past those reads, and the plain
// model decides the block in 24 steps. testdata/lin-pinned-case.json
// (Draw(SeedSource(235722), 235722, "")) must pass, and every block of
// its history (testdata/lin-pinned-history.json, as the run made it on 5
// December) be decided without Model's search.
func TestPinnedUnknownsDecidedInTime(t *testing.T) {
	mustPass(t, "testdata/lin-pinned-case.json")
	decidedWithoutModel(t, loadHistory(t, "testdata/lin-pinned-history.json"))
}

// decidedWithoutModel checks that every block of a history passes,
// decided without Model's search (the plain model, or a witness).
func decidedWithoutModel(t *testing.T, history []porcupine.Operation) {
	t.Helper()
	budget := newLinBudget(DefaultLinBudget) // shared by the blocks, as in CheckHistory
	for _, part := range byBlock(history) {
		if res, plain := checkBlock(part, budget); res != porcupine.Ok || !plain {
			t.Errorf("block %d: %v, decided without Model: %v", part[0].Input.(LinInput).Block, res, plain)
		}
	}
}

// check's seed 40420901 failed linearizability with "unknown: the checker
// gave up after 5s on 130 ops": block 3's 32 ops held 14 mutations whose
// outcome was unknown, all pinned to one call, and a known append whose
// length needed two of them first (a replace of 1,959 bytes, then an
// append of 853). Neither model decided the block in a minute; witness
// builds that linearization. testdata/many-unknowns-case.json (the
// unshrunk case) must pass, and every block of its history
// (testdata/many-unknowns-history.json, as the run made it on 5
// December) be decided without Model's search.
func TestManyUnknownsWitnessed(t *testing.T) {
	mustPass(t, "testdata/many-unknowns-case.json")
	decidedWithoutModel(t, loadHistory(t, "testdata/many-unknowns-history.json"))
}

// check's seed 97137534 failed linearizability with "unknown: the checker
// gave up after 5s on 195 ops": block 4, absent at first, had 16
// mutations whose outcome was unknown, called early; a known append's
// length needed three of them first (a write of nothing, then two
// appends, in the order later reads agree with; refused reads may come
// between them), and a read called after a replace saw the stamp from
// before it. witness took the known ops in the order of their calls only
// and kept its first choice; the plain model's 100,000 steps did not
// decide the block, nor Model in 20 s. witness now searches.
// testdata/three-unknowns-history.json, block 4's history as the run of
// the case made it then, must be decided without Model's search. (The
// test once ran the saved case; since the simulator's changes its run
// has 5 unknown ops on block 4 and the plain model decides it, so the
// test passed with the old witness too, found on 5 December.)
func TestThreeUnknownsWitnessed(t *testing.T) {
	decidedWithoutModel(t, loadHistory(t, "testdata/three-unknowns-history.json"))
}

// check's seed 98445948 failed linearizability likewise, "unknown: the
// checker gave up after 5s on 155 ops", on the code that fixed 97137534:
// block 3's 18 unknown mutations, pinned after the last read of stamp
// 2031, turned the block into 9,512 bytes at stamp 3064 before the next
// read, with no known op between them; it takes four of them, and witness
// placed at most three before a known op.
// testdata/four-unknowns-history.json, block 3's history as the run of
// the case made it then, must be decided without Model's search. (The
// saved case's run today has no unknown op at all.)
func TestFourUnknownsWitnessed(t *testing.T) {
	decidedWithoutModel(t, loadHistory(t, "testdata/four-unknowns-history.json"))
}

// check's seed 101369739 failed linearizability likewise, "unknown: the
// checker gave up after 5s on 178 ops", on the code that fixed 98445948:
// block 2, absent after its deletes, was next read at 7,751 bytes, which
// only unknown ops can have made, some six in a row (a write, a replace
// of 1,058 bytes and four appends, for one); witness searching every
// order of up to eight found none within its budget. It now builds such
// runs toward the length the read needs (toward).
// testdata/six-unknowns-history.json, block 2's history as the run of the
// case made it then, must be decided without Model's search. (The saved
// case's run today has 11 unknown ops on block 2, which the plain model
// decides in 48 steps.)
func TestSixUnknownsWitnessed(t *testing.T) {
	decidedWithoutModel(t, loadHistory(t, "testdata/six-unknowns-history.json"))
}

// check's seed 40772524 failed leak-freedom: "datanode: 344 bytes of
// write buffer still reserved against MaxBuffered with no write in
// progress". A threaded connection writing 344 bytes was reset while its
// buffer's growth waited for the datanode's lock; the growth was reserved
// when the lock came, and the answer that gives a closed connection's
// reservation back was posted to its thread after the thread's loop had
// closed. A connection closed by then now reserves nothing.
// testdata/grow-after-close-case.json, the shrunk case, must pass.
//
// The reset can also come after the lock reserved the growth and before
// its answer runs on the connection's loop: the answer then gives the
// reservation back. testdata/grow-answer-after-close-case.json is the
// same case with its reset moved 8.4 µs earlier and onto another target
// (arg 0), which closes there. It must pass; with that reservation kept
// (ClosedGrowKept; mutant a88ed49835, and one of the `dn.buffered -=
// more` that giveBackRoom has since replaced, which had survived check and
// every test) 2,940 bytes stay reserved at quiescence
// (leak-freedom).
func TestGrowAfterCloseReservesNothing(t *testing.T) {
	mustPass(t, "testdata/grow-after-close-case.json")
	c := mustPass(t, "testdata/grow-answer-after-close-case.json")
	c.Config.ClosedGrowKept = true
	mustFail(t, c, PropLeakFree, "2940 bytes of write buffer still reserved", "with a closed writer's growth kept")
}

// check's seeds 100092083 and 100141000 failed availability: "read of
// block N failed though no fault was injected in this run (or faults had
// stopped): no progress for 150ms". The pool held two handles (PoolMax
// 4), both taken by reads the datanode sent 2 KiB a delayed ACK (a 2 KiB
// send buffer, no NODELAY), and a third read of another block waited for
// one; holders give way only after the press delay (up to 300 ms), and
// its client gave up at 150 ms. The datanode promises no sooner, so a
// drawn case whose clients can run more reads at once than the pool has
// handles gives them at least 500 ms, as one with a single handle
// already did. No drawn case pairs a shorter timeout with such a pool,
// and both seeds, drawn again, pass.
func TestPoolFillingClientsOutwaitThePress(t *testing.T) {
	for seed := uint64(1); seed <= 2000; seed++ {
		c, err := Draw(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		cfg := c.Config
		if cfg.Mode == "reactor" && cfg.PoolMax/2 < cfg.Clients*cfg.ClientWorkers && cfg.Timeout < 500*time.Millisecond {
			t.Fatalf("seed %d: %d handles for %d clients of %d workers, and a client timeout of %v", seed, cfg.PoolMax/2, cfg.Clients, cfg.ClientWorkers, cfg.Timeout)
		}
	}
	for _, seed := range []uint64{100092083, 100141000} {
		c, err := Draw(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		if r := Run(c, Options{}); r.Failure != nil {
			t.Errorf("seed %d: %s: %s", seed, r.Failure.Property, r.Failure.Message)
		}
	}
}

// check's seed 188129 failed hostile-availability: "read of block 2
// failed ... busy: no block handle free within 1s" (one pool handle). A
// client read 77000 bytes of block 1 through a 2 KiB datanode send buffer
// and acked each 2 KiB segment late (delayed ack): 2 KiB every 44 ms, the
// read taking some 1.7 s. An append to block 1 retired its handle just
// after the read opened it, and a contended holder of a retired handle
// kept it (parked, it would have stayed pinned, holding its room), so
// the read of block 2 that pressed at 250 ms waited out its HandleWait
// behind a holder that never stalled. A retired handle whose replica can
// be opened again now parks unpinned: its last user closes it and the
// read retakes its replica (testdata/retired-append-park-case.json, the
// shrunk case). Where the block was deleted instead (or replaced), the
// replica cannot be had again, and the contended holder's read is lost,
// counted in ParkedLost and excused like a parked read's
// (testdata/retired-delete-park-case.json, the case shrunk once appends
// parked). Both fail hostile-availability on the old code.
func TestRetiredHandleHolderGivesWay(t *testing.T) {
	for _, name := range []string{"append", "delete"} {
		t.Run(name, func(t *testing.T) { mustPass(t, "testdata/retired-"+name+"-park-case.json") })
	}
}

// Write hoarders (HostileHoarder) each send a little over half of a
// largest write and stop, so the datanode's buffers for them take all of
// MaxBuffered. A well-behaved write that then finds no room must wait
// for some while the silent hoarders are cut off a stall timeout after
// their last bytes (dn-write-stalled), not be refused busy at once, as
// every write was before (busy-when-full). Seed 82 of that bug draws no
// faults; it fails hostile-availability with the old refusal and passes
// with the wait.
func TestWritesWaitForRoomBehindHoarders(t *testing.T) {
	bugSeed{82, "busy-when-full", HostileHoarder, PropHostileAvail, "busy: ", func(c *Config) *bool { return &c.BusyWhenFull }}.check(t)
}

// A write pressed for room while its client is still sending is not cut
// off then; it is looked at again a stall timeout after its last step,
// and cut off if writes still wait. Without that second look (mutant
// 2d2120d073, which survived 300 check seeds and fell at seed 2958 of
// 3,000) a write pressed while it still received keeps its room after
// its client stops, and a well-behaved append waiting behind the write
// quitters' room times out (no progress for 1 s, the client's timeout).
// testdata/write-stall-recheck-case.json is that seed shrunk on the
// mutant (2 ops, 8 write quitters).
func TestPressedWriteIsLookedAtAgain(t *testing.T) {
	mustPass(t, "testdata/write-stall-recheck-case.json")
}

// A connection's buffers that change without Datanode.memChanged are
// found by check's scan of every connection, which compares each with
// what the running accounting last saw of it, not only the total of
// write data. Mutant bcf6ebe7cc (a flush that gives back the selector's
// buffer it borrowed without noting the change) survived that total:
// it changes no write data. testdata/flush-unseen-case.json is datanode
// seed 2819, which fails on it, shrunk on it (7 ops, a reactor).
func TestFlushedConnIsAccountedAgain(t *testing.T) {
	mustPass(t, "testdata/flush-unseen-case.json")
}

// bugSeed is a seed at which check catches a catalogued bug: drawn with
// the bug, it has no faults, some peers of kind and the bug's switch
// (on) set; it fails prop with text in the message, and passes once the
// switch is off.
type bugSeed struct {
	seed       uint64
	bug, kind  string
	prop, text string
	on         func(*Config) *bool
}

func (b bugSeed) check(t *testing.T) {
	t.Helper()
	c, err := Draw(SeedSource(b.seed), b.seed, b.bug)
	if err != nil {
		t.Fatal(err)
	}
	on := b.on(&c.Config)
	if len(c.Schedule.Faults) != 0 || !c.Config.hostileKind(b.kind) || !*on {
		t.Fatalf("seed %d of %s draws %d faults, %s peers %v, the bug %v: want none, some and on", b.seed, b.bug, len(c.Schedule.Faults), b.kind, c.Config.hostileKind(b.kind), *on)
	}
	mustFail(t, c, b.prop, b.text, fmt.Sprintf("seed %d of %s", b.seed, b.bug))
	c.Bug, *on = "", false
	if r := Run(c, Options{}); r.Failure != nil {
		t.Fatalf("seed %d of %s, the bug off: %s: %s", b.seed, b.bug, r.Failure.Property, r.Failure.Message)
	}
}

// A write cut off before its last packet is dropped, not stored with
// what arrived (cut-write-kept). Write hoarders send part of a write to
// a block of their own and stop, and the datanode cuts them off: with the
// bug, their blocks are stored, and only the check at rest that no block
// only hostile peers write is stored sees it (their connections are
// gone; no client reads those blocks). Seed 12 of that bug draws no faults.
func TestCutWriteIsNotKept(t *testing.T) {
	bugSeed{12, "cut-write-kept", HostileHoarder, PropRefusal, "which only a hostile peer wrote", func(c *Config) *bool { return &c.KeepsCutWrite }}.check(t)
}

// Write tricklers (HostileTrickler) send what hoarders do, then a packet
// of one byte just under each stall timeout: never silent for a stall
// timeout, no message left incomplete, no progress. With any byte counted
// as progress (write-trickle) they hold their connections and the room
// for good. Seed 12 of that bug (no faults) has a well-behaved append
// wait for room behind them and fail busy: the stall cut-off must judge
// a packet's worth of data, not a byte. Seed 28 (no faults) has nothing
// wait for room, and a trickler stays connected past the sum of its
// timeouts: the read timeout must count from the write's last step.
// Both pass with the steps counted.
func TestTricklersAreCutOff(t *testing.T) {
	anyByte := func(c *Config) *bool { return &c.WriteAnyByte }
	for _, b := range []bugSeed{
		{12, "write-trickle", HostileTrickler, PropHostileAvail, "busy: no room for write data", anyByte},
		{28, "write-trickle", HostileTrickler, PropTimeout, "stuck trickler peer", anyByte},
	} {
		b.check(t)
	}
}

// A trickler of odd key sends the rest of its write first, then empty
// packets that are not the last (data it no longer has to send is no
// progress either); one of even key, packets of one byte. Seed 28 of
// write-trickle (the bug off) has both: its trace shows connections of
// the hostile process sending past the write's whole data
// (hoardMaxWrite), and others only past what hoarders send.
func TestTricklersOfBothKeys(t *testing.T) {
	c, err := Draw(SeedSource(28), 28, "write-trickle")
	if err != nil {
		t.Fatal(err)
	}
	c.Bug, c.Config.WriteAnyByte = "", false
	var trace bytes.Buffer
	if r := Run(c, Options{Trace: &trace}); r.Failure != nil {
		t.Fatalf("seed 28 of write-trickle, the bug off: %s: %s", r.Failure.Property, r.Failure.Message)
	}
	sent := map[int]int64{} // by connection: the end of what it sent
	dec := json.NewDecoder(&trace)
	for dec.More() {
		var ev struct {
			Proc, Kind string
			Conn       int
			Seq, Len   int64
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.Proc == "hostile" && ev.Kind == "seg" {
			sent[ev.Conn] = max(sent[ev.Conn], ev.Seq+ev.Len)
		}
	}
	whole, part := 0, 0
	for _, n := range sent {
		switch {
		case n > hoardMaxWrite:
			whole++
		case n > hoardMaxWrite/2+hoardPacket:
			part++
		}
	}
	if whole == 0 || part == 0 {
		t.Errorf("%d hostile connections sent past a whole write, %d past a hoarder's part only: want some of each", whole, part)
	}
}

// Grabbers (HostileGrabber) each take 128 KiB of room, all of it between
// them, and then each asks for 128 KiB more: every write holding room
// waits, and none gives any back. At seed 12 of holders-wait-for-room (no
// faults), where a write holding room waits for more until HandleWait
// (1 s), a well-behaved append waits behind them that long and is refused
// busy; with holders giving room up a stall timeout into their wait it
// passes.
func TestGrabbersGiveRoomUp(t *testing.T) {
	bugSeed{12, "holders-wait-for-room", HostileGrabber, PropHostileAvail, "busy: no room for write data within 1s", func(c *Config) *bool { return &c.HoldersWaitForRoom }}.check(t)
}

// A write's wait for room runs out after HandleWait: with a HandleWait
// of 100 ms, shorter than any stall timeout, the hoarders holding the
// room of seed 22 of busy-when-full (no faults; the bug off) are not cut
// off in time, and a well-behaved append fails busy ("no room for write
// data within 100ms") after one last ask; nothing else breaks, and at
// quiescence no connection is still listed as waiting.
func TestWriteWaitForRoomRunsOut(t *testing.T) {
	c, err := Draw(SeedSource(22), 22, "busy-when-full")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Schedule.Faults) != 0 || !c.Config.hostileKind(HostileHoarder) {
		t.Fatalf("seed 22 draws %d faults, hoarders %v: want none and some", len(c.Schedule.Faults), c.Config.hostileKind(HostileHoarder))
	}
	c.Bug, c.Config.BusyWhenFull, c.Config.HandleWait = "", false, 100*time.Millisecond
	mustFail(t, c, PropHostileAvail, "no room for write data within 100ms", "a wait for room shorter than the stall timeout")
	c.Ignore = []string{PropHostileAvail}
	if r := Run(c, Options{}); r.Failure != nil {
		t.Fatalf("with hostile-availability ignored: %s: %s", r.Failure.Property, r.Failure.Message)
	}
}

// A connection whose wait reads nothing must still hear its client leave
// (PeerClosed), within WaiterGoneBound of the FIN. Each case is the first
// seed, with no faults, at which check caught the deaf wait:
//   - write quitters, hoarders whose last two leave while their writes
//     wait for the room the others hold: at seed 9 of write-waiter-deaf
//     the waiting write heard the FIN only once the holders were cut off
//     and room came, some 60 ms later;
//   - quitters that pipeline twice what a read waiting for a pool handle
//     buffers (a key of 3 mod 4): at seed 31 of waiter-deaf-when-full the
//     waiting read, its input full, had stopped reading;
//   - drainers, non-readers that take all they were sent and close (a
//     FIN with nothing unread, so no reset): at seed 12 of
//     parked-waiter-deaf their parked read, waiting to take its handle
//     again, heard it only once a handle freed, 73 ms later.
//
// Each passes with the wait listening for the FIN.
func TestWaitersHearTheirClientsLeave(t *testing.T) {
	for _, b := range []bugSeed{
		{9, "write-waiter-deaf", HostileWriteQuitter, PropTimeout, "while its write waited for buffer room", func(c *Config) *bool { return &c.WriteWaiterDeaf }},
		{31, "waiter-deaf-when-full", HostileQuitter, PropTimeout, "while its read waited for a pool handle", func(c *Config) *bool { return &c.WaiterDeafWhenFull }},
		{12, "parked-waiter-deaf", HostileDrainer, PropTimeout, "while its parked read waited for a pool handle", func(c *Config) *bool { return &c.ParkedWaiterDeaf }},
	} {
		b.check(t)
	}
}

// A read waiting for a pool handle that has buffered all it may must
// stop reading as well as listen for the FIN: the rest of its client's
// pipelined input stays in the socket, and a loop left reading is woken
// for it at every turn. At seed 31 of full-waiter-spins (no faults) a
// quitter that pipelined 8 KiB holds its connection open for half a
// stall timeout while its read waits, and the loop spins until the spin
// check stops it; with reading off the seed passes.
func TestFullWaiterStopsReading(t *testing.T) {
	bugSeed{31, "full-waiter-spins", HostileQuitter, PropHarness, "spins: its handler was called 1000 times in a row with Readable ready", func(c *Config) *bool { return &c.FullWaiterSpins }}.check(t)
}

// A drainer's read, sending when its client closed, learns of the close
// from the reset its next send draws (a FIN alone says only that the
// client has nothing more to send). Check's seed 80017186, shrunk: the
// client's last ACK closed the window, and a vanish fault then took the
// path dark, so the window probes and the reset went nowhere and the
// connection stayed open until its send timeout, 28 s past the FIN. A
// dark path gives the datanode only its timeouts, as for a stuck peer,
// so the FIN's bound no longer holds it (a waiting connection, which
// hears the FIN itself, still is).
func TestDarkPathAfterFINIsAStuckPeer(t *testing.T) {
	c := loadCase(t, "testdata/drainer-dark-case.json")
	var trace bytes.Buffer
	if r := Run(c, Options{Trace: &trace}); r.Failure != nil {
		t.Fatalf("%s: %s", r.Failure.Property, r.Failure.Message)
	}
	// The case still reaches the path: a drainer's connection that a
	// vanish fault took dark.
	if !c.Config.hostileKind(HostileDrainer) || !strings.Contains(trace.String(), `"kind":"fault","conn":8,"what":"vanish"`) {
		t.Fatalf("the case has drainers %v, and its trace no vanish of connection 8 (the drainer's): it no longer tests the dark path", c.Config.hostileKind(HostileDrainer))
	}
}
