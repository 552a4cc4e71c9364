package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

func readFlags(fs *flag.FlagSet) func() (runner, error) {
	s := model.DefaultReadScenario()
	var server string
	fs.IntVar(&s.Clients, "clients", s.Clients, "client processes")
	fs.IntVar(&s.Ops, "ops", s.Ops, "reads per client")
	fs.IntVar(&s.ReadSize, "read-size", s.ReadSize, "bytes per read")
	fs.IntVar(&s.Blocks, "blocks", s.Blocks, "blocks on the datanode")
	fs.IntVar(&s.BlockSize, "block-size", s.BlockSize, "bytes per block")
	fs.StringVar(&s.Pattern, "pattern", s.Pattern, "random or sequential")
	fs.StringVar(&server, "server", string(s.Server.Mode), "reactor or threaded")
	fs.DurationVar(&s.Server.Keepalive, "keepalive", s.Server.Keepalive, "datanode keep-alive after a clean end")
	nodelay := fs.Bool("nodelay", true, "TCP_NODELAY on client and datanode (false reproduces HDFS-941)")
	fs.IntVar(&s.Server.PoolMax, "pool-max", s.Server.PoolMax, "open block-file fds in the handle pool")
	var counts countFlags
	counts.intVar(fs, &s.Server.Selectors, "selectors", "reactor selector loops")
	counts.intVar(fs, &s.Server.Workers, "workers", "reactor workers")
	fs.BoolVar(&s.Server.InlineIO, "inline-io", false, "reactor selectors build packets themselves (no worker pool)")
	fs.BoolVar(&s.Server.NoTransferTo, "no-transfer-to", false, "the datanode copies reads through a buffer instead of sending their data with sendfile")
	fs.IntVar(&s.Client.CacheCapacity, "cache-capacity", s.Client.CacheCapacity, "client peer cache capacity")
	fs.DurationVar(&s.Client.CacheExpiry, "cache-expiry", s.Client.CacheExpiry, "client peer cache expiry")
	fs.BoolVar(&s.StartTogether, "start-together", false, "start every client's first read at once")
	return func() (runner, error) {
		s.Server.Mode = model.ServerMode(server)
		s.Server.NoDelay, s.Client.NoDelay = *nodelay, *nodelay
		if s.Server.Keepalive == 0 {
			// Zero would mean "default" to the datanode; a user who
			// asks for no keep-alive gets the shortest wait instead.
			s.Server.Keepalive = time.Nanosecond
		}
		if err := counts.check("run read"); err != nil {
			return nil, err
		}
		if s.Server.Mode == model.Threaded {
			// Silently ignored, they would read as a threaded run
			// configured like a reactor.
			if reactorOnly := setFlags(fs, nil, "inline-io", "pool-max", "selectors", "workers"); len(reactorOnly) > 0 {
				return nil, usagef("run read: %s: the reactor's; --server threaded has a thread per connection", strings.Join(reactorOnly, ", "))
			}
		}
		if s.Server.InlineIO && isSet(fs, "workers") {
			// The datanode starts no pool then (model.StartDatanode): the
			// count went unread, and the run passed for one with it.
			return nil, usagef("run read: --workers: --inline-io has no worker pool; the selectors build the packets themselves")
		}
		if s.Server.PoolMax == 0 {
			// (Validate takes 0 for the default: the flag's default is 64.)
			return nil, usagef("run read: --pool-max 0: a handle needs 2 fds (data and meta)")
		}
		if err := s.Validate(); err != nil {
			return nil, usagef("run read: %v", err)
		}
		if s.Client.CacheExpiry <= 0 {
			return nil, usagef("run read: --cache-expiry %v: want a positive duration", s.Client.CacheExpiry)
		}
		if s.Client.CacheCapacity < 0 {
			return nil, usagef("run read: --cache-capacity %d: want 0 or more", s.Client.CacheCapacity)
		}
		return readRunner{s}, nil
	}
}

type readRunner struct{ s model.ReadScenario }

// worldCPU reads the CPU all of w's processes have used: the modelled CPU
// in sim, the OS process's user and system time in real (every process of
// a real world is this one OS process).
func worldCPU(w model.World) func() time.Duration {
	if sw, ok := w.(*sim.World); ok {
		return func() time.Duration {
			var t time.Duration
			for _, p := range sw.Processes() {
				t += p.CPUTime()
			}
			return t
		}
	}
	return processCPU
}

// procCPU reads one process's CPU: modelled in sim; in real what its
// callbacks and work used (real.Config.AccountCPU, which runReal sets
// for read runs).
func procCPU(p model.Process) time.Duration {
	if sp, ok := p.(*sim.Process); ok {
		return sp.CPUTime()
	}
	return real.CPUTime(p)
}

func (r readRunner) run(w model.World) (result, error) {
	var threads func(ops int) ([]threadRow, time.Duration)
	s := r.s
	s.CPUTime, threads = windowThreads(w, worldCPU(w))
	s.ProcessCPU = procCPU
	res, err := model.RunRead(w, s, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	st := res.Latencies.Summarize()
	perOp := func(d time.Duration) float64 { return us(d) / float64(max(res.Ops, 1)) }
	kinds, inKinds := threads(res.Ops)
	out := result{
		{"ops", res.Ops},
		{"server", string(r.s.Server.Mode)}, {"clients", r.s.Clients}, {"read_size", r.s.ReadSize},
		{"nodelay", r.s.Server.NoDelay}, {"keepalive", r.s.Server.Keepalive.String()},
		{"first_op_us", us(st.First)},
		{"p50_us", us(st.P50)},
		{"p99_us", us(st.P99)},
		{"mean_us", us(st.Mean)},
		{"stall_share", res.Latencies.StallShare()},
		{"throughput_mbps", res.ThroughputMBps()},
		{"cpu_us_per_op", perOp(res.CPU)},
		{"cpu_cores", res.CPU.Seconds() / max(res.Elapsed.Seconds(), 1e-9)},
		// Where the CPU went: the datanode's and the clients' threads,
		// and (real only) the rest of the OS process's, outside every
		// callback and work item: epoll_wait, Go's scheduler and GC.
		{"server_cpu_us_per_op", perOp(res.ServerCPU)},
		{"client_cpu_us_per_op", perOp(res.ClientCPU)},
		{"other_cpu_us_per_op", perOp(res.CPU - res.ServerCPU - res.ClientCPU)},
		// The same CPU by kind of thread, callbacks and work items only
		// in both worlds, and what was spent outside them: each
		// thread's dispatch and accounting, wake-ups; in real Go's
		// scheduler, poller and GC too. (Left out where the world
		// counts no kinds: real without AccountCPU.)
		{"threads", kinds},
		{"outside_callbacks_cpu_us_per_op", perOp(res.CPU - inKinds)},
		{"server_peak_fds", res.ServerPeakFDs},
		{"server_peak_threads", res.ServerPeakThr},
		{"server_peak_open_block_files", res.PeakBlockFiles},
		{"bytes_read", res.BytesRead},
		{"bytes_verified", res.BytesVerified},
		{"errors", res.Errors},
		{"first_error", res.FirstError}, // what the errors were, not only how many
		{"mismatches", res.Mismatches},
		{"keepalive_reuses", res.Server.KeepaliveReuses},
		{"dead_peer_retries", res.ClientStats.Retries},
		{"leaked_server_fds", res.ServerEndFDs - res.ServerBaselineFDs},
		{"leaked_client_fds", res.ClientEndFDs},
	}
	if kinds == nil {
		out = slices.DeleteFunc(out, func(f field) bool {
			return f.key == "threads" || f.key == "outside_callbacks_cpu_us_per_op"
		})
	}
	return out, nil
}

// threadRow is one kind of thread's share of a run's CPU (model.ThreadCPU)
// per op.
type threadRow struct {
	Thread         string  `json:"thread"`
	CallbacksPerOp float64 `json:"callbacks_per_op"`
	USPerCallback  float64 `json:"cpu_us_per_callback"`
	USPerOp        float64 `json:"cpu_us_per_op"`
}

// String is the row as run prints it.
func (t threadRow) String() string {
	return fmt.Sprintf("%.2f callbacks/op × %.1f µs = %.1f µs/op", t.CallbacksPerOp, t.USPerCallback, t.USPerOp)
}

// windowThreads wraps cpu, a scenario's CPUTime, which the scenario reads
// as its measurement window opens and as it closes: each read also takes
// the world's CPU by kind of thread (sim.World.ThreadCPU,
// real.World.ThreadCPU). rows then gives each kind that ran a callback in
// the window, per op, and their CPU together. A world that does not
// count them (real without AccountCPU) gives none.
func windowThreads(w model.World, cpu func() time.Duration) (wrapped func() time.Duration, rows func(ops int) ([]threadRow, time.Duration)) {
	tw, _ := w.(interface{ ThreadCPU() []model.ThreadCPU })
	var snaps [][]model.ThreadCPU
	wrapped = func() time.Duration {
		if tw != nil {
			snaps = append(snaps, tw.ThreadCPU())
		}
		return cpu()
	}
	rows = func(ops int) ([]threadRow, time.Duration) {
		if len(snaps) < 2 {
			return nil, 0
		}
		before := map[string]model.ThreadCPU{}
		for _, t := range snaps[0] {
			before[t.Thread] = t
		}
		var out []threadRow
		var total time.Duration
		n := float64(max(ops, 1))
		for _, t := range snaps[len(snaps)-1] {
			cbs, d := t.Callbacks-before[t.Thread].Callbacks, t.CPU-before[t.Thread].CPU
			if cbs <= 0 {
				continue
			}
			total += d
			out = append(out, threadRow{Thread: t.Thread, CallbacksPerOp: float64(cbs) / n, USPerCallback: us(d) / float64(cbs), USPerOp: us(d) / n})
		}
		return out, total
	}
	return wrapped, rows
}
