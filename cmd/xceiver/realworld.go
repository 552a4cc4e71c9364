package main

import (
	"fmt"
	"syscall"
	"time"
	"xceiver/model/shortcircuit"

	"xceiver/model"
	"xceiver/real"
)

// runReal runs r on real sockets, files and threads, then closes the world
// and reports any fd or goroutine it leaked as an error.
func runReal(head result, r runner, opt runOptions) (result, error) {
	if opt.trace != "" {
		return nil, usagef("--trace: traces are recorded in the simulated world only")
	}
	if need := fdsNeeded(r); need > 0 {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && uint64(need) > lim.Cur {
			return nil, usagef("the fd limit (ulimit -n %d) is too low for this run, which needs about %d fds", lim.Cur, need)
		}
	}
	_, account := r.(readRunner)
	account = account && !opt.wholeProcessCPU
	w, err := real.New(real.Config{Seed: opt.seed, Root: opt.tmpdir, AccountCPU: account})
	if err != nil {
		return nil, usagef("%v", err)
	}
	if _, sc := r.(scReadRunner); sc {
		if err := w.CheckAddr("unix", shortcircuit.SocketName); err != nil {
			w.Close()
			return nil, usagef("--tmpdir: %v", err)
		}
	}
	hw := watchHost()
	start := time.Now()
	res, runErr := r.run(w)
	wall := time.Since(start)
	steal, stealKnown := hw.stealShare()
	closeErr := w.Close()
	if runErr != nil {
		return nil, runErr
	}
	if closeErr != nil {
		return nil, fmt.Errorf("real world left resources behind: %w", closeErr)
	}
	out := append(head, res...)
	// The same keys as in sim; a real run has no event count or trace.
	out = append(out, field{"events", nil}, field{"wall_ms", float64(wall.Microseconds()) / 1e3}, field{"trace_hash", nil})
	// What the host withheld from this machine during the run (null
	// where /proc/stat does not say): the real figures mean the model
	// only as far as the machine got to run.
	shareField := any(nil)
	if stealKnown {
		shareField = steal
	}
	out = append(out, field{"host_steal_share", shareField}, field{"host_steal_gap_us", nil})
	return out, nil
}

// readHostCPU reads the host's CPU times (a variable, so tests can play a
// busy host).
var readHostCPU = real.ReadHostCPU

// hostWatch is the host's CPU times when a stretch of real runs began:
// run, bench and validate measure what the host withheld from them.
type hostWatch struct {
	start real.HostCPU
	err   error
}

func watchHost() hostWatch {
	h, err := readHostCPU()
	return hostWatch{h, err}
}

// since is the host's CPU time from the watch's start to now; false
// where /proc/stat did not say.
func (w hostWatch) since() (real.HostCPU, bool) {
	h, err := readHostCPU()
	if w.err != nil || err != nil {
		return real.HostCPU{}, false
	}
	return h.Since(w.start), true
}

// stealShare is the share of the CPU time wanted since the start that
// the host withheld (real.HostCPU.StealShare); false where it cannot say.
func (w hostWatch) stealShare() (float64, bool) {
	d, ok := w.since()
	if !ok {
		return 0, false
	}
	return d.StealShare()
}

// fdsNeeded estimates the fds a real run holds at its peak, all processes
// together, so a run that cannot fit fails up front with a clear error.
func fdsNeeded(r runner) int {
	const perLoop = 2 // epoll + eventfd
	switch r := r.(type) {
	case readRunner:
		s := r.s
		// One op in flight per client: its socket, and one cached.
		clientSide := s.Clients * (perLoop + 2)
		server := 16 + perLoop*(1+s.Server.Selectors) + s.Server.PoolMax + s.Clients
		if s.Server.Mode == model.Threaded {
			server = 16 + perLoop + s.Clients*(1+perLoop+2)
		}
		return clientSide + server + 64
	case tcpPatternRunner:
		return 64
	case pairsRunner:
		// A client's loop and socket, the server's loop and socket.
		return r.s.Pairs*2*(perLoop+1) + 64
	}
	return 0
}
