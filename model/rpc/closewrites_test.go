package rpc_test

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// echoRun is how a run of echoes ended: calls answered with their own
// bytes, answered with other bytes, failed; and both sides' counts.
type echoRun struct {
	right, wrong, failed int
	cl                   rpc.ClientStats
	srv                  rpc.ServerStats
}

// echoes has one client ask for n echoes of size bytes (at least 2), each
// call's bytes its own, reading through a receive buffer of rcv bytes from a server
// whose send buffer is 4 KiB: the server's answers outrun what the
// client takes, and queue for the responder. then, if set, runs on the
// client's loop once the calls are made.
func echoes(t *testing.T, scfg rpc.ServerConfig, n, size, rcv int, then func(e *env, p model.Process, cl *rpc.Client)) echoRun {
	t.Helper()
	var run echoRun
	e := world(t, scfg, rpc.ClientConfig{CallTimeout: time.Second}, 1, func(e *env, _ int, p model.Process, cl *rpc.Client) {
		p.(*sim.Process).SetSocketBuffers(0, rcv)
		e.sp.SetSocketBuffers(4<<10, 0)
		for k := 0; k < n; k++ {
			want := bytes.Repeat([]byte{byte(k)}, size)
			binary.BigEndian.PutUint16(want, uint16(k))
			cl.Call(srvAddr, mEcho, want, func(r rpc.Reply) {
				switch {
				case r.Err != nil:
					run.failed++
				case bytes.Equal(r.Payload, want):
					run.right++
				default:
					run.wrong++
				}
				run.cl = cl.Stats()
			})
		}
		if then != nil {
			then(e, p, cl)
		}
	})
	run.srv = e.srv.Stats()
	e.quiet()
	return run
}

// A connection closed over MaxPending gets nothing more written to it.
// The handler that finds it over the bound marks it closed under its
// lock, and only its reader closes the socket, a moment later. The
// answers it drops may start with one already half written; an answer
// another handler wrote in that moment would follow the half, and the
// client would take the rest of the cut frame from its bytes: a
// corrupted answer accepted as its call's, then a malformed frame. Two
// or four handlers answer echoes of 2,000 bytes to a client reading
// through a small window, which the server closes over a 4 KiB bound.
func TestOverBoundCloseWritesNothingMore(t *testing.T) {
	for _, handlers := range []int{2, 4} {
		for _, rcv := range []int{1 << 10, 4 << 10} {
			run := echoes(t, rpc.ServerConfig{Handlers: handlers, MaxPending: 4 << 10}, 200, 2000, rcv, nil)
			if run.srv.OverBound != 1 {
				t.Errorf("%d handlers, receive buffer %d: %d closes over the bound, want 1: the test no longer exercises the close", handlers, rcv, run.srv.OverBound)
			}
			if run.wrong != 0 || run.cl.Malformed != 0 || run.cl.Unmatched != 0 {
				t.Errorf("%d handlers, receive buffer %d: %d answers with other bytes, %d malformed frames, %d unmatched answers (%d right, %d failed); want every call answered whole or failed",
					handlers, rcv, run.wrong, run.cl.Malformed, run.cl.Unmatched, run.right, run.failed)
			}
		}
	}
}

// A response dropped over the bound is counted dropped, not written. The
// calls are 4 bytes (answered with 2,000), so the server has read every
// one before it closes the connection over the bound, and its close ends
// with a FIN, not a reset: the client takes every answer the server
// wrote, and the responses the server counts written must be the answers
// its client took. (The counts' sum at rest, which check holds, is the
// same either way.)
func TestOverBoundDropsCountAsDropped(t *testing.T) {
	const calls = 200
	for _, handlers := range []int{2, 4} {
		for _, rcv := range []int{1 << 10, 4 << 10} {
			var st rpc.ClientStats
			e := world(t, rpc.ServerConfig{Handlers: handlers, MaxPending: 4 << 10}, rpc.ClientConfig{CallTimeout: time.Second}, 1, func(e *env, _ int, p model.Process, cl *rpc.Client) {
				p.(*sim.Process).SetSocketBuffers(0, rcv)
				e.sp.SetSocketBuffers(4<<10, 0)
				n := binary.BigEndian.AppendUint32(nil, 2000)
				for k := 0; k < calls; k++ {
					cl.Call(srvAddr, mBig, n, func(rpc.Reply) { st = cl.Stats() })
				}
			})
			ss := e.srv.Stats()
			if ss.OverBound != 1 || ss.Calls != calls {
				t.Errorf("%d handlers, receive buffer %d: %d closes over the bound, %d of %d calls read: want one close, after every call was read", handlers, rcv, ss.OverBound, ss.Calls, calls)
			}
			if ss.Responses != st.Replies || ss.Responses+ss.Dropped != ss.Calls {
				t.Errorf("%d handlers, receive buffer %d: the server counts %d responses written and %d dropped of %d calls; its client took %d answers",
					handlers, rcv, ss.Responses, ss.Dropped, ss.Calls, st.Replies)
			}
			e.quiet()
		}
	}
}

// A fatal answer is sent only if no answer is queued before it: written
// behind a half-written one, its bytes would complete that frame, and the
// client would take a corrupted answer for its call and a malformed
// frame after (the answers here are 19 bytes, shorter than the fatal
// answer, so a cut one is always completed). The client pauses so that
// its answers queue, resumes, and then sends a length prefix over
// MaxFrame while the server is writing them.
func TestFatalAnswerNeverFollowsAHalfWrittenOne(t *testing.T) {
	for _, after := range []time.Duration{0, 10 * time.Microsecond, 40 * time.Microsecond} {
		var held rpc.Pending
		run := echoes(t, rpc.ServerConfig{Handlers: 2}, 400, 10, 4<<10, func(e *env, p model.Process, cl *rpc.Client) {
			cl.PauseReading(srvAddr)
			p.MainLoop().AfterFunc(2*time.Millisecond, func() { cl.ResumeReading(srvAddr) })
			p.MainLoop().AfterFunc(2*time.Millisecond+after, func() {
				held = e.srv.Pending()
				cl.SendRaw(srvAddr, binary.BigEndian.AppendUint32(nil, 1<<30))
			})
		})
		if held.Bytes == 0 || run.srv.Fatal != 1 {
			t.Errorf("bad prefix %v after resuming: %d bytes of answers queued when it was sent, %d fatal frames: the test no longer exercises a fatal close with answers queued", after, held.Bytes, run.srv.Fatal)
		}
		if run.wrong != 0 || run.cl.Malformed != 0 || run.cl.Unmatched != 0 {
			t.Errorf("bad prefix %v after resuming: %d answers with other bytes, %d malformed frames, %d unmatched answers (%d right, %d failed); want every call answered whole or failed",
				after, run.wrong, run.cl.Malformed, run.cl.Unmatched, run.right, run.failed)
		}
	}
}

// A connection's call ids wrap past FatalID, the id of an answer about
// the connection itself: a call given it would take its own answer for
// the server's fatal error, and fail every call on the connection with
// it. Hadoop masks its ids to stay clear of its own. Three calls made
// from FatalID-1 on are answered whole.
func TestCallIDsSkipFatalID(t *testing.T) {
	right, failed := 0, 0
	e := world(t, rpc.ServerConfig{Handlers: 1}, rpc.ClientConfig{CallTimeout: time.Second}, 1, func(e *env, _ int, p model.Process, cl *rpc.Client) {
		call := func(k byte, then func()) {
			want := []byte{k, k}
			cl.Call(srvAddr, mEcho, want, func(r rpc.Reply) {
				if r.Err == nil && bytes.Equal(r.Payload, want) {
					right++
				} else {
					failed++
					t.Errorf("call %d: %v, payload %q", k, r.Err, r.Payload)
				}
				if then != nil {
					then()
				}
			})
		}
		call(0, func() {
			rpc.SetNextCallID(cl, srvAddr, rpc.FatalID-1)
			call(1, nil)
			call(2, nil)
			call(3, nil)
		})
	})
	e.quiet()
	if right != 4 || failed != 0 {
		t.Errorf("%d calls answered whole, %d failed; want 4 and 0", right, failed)
	}
}
