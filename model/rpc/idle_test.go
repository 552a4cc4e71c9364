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

// holdReader sends n calls that take 2 s each: with one handler and a
// queue of one, the reader stays blocked for about 2(n−2) s.
func holdReader(cl *rpc.Client, n int) {
	for k := 0; k < n; k++ {
		cl.Call(srvAddr, mHold, []byte{byte(k)}, func(rpc.Reply) {})
	}
}

// writeAll writes *out to conn, again every millisecond while the socket
// is full, then calls then (if any).
func writeAll(loop model.Loop, conn model.Conn, out *[]byte, then func()) {
	for len(*out) > 0 {
		n, err := conn.Write(*out)
		*out = (*out)[n:]
		if err != nil {
			loop.AfterFunc(time.Millisecond, func() { writeAll(loop, conn, out, then) })
			return
		}
	}
	if then != nil {
		then()
	}
}

// The idle scan reads a quiet connection only as far as the reader would.
// A first frame with a bad length never holds a call, and while the reader
// is blocked nothing refuses it: a scan that read it whole each time kept
// it busy and grew its input past InputBound (2.6 MB against 1.1 MB).
func TestIdleScanReadsWithinTheInputBound(t *testing.T) {
	worst, bound := 0, 0
	worldEach(t, rpc.ServerConfig{Readers: 1, Handlers: 1, QueueSize: 1, IdleTimeout: 500 * time.Millisecond},
		rpc.ClientConfig{CallTimeout: time.Minute}, 2,
		func(e *env) {
			worst, bound = max(worst, e.srv.Input().Worst), e.srv.InputBound()
		},
		func(e *env, i int, p model.Process, cl *rpc.Client) {
			if i == 0 {
				holdReader(cl, 12)
				return
			}
			loop := p.MainLoop()
			var conn model.Conn
			done := false
			out := append(append([]byte(nil), rpc.Preamble[:]...), binary.BigEndian.AppendUint32(nil, 1<<30)...)
			chunk := make([]byte, 32<<10)
			var pump func()
			pump = func() { // the prefix, then as much garbage as the socket takes, every 50 ms
				if done {
					return
				}
				writeAll(loop, conn, &out, func() {
					for {
						if _, err := conn.Write(chunk); err != nil {
							break
						}
					}
					loop.AfterFunc(50*time.Millisecond, pump)
				})
			}
			loop.AfterFunc(10*time.Millisecond, func() {
				var err error
				conn, err = p.Dial("tcp", srvAddr, loop, func(model.Events) {
					var b [512]byte
					for !done {
						if _, err := conn.Read(b[:]); errors.Is(err, model.ErrWouldBlock) {
							return
						} else if err != nil {
							done = true
							conn.Close()
						}
					}
				})
				if err != nil {
					t.Error(err)
					return
				}
				pump()
			})
			loop.AfterFunc(25*time.Second, func() {
				if !done {
					done = true
					conn.Close()
				}
			})
		})
	if worst > bound {
		t.Errorf("a connection held %d bytes of input, over InputBound %d", worst, bound)
	}
}

// servedAt records when calls whose payload starts with 'V' are served.
type servedAt struct{ at []time.Duration }

func (s *servedAt) Serve(loop model.Loop, m uint8, payload []byte, done func(rpc.Status, []byte)) {
	if len(payload) > 0 && payload[0] == 'V' {
		s.at = append(s.at, loop.Now())
	}
	done(rpc.StatusOK, nil)
}

// A dead connection is reported once, and the read then is its last: a
// client that reset its connection with more than one read's worth of
// calls in the server's socket (three of 200 KiB, sent while the server
// was stopped) left the rest unread, and the idle scan read it a batch a
// scan and ran a call 1.9 s after the reset, with either reader.
func TestDeadConnectionIsClosedWhenReported(t *testing.T) {
	for _, hadoop := range []bool{false, true} {
		svc := &servedAt{}
		w := sim.New(sim.DefaultConfig(1))
		var abortAt time.Duration
		sp, err := w.Spawn("server", model.ProcessConfig{Cores: 4}, func(p model.Process) {
			if _, err := rpc.StartServer(p, p.MainLoop(), svc, rpc.ServerConfig{Addr: srvAddr, Readers: 1, Handlers: 1, QueueSize: 1, IdleTimeout: 500 * time.Millisecond, HadoopReader: hadoop}); err != nil {
				w.Fail(err)
				return
			}
			w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
				loop := cp.MainLoop()
				conn, err := cp.Dial("tcp", srvAddr, loop, func(model.Events) {})
				if err != nil {
					t.Error(err)
					return
				}
				// Large calls of a method the server does not have grow
				// the connection's window first.
				out := append([]byte(nil), rpc.Preamble[:]...)
				for k := 0; k < 6; k++ {
					out = rpc.AppendFrame(out, rpc.Frame{ID: uint32(10 + k), Code: mUnset, Payload: make([]byte, 900<<10)})
				}
				pump := func() { writeAll(loop, conn, &out, nil) }
				loop.AfterFunc(10*time.Millisecond, pump)
				loop.AfterFunc(200*time.Millisecond, func() {
					payload := make([]byte, 200<<10)
					payload[0] = 'V'
					for id := uint32(2); id <= 4; id++ {
						out = rpc.AppendFrame(out, rpc.Frame{ID: id, Code: mEcho, Payload: payload})
					}
					pump()
				})
				loop.AfterFunc(700*time.Millisecond, func() {
					abortAt = loop.Now()
					conn.Abort()
				})
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		w.At(100*time.Millisecond, func() { sp.(*sim.Process).Pause(time.Second) })
		if err := w.Run(time.Hour); err != nil {
			t.Fatal(err)
		}
		for _, at := range svc.at {
			// The server runs again 0.4 s after the reset.
			if at > abortAt+600*time.Millisecond {
				t.Errorf("hadoop reader %v: a call of the client reset at %v ran at %v", hadoop, abortAt, at)
			}
		}
	}
}

// A reader's idle scan is one timer, however many connections it has
// taken: armed with its first connection, re-armed by each scan while it
// has any. A reader that lost track of its timer would arm another at
// every connection it took, each re-arming itself for as long as the
// reader had a connection, so the scans (and their CPU) would grow with
// every connection ever made (20 timers here). 20 clients connect a few ms apart, make a call
// and stay (the server's idle timeout is far off); once all are
// answered the server holds one timer a reader, with one reader and
// with three.
func TestIdleScanIsOneTimerAReader(t *testing.T) {
	const clients = 20
	for _, readers := range []int{1, 3} {
		answered, timers := 0, -1
		world(t, rpc.ServerConfig{Readers: readers, IdleTimeout: 10 * time.Second}, rpc.ClientConfig{IdleTimeout: time.Second}, clients,
			func(e *env, i int, p model.Process, cl *rpc.Client) {
				p.MainLoop().AfterFunc(time.Duration(i)*3*time.Millisecond, func() {
					cl.Call(srvAddr, mEcho, []byte{byte(i)}, func(r rpc.Reply) {
						if r.Err == nil {
							answered++
						}
						if answered == clients {
							timers = e.sp.Resources().Timers
						}
					})
				})
			})
		if answered != clients || timers != readers {
			t.Errorf("%d readers: %d of %d calls answered; the server held %d timers once all were, want one a reader", readers, answered, clients, timers)
		}
	}
}
