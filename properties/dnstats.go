package properties

import (
	"errors"
	"slices"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// PropStats: the datanode's counters (DatanodeStats, which `run read`
// reports as the server's figures) agree with what the harness saw.
const PropStats = "dn-stats"

// dnObserved is what the clients saw the datanode do: each op that got an
// answer was started by it, and a successful read carried its data.
type dnObserved struct {
	answered, rejected, reads, writes int
	bytesRead                         int64
	// waiting is the most reads seen queued for a pool handle at once,
	// sampled as ops end and as hostile peers are scanned: the pool's
	// count of waits (HandlePool.Waited) is at least that.
	waiting int
}

// sampleWaits notes how many reads wait for a pool handle now.
func (h *harness) sampleWaits() {
	if h.dn == nil {
		return
	}
	if pool := h.dn.Pool(); pool != nil {
		n := pool.Waiting()
		h.dnSeen.waiting = max(h.dnSeen.waiting, n)
		h.checkQueued(n)
	}
}

// checkQueued: every read in the pool's queue is some connection's,
// waiting or being withdrawn (Datanode.ReadsWaiting). One the datanode
// forgot would never be withdrawn when its connection closes or gives
// up, and a retry after a wake-up would lose its place in the queue.
// (A walk of the connections, only while reads wait, which is rare.)
func (h *harness) checkQueued(queued int) {
	if queued == 0 {
		return
	}
	if n := h.dn.ReadsWaiting(); n < queued {
		h.fail(PropStats, "the handle pool has queued %d reads, but only %d are a datanode connection's", queued, n)
	}
}

func (o *dnObserved) add(op Op, r model.Result) {
	switch {
	case r.Err == nil:
		o.answered++
		if op.Kind == OpRead {
			o.reads++
			o.bytesRead += int64(len(r.Data))
		} else {
			o.writes++
		}
	case errors.Is(r.Err, model.ErrRejected):
		// An error status: the datanode started the op and failed it.
		o.answered++
		o.rejected++
	}
}

// checkStats runs at quiescence, once every connection has closed and
// added its counters: the datanode accepted exactly the sockets its
// process made since it started, each counter is consistent with the
// others, and (when one datanode served the whole run) none counts less
// than the clients saw it do.
func (h *harness) checkStats() {
	st := h.dn.Stats()
	if h.opt.tamperStats != nil {
		h.opt.tamperStats(&st)
	}
	pool := h.dn.Pool()
	disk := h.dnProc.Disk().(*sim.Disk)
	sendfiles := disk.Sendfiles
	errLogs := dnErrorLogs(h.dnProc) - h.dnErrLogs
	sendfileErrs := disk.SendfileErrs - h.dnSendfileErr
	made := h.dnProc.FDsMade(model.FDSocket) - h.dnSockets
	switch {
	case st.Accepted < 0 || st.Ops < 0 || st.Reads < 0 || st.Writes < 0 || st.Errors < 0 ||
		st.KeepaliveReuses < 0 || st.KeepaliveTimeouts < 0 || st.BytesSent < 0 || st.IdleAsks < 0:
		h.fail(PropStats, "datanode counts a negative figure: %+v", st)
	case st.Accepted != made:
		h.fail(PropStats, "datanode counts %d connections accepted; its process made %d sockets since it started", st.Accepted, made)
	case st.Reads+st.Writes > st.Ops:
		h.fail(PropStats, "datanode counts %d reads and %d writes in %d ops", st.Reads, st.Writes, st.Ops)
	case st.Ops-st.KeepaliveReuses > st.Accepted:
		// Every op but a connection's first reuses it.
		h.fail(PropStats, "datanode counts %d ops, %d of them on a kept-alive connection, over %d connections", st.Ops, st.KeepaliveReuses, st.Accepted)
	case st.KeepaliveTimeouts > st.Ops-st.KeepaliveReuses:
		// Only a connection that carried an op waits kept alive.
		h.fail(PropStats, "datanode counts %d keep-alive timeouts, but only %d connections carried an op", st.KeepaliveTimeouts, st.Ops-st.KeepaliveReuses)
	case st.IdleAsks > st.Accepted:
		// A connection asked is closed if idle and busy for good if
		// not: asking it again is work that grows with the square of
		// the connections while a flood keeps the datanode full.
		h.fail(PropStats, "a full datanode asked %d times whether a connection was idle, of %d connections accepted: it asked some again", st.IdleAsks, st.Accepted)
	case h.acceptSpun():
		// (Reported as fd-bounds: what the datanode does at its fd limit.)
	case !roundRobin(h.dn.SelectorConns(), st.Accepted):
		h.fail(PropStats, "datanode's selectors were given %v connections of %d accepted: not round robin", h.dn.SelectorConns(), st.Accepted)
	case h.dnStarts != 1:
		// A crashed datanode's counters went with it.
	case st.Errors != errLogs:
		// Each error the datanode counts is one it logs as it closes the
		// connection (a read timeout, a failed op, a disk error...).
		h.fail(PropStats, "datanode counts %d errors; it logged %d (%v)", st.Errors, errLogs, dnErrorKinds)
	case h.dnProc.Logged("dn-read-error")-h.dnReadErrLogs < sendfileErrs:
		// A read whose sendfile the disk failed closes as a read error
		// (as HDFS does), not as a socket's write error.
		h.fail(PropStats, "datanode's sendfile failed reading the file %d times; it logged %d read errors", sendfileErrs, h.dnProc.Logged("dn-read-error")-h.dnReadErrLogs)
	case h.cfg.NoTransferTo && sendfiles > 0:
		h.fail(PropStats, "datanode configured to send reads through a buffer (no transferTo) made %d sendfile calls", sendfiles)
	case !h.cfg.NoTransferTo && sendfiles == 0 && h.dnSeen.bytesRead > 0:
		h.fail(PropStats, "datanode configured for transferTo made no sendfile call, yet the clients read %d bytes", h.dnSeen.bytesRead)
	case pool != nil && pool.Waited < h.dnSeen.waiting:
		h.fail(PropStats, "handle pool counts %d waits for a handle; %d reads were seen waiting at once", pool.Waited, h.dnSeen.waiting)
	case st.Ops < h.dnSeen.answered || st.Reads < h.dnSeen.reads || st.Writes < h.dnSeen.writes ||
		st.Errors < h.dnSeen.rejected || st.BytesSent < h.dnSeen.bytesRead:
		o := h.dnSeen
		h.fail(PropStats, "datanode counts %d ops (%d reads, %d writes), %d errors, %d bytes sent; the clients had %d ops answered (%d reads, %d writes succeeded), %d rejected, %d bytes read",
			st.Ops, st.Reads, st.Writes, st.Errors, st.BytesSent, o.answered, o.reads, o.writes, o.rejected, o.bytesRead)
	}
}

// dnErrorKinds are the events a datanode logs as it counts an error
// (DatanodeStats.Errors), one each.
var dnErrorKinds = []string{"dn-read-error", "dn-resume-timeout", "dn-send-timeout", "dn-stalled", "dn-write-stalled",
	"dn-request-timeout", "dn-read-timeout", "dn-op-error"}

// dnErrorLogs is how many error events p has logged.
func dnErrorLogs(p *sim.Process) int {
	n := 0
	for _, k := range dnErrorKinds {
		n += p.Logged(k)
	}
	return n
}

// roundRobin reports whether counts (connections per selector; none in
// threaded mode) add up to accepted and differ by at most one.
func roundRobin(counts []int, accepted int) bool {
	if len(counts) == 0 {
		return true
	}
	sum := 0
	for _, n := range counts {
		sum += n
	}
	return sum == accepted && slices.Max(counts)-slices.Min(counts) <= 1
}

// logKeys is the trace log schema of a check's runs: the model's events
// and the harness's own (sim.Config.LogKeys).
var logKeys = func() map[string][]string {
	keys := map[string][]string{
		"restart-failed": {"err"},
		"op":             {"i", "w", "op", "b"},
		"ret":            {"i", "st"},
	}
	for k, v := range model.LogKeys {
		keys[k] = v
	}
	return keys
}()

// reachableConns counts the connections the datanode can still reach,
// closed ones included (Datanode.VisitMemory).
func (h *harness) reachableConns() int {
	n := 0
	h.dn.VisitMemory(func(model.ConnMemory) { n++ })
	return n
}

// acceptPause is how long the datanode stops accepting after an accept
// failed for want of an fd (EMFILE leaves the connection queued).
const acceptPause = 10 * time.Millisecond

// acceptSpun fails fd-bounds if the datanode retried refused accepts
// faster than once per acceptPause: a listener that stays readable while
// the fd table is full would otherwise be retried in a busy loop.
func (h *harness) acceptSpun() bool {
	fails := h.dnProc.AcceptFailures() - h.dnAcceptFails
	up := h.w.Now() - h.dnStartedAt
	if bound := int(up/acceptPause) + 1; fails > bound {
		h.fail(PropFDBounds, "datanode's accepts failed for want of an fd %d times in %v: more than once per %v (bound %d), it does not pause", fails, up, acceptPause, bound)
		return true
	}
	return false
}
