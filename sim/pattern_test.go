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

// One-way ops (Reply 0), writes 1 ms apart after the server read the one
// before: which write waits for a delayed ACK is Linux's rcv_mss rules
// (rcvmss_test.go), end to end through the scenario validate runs in
// both worlds. 600, 600: the second goes at once (a full-sized segment
// with PSH is ACKed at the read). 1000, 530, 530, 530: the fourth waits
// for the delayed ACK (the second 530 lowered rcv_mss, unpushed), the
// rest go at once.
func TestPatternOneWayWrites(t *testing.T) {
	for _, c := range []struct {
		sizes []int
		stall int // the write that waits (-1: none)
	}{{[]int{600, 600}, -1}, {[]int{1000, 530, 530, 530}, 3}, {[]int{100, 100, 100}, -1}} {
		res, _ := runPattern(t, 1, model.TCPPattern{Sizes: c.sizes, Gap: time.Millisecond, Ops: 40})
		if len(res.WriteLatencies) != len(c.sizes) {
			t.Fatalf("%v: latencies for %d writes", c.sizes, len(res.WriteLatencies))
		}
		for i := range res.WriteLatencies {
			l := &res.WriteLatencies[i]
			p50 := l.Summarize().P50
			if l.Len() != 40 {
				t.Errorf("%v: write %d measured %d times, want 40", c.sizes, i+1, l.Len())
			}
			switch {
			case i == c.stall && (p50 < 36*time.Millisecond || p50 > 48*time.Millisecond):
				t.Errorf("%v: write %d p50 %v, want the delayed ACK's 36-48 ms", c.sizes, i+1, p50)
			case i != c.stall && p50 > time.Millisecond:
				t.Errorf("%v: write %d p50 %v, want under 1 ms", c.sizes, i+1, p50)
			}
		}
		// The op runs from its first write to the server's reading its
		// last: the gaps, and the stall if any.
		want := time.Duration(len(c.sizes)-1) * time.Millisecond
		if p50 := res.Latencies.Summarize().P50; p50 < want || c.stall < 0 && p50 > want+time.Millisecond {
			t.Errorf("%v: op p50 %v, want %v and a little (or a stall)", c.sizes, p50, want)
		}
	}
	for _, bad := range []model.TCPPattern{
		{Sizes: []int{600}, Reply: 1, Gap: time.Millisecond, Ops: 1},
		{Sizes: []int{600, 0}, Ops: 1},
		{Writes: 1, Msg: 1, Gap: -1, Ops: 1},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: valid", bad)
		}
	}
}
