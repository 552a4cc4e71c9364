package rpc_test

import (
	"encoding/binary"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// pipeline has one client make n calls at once for answers of size
// bytes and read every answer, as a Hadoop client process whose threads
// share one connection does (200 threads listing a large directory at
// once). It returns how many were answered and how many failed, and
// the server's stats.
func pipeline(t *testing.T, scfg rpc.ServerConfig, n, size, sndBuf int, each func(e *env)) (answered, failed int, st rpc.ServerStats) {
	t.Helper()
	e := worldEach(t, scfg, rpc.ClientConfig{CallTimeout: 10 * time.Second}, 1, each, func(e *env, _ int, p model.Process, cl *rpc.Client) {
		if sndBuf > 0 {
			e.sp.SetSocketBuffers(sndBuf, 0)
		}
		arg := binary.BigEndian.AppendUint32(nil, uint32(size))
		for k := 0; k < n; k++ {
			cl.Call(srvAddr, mBig, arg, func(r rpc.Reply) {
				if r.Err != nil || r.Status != rpc.StatusOK || len(r.Payload) != size {
					failed++
					return
				}
				answered++
			})
		}
	})
	e.quiet()
	return answered, failed, e.srv.Stats()
}

// A client that pipelines 200 calls whose answers together pass
// MaxPending (200 of 32 KiB, 6.4 MB against the default 1 MiB) and reads
// every answer is served in full on its one connection: nothing closes
// it. The reader takes the calls into the queue before any answer
// exists; their answers then pass the bound together, and a server that
// closed a connection over MaxPending closed this healthy one and failed
// every call on it.
func TestPipelinerThatReadsIsServedInFull(t *testing.T) {
	for _, snd := range []int{0, 16 << 10} {
		answered, failed, st := pipeline(t, rpc.ServerConfig{}, 200, 32<<10, snd, nil)
		if answered != 200 || failed != 0 || st.Closed != 1 || st.Accepted != 1 || st.Responses != 200 || st.Dropped != 0 {
			t.Errorf("server send buffer %d: %d of 200 calls answered, %d failed; server: %d connections accepted, %d closed, %d responses written, %d dropped (stats %+v); want all answered on one connection the client closed",
				snd, answered, failed, st.Accepted, st.Closed, st.Responses, st.Dropped, st)
		}
	}
}

// A client that asks for 300 answers of 16 KiB at once and never reads
// (nor closes: a stopped process) holds at most MaxInFlight responses, and
// at most MaxPending + MaxInFlight answers, at every event: the reader
// takes no more of its calls once its cap is in flight, or its responses
// pass MaxPending, and leaves the rest unread in the socket. Once its
// answers have gone untaken for the idle timeout (500 ms) the idle scan
// purges it (within one more scan, half a timeout), and every call ends
// once. With the default cap and bound (100 calls, 1 MiB) and with small
// ones (8 calls, 64 KiB).
func TestNonReaderIsBoundedAndPurged(t *testing.T) {
	const (
		calls = 300
		size  = 16 << 10
		idle  = 500 * time.Millisecond
	)
	for _, c := range []struct{ inFlight, bound int }{{0, 0}, {8, 64 << 10}} {
		var peak rpc.Pending
		var stopped, gone time.Duration
		seen := false
		ended, failed := 0, 0
		scfg := rpc.ServerConfig{Handlers: 2, MaxInFlight: c.inFlight, MaxPending: c.bound, IdleTimeout: idle}
		each := func(e *env) {
			p := e.srv.Pending()
			peak.Worst = max(peak.Worst, p.Worst)
			peak.Most = max(peak.Most, p.Most)
			seen = seen || p.Conns > 0
			if seen && p.Conns == 0 && gone == 0 {
				gone = e.w.Now()
			}
		}
		e := worldEach(t, scfg, rpc.ClientConfig{}, 1, each, func(e *env, _ int, p model.Process, cl *rpc.Client) {
			// A small window, or the socket buffers would take every
			// answer.
			p.(*sim.Process).SlowReader(4096)
			arg := binary.BigEndian.AppendUint32(nil, size)
			for k := 0; k < calls; k++ {
				cl.Call(srvAddr, mBig, arg, func(r rpc.Reply) {
					if ended++; r.Err != nil {
						failed++
					}
				})
			}
			cl.PauseReading(srvAddr)
			stopped = p.MainLoop().Now()
			p.MainLoop().AfterFunc(10*time.Second, func() { cl.Close() })
		})
		cfg := e.srv.Config()
		st := e.srv.Stats()
		t.Logf("cap %d, bound %d: at most %d responses and %d bytes held; %d calls read, throttled %d times, purged %v after the client stopped reading",
			cfg.MaxInFlight, cfg.MaxPending, peak.Most, peak.Worst, st.Calls, st.Throttled, gone-stopped)
		if peak.Most > cfg.MaxInFlight || peak.Worst > cfg.MaxPending+cfg.MaxInFlight*(size+5) {
			t.Errorf("cap %d, bound %d: at most %d responses held on the connection, %d bytes; want at most the cap, and MaxPending + the cap × an answer",
				cfg.MaxInFlight, cfg.MaxPending, peak.Most, peak.Worst)
		}
		if st.Throttled == 0 || st.Purged != 1 || st.Calls >= calls {
			t.Errorf("cap %d, bound %d: throttled %d times, %d purged, %d of %d calls read; want throttled, purged once, and calls left unread",
				cfg.MaxInFlight, cfg.MaxPending, st.Throttled, st.Purged, st.Calls, calls)
		}
		if gone-stopped < idle || gone-stopped > idle*3/2+10*time.Millisecond {
			t.Errorf("cap %d, bound %d: the connection went %v after its client stopped reading; want after the idle timeout (%v), within one more scan", cfg.MaxInFlight, cfg.MaxPending, gone-stopped, idle)
		}
		if ended != calls {
			t.Errorf("cap %d, bound %d: %d of %d calls ended (%d failed)", cfg.MaxInFlight, cfg.MaxPending, ended, calls, failed)
		}
		e.quiet()
	}
}

// A pipeliner at the cap whose answers fill the server's socket buffer
// (4 KiB) and its own (4 KiB), and which stops reading for 100 ms, goes
// on as it reads again: each response the responder finishes writing
// resumes the reader, which takes the next call from the input it left
// in the socket. No deadlock, with the batch reader and Hadoop's, one
// handler or three: all 200 calls are answered, and while the client
// was not reading the server held exactly the cap's worth of calls (the
// rest waited unread).
func TestThrottledPipelinerResumes(t *testing.T) {
	const (
		calls    = 200
		size     = 8 << 10
		inFlight = 4
	)
	for _, hadoop := range []bool{false, true} {
		for _, handlers := range []int{1, 3} {
			answered, failed := 0, 0
			var during rpc.ServerStats
			var held rpc.Pending
			var took time.Duration
			e := world(t, rpc.ServerConfig{Handlers: handlers, MaxInFlight: inFlight, HadoopReader: hadoop}, rpc.ClientConfig{CallTimeout: 10 * time.Second}, 1,
				func(e *env, _ int, p model.Process, cl *rpc.Client) {
					l := p.MainLoop()
					p.(*sim.Process).SetSocketBuffers(0, 4<<10)
					e.sp.SetSocketBuffers(4<<10, 0)
					arg := binary.BigEndian.AppendUint32(nil, size)
					start := l.Now()
					for k := 0; k < calls; k++ {
						cl.Call(srvAddr, mBig, arg, func(r rpc.Reply) {
							if r.Err != nil || len(r.Payload) != size {
								failed++
								return
							}
							if answered++; answered == calls {
								took = l.Now() - start
							}
						})
					}
					cl.PauseReading(srvAddr)
					l.AfterFunc(100*time.Millisecond, func() {
						during, held = e.srv.Stats(), e.srv.Pending()
						cl.ResumeReading(srvAddr)
					})
				})
			st := e.srv.Stats()
			t.Logf("Hadoop's reader %v, %d handlers: %d calls taken and %d bytes held during the pause; all %d answered in %v, throttled %d times",
				hadoop, handlers, during.Calls, held.Bytes, answered, took, st.Throttled)
			if during.Calls != inFlight || held.Conns != 1 || held.Bytes == 0 {
				t.Errorf("Hadoop's reader %v, %d handlers: 100 ms into the pause the server had taken %d calls (want the cap, %d) and held %d bytes of answers on %d connections",
					hadoop, handlers, during.Calls, inFlight, held.Bytes, held.Conns)
			}
			if answered != calls || failed != 0 || st.Responses != calls || st.Throttled == 0 || took > time.Second {
				t.Errorf("Hadoop's reader %v, %d handlers: %d of %d calls answered in %v, %d failed; server: %d responses, throttled %d times",
					hadoop, handlers, answered, calls, took, failed, st.Responses, st.Throttled)
			}
			e.quiet()
		}
	}
}

// MaxPending stops a reader before the cap: a client that asks for
// answers of 16 KiB one at a time, 5 ms apart (each answered before the
// next call comes), and never reads, has its calls taken only while
// what its connection holds is within MaxPending (64 KiB). So the
// connection holds at most MaxPending plus the one answer taken at the
// bound, and the reader takes about MaxPending's worth of calls and
// what the socket buffers hold, far below the cap of 100. The cap alone
// would let it take 100 and hold 1.6 MB: the byte bound is what keeps a
// slow trickle of large answers near MaxPending.
func TestMaxPendingStopsTheReaderBeforeTheCap(t *testing.T) {
	const (
		calls   = 60
		size    = 16 << 10
		bound   = 64 << 10
		spacing = 5 * time.Millisecond
	)
	var peak rpc.Pending
	var during rpc.ServerStats
	each := func(e *env) {
		if during.Accepted > 0 {
			return // (the client reads again: the calls left are taken together)
		}
		p := e.srv.Pending()
		peak.Worst = max(peak.Worst, p.Worst)
		peak.Most = max(peak.Most, p.Most)
	}
	e := worldEach(t, rpc.ServerConfig{Handlers: 2, MaxInFlight: 100, MaxPending: bound}, rpc.ClientConfig{CallTimeout: 10 * time.Second}, 1, each,
		func(e *env, _ int, p model.Process, cl *rpc.Client) {
			l := p.MainLoop()
			p.(*sim.Process).SetSocketBuffers(0, 4<<10)
			e.sp.SetSocketBuffers(4<<10, 0)
			arg := binary.BigEndian.AppendUint32(nil, size)
			var call func(k int)
			call = func(k int) {
				if k == calls {
					during = e.srv.Stats()
					l.AfterFunc(100*time.Millisecond, func() { cl.ResumeReading(srvAddr) })
					return
				}
				cl.Call(srvAddr, mBig, arg, func(rpc.Reply) {})
				if k == 0 {
					cl.PauseReading(srvAddr) // (its connection is dialled now)
				}
				l.AfterFunc(spacing, func() { call(k + 1) })
			}
			call(0)
		})
	t.Logf("%d of %d calls taken while the client did not read; at most %d bytes in %d responses held", during.Calls, calls, peak.Worst, peak.Most)
	// The socket buffers take about 8 KiB of answers, half of one.
	if peak.Worst > bound+size+5 || during.Calls > bound/size+2 || during.Throttled == 0 {
		t.Errorf("MaxPending %d, answers of %d bytes asked for one at a time: %d calls taken while the client did not read (throttled %d times), at most %d bytes held; want at most %d bytes (the bound and the answer taken at it), %d calls",
			bound, size, during.Calls, during.Throttled, peak.Worst, bound+size+5, bound/size+2)
	}
	e.quiet()
}

// A throttled connection with calls waiting is never closed as idle. A
// client sends 40 calls at once and nothing more, so its connection has
// been silent for the idle timeout (500 ms) long before they are
// served; at MaxInFlight 1 the reader takes them one at a time, each
// answered after d, and the connection is throttled between them. When
// the call in flight was answered between the idle scan's timer and
// its look under the connection's lock, the scan saw no call in flight
// and no answer held, and closed the connection with the next call
// whole in its input (its unthrottle posted, not yet run), failing the
// rest. The window is a few µs wide: the sweep moves the answers
// against the scans (every 250 ms), d = (750 ms - δ)/15 for δ across
// 300 µs in 2 µs steps, and 2 of its 150 runs closed the connection
// (after the 20th and the 25th answers, failing the rest) without the
// idle scan's look for a whole call (a review found 47 of 8,000
// runs of a finer sweep with the batch reader, none with Hadoop's).
func TestThrottledConnWithCallsWaitingIsNotIdle(t *testing.T) {
	const calls = 40
	bad := 0
	for delta := time.Duration(0); delta < 300*time.Microsecond; delta += 2 * time.Microsecond {
		d := (750*time.Millisecond - delta) / 15
		answered, failed := 0, 0
		var closes []rpc.ServerClose
		ccfg := rpc.ClientConfig{CallTimeout: time.Minute, IdleTimeout: time.Minute,
			OnServerClose: func(sc rpc.ServerClose) { closes = append(closes, sc) }}
		e := world(t, rpc.ServerConfig{MaxInFlight: 1, IdleTimeout: 500 * time.Millisecond}, ccfg, 1, func(e *env, _ int, _ model.Process, cl *rpc.Client) {
			e.svc.delay = d
			for k := 0; k < calls; k++ {
				cl.Call(srvAddr, mDelay, []byte{byte(k)}, func(r rpc.Reply) {
					if r.Err != nil {
						failed++
					} else {
						answered++
					}
					if answered+failed == calls {
						cl.Close()
					}
				})
			}
		})
		if failed > 0 || len(closes) > 0 {
			if bad++; bad <= 3 {
				st := e.srv.Stats()
				t.Errorf("calls served in %v each: %d answered, %d failed; %d idle closes, %d purges; the client saw %+v", d, answered, failed, st.IdleClosed, st.Purged, closes)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of 150 runs closed a throttled connection with calls waiting", bad)
	}
}

// A reader throttled for MaxPending goes on as soon as the responder's
// writes bring the connection's pending bytes back within the bound, not
// only once all of its output has drained: with a 1 KiB send buffer the
// server's writes go out a KiB per delayed ACK, and waiting for a drain
// would leave the connection idle between every batch of calls. Seen as
// a call taken after the first throttle while the connection still holds
// answers.
func TestMaxPendingThrottleLiftsBeforeTheDrain(t *testing.T) {
	const (
		calls = 12
		size  = 8 << 10
	)
	early := 0
	var last rpc.ServerStats
	each := func(e *env) {
		st, p := e.srv.Stats(), e.srv.Pending()
		if last.Throttled > 0 && st.Calls > last.Calls && p.Bytes > 0 {
			early++
		}
		last = st
	}
	answered := 0
	e := worldEach(t, rpc.ServerConfig{Handlers: 2, MaxInFlight: 100, MaxPending: 16 << 10}, rpc.ClientConfig{CallTimeout: time.Minute}, 1, each,
		func(e *env, _ int, p model.Process, cl *rpc.Client) {
			e.sp.SetSocketBuffers(1<<10, 0)
			arg := binary.BigEndian.AppendUint32(nil, size)
			l := p.MainLoop()
			for k := 0; k < calls; k++ {
				l.AfterFunc(time.Duration(k)*time.Millisecond, func() {
					cl.Call(srvAddr, mBig, arg, func(r rpc.Reply) {
						if r.Err == nil && len(r.Payload) == size {
							answered++
						}
					})
				})
			}
		})
	st := e.srv.Stats()
	t.Logf("%d of %d answered; throttled %d times; %d calls taken while answers were still queued after a throttle", answered, calls, st.Throttled, early)
	if answered != calls || st.Throttled == 0 || early == 0 {
		t.Errorf("%d of %d answered, throttled %d times, %d calls taken before the connection's output drained; want all, throttled, and some taken before a drain", answered, calls, st.Throttled, early)
	}
	e.quiet()
}

// A client that hangs up while its reader has stopped reading it (its
// one call in flight, MaxInFlight 1, the next two waiting unread in the
// socket) is heard at once: its connection goes within a few ms of the
// FIN, not when the handler answers its held call 2 s later and the
// answer draws a reset, which is when a server deaf to a connection it
// does not read (DeafWhenNotReading) lets it go.
func TestThrottledConnHeardWhenItsClientHangsUp(t *testing.T) {
	const closeAt = 100 * time.Millisecond
	for _, deaf := range []bool{false, true} {
		var closed, gone time.Duration
		seen := false
		scfg := rpc.ServerConfig{MaxInFlight: 1, IdleTimeout: 10 * time.Second, Bugs: rpc.ServerBugs{DeafWhenNotReading: deaf}}
		each := func(e *env) {
			p := e.srv.Pending()
			seen = seen || p.Conns > 0
			if seen && p.Conns == 0 && gone == 0 {
				gone = e.w.Now()
			}
		}
		e := worldEach(t, scfg, rpc.ClientConfig{CallTimeout: time.Minute}, 1, each, func(e *env, _ int, p model.Process, cl *rpc.Client) {
			for k := 0; k < 3; k++ {
				cl.Call(srvAddr, mHold, []byte{byte(k)}, func(rpc.Reply) {})
			}
			p.MainLoop().AfterFunc(closeAt, func() {
				closed = p.MainLoop().Now()
				cl.Close()
			})
		})
		st := e.srv.Stats()
		took := gone - closed
		switch {
		case st.Throttled == 0 || closed == 0 || gone == 0:
			t.Errorf("deaf %v: throttled %d times, client closed at %v, connection gone at %v; want a throttled connection closed by its client", deaf, st.Throttled, closed, gone)
		case !deaf && took > 10*time.Millisecond:
			t.Errorf("the server let its connection go %v after the client hung up; want within 10ms", took)
		case deaf && took < time.Second:
			t.Errorf("deaf to a connection it does not read, the server still let it go %v after its client hung up; want when its held call is answered, about 1.9s after (the test no longer reaches a throttled hangup)", took)
		}
		e.quiet()
	}
}
