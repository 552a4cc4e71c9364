package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Calibrate's stack probe (sim.Profile.StackWaitNs, CPUConfig.StackBalance):
// stackPairs goroutine pairs (goPairs) trade stackRequest-byte requests
// for stackMsg-byte replies over loopback TCP, and over the middle
// stackWindow of the run the probe reads every thread's schedstat. On
// the 2-core development VM such a
// program got 1.1 of the 2 cores, its threads waiting in a run queue
// about 1 ms each time they ran while the other CPU idled; plain OS
// threads handing work over so are queued behind a busy CPU in about 5%
// of wakes.
const (
	stackPairs   = 8
	stackRequest = 16
	stackMsg     = 32 << 10
	stackWindow  = 600 * time.Millisecond
)

// errNoSchedstat is stackProbe's error on a kernel without per-thread
// scheduler statistics.
var errNoSchedstat = errors.New("no /proc/self/task/*/schedstat")

// stackProbes runs stackProbe three times and returns the median wait per
// run slice, in ns, and the median cores.
func stackProbes() (waitNs, cores float64, err error) {
	var waits, cs []float64
	for range 3 {
		w, c, err := stackProbe()
		if err != nil {
			return 0, 0, err
		}
		waits, cs = append(waits, w), append(cs, c)
	}
	return median(waits), median(cs), nil
}

// stackProbe returns the mean run-queue wait of this process's threads per
// run slice, in ns, and the cores the process used (its threads' run
// time over the window).
func stackProbe() (waitNs, cores float64, err error) {
	if _, _, _, err := schedstat(); err != nil {
		return 0, 0, err
	}
	g, err := startPairs(stackPairs, stackRequest, stackMsg)
	if err != nil {
		return 0, 0, fmt.Errorf("stack probe: %w", err)
	}
	defer g.stop()
	time.Sleep(stackWindow / 3) // past the start
	run0, wait0, slices0, _ := schedstat()
	t0 := time.Now()
	time.Sleep(stackWindow)
	run1, wait1, slices1, _ := schedstat()
	wall := time.Since(t0)
	if n := slices1 - slices0; n > 0 {
		waitNs = float64(wait1-wait0) / float64(n)
	}
	cores = float64(run1-run0) / float64(wall.Nanoseconds())
	return waitNs, cores, nil
}

// schedstat sums this process's threads' schedstat: ns run, ns waited in
// a run queue, run slices.
func schedstat() (run, wait, slices int64, err error) {
	files, _ := filepath.Glob("/proc/self/task/*/schedstat")
	if len(files) == 0 {
		return 0, 0, 0, errNoSchedstat
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		var r, w, n int64
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &r, &w, &n); err != nil {
			return 0, 0, 0, fmt.Errorf("%s: %w", f, err)
		}
		run, wait, slices = run+r, wait+w, slices+n
	}
	return run, wait, slices, nil
}
