package namespace

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
)

// Scenario is HADOOP-6713's workload: a tree of directories with small
// files at the leaves on one datanode; read clients list a directory, pick
// a random entry and descend until they reach a file, then read it; write
// clients create files. Clients are separate processes, each running
// Threads ops at once over its one rpc connection.
type Scenario struct {
	Clients, Threads int
	// Depth levels of Fanout directories each, Files files of FileSize
	// bytes in every leaf directory.
	Depth, Fanout, Files, FileSize int
	// Reads:Writes is the op mix (8:1 is HADOOP-6713's; 1:0 read-only).
	Reads, Writes int
	// ReadData reads each file's block from the datanode (end to end);
	// without it a read stops at getBlockLocations and a write creates an
	// empty file.
	ReadData bool
	// EditLog makes the namenode log every change and sync the log before
	// answering (group commit), on its own disk.
	EditLog bool
	// NamenodeCores and DatanodeCores are the hosts' cores (sim).
	NamenodeCores, DatanodeCores int
	Lock                         LockKind
	RPC                          rpc.ServerConfig
	// Warmup, then Duration of measurement.
	Warmup, Duration time.Duration
	// CPUTime reads a process's CPU use (the world's; nil: not measured).
	CPUTime func(model.Process) time.Duration
}

// DefaultScenario is a small read-only run.
func DefaultScenario() Scenario {
	return Scenario{
		Clients: 32, Threads: 4,
		Depth: 3, Fanout: 4, Files: 4, FileSize: 4096,
		Reads: 1, Writes: 0, ReadData: true, EditLog: true,
		NamenodeCores: 8, DatanodeCores: 8,
		Lock:   RWLock,
		RPC:    rpc.ServerConfig{Readers: 1, Handlers: 10},
		Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond,
	}
}

// ParseMix parses "R:W", each a plain decimal count: strconv.Atoi alone
// would take "+8" and "08", spellings no user means and no flag prints.
func ParseMix(s string) (reads, writes int, err error) {
	r, w, ok := strings.Cut(s, ":")
	ok = ok && plainCount(r) && plainCount(w)
	if ok {
		reads, err = strconv.Atoi(r)
		if err == nil {
			writes, err = strconv.Atoi(w)
		}
	}
	if !ok || err != nil || reads > MaxMix || writes > MaxMix || reads+writes == 0 {
		return 0, 0, fmt.Errorf("mix %q: want READS:WRITES, each 0 to %d and not both 0, e.g. 8:1", s, MaxMix)
	}
	return reads, writes, nil
}

// plainCount reports whether s is digits without a sign or a leading zero.
func plainCount(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}

// Validate checks the scenario's sizes.
func (s Scenario) Validate() error {
	switch {
	case s.Clients < 1 || s.Clients > 4096:
		return fmt.Errorf("--clients %d outside [1, 4096]", s.Clients)
	case s.Threads < 1 || s.Threads > 4096:
		return fmt.Errorf("--threads %d outside [1, 4096]", s.Threads)
	case s.Depth < 0 || s.Depth > MaxDepth:
		return fmt.Errorf("--depth %d outside [0, %d]", s.Depth, MaxDepth)
	case s.Fanout < 1:
		return fmt.Errorf("--fanout %d: want at least 1", s.Fanout)
	case s.Files < 1:
		return fmt.Errorf("--files %d: want at least 1", s.Files)
	case s.FileSize < 1 || s.FileSize > 256<<20:
		return fmt.Errorf("--file-size %d outside [1, 256 MiB]", s.FileSize)
	case s.fileCount() > MaxFiles:
		return fmt.Errorf("tree: --fanout %d to the power --depth %d, times --files %d, is more than %d files", s.Fanout, s.Depth, s.Files, MaxFiles)
	case s.ReadData && int64(s.fileCount())*int64(s.FileSize) > 4<<30:
		return fmt.Errorf("tree: %d files of --file-size %d exceeds 4 GiB of block data (--read-data)", s.fileCount(), s.FileSize)
	case s.Reads < 0 || s.Writes < 0 || s.Reads > MaxMix || s.Writes > MaxMix || s.Reads+s.Writes == 0:
		return fmt.Errorf("--mix %d:%d: want reads and writes from 0 to %d, not both 0", s.Reads, s.Writes, MaxMix)
	case s.RPC.Readers > MaxLoops:
		return fmt.Errorf("--readers %d outside [0, %d]", s.RPC.Readers, MaxLoops)
	case s.RPC.Handlers > MaxLoops:
		return fmt.Errorf("--handlers %d outside [0, %d]", s.RPC.Handlers, MaxLoops)
	case s.NamenodeCores < 1 || s.NamenodeCores > 1024:
		return fmt.Errorf("--namenode-cores %d outside [1, 1024]", s.NamenodeCores)
	case s.DatanodeCores < 1 || s.DatanodeCores > 1024:
		return fmt.Errorf("datanode cores %d outside [1, 1024]", s.DatanodeCores)
	case s.RPC.Readers < 0:
		return fmt.Errorf("--readers %d: want at least 0 (0: the default)", s.RPC.Readers)
	case s.RPC.Handlers < 0:
		return fmt.Errorf("--handlers %d: want at least 0 (0: the default)", s.RPC.Handlers)
	case s.RPC.QueueSize < 0:
		return fmt.Errorf("--queue %d: want at least 0 (0: 100 per handler)", s.RPC.QueueSize)
	case s.Warmup < 0 || s.Warmup > MaxWindow:
		return fmt.Errorf("--warmup %v outside [0, %v]", s.Warmup, MaxWindow)
	case s.Duration <= 0 || s.Duration > MaxWindow:
		return fmt.Errorf("--duration %v outside (0, %v]", s.Duration, MaxWindow)
	}
	_, err := ParseLockKind(string(s.Lock))
	return err
}

const (
	// MaxFiles bounds the tree the namenode and the datanode hold in
	// memory.
	MaxFiles = 1 << 20
	// MaxDepth bounds the tree's depth: with --fanout 1 the directories
	// are a chain as deep as this, which each read descends (1,000 levels
	// run in half a second; 100,000 had not set up after 30 s).
	MaxDepth = 1000
	// MaxMix bounds each side of --mix, which only its ratio matters
	// for: their sum, drawn from, must not wrap (2^63-1:1 did, and
	// panicked).
	MaxMix = 1 << 20
	// MaxWindow bounds --warmup and --duration: a day of virtual time,
	// far past any run's need, and their sum with the run's 10 s of
	// grace cannot overflow a Duration.
	MaxWindow = 24 * time.Hour
	// MaxLoops bounds the rpc server's readers and handlers each.
	MaxLoops = 1024
)

// fileCount is how many files the tree holds, or MaxFiles+1 when that is
// more than MaxFiles (the product of large flags would overflow an int).
func (s Scenario) fileCount() int {
	n := s.Files
	for range s.Depth {
		if n > MaxFiles/s.Fanout {
			return MaxFiles + 1
		}
		n *= s.Fanout
	}
	return min(n, MaxFiles+1)
}

// ScenarioResult is what the measured window saw.
type ScenarioResult struct {
	Window        time.Duration
	Calls         int              // rpc calls completed in the window
	Errors        int              // client ops that failed in the window (see scenarioClient.end)
	Reads, Writes int              // client ops that succeeded in the window
	Latencies     model.LatencyLog // of the window's calls: bounded, however long the window
	NamenodeCPU   time.Duration    // over the window; 0 when not measured
	DatanodeCPU   time.Duration    // likewise
	PeakFDs       int              // the namenode's
	Server        rpc.ServerStats
	EditLog       EditLogStats // over the whole run
	FirstError    string
}

type scenarioClient struct {
	s          *Scenario
	p          model.Process
	loop       model.Loop
	nc         *Client
	from, to   time.Duration
	seq        int
	res        ScenarioResult
	firstError string
}

// RunScenario runs s in w until the window ends.
func RunScenario(w model.World, s Scenario) (ScenarioResult, error) {
	if err := s.Validate(); err != nil {
		return ScenarioResult{}, err
	}
	var (
		res      ScenarioResult
		nn       *Namenode
		nnProc   model.Process
		clients  []*scenarioClient
		cpuStart time.Duration
		dnStart  time.Duration
		dnProc   model.Process
		startErr error
		// opened is when the namenode, the tree built, started the
		// clients and their warm-up (-1: not yet).
		opened time.Duration = -1
	)
	dnAddr, nnAddr := "datanode:50010", "namenode:8020"
	if w.Kind() == "real" {
		dnAddr, nnAddr = "127.0.0.1:0", "127.0.0.1:0"
	}
	fail := func(err error) {
		if startErr == nil {
			startErr = err
		}
		w.Fail(err)
	}
	// Files are numbered in tree order; file k is block FirstBlock+k.
	const firstBlock = 1 << 30
	nfiles := s.fileCount()
	stamps := make([]uint64, nfiles)
	_, err := w.Spawn("datanode", model.ProcessConfig{Cores: s.DatanodeCores}, func(p model.Process) {
		dnProc = p
		cfg := model.DefaultDatanodeConfig()
		cfg.Addr = dnAddr
		if s.ReadData {
			store := model.NewBlockStore(p.Disk(), "data")
			for k := 0; k < nfiles; k++ {
				st, err := store.WriteShared(firstBlock+uint64(k), model.BlockContent(firstBlock+uint64(k), s.FileSize))
				if err != nil {
					fail(err)
					return
				}
				stamps[k] = st
			}
		}
		cfg.Dir = "data"
		dn, err := model.StartDatanode(p, p.MainLoop(), cfg)
		if err != nil {
			fail(err)
			return
		}
		dnAddr = dn.Addr()
		// Room for each client's connection and the loops' own fds (an
		// epoll and a wake-up fd each): without the loops, 200 handlers
		// ran out of fds at 32 clients.
		fdLimit := 4*(s.Clients+64) + 2*(s.RPC.Readers+s.RPC.Handlers)
		w.Spawn("namenode", model.ProcessConfig{Cores: s.NamenodeCores, FDLimit: fdLimit}, func(p model.Process) {
			nnProc = p
			rcfg := s.RPC
			rcfg.Addr = nnAddr
			var err error
			editLog := ""
			if s.EditLog {
				editLog = "edits"
			}
			nn, err = StartNamenode(p, p.MainLoop(), NamenodeConfig{
				Namespace: Config{Lock: s.Lock, Datanode: dnAddr, FirstBlock: firstBlock, EditLog: editLog},
				RPC:       rcfg,
			})
			if err != nil {
				fail(err)
				return
			}
			s.populate(nn.NS, stamps)
			nnAddr = nn.Server.Addr()
			loop := p.MainLoop()
			start := loop.Now()
			loop.AfterFunc(s.Warmup, func() {
				if s.CPUTime != nil {
					cpuStart, dnStart = s.CPUTime(p), s.CPUTime(dnProc)
				}
			})
			loop.AfterFunc(s.Warmup+s.Duration, func() {
				if s.CPUTime != nil {
					res.NamenodeCPU = s.CPUTime(p) - cpuStart
					res.DatanodeCPU = s.CPUTime(dnProc) - dnStart
				}
				res.PeakFDs = p.FDs().Peak
				// In-flight calls are not waited for: the window is over.
				loop.AfterFunc(time.Millisecond, w.Stop)
			})
			for i := 0; i < s.Clients; i++ {
				c := &scenarioClient{s: &s, from: start + s.Warmup, to: start + s.Warmup + s.Duration}
				clients = append(clients, c)
				w.Spawn(fmt.Sprintf("client%d", i), model.ProcessConfig{Cores: 1}, func(cp model.Process) {
					c.start(cp, i, nnAddr, dnAddr)
				})
			}
			opened = start
			if w.Kind() != "real" {
				// Run again below, with the limit counted from now.
				w.Stop()
			}
		})
	})
	if err != nil {
		return res, err
	}
	// A simulated run may go on 10 s past the window before it counts as
	// stuck. The clients start (the warm-up begins) once the datanode has
	// written every file (--read-data), about 165 µs of virtual time a
	// file here, so that limit counts from then: counted from 0, 65,536
	// files reached it before the first call. The first run ends there
	// (the namenode stops it), with a limit of its own, 10 ms a file
	// more (60 times a file's cost on the default disk, whose two syncs
	// are most of it); the second goes on as the run would have. (The
	// real world runs without one.)
	if w.Kind() == "real" {
		err = w.Run(0)
	} else {
		window := s.Warmup + s.Duration + 10*time.Second
		err = w.Run(window + time.Duration(nfiles)*10*time.Millisecond)
		if err == nil && opened >= 0 {
			err = w.Run(opened + window)
		}
	}
	if err != nil {
		if startErr != nil {
			return res, startErr
		}
		return res, err
	}
	res.Window = s.Duration
	if nn != nil {
		res.Server = nn.Server.Stats()
		res.EditLog = nn.NS.EditLogStats()
	}
	_ = nnProc
	for _, c := range clients {
		res.Calls += c.res.Calls
		res.Errors += c.res.Errors
		res.Reads += c.res.Reads
		res.Writes += c.res.Writes
		res.Latencies.Merge(&c.res.Latencies)
		if res.FirstError == "" {
			res.FirstError = c.firstError
		}
	}
	return res, nil
}

// populate builds the tree straight into the namespace (before the run,
// outside the lock: nothing else runs yet).
func (s Scenario) populate(ns *Namespace, stamps []uint64) {
	k := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth == s.Depth {
			for f := 0; f < s.Files; f++ {
				path := fmt.Sprintf("%s/f%d", dir, f)
				blocks := 0
				if s.ReadData {
					blocks = 1
				}
				ns.Apply(Request{Method: MethodCreate, Path: path, Blocks: blocks})
				var done []Location
				if s.ReadData {
					done = []Location{{Block: 1<<30 + uint64(k), Stamp: stamps[k], Length: int64(s.FileSize)}}
				}
				ns.Apply(Request{Method: MethodComplete, Path: path, Done: done})
				k++
			}
			return
		}
		for d := 0; d < s.Fanout; d++ {
			sub := fmt.Sprintf("%s/d%d", dir, d)
			ns.Apply(Request{Method: MethodMkdir, Path: sub})
			walk(sub, depth+1)
		}
	}
	walk("", 0)
}

func (c *scenarioClient) start(p model.Process, id int, nnAddr, dnAddr string) {
	c.p, c.loop = p, p.MainLoop()
	rc, err := rpc.NewClient(p, c.loop, rpc.ClientConfig{})
	if err != nil {
		p.World().Fail(err)
		return
	}
	c.nc = &Client{RPC: rc, Loop: c.loop, Addr: nnAddr}
	var dc *model.Client
	if c.s.ReadData {
		if dc, err = model.NewClient(p, c.loop, id, model.ClientConfig{Datanode: dnAddr, MintToken: c.nc.MintToken}); err != nil {
			p.World().Fail(err)
			return
		}
	}
	c.nc.Datanode = func(string) *model.Client { return dc }
	// A failed call is counted as an error by the op it ends (end), not
	// here: so is a failed datanode read or write, which is no call.
	c.nc.OnCall = func(_ uint8, d time.Duration, _ error) {
		if !c.inWindow() {
			return
		}
		c.res.Calls++
		c.res.Latencies.Add(d)
	}
	c.seq = id << 20
	for t := 0; t < c.s.Threads; t++ {
		c.next()
	}
}

func (c *scenarioClient) inWindow() bool {
	now := c.loop.Now()
	return now >= c.from && now < c.to
}

// end ends an op of one of the client's threads, counting it in done
// (Reads or Writes) if it succeeded, and starts the thread's next op.
// One that failed is an error instead, counted here once: every failed
// call ends its op (a read's list or getBlockLocations, a write's create
// or complete), as does a failed datanode read or write, so each failed
// op has one error, whether a call's or the datanode's. A read refused
// EINCOMPLETE is neither: the scenario's own writers create files in the
// directories readers descend, and a reader that picks one between its
// create and its complete is rightly refused it; that is the workload's
// race, not a failure, but no file was read.
func (c *scenarioClient) end(done *int, err error) {
	if c.inWindow() {
		switch {
		case err == nil:
			*done++
		case IsCode(err, EINCOMPLETE):
		default:
			c.res.Errors++
			if c.firstError == "" {
				c.firstError = err.Error()
			}
		}
	}
	c.next()
}

// next starts the next op of one of the client's threads.
func (c *scenarioClient) next() {
	if c.loop.Now() >= c.to {
		return
	}
	r := c.p.Rand()
	if r.IntN(c.s.Reads+c.s.Writes) < c.s.Reads {
		c.descend("")
		return
	}
	dir := ""
	for i := 0; i < c.s.Depth; i++ {
		dir += fmt.Sprintf("/d%d", r.IntN(c.s.Fanout))
	}
	c.seq++
	path := fmt.Sprintf("%s/w%d", dir, c.seq)
	done := func(err error) { c.end(&c.res.Writes, err) }
	if c.s.ReadData {
		c.nc.WriteFile(path, model.BlockContent(uint64(c.seq), c.s.FileSize), c.s.FileSize, "", done)
		return
	}
	c.nc.Do(Request{Method: MethodCreate, Path: path}, func(_ Response, err error) {
		if err != nil {
			done(err)
			return
		}
		c.nc.Do(Request{Method: MethodComplete, Path: path}, func(_ Response, err error) { done(err) })
	})
}

// descend lists dir, picks a random entry, and goes down until a file,
// which it reads.
func (c *scenarioClient) descend(dir string) {
	path := dir
	if path == "" {
		path = "/"
	}
	c.nc.Do(Request{Method: MethodList, Path: path}, func(resp Response, err error) {
		if err != nil {
			c.end(&c.res.Reads, err)
			return
		}
		if len(resp.Entries) == 0 {
			c.next() // nothing to read (the tree has no empty directory)
			return
		}
		e := resp.Entries[c.p.Rand().IntN(len(resp.Entries))]
		child := dir + "/" + e.Name
		if e.Dir {
			c.descend(child)
			return
		}
		finish := func(err error) { c.end(&c.res.Reads, err) }
		if c.s.ReadData {
			c.nc.ReadFile(child, func(_ []byte, err error) { finish(err) })
			return
		}
		c.nc.Do(Request{Method: MethodGetBlockLocations, Path: child}, func(_ Response, err error) { finish(err) })
	})
}
