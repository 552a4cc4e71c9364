package real

import (
	"bytes"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/abuse"
)

// BenchmarkAbuse is issue 9's benchmark on real loopback: one datanode
// under 1000 idle connections, 200 slowloris drips, 50 clients that never
// read what they asked for and 20 garbage senders, while one well-behaved
// client reads a 64 KiB block 200 times, one read after the other. It
// reports the good client's p99 and errors, the datanode's peak fds, the
// connections it held while the good client read, and the Go heap above
// the baseline taken before the world started (after a GC, the whole
// process: attackers and client live in it too).
//
// In "held" the datanode's cap (MaxConns 4096, fd limit 8192) is above
// the attack, so it holds every hostile connection; in "capped" its fd
// limit is 512, so the cap (lowered to keep fds in reserve) turns most of
// them away and closes idle ones to make room. Its timeouts are the
// defaults (60 s): no hostile peer is closed by a timeout during the run.
//
//	go test ./real -run XXX -bench Abuse -benchtime 1x
func BenchmarkAbuse(b *testing.B) {
	b.Run("held", func(b *testing.B) { benchAbuse(b, 8192, 4096) })
	b.Run("capped", func(b *testing.B) { benchAbuse(b, 512, 0) })
}

func benchAbuse(b *testing.B, fdLimit, maxConns int) {
	const goodReads, goodSize = 200, 64 << 10
	idle, drip, nonreaders, garbage := 1000, 200, 50, 20
	// Each hostile connection costs two fds in this process (both ends);
	// keep 1024 for everything else.
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		b.Fatal(err)
	}
	if need := 2*(idle+drip+nonreaders+garbage) + 1024; int(rl.Cur) < need {
		scale := float64(int(rl.Cur)-1024) / float64(need-1024)
		if scale <= 0 {
			b.Fatalf("fd limit %d leaves no room for hostile peers", rl.Cur)
		}
		idle, drip, nonreaders, garbage = int(float64(idle)*scale), int(float64(drip)*scale), int(float64(nonreaders)*scale), int(float64(garbage)*scale)
		b.Logf("fd limit %d < %d: peers scaled down to %d idle, %d drip, %d non-readers, %d garbage", rl.Cur, need, idle, drip, nonreaders, garbage)
	}
	attacks := []abuse.Attack{
		{Kind: abuse.Idle, Count: idle},
		{Kind: abuse.Drip, Count: drip, Block: 2, Length: goodSize, Every: 500 * time.Millisecond},
		{Kind: abuse.NonReader, Count: nonreaders, Block: 1, Length: 16 << 20},
		{Kind: abuse.Garbage, Count: garbage},
	}
	hostile := idle + drip + nonreaders + garbage
	var p99, errs, fds, conns, heap float64
	for i := 0; i < b.N; i++ {
		r, err := runAbuse(attacks, goodReads, goodSize, fdLimit, maxConns)
		if err != nil {
			b.Fatal(err)
		}
		switch {
		case maxConns == 0 && r.peakFDs > fdLimit:
			b.Errorf("the datanode peaked at %d fds over its limit %d", r.peakFDs, fdLimit)
		case maxConns > 0 && r.conns < hostile-garbage:
			b.Errorf("the datanode held %d connections while the good client read, want at least the %d hostile ones that stay", r.conns, hostile-garbage)
		}
		p99 += float64(r.lat.Summarize().P99.Microseconds())
		errs += float64(r.errs)
		fds = max(fds, float64(r.peakFDs))
		conns = max(conns, float64(r.conns))
		heap = max(heap, float64(r.heap)/(1<<20))
	}
	b.ReportMetric(p99/float64(b.N), "p99-µs")
	b.ReportMetric(errs, "errors")
	b.ReportMetric(fds, "peak-fds")
	b.ReportMetric(conns, "server-conns")
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(0, "ns/op")
	if errs > 0 {
		b.Errorf("the good client saw %v errors, want 0", errs)
	}
	if heap >= 64 {
		b.Errorf("heap %.1f MiB above baseline, want under 64", heap)
	}
}

type abuseResult struct {
	lat     model.Latencies
	errs    int
	peakFDs int
	conns   int    // the datanode's connections, sampled during the reads
	heap    uint64 // bytes above baseline, the most seen
}

// runAbuse runs one datanode, the hostile peers and the good client.
func runAbuse(attacks []abuse.Attack, reads, size, fdLimit, maxConns int) (abuseResult, error) {
	var res abuseResult
	base := heapAfterGC()
	sample := func() {
		if h := heapAfterGC(); h > base {
			res.heap = max(res.heap, h-base)
		}
	}
	w, err := New(Config{})
	if err != nil {
		return res, err
	}
	content := model.BlockContent(2, size)
	var dnProc model.Process
	_, err = w.Spawn("datanode", model.ProcessConfig{FDLimit: fdLimit}, func(p model.Process) {
		dnProc = p
		store := model.NewBlockStore(p.Disk(), "data")
		for id, n := range []int{1: 16 << 20, 2: size} {
			if n == 0 {
				continue
			}
			if _, err := store.Write(uint64(id), model.BlockContent(uint64(id), n)); err != nil {
				w.Fail(err)
				return
			}
		}
		dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "127.0.0.1:0", MaxConns: maxConns})
		if err != nil {
			w.Fail(err)
			return
		}
		addr := dn.Addr()
		stop := func() {
			p.MainLoop().Post(func() {
				dn.Stop()
				p.MainLoop().AfterFunc(50*time.Millisecond, w.Stop)
			})
		}
		_, err = w.Spawn("attacker", model.ProcessConfig{FDLimit: 1 << 16}, func(ap model.Process) {
			peers := abuse.Start(ap, addr, attacks...)
			if peers.Failed > 0 {
				w.Fail(fmt.Errorf("%d hostile dials failed", peers.Failed))
				return
			}
			_, err := w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
				loop := cp.MainLoop()
				cl, err := model.NewClient(cp, loop, 1, model.ClientConfig{Datanode: addr, NoDelay: true, Timeout: 5 * time.Second})
				if err != nil {
					w.Fail(err)
					return
				}
				var next func(i int)
				next = func(i int) {
					if i == reads {
						cl.Close()
						sample()
						ap.MainLoop().Post(peers.Close)
						stop()
						return
					}
					if i == reads/2 {
						sample()
						p.MainLoop().Post(func() { res.conns = dn.Conns() })
					}
					start := loop.Now()
					cl.Read(2, 0, 0, int64(size), func(r model.Result) {
						res.lat = append(res.lat, loop.Now()-start)
						if r.Err != nil || !bytes.Equal(r.Data, content) {
							res.errs++
						}
						next(i + 1)
					})
				}
				// Let the hostile connections land first.
				loop.AfterFunc(time.Second, func() { sample(); next(0) })
			})
			if err != nil {
				w.Fail(err)
			}
		})
		if err != nil {
			w.Fail(err)
		}
	})
	if err != nil {
		w.Close()
		return res, err
	}
	err = w.Run(time.Minute)
	if dnProc != nil {
		res.peakFDs = dnProc.FDs().Peak
	}
	if cerr := w.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return res, err
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
