package model

import (
	"errors"
	"fmt"
	"io"
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
	// WarmUp is how long the pairs run, once every pair has made its
	// first exchange, before the window opens; Window how long it
	// stays open.
	WarmUp, Window time.Duration
	// CPUTime, if set, reads the CPU every process of the world has used
	// so far, at the window's two ends.
	CPUTime func() time.Duration
	// Bugs are catalogued bugs, for check's scenario system.
	Bugs PairsBugs
}

// PairsBugs are bugs that can be switched on in RunPairs.
type PairsBugs struct {
	// ServerKeepsConn: a server connection whose client closed is
	// counted as ended and no longer read, but never closed, nor its
	// loop (CLOSE_WAIT).
	ServerKeepsConn bool
}

// DefaultPairs is run pairs' default: 8 pairs trading 64-byte requests
// for 32 KiB replies, measured over 150 ms from 50 ms after every pair
// has made its first exchange.
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

// PairsResult is what a pairs run measured over its window. Each loop
// reads its figures when its own timer fires, which a loaded machine
// (or the sim's line for a core) delays by different amounts: rates,
// each over the interval its loop saw, not counts over one interval.
type PairsResult struct {
	Exchanges int // replies the clients read in full in their windows
	// Rate is the exchanges a second: each client's count over its own
	// window, summed.
	Rate    float64
	CPU     time.Duration // CPUTime's difference over Elapsed (0 without it)
	Elapsed time.Duration // the window, as the server's clock loop saw it
	// Opened is when the window opened on the world's clock; Starved
	// counts the clients that completed no exchange in their window.
	Opened  time.Duration
	Starved int
	// Requests the server connections read in full, and Replies the
	// clients read in full, over the whole run: at its orderly end
	// every request was answered, so the two are equal.
	Requests, Replies int
}

// RunPairs runs s in w until the window closes, then ends in order:
// each client closes its connection after its next whole reply, and
// each server connection, reading the end of its stream between
// requests, closes with its loop. A run leaves no connection behind,
// and every request the server read in full was answered in full.
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
		var serverEnded func(requests int) // on main; set below
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
				b.ended = func() {
					// Its client closed between requests: the pair is
					// done with this connection and its loop.
					if s.Bugs.ServerKeepsConn {
						c.SetReadInterest(false)
					} else {
						c.Close()
						l.Close()
					}
					n := b.count
					main.Post(func() { serverEnded(n) })
				}
				c.SetHandler(l, func(Events) { b.handle(w) })
			}
		})
		// Each client counts its own exchanges on its own loop and
		// reports the window's count to the server's loop: no count is
		// shared between loops (real runs them on goroutines of their
		// own). The window opens WarmUp after every pair has made its
		// first exchange (spawning 128 clients took real over 50 ms),
		// at the same time on the world's clock for every loop. The
		// CPU is read by a loop that does nothing else, so its timers
		// are not held up behind the main loop's accepts.
		clock, err := p.NewLoop("clock")
		if err != nil {
			w.Fail(fmt.Errorf("pairs: %w", err))
			return
		}
		// clients[i] opens client i's window and ends it, on its own
		// loop.
		var clients []pairHooks
		reported, ended := 0, 0
		closed := false
		// end starts the orderly end once the window has closed and
		// every client has reported.
		end := func() {
			if reported == s.Pairs && closed {
				for _, c := range clients {
					c.end()
				}
			}
		}
		serverEnded = func(requests int) {
			res.Requests += requests
			if ended++; ended == s.Pairs {
				clock.Close()
				w.Stop()
			}
		}
		report := func(n int, over time.Duration) {
			main.Post(func() {
				res.Exchanges += n
				if n == 0 {
					res.Starved++
				}
				if over > 0 {
					res.Rate += float64(n) / over.Seconds()
				}
				reported++
				end()
			})
		}
		clientEnded := func(replies int) { main.Post(func() { res.Replies += replies }) }
		// openAt times the window on the clock loop: the CPU at its two
		// ends; the run ends once it has closed and every client has
		// reported (in real, the loops' timers fire in any order).
		openAt := func(open time.Duration) {
			var cpu0, start time.Duration
			now := clock.Now()
			clock.AfterFunc(open-now, func() {
				start = clock.Now()
				if s.CPUTime != nil {
					cpu0 = s.CPUTime()
				}
			})
			clock.AfterFunc(open+s.Window-now, func() {
				elapsed := clock.Now() - start
				var cpu time.Duration
				if s.CPUTime != nil {
					cpu = s.CPUTime() - cpu0
				}
				main.Post(func() {
					res.Elapsed, res.CPU = elapsed, cpu
					closed = true
					end()
				})
			})
		}
		ready := func(h pairHooks) {
			main.Post(func() {
				if clients = append(clients, h); len(clients) < s.Pairs {
					return
				}
				open := main.Now() + s.WarmUp
				res.Opened = open
				clock.Post(func() { openAt(open) })
				for _, c := range clients {
					c.window(open)
				}
			})
		}
		for i := range s.Pairs {
			if _, err := w.Spawn(fmt.Sprintf("client-%d", i), ProcessConfig{}, func(cp Process) {
				startClientPair(w, cp, ln.Addr(), s, ready, report, clientEnded)
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

// pairHooks are what the server calls, on its main loop, of a client
// that is ready: window hands it the window's opening time, end asks it
// to stop. Each posts to the client's own loop.
type pairHooks struct {
	window func(open time.Duration)
	end    func()
}

// startClientPair dials the server and starts trading. After its first
// exchange it tells the server it is ready; once every client is, the
// server hands each the window's opening time, and at the window's ends
// (open, open+Window on the world's clock) the client notes its count,
// and reports the difference over the time its loop saw. Asked to end,
// it closes its connection after its next whole reply, and tells the
// server (ended) how many it read.
func startClientPair(w World, cp Process, addr string, s Pairs, ready func(pairHooks), report func(int, time.Duration), ended func(int)) {
	l := cp.MainLoop()
	b := &bouncer{in: s.Reply, out: make([]byte, s.Request), buf: make([]byte, min(s.Reply, 64<<10))}
	b.first = func() {
		ready(pairHooks{
			window: func(open time.Duration) {
				l.Post(func() {
					var at0 int
					var t0 time.Duration
					now := l.Now()
					l.AfterFunc(open-now, func() { at0, t0 = b.count, l.Now() })
					l.AfterFunc(open+s.Window-now, func() { report(b.count-at0, l.Now()-t0) })
				})
			},
			end: func() { l.Post(func() { b.ending = true }) },
		})
	}
	b.closing = func() {
		// The count first: posted before the FIN, it reaches the
		// server's main loop before the end its connection reads (in
		// real, the last server connection's end stops the world).
		ended(b.count)
		b.c.Close()
	}
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
}

// bouncer reads in bytes, then writes out, over and over.
type bouncer struct {
	c       Conn
	in      int
	got     int
	out     []byte
	pending []byte
	buf     []byte
	count   int    // messages read in full
	first   func() // called after the first (nil: nothing)
	// A client asked to end (ending) calls closing instead of writing
	// its next request; a server side calls ended when its peer's
	// stream ends between requests. Either is then done.
	ending  bool
	closing func()
	ended   func()
	done    bool
}

func (b *bouncer) handle(w World) {
	if b.done {
		return
	}
	answered := false
	for {
		if len(b.pending) > 0 {
			// (Neither side ever changes what it sends: no copy.)
			k, err := WriteShared(b.c, b.pending)
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
			if answered {
				// One message a callback: readiness is level-triggered,
				// so the next comes back as an event of its own. Read
				// in the same callback, a peer that answered fast
				// enough kept the handler in one callback for good (in
				// sim, where a process's callbacks do not overlap, its
				// other loops never ran).
				return
			}
		}
		// Only counted, never looked at: no copy where the world can.
		k, err := ReadView(b.c, b.buf[:min(len(b.buf), b.in-b.got)], nil)
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if errors.Is(err, io.EOF) && b.got == 0 && b.ended != nil {
			b.done = true
			b.ended()
			return
		}
		if err != nil {
			b.stop(w, err)
			return
		}
		if b.got += k; b.got == b.in {
			b.got = 0
			if b.count++; b.count == 1 && b.first != nil {
				b.first()
			}
			if b.ending {
				b.done = true
				b.closing()
				return
			}
			b.pending = b.out
			answered = true
		}
	}
}

// stop ends this side: no connection closes while the pairs run but
// in the orderly end, so an error (an end of stream mid-request
// included) is a failure. (Once Run has returned, the world is torn
// down and a failure then is not reported.)
func (b *bouncer) stop(w World, err error) {
	b.done = true
	b.c.Close()
	w.Fail(fmt.Errorf("pairs: %w", err))
}
