package main

import (
	"errors"
	"fmt"
	"time"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

// connectProbeConns is how many connections the connect probe makes.
const connectProbeConns = 300

// The connect probe measures what a loopback TCP connection costs the
// real world's two ends beyond what the sim charges them already: a
// client process dials the server's listener connectProbeConns times,
// one after the other, writes a byte and closes; the server accepts,
// reads to the end and closes. The same probe runs in real (each
// process's callbacks timed, real.Config.AccountCPU; connectReal) and in
// sim with the costs measured so far (connectExtra); the differences per
// connection are the dialer's and the acceptor's extra (the kernel's
// handshake and socket set-up and teardown, which the sim charged as
// bare system calls and segments).

// connectReal is the real side of the connect probe: the dialer's and
// the acceptor's CPU per connection, medians of three runs.
func connectReal() (dialNs, acceptNs float64, err error) {
	var dials, accepts []float64
	for range 3 {
		w, err := real.New(real.Config{Seed: 1, AccountCPU: true})
		if err != nil {
			return 0, 0, fmt.Errorf("connect probe: %w", err)
		}
		d, a, err := connectProbe(w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, 0, fmt.Errorf("connect probe: %w", err)
		}
		dials, accepts = append(dials, d), append(accepts, a)
	}
	return median(dials), median(accepts), nil
}

// connectExtra is what the real side's figures cost beyond what the sim
// charges the probe with p's other costs (p's own dial and accept
// figures left out).
func connectExtra(p sim.Profile, realDial, realAccept float64) (dialNs, acceptNs float64, err error) {
	p.TCPDialNs, p.TCPAcceptNs = 0, 0
	cfg := sim.DefaultConfig(1)
	cfg.CPU = p.CPU()
	simDial, simAccept, err := connectProbe(sim.New(cfg))
	if err != nil {
		return 0, 0, fmt.Errorf("connect probe in sim: %w", err)
	}
	return max(realDial-simDial, 0), max(realAccept-simAccept, 0), nil
}

// connectProbe runs the probe in w and returns the dialer's and the
// acceptor's CPU per connection, in ns (procCPU: their callbacks').
func connectProbe(w model.World) (dialNs, acceptNs float64, err error) {
	var server, client model.Process
	_, err = w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
		server = p
		addr := "127.0.0.1:0"
		if w.Kind() != "real" {
			addr = "server:9000"
		}
		loop := p.MainLoop()
		ln, err := p.Listen("tcp", addr, 128, loop)
		if err != nil {
			w.Fail(err)
			return
		}
		never := func() bool { return false }
		ln.SetHandler(func() {
			model.AcceptAll(p, loop, ln, "probe-accept-error", never, func(c model.Conn) {
				buf := make([]byte, 16)
				c.SetHandler(loop, func(model.Events) {
					for {
						_, err := c.Read(buf)
						if errors.Is(err, model.ErrWouldBlock) {
							return
						}
						if err != nil { // EOF: the client closed
							c.Close()
							return
						}
					}
				})
			})
		})
		_, serr := w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			client = cp
			left := connectProbeConns
			var dial func()
			dial = func() {
				var c model.Conn // set by Dial, before its handler can run
				var err error
				c, err = cp.Dial("tcp", ln.Addr(), cp.MainLoop(), func(ev model.Events) {
					if ev&model.Hangup != 0 {
						w.Fail(fmt.Errorf("connect: %v", c.Err()))
						return
					}
					if ev&model.Writable == 0 {
						return
					}
					if _, err := c.Write([]byte{1}); err != nil {
						w.Fail(err)
						return
					}
					c.Close()
					if left--; left == 0 {
						// Time for the last connection's server side.
						cp.MainLoop().AfterFunc(50*time.Millisecond, w.Stop)
						return
					}
					dial()
				})
				if err != nil {
					w.Fail(err)
					return
				}
				c.SetWriteInterest(true)
			}
			dial()
		})
		if serr != nil {
			w.Fail(serr)
		}
	})
	if err == nil {
		err = w.Run(time.Minute)
	}
	if err != nil {
		return 0, 0, err
	}
	if server == nil || client == nil {
		return 0, 0, errors.New("the probe's processes did not start")
	}
	n := float64(connectProbeConns)
	return float64(procCPU(client).Nanoseconds()) / n, float64(procCPU(server).Nanoseconds()) / n, nil
}
