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

func TestPatternTraceShowsStall(t *testing.T) {
	var buf bytes.Buffer
	w := New(DefaultConfig(7))
	w.TraceTo(&buf)
	if _, err := model.RunTCPPattern(w, model.TCPPattern{Writes: 2, Msg: 8, Reply: 32768, Ops: 3}, time.Hour); err != nil {
		t.Fatal(err)
	}
	t.Log(buf.String())
}
