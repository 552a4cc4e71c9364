package shortcircuit

import (
	"bytes"
	"fmt"
	"time"

	"xceiver/model"
)

// ReadScenario is the local-read workload: one datanode, one client
// process on the same host with Readers reader threads, each doing Ops
// reads of ReadSize bytes over TCP, over the domain socket (data
// traffic), or short-circuit through the shared cache.
type ReadScenario struct {
	Path      string // tcp, uds or sc
	Readers   int
	Ops       int // per reader
	ReadSize  int
	Blocks    int
	BlockSize int
	Pattern   string // random or sequential
	Cores     int    // the client process's cores (sim)
	Cache     CacheConfig
	// SkipChecksum reads short-circuit without verifying CRC32C.
	SkipChecksum bool
	// NoTransferTo has the datanode copy TCP reads through a buffer
	// instead of sending their data with sendfile.
	NoTransferTo bool
	// Backlog is the datanode's domain socket accept queue (0:
	// model.DefaultBacklog). At 1, which holds two, readers that connect
	// at once find it full and retry (model.RetryUnixDial).
	Backlog int
	// CPUTime reads a process's CPU use (the world's; nil: not measured).
	CPUTime func(model.Process) time.Duration
}

// sequentialRead is the read a reader of the sequential pattern makes at
// position seq of its walk over the blocks (seq/BlockSize whole blocks
// in, counting from block 1 and back to it after the last), and the
// position after it: ReadSize steps from a block's start, on to the next
// block's start when a read would run past the block's end.
func (s *ReadScenario) sequentialRead(seq int64) (block uint64, off, next int64) {
	block = uint64(seq/int64(s.BlockSize))%uint64(s.Blocks) + 1
	off = seq % int64(s.BlockSize)
	if off+int64(s.ReadSize) > int64(s.BlockSize) {
		off = 0
		block = block%uint64(s.Blocks) + 1
		seq = (seq/int64(s.BlockSize) + 1) * int64(s.BlockSize)
	}
	return block, off, seq + int64(s.ReadSize)
}

// DefaultReadScenario is a small run of each path.
func DefaultReadScenario() ReadScenario {
	return ReadScenario{Path: "sc", Readers: 4, Ops: 100, ReadSize: 64 << 10, Blocks: 8, BlockSize: 1 << 20, Pattern: "random", Cores: 4, Cache: DefaultCacheConfig()}
}

// SocketName is the datanode's domain socket in a RunRead world (relative:
// under the world's directory).
const SocketName = "dn_socket"

// Validate checks s's values.
func (s *ReadScenario) Validate() error {
	switch {
	case s.Path != "tcp" && s.Path != "uds" && s.Path != "sc":
		return fmt.Errorf("--path %q: want tcp, uds or sc", s.Path)
	case s.Readers < 1 || s.Readers > 4096:
		return fmt.Errorf("--readers %d outside [1, 4096]", s.Readers)
	case s.Ops < 1:
		return fmt.Errorf("--ops %d: want at least 1", s.Ops)
	case s.Ops > model.MaxReads/s.Readers:
		return fmt.Errorf("--readers %d × --ops %d is more than %d reads in one run", s.Readers, s.Ops, model.MaxReads)
	case s.Blocks < 1 || s.Blocks > 1<<16:
		return fmt.Errorf("--blocks %d outside [1, 65536]", s.Blocks)
	case s.BlockSize < 1 || s.BlockSize > 256<<20:
		return fmt.Errorf("--block-size %d outside [1, 256 MiB]", s.BlockSize)
	case s.ReadSize < 1 || s.ReadSize > s.BlockSize:
		return fmt.Errorf("--read-size %d outside [1, block size %d]", s.ReadSize, s.BlockSize)
	case int64(s.Blocks)*int64(s.BlockSize) > 4<<30:
		return fmt.Errorf("--blocks %d × --block-size %d exceeds 4 GiB", s.Blocks, s.BlockSize)
	case s.Pattern != "random" && s.Pattern != "sequential":
		return fmt.Errorf("--pattern %q: want random or sequential", s.Pattern)
	case s.Cores < 1 || s.Cores > 1024:
		return fmt.Errorf("--cores %d outside [1, 1024]", s.Cores)
	case s.Backlog < 0 || s.Backlog > 65535:
		return fmt.Errorf("--backlog %d outside [0, 65535]", s.Backlog)
	}
	c := s.Cache
	return c.fill()
}

// ReadResult is what a run measured.
type ReadResult struct {
	Latencies     model.LatencyLog // of every read: listed up to a few thousand, then in buckets
	Ops, Errors   int
	Mismatches    int
	BytesRead     int64
	Elapsed       time.Duration // first call to last return (world time)
	ClientPeakFDs int
	Hits, Misses  int
	Shared        int // misses served by another reader's fetch
	FDsReceived   int
	Fallbacks     int
	// DialRetries counts the uds path's connects that found the domain
	// socket's accept queue full and tried again (model.ClientStats; the
	// sc path's fd requests retry too, uncounted).
	DialRetries int
	// CPU used during the reads by the client and the datanode process
	// (when ReadScenario.CPUTime is set).
	ClientCPU, ServerCPU time.Duration
	// After the run and every close: what is left beyond the baselines.
	LeakedClientFDs, LeakedServerFDs int
	FirstError                       string
}

// ThroughputMBps is bytes read per second of world time, in MB/s.
func (r *ReadResult) ThroughputMBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.BytesRead) / 1e6 / r.Elapsed.Seconds()
}

// RunRead runs s in w.
func RunRead(w model.World, s ReadScenario, limit time.Duration) (*ReadResult, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	res := &ReadResult{}
	const path = SocketName
	contents := make([][]byte, s.Blocks+1)
	var dnProc model.Process
	var dn *model.Datanode
	var srv *Server
	var dnBase int
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dnProc = p
		store := model.NewBlockStore(p.Disk(), "data")
		for i := 1; i <= s.Blocks; i++ {
			contents[i] = model.BlockContent(uint64(i), s.BlockSize)
			// Shared: contents[i] is what the readers check against, never
			// changed, so the disk need not hold a copy of its own.
			if _, err := store.WriteShared(uint64(i), contents[i]); err != nil {
				w.Fail(err)
				return
			}
		}
		var err error
		if dn, err = model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: addrFor(w), Keepalive: time.Second, PoolIdle: 500 * time.Millisecond, NoTransferTo: s.NoTransferTo}); err != nil {
			w.Fail(err)
			return
		}
		if srv, err = Start(dn, ServerConfig{Path: path, Backlog: s.Backlog}); err != nil {
			w.Fail(err)
			return
		}
		dnBase = p.FDs().Open
		w.Spawn("client", model.ProcessConfig{Cores: s.Cores, FDLimit: 4096 + 4*s.Readers}, func(cp model.Process) {
			runReaders(w, cp, dnProc, dn.Addr(), path, s, contents, res, func(done func()) {
				// Past the keep-alive and pool idle time, then stop.
				cp.MainLoop().AfterFunc(2*time.Second, func() {
					res.LeakedClientFDs = cp.FDs().Open - 2
					dnProc.MainLoop().Post(func() {
						res.LeakedServerFDs = dnProc.FDs().Open - dnBase
						srv.Stop()
						dn.Stop()
						dnProc.MainLoop().AfterFunc(100*time.Millisecond, done)
					})
				})
			})
		})
	})
	if err != nil {
		return nil, err
	}
	if err := w.Run(limit); err != nil {
		return nil, err
	}
	return res, nil
}

func addrFor(w model.World) string {
	if w.Kind() == "real" {
		return "127.0.0.1:0"
	}
	return "dn:50010"
}

type reader interface {
	read(block uint64, off, n int64, done func(model.Result))
	close()
}

// The readers read into a buffer of their own, as a thread's pread into
// its buffer: each read's data is checked in done and then let go.
type tcpReader struct {
	c   *model.Client
	buf []byte
}

func (r tcpReader) read(block uint64, off, n int64, done func(model.Result)) {
	r.c.ReadInto(block, 0, off, n, r.buf, done)
}
func (r tcpReader) close() { r.c.Close() }

type scReader struct {
	c   *Client
	buf []byte
}

func (r scReader) read(block uint64, off, n int64, done func(model.Result)) {
	r.c.ReadInto(block, 0, off, n, r.buf, func(res model.Result, _ bool) { done(res) })
}
func (r scReader) close() { r.c.Close() }

// runReaders starts the reader threads of the client process cp and, once
// all are done and closed, calls stop (which calls its argument to stop
// the world).
func runReaders(w model.World, cp, dnProc model.Process, tcpAddr, path string, s ReadScenario, contents [][]byte, res *ReadResult, stop func(func())) {
	var sh *Shared
	if s.Path == "sc" {
		var err error
		if sh, err = NewShared(cp, SharedConfig{Cache: s.Cache}); err != nil {
			w.Fail(err)
			return
		}
	}
	var readers []reader
	var loops []model.Loop
	var scs []*Client
	for i := 0; i < s.Readers; i++ {
		l, err := cp.NewLoop(fmt.Sprintf("reader-%d", i))
		if err != nil {
			w.Fail(err)
			return
		}
		loops = append(loops, l)
		tcfg := model.ClientConfig{Name: fmt.Sprintf("reader-%d", i), Datanode: tcpAddr, NoDelay: true}
		switch s.Path {
		case "tcp":
			c, err := model.NewClient(cp, l, i, tcfg)
			if err != nil {
				w.Fail(err)
				return
			}
			readers = append(readers, tcpReader{c, make([]byte, s.ReadSize)})
		case "uds":
			tcfg.Datanode, tcfg.Network = path, "unix"
			c, err := model.NewClient(cp, l, i, tcfg)
			if err != nil {
				w.Fail(err)
				return
			}
			readers = append(readers, tcpReader{c, make([]byte, s.ReadSize)})
		case "sc":
			c, err := NewClient(cp, l, i, sh, ClientConfig{Path: path, TCP: tcfg, SkipChecksum: s.SkipChecksum})
			if err != nil {
				w.Fail(err)
				return
			}
			scs = append(scs, c)
			readers = append(readers, scReader{c, make([]byte, ReadRoom(int64(s.ReadSize)))})
		}
	}
	main := cp.MainLoop()
	start := w.Now()
	var cpu0, dnCPU0 time.Duration
	if s.CPUTime != nil {
		cpu0, dnCPU0 = s.CPUTime(cp), s.CPUTime(dnProc)
	}
	last := start
	running := s.Readers
	finished := func() {
		res.Elapsed = last - start
		if s.CPUTime != nil {
			res.ClientCPU, res.ServerCPU = s.CPUTime(cp)-cpu0, s.CPUTime(dnProc)-dnCPU0
		}
		res.ClientPeakFDs = cp.FDs().Peak
		for _, r := range readers {
			if t, ok := r.(tcpReader); ok {
				res.DialRetries += t.c.Stats().DialRetries
			}
		}
		for _, c := range scs {
			st := c.Stats()
			res.Hits += st.Hits
			res.Misses += st.Misses
			res.Shared += st.Shared
			res.FDsReceived += st.FDsReceived
			res.Fallbacks += st.Fallbacks
		}
		closeLoops := func() {
			for _, l := range loops {
				l.Close()
			}
			stop(w.Stop)
		}
		// Each reader closes on its own loop and says so; only then are
		// the loops closed, which drops whatever they have pending. A
		// close merely posted could still be waiting when a loaded real
		// world got there (CI: one reader's connection left open, 1
		// client and 1 server fd counted as leaked).
		open := len(readers)
		closed := func() {
			if open--; open > 0 {
				return
			}
			if sh == nil {
				closeLoops()
				return
			}
			sh.Close(main, closeLoops)
		}
		for i, r := range readers {
			loops[i].Post(func() {
				r.close()
				main.Post(closed)
			})
		}
	}
	rng := cp.Rand()
	for i, r := range readers {
		l := loops[i]
		r := r
		ops := 0
		var seq int64
		var next func()
		next = func() {
			if ops == s.Ops {
				main.Post(func() {
					running--
					if running == 0 {
						finished()
					}
				})
				return
			}
			ops++
			var block uint64
			var off int64
			if s.Pattern == "sequential" {
				block, off, seq = s.sequentialRead(seq)
			} else {
				block = uint64(rng.IntN(s.Blocks)) + 1
				off = int64(rng.IntN(s.BlockSize - s.ReadSize + 1))
			}
			t0 := l.Now()
			r.read(block, off, int64(s.ReadSize), func(rr model.Result) {
				t1 := l.Now()
				// The data is checked here and only the verdict goes to
				// the main loop: a main loop behind its 64 readers held
				// every read's data queued (barging locks: 1 GB by a
				// third of bench hdfs-15202's run, growing).
				err, n := rr.Err, int64(len(rr.Data))
				same := err != nil || bytes.Equal(rr.Data, contents[block][off:off+int64(s.ReadSize)])
				main.Post(func() {
					res.Ops++
					res.Latencies.Add(t1 - t0)
					last = max(last, t1)
					if err != nil {
						res.Errors++
						if res.FirstError == "" {
							res.FirstError = err.Error()
						}
					} else {
						res.BytesRead += n
						if !same {
							res.Mismatches++
						}
					}
				})
				next()
			})
		}
		l.Post(next)
	}
}
