package shortcircuit_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
)

// rawResult is what a raw domain peer got back.
type rawResult struct {
	got    []byte
	files  []model.File
	closed bool
}

// take reads what c has, bytes and fds, until it would block; true once
// the peer has closed (or the read failed).
func (r *rawResult) take(c model.Conn) bool {
	for !r.closed {
		var buf [512]byte
		n, files, err := c.ReadFDs(buf[:])
		r.got = append(r.got, buf[:n]...)
		r.files = append(r.files, files...)
		if errors.Is(err, model.ErrWouldBlock) {
			return false
		}
		if err != nil || n == 0 {
			r.closed = true
		}
	}
	return true
}

// rawExchange sends b on a fresh domain connection and collects the reply
// (and fds) until the datanode closes or wait passes; keep leaves the
// connection open (for a segment's) and hands it to then.
func rawExchange(p model.Process, path string, b []byte, wait time.Duration, then func(rawResult, model.Conn)) {
	loop := p.MainLoop()
	var res rawResult
	var c model.Conn
	sent, done := false, false
	end := func() {
		if done {
			return
		}
		done = true
		then(res, c)
	}
	c, err := p.Dial("unix", path, loop, func(ev model.Events) {
		if done {
			return
		}
		if !sent && ev&model.Writable != 0 {
			sent = true
			c.Write(b)
			c.SetWriteInterest(false)
		}
		if res.take(c) {
			c.Close()
			end()
		}
	})
	if err != nil {
		p.World().Fail(err)
		return
	}
	c.SetWriteInterest(true)
	loop.AfterFunc(wait, end)
}

func fdsReq(block, stamp, shm uint64, slot uint32, tok []byte) []byte {
	return shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestFDs, BlockID: block, Stamp: stamp, ShmID: shm, Slot: slot, Token: tok})
}

func goodToken(block, stamp uint64) []byte {
	return model.IssueToken(model.DefaultTokenKey, model.BlockToken{BlockID: block, GenStamp: stamp, Modes: model.ModeRead, Expiry: time.Hour})
}

// badInput sends each kind of bad request to the domain socket: each gets
// an error status, no fd and a closed connection; a normal short-circuit
// read works after them all; nothing leaks on either side.
func badInput(t *testing.T, w model.World, tcpAddr, path string) {
	type outcome struct {
		name   string
		status model.Status
		files  int
		closed bool
	}
	var outs []outcome
	var after rest
	var normal model.Result
	e := startEnv(t, w, tcpAddr, path, shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{}, func(e *env) {
		p := e.cp
		record := func(name string, next func()) func(rawResult, model.Conn) {
			return func(r rawResult, c model.Conn) {
				if !r.closed {
					c.Close() // the datanode waited: give up
				}
				o := outcome{name: name, files: len(r.files), closed: r.closed, status: 999}
				if resp, _, err := shortcircuit.DecodeResponse(r.got); err == nil {
					o.status = resp.Status
				} else if resp, _, err := model.DecodeResponse(r.got); err == nil {
					o.status = resp.Status
				}
				for _, f := range r.files {
					f.Close()
				}
				outs = append(outs, o)
				next()
			}
		}
		const wait = 2 * time.Second
		var shmConn model.Conn
		var shmID uint64
		steps(
			func(next func()) {
				rawExchange(p, path, []byte("GET / HTTP/1.1\r\n\r\n"), wait, record("garbage", next))
			},
			func(next func()) {
				b := fdsReq(1, 0, 1, 0, goodToken(1, 0))
				b[2] = 99
				rawExchange(p, path, b, wait, record("unknown op", next))
			},
			func(next func()) {
				rawExchange(p, path, fdsReq(1, 0, 1, 0, model.IssueToken([]byte("forged"), model.BlockToken{BlockID: 1, Modes: model.ModeRead, Expiry: time.Hour})), wait, record("forged token", next))
			},
			func(next func()) {
				rawExchange(p, path, fdsReq(1, 0, 1, 0, nil), wait, record("no token", next))
			},
			func(next func()) {
				// A segment, kept open, for the slot cases.
				rawExchange(p, path, shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "raw"}), 200*time.Millisecond, func(r rawResult, c model.Conn) {
					resp, _, err := shortcircuit.DecodeResponse(r.got)
					if err != nil || len(r.files) != 1 || r.closed {
						e.w.Fail(fmt.Errorf("segment request: %v, %d files, closed %v", err, len(r.files), r.closed))
						return
					}
					r.files[0].Close()
					shmConn, shmID = c, resp.ShmID
					next()
				})
			},
			func(next func()) {
				rawExchange(p, path, fdsReq(77, 0, shmID, 0, goodToken(77, 0)), wait, record("missing block", next))
			},
			func(next func()) {
				rawExchange(p, path, fdsReq(1, 1<<40, shmID, 0, goodToken(1, 1<<40)), wait, record("wrong stamp", next))
			},
			func(next func()) {
				rawExchange(p, path, fdsReq(1, 0, shmID, shortcircuit.SlotsPerSegment, goodToken(1, 0)), wait, record("slot out of range", next))
			},
			func(next func()) {
				rawExchange(p, path, fdsReq(1, 0, shmID^2, 0, goodToken(1, 0)), wait, record("unknown segment", next))
			},
			func(next func()) {
				rawExchange(p, path, shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpReleaseSlot, ShmID: shmID, Slot: 3}), wait, record("release never allocated", next))
			},
			func(next func()) {
				b := fdsReq(1, 0, shmID, 0, goodToken(1, 0))
				rawExchange(p, path, b[:len(b)-5], 300*time.Millisecond, record("truncated", next))
			},
			func(next func()) {
				// A second segment asked for on the segment's connection:
				// the connection carries nothing after its segment, so the
				// datanode hangs up and frees the first (it served a second
				// and lost the first).
				var r rawResult
				shmConn.SetHandler(p.MainLoop(), func(model.Events) {
					r.take(shmConn)
				})
				shmConn.Write(shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "raw"}))
				p.MainLoop().AfterFunc(200*time.Millisecond, func() { record("second segment", next)(r, shmConn) })
			},
			func(next func()) {
				// The raw client holding a segment vanishes: the datanode
				// frees it.
				shmConn.Close()
				e.cl.Read(3, 0, 0, 100, func(r model.Result) {
					normal = r
					next()
				})
			},
			e.finish(&after),
		)
	})
	want := map[string]model.Status{
		"garbage": model.StatusErrorInvalid, "unknown op": model.StatusErrorUnsupported,
		"forged token": model.StatusErrorAccessToken, "no token": model.StatusErrorAccessToken,
		"missing block": model.StatusErrorInvalid, "wrong stamp": model.StatusErrorInvalid,
		"slot out of range": model.StatusErrorInvalid, "unknown segment": model.StatusErrorInvalid,
		"release never allocated": model.StatusErrorInvalid,
	}
	if len(outs) != len(want)+2 {
		t.Fatalf("%d outcomes: %+v", len(outs), outs)
	}
	for _, o := range outs {
		if o.name == "second segment" {
			if o.files != 0 || !o.closed {
				t.Errorf("second segment on a segment's connection: %+v; want no fd and the connection closed", o)
			}
			continue
		}
		if o.name == "truncated" {
			if o.files != 0 || o.closed {
				t.Errorf("truncated request: %+v; want the datanode to wait for the rest", o)
			}
			continue
		}
		if o.status != want[o.name] || o.files != 0 || !o.closed {
			t.Errorf("%s: status %v, %d fds, closed %v; want %v, none, closed", o.name, o.status, o.files, o.closed, want[o.name])
		}
	}
	if normal.Err != nil || e.cl.Stats().LocalReads != 1 {
		t.Errorf("normal read after bad input: %v, stats %+v", normal.Err, e.cl.Stats())
	}
	e.checkRest(t, after)
}

func TestBadInputSim(t *testing.T) {
	badInput(t, simWorld(), "dn:50010", "/run/hdfs/dn_socket")
}

func TestBadInputReal(t *testing.T) {
	w, closeWorld := realWorld(t)
	badInput(t, w, "127.0.0.1:0", "dn_socket")
	if err := closeWorld(); err != nil {
		t.Error(err)
	}
}

// A request that arrives a byte at a time (a sender whose writes the
// kernel delivers in pieces) is served once it is whole: the datanode
// looks at the op byte only once it has come.
func TestRequestInPiecesIsServed(t *testing.T) {
	var res rawResult
	var after rest
	e := startEnvCfg(t, simWorld(), shortcircuit.ServerBugs{}, func(e *env) {
		p := e.cp
		loop := p.MainLoop()
		req := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "dribble"})
		steps(
			func(next func()) {
				var c model.Conn
				c, err := p.Dial("unix", "/run/dn_socket", loop, func(model.Events) {
					res.take(c)
				})
				if err != nil {
					e.w.Fail(err)
					return
				}
				for i := range req {
					loop.AfterFunc(time.Duration(i+1)*time.Millisecond, func() { c.Write(req[i : i+1]) })
				}
				loop.AfterFunc(time.Duration(len(req)+10)*time.Millisecond, func() {
					for _, f := range res.files {
						f.Close()
					}
					c.Close()
					loop.AfterFunc(10*time.Millisecond, next)
				})
			},
			e.finish(&after),
		)
	})
	resp, _, err := shortcircuit.DecodeResponse(res.got)
	if err != nil || resp.Status != model.StatusSuccess || resp.Size != shortcircuit.SegmentSize || len(res.files) != 1 || res.closed {
		t.Errorf("a segment request sent a byte at a time: %+v (%v), %d fds, closed %v; want a segment, its fd, the connection open", resp, err, len(res.files), res.closed)
	}
	e.checkRest(t, after)
}
