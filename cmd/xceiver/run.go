package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// scenario is one runnable experiment: its flags, and how to run it in a
// world and describe the result.
type scenario struct {
	name  string
	desc  string // one line for help
	flags func(fs *flag.FlagSet) func() (runner, error)
}

// runner runs a configured scenario in a world and returns the JSON fields
// of its result (besides the common ones).
type runner interface {
	run(w model.World) (result, error)
}

// result is an ordered list of fields, so JSON and text output keep the
// same order every time.
type result []field

type field struct {
	key string
	val any
}

func (r result) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range r {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.val)
		if err != nil {
			return nil, err
		}
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

func (r result) get(key string) any {
	for _, f := range r {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

// scenarioList is every scenario `run` knows, in the order help lists
// them. A new scenario adds one entry: its flags appear in `run -h` and
// the README test asks for them in README's run section.
func scenarioList() []scenario {
	return []scenario{
		{name: "tcp-pattern", desc: "HDFS-941's micro-benchmark: K small writes per op, then a reply", flags: tcpPatternFlags},
		{name: "read", desc: "the datanode workload: clients reading blocks over keep-alive connections", flags: readFlags},
		{name: "rpc", desc: "HADOOP-6713's namenode load: clients list, descend and read files, or create them, over rpc", flags: rpcFlags},
		{name: "sc-read", desc: "local reads over TCP, domain-socket data traffic or short-circuit through the sharded cache", flags: scReadFlags},
		{name: "pairs", desc: "the CPU model alone: loop pairs on each end of a connection trading requests for replies", flags: pairsFlags},
	}
}

func scenarioNames() []string {
	var names []string
	for _, sc := range scenarioList() {
		names = append(names, sc.name)
	}
	return names
}

func lookupScenario(name string) (scenario, bool) {
	n, ok := matchName(name, scenarioNames())
	if !ok {
		return scenario{}, false
	}
	for _, sc := range scenarioList() {
		if sc.name == n {
			return sc, true
		}
	}
	return scenario{}, false
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// maxPatternWrites bounds the writes of one tcp-pattern run.
const maxPatternWrites = 1_000_000

func tcpPatternFlags(fs *flag.FlagSet) func() (runner, error) {
	cfg := model.TCPPattern{}
	fs.IntVar(&cfg.Writes, "writes", 2, "writes per request")
	fs.IntVar(&cfg.Msg, "msg", 8, "bytes per write")
	fs.IntVar(&cfg.Reply, "reply", 32768, "reply bytes (0: one-way ops, the server answers nothing)")
	fs.IntVar(&cfg.Ops, "ops", 100, "operations")
	fs.BoolVar(&cfg.NoDelay, "nodelay", false, "set TCP_NODELAY on both ends")
	sizes := fs.String("sizes", "", "comma-separated `BYTES` of each write of an op, in order (instead of --writes and --msg)")
	fs.DurationVar(&cfg.Gap, "gap", 0, "with --reply 0, write each message this long after the server has read the one before")
	return func() (runner, error) {
		if *sizes != "" {
			// Each write's bytes: --writes and --msg would be dropped
			// without a word, and the run pass for theirs.
			if set := setFlags(fs, nil, "writes", "msg"); len(set) > 0 {
				return nil, usagef("run tcp-pattern: %s: --sizes gives every write's bytes; use one or the other", strings.Join(set, ", "))
			}
			for _, f := range strings.Split(*sizes, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil {
					return nil, usagef("run tcp-pattern: --sizes %q: %q is not a number of bytes", *sizes, f)
				}
				cfg.Sizes = append(cfg.Sizes, n)
				if len(cfg.Sizes) > maxPatternWrites {
					return nil, usagef("run tcp-pattern: --sizes: more than %d writes", maxPatternWrites)
				}
			}
			cfg.Writes, cfg.Msg = len(cfg.Sizes), 0
		}
		if err := cfg.Validate(); err != nil {
			return nil, usagef("run tcp-pattern: %v", err)
		}
		// A run is over in seconds or refused: a million writes take
		// about ten seconds of simulation with NODELAY on a loaded
		// machine, and --writes 100000000 would run for hours silently.
		// (Ops compared before it is multiplied: --ops 2^34 × --writes
		// 2^30 wrapped to 0 and preallocated 128 GiB of latencies.)
		if cfg.Ops > maxPatternWrites/cfg.Writes {
			if cfg.Ops > math.MaxInt/cfg.Writes {
				return nil, usagef("run tcp-pattern: --writes %d × --ops %d is more than %d writes; at most %d in one run", cfg.Writes, cfg.Ops, maxPatternWrites, maxPatternWrites)
			}
			return nil, usagef("run tcp-pattern: --writes %d × --ops %d is %d writes; at most %d in one run", cfg.Writes, cfg.Ops, cfg.Writes*cfg.Ops, maxPatternWrites)
		}
		return tcpPatternRunner{cfg}, nil
	}
}

type tcpPatternRunner struct{ cfg model.TCPPattern }

func (r tcpPatternRunner) run(w model.World) (result, error) {
	res, err := model.RunTCPPattern(w, r.cfg, time.Hour)
	if err != nil {
		return nil, err
	}
	s := res.Latencies.Summarize()
	var writeP50 []float64 // one-way: each write's p50, by index
	for i := range res.WriteLatencies {
		writeP50 = append(writeP50, us(res.WriteLatencies[i].Summarize().P50))
	}
	return result{
		{"ops", res.Latencies.Len()},
		{"writes", r.cfg.Writes}, {"msg", r.cfg.Msg}, {"sizes", r.cfg.Sizes}, {"reply", r.cfg.Reply}, {"gap_us", us(r.cfg.Gap)}, {"nodelay", r.cfg.NoDelay},
		{"first_op_us", us(s.First)},
		{"p50_us", us(s.P50)},
		{"p99_us", us(s.P99)},
		{"mean_us", us(s.Mean)},
		{"max_us", us(s.Max)},
		{"stall_share", res.Latencies.StallShare()},
		{"write_p50_us", writeP50},
		// The server's receive buffer at the end, as autotuning grew it
		// in either world (ops stall while the window climbs to it).
		{"server_rcvbuf", nilIfZero(res.ServerRcvBuf)},
	}, nil
}

// nilIfZero is n, or null in JSON when it is 0 (not known).
func nilIfZero(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// runOptions are the flags every scenario shares.
type runOptions struct {
	world  string
	seed   uint64
	trace  string
	json   bool
	tmpdir string
	// profile is the CPU profile file for sim runs ("" is the embedded
	// default, measured on the development machine).
	profile string
	// cpuScale multiplies the sim's CPU costs (sim.CPUConfig.Scaled): the
	// profile's machine running that many times slower; 0 or 1 is the
	// profile as measured.
	cpuScale float64
	// wholeProcessCPU: the caller measures the process's CPU itself, so a
	// real read run does not charge each callback its thread's CPU
	// (two clock_gettime system calls and a thread lock per callback,
	// which the reference Go servers, running no loops, never pay).
	wholeProcessCPU bool
	// hostSteal is the share of the CPU time the simulated machine
	// wants that its host withholds (sim.CPUConfig.WithHostSteal); 0:
	// none, the machine alone.
	hostSteal float64
	// hostStealGap is the mean gap between the slices of the host's
	// cores (0: sim.HostStealGap).
	hostStealGap time.Duration
}

func runCommand() *command {
	return &command{
		name:    "run",
		args:    "SCENARIO",
		more:    "[scenario flags]",
		summary: "run one scenario in the simulated or the real world and print its measurements",
		about: func() string {
			var b strings.Builder
			b.WriteString("SCENARIO is one of:\n")
			for _, sc := range scenarioList() {
				fmt.Fprintf(&b, "  %-12s %s\n", sc.name, sc.desc)
			}
			b.WriteString("\nEach scenario has its own flags (below); \"xceiver run SCENARIO -h\" shows one.")
			return b.String()
		},
		example: []string{
			"xceiver run tcp-pattern --writes 2 --msg 8 --reply 32768 --json",
			"xceiver run read --clients 8 --world real",
		},
		setup: runSetup,
	}
}

// runSetup declares the flags every scenario shares and, once the
// scenario is known from the arguments, that scenario's flags.
func runSetup(c *call) func([]string) int {
	fs := c.fs
	var opt runOptions
	fs.StringVar(&opt.world, "world", "sim", "world: `sim|real`")
	fs.Uint64Var(&opt.seed, "seed", 1, "seed `S` of the simulated run")
	fs.StringVar(&opt.trace, "trace", "", "write the event trace to `FILE` (sim)")
	fs.BoolVar(&opt.json, "json", false, "print one JSON object")
	fs.StringVar(&opt.profile, "profile", "", "CPU profile `FILE` for the simulated run, from xceiver calibrate (default, or \"embedded\": the embedded one)")
	fs.StringVar(&opt.tmpdir, "tmpdir", "", "`DIR` for the real world's files and sockets (default: the system's)")
	fs.Float64Var(&opt.cpuScale, "cpu-scale", 1, "multiply the simulated run's CPU costs by `F` (0.1 to 10), its waits kept: the profile's machine F times slower (or faster, below 1)")
	fs.Float64Var(&opt.hostSteal, "host-steal", 0, "simulate a virtual machine whose host withholds the share `S` of the CPU time it wants (0.001 to 0.9; what a real run measures as the host's steal): its cores run in slices between gaps of about --host-steal-gap (default 0: the machine alone)")
	fs.DurationVar(&opt.hostStealGap, "host-steal-gap", sim.HostStealGap, "with --host-steal, the mean `D` of the gaps the host leaves in its cores' time (50µs to 100ms; validate --host-steal measured measures it)")

	name, found := findScenario(c.raw, fs)
	if !found {
		// Help or the synopsis: list every scenario's flags.
		for _, sc := range scenarioList() {
			sfs := newFlagSet(sc.name)
			sc.flags(sfs)
			c.sections = append(c.sections, flagSection{sc.name + " flags", sfs})
		}
		return func([]string) int {
			if name == "" {
				return report(c.stderr, c.usagef("want a SCENARIO (%s)", strings.Join(scenarioNames(), ", ")))
			}
			return report(c.stderr, c.usagef("unknown scenario %q (want %s)", name, strings.Join(scenarioNames(), ", ")))
		}
	}
	sc, _ := lookupScenario(name)
	sfs := newFlagSet(sc.name)
	sc.flags(sfs)
	c.sections = append(c.sections, flagSection{sc.name + " flags", sfs})
	build := sc.flags(fs)
	return func(rest []string) int {
		stdout, stderr := c.stdout, c.stderr
		// rest holds the scenario's name and anything unexpected.
		for _, a := range rest {
			if a != name {
				return report(stderr, usagef("run %s: unexpected argument %q", sc.name, a))
			}
		}
		if len(rest) > 1 {
			return report(stderr, usagef("run %s: unexpected argument %q", sc.name, name))
		}
		if opt.world != "sim" && opt.world != "real" {
			return report(stderr, usagef("run %s: %s %q: want sim or real", sc.name, c.typed("world"), opt.world))
		}
		if err := checkCPUScale(c, opt.cpuScale, opt.world); err != nil {
			return report(stderr, usagef("run %s: %v", sc.name, err))
		}
		if err := checkHostSteal(c, opt.hostSteal, opt.world); err != nil {
			return report(stderr, usagef("run %s: %v", sc.name, err))
		}
		gapSet := isSet(fs, "host-steal-gap")
		switch {
		case gapSet && opt.world == "real":
			return report(stderr, usagef("run %s: %s: the real world's host leaves the gaps it does; the gap is the simulated host's", sc.name, c.typed("host-steal-gap")))
		case gapSet && opt.hostSteal == 0:
			return report(stderr, usagef("run %s: %s: the gaps of a host that withholds nothing; give --host-steal S too", sc.name, c.typed("host-steal-gap")))
		case opt.hostStealGap < sim.MinHostStealGap || opt.hostStealGap > sim.MaxHostStealGap:
			return report(stderr, usagef("run %s: %s %v: want %v to %v", sc.name, c.typed("host-steal-gap"), opt.hostStealGap, sim.MinHostStealGap, sim.MaxHostStealGap))
		}
		if opt.trace != "" {
			if opt.world == "real" {
				return report(stderr, usagef("run %s: %s: traces are recorded in the simulated world only", sc.name, c.typed("trace")))
			}
			if err := checkOutFile(opt.trace); err != nil {
				return report(stderr, usagef("run %s: %s: %v", sc.name, c.typed("trace"), err))
			}
			if sameFile(opt.trace, profilePath(opt.profile)) {
				return report(stderr, usagef("run %s: %s %s is the --profile file: the trace would overwrite it", sc.name, c.typed("trace"), opt.trace))
			}
		}
		switch {
		case opt.profile != "" && opt.world == "real":
			// As --cpu-scale: a file the run would not read is refused,
			// not left unread unseen (a missing one ran without a word).
			return report(stderr, usagef("run %s: --profile: the real world runs at the machine's own costs; the profile is the simulated world's", sc.name))
		case opt.tmpdir != "" && opt.world == "sim":
			return report(stderr, usagef("run %s: --tmpdir: the simulated world keeps its files and sockets in memory; the directory is the real world's", sc.name))
		}
		r, err := build()
		if err != nil {
			return report(stderr, err)
		}
		if so, ok := r.(interface{ simOnly() ([]string, string) }); ok && opt.world == "real" {
			// As --cpu-scale: the real world never reads them, and a run
			// that took them would pass for one made with them.
			names, why := so.simOnly()
			if set := setFlags(fs, c.typed, names...); len(set) > 0 {
				return report(stderr, usagef("run %s: %s: the simulated world's; %s", sc.name, strings.Join(set, ", "), why))
			}
		}
		if dryRun {
			return exitOK
		}
		res, err := runScenario(sc.name, r, opt)
		if err != nil {
			return report(stderr, fmt.Errorf("run %s: %w", sc.name, err))
		}
		printResult(stdout, res, opt.json)
		return exitOK
	}
}

// The range of --cpu-scale (checkCPUScale).
const minCPUScale, maxCPUScale = 0.1, 10

// checkCPUScale refuses a --cpu-scale outside 0.1 to 10, or one given for
// the real world, which runs at the speed it has. A machine ten times
// slower or faster than the profile's is far beyond any calibrate has
// measured; past that the runs stop measuring: at 0.01 a bench ran for
// minutes and a run of pairs hit the event limit, and at 50 or more the
// rpc scenario's start-up outlasted its window and it reported 0 calls.
func checkCPUScale(c *call, f float64, world string) error {
	if !(f >= minCPUScale && f <= maxCPUScale) { // NaN too
		return fmt.Errorf("%s %v: want a factor from %v to %v", c.typed("cpu-scale"), f, minCPUScale, maxCPUScale)
	}
	if world == "real" && f != 1 {
		return fmt.Errorf("%s: the real world runs at the machine's own speed; the factor scales the simulated world's costs", c.typed("cpu-scale"))
	}
	return nil
}

// simHostFields is what a simulated host asked for share and gap gives
// (sim.HostSteal) as JSON values: its share and mean gap in µs, both nil
// for the machine alone. run's results and validate's table both say it.
func simHostFields(share float64, gap time.Duration) (shareV, gapUS any) {
	if got, g, ok := sim.HostSteal(share, gap); ok {
		return got, us(g)
	}
	return nil, nil
}

// checkHostSteal refuses a --host-steal that is not a share from 0 to
// sim.MaxHostSteal, or one given for the real world, whose host withholds
// what it does.
func checkHostSteal(c *call, s float64, world string) error {
	if !(s == 0 || s >= sim.MinHostSteal && s <= sim.MaxHostSteal) {
		return fmt.Errorf("%s %v: want 0, or a share from %v to %v", c.typed("host-steal"), s, sim.MinHostSteal, sim.MaxHostSteal)
	}
	if world == "real" && s != 0 {
		return fmt.Errorf("%s: the real world's host withholds what it does (a real run reports it: host_steal_share); the share is the simulated host's", c.typed("host-steal"))
	}
	return nil
}

// simCPU is the CPU costs of a simulated run with opt: its profile's
// (with the real world's per-callback accounting if account), times its
// CPU scale. Every sim run of run, validate and bench gets its costs
// here.
func simCPU(opt runOptions, account bool) (sim.CPUConfig, error) {
	prof, err := loadProfile(opt.profile)
	if err != nil {
		return sim.CPUConfig{}, err
	}
	cpu := prof.CPU()
	if account {
		cpu.Account = prof.Account()
	}
	return cpu.Scaled(opt.cpuScale).WithHostSteal(opt.hostSteal, opt.hostStealGap), nil
}

// findScenario finds the SCENARIO among args, wherever it stands: the
// first argument that is neither a flag nor a flag's value. found
// reports whether it names a scenario; name is what was typed ("" if
// nothing was).
func findScenario(args []string, common *flag.FlagSet) (name string, found bool) {
	takesValue := func(flagName string) bool {
		sets := []*flag.FlagSet{common}
		for _, sc := range scenarioList() {
			fs := newFlagSet(sc.name)
			sc.flags(fs)
			sets = append(sets, fs)
		}
		for _, fs := range sets {
			if f := fs.Lookup(flagName); f != nil {
				b, ok := f.Value.(interface{ IsBoolFlag() bool })
				return !ok || !b.IsBoolFlag()
			}
		}
		return false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				a = args[i+1]
				_, ok := lookupScenario(a)
				return a, ok
			}
			return "", false
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			n := strings.TrimLeft(a, "-")
			if !strings.Contains(n, "=") && takesValue(n) {
				i++
			}
			continue
		}
		_, ok := lookupScenario(a)
		return a, ok
	}
	return "", false
}

// runScenario runs r in the chosen world and adds the common fields.
func runScenario(name string, r runner, opt runOptions) (result, error) {
	head := result{{"scenario", name}, {"world", opt.world}, {"seed", opt.seed}}
	switch opt.world {
	case "sim":
		cfg := sim.DefaultConfig(opt.seed)
		// Its real run accounts each callback's CPU (runReal), which
		// costs the real world CPU: the sim charges it too.
		_, account := r.(readRunner)
		var err error
		if cfg.CPU, err = simCPU(opt, account && !opt.wholeProcessCPU); err != nil {
			return nil, err
		}
		if c, ok := r.(interface{ simConfig(*sim.Config) }); ok {
			c.simConfig(&cfg)
		}
		w := sim.New(cfg)
		var closeTrace func() error
		if opt.trace != "" {
			f, err := os.Create(opt.trace)
			if err != nil {
				return nil, fmt.Errorf("--trace: %w", err)
			}
			bw := bufio.NewWriterSize(f, 1<<16)
			w.TraceTo(bw)
			closeTrace = func() error {
				if err := bw.Flush(); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			}
		}
		start := time.Now()
		res, err := r.run(w)
		wall := time.Since(start)
		if closeTrace != nil {
			if cerr := closeTrace(); cerr != nil && err == nil {
				err = fmt.Errorf("write trace %s: %w", opt.trace, cerr)
			}
			if terr := w.TraceErr(); terr != nil && err == nil {
				err = fmt.Errorf("write trace %s: %w", opt.trace, terr)
			}
		}
		if err != nil {
			return nil, err
		}
		out := append(head, res...)
		if opt.cpuScale > 0 && opt.cpuScale != 1 {
			// A run made on a what-if machine says so.
			out = append(out, field{"cpu_scale", opt.cpuScale})
		}
		share, gapUS := simHostFields(opt.hostSteal, opt.hostStealGap)
		out = append(out,
			field{"events", w.Events()},
			field{"virtual_ms", float64(w.Now().Microseconds()) / 1e3},
			field{"wall_ms", float64(wall.Microseconds()) / 1e3},
			field{"trace_hash", w.TraceHashString()},
			// The same keys as in real: the simulated host's share, null
			// for the machine alone.
			field{"host_steal_share", share},
			field{"host_steal_gap_us", gapUS})
		return out, nil
	case "real":
		return runReal(head, r, opt)
	}
	return nil, usagef("--world %q: want sim or real", opt.world)
}

func printResult(w io.Writer, res result, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(w, string(b))
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range res {
		if f.val == nil {
			continue // a field this world has no value for (a real run's events)
		}
		if rows, ok := f.val.([]threadRow); ok {
			for _, t := range rows {
				fmt.Fprintf(tw, "thread %s\t%s\n", t.Thread, t)
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\n", f.key, formatValue(f.val))
	}
	tw.Flush()
}

// formatValue prints measurements for people: at most three decimals.
func formatValue(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
