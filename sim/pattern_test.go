package sim

import (
	"bytes"
	"testing"
	"time"

	"xceiver/model"
)

func runPattern(t *testing.T, seed uint64, cfg model.TCPPattern) (*model.TCPPatternResult, *World) {
	t.Helper()
	w := New(DefaultConfig(seed))
	res, err := model.RunTCPPattern(w, cfg, time.Hour)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, w
}

func TestPatternNagleStall(t *testing.T) {
	res, w := runPattern(t, 1, model.TCPPattern{Writes: 2, Msg: 8, Reply: 32768, Ops: 50})
	s := res.Latencies.Summarize()
	t.Logf("first %v p50 %v p99 %v events %d", s.First, s.P50, s.P99, w.Events())
	if s.First >= time.Millisecond {
		t.Errorf("first op %v, want < 1ms (quick-ACK on a fresh connection)", s.First)
	}
	if s.P50 < 40*time.Millisecond || s.P50 > 48*time.Millisecond {
		t.Errorf("p50 %v, want 40–48 ms (Nagle waits for the delayed ACK)", s.P50)
	}
}

// The sim reports the server's receive buffer after the run: grown by
// autotuning from RcvBuf (never past RcvBufMax), or the one configured
// when autotuning is off.
func TestPatternReportsServerReceiveBuffer(t *testing.T) {
	cfg := model.TCPPattern{Writes: 4, Msg: 40000, Reply: 1024, Ops: 5}
	res, w := runPattern(t, 1, cfg)
	if tc := w.Config().TCP; res.ServerRcvBuf <= tc.RcvBuf || res.ServerRcvBuf > tc.RcvBufMax {
		t.Errorf("server receive buffer %d, want grown from %d, at most %d", res.ServerRcvBuf, tc.RcvBuf, tc.RcvBufMax)
	}
	c := DefaultConfig(1)
	c.TCP.RcvBuf, c.TCP.RcvBufMax = 65536, 0
	res, err := model.RunTCPPattern(New(c), cfg, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerRcvBuf != 65536 {
		t.Errorf("server receive buffer %d with a fixed 65536", res.ServerRcvBuf)
	}
}

func TestPatternTraceShowsStall(t *testing.T) {
	var buf bytes.Buffer
	w := New(DefaultConfig(7))
	w.TraceTo(&buf)
	if _, err := model.RunTCPPattern(w, model.TCPPattern{Writes: 2, Msg: 8, Reply: 32768, Ops: 3}, time.Hour); err != nil {
		t.Fatal(err)
	}
	t.Log(buf.String())
}
