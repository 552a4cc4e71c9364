package properties

import (
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
// its write data, and write data grows only with data that arrived; the
// write data of all connections stays under MaxBuffered.
func (h *harness) checkMemory() {
	dn := h.dn
	if dn == nil || h.dnProc.Crashed() {
		return
	}
	var bad model.ConnMemory // a copy: taking m's address would allocate per visit
	why := ""
	total := 0
	dn.VisitMemory(func(m model.ConnMemory) {
		total += m.WriteData
		if why != "" {
			return
		}
		switch {
		case m.Closed && m.Buffered > 0:
			why = "closed"
		case m.Buffered-m.WriteData > connFixed:
			why = "fixed"
		case int64(m.WriteData) > 2*m.Received+writeSlack:
			why = "unreceived"
		default:
			return
		}
		bad = m
	})
	if why != "" {
		defer h.failPeer("memory-" + why)
	}
	switch {
	case why == "closed":
		h.fail(PropMemory, "closed connection %d still holds %d bytes of buffers (%d of write data), reachable from the datanode",
			bad.Conn, bad.Buffered, bad.WriteData)
	case why == "fixed":
		h.fail(PropMemory, "connection %d buffers %d bytes besides write data, bound %d (phase %s)",
			bad.Conn, bad.Buffered-bad.WriteData, connFixed, bad.Phase)
	case why == "unreceived":
		h.fail(PropMemory, "connection %d holds %d bytes of write data having received %d bytes (bound 2×received + %d), phase %s",
			bad.Conn, bad.WriteData, bad.Received, writeSlack, bad.Phase)
	case h.cfg.MaxBuffered > 0 && total > h.cfg.MaxBuffered:
		defer h.failPeer("memory-total")
		h.fail(PropMemory, "the datanode buffers %d bytes of write data, bound %d", total, h.cfg.MaxBuffered)
	}
}
