package rpc_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// The client reports each close by the server of a connection it still
// holds (OnServerClose), as it saw it. An idle close, after the server's
// idle timeout (500 ms) with no call waiting, ends the stream. So does a
// stopped server's close, 100 ms after a call (2 s long) was made, with
// that call waiting. A stopped server that had left calls unread in its
// socket resets the connection: six calls of 30 KB, of which one handler
// and a queue of one take two, and the reader, blocked on the full
// queue, reads no further than its next call. check's availability
// property judges every server close by these reports, so a client that
// reported none, or no reset, would pass it whatever the server closed.
func TestClientReportsServerCloses(t *testing.T) {
	for _, c := range []struct {
		name    string
		calls   int
		payload int
		stop    bool
		reset   bool
	}{
		{"idle", 0, 0, false, false},
		{"stopped", 1, 1, true, false},
		{"stopped with input unread", 6, 30 << 10, true, true},
	} {
		var closes []rpc.ServerClose
		var errs []error
		ccfg := rpc.ClientConfig{IdleTimeout: time.Minute, OnServerClose: func(sc rpc.ServerClose) { closes = append(closes, sc) }}
		world(t, rpc.ServerConfig{Handlers: 1, QueueSize: 1, IdleTimeout: 500 * time.Millisecond}, ccfg, 1, func(e *env, _ int, p model.Process, cl *rpc.Client) {
			if !c.stop {
				cl.Call(srvAddr, mEcho, []byte("x"), func(r rpc.Reply) { errs = append(errs, r.Err) })
				return
			}
			for k := 0; k < c.calls; k++ {
				cl.Call(srvAddr, mHold, make([]byte, c.payload), func(r rpc.Reply) { errs = append(errs, r.Err) })
			}
			p.MainLoop().AfterFunc(100*time.Millisecond, func() { e.sp.MainLoop().Post(e.srv.Stop) })
		})
		if len(closes) != 1 {
			t.Errorf("%s: the client reported %d server closes (%+v), want 1", c.name, len(closes), closes)
			continue
		}
		sc := closes[0]
		if sc.Reset != c.reset {
			t.Errorf("%s: reported %+v, want a reset %v", c.name, sc, c.reset)
		}
		if !c.stop {
			if len(errs) != 1 || errs[0] != nil || sc.Waiting != 0 || sc.Silent < 500*time.Millisecond {
				t.Errorf("%s: call errors %v; reported %+v, want the call answered, none waiting and the connection silent for the idle timeout", c.name, errs, sc)
			}
			continue
		}
		failed := 0
		for _, err := range errs {
			if errors.Is(err, rpc.ErrConnection) {
				failed++
			}
		}
		if failed != c.calls || sc.Waiting != c.calls || sc.OldestAge < 100*time.Millisecond || sc.OldestAge > 101*time.Millisecond {
			t.Errorf("%s: %d of %d calls failed on the connection; reported %+v, want all %d waiting, the oldest made 100 ms before", c.name, failed, c.calls, sc, c.calls)
		}
	}
}

// The fault knobs that make a connection (PieceWrites, SendRaw) return
// the error when they cannot, as Call fails its call: on a closed client
// they refuse with ErrConnection, and make no connection. (PieceWrites
// going on without one set its knob on a nil connection: a panic.)
func TestFaultKnobsOnAClosedClientFail(t *testing.T) {
	var pieceErr, rawErr error
	conns := -1
	world(t, rpc.ServerConfig{}, rpc.ClientConfig{}, 1, func(e *env, _ int, p model.Process, cl *rpc.Client) {
		cl.Close()
		pieceErr = cl.PieceWrites(srvAddr, 1, 0)
		rawErr = cl.SendRaw(srvAddr, []byte("x"))
		conns = cl.Conns()
	})
	if !errors.Is(pieceErr, rpc.ErrConnection) || !errors.Is(rawErr, rpc.ErrConnection) || conns != 0 {
		t.Errorf("on a closed client PieceWrites returned %v and SendRaw %v, with %d connections made; want ErrConnection from both, and none", pieceErr, rawErr, conns)
	}
}

// A client's Close stops every timer it armed for a connection: the
// idle close armed once a connection has no call outstanding, a call's
// timeout, and the gap between a call's pieces (PieceWrites). One left
// armed fires up to 10 s (here) after the client is gone, and keeps a
// simulated world running until then. Once closed, the client's process
// holds no timer, whether it closed with its call answered or half sent.
func TestClosedClientHoldsNoTimers(t *testing.T) {
	for _, pieces := range []bool{false, true} {
		timers := -1
		ccfg := rpc.ClientConfig{IdleTimeout: 10 * time.Second, CallTimeout: 10 * time.Second}
		world(t, rpc.ServerConfig{}, ccfg, 1, func(e *env, _ int, p model.Process, cl *rpc.Client) {
			closeNow := func() {
				cl.Close()
				timers = p.(*sim.Process).Resources().Timers
			}
			if pieces {
				// Closed with the call half sent: its timeout and the
				// next piece's gap armed.
				cl.PieceWrites(srvAddr, 1, 10*time.Second)
				cl.Call(srvAddr, mEcho, []byte("x"), func(rpc.Reply) {})
				p.MainLoop().AfterFunc(time.Millisecond, closeNow)
				return
			}
			// Closed once the call is answered: the idle close armed.
			cl.Call(srvAddr, mEcho, []byte("x"), func(rpc.Reply) { p.MainLoop().Post(closeNow) })
		})
		if timers != 0 {
			t.Errorf("closed with a call's pieces in flight %v: the client's process holds %d timers after Close, want none", pieces, timers)
		}
	}
}

// A call longer than the client's send buffer goes out as the socket
// makes room: the client waits for the writable event, with no timer of
// its own. The gap timer is PieceWrites' alone: armed after a short
// write of a whole-call send, it would poll at a gap of 0, a wake-up and
// a write that would block for every short write of the call, CPU that
// no latency shows. With no call timeout, the client holds no timer while
// its call is outstanding.
func TestShortSendWaitsForRoomNotATimer(t *testing.T) {
	payload := make([]byte, 256<<10)
	var (
		cp                  *sim.Process
		outstanding, sent   bool
		maxTimers, answered int
	)
	worldEach(t, rpc.ServerConfig{}, rpc.ClientConfig{IdleTimeout: 10 * time.Second}, 1, func(e *env) {
		if outstanding {
			maxTimers = max(maxTimers, cp.Resources().Timers)
		}
	}, func(e *env, _ int, p model.Process, cl *rpc.Client) {
		cp = p.(*sim.Process)
		// 4 KiB of send buffer: the 256 KiB call takes dozens of writes.
		cp.SetSocketBuffers(4<<10, 0)
		// A first call makes the connection, so the long one is written
		// from Call on a connection already up.
		cl.Call(srvAddr, mEcho, []byte("x"), func(rpc.Reply) {
			outstanding, sent = true, true
			cl.Call(srvAddr, mEcho, payload, func(r rpc.Reply) {
				outstanding = false
				if r.Err == nil && len(r.Payload) == len(payload) {
					answered++
				}
			})
		})
	})
	if !sent || answered != 1 {
		t.Fatalf("the 256 KiB call: sent %v, answered in full %d times; want sent and answered once", sent, answered)
	}
	if maxTimers != 0 {
		t.Errorf("the client held up to %d timers while its 256 KiB call was outstanding (no call timeout); want none", maxTimers)
	}
}

// CallView hands done the answer where it lies in the client's input,
// each call its own (answers back to back, in one read and across
// reads); Call's answers stay the caller's after later answers come.
func TestCallViewAnswers(t *testing.T) {
	const calls = 40
	viewed, kept := 0, map[int][]byte{}
	want := func(k int) []byte {
		b := make([]byte, 100+k*997)
		for i := range b {
			b[i] = byte(k)
		}
		return b
	}
	world(t, rpc.ServerConfig{}, rpc.ClientConfig{}, 1, func(e *env, _ int, p model.Process, cl *rpc.Client) {
		for k := range calls {
			if k%2 == 0 {
				cl.CallView(srvAddr, mEcho, want(k), func(r rpc.Reply) {
					if r.Err != nil || !bytes.Equal(r.Payload, want(k)) {
						t.Errorf("view %d: %d bytes, error %v", k, len(r.Payload), r.Err)
					}
					viewed++
				})
				continue
			}
			cl.Call(srvAddr, mEcho, want(k), func(r rpc.Reply) { kept[k] = r.Payload })
		}
		p.MainLoop().AfterFunc(time.Second, func() { cl.Close() })
	})
	if viewed != calls/2 || len(kept) != calls/2 {
		t.Fatalf("%d views and %d calls answered, want %d each", viewed, len(kept), calls/2)
	}
	for k, b := range kept {
		if !bytes.Equal(b, want(k)) {
			t.Errorf("call %d: its answer changed after it came (%d bytes)", k, len(b))
		}
	}
}
