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

// A client reading through a small window while its answers pass
// MaxPending gets every answer whole, on its one connection. Two or four
// handlers answer echoes of 2,000 bytes (400 KB in all, against a 4 KiB
// bound) to a client reading through a window of 1 or 4 KiB. A server
// that closed such a connection over the bound failed most of the
// calls; this test once held that close to writing nothing after it
// (the handler that found the connection over the bound marked it
// closed, and only its reader closed the socket, a moment later: an
// answer another handler wrote in that moment would have followed a
// half-written one). Nothing closes it now, and the answers must still
// be whole and in their frames.
func TestSmallWindowReaderGetsEveryAnswer(t *testing.T) {
	for _, handlers := range []int{2, 4} {
		for _, rcv := range []int{1 << 10, 4 << 10} {
			run := echoes(t, rpc.ServerConfig{Handlers: handlers, MaxPending: 4 << 10}, 200, 2000, rcv, nil)
			if run.srv.Throttled == 0 {
				t.Errorf("%d handlers, receive buffer %d: never throttled: the test no longer passes the bound", handlers, rcv)
			}
			if run.right != 200 || run.wrong != 0 || run.failed != 0 || run.cl.Malformed != 0 || run.cl.Unmatched != 0 || run.srv.Accepted != 1 {
				t.Errorf("%d handlers, receive buffer %d: %d answers right, %d with other bytes, %d failed, %d malformed frames, %d unmatched answers, %d connections; want all 200 right on one",
					handlers, rcv, run.right, run.wrong, run.failed, run.cl.Malformed, run.cl.Unmatched, run.srv.Accepted)
			}
		}
	}
}

// Every response the server writes to a throttled connection is counted
// written, and none dropped: the calls are 4 bytes (answered with 2,000),
// so the server has read every one long before it has answered them, and
// the connection's answers pass MaxPending many times over. (When the
// server closed such a connection over the bound, this test held the
// answers it dropped to being counted dropped, not written.) The counts'
// sum at rest, which check holds, is the same.
func TestThrottledResponsesCountAsWritten(t *testing.T) {
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
			if ss.Throttled == 0 || ss.Calls != calls {
				t.Errorf("%d handlers, receive buffer %d: throttled %d times, %d of %d calls read: want some throttling, and every call read", handlers, rcv, ss.Throttled, ss.Calls, calls)
			}
			if ss.Responses != st.Replies || ss.Responses != calls || ss.Dropped != 0 {
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
		// (All 400 calls in flight at once: with the default cap of
		// 100 the last answers were written as soon as the client read
		// on, and none was queued when the prefix came.)
		run := echoes(t, rpc.ServerConfig{Handlers: 2, MaxInFlight: 400}, 400, 10, 4<<10, func(e *env, p model.Process, cl *rpc.Client) {
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

// Answers still queued in the server when their client hangs up are
// counted dropped, not written: a client that asks for 20 answers of
// 60,000 bytes, reading through a 1 KiB window, aborts 100 µs in, with
// about half the answers made and queued behind the server's 4 KiB send
// buffer and none read whole yet. At most one answer can have been
// written whole and not read (5 KiB lie between the two sides), so the
// written ones are the answers read, or one more. (The timing is what
// keeps answers queued: an abort from about 40 to 170 µs in finds some;
// from 180 µs on, all 20 have been read, and the test fails for want of
// a dropped one rather than passing.)
func TestAnswersQueuedAtHangupCountAsDropped(t *testing.T) {
	const calls = 20
	var read int
	e := world(t, rpc.ServerConfig{Handlers: 2}, rpc.ClientConfig{CallTimeout: time.Second}, 1, func(e *env, _ int, p model.Process, cl *rpc.Client) {
		p.(*sim.Process).SetSocketBuffers(0, 1<<10)
		e.sp.SetSocketBuffers(4<<10, 0)
		n := binary.BigEndian.AppendUint32(nil, 60000)
		for k := 0; k < calls; k++ {
			cl.Call(srvAddr, mBig, n, func(r rpc.Reply) {
				if r.Err == nil {
					read++
				}
			})
		}
		p.MainLoop().AfterFunc(100*time.Microsecond, func() { cl.Abort(srvAddr) })
	})
	st := e.srv.Stats()
	if st.Calls != calls || st.Dropped == 0 || st.Responses > read+1 || st.Responses+st.Dropped+st.Skipped != st.Calls {
		t.Errorf("%d answers read; the server counts %d calls, %d responses written, %d dropped, %d skipped: want all %d calls, some dropped, at most one written and not read, and every call counted once",
			read, st.Calls, st.Responses, st.Dropped, st.Skipped, calls)
	}
	e.quiet()
}
