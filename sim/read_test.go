package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

func runRead(t *testing.T, seed uint64, s model.ReadScenario) (*model.ReadResult, *World) {
	t.Helper()
	w := New(DefaultConfig(seed))
	res, err := model.RunRead(w, s, time.Hour)
	if err != nil {
		t.Fatalf("run: %v (first error %q)", err, res.FirstError)
	}
	return res, w
}

func TestReadSmoke(t *testing.T) {
	s := model.DefaultReadScenario()
	s.Ops = 50
	res, w := runRead(t, 1, s)
	st := res.Latencies.Summarize()
	t.Logf("ops %d errors %d p50 %v p99 %v tput %.1f MB/s peakfds %d events %d first %q", res.Ops, res.Errors, st.P50, st.P99, res.ThroughputMBps(), res.ServerPeakFDs, w.Events(), res.FirstError)
	t.Logf("%+v", res)
}

func TestReadKeepaliveNagle(t *testing.T) {
	for _, nd := range []bool{false, true} {
		s := model.DefaultReadScenario()
		s.Ops = 100
		s.Server.NoDelay, s.Client.NoDelay = nd, nd
		res, _ := runRead(t, 1, s)
		st := res.Latencies.Summarize()
		t.Logf("nodelay=%v p50 %v tput %.1f MB/s errors %d", nd, st.P50, res.ThroughputMBps(), res.Errors)
	}
}

func TestReadManyClientsFDs(t *testing.T) {
	for _, mode := range []model.ServerMode{model.Reactor, model.Threaded} {
		s := model.DefaultReadScenario()
		s.Clients, s.Ops, s.Blocks = 128, 10, 8
		s.Server.Mode = mode
		s.Server.PoolMax = 64
		res, w := runRead(t, 1, s)
		st := res.Latencies.Summarize()
		t.Logf("%s peakfds %d threads %d blockfiles %d p50 %v errors %d events %d end %d/%d %q %+v", mode, res.ServerPeakFDs, res.ServerPeakThr, res.PeakBlockFiles, st.P50, res.Errors, w.Events(), res.ServerEndFDs, res.ServerBaselineFDs, res.FirstError, res.Server)
	}
}
