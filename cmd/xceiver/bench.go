package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

// experiment reproduces a published result: it runs in the chosen worlds
// and returns rows to print next to the published figure.
type experiment struct {
	desc      string
	published string
	// figures are the published numbers, by case and metric, that the
	// plot marks (--plot); experiments without comparable numbers have
	// none.
	figures []figure
	run     func(world string, seed uint64) ([]benchRow, error)
	// explain, if set, is printed under the table: what the model says
	// about the published figure.
	explain string
	// fixedCosts: the sim side runs with the hand-set costs, which no
	// profile or --cpu-scale changes.
	fixedCosts bool
}

type benchRow struct {
	World  string  `json:"world"`
	Case   string  `json:"case"`
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

func experiments() map[string]experiment {
	return map[string]experiment{
		"hdfs-941": {
			desc:      "TestParallelRead: a 256 KiB file on 2 datanodes, 4 and 16 readers and 2 files x 4, 1024 reads each (90% pread, 10% short stream reads), NODELAY off vs on",
			published: "HDFS-941: 12 MB/s without TCP_NODELAY vs 274 MB/s with it (≈20×)",
			figures: []figure{
				{"nodelay=false", "throughput", 12}, {"nodelay=true", "throughput", 274}, {"on/off", "throughput ratio", 274.0 / 12},
			},
			run: benchHDFS941,
		},
		"hdfs-918": {
			desc:      "128 clients doing 64 KiB random reads, reactor vs thread per connection (real: and vs plain Go)",
			published: "HDFS-918: 1150 fds thread-per-request vs 530 multiplexed; random read 3.42 ms → 2.83 ms",
			figures: []figure{
				{"threaded", "server peak fds", 1150}, {"reactor", "server peak fds", 530},
				{"threaded", "p50", 3.42}, {"reactor", "p50", 2.83},
			},
			run: benchHDFS918,
		},
		"hadoop-6713": {
			desc:      "namenode rpc (Hadoop 0.20's reader, edit log synced per change): readers 1,2,4,8 × mutex/rwlock namespace lock, read-only and 8:1 loads, 8-core namenode; sim runs it with barging and with fair locks, wake-ups on, and adds the 4 KB datanode reads at the sweep's ends; real gives medians of 5 paired rounds",
			published: "HADOOP-6713: namenode CPU 175% with one reader thread → 750% read-only and 550% at 8:1 with several readers and a read-write lock",
			run:       benchHADOOP6713,
		},
		"hdfs-347": {
			desc:      "1 GiB sequential read by a local client over TCP, domain-socket data traffic and short-circuit",
			published: "HDFS-347: TCP ≈ 6.7 s, domain-socket data traffic ≈ 7.9 s for 1 GB (short-circuit fastest)",
			figures:   []figure{{"tcp", "time for 1 GiB", 6.7}, {"uds", "time for 1 GiB", 7.9}},
			run:       benchHDFS347,
			explain:   explainHDFS347,
		},
		"hdfs-15202": {
			desc:      "100,000 reads of 64 KiB by 64 reader threads through the short-circuit cache, 1 to 5 shards",
			published: "HDFS-15202: 78 s with one cache lock → 17 s with 5 shards (4.5×)",
			figures:   []figure{{"shards=1", "time", 78}, {"shards=5", "time", 17}},
			run:       benchHDFS15202,
			explain:   explainHDFS15202,
		},
		"sim-speed": {
			desc:       "simulator speed: tcp-pattern with NODELAY and 32 KiB replies, 20000 ops",
			published:  "target: ≥ 5 M simulated events per second on one core; simulated ops per second ≥ 5× real loopback",
			run:        benchSimSpeed,
			fixedCosts: true,
		},
	}
}

func experimentNames() string {
	return strings.Join(sortedExperimentNames(), ", ")
}

func benchCommand() *command {
	return &command{
		name:    "bench",
		args:    "EXPERIMENT",
		summary: "reproduce a published figure in the simulated and/or the real world, side by side with it",
		about: func() string {
			var b strings.Builder
			b.WriteString("EXPERIMENT is one of (any case):\n")
			exs := experiments()
			for _, n := range sortedExperimentNames() {
				fmt.Fprintf(&b, "  %-10s %s\n  %-10s published: %s\n", n, exs[n].desc, "", exs[n].published)
			}
			return b.String()
		},
		example: []string{
			"xceiver bench hdfs-941 --world both",
		},
		setup: func(c *call) func([]string) int {
			world := c.fs.String("world", "sim", "world: `sim|real|both`")
			asJSON := c.fs.Bool("json", false, "print JSON")
			plot := c.fs.String("plot", "", "also draw the results as a self-contained SVG into `FILE`")
			seed := c.fs.Uint64("seed", 1, "seed `S` of simulated runs")
			c.fs.StringVar(&benchProfile, "profile", "", "CPU profile `FILE` for the simulated runs, from xceiver calibrate (default, or \"embedded\": the embedded one)")
			c.fs.Float64Var(&benchCPUScale, "cpu-scale", 1, "multiply the simulated runs' CPU costs by `F` (0.1 to 10), their waits kept: the profile's machine F times slower (or faster, below 1)")
			return func(rest []string) int {
				if err := checkCPUScale(c, benchCPUScale, *world); err != nil {
					return report(c.stderr, c.usagef("%v", err))
				}
				return benchMain(c, rest, *world, *asJSON, *seed, *plot)
			}
		},
	}
}

func sortedExperimentNames() []string {
	var names []string
	for n := range experiments() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// benchProfile and benchCPUScale are bench's --profile and --cpu-scale,
// for the simulated runs: benchOptions and benchCPU carry them to every
// experiment.
var (
	benchProfile  string
	benchCPUScale = 1.0
)

// benchOptions are a bench run's options in world: the sim side gets
// bench's profile and CPU scale.
func benchOptions(world string, seed uint64) runOptions {
	return runOptions{world: world, seed: seed, profile: benchProfile, cpuScale: benchCPUScale}
}

// benchCPU is the sim's CPU costs for the experiments that build their
// worlds themselves (runSCRead): bench's profile, scaled.
func benchCPU() (sim.CPUConfig, error) { return simCPU(benchOptions("sim", 0), false) }

func benchMain(c *call, rest []string, world string, asJSON bool, seed uint64, plot string) int {
	stdout, stderr := c.stdout, c.stderr
	if len(rest) != 1 {
		return report(stderr, c.usagef("want one EXPERIMENT (%s)", experimentNames()))
	}
	name, ok := matchName(rest[0], sortedExperimentNames())
	if !ok {
		return report(stderr, c.usagef("unknown experiment %q (want %s)", rest[0], experimentNames()))
	}
	rest[0] = name
	ex := experiments()[name]
	var worlds []string
	switch world {
	case "sim", "real":
		worlds = []string{world}
	case "both":
		worlds = []string{"sim", "real"}
	default:
		return report(stderr, c.usagef("%s %q: want sim, real or both", c.typed("world"), world))
	}
	switch {
	case ex.fixedCosts && benchCPUScale != 1:
		return report(stderr, c.usagef("%s: %s runs the simulator with its hand-set costs, which the factor does not scale", c.typed("cpu-scale"), name))
	case ex.fixedCosts && benchProfile != "":
		return report(stderr, c.usagef("--profile: %s runs the simulator with its hand-set costs, not a profile's", name))
	case world == "real" && benchProfile != "":
		return report(stderr, c.usagef("--profile: the real world runs at the machine's own costs; the profile is the simulated world's"))
	}
	if _, err := loadProfile(benchProfile); err != nil {
		return report(stderr, c.usagef("%v", err))
	}
	if plot != "" {
		if err := checkOutFile(plot); err != nil {
			return report(stderr, c.usagef("%s: %v", c.typed("plot"), err))
		}
		if sameFile(plot, profilePath(benchProfile)) {
			return report(stderr, c.usagef("%s %s is the --profile file: the plot would overwrite it", c.typed("plot"), plot))
		}
	}
	if dryRun {
		return exitOK
	}
	var rows []benchRow
	var steal *float64 // what the host withheld from the real runs
	for _, w := range worlds {
		fmt.Fprintf(stderr, "bench %s: %s in %s…\n", rest[0], ex.desc, w)
		var r []benchRow
		run := func() (err error) {
			r, err = ex.run(w, seed)
			return err
		}
		var err error
		if w == "real" {
			steal, err = hostStealDuring(run)
		} else {
			err = run()
		}
		if err != nil {
			return report(stderr, fmt.Errorf("bench %s (%s): %w", rest[0], w, err))
		}
		rows = append(rows, r...)
	}
	printBench(stdout, rest[0], ex, rows, steal, asJSON)
	// After the results: a plot that cannot be written (a full disk)
	// must not take minutes of measurements with it.
	if plot != "" {
		if err := writePlotFile(plot, name, ex, rows); err != nil {
			return report(stderr, fmt.Errorf("bench: --plot: %w (the results are printed above)", err))
		}
	}
	return exitOK
}

// printBench prints an experiment's rows, as JSON or as a table with the
// published figure and the explanation.
func printBench(stdout io.Writer, name string, ex experiment, rows []benchRow, steal *float64, asJSON bool) {
	if asJSON {
		var scale *float64 // the sim's, when not the profile's own
		if benchCPUScale != 1 {
			scale = &benchCPUScale
		}
		b, _ := json.Marshal(struct {
			Experiment string     `json:"experiment"`
			Published  string     `json:"published"`
			CPUScale   *float64   `json:"cpu_scale,omitempty"`
			Rows       []benchRow `json:"rows"`
			// Absent without real runs, or where /proc/stat did not say.
			HostStealShare *float64 `json:"host_steal_share,omitempty"`
		}{name, ex.published, scale, rows, steal})
		fmt.Fprintln(stdout, string(b))
		return
	}
	fmt.Fprintf(stdout, "%s: %s\npublished: %s\n", name, ex.desc, ex.published)
	if benchCPUScale != 1 {
		fmt.Fprintf(stdout, "sim: CPU costs the profile's × %v (--cpu-scale)\n", benchCPUScale)
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORLD\tCASE\tMETRIC\tVALUE\tUNIT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\n", r.World, r.Case, r.Metric, r.Value, r.Unit)
	}
	tw.Flush()
	if steal != nil {
		fmt.Fprintf(stdout, "real: the host withheld %.0f%% of the CPU time this machine wanted while the real runs ran (steal, /proc/stat)\n", 100**steal)
	}
	if ex.explain != "" {
		fmt.Fprintf(stdout, "\n%s\n", ex.explain)
	}
}

// hostStealDuring runs run and returns the share of the CPU time the
// machine wanted that the host withheld meanwhile, nil where /proc/stat
// did not say: a real bench's figures are the machine's only as far as
// the host let it run.
func hostStealDuring(run func() error) (*float64, error) {
	hw := watchHost()
	if err := run(); err != nil {
		return nil, err
	}
	if s, ok := hw.stealShare(); ok {
		return &s, nil
	}
	return nil, nil
}

// benchRead runs a read scenario for bench. Bench measures the whole
// process's CPU (processCPU), so real runs skip charging every callback
// its thread's CPU: the model's loops paid two system calls and a thread
// lock per callback for it, and the reference Go servers none.
func benchRead(world string, seed uint64, s model.ReadScenario) (result, error) {
	opt := benchOptions(world, seed)
	opt.wholeProcessCPU = true
	return runScenario("read", readRunner{s}, opt)
}

// benchHDFS941 runs TestParallelRead, the benchmark HDFS-941 reported:
// one 256 KiB file on two datanodes, 4 and 16 reader threads, and two
// files with 4 readers each; 1024 reads per thread, 90% positional reads
// of random length and offset, 10% short stream reads that leave the
// connection unusable; NODELAY off and on.
func benchHDFS941(world string, seed uint64) ([]benchRow, error) {
	var rows []benchRow
	for _, c := range []struct {
		name           string
		files, readers int
	}{{"", 1, 4}, {"readers=16 ", 1, 16}, {"2 files x 4 ", 2, 4}} {
		var tput [2]float64
		for i, nd := range []bool{false, true} {
			s := model.DefaultParallelRead()
			s.Files, s.Readers, s.NoDelay = c.files, c.readers, nd
			res, err := runScenario("parallel-read", parallelReadRunner{s}, benchOptions(world, seed))
			if err != nil {
				return nil, err
			}
			tput[i] = num(res, "throughput_mbps")
			name := fmt.Sprintf("%snodelay=%v", c.name, nd)
			rows = append(rows,
				benchRow{world, name, "p50", num(res, "p50_us") / 1e3, "ms"},
				benchRow{world, name, "throughput", tput[i], "MB/s"})
		}
		rows = append(rows, benchRow{world, c.name + "on/off", "throughput ratio", tput[1] / tput[0], "×"})
	}
	return rows, nil
}

type parallelReadRunner struct{ s model.ParallelRead }

func (r parallelReadRunner) run(w model.World) (result, error) {
	res, err := model.RunParallelRead(w, r.s, time.Hour)
	if err != nil {
		return nil, err
	}
	if res.Errors > 0 || res.Mismatches > 0 {
		return nil, fmt.Errorf("parallel read: %d errors, %d mismatches (first: %s)", res.Errors, res.Mismatches, res.FirstError)
	}
	st := res.Latencies.Summarize()
	return result{
		{"files", r.s.Files}, {"readers", r.s.Readers}, {"iterations", r.s.Iterations}, {"nodelay", r.s.NoDelay},
		{"reads", res.Reads}, {"stream_reads", res.Streams}, {"bytes", res.Bytes},
		{"p50_us", us(st.P50)}, {"p99_us", us(st.P99)}, {"stall_share", res.Latencies.StallShare()},
		{"elapsed_ms", float64(res.Elapsed.Microseconds()) / 1e3},
		{"throughput_mbps", res.MBps()},
	}, nil
}

// benchHDFS918 runs the read servers side by side. In the real world
// that includes real.GoServer, plain Go (a goroutine per net.Conn, ReadAt
// from shared files) without and with CRC32C work the datanode does not
// do (it sends stored checksums unchecked: go-server is the like for
// like, go-server-crc shows what checking would cost), which the reactor
// is measured against: its throughput and CPU per MB (the whole process,
// the same clients every time) as ratios to the reference's.
//
// A single real run of each server moved with the load between them
// (reactor against go-server: 0.53× to 1.74× across invocations), so in
// real the servers take turns, hdfs918Rounds rounds of one run each (A B C
// … B C A …); each round gives a ratio from runs seconds apart, and the
// rows are the medians over the rounds, with the ratios' lowest and
// highest beside them. The sim is deterministic: one round.
func benchHDFS918(world string, seed uint64) ([]benchRow, error) {
	variants := real.ReadServerVariants()
	rounds := 1
	if world == "sim" {
		variants = variants[:4] // the reference servers are real code only
	} else {
		rounds = hdfs918Rounds
	}
	// figures[name][metric] holds one value per round.
	figures := map[string]map[string][]float64{}
	for r := range rounds {
		// Each round starts one server later, so that over the rounds
		// every server runs in every position (right after the threaded
		// server's 129 threads, say) and no ratio carries an order.
		for k := range variants {
			v := variants[(r+k)%len(variants)]
			s := model.DefaultReadScenario()
			s.Clients, s.Ops, s.ReadSize, s.StartTogether = 128, 20, 64<<10, true
			s.Server.Keepalive, s.Server.PoolIdle, s.Client.CacheExpiry = 500*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
			v.Apply(&s)
			cpu0 := processCPU()
			res, err := benchRead(world, seed, s)
			if err != nil {
				return nil, err
			}
			cpu := processCPU() - cpu0
			f := figures[v.Name]
			if f == nil {
				f = map[string][]float64{}
				figures[v.Name] = f
			}
			f["fds"] = append(f["fds"], num(res, "server_peak_fds"))
			f["threads"] = append(f["threads"], num(res, "server_peak_threads"))
			f["p50"] = append(f["p50"], num(res, "p50_us")/1e3)
			f["tput"] = append(f["tput"], num(res, "throughput_mbps"))
			if world == "real" {
				mb := num(res, "bytes_verified") / 1e6
				if mb <= 0 {
					return nil, fmt.Errorf("%s: no bytes verified", v.Name)
				}
				f["cpuMB"] = append(f["cpuMB"], cpu.Seconds()*1e3/mb)
			}
		}
	}
	var rows []benchRow
	for _, v := range variants {
		c, f := v.Name, figures[v.Name]
		rows = append(rows, benchRow{world, c, "server peak fds", median(f["fds"]), "fds"})
		if v.Name != "go-server" && v.Name != "go-server-crc" {
			rows = append(rows, benchRow{world, c, "server peak threads", median(f["threads"]), "threads"})
		}
		rows = append(rows,
			benchRow{world, c, "p50", median(f["p50"]), "ms"},
			benchRow{world, c, "throughput", median(f["tput"]), "MB/s"})
		if world == "real" {
			rows = append(rows, benchRow{world, c, "process CPU per MB", median(f["cpuMB"]), "ms/MB"})
		}
	}
	if world != "real" {
		return rows, nil
	}
	rows = append(rows, benchRow{world, "all", "rounds", float64(rounds), "rounds"})
	// ratio appends the median, lowest and highest over the rounds of
	// a's metric over b's in the same round.
	ratio := func(a, b, metric, label string) {
		med, lo, hi, ok := pairedRatios(figures[a][metric], figures[b][metric])
		if !ok {
			return
		}
		rows = append(rows,
			benchRow{world, a, label + " (median)", med, "×"},
			benchRow{world, a, label + " (lowest)", lo, "×"},
			benchRow{world, a, label + " (highest)", hi, "×"})
	}
	for _, c := range []string{"reactor", "reactor-inline-io", "reactor-copy"} {
		for _, ref := range []string{"go-server", "go-server-crc"} {
			ratio(c, ref, "tput", "throughput vs "+ref)
			ratio(c, ref, "cpuMB", "CPU per MB vs "+ref)
		}
		ratio(c, "threaded", "fds", "server peak fds vs threaded")
	}
	return rows, nil
}

// pairedRatios divides a[i] by b[i], round by round, and returns the
// median (of an even count the upper middle one, a ratio one round
// measured, unlike median's mean), lowest and highest of the ratios
// (rounds where b is 0 left out); ok is false when no round gave one.
func pairedRatios(a, b []float64) (med, lo, hi float64, ok bool) {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	if len(r) == 0 {
		return 0, 0, 0, false
	}
	slices.Sort(r)
	return r[len(r)/2], r[0], r[len(r)-1], true
}

// hdfs918Rounds is how many times each server runs in real: one round
// per server, so each runs once in each position; six rounds took about
// 60 s here.
const hdfs918Rounds = 6

// processCPU is the CPU this process has used, every thread, user and
// system: the scheduler's own count (CLOCK_PROCESS_CPUTIME_ID), exact to
// the nanosecond. getrusage's user and system times are the same total
// split by tick samples, and can lag it by a tick or more over a short
// probe: calibrate's loop probe, less a spin timed on its thread's own
// clock, once came out 48 µs a hop below zero.
func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err == nil {
		return time.Duration(ts.Nano())
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// simSpeedFor is how long bench sim-speed keeps running the simulated
// pattern once it has warmed up, and simSpeedMinRuns the fewest timed runs.
const (
	simSpeedFor     = time.Second
	simSpeedMinRuns = 5
)

// benchSimSpeed measures the simulator on BenchmarkSimEvents' pattern
// (64-byte requests, 32 KiB replies, NODELAY, 20,000 ops; one seed where
// the benchmark takes a new one each run), but in the command, which is
// built with its profile (default.pgo). One run of
// the pattern takes about 8 ms, and a process's first run pays for
// growing the heap and faulting its pages in: timed alone it read half
// the speed of every later run (2.7 M events per second against 5.3 M on
// the AMD VM, 4 December). So a first run warms up untimed, and the rates
// are over the runs of the next second.
func benchSimSpeed(world string, seed uint64) ([]benchRow, error) {
	cfg := model.TCPPattern{Writes: 1, Msg: 64, Reply: 32 << 10, Ops: 20000, NoDelay: true}
	if world == "real" {
		cfg.Ops = 5000
		res, err := runScenario("tcp-pattern", tcpPatternRunner{cfg}, runOptions{world: "real", seed: seed})
		if err != nil {
			return nil, err
		}
		wall := num(res, "wall_ms") / 1e3
		return []benchRow{{world, "tcp-pattern", "ops per wall second", float64(cfg.Ops) / wall, "ops/s"}}, nil
	}
	once := func() (uint64, error) {
		w := sim.New(sim.DefaultConfig(seed))
		if _, err := model.RunTCPPattern(w, cfg, time.Hour); err != nil {
			return 0, err
		}
		return w.Events(), nil
	}
	if _, err := once(); err != nil {
		return nil, err
	}
	var events, runs uint64
	start, cpu0 := time.Now(), processCPU()
	for runs < simSpeedMinRuns || time.Since(start) < simSpeedFor {
		n, err := once()
		if err != nil {
			return nil, err
		}
		events += n
		runs++
	}
	wall, cpu := time.Since(start).Seconds(), (processCPU() - cpu0).Seconds()
	rows := []benchRow{
		{world, "tcp-pattern", "events per wall second", float64(events) / wall, "events/s"},
		{world, "tcp-pattern", "ops per wall second", float64(runs*uint64(cfg.Ops)) / wall, "ops/s"},
	}
	if cpu > 0 {
		rows = append(rows, benchRow{world, "tcp-pattern", "events per CPU second", float64(events) / cpu, "events/s"})
	}
	return rows, nil
}

func writePlotFile(path, name string, ex experiment, rows []benchRow) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writePlot(f, name, ex, rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
