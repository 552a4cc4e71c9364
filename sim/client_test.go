package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// clientWorld starts a datanode with blocks 1..3 (4 KiB each) and a client
// process; script runs on the client's loop with the client.
func clientWorld(t *testing.T, dcfg model.DatanodeConfig, ccfg model.ClientConfig, script func(w *World, p model.Process, cl *model.Client)) (*World, *model.Datanode) {
	t.Helper()
	ccfg.Datanode = "dn:50010"
	blocks := make([][]byte, 3)
	for i := range blocks {
		blocks[i] = model.BlockContent(uint64(i+1), 4096)
	}
	return datanodeWorld(t, dcfg, blocks, "client", func(w *World, dn *model.Datanode, _, cp model.Process) {
		lastDatanode = dn
		cl, err := model.NewClient(cp, cp.MainLoop(), 0, ccfg)
		if err != nil {
			w.Fail(err)
			return
		}
		script(w, cp, cl)
	})
}

// datanodeWorld runs a world in which a datanode (dcfg, at dn:50010)
// serves blocks (block i+1 holds blocks[i]) and process peerName runs peer
// as soon as the datanode serves; it returns the world and the datanode
// once the world is done.
func datanodeWorld(t *testing.T, dcfg model.DatanodeConfig, blocks [][]byte, peerName string, peer func(w *World, dn *model.Datanode, dnProc, pp model.Process)) (*World, *model.Datanode) {
	t.Helper()
	w := New(DefaultConfig(1))
	var dn *model.Datanode
	dcfg.Addr = "dn:50010"
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		store := model.NewBlockStore(p.Disk(), "data")
		for i, b := range blocks {
			if _, err := store.Write(uint64(i+1), b); err != nil {
				w.Fail(err)
				return
			}
		}
		var err error
		if dn, err = model.StartDatanode(p, p.MainLoop(), dcfg); err != nil {
			w.Fail(err)
			return
		}
		w.Spawn(peerName, model.ProcessConfig{}, func(pp model.Process) { peer(w, dn, p, pp) })
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Hour); err != nil {
		t.Fatalf("run: %v", err)
	}
	return w, dn
}

// lastDatanode is the datanode clientWorld started, for scripts that act
// on it (tests run one world at a time).
var lastDatanode *model.Datanode

func mustRead(t *testing.T, cl *model.Client, block uint64, then func()) {
	cl.Read(block, 0, 0, 100, func(r model.Result) {
		if r.Err != nil {
			t.Errorf("read block %d: %v", block, r.Err)
		}
		then()
	})
}

func TestPeerCacheReusesAfterCleanEnd(t *testing.T) {
	var st model.ClientStats
	clientWorld(t, model.DefaultDatanodeConfig(), model.DefaultClientConfig(), func(w *World, p model.Process, cl *model.Client) {
		mustRead(t, cl, 1, func() {
			mustRead(t, cl, 2, func() {
				st = cl.Stats()
				cl.Close()
			})
		})
	})
	if st.Dials != 1 || st.Reused != 1 {
		t.Errorf("dials %d, reused %d; want the second read on the cached connection", st.Dials, st.Reused)
	}
}

func TestPeerCacheCapacityAndExpiry(t *testing.T) {
	ccfg := model.DefaultClientConfig()
	ccfg.CacheCapacity, ccfg.CacheExpiry = 2, 500*time.Millisecond
	var cachedAfter, cachedLater int
	var fdsLater int
	clientWorld(t, model.DefaultDatanodeConfig(), ccfg, func(w *World, p model.Process, cl *model.Client) {
		done := 0
		for i := 0; i < 5; i++ { // five at once: five connections
			mustRead(t, cl, 1, func() {
				done++
				if done < 5 {
					return
				}
				cachedAfter = cl.Cached()
				p.MainLoop().AfterFunc(time.Second, func() {
					cachedLater, fdsLater = cl.Cached(), p.FDs().Open
					cl.Close()
				})
			})
		}
	})
	if cachedAfter != 2 {
		t.Errorf("%d connections cached, want capacity 2", cachedAfter)
	}
	if cachedLater != 0 || fdsLater != 2 {
		t.Errorf("after expiry: %d cached, %d fds (want 0 and the loop's 2)", cachedLater, fdsLater)
	}
}

// A cached connection the datanode closed (client expiry longer than the
// server's keep-alive: HDFS-4911's configuration) is retried once on a
// fresh connection, and the caller sees no error.
func TestDeadCachedPeerRetriedOnce(t *testing.T) {
	dcfg := model.DefaultDatanodeConfig()
	dcfg.Keepalive = 200 * time.Millisecond
	ccfg := model.DefaultClientConfig()
	ccfg.CacheExpiry = 5 * time.Second
	var st model.ClientStats
	clientWorld(t, dcfg, ccfg, func(w *World, p model.Process, cl *model.Client) {
		mustRead(t, cl, 1, func() {
			p.MainLoop().AfterFunc(time.Second, func() {
				mustRead(t, cl, 1, func() {
					st = cl.Stats()
					cl.Close()
				})
			})
		})
	})
	if st.DeadPeers != 1 || st.Retries != 1 || st.Errors != 0 || st.Dials != 2 {
		t.Errorf("stats %+v: want one dead peer, retried once, no error", st)
	}
}

// A cached connection reset while it sits idle is evicted when the
// hangup comes, the one event a cached peer listens for (its reads are
// off): the next read dials at once, with no failed attempt on the dead
// connection (no dead peer, no retry), which is what the hangup handler
// is for. A reset is what the network or a datanode that closed with
// unread input sends; a plain FIN goes unnoticed until a read tries the
// peer (TestDeadCachedPeerRetriedOnce).
func TestResetCachedPeerIsEvicted(t *testing.T) {
	var st model.ClientStats
	reset, cachedAfter := false, -1
	clientWorld(t, model.DefaultDatanodeConfig(), model.DefaultClientConfig(), func(w *World, p model.Process, cl *model.Client) {
		mustRead(t, cl, 1, func() {
			if ids := p.(*Process).TCPConns(); len(ids) == 1 {
				reset = w.ResetConn(ids[0])
			}
			p.MainLoop().AfterFunc(10*time.Millisecond, func() {
				cachedAfter = cl.Cached()
				mustRead(t, cl, 2, func() {
					st = cl.Stats()
					cl.Close()
				})
			})
		})
	})
	if !reset {
		t.Fatal("no cached connection to reset")
	}
	if cachedAfter != 0 || st.DeadPeers != 0 || st.Retries != 0 || st.Dials != 2 || st.Errors != 0 {
		t.Errorf("%d cached after the reset; stats %+v: want it evicted, the second read on a fresh dial, no dead peer", cachedAfter, st)
	}
}

func TestRejectedReadIsNotCached(t *testing.T) {
	var r model.Result
	var cached int
	clientWorld(t, model.DefaultDatanodeConfig(), model.DefaultClientConfig(), func(w *World, p model.Process, cl *model.Client) {
		cl.Read(42, 0, 0, 10, func(res model.Result) {
			r, cached = res, cl.Cached()
			cl.Close()
		})
	})
	if r.Err == nil || r.Status != model.StatusErrorInvalid || cached != 0 {
		t.Errorf("read of a missing block: err %v, status %v, %d cached", r.Err, r.Status, cached)
	}
}

func TestClientCloseClosesCachedPeers(t *testing.T) {
	for _, leak := range []bool{false, true} {
		ccfg := model.DefaultClientConfig()
		ccfg.Bugs.CloseLeaksCache = leak
		var fds int
		clientWorld(t, model.DefaultDatanodeConfig(), ccfg, func(w *World, p model.Process, cl *model.Client) {
			mustRead(t, cl, 1, func() {
				cl.Close()
				p.MainLoop().AfterFunc(10*time.Second, func() { fds = p.FDs().Open })
			})
		})
		if want := map[bool]int{false: 2, true: 3}[leak]; fds != want {
			t.Errorf("CloseLeaksCache=%v: %d client fds after close, want %d", leak, fds, want)
		}
	}
}

func TestWriteAppendReplaceDelete(t *testing.T) {
	var steps []string
	clientWorld(t, model.DefaultDatanodeConfig(), model.DefaultClientConfig(), func(w *World, p model.Process, cl *model.Client) {
		cl.Write(9, []byte("hello"), func(r model.Result) {
			steps = append(steps, "write", r.Status.String())
			cl.Write(9, []byte("again"), func(r model.Result) {
				steps = append(steps, "rewrite", r.Status.String())
				cl.Append(9, []byte(", world"), func(r model.Result) {
					steps = append(steps, "append", r.Status.String())
					cl.Read(9, 0, 0, 12, func(r model.Result) {
						steps = append(steps, "read", string(r.Data))
						cl.Replace(9, []byte("new"), func(r model.Result) {
							steps = append(steps, "replace", r.Status.String())
							cl.Read(9, 0, 0, 3, func(r model.Result) {
								steps = append(steps, "read", string(r.Data))
								cl.Delete(9, func(r model.Result) {
									steps = append(steps, "delete", r.Status.String())
									cl.Read(9, 0, 0, 3, func(r model.Result) {
										steps = append(steps, "read", r.Status.String())
										cl.Close()
									})
								})
							})
						})
					})
				})
			})
		})
	})
	want := "write SUCCESS rewrite ERROR_EXISTS append SUCCESS read hello, world replace SUCCESS read new delete SUCCESS read ERROR_INVALID"
	if got := strings.Join(steps, " "); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Stop tears a datanode down from any state: listener, connections (one
// of them idle in keep-alive), pooled handles, selectors and workers go,
// and only the process's main loop remains.
func TestDatanodeStopReleasesEverything(t *testing.T) {
	var dnProc model.Process
	var after model.Result
	_, dn := clientWorld(t, model.DefaultDatanodeConfig(), model.DefaultClientConfig(), func(w *World, p model.Process, cl *model.Client) {
		dnProc = w.Process("datanode")
		mustRead(t, cl, 1, func() {
			w.Process("datanode").MainLoop().Post(func() {
				lastDatanode.Stop()
				p.MainLoop().AfterFunc(time.Millisecond, func() {
					cl.Read(2, 0, 0, 10, func(r model.Result) {
						after = r
						cl.Close()
					})
				})
			})
		})
	})
	if after.Err == nil {
		t.Errorf("a read after Stop succeeded")
	}
	if got := dnProc.FDs().Open; got != 2 {
		t.Errorf("datanode process holds %d fds after Stop, want its main loop's 2", got)
	}
	if now, _ := dnProc.Threads(); now != 1 {
		t.Errorf("%d threads after Stop, want 1", now)
	}
	if dn.Conns() != 0 || dn.Pool().Handles() != 0 {
		t.Errorf("%d connections, %d handles after Stop", dn.Conns(), dn.Pool().Handles())
	}
}

func TestThreadedDatanodeStop(t *testing.T) {
	dcfg := model.DefaultDatanodeConfig()
	dcfg.Mode = model.Threaded
	var dnProc model.Process
	clientWorld(t, dcfg, model.DefaultClientConfig(), func(w *World, p model.Process, cl *model.Client) {
		dnProc = w.Process("datanode")
		mustRead(t, cl, 1, func() {
			dnProc.MainLoop().Post(func() {
				lastDatanode.Stop()
				p.MainLoop().AfterFunc(time.Millisecond, cl.Close)
			})
		})
	})
	if got := dnProc.FDs().Open; got != 2 {
		t.Errorf("datanode process holds %d fds after Stop, want 2", got)
	}
}

// ReadStream hands over each packet's bytes in the range, in order and at
// their offsets, and keeps none of them: a 3000-byte read from offset 700
// in 1 KiB packets (the first starting at the chunk boundary 512) arrives
// as four pieces, the first and last trimmed to the range, and the Result
// carries no Data.
func TestReadStreamDeliversTheRangeInPieces(t *testing.T) {
	dcfg := model.DefaultDatanodeConfig()
	dcfg.PacketSize = 1024
	want := model.BlockContent(2, 4096)[700:3700]
	var got []byte
	var offs []int64
	var res model.Result
	clientWorld(t, dcfg, model.DefaultClientConfig(), func(w *World, p model.Process, cl *model.Client) {
		sink := func(off int64, b []byte) {
			offs = append(offs, off)
			got = append(got, b...)
		}
		cl.ReadStream(2, 0, 700, 3000, sink, func(r model.Result) {
			res = r
			cl.Close()
		})
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Data != nil {
		t.Errorf("Result.Data has %d bytes; a streamed read keeps none", len(res.Data))
	}
	if string(got) != string(want) {
		t.Errorf("streamed %d bytes, not the block's bytes 700..3700", len(got))
	}
	if wantOffs := []int64{700, 1536, 2560, 3584}; !slices.Equal(offs, wantOffs) {
		t.Errorf("pieces at %v, want %v", offs, wantOffs)
	}
}

// The handle pool closes an idle handle once it has been idle PoolIdle,
// each at its own time: the trim timer is set for the least recently used
// idle handle's expiry, not every PoolIdle (that one, set when the first
// read took its handle, found block 1's handle idle for just under
// PoolIdle and closed it a whole PoolIdle late).
func TestIdleHandleClosedOncePoolIdlePassed(t *testing.T) {
	const idle = 50 * ms
	var handles []int
	var first time.Duration
	clientWorld(t, model.DatanodeConfig{PoolIdle: idle}, model.ClientConfig{}, func(w *World, p model.Process, cl *model.Client) {
		loop := p.MainLoop()
		mustRead(t, cl, 1, func() {
			first = loop.Now()
			loop.AfterFunc(20*ms, func() { mustRead(t, cl, 2, func() {}) })
			for _, at := range []time.Duration{45 * ms, 55 * ms, 75 * ms} {
				loop.AfterFunc(at, func() { handles = append(handles, lastDatanode.Pool().Handles()) })
			}
		})
	})
	// Block 1's handle idle since just before first, block 2's since
	// about first+20 ms: both open at +45 ms, one at +55, none at +75.
	if want := []int{2, 1, 0}; !slices.Equal(handles, want) {
		t.Errorf("open handles at +45, +55 and +75 ms after the first read (at %v): %v, want %v", first, handles, want)
	}
}
