package shortcircuit_test

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
)

// Each path reads every byte right, and short-circuit passes two fds per
// replica fetched (a miss that shares another reader's fetch gets none)
// and leaves nothing behind.
func TestReadScenarioPaths(t *testing.T) {
	for _, path := range []string{"tcp", "uds", "sc"} {
		s := shortcircuit.DefaultReadScenario()
		s.Path, s.Ops, s.Readers = path, 30, 3
		res, err := shortcircuit.RunRead(simWorld(), s, time.Hour)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if res.Ops != 90 || res.Errors != 0 || res.Mismatches != 0 {
			t.Errorf("%s: %d ops, %d errors (%s), %d mismatches", path, res.Ops, res.Errors, res.FirstError, res.Mismatches)
		}
		if res.LeakedClientFDs != 0 || res.LeakedServerFDs != 0 {
			t.Errorf("%s: leaked %d client and %d server fds", path, res.LeakedClientFDs, res.LeakedServerFDs)
		}
		if path == "sc" && (res.FDsReceived != 2*(res.Misses-res.Shared) || res.Hits+res.Misses != 90 || res.Hits == 0) {
			t.Errorf("sc: %d fds received for %d misses (%d of them served by another's fetch), %d hits", res.FDsReceived, res.Misses, res.Shared, res.Hits)
		}
		t.Logf("%s: p50 %v, %.0f MB/s, client peak fds %d, hits %d misses %d", path, res.Latencies.Summarize().P50, res.ThroughputMBps(), res.ClientPeakFDs, res.Hits, res.Misses)
	}
}

// More readers connecting at once than the datanode's domain socket has
// accept queue for (128): a connect the full queue refuses (EAGAIN) is
// tried again, as HDFS's blocking DomainSocket connect waits for room,
// in both worlds. Every read failed that way before: 512 errors of 1,024
// in the sim on the uds path, 411 in the real world.
func TestReadScenarioWaitsForRoomInTheAcceptQueue(t *testing.T) {
	worlds := []string{"sim", "real"}
	if testing.Short() {
		worlds = worlds[:1]
	}
	for _, world := range worlds {
		for _, path := range []string{"uds", "sc"} {
			s := shortcircuit.DefaultReadScenario()
			s.Path, s.Readers, s.Ops = path, 256, 2
			var res *shortcircuit.ReadResult
			err := inWorld(t, world, func(w model.World) (err error) {
				res, err = shortcircuit.RunRead(w, s, time.Minute)
				return err
			})
			if err != nil {
				t.Fatalf("%s %s: %v", world, path, err)
			}
			if res.Errors != 0 || res.Mismatches != 0 || res.Ops != 512 {
				t.Errorf("%s %s: %d ops, %d errors (%s), %d mismatches", world, path, res.Ops, res.Errors, res.FirstError, res.Mismatches)
			}
			if res.LeakedClientFDs != 0 || res.LeakedServerFDs != 0 {
				t.Errorf("%s %s: leaked %d client and %d server fds", world, path, res.LeakedClientFDs, res.LeakedServerFDs)
			}
		}
	}
}
