package rpc_test

import (
	"encoding/binary"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// mFill answers uint32(payload[:4]) copies of payload[4].
const mFill = 6

// encodingService is testService as an rpc.FrameEncoder: it encodes an
// mFill answer in the buffer the handler lends it.
type encodingService struct {
	testService
	lent int // answers encoded in a lent buffer
}

func (s *encodingService) Decode(m uint8, payload []byte) any {
	return append([]byte(nil), payload...)
}

func (s *encodingService) ServeDecoded(loop model.Loop, m uint8, arg any, done func(rpc.Status, []byte)) {
	s.ServeEncoded(loop, m, arg, nil, done)
}

// Serve is Decode then ServeDecoded, as rpc.FrameEncoder asks: a server
// whose handler does not lend its frame (the catalogued
// QueuedReplySharesFrame) serves the calls so.
func (s *encodingService) Serve(loop model.Loop, m uint8, payload []byte, done func(rpc.Status, []byte)) {
	s.ServeDecoded(loop, m, s.Decode(m, payload), done)
}

func (s *encodingService) ServeEncoded(loop model.Loop, m uint8, arg any, buf func(int) []byte, done func(rpc.Status, []byte)) {
	p := arg.([]byte)
	if m != mFill || len(p) != 5 {
		s.testService.Serve(loop, m, p, done)
		return
	}
	s.served++
	if buf == nil {
		buf = func(n int) []byte { return make([]byte, 0, n) }
	} else {
		s.lent++
	}
	// (A while, so that the responder writes some of the answers
	// before it while the handler is busy with this one.)
	loop.AfterFunc(300*time.Microsecond, func() {
		n := int(binary.BigEndian.Uint32(p))
		b := buf(n)[:n]
		for i := range b {
			b[i] = p[4]
		}
		done(rpc.StatusOK, b)
	})
}

// Answers encoded in the handler's frame (rpc.FrameEncoder) keep their
// bytes while they wait in the responder for a slow client: the handler
// encodes the next answers in a buffer of its own, fresh or one the
// responder has finished writing (never one it is still writing). Each
// call gets its own answer, whole. (With ServerBugs.QueuedReplySharesFrame,
// or a frame handed back before it is written whole, answers cross.)
func TestFrameEncoderQueuedAnswersKeepTheirBytes(t *testing.T) {
	sizes := []uint32{512 << 10, 100, 300 << 10, 20 << 10, 7, 64 << 10, 5, 200 << 10, 3, 50 << 10, 40 << 10, 30 << 10}
	got := map[int]rpc.Reply{}
	svc := &encodingService{}
	e := &env{t: t, w: sim.New(sim.DefaultConfig(1))}
	var srv *rpc.Server
	_, err := e.w.Spawn("server", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		var err error
		if srv, err = rpc.StartServer(p, p.MainLoop(), svc, rpc.ServerConfig{Addr: srvAddr, Handlers: 1, MaxPending: 64 << 20}); err != nil {
			e.w.Fail(err)
			return
		}
		p.(*sim.Process).SetSocketBuffers(64<<10, 0)
		e.w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			cl, _ := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{CallTimeout: 5 * time.Second})
			// Small socket buffers, or they would take every answer.
			cp.(*sim.Process).SetSocketBuffers(0, 16<<10)
			// A slow reader, so that the responder has answers to
			// write while the handler frames the next ones.
			cp.(*sim.Process).SlowReader(4096)
			for k, size := range sizes {
				var q [5]byte
				binary.BigEndian.PutUint32(q[:], size)
				q[4] = byte(k + 1)
				cl.Call(srvAddr, mFill, q[:], func(r rpc.Reply) { got[k] = r })
			}
			cp.MainLoop().AfterFunc(time.Second, func() { cl.Close() })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if svc.lent != len(sizes) {
		t.Errorf("%d of %d answers encoded in a lent buffer", svc.lent, len(sizes))
	}
	if srv.Stats().Deferred < 2 {
		t.Errorf("the responder finished %d queued answers, want 2 or more: the test did not exercise the queue", srv.Stats().Deferred)
	}
	for k, size := range sizes {
		r := got[k]
		bad := r.Err != nil || len(r.Payload) != int(size)
		for _, c := range r.Payload {
			bad = bad || c != byte(k+1)
		}
		if bad {
			t.Errorf("call %d: %d bytes, error %v; want %d bytes of %d", k, len(r.Payload), r.Err, size, k+1)
		}
	}
}
