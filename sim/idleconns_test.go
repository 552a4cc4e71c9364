package sim

import (
	"slices"
	"testing"

	"xceiver/model"
)

// IdleTCPConns, which the idle-vanish fault picks its victim from, lists
// a process's established connections with nothing in flight and nothing
// unread either way: not one with bytes its peer has not read, not one
// still connecting, not one whose fd is closed.
func TestIdleTCPConnsListsOnlyQuietEstablished(t *testing.T) {
	h := newPair(t)
	id := h.cli.c.id
	want := func(what string, ids ...uint64) {
		t.Helper()
		if got := h.cli.p.IdleTCPConns(); !slices.Equal(got, ids) {
			t.Errorf("%s: idle %v, want %v", what, got, ids)
		}
	}
	want("a quiet established pair", id)
	h.srv.setAutoRead(false)
	h.cli.write(100)
	h.runTo(h.now() + ms)
	want("100 bytes unread by the peer")
	h.srv.setAutoRead(true)
	h.runTo(h.now() + 100*ms)
	want("read and acknowledged", id)
	c, err := h.cli.p.Dial("tcp", harnessAddr, h.cli.p.MainLoop(), func(model.Events) {})
	if err != nil {
		t.Fatal(err)
	}
	want("a second connection still connecting", id)
	h.runTo(h.now() + ms)
	want("both established", id, c.(*tcpConn).id)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want("the second one's fd closed", id)
}
