package rpc_test

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// A call whose connection cannot be made (no fd left for its socket: the
// process is at its limit) fails at once with ErrConnection, and the client
// holds nothing for it. check's clients always have fds to dial with, so
// none held this path; a client that took the failed dial for a
// connection used a socket it never got.
func TestCallFailsWhenItCannotDial(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var rep *rpc.Reply
	var outstanding, conns int
	// The main loop holds two fds (an epoll and an eventfd): none is left.
	_, err := w.Spawn("client", model.ProcessConfig{FDLimit: 2}, func(p model.Process) {
		cl, err := rpc.NewClient(p, p.MainLoop(), rpc.ClientConfig{})
		if err != nil {
			t.Error(err)
			return
		}
		cl.Call(srvAddr, mEcho, []byte("x"), func(r rpc.Reply) { rep = &r })
		outstanding, conns = cl.Outstanding(), cl.Conns()
		cl.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	switch {
	case rep == nil:
		t.Fatal("the call never ended")
	case !errors.Is(rep.Err, rpc.ErrConnection) || !errors.Is(rep.Err, model.ErrTooManyFiles):
		t.Errorf("the call with no fd to dial with: error %v; want ErrConnection, EMFILE", rep.Err)
	}
	if outstanding != 0 || conns != 0 {
		t.Errorf("after the failed dial the client holds %d calls and %d connections, want none", outstanding, conns)
	}
}
