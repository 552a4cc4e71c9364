package shortcircuit_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
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

// The read patterns: sequential reads each block from its start in
// ReadSize steps, moving to the next block, after the last back to the
// first, when a read would run past the block's end (3 reads a block
// here, over blocks 1, 2, 1, 2); random may read a whole block, at
// offset 0, the only one there is. Every read returns the bytes of the
// block it asked for.
func TestReadScenarioPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern                   string
		blocks, blockSize, readSz int
	}{
		{"sequential", 2, 100_000, 30_000},
		{"random", 4, 64 << 10, 64 << 10},
	} {
		s := shortcircuit.DefaultReadScenario()
		s.Path, s.Pattern, s.Readers, s.Ops = "sc", tc.pattern, 2, 12
		s.Blocks, s.BlockSize, s.ReadSize = tc.blocks, tc.blockSize, tc.readSz
		res, err := shortcircuit.RunRead(simWorld(), s, time.Hour)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if res.Ops != 24 || res.Errors != 0 || res.Mismatches != 0 || res.BytesRead != 24*int64(tc.readSz) {
			t.Errorf("%s: %d ops, %d errors (%s), %d mismatches, %d bytes read", tc.pattern, res.Ops, res.Errors, res.FirstError, res.Mismatches, res.BytesRead)
		}
	}
	// The walk itself, read by read.
	s := shortcircuit.DefaultReadScenario()
	s.Blocks, s.BlockSize, s.ReadSize = 2, 100_000, 30_000
	type read struct {
		block uint64
		off   int64
	}
	var got []read
	for seq, i := int64(0), 0; i < 7; i++ {
		var r read
		r.block, r.off, seq = s.SequentialRead(seq)
		got = append(got, r)
	}
	want := []read{{1, 0}, {1, 30_000}, {1, 60_000}, {2, 0}, {2, 30_000}, {2, 60_000}, {1, 0}}
	if !slices.Equal(got, want) {
		t.Errorf("sequential reads %v, want %v", got, want)
	}
}

// Each reader takes fds of its own (a loop, connections), so the client
// process's fd limit grows with the readers: a thousand of them read
// without running out.
func TestReadScenarioManyReadersHaveFDs(t *testing.T) {
	s := shortcircuit.DefaultReadScenario()
	s.Path, s.Readers, s.Ops = "sc", 1000, 1
	res, err := shortcircuit.RunRead(simWorld(), s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 1000 || res.Errors != 0 || res.Mismatches != 0 {
		t.Errorf("%d ops, %d errors (%s), %d mismatches", res.Ops, res.Errors, res.FirstError, res.Mismatches)
	}
	if res.LeakedClientFDs != 0 || res.LeakedServerFDs != 0 {
		t.Errorf("leaked %d client and %d server fds", res.LeakedClientFDs, res.LeakedServerFDs)
	}
}

// The datanode holds the blocks the readers draw from, 1 to Blocks, and
// no other.
func TestReadScenarioStoresOnlyItsBlocks(t *testing.T) {
	s := shortcircuit.DefaultReadScenario()
	s.Path, s.Readers, s.Ops, s.Blocks = "sc", 1, 1, 3
	w := sim.New(sim.DefaultConfig(1))
	if _, err := shortcircuit.RunRead(w, s, time.Hour); err != nil {
		t.Fatal(err)
	}
	names, err := w.Process("datanode").Disk().List("data")
	if err != nil {
		t.Fatal(err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return strings.HasSuffix(n, ".meta") })
	if want := []string{"blk_1", "blk_2", "blk_3"}; !slices.Equal(names, want) {
		t.Errorf("the datanode's block files %q, want %q", names, want)
	}
}

// Validate takes each field at its bounds and refuses it past them.
func TestReadScenarioValidate(t *testing.T) {
	for _, tc := range []struct {
		what string
		set  func(s *shortcircuit.ReadScenario)
		ok   bool
	}{
		{"the default", func(s *shortcircuit.ReadScenario) {}, true},
		{"path uds", func(s *shortcircuit.ReadScenario) { s.Path = "uds" }, true},
		{"path nfs", func(s *shortcircuit.ReadScenario) { s.Path = "nfs" }, false},
		{"1 reader", func(s *shortcircuit.ReadScenario) { s.Readers = 1 }, true},
		{"0 readers", func(s *shortcircuit.ReadScenario) { s.Readers = 0 }, false},
		{"4096 readers", func(s *shortcircuit.ReadScenario) { s.Readers, s.Ops = 4096, 1 }, true},
		{"4097 readers", func(s *shortcircuit.ReadScenario) { s.Readers, s.Ops = 4097, 1 }, false},
		{"0 ops", func(s *shortcircuit.ReadScenario) { s.Ops = 0 }, false},
		{"as many reads as a run holds", func(s *shortcircuit.ReadScenario) { s.Readers, s.Ops = 4, model.MaxReads/4 }, true},
		{"more reads than a run holds", func(s *shortcircuit.ReadScenario) { s.Readers, s.Ops = 4, model.MaxReads/4+1 }, false},
		{"1 block", func(s *shortcircuit.ReadScenario) { s.Blocks = 1 }, true},
		{"0 blocks", func(s *shortcircuit.ReadScenario) { s.Blocks = 0 }, false},
		{"65536 blocks", func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize, s.ReadSize = 1<<16, 1, 1 }, true},
		{"65537 blocks", func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize, s.ReadSize = 1<<16+1, 1, 1 }, false},
		{"block size 0", func(s *shortcircuit.ReadScenario) { s.BlockSize = 0 }, false},
		{"block size 256 MiB", func(s *shortcircuit.ReadScenario) { s.BlockSize = 256 << 20 }, true},
		{"block size past 256 MiB", func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize = 1, 256<<20+1 }, false},
		{"read size = block size", func(s *shortcircuit.ReadScenario) { s.ReadSize = s.BlockSize }, true},
		{"read size past the block size", func(s *shortcircuit.ReadScenario) { s.ReadSize = s.BlockSize + 1 }, false},
		{"read size 0", func(s *shortcircuit.ReadScenario) { s.ReadSize = 0 }, false},
		{"4 GiB of blocks", func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize = 16, 256<<20 }, true},
		{"past 4 GiB of blocks", func(s *shortcircuit.ReadScenario) { s.Blocks, s.BlockSize = 17, 256<<20 }, false},
		{"pattern sequential", func(s *shortcircuit.ReadScenario) { s.Pattern = "sequential" }, true},
		{"pattern strided", func(s *shortcircuit.ReadScenario) { s.Pattern = "strided" }, false},
		{"1 core", func(s *shortcircuit.ReadScenario) { s.Cores = 1 }, true},
		{"0 cores", func(s *shortcircuit.ReadScenario) { s.Cores = 0 }, false},
		{"1024 cores", func(s *shortcircuit.ReadScenario) { s.Cores = 1024 }, true},
		{"1025 cores", func(s *shortcircuit.ReadScenario) { s.Cores = 1025 }, false},
		{"backlog 0", func(s *shortcircuit.ReadScenario) { s.Backlog = 0 }, true},
		{"backlog 65535", func(s *shortcircuit.ReadScenario) { s.Backlog = 65535 }, true},
		{"backlog -1", func(s *shortcircuit.ReadScenario) { s.Backlog = -1 }, false},
		{"backlog 65536", func(s *shortcircuit.ReadScenario) { s.Backlog = 65536 }, false},
		{"cache of 0 shards (the default)", func(s *shortcircuit.ReadScenario) { s.Cache = shortcircuit.CacheConfig{} }, true},
		{"cache of 4 shards, capacity 3", func(s *shortcircuit.ReadScenario) { s.Cache.Shards, s.Cache.Capacity = 4, 3 }, false},
		{"cache of 1024 shards", func(s *shortcircuit.ReadScenario) { s.Cache.Shards, s.Cache.Capacity = 1024, 1024 }, true},
		{"cache of 1025 shards", func(s *shortcircuit.ReadScenario) { s.Cache.Shards, s.Cache.Capacity = 1025, 1025 }, false},
	} {
		s := shortcircuit.DefaultReadScenario()
		tc.set(&s)
		if err := s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate says %v, want ok %v", tc.what, err, tc.ok)
		}
		if !tc.ok {
			// RunRead refuses it before it starts anything.
			if res, err := shortcircuit.RunRead(simWorld(), s, time.Second); err == nil || res != nil {
				t.Errorf("%s: RunRead ran it (%v)", tc.what, err)
			}
		}
	}
}

// A run whose datanode runs short of fds (a table of 16, too small for
// any domain connection beside its reserve) reports what failed: each
// failed read as an error, with the first error's text (some reads, not
// all: how many fail depends on the fds the table leaves block files),
// each reader's fallback to TCP (the four first misses all fail, and
// turn short-circuit off for the rest of the run), and only the reads
// that succeeded in the bytes read; and it still leaves nothing open (a
// domain connection kept waiting for room that could never come held its
// fd after its client gave up).
func TestReadScenarioCountsFailures(t *testing.T) {
	cfg := sim.DefaultConfig(1)
	cfg.FDLimit = 16
	s := shortcircuit.DefaultReadScenario()
	s.Ops, s.Readers = 20, 4
	res, err := shortcircuit.RunRead(sim.New(cfg), s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 80 || res.Errors == 0 || res.Errors == res.Ops || !strings.Contains(res.FirstError, "too many open files") {
		t.Errorf("%d ops, %d errors (first %q); want 80 ops, some but not all failed for want of an fd", res.Ops, res.Errors, res.FirstError)
	}
	if res.Fallbacks != s.Readers {
		t.Errorf("%d fallbacks (%d misses); want one for each of the %d readers", res.Fallbacks, res.Misses, s.Readers)
	}
	if want := int64(res.Ops-res.Errors) * int64(s.ReadSize); res.BytesRead != want || res.Mismatches != 0 {
		t.Errorf("%d bytes read, %d mismatches; want %d (the reads that succeeded), none", res.BytesRead, res.Mismatches, want)
	}
	if res.LeakedClientFDs != 0 || res.LeakedServerFDs != 0 {
		t.Errorf("leaked %d client and %d server fds", res.LeakedClientFDs, res.LeakedServerFDs)
	}
}
