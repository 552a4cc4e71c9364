package real

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
)

// The rpc server on real sockets: many calls outstanding on one
// connection from several clients at once, through reader, handler and
// responder goroutines and a read-write namespace lock; clients sending
// garbage, an oversized length, a truncated call or an unknown method get
// an error answer or a clean close; the server keeps serving, closes idle
// connections and leaks nothing (race-tested with go test -race).
func TestRPCServerRealSockets(t *testing.T) {
	// Hadoop's reader and the edit log too: both hand work between
	// goroutines (reader to handler, handler to log loop to worker).
	for _, hadoop := range []bool{false, true} {
		t.Run(fmt.Sprintf("hadoop=%v", hadoop), func(t *testing.T) { realRPCServer(t, hadoop, 0) })
	}
	// A cap of two calls in flight a connection: its readers stop and
	// resume each client's connection at nearly every call, handing the
	// count between reader, handler and responder goroutines under the
	// connection's lock.
	t.Run("max-in-flight=2", func(t *testing.T) { realRPCServer(t, false, 2) })
}

func realRPCServer(t *testing.T, hadoop bool, inFlight int) {
	editLog := ""
	if hadoop {
		editLog = "edits"
	}
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var nn *namespace.Namenode
	var nnProc model.Process
	baseline := 0
	answered, wrong := 0, 0
	unknown := rpc.Status(99)
	badClosed := 0
	const clients, calls = 3, 40
	_, err = w.Spawn("namenode", model.ProcessConfig{}, func(p model.Process) {
		nnProc = p
		nn, err = namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: namespace.Config{Lock: namespace.RWLock, Datanode: "dn", EditLog: editLog},
			RPC:       rpc.ServerConfig{Addr: "127.0.0.1:0", Readers: 2, Handlers: 3, QueueSize: 8, IdleTimeout: 200 * time.Millisecond, HadoopReader: hadoop, MaxInFlight: inFlight},
		})
		if err != nil {
			w.Fail(err)
			return
		}
		baseline = p.FDs().Open
		addr := nn.Server.Addr()
		w.Spawn("clients", model.ProcessConfig{}, func(cp model.Process) {
			loop := cp.MainLoop()
			finished := 0
			finish := func() {
				finished++
				if finished == clients+3 {
					// Past both idle timeouts every connection is gone.
					loop.AfterFunc(600*time.Millisecond, w.Stop)
				}
			}
			for i := 0; i < clients; i++ {
				rc, err := rpc.NewClient(cp, loop, rpc.ClientConfig{IdleTimeout: 100 * time.Millisecond})
				if err != nil {
					w.Fail(err)
					return
				}
				nc := &namespace.Client{RPC: rc, Addr: addr}
				left := calls + 1
				for k := 0; k < calls; k++ {
					path := fmt.Sprintf("/c%d/d%d", i, k%5)
					r := namespace.Request{Method: namespace.MethodMkdir, Path: path}
					if k%2 == 1 {
						r = namespace.Request{Method: namespace.MethodList, Path: fmt.Sprintf("/c%d", i)}
					}
					nc.Do(r, func(_ namespace.Response, err error) {
						if err != nil && !namespace.IsCode(err, namespace.ENOENT) {
							wrong++
						}
						answered++
						if left--; left == 0 {
							finish()
						}
					})
				}
				rc.Call(addr, 200, nil, func(r rpc.Reply) {
					unknown = r.Status
					if left--; left == 0 {
						finish()
					}
				})
			}
			huge := binary.BigEndian.AppendUint32(append([]byte(nil), rpc.Preamble[:]...), 1<<30)
			trunc := append(append([]byte(nil), rpc.Preamble[:]...), rpc.AppendFrame(nil, rpc.Frame{ID: 1, Code: namespace.MethodMkdir, Payload: []byte{0, 2, '/', 'x'}})[:7]...)
			for _, raw := range [][]byte{[]byte("GET / HTTP/1.0\r\n\r\n"), huge, trunc} {
				var c model.Conn
				sent := false
				buf := make([]byte, 512)
				c, err = cp.Dial("tcp", addr, loop, func(ev model.Events) {
					if !sent && ev&model.Writable != 0 {
						sent = true
						c.SetWriteInterest(false)
						c.Write(raw)
					}
					for {
						_, err := c.Read(buf)
						if errors.Is(err, model.ErrWouldBlock) {
							return
						}
						if err != nil {
							c.Close()
							badClosed++
							finish()
							return
						}
					}
				})
				if err != nil {
					w.Fail(err)
					return
				}
				c.SetWriteInterest(true)
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if answered != clients*calls || wrong != 0 {
		t.Errorf("%d of %d calls answered, %d wrong", answered, clients*calls, wrong)
	}
	if st := nn.NS.EditLogStats(); hadoop && (st.Edits != clients*calls/2 || st.Failed != 0) {
		t.Errorf("edit log %+v, want %d edits synced", st, clients*calls/2)
	}
	if unknown != rpc.StatusUnknownMethod {
		t.Errorf("unknown method answered %v", unknown)
	}
	if badClosed != 3 {
		t.Errorf("%d of 3 bad clients saw their connection closed", badClosed)
	}
	if st := nn.Server.Stats(); inFlight > 0 && st.Throttled == 0 {
		t.Errorf("a cap of %d calls in flight never throttled a connection of %d pipelined calls", inFlight, calls)
	}
	conns, queued, pending, busy, blocked := nn.Server.Quiet()
	if conns+queued+pending+busy+blocked != 0 {
		t.Errorf("server not quiet: conns %d queued %d pending %d busy %d blocked %d", conns, queued, pending, busy, blocked)
	}
	if got := nnProc.FDs().Open; got != baseline {
		t.Errorf("namenode holds %d fds, baseline %d", got, baseline)
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("leak after close: %v", err)
	}
}

// The real read-write lock runs every f on its loop, readers never beside
// a writer (checked with counters the lock's users touch atomically).
func TestRWLockReal(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var readers, writers, done, bad atomic.Int32
	_, err = w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		lk := p.NewRWLock("ns")
		for i := 0; i < 4; i++ {
			l, err := p.NewLoop("l")
			if err != nil {
				w.Fail(err)
				return
			}
			for k := 0; k < 50; k++ {
				end := func() {
					if done.Add(1) == 200 {
						w.Stop()
					}
				}
				if (i+k)%5 == 0 {
					lk.Do(l, func() {
						if writers.Add(1) != 1 || readers.Load() != 0 {
							bad.Add(1)
						}
						time.Sleep(50 * time.Microsecond)
						writers.Add(-1)
						end()
					})
					continue
				}
				lk.RDo(l, func() {
					readers.Add(1)
					if writers.Load() != 0 {
						bad.Add(1)
					}
					time.Sleep(50 * time.Microsecond)
					readers.Add(-1)
					end()
				})
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if done.Load() != 200 || bad.Load() != 0 {
		t.Errorf("%d of 200 ops ran; %d saw a writer beside another holder", done.Load(), bad.Load())
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
}
