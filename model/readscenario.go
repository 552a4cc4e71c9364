package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ReadScenario is the HDFS-918/941 read workload: a datanode holding
// Blocks blocks of BlockSize bytes, and Clients client processes each doing
// Ops reads of ReadSize bytes, random or sequential.
type ReadScenario struct {
	Clients   int
	Ops       int // per client
	ReadSize  int
	Blocks    int
	BlockSize int
	Pattern   string // "random" or "sequential"
	Server    DatanodeConfig
	Client    ClientConfig
	// Observe, if set, is called once the datanode and clients exist, so a
	// test can check invariants as the run goes.
	Observe func(dn *Datanode, clients []*Client)
	// OnClient, if set, is called with each client as soon as it is
	// made, before its first op (a test sets its History to check the
	// figures the run reports against the ops themselves).
	OnClient func(i int, cl *Client)
	// StartTogether has every client connect (with a one-byte warm-up
	// read, not counted) and wait until all have, then start at once, so
	// their requests overlap: peak resource use then does not depend on
	// how fast processes happen to start.
	StartTogether bool
	// Settle is how long, past the longest idle timeout, the run waits
	// once every op is done before it reads what is left (open fds,
	// connections, handles); 0 means 500 ms. A real run spends most of
	// its wall time here when the timeouts are short: validate, which
	// compares figures taken while the ops run, waits 100 ms.
	Settle time.Duration
	// Serve, if set, stands in for the datanode: the scenario lays the
	// blocks out on the datanode process's disk under Server.Dir, then
	// calls Serve, which serves them to the clients at the address it
	// returns until stop; stop returns the most fds the server had open.
	// The real world's reference servers (real.GoServer) plug in here, so
	// the same clients measure them and the datanode alike.
	Serve func(p Process, dir string) (addr string, stop func() (peakFDs int), err error)
	// CPUTime, if set, reads the CPU every process of the world has used
	// so far (sim: the modelled CPU; real: the OS process's user and
	// system time). It is read when the clients start and when the last
	// one finishes, for ReadResult.CPU.
	CPUTime func() time.Duration
	// ProcessCPU, if set, reads one process's CPU so far (sim: its
	// modelled CPU; real: what its callbacks and work used), read at the
	// same two points for ReadResult.ServerCPU and ClientCPU.
	ProcessCPU func(Process) time.Duration
	// Stored, if set, gives what the datanode stores for block id where
	// the clients expect want (a test plants a wrong replica, checksummed
	// as stored, to check that the clients' verification counts every
	// read of it as a mismatch).
	Stored func(id uint64, want []byte) []byte
	// Bugs plants catalogued bugs in the scenario itself, so check shows
	// it runs this code (properties/scenario.go).
	Bugs ReadScenarioBugs
}

// ReadScenarioBugs are bugs a read scenario can be run with.
type ReadScenarioBugs struct {
	// NoClientClose: a client that has done its reads never closes, so
	// its cached connections stay open until they expire.
	NoClientClose bool
}

// DefaultReadScenario returns the defaults of `xceiver run read`.
func DefaultReadScenario() ReadScenario {
	return ReadScenario{
		Clients: 1, Ops: 200, ReadSize: 32 << 10, Blocks: 8, BlockSize: 1 << 20, Pattern: "random",
		Server: DefaultDatanodeConfig(), Client: DefaultClientConfig(),
	}
}

// MaxReads bounds a read run's reads (clients × ops): a few minutes of
// simulation. Each client lists at most 4,096 latencies (32 KB), and
// the run's log merges the lists while each is exact: 80 MB at the
// bound's 4,096 clients of 2,441 reads.
const MaxReads = 10_000_000

// MaxIdleWait bounds the keep-alive and the peer cache's expiry a read
// run waits out at its end.
const MaxIdleWait = time.Hour

// Validate reports a configuration that cannot run.
func (s *ReadScenario) Validate() error {
	switch {
	case s.Clients < 1 || s.Clients > 4096:
		return fmt.Errorf("--clients %d outside [1, 4096]", s.Clients)
	case s.Ops < 1:
		return fmt.Errorf("--ops must be at least 1 (got %d)", s.Ops)
	case s.Ops > MaxReads/s.Clients:
		// (Compared before multiplying: --ops 2^63-1 would wrap.)
		return fmt.Errorf("--clients %d × --ops %d is more than %d reads in one run", s.Clients, s.Ops, MaxReads)
	case s.Blocks < 1 || s.Blocks > 1<<16:
		return fmt.Errorf("--blocks %d outside [1, 65536]", s.Blocks)
	case s.BlockSize < 1 || s.BlockSize > 256<<20:
		return fmt.Errorf("--block-size %d outside [1, 256 MiB]", s.BlockSize)
	case s.ReadSize < 1 || s.ReadSize > s.BlockSize:
		return fmt.Errorf("--read-size %d outside [1, block size %d]", s.ReadSize, s.BlockSize)
	case s.Pattern != "random" && s.Pattern != "sequential":
		return fmt.Errorf("--pattern %q: want random or sequential", s.Pattern)
	case int64(s.Blocks)*int64(s.BlockSize) > 4<<30:
		return fmt.Errorf("--blocks × --block-size exceeds 4 GiB")
	case s.Server.PoolMax != 0 && s.Server.PoolMax < 2:
		return fmt.Errorf("--pool-max %d: a handle needs 2 fds (data and meta)", s.Server.PoolMax)
	case s.Server.PoolMax > 1<<20:
		return fmt.Errorf("--pool-max %d: at most %d", s.Server.PoolMax, 1<<20)
	case s.Server.Keepalive < 0:
		return fmt.Errorf("--keepalive must not be negative")
	case s.Server.Keepalive > MaxIdleWait:
		// A run waits it out before it counts what is left open (the
		// real world in real time); its sum with the settling time
		// must not wrap, as 2562047h did.
		return fmt.Errorf("--keepalive %v: at most %v", s.Server.Keepalive, MaxIdleWait)
	case s.Client.CacheExpiry > MaxIdleWait:
		return fmt.Errorf("--cache-expiry %v: at most %v", s.Client.CacheExpiry, MaxIdleWait)
	case s.Settle < 0:
		return fmt.Errorf("read scenario: negative settle %v", s.Settle)
	}
	c := s.Server
	return c.fill()
}

// ReadResult is what a read run measured.
type ReadResult struct {
	Latencies      LatencyLog // of every read: listed up to logExact a client, then in buckets
	Ops            int
	Errors         int
	BytesRead      int64
	BytesVerified  int64
	Mismatches     int
	Elapsed        time.Duration // first call to last return
	ServerPeakFDs  int
	ServerPeakThr  int
	PeakBlockFiles int
	Server         DatanodeStats
	ClientStats    ClientStats // summed
	// After the workload and every timeout: what is left.
	ServerBaselineFDs, ServerEndFDs int
	ClientEndFDs                    int // summed over clients, beyond their baseline
	ServerEndConns, ServerEndBufs   int
	ServerEndHandles                int
	FirstError                      string
	// CPU is the CPU used from the clients' start to the last one's end
	// (zero unless ReadScenario.CPUTime is set); ServerCPU and ClientCPU
	// are the datanode's and the clients' share of it (zero unless
	// ReadScenario.ProcessCPU is set).
	CPU, ServerCPU, ClientCPU time.Duration
}

// BlockContent is the deterministic content of block id in the read
// scenario: every byte is checkable without keeping a copy, and a shorter
// content of the same id is a prefix of a longer one. Four xorshift
// streams take turns, eight bytes each: one stream's steps depend on each
// other, four keep the core busy, and making a block costs little next to
// moving it (check makes tens a seed).
func BlockContent(id uint64, size int) []byte {
	b := make([]byte, size)
	x0, x1, x2, x3 := contentLane(id, 0), contentLane(id, 1), contentLane(id, 2), contentLane(id, 3)
	i := 0
	for ; i+32 <= size; i += 32 {
		x0, x1, x2, x3 = xorshift(x0), xorshift(x1), xorshift(x2), xorshift(x3)
		binary.LittleEndian.PutUint64(b[i:], x0)
		binary.LittleEndian.PutUint64(b[i+8:], x1)
		binary.LittleEndian.PutUint64(b[i+16:], x2)
		binary.LittleEndian.PutUint64(b[i+24:], x3)
	}
	if i < size {
		var last [32]byte
		binary.LittleEndian.PutUint64(last[0:], xorshift(x0))
		binary.LittleEndian.PutUint64(last[8:], xorshift(x1))
		binary.LittleEndian.PutUint64(last[16:], xorshift(x2))
		binary.LittleEndian.PutUint64(last[24:], xorshift(x3))
		copy(b[i:], last[:])
	}
	return b
}

// contentLane is the starting state of stream k of block id's content,
// never zero (xorshift stays at zero).
func contentLane(id uint64, k uint64) uint64 { return SplitMix64(id*4+k) | 1 }

// SplitMix64 is one step of splitmix64 from state x: a small or patterned
// integer (a seed, a key) spread over all 64 bits.
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func xorshift(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

// storedContent is what a scenario's datanode stores for block id whose
// clients expect want.
func storedContent(stored func(uint64, []byte) []byte, id uint64, want []byte) []byte {
	if stored == nil {
		return want
	}
	return stored(id, want)
}

// RunRead runs the scenario in w.
func RunRead(w World, s ReadScenario, limit time.Duration) (*ReadResult, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	res := &ReadResult{}
	if s.Server.Addr == "" {
		s.Server.Addr = DefaultAddr(w, "datanode", 50010)
	}
	contents := make([][]byte, s.Blocks)
	for i := range contents {
		contents[i] = BlockContent(uint64(i+1), s.BlockSize)
	}
	var dn *Datanode
	var dnProc Process
	var clients []*Client
	var clientProcs []Process
	var clientBase []int
	finished := 0
	ready := 0           // clients waiting to start together (datanode loop)
	var waiting []func() // their starters
	var firstCall, lastReturn time.Duration
	started := false
	var cpu0, serverCPU0 time.Duration
	procCPU := func(p Process) time.Duration {
		if s.ProcessCPU == nil || p == nil {
			return 0
		}
		return s.ProcessCPU(p)
	}

	clientEnd := func() {
		for i, cp := range clientProcs {
			res.ClientEndFDs += cp.FDs().Open - clientBase[i]
			st := clients[i].Stats()
			res.ClientStats.Ops += st.Ops
			res.ClientStats.Errors += st.Errors
			res.ClientStats.Dials += st.Dials
			res.ClientStats.Reused += st.Reused
			res.ClientStats.DeadPeers += st.DeadPeers
			res.ClientStats.Retries += st.Retries
			res.ClientStats.Expired += st.Expired
			res.ClientStats.ChecksumErrors += st.ChecksumErrors
			res.ClientStats.BytesRead += st.BytesRead
		}
	}
	var stopServe func() int
	settle := func() {
		if stopServe != nil {
			res.ServerPeakFDs = stopServe()
			clientEnd()
			w.Stop()
			return
		}
		// Every op is done: wait past every timeout, then see what is left.
		settleFor := s.Settle
		if settleFor == 0 {
			settleFor = 500 * time.Millisecond
		}
		wait := max(dn.cfg.Keepalive, clients[0].cfg.CacheExpiry, dn.cfg.PoolIdle) + settleFor
		dnProc.MainLoop().AfterFunc(wait, func() {
			fds := dnProc.FDs()
			res.ServerPeakFDs = fds.Peak
			res.ServerEndFDs = fds.Open
			_, res.ServerPeakThr = dnProc.Threads()
			res.PeakBlockFiles = dn.PeakBlockFiles()
			res.Server = dn.Stats()
			res.ServerEndConns = dn.Conns()
			res.ServerEndBufs = dn.BuffersOut()
			if dn.Pool() != nil {
				res.ServerEndHandles = dn.Pool().Handles()
			}
			clientEnd()
			w.Stop()
		})
	}

	// Each client keeps its own tally on its own loop and hands it to the
	// datanode's loop when done: clients run on different threads in the
	// real world.
	clientDone := func(t *readTally) {
		dnProc.MainLoop().Post(func() {
			res.Ops += t.ops
			res.Errors += t.errors
			res.BytesRead += t.bytesRead
			res.BytesVerified += t.bytesVerified
			res.Mismatches += t.mismatches
			res.Latencies.Merge(&t.latencies)
			if res.FirstError == "" {
				res.FirstError = t.firstError
			}
			if !started || t.firstCall < firstCall {
				firstCall, started = t.firstCall, true
			}
			lastReturn = max(lastReturn, t.lastReturn)
			finished++
			if finished == s.Clients {
				res.Elapsed = lastReturn - firstCall
				if s.CPUTime != nil {
					res.CPU = s.CPUTime() - cpu0
				}
				// Clients are spawned after the start, from zero.
				res.ServerCPU = procCPU(dnProc) - serverCPU0
				for _, cp := range clientProcs {
					res.ClientCPU += procCPU(cp)
				}
				settle()
			}
		})
	}

	startClient := func(i int, addr string) {
		name := fmt.Sprintf("client-%d", i)
		_, err := w.Spawn(name, ProcessConfig{}, func(p Process) {
			cfg := s.Client
			cfg.Name = name
			cfg.Datanode = addr
			cl, err := NewClient(p, p.MainLoop(), i, cfg)
			if err != nil {
				w.Fail(err)
				return
			}
			clients[i] = cl
			clientProcs[i] = p
			if s.OnClient != nil {
				s.OnClient(i, cl)
			}
			clientBase[i] = p.FDs().Open
			rng := p.Rand()
			seqBlock := i % s.Blocks
			seqOff := 0
			t := &readTally{}
			var next func()
			next = func() {
				if t.ops == s.Ops {
					if !s.Bugs.NoClientClose {
						cl.Close()
					}
					clientDone(t)
					return
				}
				var block, off int
				if s.Pattern == "random" {
					block = rng.IntN(s.Blocks)
					off = rng.IntN(s.BlockSize - s.ReadSize + 1)
				} else {
					if seqOff+s.ReadSize > s.BlockSize {
						seqBlock, seqOff = (seqBlock+1)%s.Blocks, 0
					}
					block, off = seqBlock, seqOff
					seqOff += s.ReadSize
				}
				start := p.MainLoop().Now()
				if t.ops == 0 {
					t.firstCall = start
				}
				// Verified packet by packet as it arrives: a client
				// keeps no copy of what it read.
				want := contents[block]
				var got int64
				same := true
				sink := func(at int64, b []byte) {
					got += int64(len(b))
					same = same && bytes.Equal(b, want[at:at+int64(len(b))])
					// The check is the client's CPU in real: the
					// sim charges it too.
					p.CPU(CPUCompare, len(b))
				}
				cl.ReadStream(uint64(block+1), 0, int64(off), int64(s.ReadSize), sink, func(r Result) {
					end := p.MainLoop().Now()
					t.lastReturn = end
					t.ops++
					t.latencies.Add(end - start)
					if r.Err != nil {
						t.errors++
						if t.firstError == "" {
							t.firstError = r.Err.Error()
						}
					} else {
						t.bytesRead += got
						if same && got == int64(s.ReadSize) {
							t.bytesVerified += got
						} else {
							t.mismatches++
						}
					}
					next()
				})
			}
			if !s.StartTogether {
				next()
				return
			}
			// Warm up: one small read opens the connection (and, in
			// threaded mode, its thread) and leaves it cached, so the
			// start measures serving, not connecting.
			loop := p.MainLoop()
			cl.Read(1, 0, 0, 1, func(r Result) {
				if r.Err != nil {
					w.Fail(fmt.Errorf("read scenario: warm-up read: %w", r.Err))
					return
				}
				dnProc.MainLoop().Post(func() {
					ready++
					waiting = append(waiting, func() { loop.Post(next) })
					if ready == s.Clients {
						for _, f := range waiting {
							f()
						}
						waiting = nil
					}
				})
			})
		})
		if err != nil {
			w.Fail(err)
		}
	}

	// startClients starts the measurement and the clients, from the
	// server's main loop. One callback per spawn: a spawn costs a
	// directory and a thread (about 0.2 ms here), and 128 of them in one
	// callback ran for 25 ms, a callback the sim runs whole before any
	// event it posted: every client then started at once after it, where
	// real starts each as it is spawned. (The datanode still accepts on
	// this loop after the spawns, in both worlds.)
	//
	// The window opens in a callback of its own, so that the blocks
	// laid out before it are outside it in both worlds: a world counts a
	// callback's CPU when it ends (the real world's accounting, the
	// sim's model), so the callback that opens the window is counted
	// whole.
	startClients := func(p Process, addr string) {
		p.MainLoop().Post(func() {
			if s.CPUTime != nil {
				cpu0 = s.CPUTime()
			}
			serverCPU0 = procCPU(p)
			for i := 0; i < s.Clients; i++ {
				p.MainLoop().Post(func() { startClient(i, addr) })
			}
			if s.Observe != nil && dn != nil {
				p.MainLoop().Post(func() { s.Observe(dn, clients) })
			}
		})
	}

	_, err := w.Spawn("datanode", ProcessConfig{FDLimit: 65536, Cores: 2}, func(p Process) {
		dnProc = p
		// Lay out the blocks before serving: the store is private to
		// this loop until clients connect.
		if s.Server.Dir == "" {
			s.Server.Dir = DefaultDatanodeConfig().Dir
		}
		store := NewBlockStore(p.Disk(), s.Server.Dir)
		if err := store.Load(); err != nil {
			w.Fail(err)
			return
		}
		for i := range contents {
			if _, err := store.WriteShared(uint64(i+1), storedContent(s.Stored, uint64(i+1), contents[i])); err != nil {
				w.Fail(fmt.Errorf("read scenario: write block %d: %w", i+1, err))
				return
			}
		}
		res.ServerBaselineFDs = p.FDs().Open
		clients = make([]*Client, s.Clients)
		clientProcs = make([]Process, s.Clients)
		clientBase = make([]int, s.Clients)
		if s.Serve != nil {
			addr, stop, err := s.Serve(p, s.Server.Dir)
			if err != nil {
				w.Fail(fmt.Errorf("read scenario: serve: %w", err))
				return
			}
			stopServe = stop
			startClients(p, addr)
			return
		}
		var err error
		dn, err = StartDatanode(p, p.MainLoop(), s.Server)
		if err != nil {
			w.Fail(err)
			return
		}
		res.ServerBaselineFDs = p.FDs().Open
		startClients(p, dn.Addr())
	})
	if err != nil {
		return nil, err
	}
	if err := w.Run(limit); err != nil {
		return res, err
	}
	if finished != s.Clients {
		return res, errors.New("read scenario: the world stopped before every client finished")
	}
	return res, nil
}

// readTally is one client's share of a ReadResult.
type readTally struct {
	ops, errors, mismatches  int
	bytesRead, bytesVerified int64
	latencies                LatencyLog
	firstCall, lastReturn    time.Duration
	firstError               string
}

// ThroughputMBps is bytes read per second of elapsed time, in MB/s.
func (r *ReadResult) ThroughputMBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.BytesRead) / 1e6 / r.Elapsed.Seconds()
}
