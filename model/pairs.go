package model

import (
	"errors"
	"fmt"
	"time"
)

// Pairs is the CPU model's own workload, with no datanode in it: Pairs
// client processes each keep one connection to a server whose every
// accepted connection gets a loop of its own, and each pair trades a
// Request-byte request for a Reply-byte reply over and over. Every loop
// has work nearly all the time, so what the run measures is how many
// cores the loops keep busy, and what an exchange costs, as more of them
// share the machine: the scheduling that decides run read's throughput,
// seen alone.
type Pairs struct {
	Pairs   int
	Request int
	Reply   int
	// WarmUp is how long the pairs run before the window opens (the
	// connections set up); Window how long it stays open.
	WarmUp, Window time.Duration
	// CPUTime, if set, reads the CPU every process of the world has used
	// so far, at the window's two ends.
	CPUTime func() time.Duration
}

// DefaultPairs is run pairs' default: 8 pairs trading 64-byte requests
// for 32 KiB replies, measured over 150 ms after 50 ms.
func DefaultPairs() Pairs {
	return Pairs{Pairs: 8, Request: 64, Reply: 32 << 10, WarmUp: 50 * time.Millisecond, Window: 150 * time.Millisecond}
}

// Validate reports a configuration that cannot run.
func (s Pairs) Validate() error {
	// (Each side keeps a read buffer of up to 64 KiB: 1024 pairs hold
	// at most 128 MiB.)
	switch {
	case s.Pairs < 1 || s.Pairs > 1024:
		return fmt.Errorf("--pairs %d: want 1 to 1024", s.Pairs)
	case s.Request < 1 || s.Request > 1<<20:
		return fmt.Errorf("--request %d: want 1 byte to 1 MiB", s.Request)
	case s.Reply < 1 || s.Reply > 1<<24:
		return fmt.Errorf("--reply %d: want 1 byte to 16 MiB", s.Reply)
	case s.WarmUp < 0 || s.WarmUp > time.Minute:
		return fmt.Errorf("--warm-up %v: want 0 to a minute", s.WarmUp)
	case s.Window <= 0 || s.Window > time.Minute:
		return fmt.Errorf("--window %v: want more than 0 and at most a minute", s.Window)
	}
	return nil
}

// PairsResult is what a pairs run measured over its window.
type PairsResult struct {
	Exchanges int           // replies the clients read in full
	CPU       time.Duration // CPUTime's difference (0 without it)
	Elapsed   time.Duration // the window, as the server's loop saw it
}

// RunPairs runs s in w until the window closes.
func RunPairs(w World, s Pairs, limit time.Duration) (*PairsResult, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	res := &PairsResult{}
	addr := DefaultAddr(w, "server", 7100)
	_, err := w.Spawn("server", ProcessConfig{FDLimit: 4*s.Pairs + 64, Cores: 2}, func(p Process) {
		ln, err := p.Listen("tcp", addr, max(s.Pairs, 128), p.MainLoop())
		if err != nil {
			w.Fail(fmt.Errorf("pairs: listen: %w", err))
			return
		}
		main := p.MainLoop()
		// Every server connection writes the same reply, which nothing
		// writes to: one buffer for all.
		reply := make([]byte, s.Reply)
		ln.SetHandler(func() {
			for {
				c, err := ln.Accept()
				if errors.Is(err, ErrWouldBlock) {
					return
				}
				if err != nil {
					w.Fail(fmt.Errorf("pairs: accept: %w", err))
					return
				}
				c.SetNoDelay(true)
				l, err := p.NewLoop("conn")
				if err != nil {
					w.Fail(fmt.Errorf("pairs: %w", err))
					return
				}
				b := &bouncer{c: c, in: s.Request, out: reply, buf: make([]byte, min(s.Request, 64<<10))}
				c.SetHandler(l, func(Events) { b.handle(w) })
			}
		})
		// Each client counts its own exchanges on its own loop and
		// reports the window's count to the server's loop: no count is
		// shared between loops (real runs them on goroutines of their
		// own). Every loop opens and closes the window at the same
		// times on the world's clock, whenever it was made.
		reported := 0
		var cpu0, start time.Duration
		open := main.Now() + s.WarmUp
		main.AfterFunc(s.WarmUp, func() {
			start = main.Now()
			if s.CPUTime != nil {
				cpu0 = s.CPUTime()
			}
		})
		// The run ends once the window has closed here and every client
		// has reported (in real, the loops' timers fire in any order).
		closed := false
		main.AfterFunc(s.WarmUp+s.Window, func() {
			res.Elapsed = main.Now() - start
			if s.CPUTime != nil {
				res.CPU = s.CPUTime() - cpu0
			}
			if closed = true; reported == s.Pairs {
				w.Stop()
			}
		})
		report := func(n int) {
			main.Post(func() {
				res.Exchanges += n
				if reported++; reported == s.Pairs && closed {
					w.Stop()
				}
			})
		}
		for i := range s.Pairs {
			if _, err := w.Spawn(fmt.Sprintf("client-%d", i), ProcessConfig{}, func(cp Process) {
				startClientPair(w, cp, ln.Addr(), s, open, report)
			}); err != nil {
				w.Fail(fmt.Errorf("pairs: %w", err))
				return
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if err := w.Run(limit); err != nil {
		return res, err
	}
	if res.Elapsed <= 0 {
		return res, errors.New("pairs: the window never closed")
	}
	return res, nil
}

// startClientPair dials the server and starts trading; at the window's
// ends (open, open+Window on the world's clock) it notes its count, and
// reports the difference.
func startClientPair(w World, cp Process, addr string, s Pairs, open time.Duration, report func(int)) {
	l := cp.MainLoop()
	b := &bouncer{in: s.Reply, out: make([]byte, s.Request), buf: make([]byte, min(s.Reply, 64<<10))}
	c, err := cp.Dial("tcp", addr, l, func(Events) { b.handle(w) })
	if err != nil {
		w.Fail(fmt.Errorf("pairs: dial: %w", err))
		return
	}
	b.c = c
	c.SetNoDelay(true)
	// The first request: written once the connection is up.
	b.pending = b.out
	c.SetWriteInterest(true)
	var at0 int
	now := l.Now()
	l.AfterFunc(max(open-now, 0), func() { at0 = b.count })
	l.AfterFunc(max(open+s.Window-now, 0), func() { report(b.count - at0) })
}

// bouncer reads in bytes, then writes out, over and over.
type bouncer struct {
	c       Conn
	in      int
	got     int
	out     []byte
	pending []byte
	buf     []byte
	count   int // messages read in full
	done    bool
}

func (b *bouncer) handle(w World) {
	if b.done {
		return
	}
	for {
		if len(b.pending) > 0 {
			k, err := b.c.Write(b.pending)
			if err != nil && !errors.Is(err, ErrWouldBlock) {
				b.stop(w, err)
				return
			}
			b.pending = b.pending[k:]
			if len(b.pending) > 0 {
				b.c.SetWriteInterest(true)
				return
			}
			b.c.SetWriteInterest(false)
		}
		k, err := b.c.Read(b.buf[:min(len(b.buf), b.in-b.got)])
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if err != nil {
			b.stop(w, err)
			return
		}
		if b.got += k; b.got == b.in {
			b.got = 0
			b.count++
			b.pending = b.out
		}
	}
}

// stop ends this side: no connection closes while the pairs run, so an
// error is a failure. (Once Run has returned, the world is torn down and
// a failure then is not reported.)
func (b *bouncer) stop(w World, err error) {
	b.done = true
	b.c.Close()
	w.Fail(fmt.Errorf("pairs: %w", err))
}
