package main

import (
	"fmt"
	"time"

	"xceiver/real"
)

// runReal runs r on real sockets, files and threads, then closes the world
// and reports any fd or goroutine it leaked as an error.
func runReal(head result, r runner, opt runOptions) (result, error) {
	if opt.trace != "" {
		return nil, usagef("--trace: traces are recorded in the simulated world only")
	}
	w, err := real.New(real.Config{Seed: opt.seed})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, runErr := r.run(w)
	wall := time.Since(start)
	closeErr := w.Close()
	if runErr != nil {
		return nil, runErr
	}
	if closeErr != nil {
		return nil, fmt.Errorf("real world left resources behind: %w", closeErr)
	}
	out := append(head, res...)
	out = append(out, field{"wall_ms", float64(wall.Microseconds()) / 1e3})
	return out, nil
}
