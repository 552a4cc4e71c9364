package main

import (
	"flag"
	"fmt"
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
	if res.Exchanges == 0 {
		// A rate of 0 would read as a measurement; the window was too
		// short to see an exchange.
		return nil, fmt.Errorf("no exchange completed in the %v window (%d of %d clients saw none): lengthen --window", s.Window, res.Starved, s.Pairs)
	}
	// Rates, each over the interval its own loop saw (PairsResult).
	cores := res.CPU.Seconds() / res.Elapsed.Seconds()
	perExchange := 0.0
	if res.Rate > 0 {
		perExchange = cores / res.Rate * 1e6
	}
	return result{
		{"pairs", s.Pairs}, {"request", s.Request}, {"reply", s.Reply},
		{"window_open_ms", float64(res.Opened.Microseconds()) / 1e3},
		{"window_ms", float64(res.Elapsed.Microseconds()) / 1e3},
		{"exchanges", res.Exchanges},
		{"exchanges_per_s", res.Rate},
		{"starved_clients", res.Starved},
		{"cpu_us_per_exchange", perExchange},
		{"cpu_cores", cores},
	}, nil
}
