package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"xceiver/sim"
)

// Calibrate's pairs probe (sim.Profile.Callback8ConnsNs to
// Callback128ConnsNs, CPUConfig.CallbackByConns): N goroutine pairs, each
// a client trading a pairsRequest-byte request for a pairsReply-byte
// reply with its own server goroutine over loopback TCP, pairsOps
// exchanges in all. The same work costs more CPU the more pairs share the
// cores (Go's scheduler, the caches): on the 2-core development VM one
// exchange took 12–16 µs of process CPU with one pair and 30–31 µs with
// 128. The sim's costs are each measured with one thread at a time, so
// it charges every callback the difference, over the exchange's two
// callbacks (the server's and the client's), for the connections open.
const (
	pairsRequest = 64
	pairsReply   = 32 << 10
	pairsOps     = 8192
)

// pairsDeadline bounds a pairs run: an exchange takes microseconds, and a
// connection left without its server (an accept that failed) must end the
// run with an error rather than hang calibrate.
const pairsDeadline = 30 * time.Second

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

// pairsRun runs n pairs through pairsOps exchanges in all and returns the
// process CPU per exchange, in ns.
func pairsRun(n int) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	var servers sync.WaitGroup
	servers.Add(n)
	serverErr := make(chan error, n)
	go func() {
		for range n {
			c, err := ln.Accept()
			if err != nil {
				serverErr <- err
				servers.Done()
				continue
			}
			c.SetDeadline(time.Now().Add(pairsDeadline))
			go func() {
				defer servers.Done()
				defer c.Close()
				req, reply := make([]byte, pairsRequest), make([]byte, pairsReply)
				for {
					if _, err := io.ReadFull(c, req); err != nil {
						if !errors.Is(err, io.EOF) {
							serverErr <- err
						}
						return
					}
					if _, err := c.Write(reply); err != nil {
						serverErr <- err
						return
					}
				}
			}()
		}
	}()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return 0, err
		}
		c.SetDeadline(time.Now().Add(pairsDeadline))
		conns = append(conns, c)
	}
	each := max(pairsOps/n, 1)
	errs := make([]error, n)
	var clients sync.WaitGroup
	c0 := processCPU()
	for i, c := range conns {
		clients.Add(1)
		go func() {
			defer clients.Done()
			req, reply := make([]byte, pairsRequest), make([]byte, pairsReply)
			for range each {
				if _, err := c.Write(req); err != nil {
					errs[i] = err
					return
				}
				if _, err := io.ReadFull(c, reply); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	clients.Wait()
	cpu := processCPU() - c0
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	servers.Wait()
	close(serverErr)
	for e := range serverErr {
		errs = append(errs, e)
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(cpu.Nanoseconds()) / float64(each*n), nil
}
