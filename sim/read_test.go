package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// The data path's published effects, reproduced in the simulated world
// (issue 3). Virtual time is exact, so these are exact tests.

func runRead(t *testing.T, seed uint64, s model.ReadScenario) (*model.ReadResult, *World) {
	t.Helper()
	w := New(DefaultConfig(seed))
	res, err := model.RunRead(w, s, time.Hour)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Errors != 0 || res.Mismatches != 0 {
		t.Fatalf("%d errors, %d mismatches; first error: %s", res.Errors, res.Mismatches, res.FirstError)
	}
	if res.BytesVerified != res.BytesRead || res.BytesRead != int64(s.Clients*s.Ops*s.ReadSize) {
		t.Fatalf("verified %d of %d bytes read, want %d", res.BytesVerified, res.BytesRead, s.Clients*s.Ops*s.ReadSize)
	}
	return res, w
}

// HDFS-941: with keep-alive, NODELAY off stalls every reused request on
// the datanode's delayed ACK; NODELAY on removes the stall.
func TestKeepaliveReuseStallsWithoutNoDelay(t *testing.T) {
	var tput [2]float64
	for i, nd := range []bool{false, true} {
		s := model.DefaultReadScenario()
		s.Ops = 100
		s.Server.NoDelay, s.Client.NoDelay = nd, nd
		res, _ := runRead(t, 1, s)
		st := res.Latencies.Summarize()
		tput[i] = res.ThroughputMBps()
		t.Logf("nodelay=%v: p50 %v, %.2f MB/s, %d keep-alive reuses", nd, st.P50, tput[i], res.Server.KeepaliveReuses)
		if res.Server.KeepaliveReuses != s.Ops-1 {
			t.Errorf("nodelay=%v: %d keep-alive reuses, want %d", nd, res.Server.KeepaliveReuses, s.Ops-1)
		}
		if !nd && st.P50 < 40*time.Millisecond {
			t.Errorf("nodelay off: p50 %v, want ≥ 40 ms", st.P50)
		}
	}
	if tput[1] < 10*tput[0] {
		t.Errorf("NODELAY throughput %.2f MB/s is not ≥ 10× %.2f MB/s", tput[1], tput[0])
	}
}

// HDFS-918: 128 clients doing random reads over 8 blocks. The reactor
// needs a socket per connection plus the pool; a thread per connection
// needs socket, thread (epoll + eventfd) and block + meta files.
func TestReactorUsesFewerFDsThanThreadPerConnection(t *testing.T) {
	peak := map[model.ServerMode]int{}
	for _, mode := range []model.ServerMode{model.Reactor, model.Threaded} {
		s := model.DefaultReadScenario()
		s.Clients, s.Ops, s.Blocks = 128, 5, 8
		s.Server.Mode, s.Server.PoolMax = mode, 64
		s.StartTogether = true
		res, w := runRead(t, 1, s)
		peak[mode] = res.ServerPeakFDs
		t.Logf("%s: peak fds %d, peak threads %d, peak block files %d, p50 %v, %d events",
			mode, res.ServerPeakFDs, res.ServerPeakThr, res.PeakBlockFiles, res.Latencies.Summarize().P50, w.Events())
	}
	if peak[model.Reactor] > 128+64+16 {
		t.Errorf("reactor peak fds %d > 128 + 64 + 16", peak[model.Reactor])
	}
	if float64(peak[model.Threaded]) < 2.5*128 {
		t.Errorf("threaded peak fds %d < 2.5 × 128", peak[model.Threaded])
	}
}

// The pool bound holds at every event, not only at the end.
func TestOpenBlockFilesNeverExceedPoolMax(t *testing.T) {
	for _, poolMax := range []int{2, 6, 64} {
		s := model.DefaultReadScenario()
		s.Clients, s.Ops, s.Blocks = 32, 10, 8
		s.Server.PoolMax = poolMax
		w := New(DefaultConfig(3))
		var dn *model.Datanode
		s.Observe = func(d *model.Datanode, _ []*model.Client) { dn = d }
		seen, checked := 0, 0
		w.AfterEach(func() {
			if dn == nil {
				return
			}
			checked++
			n := dn.OpenBlockFiles()
			seen = max(seen, n)
			if n > poolMax {
				t.Fatalf("pool-max %d: %d block files open at %v", poolMax, n, w.Now())
			}
			if c := dn.Pool().ClosedInUse; c != 0 {
				t.Fatalf("a handle was closed while in use")
			}
		})
		res, err := model.RunRead(w, s, time.Hour)
		if err != nil || res.Errors != 0 {
			t.Fatalf("pool-max %d: %v, %d errors (%s)", poolMax, err, res.Errors, res.FirstError)
		}
		t.Logf("pool-max %d: at most %d open over %d events, %d reads waited for room", poolMax, seen, checked, dn.Pool().Waited)
		if seen == 0 || seen > poolMax {
			t.Errorf("pool-max %d: peak %d", poolMax, seen)
		}
	}
}

// After the workload and every timeout, each process is back to what it
// held before: fds, threads, timers, pending work; and the datanode to no
// connections, lent buffers or pooled handles.
func TestEveryProcessBackToBaselineAfterTimeouts(t *testing.T) {
	for _, mode := range []model.ServerMode{model.Reactor, model.Threaded} {
		s := model.DefaultReadScenario()
		s.Clients, s.Ops = 8, 20
		s.Server.Mode = mode
		res, w := runRead(t, 5, s)
		if res.ServerEndFDs != res.ServerBaselineFDs || res.ClientEndFDs != 0 {
			t.Errorf("%s: server fds %d (baseline %d), client fds left %d", mode, res.ServerEndFDs, res.ServerBaselineFDs, res.ClientEndFDs)
		}
		if res.ServerEndConns != 0 || res.ServerEndBufs != 0 || res.ServerEndHandles != 0 {
			t.Errorf("%s: %d connections, %d buffers, %d handles left", mode, res.ServerEndConns, res.ServerEndBufs, res.ServerEndHandles)
		}
		for _, p := range w.Processes() {
			r := p.Resources()
			wantFDs := 2 // the main loop's epoll and eventfd
			wantThreads := 1
			if p.Name() == "datanode" {
				wantFDs = res.ServerBaselineFDs
				wantThreads = 1
				if mode == model.Reactor {
					wantThreads = 1 + s.Server.Selectors + s.Server.Workers
				}
			}
			if r.FDs != wantFDs || r.Timers != 0 || r.Work != 0 || r.Threads != wantThreads {
				t.Errorf("%s: process %s holds %+v, want %d fds, %d threads, no timers or work", mode, p.Name(), r, wantFDs, wantThreads)
			}
		}
	}
}

func TestSequentialReadsVerify(t *testing.T) {
	s := model.DefaultReadScenario()
	s.Clients, s.Ops, s.Pattern, s.ReadSize = 4, 40, "sequential", 100_000
	runRead(t, 2, s)
}
