package rpc_test

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
)

// A reader blocked on a full queue reads a connection that holds no
// whole call only up to its next one, so that the call takes its turn
// when room comes (readsWhileBlocked), and no further: one read of 16
// KiB at most (the read's chunk), with the call in it, where a reader
// not blocked reads up to 64 KiB and a chunk an event. Client 0's calls
// (2 s each, one handler, a queue of one) block the reader; client 1
// then pipelines 2,000 small calls (about 120 KB), of which the server
// holds at most a chunk and a call while the reader stays blocked. (A
// reader that read on while blocked held 64 KiB of them; one whose
// chunk was 32 KiB, 32 KiB.)
func TestBlockedReaderReadsOneCallAhead(t *testing.T) {
	const (
		calls = 2000
		frame = 4 + 5 + 50 // a call's length prefix, id and method, and payload
	)
	worst, seen := 0, false
	answered := 0
	each := func(e *env) {
		// (Only until client 0's first call is answered, at 2 s: a
		// resumed reader reads a batch, and may block again holding it.)
		if _, _, _, _, blocked := e.srv.Quiet(); blocked > 0 && e.w.Now() < 1900*time.Millisecond {
			seen = true
			worst = max(worst, e.srv.Input().Worst)
		}
	}
	e := worldEach(t, rpc.ServerConfig{Readers: 1, Handlers: 1, QueueSize: 1}, rpc.ClientConfig{CallTimeout: time.Minute}, 2, each,
		func(e *env, i int, p model.Process, cl *rpc.Client) {
			if i == 0 {
				holdReader(cl, 3)
				return
			}
			p.MainLoop().AfterFunc(10*time.Millisecond, func() {
				for k := 0; k < calls; k++ {
					cl.Call(srvAddr, mEcho, make([]byte, 50), func(r rpc.Reply) {
						if r.Err == nil {
							answered++
						}
					})
				}
			})
		})
	if !seen {
		t.Fatalf("the reader never blocked: the test no longer tests a blocked reader's reads")
	}
	if worst > 16<<10+frame || answered != calls {
		t.Errorf("a connection held %d bytes of input while its reader was blocked on a full queue, %d of %d calls answered; want at most a read's chunk (16 KiB) and a call, all answered", worst, answered, calls)
	}
	e.quiet()
}

// Hadoop's reader reads what the call it is reading lacks and no more:
// the rest of a length prefix, then the body. A prefix that came in
// part (3 of its 4 bytes, then the rest of the call and a second call
// at once, 1 ms later) is completed with one byte, never with bytes of
// the body or, for a call with no payload (a body of 5 bytes), of the
// call behind it. So its input never holds more than the whole call, 9
// bytes; both calls are served. (A reader that asked for 4 + 3 bytes to
// complete the prefix held 10.)
func TestHadoopReaderReadsNoFurtherThanItsCall(t *testing.T) {
	worst, partial := 0, false
	each := func(e *env) {
		in := e.srv.Input()
		worst = max(worst, in.Worst)
		partial = partial || in.Worst == 3
	}
	e := worldEach(t, rpc.ServerConfig{HadoopReader: true}, rpc.ClientConfig{}, 1, each, func(e *env, _ int, p model.Process, _ *rpc.Client) {
		loop := p.MainLoop()
		var calls []byte
		for id := uint32(1); id <= 2; id++ {
			calls = rpc.AppendFrame(calls, rpc.Frame{ID: id, Code: mEcho})
		}
		out := append(append([]byte(nil), rpc.Preamble[:]...), calls[:3]...)
		var conn model.Conn
		conn, err := p.Dial("tcp", srvAddr, loop, func(model.Events) {
			var b [64]byte
			for {
				if _, err := conn.Read(b[:]); errors.Is(err, model.ErrWouldBlock) {
					return
				} else if err != nil {
					conn.Close()
					return
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		loop.AfterFunc(time.Millisecond, func() { writeAll(loop, conn, &out, nil) })
		loop.AfterFunc(2*time.Millisecond, func() {
			out = append(out, calls[3:]...)
			writeAll(loop, conn, &out, nil)
		})
		loop.AfterFunc(10*time.Millisecond, func() { conn.Close() })
	})
	if !partial {
		t.Fatalf("the server never held the first call's 3 bytes of length prefix alone: the test no longer tests a prefix read in part")
	}
	if worst > 9 || e.svc.served != 2 {
		t.Errorf("Hadoop's reader held %d bytes of input, %d of 2 calls served; want at most one whole call of 9 bytes, both served", worst, e.svc.served)
	}
}
