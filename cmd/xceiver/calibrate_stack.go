package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Calibrate's stack probe (sim.Profile.StackWaitNs, CPUConfig.StackBalance):
// stackPairs goroutine pairs ping-pong stackMsg-byte requests and replies
// over loopback TCP, and over the middle stackWindow of the run the probe
// reads every thread's schedstat. On the 2-core development VM such a
// program got 1.1 of the 2 cores, its threads waiting in a run queue
// about 1 ms each time they ran while the other CPU idled; plain OS
// threads handing work over so are queued behind a busy CPU in about 5%
// of wakes.
const (
	stackPairs  = 8
	stackMsg    = 32 << 10
	stackWindow = 600 * time.Millisecond
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, fmt.Errorf("stack probe: %w", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	closed := false // set once the probe closes its connections
	track := func(c net.Conn) {
		mu.Lock()
		if closed {
			c.Close() // accepted after the probe ended
		} else {
			conns = append(conns, c)
		}
		mu.Unlock()
	}
	// bounce reads a whole in from c and answers out, until c fails or
	// stop is closed (nil: never).
	bounce := func(c net.Conn, in, out []byte, stop <-chan struct{}) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := io.ReadFull(c, in); err != nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Add(1)
			go bounce(c, make([]byte, 16), make([]byte, stackMsg), nil)
		}
	}()
	stop := make(chan struct{})
	var dialErr error
	for range stackPairs {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			dialErr = err
			break
		}
		c.(*net.TCPConn).SetNoDelay(true)
		track(c)
		req := make([]byte, 16)
		if _, err := c.Write(req); err != nil {
			dialErr = err
			break
		}
		wg.Add(1)
		go bounce(c, make([]byte, stackMsg), req, stop)
	}
	if dialErr == nil {
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
	}
	close(stop)
	ln.Close()
	mu.Lock()
	closed = true
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	if dialErr != nil {
		return 0, 0, fmt.Errorf("stack probe: %w", dialErr)
	}
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
