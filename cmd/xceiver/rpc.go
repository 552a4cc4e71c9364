package main

import (
	"flag"
	"fmt"
	"slices"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/sim"
)

func rpcFlags(fs *flag.FlagSet) func() (runner, error) {
	s := namespace.DefaultScenario()
	lock := fs.String("lock", string(s.Lock), "namespace lock: mutex or rwlock")
	mix := fs.String("mix", "1:0", "reads:writes (8:1 is HADOOP-6713's mixed load)")
	var counts countFlags
	counts.intVar(fs, &s.RPC.Readers, "readers", "rpc reader loops (1: the acceptor reads, before HADOOP-6713)")
	counts.intVar(fs, &s.RPC.Handlers, "handlers", "rpc handler loops")
	fs.IntVar(&s.RPC.QueueSize, "queue", 0, "call queue bound (0: 100 per handler)")
	fs.BoolVar(&s.RPC.HadoopReader, "hadoop-reader", false, "readers read and decode as Hadoop 0.20's did: one call per readable event, the length then the body, parameters decoded before queueing")
	fs.IntVar(&s.Clients, "clients", s.Clients, "client processes, one rpc connection each")
	fs.IntVar(&s.Threads, "threads", s.Threads, "ops each client keeps going at once")
	fs.IntVar(&s.Depth, "depth", s.Depth, "directory levels")
	fs.IntVar(&s.Fanout, "fanout", s.Fanout, "directories per directory")
	fs.IntVar(&s.Files, "files", s.Files, "files per leaf directory")
	fs.IntVar(&s.FileSize, "file-size", s.FileSize, "bytes per file")
	fs.BoolVar(&s.ReadData, "read-data", s.ReadData, "read (and write) file data on the datanode, end to end")
	fs.BoolVar(&s.EditLog, "edit-log", s.EditLog, "log every namespace change and sync the log (group commit) before answering")
	fs.IntVar(&s.NamenodeCores, "namenode-cores", s.NamenodeCores, "cores of the namenode host (sim)")
	fs.DurationVar(&s.Warmup, "warmup", s.Warmup, "time before measuring")
	fs.DurationVar(&s.Duration, "duration", s.Duration, "time measured")
	locks := fs.String("locks", "barging", "sim: modelled locks barging (non-fair: Java's and Go's default) or fair (handed over in arrival order)")
	wakeups := fs.Bool("wakeups", true, "sim: threads woken by others pay the profile's wake-up latency (false: none, as this command ran before the barging locks)")
	return func() (runner, error) {
		var err error
		if *locks != "barging" && *locks != "fair" {
			return nil, usagef("run rpc: --locks %q: want barging or fair", *locks)
		}
		if s.Lock, err = namespace.ParseLockKind(*lock); err != nil {
			return nil, usagef("run rpc: --lock: %v", err)
		}
		if s.Reads, s.Writes, err = namespace.ParseMix(*mix); err != nil {
			return nil, usagef("run rpc: --mix: %v", err)
		}
		if err := counts.check("run rpc"); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			name string
			n    int
		}{{"readers", s.RPC.Readers}, {"handlers", s.RPC.Handlers}} {
			// The model's range starts at 0, its default; 0 is refused
			// here (counts.check), so this range starts at 1.
			if f.n > namespace.MaxLoops {
				return nil, usagef("run rpc: --%s %d outside [1, %d]", f.name, f.n, namespace.MaxLoops)
			}
		}
		if err := s.Validate(); err != nil {
			return nil, usagef("run rpc: %v", err)
		}
		return rpcRunner{s: s, barging: *locks == "barging", wakeups: *wakeups}, nil
	}
}

type rpcRunner struct {
	s namespace.Scenario
	// barging makes the sim's locks non-fair; wakeups keeps the
	// profile's wake-up latency.
	barging, wakeups bool
}

// simOnly names the flags only simConfig and the sim's processes read:
// the real world's processes share the machine's cores, and its locks
// and wake-ups are Go's.
func (rpcRunner) simOnly() ([]string, string) {
	return []string{"namenode-cores", "locks", "wakeups"}, "the real world runs on this machine's cores, with Go's locks and wake-ups"
}

// simConfig gives every process its own cores: the namenode is a host of
// its own, as in HADOOP-6713's measurement, not sharing cores with the
// clients that load it. Costs come from the profile (--profile, else the
// embedded one), which times the rpc and namespace code itself, with its
// wake-up latency (unless --wakeups=false). The locks barge by default,
// as Java's (synchronized, and ReentrantReadWriteLock's default) do: a
// fair lock stays idle while its woken next holder is scheduled, so with
// wake-ups every contended hand-off costs a wake-up of lock time.
//
// Nor does a handler going idle hold its core (SyscallHold), nor wait to
// be found by Go's poller (Poller): that is Go's runtime under the real
// world's loops, where HADOOP-6713's servers are Java threads the kernel
// schedules.
func (r rpcRunner) simConfig(c *sim.Config) {
	c.HostCores = 0
	c.BargingLocks = r.barging
	if !r.wakeups {
		c.CPU.Wakeup, c.CPU.WakeupSpread = 0, 0
	}
	c.CPU.SyscallHold, c.CPU.SyscallHoldSpread = 0, 0
	c.CPU.Poller = false
}

func (r rpcRunner) run(w model.World) (result, error) {
	s := r.s
	var cpu0 time.Duration
	if w.Kind() == "sim" {
		s.CPUTime = func(p model.Process) time.Duration { return p.(*sim.Process).CPUTime() }
	} else {
		cpu0 = processCPU()
	}
	res, err := namespace.RunScenario(w, s)
	if err != nil {
		return nil, err
	}
	if res.Calls == 0 {
		// A rate of 0 would read as a measurement of a namenode that
		// answers nothing; the window saw none of its work.
		return nil, fmt.Errorf("no call completed in the %v window after %v of warm-up: lengthen --duration or --warmup", s.Duration, s.Warmup)
	}
	st := res.Latencies.Summarize()
	secs := res.Window.Seconds()
	var cpu, dnCPU any // percent of one core, over the window
	var cpuScope string
	if w.Kind() == "sim" {
		cpu = 100 * res.NamenodeCPU.Seconds() / secs
		dnCPU = 100 * res.DatanodeCPU.Seconds() / secs
		cpuScope = "namenode"
	} else {
		// Real: one OS process holds every simulated process, so this is
		// all of them (clients too), over the whole run.
		used := processCPU() - cpu0
		cpu = 100 * used.Seconds() / (s.Warmup + s.Duration).Seconds()
		cpuScope = "whole process (all clients and servers)"
	}
	return result{
		{"calls", res.Calls},
		{"calls_per_s", float64(res.Calls) / secs},
		{"ops_per_s", float64(res.Reads+res.Writes) / secs},
		{"reads", res.Reads}, {"writes", res.Writes},
		{"readers", s.RPC.Readers}, {"handlers", s.RPC.Handlers}, {"lock", string(s.Lock)}, {"hadoop_reader", s.RPC.HadoopReader},
		{"locks", r.lockMode(w.Kind())}, {"wakeups", w.Kind() == "sim" && r.wakeups},
		{"clients", s.Clients}, {"threads", s.Threads}, {"mix", fmt.Sprintf("%d:%d", s.Reads, s.Writes)},
		{"p50_us", us(st.P50)},
		{"p99_us", us(st.P99)},
		{"cpu_percent", cpu},
		{"cpu_scope", cpuScope},
		{"cpu_per_core_percent", cpuPerCore(cpu, s.NamenodeCores, w.Kind())},
		{"datanode_cpu_percent", dnCPU},
		{"server_peak_fds", res.PeakFDs},
		{"peak_call_queue", res.Server.PeakQueue},
		{"reader_blocks", res.Server.ReaderBlocks},
		{"edit_log_syncs", res.EditLog.Syncs},
		{"edits_per_sync", editsPerSync(res.EditLog)},
		{"errors", res.Errors},
		{"first_error", res.FirstError},
	}, nil
}

func (r rpcRunner) lockMode(world string) string {
	switch {
	case world != "sim":
		return "sync.Mutex/RWMutex"
	case r.barging:
		return "barging"
	}
	return "fair"
}

func editsPerSync(st namespace.EditLogStats) any {
	if st.Syncs == 0 {
		return nil
	}
	return float64(st.Edits) / float64(st.Syncs)
}

func cpuPerCore(cpu any, cores int, world string) any {
	if world != "sim" {
		return nil
	}
	return cpu.(float64) / float64(cores)
}

// benchHADOOP6713 sweeps readers × lock kind on the read-only and the 8:1
// loads, then runs the sweep's ends with the 4 KB file reads and writes of
// the seed's workload. CPU is the namenode's, from the sim's CPU model. In
// real the figures are calls/s as ratios to readers=1 with the mutex, from
// paired runs, and the median of 5 rounds is reported with their range,
// since a shared machine's load drifts from run to run.
func benchHADOOP6713(world string, seed uint64) ([]benchRow, error) {
	type benchCase struct {
		mix      string
		lock     namespace.LockKind
		readers  int
		readData bool
		fair     bool // sim: fair locks, not barging ones
	}
	// In sim, the sweep runs with barging locks (Java's default) and again
	// with fair ones, wake-up latency on: what the lock model's hand-off
	// does to the figures.
	fairs := []bool{false}
	if world == "sim" {
		fairs = []bool{false, true}
	}
	var cases []benchCase
	for _, fair := range fairs {
		for _, mix := range []string{"1:0", "8:1"} {
			for _, lock := range []namespace.LockKind{namespace.Mutex, namespace.RWLock} {
				for _, readers := range []int{1, 2, 4, 8} {
					cases = append(cases, benchCase{mix, lock, readers, false, fair})
				}
			}
		}
	}
	if world == "sim" {
		for _, mix := range []string{"1:0", "8:1"} {
			cases = append(cases, benchCase{mix, namespace.Mutex, 1, true, false}, benchCase{mix, namespace.RWLock, 8, true, false})
		}
	}
	name := func(c benchCase) string {
		n := fmt.Sprintf("%s readers=%d %s", mixName(c.mix), c.readers, c.lock)
		if world == "sim" {
			if c.fair {
				n += " fair"
			} else {
				n += " barging"
			}
		}
		if c.readData {
			n += " +4KB reads"
		}
		return n
	}
	run := func(c benchCase) (result, error) {
		s := namespace.DefaultScenario()
		var err error
		if s.Reads, s.Writes, err = namespace.ParseMix(c.mix); err != nil {
			return nil, err
		}
		s.Lock = c.lock
		s.RPC.Readers = c.readers
		s.RPC.Handlers = 32
		// The server HADOOP-6713 changed reads as Hadoop's did.
		s.RPC.HadoopReader = true
		s.Clients, s.Threads = 64, 8
		// The sweep is namenode ops only (ls, then getBlockLocations for
		// the file), as HADOOP-6713 measured the namenode; the +4KB rows
		// also read (and write) each file's 4 KB on the datanode.
		s.ReadData = c.readData
		s.Warmup, s.Duration = 20*time.Millisecond, 50*time.Millisecond
		if c.readData {
			// The datanode's 64 clients take about 100 ms to settle
			// (their first reads queue behind each other's connection
			// set-up on a datanode loop that pays per callback for
			// every connection it watches): after 20 ms the window
			// measured the start-up, 1,720 ops/s where the steady
			// state reads 10,100.
			s.Warmup = 200 * time.Millisecond
		}
		if f := benchCPUScale; f > 1 {
			// A slower machine starts up slower: at --cpu-scale 6 no
			// call completed in the 50 ms window.
			s.Warmup, s.Duration = time.Duration(float64(s.Warmup)*f), time.Duration(float64(s.Duration)*f)
		}
		if world == "real" {
			s.Clients, s.Threads = 16, 4
			s.Warmup, s.Duration = 200*time.Millisecond, 800*time.Millisecond
		}
		res, err := runScenario("rpc", rpcRunner{s: s, barging: !c.fair, wakeups: true}, benchOptions(world, seed))
		if err != nil {
			return nil, err
		}
		if e := num(res, "errors"); e > 0 {
			return nil, fmt.Errorf("%s: %v errors, first: %v", name(c), e, res.get("first_error"))
		}
		return res, nil
	}
	var rows []benchRow
	if world == "sim" {
		for _, c := range cases {
			res, err := run(c)
			if err != nil {
				return nil, err
			}
			rows = append(rows,
				benchRow{world, name(c), "namenode cpu", num(res, "cpu_percent"), "%"},
				benchRow{world, name(c), "rpc calls", num(res, "calls_per_s"), "calls/s"})
			if c.readData {
				rows = append(rows,
					benchRow{world, name(c), "client ops", num(res, "ops_per_s"), "ops/s"},
					benchRow{world, name(c), "datanode cpu", num(res, "datanode_cpu_percent"), "%"})
			}
		}
		return rows, nil
	}
	// A round runs each mix's base (readers=1, mutex) before and after
	// its other cases, and each case's ratio is to the mean of the two, so
	// the load a round drifts through weighs on both sides; the base's
	// second run against its first (A/A) shows how far apart two
	// identical runs fall. A run that completed no call in its window
	// (the machine too loaded to start it) is left out and counted.
	const rounds = 5
	calls := make([][]float64, len(cases))
	ratios := make([][]float64, len(cases))
	missed := make([]int, len(cases))
	for range rounds {
		for lo := 0; lo < len(cases); {
			hi := lo + 1
			for hi < len(cases) && cases[hi].mix == cases[lo].mix {
				hi++
			}
			first, err := run(cases[lo])
			if err != nil {
				return nil, err
			}
			got := make([]float64, hi-lo)
			for i := lo + 1; i < hi; i++ {
				res, err := run(cases[i])
				if err != nil {
					return nil, err
				}
				got[i-lo] = num(res, "calls_per_s")
			}
			second, err := run(cases[lo])
			if err != nil {
				return nil, err
			}
			a, b := num(first, "calls_per_s"), num(second, "calls_per_s")
			got[0] = b
			for i := lo; i < hi; i++ {
				v, base := got[i-lo], (a+b)/2
				if i == lo {
					base = a
				}
				if v == 0 || base == 0 || a == 0 || b == 0 {
					missed[i]++
					continue
				}
				calls[i] = append(calls[i], v)
				ratios[i] = append(ratios[i], v/base)
			}
			lo = hi
		}
	}
	for i, c := range cases {
		n := name(c)
		if i == 0 || cases[i-1].mix != c.mix {
			n += " (A/A: 2nd run vs 1st)"
		}
		if len(ratios[i]) == 0 {
			rows = append(rows, benchRow{world, n, "rounds left out (no calls)", float64(missed[i]), "rounds"})
			continue
		}
		rows = append(rows,
			benchRow{world, n, "rpc calls (median)", median(calls[i]), "calls/s"},
			benchRow{world, n, "vs readers=1 mutex (median)", median(ratios[i]), "×"},
			benchRow{world, n, "vs readers=1 mutex (lowest)", slices.Min(ratios[i]), "×"},
			benchRow{world, n, "vs readers=1 mutex (highest)", slices.Max(ratios[i]), "×"})
		if missed[i] > 0 {
			rows = append(rows, benchRow{world, n, "rounds left out (no calls)", float64(missed[i]), "rounds"})
		}
	}
	return rows, nil
}

// median is the median of v (left as it is): the mean of the middle two
// for an even count. Every median the command reports (validate's
// repeats, calibrate's rounds and probes, bench's rounds and rpc's
// ratios) is this one, but for the paired ratios of bench hdfs-918's
// real table (pairedRatios), which report the upper middle one: a ratio
// some round measured.
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return m
}

func mixName(m string) string {
	if m == "1:0" {
		return "read-only"
	}
	return m
}
