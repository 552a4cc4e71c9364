package sim

import (
	"errors"
	"testing"

	"xceiver/model"
)

// A socket has one retransmission timer (icsk_retransmit_timer), and
// writing more while data is unacknowledged does not restart it (the
// writes here are held back by Nagle, so nothing new is sent; new data
// sent would not restart it either: tcp_event_new_data_sent re-arms the
// RTO only when nothing was in flight). So how long a connection whose
// peer vanished lasts (tcp_write_timeout: retransmits_timed_out) counts
// from its first unacknowledged send, however often the application
// writes after it.
// Here: RTOMin steps from the first write's push, failing with ETIMEDOUT
// exactly RetryLimit after it (both on the RTO's 200 ms grid), not
// RetryLimit after the last write made before the first timeout.
func TestWritesAfterVanishDoNotRestartRetransmitTimeout(t *testing.T) {
	h := newPair(t)
	t0 := h.now()
	if !h.w.VanishConn(h.cli.c.id) {
		t.Fatal("VanishConn found nothing")
	}
	first := t0 + 10*ms
	h.runTo(first)
	h.cli.write(1000) // unacknowledged: arms the timer
	h.runTo(t0 + 50*ms)
	h.cli.write(1000) // Nagle holds it; the timer runs on
	h.runTo(t0 + 150*ms)
	h.cli.write(1000)
	limit := h.w.Config().TCP.RetryLimit
	if limit%h.w.Config().TCP.RTOMin != 0 {
		t.Fatalf("setup: RetryLimit %v not a multiple of RTOMin %v", limit, h.w.Config().TCP.RTOMin)
	}
	h.runTo(first + limit - us)
	if err := h.cli.c.err; err != nil {
		t.Fatalf("failed %v after the first write, before the retry limit %v: %v", h.now()-first, limit, err)
	}
	h.runTo(first + limit)
	if err := h.cli.c.err; !errors.Is(err, model.ErrTimedOut) {
		t.Fatalf("%v after the first unacknowledged write: error %v, want ETIMEDOUT (the later writes must not restart the timeout)", limit, err)
	}
}
