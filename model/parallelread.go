package model

import (
	"bytes"
	"fmt"
	"time"
)

// ParallelRead is Hadoop's TestParallelRead, the benchmark HDFS-941 was
// measured with: files of one block each, replicated on two datanodes;
// Readers reader threads per file, each doing Iterations reads, 90% of
// them positional reads of a random length from a random offset (to at
// most the file's end), 10% small streaming reads (< 64 bytes) at a random
// offset that leave the rest of the block unread, so that connection
// cannot be cached. Each reader is a thread (a loop) of one reader
// process with a client per datanode, and picks a replica at random per
// read.
type ParallelRead struct {
	Files      int
	Readers    int // per file
	Iterations int // per reader
	FileSize   int
	NoDelay    bool
	// Datanode and Client are the servers' and readers' configurations
	// (addresses are set by the scenario).
	Datanode DatanodeConfig
	Client   ClientConfig
	// OnClient, if set, is called with each client as soon as it is
	// made, before its first op.
	OnClient func(cl *Client)
	// Stored, as ReadScenario.Stored: what both datanodes store for block
	// id where the readers expect want.
	Stored func(id uint64, want []byte) []byte
}

// DefaultParallelRead is TestParallelRead's single-file case with four
// readers.
func DefaultParallelRead() ParallelRead {
	return ParallelRead{Files: 1, Readers: 4, Iterations: 1024, FileSize: 256 << 10,
		Datanode: DefaultDatanodeConfig(), Client: DefaultClientConfig()}
}

// ParallelReadResult is what the readers saw.
type ParallelReadResult struct {
	Reads, Streams int   // positional and short streaming reads done
	Bytes          int64 // bytes read (and verified)
	Errors         int
	Mismatches     int
	Elapsed        time.Duration // first read issued to last read returned
	Latencies      LatencyLog    // of every read
	FirstError     string
}

// MBps is the readers' throughput in MB/s (10^6 bytes).
func (r *ParallelReadResult) MBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds()
}

// Validate reports a configuration that cannot run.
func (s *ParallelRead) Validate() error {
	switch {
	case s.Files < 1 || s.Files > 64, s.Readers < 1 || s.Readers > 256, s.Iterations < 1:
		return fmt.Errorf("parallel read: files %d, readers %d, iterations %d out of range", s.Files, s.Readers, s.Iterations)
	case s.FileSize < 128 || s.FileSize > 64<<20:
		return fmt.Errorf("parallel read: file size %d outside [128, 64 MiB]", s.FileSize)
	}
	return nil
}

// clientsPerReader: a reader has a client per datanode (of two), each
// with at most one connection open.
const clientsPerReader = 2

// RunParallelRead runs the benchmark in w.
func RunParallelRead(w World, s ParallelRead, limit time.Duration) (*ParallelReadResult, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s.Datanode.NoDelay, s.Client.NoDelay = s.NoDelay, s.NoDelay
	contents := make([][]byte, s.Files)
	for i := range contents {
		contents[i] = BlockContent(uint64(i+1), s.FileSize)
	}
	res := &ParallelReadResult{}
	var addrs [2]string
	var first, last time.Duration
	started, done := false, 0
	total := s.Files * s.Readers
	var readers Process

	// Each reader tallies on its own loop and reports to the reader
	// process's main loop.
	report := func(t *parallelTally) {
		readers.MainLoop().Post(func() {
			res.Reads += t.reads
			res.Streams += t.streams
			res.Bytes += t.bytes
			res.Errors += t.errors
			res.Mismatches += t.mismatches
			res.Latencies.Merge(&t.latencies)
			if res.FirstError == "" {
				res.FirstError = t.firstError
			}
			if !started || t.first < first {
				first, started = t.first, true
			}
			last = max(last, t.last)
			done++
			if done == total {
				res.Elapsed = last - first
				w.Stop()
			}
		})
	}

	startReader := func(p Process, file, k int) error {
		loop, err := p.NewLoop(fmt.Sprintf("reader-%d-%d", file, k))
		if err != nil {
			return err
		}
		var cls [clientsPerReader]*Client
		for d := range cls {
			cfg := s.Client
			cfg.Name = fmt.Sprintf("reader-%d-%d/dn%d", file, k, d)
			cfg.Datanode = addrs[d]
			if cls[d], err = NewClient(p, loop, file*s.Readers+k, cfg); err != nil {
				return err
			}
			if s.OnClient != nil {
				s.OnClient(cls[d])
			}
		}
		rng := p.Rand()
		block := uint64(file + 1)
		want := contents[file]
		// The reader's buffer, which each pread fills. TestParallelRead
		// allocates one a read: the test's cost, not the client's, which
		// the sim would pay in its own running time, not in virtual time.
		buf := make([]byte, s.FileSize)
		t := &parallelTally{}
		var next func()
		next = func() {
			if t.ops() == s.Iterations {
				for _, cl := range cls {
					cl.Close()
				}
				report(t)
				return
			}
			cl := cls[rng.IntN(2)]
			start := loop.Now()
			if t.ops() == 0 {
				t.first = start
			}
			check := func(r Result, off int64, n int, stream bool) {
				t.last = loop.Now()
				t.latencies.Add(t.last - start)
				switch {
				case r.Err != nil:
					t.errors++
					if t.firstError == "" {
						t.firstError = r.Err.Error()
					}
				case len(r.Data) != n || !bytes.Equal(r.Data, want[off:off+int64(n)]):
					t.mismatches++
				case stream:
					t.streams++
					t.bytes += int64(n)
				default:
					t.reads++
					t.bytes += int64(n)
				}
				loop.Post(next)
			}
			if rng.IntN(10) == 0 {
				// A short read of a stream: the block from off to its
				// end is requested, a few bytes taken, the rest left.
				off := int64(rng.IntN(s.FileSize - 64))
				n := 1 + rng.IntN(63)
				cl.ReadHead(block, 0, off, int64(s.FileSize)-off, int64(n), func(r Result) { check(r, off, n, true) })
				return
			}
			off := rng.IntN(s.FileSize)
			n := 1 + rng.IntN(s.FileSize-off)
			cl.ReadInto(block, 0, int64(off), int64(n), buf, func(r Result) { check(r, int64(off), n, false) })
		}
		loop.Post(next)
		return nil
	}

	spawnReaders := func() {
		// What the readers can hold at once, so that no configuration
		// runs them out of fds: the process's main loop (an epoll fd and
		// an eventfd), and per reader its loop's two and a connection per
		// client (one op at a time, the one cached or in use). At 64
		// files of 256 readers that is 65,538.
		fds := 2 + total*(2+clientsPerReader)
		if _, err := w.Spawn("readers", ProcessConfig{FDLimit: fds}, func(p Process) {
			readers = p
			for f := 0; f < s.Files; f++ {
				for k := 0; k < s.Readers; k++ {
					if err := startReader(p, f, k); err != nil {
						w.Fail(fmt.Errorf("parallel read: reader: %w", err))
						return
					}
				}
			}
		}); err != nil {
			w.Fail(err)
		}
	}

	// The datanodes start one after the other, then the readers: each is
	// spawned by the one before it once it serves, so the addresses are
	// known before anyone reads them.
	var spawnDatanode func(d int) error
	spawnDatanode = func(d int) error {
		cfg := s.Datanode
		cfg.Addr = DefaultAddr(w, fmt.Sprintf("datanode-%d", d), 50010)
		if cfg.Dir == "" {
			cfg.Dir = DefaultDatanodeConfig().Dir
		}
		// Each datanode its own directory: in the real world they share
		// a file system.
		cfg.Dir = fmt.Sprintf("%s-%d", cfg.Dir, d)
		_, err := w.Spawn(fmt.Sprintf("datanode-%d", d), ProcessConfig{FDLimit: 65536}, func(p Process) {
			store := NewBlockStore(p.Disk(), cfg.Dir)
			if err := store.Load(); err != nil {
				w.Fail(err)
				return
			}
			for i := range contents {
				if _, err := store.Write(uint64(i+1), storedContent(s.Stored, uint64(i+1), contents[i])); err != nil {
					w.Fail(fmt.Errorf("parallel read: write block %d: %w", i+1, err))
					return
				}
			}
			dn, err := StartDatanode(p, p.MainLoop(), cfg)
			if err != nil {
				w.Fail(fmt.Errorf("parallel read: datanode %d: %w", d, err))
				return
			}
			addrs[d] = dn.Addr()
			if d+1 < len(addrs) {
				if err := spawnDatanode(d + 1); err != nil {
					w.Fail(err)
				}
				return
			}
			spawnReaders()
		})
		return err
	}
	if err := spawnDatanode(0); err != nil {
		return nil, err
	}
	if err := w.Run(limit); err != nil {
		return res, err
	}
	if done != total {
		return res, fmt.Errorf("parallel read: %d of %d readers finished", done, total)
	}
	return res, nil
}

// parallelTally is one reader's share of a ParallelReadResult.
type parallelTally struct {
	reads, streams, errors, mismatches int
	bytes                              int64
	first, last                        time.Duration
	firstError                         string
	latencies                          LatencyLog
}

// ops is the reads done, whatever their outcome: a read that returned
// wrong bytes counts too, or a reader of a bad replica would read forever.
func (t *parallelTally) ops() int { return t.reads + t.streams + t.errors + t.mismatches }
