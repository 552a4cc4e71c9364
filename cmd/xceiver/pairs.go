package main

import (
	"flag"
	"time"

	"xceiver/model"
)

func pairsFlags(fs *flag.FlagSet) func() (runner, error) {
	s := model.DefaultPairs()
	fs.IntVar(&s.Pairs, "pairs", s.Pairs, "client and server loop pairs")
	fs.IntVar(&s.Request, "request", s.Request, "request bytes")
	fs.IntVar(&s.Reply, "reply", s.Reply, "reply bytes")
	fs.DurationVar(&s.WarmUp, "warm-up", s.WarmUp, "how long the pairs run before the window opens")
	fs.DurationVar(&s.Window, "window", s.Window, "how long the measurement window stays open")
	return func() (runner, error) {
		if err := s.Validate(); err != nil {
			return nil, usagef("run pairs: %v", err)
		}
		return pairsRunner{s}, nil
	}
}

type pairsRunner struct{ s model.Pairs }

func (r pairsRunner) run(w model.World) (result, error) {
	s := r.s
	s.CPUTime = worldCPU(w)
	res, err := model.RunPairs(w, s, s.WarmUp+s.Window+time.Minute)
	if err != nil {
		return nil, err
	}
	sec := res.Elapsed.Seconds()
	return result{
		{"pairs", s.Pairs}, {"request", s.Request}, {"reply", s.Reply},
		{"window_ms", float64(res.Elapsed.Microseconds()) / 1e3},
		{"exchanges", res.Exchanges},
		{"exchanges_per_s", float64(res.Exchanges) / sec},
		{"cpu_us_per_exchange", us(res.CPU) / float64(max(res.Exchanges, 1))},
		{"cpu_cores", res.CPU.Seconds() / sec},
	}, nil
}
