package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// On loopback a segment is received in the softirq of the syscall that
// sent it (loopback_xmit → netif_rx, processed by the sending CPU's
// net_rx_action before the syscall returns), and so is the ACK that
// processing sends back: the writer's thread pays for both
// (CPUConfig.Softirq each, the term the profile's fit takes out of a
// write that wakes a reader and out of loopback's send cost per KiB, two
// per segment). A first write to an idle reader draws a quick ACK: it
// costs the writer exactly two softirqs more than with none.
func TestInlineSegmentsChargeTheSendersSoftirq(t *testing.T) {
	run := func(softirq time.Duration) (write time.Duration, acks int) {
		cfg := DefaultConfig(1)
		cfg.CPU.Softirq = softirq
		ip := newInterleavePair(t, cfg, func(ip *interleavePair, p model.Process) {
			l := p.MainLoop()
			t0 := l.Now()
			if _, err := ip.cli.Write([]byte("ping")); err != nil {
				t.Errorf("write: %v", err)
			}
			write = l.Now() - t0
			acks = int(ip.cli.(*tcpConn).sndUna)
		})
		if len(ip.reads) != 1 || ip.reads[0].n != 4 {
			t.Fatalf("reads %v, want one of 4 bytes", ip.reads)
		}
		return write, acks
	}
	const s = 3 * us
	w0, a0 := run(0)
	w, a := run(s)
	if a0 != 4 || a != 4 {
		t.Fatalf("the write's bytes acknowledged within the write: %d without softirq cost, %d with; want 4 (a quick ACK, inline)", a0, a)
	}
	if w != w0+2*s {
		t.Errorf("write took %v with Softirq %v, %v without: want %v more (the data segment and its ACK, both processed on the writer's CPU)", w, s, w0, 2*s)
	}
}
