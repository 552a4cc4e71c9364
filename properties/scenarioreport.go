package properties

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// What a scenario reports, checked (property "report"): `run`,
// `validate` and `bench` print a scenario's figures, so figures that do
// not describe the run are a bug as real as a lost byte.
//
//   - read and parallel-read: every client records its ops (History,
//     set through the scenario's OnClient hook), and the ops, errors,
//     bytes, elapsed time (first call to last return) and the multiset
//     of latencies the result reports must be exactly those of the
//     recorded ops; the summed client counters, the datanode's counters,
//     peaks and what it holds at the end must be what the harness reads
//     from the clients, the datanode and its process;
//   - every scenario with latencies: the summary (p50 and p99 by nearest
//     rank, mean, max) and the stall share are recomputed from them;
//   - a run cut short by its limit must say so (an error wrapping
//     sim.ErrLimit, which `run` turns into exit code 3), never return a
//     result as if it had finished: each seed runs its case once more
//     with a limit of 1 ns.
//
// Property "config": a scenario's validation accepts each value at its
// documented bound and refuses it one past, with an error that names the
// flag and the refused value, so `run`'s flags mean what README says and
// a user sees which one was wrong; and its defaults are the documented
// ones (ReadDefaults, ParallelReadDefaults). Each seed probes every bound of its scenario (a probe is
// a call to Validate: no run).

// PropReport is the scenario property that reported figures are those of
// the run.
const PropReport = "report"

// readObserver holds what the harness records of a read scenario's
// clients.
type readObserver struct {
	hists []*model.History
}

func (o *readObserver) onClient(i int, cl *model.Client) {
	cl.History = &model.History{}
	o.hists[i] = cl.History
}

// staleReads counts the reads of block stale (0: none) that returned,
// which the wrong replica makes mismatches, and their bytes; warmUp skips
// each client's first op.
func (o *readObserver) staleReads(warmUp bool, stale int) (n int, bytes int64) {
	for _, h := range o.hists {
		if h == nil || stale == 0 {
			continue
		}
		ops := h.Ops
		if warmUp && len(ops) > 0 {
			ops = ops[1:]
		}
		for i := range ops {
			if op := &ops[i]; op.Block == uint64(stale) && op.Done && op.Result.Err == nil {
				n++
				bytes += op.Len
			}
		}
	}
	return n, bytes
}

// opFigures are figures computed from recorded ops.
type opFigures struct {
	ops, errors         int
	reads, streams      int // parallel-read's positional and short reads
	bytes               int64
	first, last         time.Duration
	latencies           model.Latencies
	started, unreturned bool
}

func (f *opFigures) add(o *model.Operation, bytes int64) {
	if !o.Done {
		f.unreturned = true
		return
	}
	f.ops++
	f.latencies = append(f.latencies, o.Return-o.Call)
	if !f.started || o.Call < f.first {
		f.first, f.started = o.Call, true
	}
	f.last = max(f.last, o.Return)
	if o.Result.Err != nil {
		f.errors++
		return
	}
	f.bytes += bytes
}

func (f *opFigures) elapsed() time.Duration { return f.last - f.first }

// sameLatencies reports whether a and b hold the same durations, in any
// order.
func sameLatencies(a, b model.Latencies) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// closeTo compares two reported rates (a float formula, recomputed).
func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// listed is the latencies in a run's log, for the checks that go through
// them one by one. A run of check's size (20 ops a client or a reader
// drawn, 100 in a case file) is far from the thousands a log lists before
// it folds them into buckets (a folded log lists none), so a log that
// does not list every latency it counts fails the report.
func (r *scenarioRun) listed(log *model.LatencyLog) (model.Latencies, bool) {
	if r.prop != "" {
		return nil, false
	}
	l := log.Listed()
	if len(l) != log.Len() {
		r.fail(PropReport, "the run's log lists %d of its %d latencies; a run this small lists them all", len(l), log.Len())
		return nil, false
	}
	return l, true
}

// checkSummary recomputes the statistics of a run's latencies.
func (r *scenarioRun) checkSummary(log *model.LatencyLog) {
	l, ok := r.listed(log)
	if !ok || len(l) == 0 {
		return
	}
	sorted := slices.Clone(l)
	slices.Sort(sorted)
	rank := func(pct float64) time.Duration {
		k := int(math.Ceil(float64(len(sorted)) * pct / 100))
		return sorted[max(k, 1)-1]
	}
	var sum time.Duration
	stalls := 0
	for _, d := range l {
		sum += d
		if d >= model.StallThreshold {
			stalls++
		}
	}
	want := model.Summary{First: l[0], P50: rank(50), P99: rank(99), Mean: sum / time.Duration(len(l)), Max: sorted[len(sorted)-1]}
	if got := log.Summarize(); got != want {
		r.fail(PropReport, "the latency summary of %d ops is %+v, their latencies give %+v", len(l), got, want)
		return
	}
	if got, want := log.StallShare(), float64(stalls)/float64(len(l)); got != want {
		r.fail(PropReport, "stall share %v reported, %d of %d ops took %v or more", got, stalls, len(l), model.StallThreshold)
	}
}

// checkReadReport checks RunRead's result against the clients' recorded
// ops and the datanode as the harness sees it once the run is over.
func (r *scenarioRun) checkReadReport(s model.ReadScenario, res *model.ReadResult, o *readObserver, clients []*model.Client, dn *model.Datanode, dnProc *sim.Process) {
	var f opFigures
	var stats model.ClientStats
	for i, h := range o.hists {
		if h == nil || clients[i] == nil {
			r.fail(PropReport, "client-%d was never made", i)
			return
		}
		ops := h.Ops
		if s.StartTogether {
			// The warm-up read, not counted: byte 0 of block 1, the one
			// block every scenario has.
			if len(ops) == 0 {
				r.fail(PropReport, "client-%d started together without a warm-up read", i)
				return
			}
			if wu := &ops[0]; wu.Block != 1 || wu.Off != 0 || wu.Len != 1 || !wu.Done || wu.Result.Err != nil || len(wu.Result.Data) != 1 {
				r.fail(PropReport, "client-%d's warm-up read was %d bytes of block %d at %d (done %v, %d bytes back, error %v), want byte 0 of block 1",
					i, wu.Len, wu.Block, wu.Off, wu.Done, len(wu.Result.Data), wu.Result.Err)
				return
			}
			ops = ops[1:]
		}
		for j := range ops {
			f.add(&ops[j], ops[j].Len)
		}
		st := clients[i].Stats()
		stats.Ops += st.Ops
		stats.Errors += st.Errors
		stats.Dials += st.Dials
		stats.Reused += st.Reused
		stats.DeadPeers += st.DeadPeers
		stats.Retries += st.Retries
		stats.Expired += st.Expired
		stats.ChecksumErrors += st.ChecksumErrors
		stats.BytesRead += st.BytesRead
	}
	fds := dnProc.FDs()
	_, peakThr := dnProc.Threads()
	handles := 0
	if dn.Pool() != nil {
		handles = dn.Pool().Handles()
	}
	switch {
	case f.unreturned:
		r.fail(PropReport, "the run reported an end with ops still in flight")
	case res.Ops != f.ops || res.Errors != f.errors || res.BytesRead != f.bytes:
		r.fail(PropReport, "reported %d reads, %d errors, %d bytes; the clients' ops were %d, %d errors, %d bytes",
			res.Ops, res.Errors, res.BytesRead, f.ops, f.errors, f.bytes)
	case res.Elapsed != f.elapsed():
		r.fail(PropReport, "reported elapsed %v; the ops ran from %v to %v (%v)", res.Elapsed, f.first, f.last, f.elapsed())
	case !sameLatencies(res.Latencies.Listed(), f.latencies):
		r.fail(PropReport, "the %d reported latencies are not those of the %d ops", res.Latencies.Len(), len(f.latencies))
	case !closeTo(res.ThroughputMBps(), float64(f.bytes)/1e6/f.elapsed().Seconds()):
		r.fail(PropReport, "reported %v MB/s for %d bytes in %v", res.ThroughputMBps(), f.bytes, f.elapsed())
	case res.ClientStats != stats:
		r.fail(PropReport, "reported client counters %+v; the clients counted %+v", res.ClientStats, stats)
	case res.Server != dn.Stats() || res.PeakBlockFiles != dn.PeakBlockFiles() || res.ServerEndConns != dn.Conns() ||
		res.ServerEndBufs != dn.BuffersOut() || res.ServerEndHandles != handles:
		r.fail(PropReport, "reported datanode %+v, %d peak block files, at the end %d connections, %d buffers, %d handles; the datanode has %+v, %d, %d, %d, %d",
			res.Server, res.PeakBlockFiles, res.ServerEndConns, res.ServerEndBufs, res.ServerEndHandles,
			dn.Stats(), dn.PeakBlockFiles(), dn.Conns(), dn.BuffersOut(), handles)
	case res.ServerPeakFDs != fds.Peak || res.ServerEndFDs != fds.Open || res.ServerPeakThr != peakThr:
		r.fail(PropReport, "reported datanode peak %d fds, %d at the end, peak %d threads; its process has %d, %d, %d",
			res.ServerPeakFDs, res.ServerEndFDs, res.ServerPeakThr, fds.Peak, fds.Open, peakThr)
	case res.ServerEndFDs != res.ServerBaselineFDs+2*res.ServerEndHandles:
		// What the pool still keeps idle is two fds a handle.
		r.fail(PropLeakFree, "after every timeout the datanode holds %d fds: %d when it started serving, and %d pooled handles",
			res.ServerEndFDs, res.ServerBaselineFDs, res.ServerEndHandles)
	}
	r.checkSummary(&res.Latencies)
}

// checkParallelReport checks RunParallelRead's result against the
// readers' recorded ops.
func (r *scenarioRun) checkParallelReport(res *model.ParallelReadResult, hists []*model.History, stale uint64) {
	var f opFigures
	for _, h := range hists {
		for j := range h.Ops {
			op := &h.Ops[j]
			n := int64(len(op.Result.Data))
			if op.Block == stale {
				n = 0 // a mismatch: no bytes counted as read
			}
			f.add(op, n)
			switch {
			case !op.Done || op.Result.Err != nil, op.Block == stale:
			case n < op.Len: // a short read of a stream
				f.streams++
			default:
				f.reads++
			}
		}
	}
	switch {
	case f.unreturned:
		r.fail(PropReport, "the run reported an end with reads still in flight")
	case res.Reads != f.reads || res.Streams != f.streams || res.Errors != f.errors || res.Bytes != f.bytes:
		r.fail(PropReport, "reported %d reads, %d short stream reads, %d errors, %d bytes; the readers' ops were %d, %d, %d, %d",
			res.Reads, res.Streams, res.Errors, res.Bytes, f.reads, f.streams, f.errors, f.bytes)
	case res.Elapsed != f.elapsed():
		r.fail(PropReport, "reported elapsed %v; the reads ran from %v to %v (%v)", res.Elapsed, f.first, f.last, f.elapsed())
	case !sameLatencies(res.Latencies.Listed(), f.latencies):
		r.fail(PropReport, "the %d reported latencies are not those of the %d reads", res.Latencies.Len(), len(f.latencies))
	case !closeTo(res.MBps(), float64(f.bytes)/1e6/f.elapsed().Seconds()):
		r.fail(PropReport, "reported %v MB/s for %d bytes in %v", res.MBps(), f.bytes, f.elapsed())
	}
	r.checkSummary(&res.Latencies)
}

// checkPatternReport checks tcp-pattern's latencies: one per op, each a
// positive time, and (the ops run one after another on one connection)
// adding up to no more than the run took.
func (r *scenarioRun) checkPatternReport(log *model.LatencyLog) {
	l, ok := r.listed(log)
	if !ok {
		return
	}
	var sum time.Duration
	for i, d := range l {
		if d <= 0 {
			r.fail(PropReport, "op %d took %v", i, d)
			return
		}
		sum += d
	}
	if now := r.w.Now(); sum > now {
		r.fail(PropReport, "the %d ops' latencies add up to %v, more than the run's %v", len(l), sum, now)
		return
	}
	r.checkSummary(log)
}

// checkLimit runs the case again with a limit of 1 ns: the scenario must
// return an error wrapping sim.ErrLimit.
func (r *scenarioRun) checkLimit() {
	if sr, ok := r.setupRun(); ok {
		r.checkLimitOf(sr)
	}
}

// checkLimitOf is checkLimit for the scenario's run sr: after a case that
// passed, run with a limit of 1 ns it must return an error wrapping
// sim.ErrLimit.
func (r *scenarioRun) checkLimitOf(sr setupRun) {
	if r.prop != "" {
		return
	}
	const limit = time.Nanosecond
	if _, _, err := sr.run(sim.New(worldConfig(r.c.Seed, 0, unhashed)), false, limit); !errors.Is(err, sim.ErrLimit) {
		r.fail(PropReport, "%s run with a limit of %v returned %v, want an error wrapping %q", r.c.Scenario, limit, err, sim.ErrLimit)
	}
}

// A configProbe sets one value of a scenario at or just past its bound.
type configProbe struct {
	name  string
	ok    bool   // the value is at its bound: accepted
	says  string // a refused value: what the error must say (the flag and the value)
	read  func(*model.ReadScenario)
	pat   func(*model.TCPPattern)
	par   func(*model.ParallelRead)
	pairs func(*model.Pairs)
	rpc   func(*namespace.Scenario)
	sc    func(*shortcircuit.ReadScenario)
}

var scenarioConfigProbes = []configProbe{
	{name: "path", says: "--path \"nfs\"", sc: func(s *shortcircuit.ReadScenario) { s.Path = "nfs" }},
	{name: "readers 4096", ok: true, sc: func(s *shortcircuit.ReadScenario) { s.Readers = 4096 }},
	{name: "readers 4097", says: "--readers 4097 outside", sc: func(s *shortcircuit.ReadScenario) { s.Readers = 4097 }},
	{name: "readers 0", says: "--readers 0 outside", sc: func(s *shortcircuit.ReadScenario) { s.Readers = 0 }},
	{name: "ops 1", ok: true, sc: func(s *shortcircuit.ReadScenario) { s.Ops = 1 }},
	{name: "ops 0", says: "--ops 0:", sc: func(s *shortcircuit.ReadScenario) { s.Ops = 0 }},
	{name: "blocks 65536", ok: true, sc: func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize, s.ReadSize = 1<<16, 1<<16, 1 }},
	{name: "blocks 65537", says: "--blocks 65537 outside", sc: func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize, s.ReadSize = 1<<16+1, 1, 1 }},
	{name: "block size 256 MiB", ok: true, sc: func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize = 1, 256<<20 }},
	{name: "block size 256 MiB + 1", says: "--block-size 268435457 outside", sc: func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize = 1, 256<<20+1 }},
	{name: "read size > block size", says: "--read-size 4097 outside [1, block size 4096]", sc: func(s *shortcircuit.ReadScenario) { s.BlockSize, s.ReadSize = 4096, 4097 }},
	{name: "blocks × size 4 GiB", ok: true, sc: func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize = 16, 256<<20 }},
	// Unbounded, 64 blocks of 256 MiB ran out of memory.
	{name: "blocks × size 4.25 GiB", says: "--blocks 17 × --block-size 268435456 exceeds 4 GiB", sc: func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize = 17, 256<<20 }},
	{name: "pattern", says: "--pattern \"strided\"", sc: func(s *shortcircuit.ReadScenario) { s.Pattern = "strided" }},
	{name: "cores 1024", ok: true, sc: func(s *shortcircuit.ReadScenario) { s.Cores = 1024 }},
	{name: "cores 1025", says: "--cores 1025 outside", sc: func(s *shortcircuit.ReadScenario) { s.Cores = 1025 }},
	{name: "clients 4096", ok: true, rpc: func(s *namespace.Scenario) { s.Clients = 4096 }},
	{name: "clients 4097", says: "--clients 4097 outside", rpc: func(s *namespace.Scenario) { s.Clients = 4097 }},
	{name: "clients 0", says: "--clients 0 outside", rpc: func(s *namespace.Scenario) { s.Clients = 0 }},
	{name: "threads 4096", ok: true, rpc: func(s *namespace.Scenario) { s.Threads = 4096 }},
	{name: "threads 4097", says: "--threads 4097 outside", rpc: func(s *namespace.Scenario) { s.Threads = 4097 }},
	{name: "threads 0", says: "--threads 0 outside", rpc: func(s *namespace.Scenario) { s.Threads = 0 }},
	{name: "depth 1000", ok: true, rpc: func(s *namespace.Scenario) { s.Depth, s.Fanout = 1000, 1 }},
	{name: "depth 1001", says: "--depth 1001 outside", rpc: func(s *namespace.Scenario) { s.Depth, s.Fanout = 1001, 1 }},
	{name: "depth 0", ok: true, rpc: func(s *namespace.Scenario) { s.Depth = 0 }},
	{name: "depth -1", says: "--depth -1 outside", rpc: func(s *namespace.Scenario) { s.Depth = -1 }},
	{name: "fanout 0", says: "--fanout 0:", rpc: func(s *namespace.Scenario) { s.Fanout = 0 }},
	{name: "files 0", says: "--files 0:", rpc: func(s *namespace.Scenario) { s.Files = 0 }},
	{name: "files 2^20", ok: true, rpc: func(s *namespace.Scenario) { s.Depth, s.Files, s.FileSize = 0, 1<<20, 1 }},
	{name: "files 2^20 + 1", says: "--files 1048577, is more than 1048576 files", rpc: func(s *namespace.Scenario) { s.Depth, s.Files, s.FileSize = 0, 1<<20+1, 1 }},
	{name: "files 4^10", ok: true, rpc: func(s *namespace.Scenario) { s.Depth, s.Fanout, s.Files, s.FileSize = 10, 4, 1, 1 }},
	// 65536^4 is 2^64: multiplied out, 0 files.
	{name: "fanout 65536, depth 4", says: "--fanout 65536 to the power --depth 4", rpc: func(s *namespace.Scenario) { s.Depth, s.Fanout, s.Files = 4, 1<<16, 1 }},
	{name: "files 2^62, fanout 4, depth 1", says: "more than 1048576 files", rpc: func(s *namespace.Scenario) { s.Depth, s.Fanout, s.Files = 1, 4, 1<<62 }},
	{name: "file size 256 MiB", ok: true, rpc: func(s *namespace.Scenario) { s.Depth, s.Files, s.FileSize = 0, 16, 256<<20 }},
	{name: "file size 256 MiB + 1", says: "--file-size 268435457 outside", rpc: func(s *namespace.Scenario) { s.Depth, s.Files, s.FileSize = 0, 1, 256<<20+1 }},
	{name: "file size 0", says: "--file-size 0 outside", rpc: func(s *namespace.Scenario) { s.FileSize = 0 }},
	{name: "files × size 4.25 GiB", says: "exceeds 4 GiB", rpc: func(s *namespace.Scenario) { s.ReadData, s.Depth, s.Files, s.FileSize = true, 0, 17, 256<<20 }},
	{name: "files × size 4.25 GiB, no data", ok: true, rpc: func(s *namespace.Scenario) { s.ReadData, s.Depth, s.Files, s.FileSize = false, 0, 17, 256<<20 }},
	{name: "mix 0:1", ok: true, rpc: func(s *namespace.Scenario) { s.Reads, s.Writes = 0, 1 }},
	{name: "mix 0:0", says: "--mix 0:0:", rpc: func(s *namespace.Scenario) { s.Reads, s.Writes = 0, 0 }},
	{name: "namenode cores 1024", ok: true, rpc: func(s *namespace.Scenario) { s.NamenodeCores = 1024 }},
	{name: "namenode cores 1025", says: "--namenode-cores 1025 outside", rpc: func(s *namespace.Scenario) { s.NamenodeCores = 1025 }},
	{name: "namenode cores 0", says: "--namenode-cores 0 outside", rpc: func(s *namespace.Scenario) { s.NamenodeCores = 0 }},
	{name: "queue 0", ok: true, rpc: func(s *namespace.Scenario) { s.RPC.QueueSize = 0 }},
	{name: "queue -1", says: "--queue -1:", rpc: func(s *namespace.Scenario) { s.RPC.QueueSize = -1 }},
	{name: "handlers -1", says: "--handlers -1:", rpc: func(s *namespace.Scenario) { s.RPC.Handlers = -1 }},
	{name: "readers -1", says: "--readers -1:", rpc: func(s *namespace.Scenario) { s.RPC.Readers = -1 }},
	{name: "warmup 0", ok: true, rpc: func(s *namespace.Scenario) { s.Warmup = 0 }},
	{name: "warmup a day", ok: true, rpc: func(s *namespace.Scenario) { s.Warmup = 24 * time.Hour }},
	{name: "warmup a day + 1 ns", says: "--warmup 24h0m0.000000001s outside", rpc: func(s *namespace.Scenario) { s.Warmup = 24*time.Hour + 1 }},
	{name: "warmup -1 ns", says: "--warmup -1ns outside", rpc: func(s *namespace.Scenario) { s.Warmup = -1 }},
	{name: "duration a day", ok: true, rpc: func(s *namespace.Scenario) { s.Duration = 24 * time.Hour }},
	{name: "duration a day + 1 ns", says: "--duration 24h0m0.000000001s outside", rpc: func(s *namespace.Scenario) { s.Duration = 24*time.Hour + 1 }},
	{name: "duration 0", says: "--duration 0s outside", rpc: func(s *namespace.Scenario) { s.Duration = 0 }},
	{name: "lock", says: "lock \"spin\"", rpc: func(s *namespace.Scenario) { s.Lock = "spin" }},
	{name: "mix 2^20:2^20", ok: true, rpc: func(s *namespace.Scenario) { s.Reads, s.Writes = 1<<20, 1<<20 }},
	// Their sum, drawn from, wrapped negative and panicked.
	{name: "mix 2^63-1:1", says: "--mix 9223372036854775807:1:", rpc: func(s *namespace.Scenario) { s.Reads, s.Writes = math.MaxInt, 1 }},
	{name: "handlers 1024", ok: true, rpc: func(s *namespace.Scenario) { s.RPC.Handlers = 1024 }},
	{name: "handlers 1025", says: "--handlers 1025 outside", rpc: func(s *namespace.Scenario) { s.RPC.Handlers = 1025 }},
	{name: "readers 1024", ok: true, rpc: func(s *namespace.Scenario) { s.RPC.Readers = 1024 }},
	{name: "readers 1025", says: "--readers 1025 outside", rpc: func(s *namespace.Scenario) { s.RPC.Readers = 1025 }},
	{name: "readers × ops 10^7", ok: true, sc: func(s *shortcircuit.ReadScenario) { s.Readers, s.Ops = 1000, 10000 }},
	{name: "readers × ops 10^7 + 1000", says: "--readers 1000 × --ops 10001 is more than 10000000 reads", sc: func(s *shortcircuit.ReadScenario) { s.Readers, s.Ops = 1000, 10001 }},
	{name: "ops 2^63-1", says: "--ops 9223372036854775807 is more than", sc: func(s *shortcircuit.ReadScenario) { s.Ops = math.MaxInt }},
	{name: "clients × ops 10^7", ok: true, read: func(s *model.ReadScenario) { s.Clients, s.Ops = 1000, 10000 }},
	{name: "clients × ops 10^7 + 1000", says: "--clients 1000 × --ops 10001 is more than 10000000 reads", read: func(s *model.ReadScenario) { s.Clients, s.Ops = 1000, 10001 }},
	{name: "ops 2^63-1", says: "--ops 9223372036854775807 is more than", read: func(s *model.ReadScenario) { s.Ops = math.MaxInt }},
	{name: "pool max 2^20", ok: true, read: func(s *model.ReadScenario) { s.Server.PoolMax = 1 << 20 }},
	{name: "pool max 2^20 + 1", says: "--pool-max 1048577:", read: func(s *model.ReadScenario) { s.Server.PoolMax = 1<<20 + 1 }},
	{name: "keepalive an hour", ok: true, read: func(s *model.ReadScenario) { s.Server.Keepalive = time.Hour }},
	// Summed with the settling time it wrapped negative: the run counted
	// its fds before the keep-alive had passed, and reported leaks.
	{name: "keepalive an hour + 1 ns", says: "--keepalive 1h0m0.000000001s:", read: func(s *model.ReadScenario) { s.Server.Keepalive = time.Hour + 1 }},
	{name: "cache expiry an hour", ok: true, read: func(s *model.ReadScenario) { s.Client.CacheExpiry = time.Hour }},
	{name: "cache expiry an hour + 1 ns", says: "--cache-expiry 1h0m0.000000001s:", read: func(s *model.ReadScenario) { s.Client.CacheExpiry = time.Hour + 1 }},
	// Multiplied out, 4 × 2^62 wrapped to 0 and the request's buffer panicked.
	{name: "msg 2^62, writes 4", says: "larger than 1 GiB", pat: func(s *model.TCPPattern) { s.Writes, s.Msg = 4, 1<<62 }},
	{name: "pairs 1", ok: true, pairs: func(s *model.Pairs) { s.Pairs = 1 }},
	{name: "pairs 1024", ok: true, pairs: func(s *model.Pairs) { s.Pairs = 1024 }},
	{name: "pairs 1025", says: "--pairs 1025:", pairs: func(s *model.Pairs) { s.Pairs = 1025 }},
	{name: "pairs 0", says: "--pairs 0:", pairs: func(s *model.Pairs) { s.Pairs = 0 }},
	{name: "request 1 MiB", ok: true, pairs: func(s *model.Pairs) { s.Request = 1 << 20 }},
	{name: "request 1 MiB + 1", says: "--request 1048577:", pairs: func(s *model.Pairs) { s.Request = 1<<20 + 1 }},
	{name: "request 0", says: "--request 0:", pairs: func(s *model.Pairs) { s.Request = 0 }},
	{name: "reply 16 MiB", ok: true, pairs: func(s *model.Pairs) { s.Reply = 16 << 20 }},
	{name: "reply 16 MiB + 1", says: "--reply 16777217:", pairs: func(s *model.Pairs) { s.Reply = 16<<20 + 1 }},
	{name: "warm-up a minute", ok: true, pairs: func(s *model.Pairs) { s.WarmUp = time.Minute }},
	{name: "warm-up a minute + 1 ns", says: "--warm-up 1m0.000000001s:", pairs: func(s *model.Pairs) { s.WarmUp = time.Minute + 1 }},
	{name: "warm-up -1 ns", says: "--warm-up -1ns:", pairs: func(s *model.Pairs) { s.WarmUp = -1 }},
	{name: "window a minute", ok: true, pairs: func(s *model.Pairs) { s.Window = time.Minute }},
	{name: "window 0", says: "--window 0s:", pairs: func(s *model.Pairs) { s.Window = 0 }},
	{name: "clients 1", ok: true, read: func(s *model.ReadScenario) { s.Clients = 1 }},
	{name: "clients 4096", ok: true, read: func(s *model.ReadScenario) { s.Clients = 4096 }},
	{name: "clients 4097", says: "--clients 4097 outside", read: func(s *model.ReadScenario) { s.Clients = 4097 }},
	{name: "clients 0", says: "--clients 0 outside", read: func(s *model.ReadScenario) { s.Clients = 0 }},
	{name: "ops 1", ok: true, read: func(s *model.ReadScenario) { s.Ops = 1 }},
	{name: "ops 0", says: "--ops must be at least 1 (got 0)", read: func(s *model.ReadScenario) { s.Ops = 0 }},
	{name: "blocks 65536", ok: true, read: func(s *model.ReadScenario) { s.Blocks, s.BlockSize, s.ReadSize = 1<<16, 1<<16, 1 }},
	{name: "blocks 65537", says: "--blocks 65537 outside", read: func(s *model.ReadScenario) { s.Blocks, s.BlockSize, s.ReadSize = 1<<16+1, 1, 1 }},
	{name: "blocks 0", says: "--blocks 0 outside", read: func(s *model.ReadScenario) { s.Blocks = 0 }},
	{name: "block size 256 MiB", ok: true, read: func(s *model.ReadScenario) { s.Blocks, s.BlockSize = 1, 256<<20 }},
	{name: "block size 256 MiB + 1", says: "--block-size 268435457 outside", read: func(s *model.ReadScenario) { s.Blocks, s.BlockSize = 1, 256<<20+1 }},
	{name: "block size 1", ok: true, read: func(s *model.ReadScenario) { s.BlockSize, s.ReadSize = 1, 1 }},
	{name: "block size 0", says: "--block-size 0 outside", read: func(s *model.ReadScenario) { s.BlockSize, s.ReadSize = 0, 0 }},
	{name: "read size = block size", ok: true, read: func(s *model.ReadScenario) { s.ReadSize = s.BlockSize }},
	{name: "read size > block size", says: "--read-size 4097 outside [1, block size 4096]", read: func(s *model.ReadScenario) { s.BlockSize, s.ReadSize = 4096, 4097 }},
	{name: "read size 0", says: "--read-size 0 outside", read: func(s *model.ReadScenario) { s.ReadSize = 0 }},
	{name: "pattern", says: "--pattern \"strided\"", read: func(s *model.ReadScenario) { s.Pattern = "strided" }},
	{name: "blocks × size 4 GiB", ok: true, read: func(s *model.ReadScenario) { s.Blocks, s.BlockSize = 16, 256<<20 }},
	{name: "blocks × size 4.25 GiB", says: "exceeds 4 GiB", read: func(s *model.ReadScenario) { s.Blocks, s.BlockSize = 17, 256<<20 }},
	{name: "blocks × size 4 GiB + 64 KiB", says: "exceeds 4 GiB", read: func(s *model.ReadScenario) { s.Blocks, s.BlockSize, s.ReadSize = 1<<16, 1<<16+1, 1 }},
	{name: "pool max 0", ok: true, read: func(s *model.ReadScenario) { s.Server.PoolMax = 0 }},
	{name: "pool max 2", ok: true, read: func(s *model.ReadScenario) { s.Server.PoolMax = 2 }},
	{name: "pool max 1", says: "--pool-max 1:", read: func(s *model.ReadScenario) { s.Server.PoolMax = 1 }},
	{name: "keepalive 0", ok: true, read: func(s *model.ReadScenario) { s.Server.Keepalive = 0 }},
	{name: "keepalive -1ns", says: "--keepalive must not be negative", read: func(s *model.ReadScenario) { s.Server.Keepalive = -time.Nanosecond }},
	{name: "server mode", says: "server mode \"forked\"", read: func(s *model.ReadScenario) { s.Server.Mode = "forked" }},

	{name: "writes 1", ok: true, pat: func(s *model.TCPPattern) { s.Writes = 1 }},
	{name: "writes 0", says: "--writes must be at least 1 (got 0)", pat: func(s *model.TCPPattern) { s.Writes = 0 }},
	{name: "msg 1", ok: true, pat: func(s *model.TCPPattern) { s.Msg = 1 }},
	{name: "msg 0", says: "--msg must be at least 1 byte (got 0)", pat: func(s *model.TCPPattern) { s.Msg = 0 }},
	{name: "reply 1", ok: true, pat: func(s *model.TCPPattern) { s.Reply = 1 }},
	{name: "reply 0", ok: true, pat: func(s *model.TCPPattern) { s.Reply = 0 }},
	{name: "reply -1", says: "--reply must be at least 0 bytes (got -1)", pat: func(s *model.TCPPattern) { s.Reply = -1 }},
	{name: "gap 1m one-way", ok: true, pat: func(s *model.TCPPattern) { s.Reply, s.Gap = 0, time.Minute }},
	{name: "gap 1m1ns", says: "--gap 1m0.000000001s outside 0 to 1m", pat: func(s *model.TCPPattern) { s.Reply, s.Gap = 0, time.Minute+1 }},
	{name: "gap with a reply", says: "it needs --reply 0", pat: func(s *model.TCPPattern) { s.Reply, s.Gap = 1, time.Millisecond }},
	{name: "sizes 1 GiB", ok: true, pat: func(s *model.TCPPattern) { s.Sizes = []int{1 << 29, 1 << 29} }},
	{name: "sizes 1 GiB + 1", says: "--sizes: request larger than 1 GiB", pat: func(s *model.TCPPattern) { s.Sizes = []int{1 << 29, 1<<29 + 1} }},
	{name: "sizes 0", says: "--sizes: write 2 of 0 bytes", pat: func(s *model.TCPPattern) { s.Sizes = []int{1, 0} }},
	{name: "ops 1", ok: true, pat: func(s *model.TCPPattern) { s.Ops = 1 }},
	{name: "ops 0", says: "--ops must be at least 1 (got 0)", pat: func(s *model.TCPPattern) { s.Ops = 0 }},
	{name: "request 1 GiB", ok: true, pat: func(s *model.TCPPattern) { s.Writes, s.Msg = 2, 1<<29 }},
	{name: "request 1 GiB + 2", says: "larger than 1 GiB", pat: func(s *model.TCPPattern) { s.Writes, s.Msg = 2, 1<<29+1 }},
	{name: "reply 1 GiB", ok: true, pat: func(s *model.TCPPattern) { s.Reply = 1 << 30 }},
	{name: "reply 1 GiB + 1", says: "larger than 1 GiB", pat: func(s *model.TCPPattern) { s.Writes, s.Msg, s.Reply = 1, 1, 1<<30+1 }},

	{name: "files 1", ok: true, par: func(s *model.ParallelRead) { s.Files = 1 }},
	{name: "files 64", ok: true, par: func(s *model.ParallelRead) { s.Files = 64 }},
	{name: "files 65", says: "files 65,", par: func(s *model.ParallelRead) { s.Files = 65 }},
	{name: "files 0", says: "files 0,", par: func(s *model.ParallelRead) { s.Files = 0 }},
	{name: "readers 256", ok: true, par: func(s *model.ParallelRead) { s.Readers = 256 }},
	{name: "readers 257", says: "readers 257,", par: func(s *model.ParallelRead) { s.Readers = 257 }},
	{name: "readers 0", says: "readers 0,", par: func(s *model.ParallelRead) { s.Readers = 0 }},
	{name: "iterations 1", ok: true, par: func(s *model.ParallelRead) { s.Iterations = 1 }},
	{name: "iterations 0", says: "iterations 0 out of range", par: func(s *model.ParallelRead) { s.Iterations = 0 }},
	{name: "file size 128", ok: true, par: func(s *model.ParallelRead) { s.FileSize = 128 }},
	{name: "file size 127", says: "file size 127 outside", par: func(s *model.ParallelRead) { s.FileSize = 127 }},
	{name: "file size 64 MiB", ok: true, par: func(s *model.ParallelRead) { s.FileSize = 64 << 20 }},
	{name: "file size 64 MiB + 1", says: "file size 67108865 outside", par: func(s *model.ParallelRead) { s.FileSize = 64<<20 + 1 }},
}

// ReadDefaults is `run read`'s workload by default, as README's `run`
// section says it (cmd/xceiver's README test holds README to it).
var ReadDefaults = model.ReadScenario{Clients: 1, Ops: 200, ReadSize: 32 << 10, Blocks: 8, BlockSize: 1 << 20, Pattern: "random"}

// ParallelReadDefaults is TestParallelRead's single-file case with four
// readers, as README's hdfs-941 describes it: a 256 KiB file, 1024 reads
// per reader.
var ParallelReadDefaults = model.ParallelRead{Files: 1, Readers: 4, Iterations: 1024, FileSize: 256 << 10}

// checkDefaults compares the scenario's defaults (what `run` and `bench`
// start from) with the documented ones.
func (r *scenarioRun) checkDefaults() {
	switch r.c.Scenario {
	case ScenarioRead:
		d, want := model.DefaultReadScenario(), ReadDefaults
		if got := [...]any{d.Clients, d.Ops, d.ReadSize, d.Blocks, d.BlockSize, d.Pattern}; got != [...]any{want.Clients, want.Ops, want.ReadSize, want.Blocks, want.BlockSize, want.Pattern} {
			r.fail(PropConfig, "read: the defaults are clients, ops, read size, blocks, block size, pattern %v, documented %v", got,
				[...]any{want.Clients, want.Ops, want.ReadSize, want.Blocks, want.BlockSize, want.Pattern})
		}
	case ScenarioParallelRead:
		d, want := model.DefaultParallelRead(), ParallelReadDefaults
		if got := [...]int{d.Files, d.Readers, d.Iterations, d.FileSize}; got != [...]int{want.Files, want.Readers, want.Iterations, want.FileSize} {
			r.fail(PropConfig, "parallel-read: the defaults are files, readers, iterations, file size %v, documented %v", got,
				[...]int{want.Files, want.Readers, want.Iterations, want.FileSize})
		}
	}
}

// validateEdited validates s once edit has changed it.
func validateEdited[T any](s T, edit func(*T), validate func(*T) error) error {
	edit(&s)
	return validate(&s)
}

// checkConfig probes every bound of the case's scenario, starting from
// the drawn (valid) case, and its defaults.
func (r *scenarioRun) checkConfig() {
	r.checkDefaults()
	for _, p := range scenarioConfigProbes {
		if r.prop != "" {
			return
		}
		var err error
		switch {
		case p.read != nil && r.c.Scenario == ScenarioRead:
			err = validateEdited(r.c.readScenario(), p.read, (*model.ReadScenario).Validate)
		case p.pat != nil && r.c.Scenario == ScenarioTCPPattern:
			err = validateEdited(r.c.tcpPattern(), p.pat, (*model.TCPPattern).Validate)
		case p.par != nil && r.c.Scenario == ScenarioParallelRead:
			err = validateEdited(r.c.parallelRead(), p.par, (*model.ParallelRead).Validate)
		case p.pairs != nil && r.c.Scenario == ScenarioPairs:
			err = validateEdited(r.c.pairsScenario(), p.pairs, (*model.Pairs).Validate)
		case p.rpc != nil && r.c.Scenario == ScenarioRPC:
			err = validateEdited(r.c.rpcScenario(), p.rpc, (*namespace.Scenario).Validate)
		case p.sc != nil && r.c.Scenario == ScenarioSCRead:
			err = validateEdited(r.c.scRead(), p.sc, (*shortcircuit.ReadScenario).Validate)
		default:
			continue
		}
		if why := p.wrong(err); why != "" {
			r.fail(PropConfig, "%s: %s", r.c.Scenario, why)
		}
	}
}

// wrong says how err, what validating the probe's value returned, is not
// what the probe wants ("" if it is).
func (p *configProbe) wrong(err error) string {
	switch {
	case p.ok && err != nil:
		return fmt.Sprintf("%s refused at its bound: %v", p.name, err)
	case !p.ok && err == nil:
		return p.name + " accepted"
	case !p.ok && !strings.Contains(err.Error(), p.says):
		return fmt.Sprintf("%s refused with %q, which does not say %q", p.name, err, p.says)
	}
	return ""
}
