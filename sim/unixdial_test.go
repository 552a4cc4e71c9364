package sim_test

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// A read whose cached domain connection the datanode closed is retried on
// a fresh one while the accept queue is full; the op times out during the
// wait. Its next retry must not dial: it did, and sent the request on a
// connection no one closed (3 fds after Close against 2; the server saw 3
// requests). From a review of the dial retry.
func TestClientRedialStopsWhenTheOpTimedOut(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	const path = "/run/fake"
	var srvLoop model.Loop
	var ln model.Listener
	var connA model.Conn
	requests, accepted := 0, 0
	var accept func()
	serve := func(c model.Conn) {
		accepted++
		var in []byte
		c.SetHandler(srvLoop, func(ev model.Events) {
			var b [4096]byte
			for {
				n, err := c.Read(b[:])
				if n > 0 {
					in = append(in, b[:n]...)
					for {
						req, m, err := model.DecodeRequest(in)
						if err != nil {
							break
						}
						in = in[m:]
						requests++
						if requests == 1 {
							data := model.BlockContent(1, 100)
							out := model.AppendResponse(nil, model.Response{Status: model.StatusSuccess, ChecksumType: model.ChecksumCRC32C, BytesPerChecksum: model.BytesPerChecksum, GenStamp: 1, BlockLength: 100})
							out = model.AppendPacket(out, model.PacketHeader{}, data[req.Offset:req.Offset+req.Length], model.BytesPerChecksum)
							out = model.AppendPacketHeader(out, model.PacketHeader{Offset: 100, Seqno: 1, Last: true}, 0, model.BytesPerChecksum)
							c.Write(out)
						}
					}
					if len(in) == 2 { // the client's status
						in = in[:0]
					}
					continue
				}
				if errors.Is(err, model.ErrWouldBlock) {
					return
				}
				c.SetReadInterest(false)
				return
			}
		})
	}
	accept = func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if connA == nil {
				connA = c
			}
			serve(c)
		}
	}
	var results []model.Result
	var base, end, pendingAtRedial int
	_, err := w.Spawn("fake-dn", model.ProcessConfig{}, func(p model.Process) {
		srvLoop = p.MainLoop()
		var err error
		if ln, err = p.Listen("unix", path, 1, srvLoop); err != nil {
			w.Fail(err)
			return
		}
		ln.SetHandler(accept)
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			cl, err := model.NewClient(cp, cp.MainLoop(), 0, model.ClientConfig{Datanode: path, Network: "unix", Timeout: 50 * time.Millisecond, CacheCapacity: 4, CacheExpiry: 5 * time.Second})
			if err != nil {
				w.Fail(err)
				return
			}
			cl.Read(1, 0, 0, 100, func(r model.Result) {
				results = append(results, r)
				base = cp.FDs().Open - cl.Cached()
				srvLoop.Post(func() { ln.SetHandler(nil) }) // stop accepting
				w.Spawn("filler", model.ProcessConfig{}, func(fp model.Process) {
					if _, err := fp.Dial("unix", path, fp.MainLoop(), func(model.Events) {}); err != nil {
						w.Fail(err)
						return
					}
					cp.MainLoop().Post(func() {
						t0 := cp.MainLoop().Now()
						cl.Read(1, 0, 0, 100, func(r model.Result) {
							results = append(results, r)
							t.Logf("op 2 done at T0+%v: %v", cp.MainLoop().Now()-t0, r.Err)
						})
						srvLoop.AfterFunc(20*time.Millisecond, func() { _ = connA.Close() })
						srvLoop.AfterFunc(60*time.Millisecond, func() {
							pendingAtRedial = accepted
							ln.SetHandler(accept)
						})
						cp.MainLoop().AfterFunc(300*time.Millisecond, func() {
							st := cl.Stats()
							t.Logf("client stats %+v, in flight %d", st, cl.InFlight())
							cl.Close()
							end = cp.FDs().Open
							w.Stop()
						})
					})
				})
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	t.Logf("results %d, server saw %d requests on %d accepted conns (accepted %d before resuming)", len(results), requests, accepted, pendingAtRedial)
	if end != base {
		t.Errorf("client fds after Close: %d, baseline %d: a connection dialed after the op finished leaked", end, base)
	}
}
