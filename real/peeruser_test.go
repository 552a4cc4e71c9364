package real

import (
	"fmt"
	"os"
	"testing"
	"time"

	"xceiver/model"
)

// A listener tells who connected to its Unix socket (SO_PEERCRED): the
// datanode bounds each user's shared-memory segments by it. A TCP
// connection tells no one.
func TestPeerUserOfAUnixConnection(t *testing.T) {
	w := newWorld(t)
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen("unix", "dn_socket", 4, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	var accepted, dialled string
	acceptAll(srv, ln, func(c model.Conn) {
		accepted = model.PeerUser(c)
		c.Close()
		srv.MainLoop().AfterFunc(20*time.Millisecond, w.Stop)
	})
	spawn(t, w, "cl", 0, func(p model.Process) {
		c, err := p.Dial("tcp", "127.0.0.1:1", p.MainLoop(), func(model.Events) {})
		if err == nil {
			dialled = model.PeerUser(c)
			c.Close()
		}
		if _, err := p.Dial("unix", "dn_socket", p.MainLoop(), func(model.Events) {}); err != nil {
			failf(p, "dial: %v", err)
		}
	})
	run(t, w, 5*time.Second)
	if want := fmt.Sprintf("uid %d", os.Getuid()); accepted != want {
		t.Errorf("accepted Unix connection's peer user %q, want %q", accepted, want)
	}
	if dialled != "" {
		t.Errorf("TCP connection's peer user %q, want none", dialled)
	}
}
