package shortcircuit_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// Data traffic over the domain socket: the ordinary read protocol on a
// Unix connection, served by the datanode's reactor.
func TestDataTrafficOverDomainSocket(t *testing.T) {
	var got model.Result
	var after rest
	var dataConns int
	e := startEnv(t, simWorld(), "dn:50010", "/run/dn_socket", shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{}, func(e *env) {
		uds, err := model.NewClient(e.cp, e.cp.MainLoop(), 2, model.ClientConfig{Datanode: "/run/dn_socket", Network: "unix"})
		if err != nil {
			e.w.Fail(err)
			return
		}
		steps(
			func(next func()) {
				uds.Read(2, 0, 10, 3000, func(r model.Result) {
					got = r
					uds.Close()
					e.dnProc.MainLoop().Post(func() {
						dataConns = e.srv.Stats().DataConns
						e.cp.MainLoop().Post(next)
					})
				})
			},
			e.finish(&after),
		)
	})
	if got.Err != nil || !bytes.Equal(got.Data, model.BlockContent(2, blockLen)[10:3010]) {
		t.Errorf("read over the domain socket: %v, %d bytes", got.Err, len(got.Data))
	}
	if dataConns != 1 {
		t.Errorf("%d data connections handed to the datanode, want 1", dataConns)
	}
	e.checkRest(t, after)
}

// EMFILE on the receiving client: the kernel drops the passed fds (and
// sets MSG_CTRUNC); the client closes what it got, releases the slot the
// datanode registered, reads over TCP, and stays off short-circuit for a
// while; nothing leaks.
func TestEMFILEOnReceiveFallsBack(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var first, second model.Result
	var st shortcircuit.ClientStats
	var slotsAfter int
	var after rest
	e := startEnv(t, w, "dn:50010", "/run/dn_socket", shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{DisableFor: time.Minute}, func(e *env) {
		var hog []model.File
		steps(
			func(next func()) {
				// Map the segment first (one slot is used and given back).
				e.cl.Read(3, 0, 0, 10, func(model.Result) { next() })
			},
			func(next func()) {
				e.sh.Cache().PurgeAll(e.cp.MainLoop(), func() {
					e.cp.MainLoop().AfterFunc(10*time.Millisecond, next)
				})
			},
			func(next func()) {
				// Fill the fd table but for the one a connection needs.
				for e.cp.FDs().Open < e.cp.FDs().Limit-1 {
					f, err := e.cp.Disk().Open(fmt.Sprintf("hog-%d", len(hog)), model.Create|model.ReadWrite, model.FDFile)
					if err != nil {
						e.w.Fail(err)
						return
					}
					hog = append(hog, f)
				}
				e.cl.Read(1, 0, 0, 100, func(r model.Result) {
					first = r
					for _, f := range hog {
						f.Close()
					}
					next()
				})
			},
			func(next func()) {
				e.cl.Read(1, 0, 0, 100, func(r model.Result) {
					second, st = r, e.cl.Stats()
					e.dnProc.MainLoop().AfterFunc(10*time.Millisecond, func() {
						e.srv.Registry(e.dnProc.MainLoop(), func(_, slots, _ int) {
							slotsAfter = slots
							e.cp.MainLoop().Post(next)
						})
					})
				})
			},
			e.finish(&after),
		)
	})
	want := model.BlockContent(1, blockLen)[:100]
	if !errors.Is(first.Err, model.ErrTooManyFiles) && !bytes.Equal(first.Data, want) {
		t.Errorf("read with a full fd table: %v", first.Err)
	}
	if second.Err != nil || !bytes.Equal(second.Data, want) {
		t.Errorf("read after: %v", second.Err)
	}
	if st.Fallbacks != 1 || st.TCPReads < 1 || st.LocalReads != 1 {
		t.Errorf("stats %+v: want one fallback, the next read over TCP (short-circuit off), one local read before", st)
	}
	if slotsAfter != 0 {
		t.Errorf("datanode holds %d slots after the client lost the reply's fds", slotsAfter)
	}
	e.checkRest(t, after)
}

// lostReply: a raw client asks for fds and closes before the answer: the
// datanode's send fails. Returns the slots the datanode holds after.
func lostReply(t *testing.T, bugs shortcircuit.ServerBugs) int {
	w := sim.New(sim.DefaultConfig(1))
	slots := -1
	startEnvCfg(t, w, bugs, func(e *env) {
		p := e.cp
		rawExchange(p, "/run/dn_socket", shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm}), 100*time.Millisecond, func(r rawResult, shmConn model.Conn) {
			resp, _, _ := shortcircuit.DecodeResponse(r.got)
			for _, f := range r.files {
				f.Close()
			}
			c, _ := p.Dial("unix", "/run/dn_socket", p.MainLoop(), func(model.Events) {})
			c.Write(fdsReq(1, 0, resp.ShmID, 5, goodToken(1, 0)))
			c.Abort() // gone before the reply
			p.MainLoop().AfterFunc(100*time.Millisecond, func() {
				e.srv.Registry(p.MainLoop(), func(_, n, _ int) {
					slots = n
					shmConn.Close()
					p.MainLoop().AfterFunc(100*time.Millisecond, func() {
						e.dnProc.MainLoop().Post(func() { e.srv.Stop(); e.dn.Stop() })
					})
				})
			})
		})
	})
	return slots
}

// HDFS-7915: with the bug the slot of a lost reply stays registered; with
// the fix it is freed.
func TestLostReplySlot(t *testing.T) {
	if n := lostReply(t, shortcircuit.ServerBugs{}); n != 0 {
		t.Errorf("fixed: %d slots held after a lost reply", n)
	}
	if n := lostReply(t, shortcircuit.ServerBugs{KeepSlotOnLostReply: true}); n != 1 {
		t.Errorf("HDFS-7915: %d slots held after a lost reply, want the leaked 1", n)
	}
}

// staleAfterDelete: cache block 1, delete it over TCP, read it again.
func staleAfterDelete(t *testing.T, bugs shortcircuit.ServerBugs) model.Result {
	w := sim.New(sim.DefaultConfig(1))
	var res model.Result
	var after rest
	startEnvCfg(t, w, bugs, func(e *env) {
		steps(
			func(next func()) { e.cl.Read(1, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) { e.tcp.Delete(1, func(model.Result) { next() }) },
			func(next func()) {
				e.cl.Read(1, 0, 0, 100, func(r model.Result) {
					res = r
					next()
				})
			},
			e.finish(&after),
		)
	})
	return res
}

// HDFS-6750: with the bug a deleted replica is still read through the
// cache; with the fix the read is refused, as over TCP.
func TestDeletedReplicaNotReadThroughCache(t *testing.T) {
	if r := staleAfterDelete(t, shortcircuit.ServerBugs{}); r.Status != model.StatusErrorInvalid {
		t.Errorf("fixed: read after delete: status %v, %d bytes", r.Status, len(r.Data))
	}
	if r := staleAfterDelete(t, shortcircuit.ServerBugs{NoInvalidateOnDelete: true}); r.Err != nil || len(r.Data) != 100 {
		t.Errorf("HDFS-6750: read after delete: %v; want the stale bytes the bug serves", r.Err)
	}
}

// wrongSocketRelease: two datanodes on one host; the client caches a
// replica from the first and drops it. Returns the slots the first holds
// after the release.
func wrongSocketRelease(t *testing.T, bugs shortcircuit.ClientBugs) int {
	w := sim.New(sim.DefaultConfig(1))
	slots := -1
	var after rest
	startEnvBugs(t, w, "dn:50010", "/run/dn_socket", shortcircuit.ServerBugs{}, shortcircuit.SharedConfig{Bugs: bugs}, shortcircuit.ClientConfig{}, func(e *env) {
		var dn2 *model.Datanode
		var srv2 *shortcircuit.Server
		loop := e.cp.MainLoop()
		steps(
			func(next func()) {
				w.Spawn("datanode2", model.ProcessConfig{}, func(p model.Process) {
					var err error
					if dn2, err = model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn2:50010", Dir: "data2"}); err == nil {
						srv2, err = shortcircuit.Start(dn2, shortcircuit.ServerConfig{Path: "/run/dn2_socket"})
					}
					if err != nil {
						w.Fail(err)
						return
					}
					loop.Post(next)
				})
			},
			func(next func()) { e.cl.Read(1, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) {
				e.sh.Cache().PurgeAll(loop, func() { loop.AfterFunc(50*time.Millisecond, next) })
			},
			func(next func()) {
				e.srv.Registry(loop, func(_, n, _ int) {
					slots = n
					dn2.Main().Post(func() {
						srv2.Stop()
						dn2.Stop()
						loop.Post(next)
					})
				})
			},
			e.finish(&after),
		)
	})
	return slots
}

// HDFS-16535: with the bug the release goes to the other datanode's
// socket and the first keeps the slot; with the fix it is freed.
func TestReleaseGoesToTheRightDatanode(t *testing.T) {
	if n := wrongSocketRelease(t, shortcircuit.ClientBugs{}); n != 0 {
		t.Errorf("fixed: the datanode holds %d slots after the release", n)
	}
	if n := wrongSocketRelease(t, shortcircuit.ClientBugs{ReleaseToWrongPath: "/run/dn2_socket"}); n != 1 {
		t.Errorf("HDFS-16535: the datanode holds %d slots after a release sent elsewhere, want the leaked 1", n)
	}
}

// The datanode crashes while the client caches passed fds: the segment's
// connection closes, so every slot turns invalid and the next read does
// not use the cached fds (it fails: the datanode is down); the client
// frees everything.
func TestDatanodeCrashWhileClientHoldsFDs(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var next model.Result
	var segsAfter, slotsAfter int
	var fdsAfter int
	var e *env
	e = startEnvCfg(t, w, shortcircuit.ServerBugs{}, func(e *env) {
		loop := e.cp.MainLoop()
		steps(
			func(next func()) { e.cl.Read(1, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) {
				w.Process("datanode").Crash()
				loop.AfterFunc(10*time.Millisecond, next)
			},
			func(nx func()) {
				e.cl.Read(1, 0, 0, 100, func(r model.Result) {
					next = r
					nx()
				})
			},
			func(nx func()) {
				e.cl.Close()
				e.tcp.Close()
				e.sh.Close(loop, func() {
					e.sh.Resources(loop, func(segs, slots, _ int) {
						segsAfter, slotsAfter, fdsAfter = segs, slots, e.cp.FDs().Open
						w.Stop()
					})
				})
			},
		)
	})
	if next.Err == nil {
		t.Errorf("read after the datanode crashed succeeded from a segment that is gone: %d bytes", len(next.Data))
	}
	if st := e.cl.Stats(); st.LocalReads != 1 {
		t.Errorf("stats after the crash: %+v", st)
	}
	if segsAfter != 0 || slotsAfter != 0 || fdsAfter != e.cbase || e.cp.FDs().Segments != 0 {
		t.Errorf("client after close: %d segments, %d slots, %d fds (baseline %d), %d mappings", segsAfter, slotsAfter, fdsAfter, e.cbase, e.cp.FDs().Segments)
	}
}

// A client process that crashes holding slots: the datanode sees the
// segment's connection close and frees the segment and its slots.
func TestClientCrashFreesItsSlots(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var segs, slots, before int
	startEnvCfg(t, w, shortcircuit.ServerBugs{}, func(e *env) {
		steps(
			func(next func()) { e.cl.Read(1, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) { e.cl.Read(2, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) {
				dl := e.dnProc.MainLoop()
				e.srv.Registry(dl, func(_, n, _ int) {
					before = n
					w.Process("client").Crash()
					dl.AfterFunc(10*time.Millisecond, func() {
						e.srv.Registry(dl, func(s, n, _ int) {
							segs, slots = s, n
							e.srv.Stop()
							e.dn.Stop()
							dl.AfterFunc(10*time.Millisecond, w.Stop)
						})
					})
				})
			},
		)
	})
	if before != 2 || segs != 0 || slots != 0 {
		t.Errorf("datanode held %d slots before the client crashed; after: %d segments, %d slots", before, segs, slots)
	}
}

// metaOpenFails: the datanode has one fd left when a client asks for
// fds over its cached connection: the data file takes it and the meta
// file gets EMFILE.
// Returns the block fds the datanode holds afterwards.
func metaOpenFails(t *testing.T, bugs shortcircuit.ServerBugs) int {
	w := sim.New(sim.DefaultConfig(1))
	held := -1
	startEnvCfg(t, w, bugs, func(e *env) {
		dl := e.dnProc.MainLoop()
		var hog []model.File
		steps(
			func(next func()) {
				// Map the segment first, while fds are free.
				e.cl.Read(3, 0, 0, 10, func(model.Result) { next() })
			},
			func(next func()) {
				dl.Post(func() {
					for e.dnProc.FDs().Open < e.dnProc.FDs().Limit-1 { // the data file's
						f, err := e.dnProc.Disk().Open(fmt.Sprintf("hog-%d", len(hog)), model.Create|model.ReadWrite, model.FDFile)
						if err != nil {
							w.Fail(err)
							return
						}
						hog = append(hog, f)
					}
					e.cp.MainLoop().Post(next)
				})
			},
			func(next func()) {
				e.cl.Read(1, 0, 0, 10, func(model.Result) { next() })
			},
			func(next func()) {
				dl.Post(func() {
					for _, f := range hog {
						f.Close()
					}
					by := e.dnProc.FDs().ByKind
					held = by[model.FDBlockFile] + by[model.FDMetaFile]
					e.srv.Stop()
					e.dn.Stop()
					dl.AfterFunc(10*time.Millisecond, w.Stop)
				})
			},
		)
	})
	return held
}

// HDFS-17978: with the bug the data fd of a failed fd request leaks; with
// the fix the datanode holds no block fd.
func TestMetaOpenFailureClosesData(t *testing.T) {
	if n := metaOpenFails(t, shortcircuit.ServerBugs{}); n != 0 {
		t.Errorf("fixed: the datanode holds %d block fds after the meta file failed to open", n)
	}
	if n := metaOpenFails(t, shortcircuit.ServerBugs{LeakDataOnMetaFailure: true}); n != 1 {
		t.Errorf("HDFS-17978: the datanode holds %d block fds, want the leaked data fd", n)
	}
}

// resetDuringPass: the client has its segment (and, unless wait outlasts
// the cache's expiry, a cached domain connection); the datanode's next fd
// pass is reset (before the send, or with the fds lost in flight), and
// the cache is purged. Returns the read, the slots the datanode holds
// after, and the state at rest.
func resetDuringPass(t *testing.T, bugs shortcircuit.ServerBugs, after bool, wait time.Duration) (model.Result, int, rest, *env) {
	w := sim.New(sim.DefaultConfig(1))
	var got model.Result
	slots := -1
	var r rest
	e := startEnvCfg(t, w, bugs, func(e *env) {
		loop := e.cp.MainLoop()
		steps(
			func(next func()) { e.cl.Read(3, 0, 0, 10, func(model.Result) { loop.AfterFunc(wait, next) }) },
			func(next func()) {
				w.Process("datanode").ResetNextFDPass(after)
				e.cl.Read(1, 0, 0, 100, func(res model.Result) {
					got = res
					next()
				})
			},
			func(next func()) {
				e.sh.Cache().PurgeAll(loop, func() { loop.AfterFunc(50*time.Millisecond, next) })
			},
			func(next func()) {
				e.srv.Registry(loop, func(_, n, _ int) {
					slots = n
					next()
				})
			},
			e.finish(&r),
		)
	})
	return got, slots, r, e
}

// A domain connection reset in the middle of an fd pass. Fixed (HDFS-7915:
// the slot waits for the client's receipt): on a fresh connection the
// read falls back to TCP; on a cached one the client tries once more on a
// fresh connection (as HDFS does with a cached peer) and reads
// short-circuit; either way the datanode frees the lost slot and nothing
// leaks. With the bug the datanode keeps the slot the client never
// learnt of.
func TestResetDuringFDPass(t *testing.T) {
	want := model.BlockContent(1, blockLen)[:100]
	for _, after := range []bool{false, true} {
		for _, cached := range []bool{false, true} {
			wait := 4 * time.Second // past the idle connection's expiry
			if cached {
				wait = time.Millisecond
			}
			name := fmt.Sprintf("after=%v cached=%v", after, cached)
			got, slots, r, e := resetDuringPass(t, shortcircuit.ServerBugs{}, after, wait)
			if got.Err != nil || !bytes.Equal(got.Data, want) {
				t.Errorf("%s: read across the reset: %v", name, got.Err)
			}
			st := e.cl.Stats()
			if cached && (st.Fallbacks != 0 || st.LocalReads != 2) {
				t.Errorf("%s: stats %+v, want both reads local (the second retried on a fresh connection)", name, st)
			}
			if !cached && (st.Fallbacks != 1 || st.TCPReads != 1) {
				t.Errorf("%s: stats %+v, want one fallback to TCP", name, st)
			}
			if slots != 0 {
				t.Errorf("%s: fixed datanode holds %d slots once the cache is empty", name, slots)
			}
			e.checkRest(t, r)
			if _, slots, _, _ := resetDuringPass(t, shortcircuit.ServerBugs{KeepSlotOnLostReply: true}, after, wait); slots != 1 {
				t.Errorf("%s: HDFS-7915 datanode holds %d slots, want the leaked 1", name, slots)
			}
		}
	}
}

// After a short-circuit failure the whole process stays off the path for
// DisableFor (HDFS's per-path state in DomainSocketFactory), not just the
// client that failed: another reader goes straight to TCP without asking
// the datanode; after the interval both use short-circuit again.
func TestBackoffIsPerProcessAndPath(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var other *shortcircuit.Client
	var reqsBefore, reqsDuring int
	var during, later model.Result
	var after rest
	e := startEnvBugs(t, w, "dn:50010", "/run/dn_socket", shortcircuit.ServerBugs{}, shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{DisableFor: time.Second}, func(e *env) {
		loop := e.cp.MainLoop()
		l2, err := e.cp.NewLoop("reader-2")
		if err != nil {
			w.Fail(err)
			return
		}
		other, err = shortcircuit.NewClient(e.cp, l2, 7, e.sh, shortcircuit.ClientConfig{Path: "/run/dn_socket", DisableFor: time.Second, TCP: model.ClientConfig{Datanode: e.dn.Addr(), NoDelay: true}})
		if err != nil {
			w.Fail(err)
			return
		}
		requests := func(then func(int)) {
			e.dnProc.MainLoop().Post(func() {
				n := e.srv.Stats().FDRequests
				loop.Post(func() { then(n) })
			})
		}
		onOther := func(read func(done func())) func(next func()) {
			return func(next func()) { l2.Post(func() { read(func() { loop.Post(next) }) }) }
		}
		steps(
			func(next func()) {
				// The segment's pass is reset: e.cl fails and backs off.
				w.Process("datanode").ResetNextFDPass(false)
				e.cl.Read(1, 0, 0, 100, func(model.Result) { next() })
			},
			func(next func()) { requests(func(n int) { reqsBefore = n; next() }) },
			onOther(func(done func()) {
				other.Read(2, 0, 0, 100, func(r model.Result) { during = r; done() })
			}),
			func(next func()) { requests(func(n int) { reqsDuring = n; loop.AfterFunc(time.Second, next) }) },
			onOther(func(done func()) {
				other.Read(2, 0, 0, 100, func(r model.Result) { later = r; done() })
			}),
			func(next func()) {
				l2.Post(func() {
					other.Close()
					loop.Post(func() {
						l2.Close()
						next()
					})
				})
			},
			e.finish(&after),
		)
	})
	if st := e.cl.Stats(); st.Fallbacks != 1 {
		t.Errorf("failing client: %+v, want one fallback", st)
	}
	want := model.BlockContent(2, blockLen)[:100]
	if during.Err != nil || !bytes.Equal(during.Data, want) || later.Err != nil || !bytes.Equal(later.Data, want) {
		t.Errorf("other client's reads: %v, %v", during.Err, later.Err)
	}
	if reqsDuring != reqsBefore {
		t.Errorf("the other client asked the datanode for fds while the path was off (%d requests, %d before)", reqsDuring, reqsBefore)
	}
	if st := other.Stats(); st.Fallbacks != 0 || st.TCPReads != 1 || st.LocalReads != 1 {
		t.Errorf("other client: %+v, want one TCP read while the path was off (no failure of its own), then one local read", st)
	}
	e.checkRest(t, after)
}

// Domain connections are reused: a client's fd requests go over one
// cached connection, and the process's slot releases over another, not
// one connection per request (HDFS's PeerCache and SlotReleaser).
func TestDomainConnectionsReused(t *testing.T) {
	var accepted, requests, releases int
	var after rest
	startEnvCfg(t, simWorld(), shortcircuit.ServerBugs{}, func(e *env) {
		loop := e.cp.MainLoop()
		steps(
			func(next func()) { e.cl.Read(1, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) { e.cl.Read(2, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) { e.cl.Read(3, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) {
				e.sh.Cache().PurgeAll(loop, func() { loop.AfterFunc(50*time.Millisecond, next) })
			},
			func(next func()) {
				e.dnProc.MainLoop().Post(func() {
					st := e.srv.Stats()
					accepted, requests, releases = st.Accepted, st.FDRequests, st.Releases
					loop.Post(next)
				})
			},
			e.finish(&after),
		)
	})
	if requests != 3 || releases != 3 {
		t.Fatalf("%d fd requests and %d releases, want 3 and 3", requests, releases)
	}
	// The segment's connection, one for the fd requests, one for the
	// releases.
	if accepted != 3 {
		t.Errorf("the datanode accepted %d domain connections for 3 fd requests and 3 releases, want 3", accepted)
	}
}

// A domain connection the client cached, closed by the datanode as the
// client reuses it (an idle close crossing a reuse: HDFS's dead cached
// socket), is retried on a fresh connection: the read is still served
// from passed fds, not over TCP with short-circuit turned off.
func TestCachedConnectionClosedUnderReuseIsRetried(t *testing.T) {
	var r model.Result
	var local bool
	var after rest
	startEnvCfg(t, simWorld(), shortcircuit.ServerBugs{}, func(e *env) {
		steps(
			func(next func()) { e.cl.Read(1, 0, 0, 100, func(model.Result) { next() }) },
			func(next func()) {
				e.dnProc.MainLoop().Post(e.srv.CloseIdle)
				e.cl.ReadVia(2, 0, 0, 100, func(rr model.Result, viaFDs bool) { r, local = rr, viaFDs; next() })
			},
			e.finish(&after),
		)
	})
	if r.Err != nil || !local {
		t.Errorf("the read whose cached connection the datanode closed: error %v, from passed fds %v; want no error, from passed fds", r.Err, local)
	}
}

// A domain socket that answers REQUEST_SHM with success but passes no
// segment's fd is not trusted: the client maps nothing, reads over TCP
// (turning short-circuit to that path off), and nothing leaks.
func TestSegmentReplyWithoutAnFDFallsBack(t *testing.T) {
	const liarPath = "/run/liar_socket"
	var r model.Result
	var local bool
	var segs []uint64
	var st shortcircuit.ClientStats
	var requests int
	var after rest
	e := startEnvCfg(t, simWorld(), shortcircuit.ServerBugs{}, func(e *env) {
		loop := e.cp.MainLoop()
		var liarLoop model.Loop
		var ln model.Listener
		var conns []model.Conn
		var cl *shortcircuit.Client
		steps(
			func(next func()) {
				e.w.Spawn("liar", model.ProcessConfig{}, func(lp model.Process) {
					liarLoop = lp.MainLoop()
					var err error
					if ln, err = lp.Listen("unix", liarPath, 0, liarLoop); err != nil {
						e.w.Fail(err)
						return
					}
					ln.SetHandler(func() {
						for {
							c, err := ln.Accept()
							if err != nil {
								return
							}
							conns = append(conns, c)
							var in []byte
							c.SetHandler(liarLoop, func(model.Events) {
								for {
									var b [512]byte
									n, err := c.Read(b[:])
									in = append(in, b[:n]...)
									if _, k, derr := shortcircuit.DecodeRequest(in); derr == nil {
										in = in[k:]
										requests++
										c.Write(shortcircuit.AppendResponse(nil, shortcircuit.Response{Status: model.StatusSuccess, ShmID: 7, Size: shortcircuit.SegmentSize}))
									}
									if err != nil {
										if !errors.Is(err, model.ErrWouldBlock) {
											c.Close()
										}
										return
									}
								}
							})
						}
					})
					loop.Post(next)
				})
			},
			func(next func()) {
				var err error
				cl, err = shortcircuit.NewClient(e.cp, loop, 2, e.sh, shortcircuit.ClientConfig{Path: liarPath, TCP: model.ClientConfig{Datanode: e.dn.Addr(), NoDelay: true}})
				if err != nil {
					e.w.Fail(err)
					return
				}
				cl.ReadVia(1, 0, 0, 100, func(rr model.Result, viaFDs bool) {
					r, local = rr, viaFDs
					// The path is off now: a second read goes over TCP
					// without asking the socket again.
					cl.ReadVia(1, 0, 0, 100, func(rr2 model.Result, viaFDs2 bool) {
						if rr2.Err != nil || viaFDs2 {
							r, local = rr2, viaFDs2
						}
						st, segs = cl.Stats(), shortcircuit.SegmentIDs(e.sh)
						cl.Close()
						liarLoop.Post(func() {
							ln.Close()
							for _, c := range conns {
								c.Close()
							}
							loop.Post(next)
						})
					})
				})
			},
			e.finish(&after),
		)
	})
	if r.Err != nil || !bytes.Equal(r.Data, model.BlockContent(1, blockLen)[:100]) || local {
		t.Errorf("read via a socket that passed no segment: error %v, from passed fds %v; want the bytes, over TCP", r.Err, local)
	}
	if requests != 1 || len(segs) != 0 || st.Fallbacks != 1 || st.TCPReads != 2 || st.FDsReceived != 0 {
		t.Errorf("%d requests to the liar, segments mapped %v, stats %+v; want 1, none, one fallback and two TCP reads", requests, segs, st)
	}
	e.checkRest(t, after)
}
