package sim

import (
	"testing"
	"time"
)

// close(2) with nothing unread is an orderly close (tcp_close: no data
// lost, so tcp_send_fin queues the FIN behind the write queue). The
// socket, orphaned, keeps sending: what the peer's window held back at
// the close leaves as the peer's ACKs open the window, then the FIN
// (FIN_WAIT1). Once the FIN is ACKed (FIN_WAIT2), the peer's own FIN is
// ACKed and the socket goes to TIME_WAIT (tcp_rcv_state_process, tcp_fin),
// never reset: a reset is only for data arriving after the close
// (LINUX_MIB_TCPABORTONDATA) or data left unread at it.
func TestClosedSocketStillDeliversQueuedDataThenFin(t *testing.T) {
	h := newPair(t)
	h.srv.setAutoRead(false) // the window fills: part of the write waits
	t0 := h.now()
	const n = 400 << 10
	h.cli.write(n)
	h.runTo(t0 + ms)
	held := int(h.cli.c.sndEnd - h.cli.c.sndNxt)
	if held == 0 {
		t.Fatalf("setup: the whole write left before the close, want part held by the window")
	}
	if err := h.cli.c.Close(); err != nil {
		t.Fatal(err)
	}
	h.runTo(t0 + 2*ms)
	h.srv.setAutoRead(true) // the server reads: each read opens the window
	h.runTo(t0 + 500*ms)
	h.srv.checkGot(n)
	if !h.srv.eof {
		t.Fatalf("server saw no EOF after the %d bytes (%d were held by the window at the close)", n, held)
	}
	if h.srv.err != nil {
		t.Fatalf("server error %v", h.srv.err)
	}
	// The server closes in turn: its FIN reaches the client in FIN_WAIT2.
	t1 := h.now()
	if err := h.srv.c.Close(); err != nil {
		t.Fatal(err)
	}
	h.runTo(t1 + time.Second)
	for _, s := range h.segs {
		if s.has('R') {
			t.Errorf("%v: %s sent a reset, want an orderly close on both sides", s.T-t0, s.From)
		}
	}
	if !h.srv.c.finAckd || h.srv.err != nil {
		t.Errorf("the server's FIN acknowledged: %v, server error %v; want it ACKed in FIN_WAIT2 and no error", h.srv.c.finAckd, h.srv.err)
	}
	if h.cli.c.state != tcpClosed || h.cli.c.err != nil {
		t.Errorf("client state %d error %v, want closed (TIME_WAIT) without error", h.cli.c.state, h.cli.c.err)
	}
}
