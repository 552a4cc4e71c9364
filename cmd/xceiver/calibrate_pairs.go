package main

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// goPairs is what calibrate's stack and pairs probes run: n goroutine
// pairs over loopback TCP, each a client trading a request for a reply
// with a server goroutine of its own, over and over until stop. It is
// plain Go (net.Conn, a goroutine a side), no xceiver code: the probes
// measure what Go's scheduler does with such a program on this machine.
type goPairs struct {
	ln        net.Listener
	wg        sync.WaitGroup
	stopping  chan struct{}
	exchanges atomic.Int64 // replies the clients have read

	mu     sync.Mutex
	conns  []net.Conn
	closed bool // set once stop closes the connections
}

// startPairs starts n pairs trading request-byte requests for reply-byte
// replies.
func startPairs(n, request, reply int) (*goPairs, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &goPairs{ln: ln, stopping: make(chan struct{})}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // stop closed the listener
			}
			g.track(c)
			g.wg.Add(1)
			go g.bounce(c, make([]byte, request), make([]byte, reply), nil)
		}
	}()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			g.stop()
			return nil, err
		}
		c.(*net.TCPConn).SetNoDelay(true)
		g.track(c)
		req := make([]byte, request)
		if _, err := c.Write(req); err != nil {
			g.stop()
			return nil, err
		}
		g.wg.Add(1)
		go g.bounce(c, make([]byte, reply), req, &g.exchanges)
	}
	return g, nil
}

// track keeps c for stop to close (or closes it, if stop has run: an
// accept that came after).
func (g *goPairs) track(c net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		c.Close()
		return
	}
	g.conns = append(g.conns, c)
}

// bounce reads a whole in from c and answers out, counting each in read
// (if count is set), until c fails or the pairs stop.
func (g *goPairs) bounce(c net.Conn, in, out []byte, count *atomic.Int64) {
	defer g.wg.Done()
	for {
		select {
		case <-g.stopping:
			return
		default:
		}
		if _, err := io.ReadFull(c, in); err != nil {
			return
		}
		if count != nil {
			count.Add(1)
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// stop ends every pair and waits for their goroutines: closing the
// connections ends the reads that wait.
func (g *goPairs) stop() {
	close(g.stopping)
	g.ln.Close()
	g.mu.Lock()
	g.closed = true
	for _, c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// Calibrate's pairs probe (sim.Profile.Callback8ConnsNs to
// Callback128ConnsNs, CPUConfig.CallbackByConns): 1, 8, 32 and 128 pairs
// (goPairs) doing run pairs' default work (model.DefaultPairs: 64-byte
// requests for 32 KiB replies, a 150 ms window after 50 ms); the process
// CPU per exchange over the window. The same work
// costs more CPU the more pairs share the cores (Go's scheduler, the
// caches): on the 2-core development VM one exchange took 12–16 µs of
// process CPU with one pair and 30–31 µs with 128. The sim's costs are
// each measured with one thread at a time, so it charges every callback
// the difference, over the exchange's two callbacks (the server's and the
// client's), for the connections open.
// pairsCounts are the numbers of pairs the probe measures beyond one.
var pairsCounts = [3]int{8, 32, 128}

// pairsCosts measures the extra CPU per callback with 8, 32 and 128 pairs
// against one: three rounds, each measuring every count once, in a
// rotated order so no count always runs first; the medians.
func pairsCosts(p *sim.Profile) error {
	counts := append([]int{1}, pairsCounts[:]...)
	per := make([][]float64, len(counts))
	for round := range 3 {
		for k := range counts {
			i := (k + round) % len(counts)
			c, err := pairsRun(counts[i])
			if err != nil {
				return fmt.Errorf("pairs probe: %w", err)
			}
			per[i] = append(per[i], c)
		}
	}
	one := median(per[0])
	extra := make([]float64, len(pairsCounts))
	for i := range pairsCounts {
		extra[i] = max(median(per[i+1])-one, 0) / 2
	}
	p.Callback8ConnsNs, p.Callback32ConnsNs, p.Callback128ConnsNs = extra[0], extra[1], extra[2]
	return nil
}

// pairsRun runs n pairs and returns the process CPU per exchange, in ns,
// over run pairs' window once they have run its warm-up.
func pairsRun(n int) (float64, error) {
	d := model.DefaultPairs()
	g, err := startPairs(n, d.Request, d.Reply)
	if err != nil {
		return 0, err
	}
	time.Sleep(d.WarmUp)
	c0, x0 := processCPU(), g.exchanges.Load()
	time.Sleep(d.Window)
	cpu, x := processCPU()-c0, g.exchanges.Load()-x0
	g.stop()
	if x <= 0 {
		return 0, fmt.Errorf("%d pairs made no exchange in %v", n, d.Window)
	}
	return float64(cpu.Nanoseconds()) / float64(x), nil
}
