package properties

import (
	"errors"
	"time"

	"xceiver/model"
)

// Timing of the shutdown check.
const (
	// stopAfter: the probe connections have been accepted, one holds
	// part of a request, when the datanode is stopped.
	stopAfter = 5 * time.Millisecond
	// stopSettle is how long a stop may take: posts to its loops and the
	// lock, far below any timeout that would close the connections
	// itself (read and request timeouts are drawn at 1 s or more).
	stopSettle = 20 * time.Millisecond
)

// checkStop runs after the leak check passed: a probe process opens two
// connections to the datanode (one idle, one with half a request, so a
// timer runs on it), the datanode is stopped, and once it settles
// Datanode.Stop must have closed both (the probe sees them end), released
// its listener, loops, workers, idle handles and timers: its process is
// back to where it was before the datanode started. Then it calls then.
func (h *harness) checkStop(then func()) {
	probe, err := h.w.Spawn("stop-probe", model.ProcessConfig{}, func(model.Process) {})
	if err != nil {
		h.fail(PropHarness, "spawn the stop probe: %v", err)
		then()
		return
	}
	loop := probe.MainLoop()
	open := 0
	req := model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: 1, Length: 10})
	loop.Post(func() {
		for i := range 2 {
			var c model.Conn
			sent, ended := false, false
			buf := make([]byte, 512)
			c, err := probe.Dial("tcp", dnAddr, loop, func(ev model.Events) {
				if ev&model.Writable != 0 && !sent {
					sent = true
					if i == 1 {
						_, _ = c.Write(req[:5])
					}
					c.SetWriteInterest(false)
				}
				for !ended {
					n, err := c.Read(buf)
					if n > 0 {
						continue
					}
					if errors.Is(err, model.ErrWouldBlock) {
						return
					}
					// EOF or reset: the datanode closed it.
					ended = true
					open--
					_ = c.Close()
				}
			})
			if err != nil {
				h.fail(PropHarness, "stop probe: dial: %v", err)
				return
			}
			open++
			c.SetWriteInterest(true)
		}
	})
	dn := h.dn
	h.w.At(h.w.Now()+stopAfter, func() {
		// The per-event checks are of a serving datanode.
		h.dn = nil
		dn.Main().Post(dn.Stop)
		h.w.At(h.w.Now()+stopSettle, func() {
			h.checkStopped(dn, open)
			then()
		})
	})
}

func (h *harness) checkStopped(dn *model.Datanode, probeOpen int) {
	if h.failure != nil {
		return
	}
	res, pre := h.dnProc.Resources(), h.dnPre
	preFDs := pre.FDs - pre.ByKind[model.FDFile] // fillers of an fd-pressure fault, released since
	switch {
	case dn.Conns() > 0:
		h.fail(PropLeakFree, "datanode stopped: %d connections still listed", dn.Conns())
	case probeOpen > 0:
		h.fail(PropLeakFree, "datanode stopped: %d of the probe's connections to it still open", probeOpen)
	case res.FDs != preFDs:
		h.fail(PropLeakFree, "datanode stopped: its process holds %d fds (%v), %d before it started", res.FDs, kinds(res.ByKind), preFDs)
	case res.Threads != pre.Threads:
		h.fail(PropLeakFree, "datanode stopped: its process runs %d threads, %d before it started", res.Threads, pre.Threads)
	case res.Timers != 0 || res.Work != 0:
		h.fail(PropLeakFree, "datanode stopped: %d timers and %d work items pending", res.Timers, res.Work)
	}
}
