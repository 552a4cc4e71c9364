package rpc_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// ConnHeld, which check's bounded-memory test reads for a stuck client,
// reports the connection from the address asked for: a client that
// takes none of its three 100,000-byte answers holds answers in the
// server, one that reads its echo holds none, and an address with no
// connection is not found.
func TestConnHeldNamesTheConnectionAsked(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	type held struct {
		calls, pending int
		ok             bool
	}
	var stuck, reader, nobody held
	_, err := w.Spawn("server", model.ProcessConfig{Cores: 4}, func(p model.Process) {
		srv, err := rpc.StartServer(p, p.MainLoop(), &testService{}, rpc.ServerConfig{Addr: srvAddr, Readers: 1, Handlers: 2})
		if err != nil {
			w.Fail(err)
			return
		}
		p.(*sim.Process).SetSocketBuffers(4<<10, 0)
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			loop := cp.MainLoop()
			cp.(*sim.Process).SetSocketBuffers(0, 4<<10)
			s, err := cp.Dial("tcp", srvAddr, loop, func(model.Events) {})
			if err != nil {
				w.Fail(err)
				return
			}
			out := append([]byte(nil), rpc.Preamble[:]...)
			for id := uint32(1); id <= 3; id++ {
				out = rpc.AppendFrame(out, rpc.Frame{ID: id, Code: mBig, Payload: binary.BigEndian.AppendUint32(nil, 100000)})
			}
			writeAll(loop, s, &out, nil)
			var r model.Conn
			r, err = cp.Dial("tcp", srvAddr, loop, func(model.Events) {
				var b [1 << 10]byte
				for {
					if _, err := r.Read(b[:]); errors.Is(err, model.ErrWouldBlock) || err != nil {
						return
					}
				}
			})
			if err != nil {
				w.Fail(err)
				return
			}
			echo := rpc.AppendFrame(append([]byte(nil), rpc.Preamble[:]...), rpc.Frame{ID: 1, Code: mEcho, Payload: []byte("hello")})
			writeAll(loop, r, &echo, nil)
			loop.AfterFunc(5*time.Millisecond, func() {
				sAddr, rAddr := s.LocalAddr(), r.LocalAddr()
				p.MainLoop().Post(func() {
					stuck.calls, stuck.pending, stuck.ok = srv.ConnHeld(sAddr)
					reader.calls, reader.pending, reader.ok = srv.ConnHeld(rAddr)
					nobody.calls, nobody.pending, nobody.ok = srv.ConnHeld("nowhere:1")
					srv.Stop()
					loop.Post(func() {
						s.Abort()
						r.Close()
					})
				})
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if !stuck.ok || stuck.calls == 0 || stuck.pending == 0 {
		t.Errorf("the client taking no answers: %+v; want its calls taken and answers held", stuck)
	}
	if !reader.ok || reader.pending != 0 {
		t.Errorf("the client reading its echo: %+v; want found, no answer held", reader)
	}
	if nobody.ok {
		t.Errorf("no connection from nowhere:1, yet found %+v", nobody)
	}
}
