package sim

import (
	"errors"
	"fmt"
	"testing"

	"xceiver/model"
)

// AF_UNIX stream flow control as in Linux: a send is cut into skbs of at
// most unixSkbMax bytes; the sender's sk_wmem_alloc holds each skb's
// truesize until the reader has consumed it all; no skb is allocated
// while wmem_alloc ≥ sndbuf, and the socket is writable again only at
// wmem_alloc × 4 ≤ sndbuf.
func TestUnixSkbsAndSendBuffer(t *testing.T) {
	h, sc, cc, _, _, _, _ := unixPair(t)
	sc.SetReadInterest(false)
	sndbuf := h.w.cfg.Unix.BufSize
	t0 := len(h.events)
	n, err := cc.Write(make([]byte, 100<<10))
	if n != 100<<10 || err != nil {
		t.Fatalf("write of 100 KiB = %d, %v", n, err)
	}
	var sizes []int64
	for _, e := range h.events[t0:] {
		if e.Kind == "uds" {
			sizes = append(sizes, e.A)
		}
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int64{unixSkbMax, unixSkbMax, 100<<10 - 2*unixSkbMax}) {
		t.Errorf("skbs of a 100 KiB send: %v", sizes)
	}
	// Fill the send buffer: skbs go while wmem_alloc < sndbuf.
	total := n
	for {
		k, err := cc.Write(make([]byte, 64<<10))
		total += k
		if errors.Is(err, model.ErrWouldBlock) {
			break
		}
		if err != nil || k == 0 {
			t.Fatalf("write: %d, %v", k, err)
		}
	}
	if cc.wmem < sndbuf || cc.wmem-(unixSkbMax+unixSkbOverhead) >= sndbuf {
		t.Errorf("wmem %d with sndbuf %d: want the last skb to have gone below sndbuf", cc.wmem, sndbuf)
	}
	h.runTo(h.now() + ms)
	if cc.readiness()&model.Writable != 0 {
		t.Errorf("writable with %d of %d bytes of send buffer in use", cc.wmem, sndbuf)
	}
	// Reading frees whole skbs only; writable once a quarter is in use.
	buf := make([]byte, 1000)
	read := 0
	for cc.readiness()&model.Writable == 0 {
		k, err := sc.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", read, err)
		}
		read += k
		if cc.wmem*4 <= sndbuf && cc.readiness()&model.Writable == 0 {
			t.Fatalf("not writable at wmem %d ≤ sndbuf/4", cc.wmem)
		}
	}
	if cc.wmem*4 > sndbuf || (cc.wmem+unixSkbMax+unixSkbOverhead)*4 <= sndbuf {
		t.Errorf("writable again at wmem %d (sndbuf %d): want the first skb boundary at or below a quarter", cc.wmem, sndbuf)
	}
	if read >= total {
		t.Errorf("read everything (%d bytes) before the writer could go on", read)
	}
}
