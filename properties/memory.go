package properties

import (
	"fmt"

	"xceiver/model"
)

// Bounds of the bounded-memory property, beside the drawn MaxBuffered.
const (
	// connFixed bounds what a connection buffers besides a write's data:
	// its input buffer (a request or a packet, grown by doubling), its
	// own packet buffer and one borrowed from its selector.
	connFixed = 2*(model.MaxPacketLen+4096) + 2*(model.PacketHeaderLen+model.MaxPacketLen+64)
	// writeSlack is what a write's buffer may hold beyond twice what
	// arrived (growth by doubling).
	writeSlack = 64 << 10
)

// checkMemory checks the datanode's buffers after an event: a closed
// connection holds nothing; a connection holds at most connFixed beside
// its write data, and write data grows only with data that arrived; an
// open connection holds reserved against MaxBuffered exactly its write
// data's capacity (it reserves before growing and gives back as it lets
// go, in the same event); the write data of all connections stays under
// MaxBuffered.
//
// It looks only at the connections whose buffers changed in the event
// and keeps the total as a running sum (Datanode.VisitMemoryChanges):
// scanning every connection after every event was a fifth of a datanode
// seed's CPU. Every Options.MemoryScan checks it scans all of them too
// (Datanode.VisitMemory) and fails if the scan finds what the running
// accounting did not: a connection over a bound, another total, or a
// connection whose buffers differ from what the accounting last saw of
// it (ConnMemory.Unaccounted: a change without memChanged, one that
// moves no write data included). By default the scans are
// DefaultMemoryScan checks apart, or as many as the last scan visited
// connections if that is more: a flood of idle connections holds
// hundreds, and nearly every event of its run is the datanode's, so a
// scan every 64 had become a seventh of such a seed's CPU. Spread that
// way a scan costs about one connection a check. A change the
// accounting missed shows only until that connection's next accounted
// change, so the spacing moves which seeds catch one rather than how
// many: with memChanged made a no-op, datanode seeds 1-3,000 failed 208
// times with a scan every 64 checks and 209 with the spacing, comparing
// the totals alone (a review's run, 4 December), and 2,844 comparing
// each connection too.
func (h *harness) checkMemory() {
	dn := h.dn
	if dn == nil || h.dnProc.Crashed() {
		return
	}
	var mc memCheck
	total := dn.VisitMemoryChanges(mc.visit)
	h.memChecks++
	every := h.opt.MemoryScan
	if every <= 0 {
		every = max(DefaultMemoryScan, h.memScanned)
	}
	if mc.why == "" && h.memChecks-h.memScanAt >= every {
		var scan memCheck
		dn.VisitMemory(scan.visit)
		h.memScanAt, h.memScanned = h.memChecks, scan.n
		if scan.why != "" || scan.total != total || scan.unseen {
			h.fail(PropMemory, "the running memory accounting (%d bytes of write data, no connection over a bound) disagrees with a scan of every connection (%d bytes%s%s): a buffer changed without Datanode.memChanged",
				total, scan.total, scan.reason(), scan.unaccountedReason())
			return
		}
	}
	if mc.why != "" {
		defer h.failPeer("memory-" + mc.why)
	}
	bad := mc.bad
	switch {
	case mc.why == "closed":
		h.fail(PropMemory, "closed connection %d still holds %d bytes of buffers (%d of write data), reachable from the datanode",
			bad.Conn, bad.Buffered, bad.WriteData)
	case mc.why == "fixed":
		h.fail(PropMemory, "connection %d buffers %d bytes besides write data, bound %d (phase %s)",
			bad.Conn, bad.Buffered-bad.WriteData, connFixed, bad.Phase)
	case mc.why == "reserved":
		h.fail(PropMemory, "connection %d holds %d bytes reserved against MaxBuffered for %d bytes of write data, phase %s",
			bad.Conn, bad.Reserved, bad.WriteData, bad.Phase)
	case mc.why == "unreceived":
		h.fail(PropMemory, "connection %d holds %d bytes of write data having received %d bytes (bound 2×received + %d), phase %s",
			bad.Conn, bad.WriteData, bad.Received, writeSlack, bad.Phase)
	case dn.ReservedWriteBytes() < total:
		// A write's buffer grows only after its growth is reserved, and
		// its reservation goes only once the buffer has.
		h.fail(PropMemory, "the datanode has reserved %d bytes against MaxBuffered, but its connections hold %d bytes of write data", dn.ReservedWriteBytes(), total)
	case h.cfg.MaxBuffered > 0 && total > h.cfg.MaxBuffered:
		defer h.failPeer("memory-total")
		h.fail(PropMemory, "the datanode buffers %d bytes of write data, bound %d", total, h.cfg.MaxBuffered)
	}
}

// memCheck judges connections one at a time and keeps the first over a
// bound.
type memCheck struct {
	why   string
	bad   model.ConnMemory // a copy: taking m's address would allocate per visit
	total int
	n     int // connections visited
	// unseen: a connection's buffers changed unseen (a scan's only);
	// stale is the first such.
	unseen bool
	stale  model.ConnMemory
}

func (c *memCheck) visit(m model.ConnMemory) {
	c.n++
	c.total += m.WriteData
	if m.Unaccounted && !c.unseen {
		c.unseen, c.stale = true, m
	}
	if c.why != "" {
		return
	}
	switch {
	case m.Closed && m.Buffered > 0:
		c.why = "closed"
	case m.Buffered-m.WriteData > connFixed:
		c.why = "fixed"
	case int64(m.WriteData) > 2*m.Received+writeSlack:
		c.why = "unreceived"
	case !m.Closed && m.Reserved != m.WriteData:
		c.why = "reserved"
	default:
		return
	}
	c.bad = m
}

func (c *memCheck) unaccountedReason() string {
	if m := c.stale; c.unseen {
		return fmt.Sprintf(", and connection %d changed unseen: %d bytes buffered, %d of write data, %d reserved, closed %v, phase %s",
			m.Conn, m.Buffered, m.WriteData, m.Reserved, m.Closed, m.Phase)
	}
	return ""
}

func (c *memCheck) reason() string {
	if c.why == "" {
		return ""
	}
	return fmt.Sprintf(", and connection %d over its %s bound in phase %s", c.bad.Conn, c.why, c.bad.Phase)
}
