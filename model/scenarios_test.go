package model_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// A read run tallies every read as it went: one client reads six times
// 16 KiB in order from two 64 KiB blocks, and the datanode stores other
// bytes for block 2 (checksummed as stored, so only the client's
// comparison sees it): the four reads of block 1 are verified, the two of
// block 2 whole but mismatched, and none failed. The datanode's 4 s
// keep-alive serves all six on one connection.
func TestRunReadTalliesEachRead(t *testing.T) {
	s := model.DefaultReadScenario()
	s.Clients, s.Ops, s.Blocks, s.BlockSize, s.ReadSize, s.Pattern = 1, 6, 2, 64<<10, 16<<10, "sequential"
	s.Stored = func(id uint64, want []byte) []byte {
		if id == 2 {
			return model.BlockContent(id+100, len(want))
		}
		return want
	}
	res, err := model.RunRead(sim.New(sim.DefaultConfig(1)), s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 6 || res.Errors != 0 || res.BytesRead != 6*16<<10 {
		t.Fatalf("%d ops, %d errors (%s), %d bytes read; want 6, 0, %d", res.Ops, res.Errors, res.FirstError, res.BytesRead, 6*16<<10)
	}
	if res.BytesVerified != 4*16<<10 || res.Mismatches != 2 {
		t.Errorf("%d bytes verified, %d mismatches; want %d (block 1's reads) and 2 (block 2's)", res.BytesVerified, res.Mismatches, 4*16<<10)
	}
	if res.Server.Accepted != 1 || res.Server.KeepaliveReuses != 5 {
		t.Errorf("%d connections accepted, %d keep-alive reuses; want 1 and 5", res.Server.Accepted, res.Server.KeepaliveReuses)
	}
}

// Random reads of a whole block (read size = block size) all start at 0,
// the one offset there is.
func TestRunReadRandomWholeBlocks(t *testing.T) {
	s := model.DefaultReadScenario()
	s.Clients, s.Ops, s.Blocks, s.BlockSize, s.ReadSize = 1, 4, 2, 8<<10, 8<<10
	res, err := model.RunRead(sim.New(sim.DefaultConfig(1)), s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 4 || res.Errors != 0 || res.Mismatches != 0 || res.BytesVerified != 4*8<<10 {
		t.Errorf("%d ops, %d errors (%s), %d mismatches, %d bytes verified; want 4, 0, 0, %d",
			res.Ops, res.Errors, res.FirstError, res.Mismatches, res.BytesVerified, 4*8<<10)
	}
}

// OpenBlockFiles counts the block and meta fds reads hold, pooled
// (reactor) or each connection's own (threaded): seen at every event of a
// run of four clients, it peaks where PeakBlockFiles says and ends at 0.
func TestOpenBlockFilesInBothModes(t *testing.T) {
	for _, mode := range []model.ServerMode{model.Reactor, model.Threaded} {
		s := model.DefaultReadScenario()
		s.Clients, s.Ops, s.Blocks, s.BlockSize, s.ReadSize = 4, 5, 4, 64<<10, 16<<10
		s.Server.Mode = mode
		w := sim.New(sim.DefaultConfig(2))
		var dn *model.Datanode
		s.Observe = func(d *model.Datanode, _ []*model.Client) { dn = d }
		peak := 0
		w.AfterEach(func() {
			if dn != nil {
				peak = max(peak, dn.OpenBlockFiles())
			}
		})
		res, err := model.RunRead(w, s, time.Hour)
		if err != nil || res.Errors != 0 {
			t.Fatalf("%s: %v, %d errors (%s)", mode, err, res.Errors, res.FirstError)
		}
		if peak < 2 || peak != res.PeakBlockFiles || dn.OpenBlockFiles() != 0 {
			t.Errorf("%s: block files open at most %d, peak %d, %d at the end; want the peak (at least 2) and 0",
				mode, peak, res.PeakBlockFiles, dn.OpenBlockFiles())
		}
	}
}

// A parallel read whose datanode cannot store a block says which: with
// room on its disk for one 64 KiB block, the second fails ENOSPC.
func TestParallelReadNamesTheBlockItCouldNotWrite(t *testing.T) {
	c := sim.DefaultConfig(1)
	c.Disk.Capacity = 100 << 10
	s := model.DefaultParallelRead()
	s.Files, s.Readers, s.Iterations, s.FileSize = 2, 1, 1, 64<<10
	_, err := model.RunParallelRead(sim.New(c), s, time.Hour)
	if !errors.Is(err, model.ErrNoSpace) || !strings.Contains(err.Error(), "parallel read: write block 2: ") {
		t.Fatalf("run: %v, want block 2's ENOSPC", err)
	}
}

// A parallel read counts the reads that failed and names the first
// failure: with the datanode storing half of the block, every read that
// reaches past the half is refused, and each is counted once.
func TestParallelReadCountsItsFailures(t *testing.T) {
	s := model.DefaultParallelRead()
	s.Files, s.Readers, s.Iterations, s.FileSize = 1, 4, 5, 64<<10
	s.Stored = func(_ uint64, want []byte) []byte { return want[:len(want)/2] }
	res, err := model.RunParallelRead(sim.New(sim.DefaultConfig(1)), s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ops := s.Files * s.Readers * s.Iterations
	if res.Errors == 0 || res.Errors == ops || res.Reads+res.Streams+res.Errors != ops || !strings.Contains(res.FirstError, "past the end of block 1") {
		t.Errorf("%d reads, %d streams, %d errors of %d ops (first %q); want some but not all failed, each op counted once, the first failure named", res.Reads, res.Streams, res.Errors, ops, res.FirstError)
	}
}

// The readers' fd limit is what they can hold at once and no less: a
// reader whose two clients each keep a connection cached fills it (its
// loop's two fds, the main loop's two, two connections), and reads on
// without a failure.
func TestParallelReadersFDLimitHoldsWhatTheyKeep(t *testing.T) {
	s := model.DefaultParallelRead()
	s.Files, s.Readers, s.Iterations, s.FileSize = 1, 1, 20, 4096
	w := sim.New(sim.DefaultConfig(1))
	res, err := model.RunParallelRead(w, s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("%d of %d reads failed (first %q)", res.Errors, s.Iterations, res.FirstError)
	}
	for _, p := range w.Processes() {
		if p.Name() == "readers" {
			if fds := p.FDs(); fds.Peak != 6 || fds.Limit != 6 {
				t.Errorf("readers' fds: peak %d, limit %d; want both 6", fds.Peak, fds.Limit)
			}
			return
		}
	}
	t.Error("no readers process")
}

// A TCP pattern run serves every op, with replies and one-way, and
// reports the server's receive buffer (fixed here at 64 KiB).
func TestTCPPatternRunsBothWays(t *testing.T) {
	c := sim.DefaultConfig(1)
	c.TCP.RcvBuf, c.TCP.RcvBufMax = 65536, 0
	res, err := model.RunTCPPattern(sim.New(c), model.TCPPattern{Writes: 2, Msg: 8, Reply: 1024, Ops: 3, NoDelay: true}, time.Hour)
	if err != nil {
		t.Fatalf("with replies: %v", err)
	}
	if res.Latencies.Len() != 3 || res.ServerRcvBuf != 65536 {
		t.Errorf("with replies: %d ops, server receive buffer %d; want 3 and 65536", res.Latencies.Len(), res.ServerRcvBuf)
	}
	res, err = model.RunTCPPattern(sim.New(c), model.TCPPattern{Sizes: []int{600, 100, 600}, Gap: time.Millisecond, Ops: 5}, time.Hour)
	if err != nil {
		t.Fatalf("one-way: %v", err)
	}
	if res.Latencies.Len() != 5 || len(res.WriteLatencies) != 3 || res.WriteLatencies[2].Len() != 5 || res.ServerRcvBuf != 65536 {
		t.Errorf("one-way: %d ops, %d writes measured, server receive buffer %d", res.Latencies.Len(), len(res.WriteLatencies), res.ServerRcvBuf)
	}
}
