package properties

import (
	"errors"
	"fmt"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// The honest newcomer (hostile-availability): while a flooding or
// squatting rogue holds everything it was granted (from half its hold,
// when it stops asking), a local user who has not connected before asks
// for a segment on a new domain connection and must have it within
// scProbeBound. Rogues that fill the datanode's connection cap do not keep
// honest clients out for longer than it takes the oldest silent
// connection to ripen (model.IdleGrace) and be closed for room; the
// readers, whose domain connections are cached, seldom meet a full cap
// with a new connection, so without the probe a datanode that never
// closed the idle connection it picked, or never let the waiting one in
// when a domain connection closed, went unseen.

// scProbeBound is how long the probe may wait for its segment: the
// oldest silent connection ripens within model.IdleGrace of the cap
// filling; a connect that finds the accept queue full (a flood fills
// it) tries again model.UnixDialRetry later; and a millisecond for the
// connections queued ahead of it, each let in as the next silent one
// ripens, and for the exchange itself. Over seeds 1-3,000 every probe
// with no fault got its segment within 1.02 ms (behind a TCP flood,
// 0.16 ms: its connections are ripe by then).
const scProbeBound = model.IdleGrace + model.UnixDialRetry + time.Millisecond

// shortTimeout reports whether the readers' timeout is within
// scProbeBound: a reader that meets the cap filled by rogues, with
// connections too young to close, may rightly give up before its turn,
// so no rogue that fills it is drawn beside such readers
// (drawSCRogueUsers, drawSCTCPFlood) nor accepted (Validate).
func (c *SCCase) shortTimeout() bool { return c.Timeout > 0 && c.Timeout <= scProbeBound }

// scProbePatience is how long the probe waits at all: past the longest
// hang (3 s), so that a probe a fault excuses still ends in the case.
const scProbePatience = 5 * time.Second

// scProbeProcess names the probe's process: a local user of its own
// (sim's SO_PEERCRED), apart from the readers and the rogues.
const scProbeProcess = "probe"

// lazyProc is a process of the case's spawned at its first use (a rogue
// user's, the probes'): work for it before it runs waits for it.
type lazyProc struct {
	w    *sim.World
	name string
	cfg  model.ProcessConfig
	p    model.Process
	wait []func(model.Process)
}

// run runs f on the process's loop, spawning it first if need be.
func (lp *lazyProc) run(f func(model.Process)) error {
	if lp.p != nil {
		lp.p.MainLoop().Post(func() { f(lp.p) })
		return nil
	}
	lp.wait = append(lp.wait, f)
	if len(lp.wait) > 1 {
		return nil
	}
	_, err := lp.w.Spawn(lp.name, lp.cfg, func(p model.Process) {
		lp.p = p
		for _, f := range lp.wait {
			f(p)
		}
		lp.wait = nil
	})
	return err
}

// scProbe asks the datanode's domain socket for a segment as a new
// client does: a new connection (a full accept queue waited out,
// model.RetryUnixDial), REQUEST_SHM, the answer with the segment's fd.
// report runs on p's loop with how long that took and, if no segment came
// within patience, why; the connection and the segment are closed first
// (the datanode frees it: leak-freedom at rest).
func scProbe(p model.Process, patience time.Duration, report func(wait time.Duration, err error)) {
	loop := p.MainLoop()
	start := loop.Now()
	var c model.Conn
	var in []byte
	var files []model.File
	over := false
	finish := func(err error) {
		if over {
			return
		}
		over = true
		if c != nil {
			c.SetReadInterest(false)
			_ = c.Close()
		}
		for _, f := range files {
			_ = f.Close()
		}
		report(loop.Now()-start, err)
	}
	loop.AfterFunc(patience, func() { finish(fmt.Errorf("no answer in %v", patience)) })
	onEvent := func(model.Events) {
		for !over {
			var b [512]byte
			n, fds, err := c.ReadFDs(b[:])
			in = append(in, b[:n]...)
			files = append(files, fds...)
			if resp, _, derr := shortcircuit.DecodeResponse(in); !errors.Is(derr, model.ErrNeedMore) {
				switch {
				case derr != nil:
					finish(fmt.Errorf("an answer that is no response: %v", derr))
				case resp.Status != model.StatusSuccess || len(files) != 1:
					finish(fmt.Errorf("refused: %s %q with %d fds", resp.Status, resp.Message, len(files)))
				default:
					finish(nil)
				}
				return
			}
			if err != nil && !errors.Is(err, model.ErrWouldBlock) {
				finish(fmt.Errorf("the connection ended unanswered: %v", err))
				return
			}
			if n == 0 {
				return
			}
		}
	}
	var waited time.Duration
	var dial func()
	dial = func() {
		if over {
			return
		}
		var err error
		if c, err = p.Dial("unix", "/run/dn_socket", loop, onEvent); err != nil {
			c = nil
			if model.RetryUnixDial("unix", err, &waited, patience) {
				loop.AfterFunc(model.UnixDialRetry, dial)
				return
			}
			finish(fmt.Errorf("connect: %v", err))
			return
		}
		// (A fresh connection's buffer takes the request whole.)
		req := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: scProbeProcess})
		if n, err := c.Write(req); n < len(req) {
			finish(fmt.Errorf("send: %d of %d bytes: %v", n, len(req), err))
		}
	}
	dial()
}
