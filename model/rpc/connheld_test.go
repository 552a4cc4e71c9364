package rpc_test

import (
	"encoding/binary"
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
	type held struct {
		calls, pending int
		ok             bool
	}
	var stuck, reader, nobody held
	world(t, rpc.ServerConfig{Readers: 1, Handlers: 2}, rpc.ClientConfig{}, 1, func(e *env, _ int, cp model.Process, _ *rpc.Client) {
		loop := cp.MainLoop()
		e.sp.SetSocketBuffers(4<<10, 0)
		cp.(*sim.Process).SetSocketBuffers(0, 4<<10)
		s, err := cp.Dial("tcp", srvAddr, loop, func(model.Events) {})
		if err != nil {
			e.w.Fail(err)
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
				if _, err := r.Read(b[:]); err != nil {
					return // (ErrWouldBlock: read all there is)
				}
			}
		})
		if err != nil {
			e.w.Fail(err)
			return
		}
		echo := rpc.AppendFrame(append([]byte(nil), rpc.Preamble[:]...), rpc.Frame{ID: 1, Code: mEcho, Payload: []byte("hello")})
		writeAll(loop, r, &echo, nil)
		loop.AfterFunc(5*time.Millisecond, func() {
			sAddr, rAddr := s.LocalAddr(), r.LocalAddr()
			e.sp.MainLoop().Post(func() {
				stuck.calls, stuck.pending, stuck.ok = e.srv.ConnHeld(sAddr)
				reader.calls, reader.pending, reader.ok = e.srv.ConnHeld(rAddr)
				nobody.calls, nobody.pending, nobody.ok = e.srv.ConnHeld("nowhere:1")
				loop.Post(func() {
					s.Abort()
					r.Close()
				})
			})
		})
	})
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
