package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// scenario is one runnable experiment: its flags, and how to run it in a
// world and describe the result.
type scenario struct {
	name  string
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

func scenarios() map[string]scenario {
	return map[string]scenario{
		"tcp-pattern": {name: "tcp-pattern", flags: tcpPatternFlags},
		"read":        {name: "read", flags: readFlags},
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func tcpPatternFlags(fs *flag.FlagSet) func() (runner, error) {
	cfg := model.TCPPattern{}
	fs.IntVar(&cfg.Writes, "writes", 2, "writes per request")
	fs.IntVar(&cfg.Msg, "msg", 8, "bytes per write")
	fs.IntVar(&cfg.Reply, "reply", 32768, "reply bytes")
	fs.IntVar(&cfg.Ops, "ops", 100, "operations")
	fs.BoolVar(&cfg.NoDelay, "nodelay", false, "set TCP_NODELAY on both ends")
	return func() (runner, error) {
		if err := cfg.Validate(); err != nil {
			return nil, usagef("tcp-pattern: %v", err)
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
	return result{
		{"ops", len(res.Latencies)},
		{"writes", r.cfg.Writes}, {"msg", r.cfg.Msg}, {"reply", r.cfg.Reply}, {"nodelay", r.cfg.NoDelay},
		{"first_op_us", us(s.First)},
		{"p50_us", us(s.P50)},
		{"p99_us", us(s.P99)},
		{"mean_us", us(s.Mean)},
		{"max_us", us(s.Max)},
	}, nil
}

// runOptions are the flags every scenario shares.
type runOptions struct {
	world  string
	seed   uint64
	trace  string
	json   bool
	tmpdir string
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: xceiver run SCENARIO [--world sim|real] [--seed S] [--trace FILE] [--json] [scenario flags]; scenarios: tcp-pattern, read")
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	sc, ok := scenarios()[args[0]]
	if !ok {
		return report(stderr, usagef("run: unknown scenario %q (want tcp-pattern or read)", args[0]))
	}
	fs := newFlagSet("run "+sc.name, stderr)
	var opt runOptions
	fs.StringVar(&opt.world, "world", "sim", "sim or real")
	fs.Uint64Var(&opt.seed, "seed", 1, "seed of the simulated run")
	fs.StringVar(&opt.trace, "trace", "", "write the event trace to this file (sim)")
	fs.BoolVar(&opt.json, "json", false, "print one JSON object")
	fs.StringVar(&opt.tmpdir, "tmpdir", "", "directory for the real world's files and sockets (default: the system's)")
	build := sc.flags(fs)
	rest, err := parseFlags(fs, args[1:], stderr)
	if err != nil {
		return report(stderr, err)
	}
	if len(rest) > 0 {
		return report(stderr, usagef("run %s: unexpected argument %q", sc.name, rest[0]))
	}
	r, err := build()
	if err != nil {
		return report(stderr, err)
	}
	res, err := runScenario(sc.name, r, opt)
	if err != nil {
		return report(stderr, err)
	}
	printResult(stdout, res, opt.json)
	return exitOK
}

// runScenario runs r in the chosen world and adds the common fields.
func runScenario(name string, r runner, opt runOptions) (result, error) {
	head := result{{"scenario", name}, {"world", opt.world}, {"seed", opt.seed}}
	switch opt.world {
	case "sim":
		w := sim.New(sim.DefaultConfig(opt.seed))
		var closeTrace func() error
		if opt.trace != "" {
			f, err := os.Create(opt.trace)
			if err != nil {
				return nil, usagef("--trace: %v", err)
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
		out = append(out,
			field{"events", w.Events()},
			field{"virtual_ms", float64(w.Now().Microseconds()) / 1e3},
			field{"wall_ms", float64(wall.Microseconds()) / 1e3},
			field{"trace_hash", w.TraceHashString()})
		return out, nil
	case "real":
		return runReal(head, r, opt)
	}
	return nil, usagef("--world: want sim or real, got %q", opt.world)
}

func printResult(w io.Writer, res result, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(w, string(b))
		return
	}
	for _, f := range res {
		fmt.Fprintf(w, "%-24s %v\n", f.key, f.val)
	}
}
