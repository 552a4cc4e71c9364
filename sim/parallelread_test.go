package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

func TestParallelReadVerifiesEveryReadAndNagleSlowsIt(t *testing.T) {
	var mbps [2]float64
	for i, nd := range []bool{false, true} {
		s := model.DefaultParallelRead()
		s.Iterations, s.NoDelay = 100, nd
		w := New(DefaultConfig(1))
		res, err := model.RunParallelRead(w, s, time.Hour)
		if err != nil {
			t.Fatalf("nodelay=%v: %v", nd, err)
		}
		if res.Errors != 0 || res.Mismatches != 0 || res.Reads+res.Streams != s.Readers*s.Iterations {
			t.Fatalf("nodelay=%v: %+v", nd, res)
		}
		// One read in ten is a short stream read.
		if res.Streams < s.Readers*s.Iterations/20 || res.Streams > s.Readers*s.Iterations/5 {
			t.Errorf("nodelay=%v: %d stream reads of %d", nd, res.Streams, s.Readers*s.Iterations)
		}
		mbps[i] = res.MBps()
	}
	if mbps[1] < 5*mbps[0] {
		t.Errorf("throughput %.1f MB/s with Nagle, %.1f without: want NODELAY far faster", mbps[0], mbps[1])
	}
}

func TestReadHeadTakesAFewBytesAndDropsTheConnection(t *testing.T) {
	// (One byte is the least a head can be: 0 asks for a whole read.)
	for _, want := range []int64{1, 10} {
		var got model.Result
		clientWorld(t, model.DatanodeConfig{}, model.ClientConfig{}, func(w *World, p model.Process, cl *model.Client) {
			cl.ReadHead(1, 0, 100, 3996, want, func(r model.Result) {
				got = r
				if cl.Cached() != 0 {
					t.Errorf("head of %d bytes: connection cached after a short read (%d)", want, cl.Cached())
				}
			})
		})
		if got.Err != nil || string(got.Data) != string(model.BlockContent(1, 4096)[100:100+want]) {
			t.Fatalf("ReadHead of %d bytes = %v, %d bytes", want, got.Err, len(got.Data))
		}
	}
}
