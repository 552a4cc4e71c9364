package properties

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// The scenario system: small, drawn runs of the scenario functions that
// `xceiver run`, `validate` and `bench` drive (model.RunRead,
// model.RunTCPPattern, model.RunParallelRead, shortcircuit.RunRead,
// namespace.RunScenario, model.RunPairs), in sim, fault-free, with their
// results checked:
//
//   - liveness: the scenario returns, every op done, within its limit;
//   - availability: no op fails (nothing is injected);
//   - stream-integrity: every byte read is the block's, every op's bytes
//     all there;
//   - fd-bounds: the datanode's peak fds stay within its baseline, a
//     socket per client connection it can hold, and its pool's block fds;
//   - leak-freedom: a client that has finished holds no connection (it
//     closed them when done, before any timeout), and once every timeout
//     has passed no process holds a socket or an fd beyond its baseline;
//   - shared-write: bytes a scenario hands to WriteShared (tcp-pattern's
//     reply, pairs' requests and replies) stay as they were until the
//     peer has read them (sim.Config.CheckShared).
//
// These are the scenarios' own invariants: the runs measure, and a
// measurement taken from a run that leaked, lost or garbled is wrong.

// Scenario names (ScenarioCase.Scenario).
const (
	ScenarioRead         = "read"
	ScenarioTCPPattern   = "tcp-pattern"
	ScenarioParallelRead = "parallel-read"
	ScenarioSCRead       = "sc-read"
	ScenarioRPC          = "rpc"
	ScenarioPairs        = "pairs"
)

// Scenarios lists them, in the order a case draws them.
var Scenarios = []string{ScenarioRead, ScenarioTCPPattern, ScenarioParallelRead, ScenarioSCRead, ScenarioRPC, ScenarioPairs}

// ScenarioCase is one drawn scenario run: which scenario and its sizes.
// Fields a scenario does not use stay zero.
type ScenarioCase struct {
	Seed     uint64   `json:"seed"`
	Bug      string   `json:"bug,omitempty"`
	Ignore   []string `json:"ignore,omitempty"`
	Scenario string   `json:"scenario"`

	// read, parallel-read (Clients readers per file), sc-read (readers),
	// pairs (pairs).
	Clients   int    `json:"clients,omitempty"`
	Ops       int    `json:"ops,omitempty"` // per client (parallel-read: iterations)
	ReadSize  int    `json:"read_size,omitempty"`
	Blocks    int    `json:"blocks,omitempty"` // parallel-read: files
	BlockSize int    `json:"block_size,omitempty"`
	Pattern   string `json:"pattern,omitempty"`
	// read: the datanode and its clients.
	Server        string        `json:"server,omitempty"` // reactor or threaded
	NoDelay       bool          `json:"nodelay,omitempty"`
	Keepalive     time.Duration `json:"keepalive,omitempty"`
	PoolMax       int           `json:"pool_max,omitempty"`
	InlineIO      bool          `json:"inline_io,omitempty"`
	NoTransferTo  bool          `json:"no_transfer_to,omitempty"`
	CacheCapacity int           `json:"cache_capacity,omitempty"`
	CacheExpiry   time.Duration `json:"cache_expiry,omitempty"`
	StartTogether bool          `json:"start_together,omitempty"`
	// tcp-pattern: Ops ops of Writes writes of Msg bytes, Reply back;
	// pairs: Msg-byte requests, Reply-byte replies.
	Writes int `json:"writes,omitempty"`
	Msg    int `json:"msg,omitempty"`
	Reply  int `json:"reply,omitempty"`
	// tcp-pattern: the connection is reset (a RST to both ends) right
	// after the server's ResetAt-th data segment (0: never).
	ResetAt int `json:"reset_at,omitempty"`
	// read, parallel-read: the datanodes hold a wrong replica of block
	// Stale (every byte differs, checksums valid; 0: none), so every read
	// of it must count as a mismatch.
	Stale int `json:"stale,omitempty"`
	// sc-read: path tcp, uds or sc; cache shards; the domain socket's
	// accept queue (0: the default).
	Path    string `json:"path,omitempty"`
	Shards  int    `json:"shards,omitempty"`
	Backlog int    `json:"backlog,omitempty"`
	// rpc: readers, handlers, lock; Clients clients of Threads ops in
	// flight; a tree Depth × Fanout with Files files; mix Reads:Writes;
	// a window of Duration (also pairs', which opens WarmUp after every
	// pair's first exchange).
	WarmUp   time.Duration `json:"warm_up,omitempty"`
	Readers  int           `json:"readers,omitempty"`
	Handlers int           `json:"handlers,omitempty"`
	Lock     string        `json:"lock,omitempty"`
	Threads  int           `json:"threads,omitempty"`
	Depth    int           `json:"depth,omitempty"`
	Fanout   int           `json:"fanout,omitempty"`
	Files    int           `json:"files,omitempty"`
	Reads    int           `json:"reads,omitempty"`
	WriteMix int           `json:"write_mix,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
}

// ScenarioBug is a catalogued bug planted in scenario code.
type ScenarioBug struct {
	Name, What, Catches string
	Scenario            string // the scenario it is in: every seed draws it
	apply               func(s *model.ReadScenario)
	pattern             func(s *model.TCPPattern)
	pairs               func(s *model.Pairs)
}

// PropShared is the scenario property that bytes handed to WriteShared
// stay unchanged until the peer has read them.
const PropShared = "shared-write"

// ScenarioBugs is the scenario catalogue.
var ScenarioBugs = []ScenarioBug{
	{
		Name: "read-no-close", Catches: PropLeakFree, Scenario: ScenarioRead,
		What:  "run read's clients never close when done: their cached connections stay open until the cache expires, and the datanode holds them until its keep-alive (the mutant removing cl.Close() in RunRead)",
		apply: func(s *model.ReadScenario) { s.Bugs.NoClientClose = true },
	},
	{
		Name: "reply-reused", Catches: PropShared, Scenario: ScenarioTCPPattern,
		What:    "tcp-pattern's server stamps the next op's number into its reply buffer as soon as a reply is written, though it wrote the buffer with WriteShared and the client may not have read it yet",
		pattern: func(s *model.TCPPattern) { s.Bugs.ReplyReused = true },
	},
	{
		Name: "pairs-close-wait", Catches: PropLeakFree, Scenario: ScenarioPairs,
		What:  "run pairs' server counts a connection whose client closed as ended but never closes it, nor its loop: the socket sits in CLOSE_WAIT for the rest of the process's life",
		pairs: func(s *model.Pairs) { s.Bugs.ServerKeepsConn = true },
	},
}

// LookupScenarioBug finds a catalogued scenario bug.
func LookupScenarioBug(name string) (ScenarioBug, bool) {
	for _, b := range ScenarioBugs {
		if b.Name == name {
			return b, true
		}
	}
	return ScenarioBug{}, false
}

// DrawScenario draws seed's scenario case.
func DrawScenario(src Source, seed uint64, bug string) (ScenarioCase, error) {
	b, ok := LookupScenarioBug(bug)
	if bug != "" && !ok {
		return ScenarioCase{}, fmt.Errorf("unknown scenario bug %q", bug)
	}
	d := drawer{src}
	c := ScenarioCase{Seed: seed, Bug: bug}
	c.Scenario = pick(d, "scenario", Scenarios...)
	if bug != "" {
		c.Scenario = b.Scenario
	}
	switch c.Scenario {
	case ScenarioRead:
		// Small sizes: a seed should cost about what a datanode seed
		// does (moving bytes is most of a read scenario's cost).
		c.Clients = d.n(1, 4, "sn_clients")
		c.Ops = d.n(1, 20, "sn_ops")
		c.Blocks = d.n(1, 4, "sn_blocks")
		c.BlockSize = pick(d, "sn_block_size", 4<<10, 16<<10, 64<<10)
		c.ReadSize = d.n(1, min(c.BlockSize, 16<<10), "sn_read_size")
		c.Pattern = pick(d, "sn_pattern", "random", "sequential")
		c.Server = pick(d, "sn_server", "reactor", "threaded")
		c.NoDelay = d.chance(80, "sn_nodelay")
		c.Keepalive = d.dur(100*time.Millisecond, 4*time.Second, "sn_keepalive")
		c.PoolMax = pick(d, "sn_pool_max", 2, 4, 64)
		c.InlineIO = c.Server == "reactor" && d.chance(30, "sn_inline_io")
		c.CacheCapacity = d.n(0, 4, "sn_cache")
		c.CacheExpiry = d.dur(100*time.Millisecond, 4*time.Second, "sn_cache_expiry")
		c.StartTogether = d.chance(30, "sn_together")
		c.NoTransferTo = d.chance(30, "sn_no_transfer_to")
		// A keep-alive or a cache expiry shorter than a round trip: the
		// datanode closes every connection a client caches (the next
		// read on it meets a dead peer and retries), or the client finds
		// every cached peer expired.
		if d.chance(15, "sn_short_keepalive") {
			c.Keepalive = d.dur(time.Microsecond, 200*time.Microsecond, "sn_keepalive_us")
		}
		if d.chance(15, "sn_short_expiry") {
			c.CacheExpiry = d.dur(time.Microsecond, 200*time.Microsecond, "sn_cache_expiry_us")
		}
		c.Stale = drawStale(d, c.Blocks)
	case ScenarioTCPPattern:
		c.Ops = d.n(1, 20, "sn_ops")
		c.Writes = d.n(1, 4, "sn_writes")
		c.Msg = pick(d, "sn_msg", 1, 8, 100, 1000, 20000)
		c.Reply = pick(d, "sn_reply", 1, 100, 4096, 32768, 200000)
		c.NoDelay = d.chance(50, "sn_nodelay")
		if d.chance(30, "sn_reset") {
			c.ResetAt = d.n(1, 8, "sn_reset_at")
		}
	case ScenarioParallelRead:
		c.Blocks = d.n(1, 2, "sn_files")
		c.Clients = d.n(1, 4, "sn_readers")
		c.Ops = d.n(1, 20, "sn_iterations")
		c.BlockSize = pick(d, "sn_file_size", 128, 4<<10, 16<<10)
		c.NoDelay = d.chance(50, "sn_nodelay")
		c.Stale = drawStale(d, c.Blocks)
	case ScenarioSCRead:
		c.Path = pick(d, "sn_path", "tcp", "uds", "sc")
		c.Clients = d.n(1, 4, "sn_readers")
		c.Ops = d.n(1, 20, "sn_ops")
		c.Blocks = d.n(1, 4, "sn_blocks")
		c.BlockSize = pick(d, "sn_block_size", 4<<10, 64<<10)
		c.ReadSize = d.n(1, min(c.BlockSize, 16<<10), "sn_read_size")
		c.Pattern = pick(d, "sn_pattern", "random", "sequential")
		c.Shards = d.n(1, 3, "sn_shards")
		c.CacheCapacity = c.Shards + d.n(0, 4, "sn_cache")
		if c.Path != "tcp" && c.Clients > 2 && d.chance(50, "sn_backlog") {
			// A queue that holds two: the readers' first connects,
			// all at once, find it full and retry, over a domain
			// socket's data traffic (uds) or for fds (sc).
			c.Backlog = 1
		}
	case ScenarioRPC:
		c.Readers = d.n(1, 3, "sn_readers")
		c.Handlers = d.n(1, 4, "sn_handlers")
		c.Lock = pick(d, "sn_lock", "mutex", "rwlock")
		c.Clients = d.n(1, 4, "sn_clients")
		c.Threads = d.n(1, 3, "sn_threads")
		c.Depth = d.n(0, 2, "sn_depth")
		c.Fanout = d.n(1, 3, "sn_fanout")
		c.Files = d.n(1, 3, "sn_files")
		c.BlockSize = pick(d, "sn_file_size", 1, 4096)
		mix := pick(d, "sn_mix", [2]int{1, 0}, [2]int{8, 1}, [2]int{1, 1})
		c.Reads, c.WriteMix = mix[0], mix[1]
		// A window of a few ms: a namespace call costs far more to
		// simulate than a data-path event.
		c.Duration = d.dur(2*time.Millisecond, 8*time.Millisecond, "sn_duration")
	case ScenarioPairs:
		c.Clients = d.n(1, 8, "sn_pairs")
		// A request past the 64 KiB read buffer arrives over several
		// reads; the largest reply over several segments and windows.
		c.Msg = pick(d, "sn_request", 1, 64, 1000, 70000)
		c.Reply = pick(d, "sn_reply", 1, 4096, 32768, 200000)
		// A window of a few exchanges: with every loop busy, a pairs
		// run costs more to simulate per ms than any other scenario.
		c.WarmUp = d.dur(0, time.Millisecond, "sn_warm_up")
		c.Duration = d.dur(200*time.Microsecond, 2*time.Millisecond, "sn_window")
	}
	return c, c.Validate()
}

// drawStale draws which of blocks blocks (if any) the datanodes hold a
// wrong replica of.
func drawStale(d drawer, blocks int) int {
	if !d.chance(25, "sn_stale") {
		return 0
	}
	return d.n(1, blocks, "sn_stale_block")
}

// staleReplica is what a datanode stores for block stale: every byte of
// the expected contents flipped, so any read of it differs in every byte
// (stored through the store as any block, so its checksums hold).
func staleReplica(stale int) func(id uint64, want []byte) []byte {
	return func(id uint64, want []byte) []byte {
		if id != uint64(stale) {
			return want
		}
		b := make([]byte, len(want))
		for i, x := range want {
			b[i] = ^x
		}
		return b
	}
}

// Validate checks a case read from a file: the scenario's own checks,
// and bounds that keep one run small.
func (c *ScenarioCase) Validate() error {
	if c.Bug != "" {
		b, ok := LookupScenarioBug(c.Bug)
		if !ok {
			return fmt.Errorf("scenario case: unknown bug %q", c.Bug)
		}
		if b.Scenario != c.Scenario {
			return fmt.Errorf("scenario case: bug %s is in scenario %s, not %s", c.Bug, b.Scenario, c.Scenario)
		}
	}
	if !slices.Contains(Scenarios, c.Scenario) {
		return fmt.Errorf("scenario case: scenario %q, want one of %v", c.Scenario, Scenarios)
	}
	// Each bound by its name in the file (the whole case was printed,
	// the field left to find).
	if err := checkBounds("scenario case: ", []bound{
		{"clients", int64(c.Clients), 0, 64}, {"ops", int64(c.Ops), 0, 10000}, {"blocks", int64(c.Blocks), 0, 64},
		{"block_size", int64(c.BlockSize), 0, 16 << 20}, {"read_size", int64(c.ReadSize), 0, 16 << 20}, {"writes", int64(c.Writes), 0, 1000},
		{"msg", int64(c.Msg), 0, 1 << 20}, {"reply", int64(c.Reply), 0, 16 << 20}, {"threads", int64(c.Threads), 0, 64},
		{"depth", int64(c.Depth), 0, 4}, {"fanout", int64(c.Fanout), 0, 8}, {"files", int64(c.Files), 0, 16},
		{"duration", int64(c.Duration), 0, int64(time.Minute)}, {"warm_up", int64(c.WarmUp), 0, int64(time.Minute)},
		{"keepalive", int64(c.Keepalive), 0, int64(time.Minute)}, {"cache_expiry", int64(c.CacheExpiry), 0, int64(time.Minute)},
		{"cache_capacity", int64(c.CacheCapacity), 0, 1024}, {"stale", int64(c.Stale), 0, int64(c.Blocks)},
		{"reset_at", int64(c.ResetAt), 0, 1000}, {"readers", int64(c.Readers), 0, 1024}, {"handlers", int64(c.Handlers), 0, 1024},
		{"shards", int64(c.Shards), 0, 1024}, {"backlog", int64(c.Backlog), 0, 1024},
	}); err != nil {
		return err
	}
	if err := checkIgnore("scenario case", c.Ignore, ScenarioProperties); err != nil {
		return err
	}
	if err := c.checkBounds(); err != nil {
		return err
	}
	switch c.Scenario {
	case ScenarioRead:
		s := c.readScenario()
		return wrapScenario(s.Validate())
	case ScenarioTCPPattern:
		return wrapScenario(c.tcpPattern().Validate())
	case ScenarioParallelRead:
		s := c.parallelRead()
		return wrapScenario(s.Validate())
	case ScenarioSCRead:
		s := c.scRead()
		return wrapScenario(s.Validate())
	case ScenarioRPC:
		return wrapScenario(c.rpcScenario().Validate())
	case ScenarioPairs:
		return wrapScenario(c.pairsScenario().Validate())
	}
	return nil
}

// scenarioBound bounds one of a case's sizes, or a product of them (what
// a run moves or holds).
type scenarioBound struct {
	name   string
	v, max int64
	dur    bool // v and max are durations
}

// checkBounds holds a case, per scenario, to several times what
// DrawScenario makes (its largest in each comment): within them a run
// takes well under a second and a few hundred MB. The sizes Validate
// checks for every scenario are not enough: parallel-read's readers ×
// files × file size and sc-read's blocks × block size ran out of memory
// within them, and 64 pairs with a window of a minute ran for 15 s. (Those sizes bound each
// factor, so no product here wraps.)
func (c *ScenarioCase) checkBounds() error {
	n := func(v int) int64 { return int64(v) }
	d := func(name string, v, max time.Duration) scenarioBound {
		return scenarioBound{name, int64(v), int64(max), true}
	}
	var bs []scenarioBound
	switch c.Scenario {
	case ScenarioRead:
		bs = []scenarioBound{
			{"clients", n(c.Clients), 16, false},                                                    // 4
			{"ops", n(c.Ops), 100, false},                                                           // 20
			{"blocks", n(c.Blocks), 16, false},                                                      // 4
			{"block_size", n(c.BlockSize), 256 << 10, false},                                        // 64 KiB
			{"read_size", n(c.ReadSize), 64 << 10, false},                                           // 16 KiB
			{"blocks × block_size", n(c.Blocks) * n(c.BlockSize), 4 << 20, false},                   // 256 KiB
			{"clients × ops × read_size", n(c.Clients) * n(c.Ops) * n(c.ReadSize), 16 << 20, false}, // 1.3 MB
			{"pool_max", n(c.PoolMax), 4096, false},                                                 // 64
		}
	case ScenarioTCPPattern:
		bs = []scenarioBound{
			{"ops", n(c.Ops), 100, false},                                              // 20
			{"writes", n(c.Writes), 16, false},                                         // 4
			{"msg", n(c.Msg), 100_000, false},                                          // 20,000
			{"reply", n(c.Reply), 1 << 20, false},                                      // 200,000
			{"ops × writes × msg", n(c.Ops) * n(c.Writes) * n(c.Msg), 16 << 20, false}, // 1.6 MB
			{"ops × reply", n(c.Ops) * n(c.Reply), 32 << 20, false},                    // 4 MB
		}
	case ScenarioParallelRead:
		bs = []scenarioBound{
			{"blocks (files)", n(c.Blocks), 8, false},                                                                        // 2
			{"clients (readers a file)", n(c.Clients), 16, false},                                                            // 4
			{"ops (iterations)", n(c.Ops), 100, false},                                                                       // 20
			{"block_size (file size)", n(c.BlockSize), 64 << 10, false},                                                      // 16 KiB
			{"clients × blocks × block_size", n(c.Clients) * n(c.Blocks) * n(c.BlockSize), 1 << 20, false},                   // 128 KiB
			{"clients × blocks × ops × block_size", n(c.Clients) * n(c.Blocks) * n(c.Ops) * n(c.BlockSize), 32 << 20, false}, // 2.6 MB
		}
	case ScenarioSCRead:
		bs = []scenarioBound{
			{"clients (readers)", n(c.Clients), 16, false},                                          // 4
			{"ops", n(c.Ops), 100, false},                                                           // 20
			{"blocks", n(c.Blocks), 16, false},                                                      // 4
			{"block_size", n(c.BlockSize), 256 << 10, false},                                        // 64 KiB
			{"read_size", n(c.ReadSize), 64 << 10, false},                                           // 16 KiB
			{"shards", n(c.Shards), 16, false},                                                      // 3
			{"blocks × block_size", n(c.Blocks) * n(c.BlockSize), 4 << 20, false},                   // 256 KiB
			{"clients × ops × read_size", n(c.Clients) * n(c.Ops) * n(c.ReadSize), 16 << 20, false}, // 1.3 MB
		}
	case ScenarioRPC:
		files := n(c.Files)
		for range c.Depth {
			files *= n(c.Fanout)
		}
		bs = []scenarioBound{
			{"clients", n(c.Clients), 16, false},                            // 4
			{"threads", n(c.Threads), 16, false},                            // 3
			{"clients × threads", n(c.Clients) * n(c.Threads), 64, false},   // 12
			{"readers", n(c.Readers), 16, false},                            // 3
			{"handlers", n(c.Handlers), 64, false},                          // 4
			{"fanout^depth × files", files, 1024, false},                    // 27
			{"block_size (file size)", n(c.BlockSize), 64 << 10, false},     // 4096
			{"files × block_size", files * n(c.BlockSize), 16 << 20, false}, // 110 KB
			d("duration", c.Duration, 50*time.Millisecond),                  // 8 ms
		}
	case ScenarioPairs:
		bs = []scenarioBound{
			{"clients (pairs)", n(c.Clients), 32, false},                                         // 8
			{"msg (request)", n(c.Msg), 256 << 10, false},                                        // 70,000
			{"reply", n(c.Reply), 1 << 20, false},                                                // 200,000
			{"clients × (msg + reply)", n(c.Clients) * (n(c.Msg) + n(c.Reply)), 32 << 20, false}, // 2.2 MB
			d("warm_up", c.WarmUp, 10*time.Millisecond),                                          // 1 ms
			d("duration (window)", c.Duration, 10*time.Millisecond),                              // 2 ms
		}
	}
	for _, b := range bs {
		switch {
		case b.v <= b.max:
		case b.dur:
			return fmt.Errorf("scenario case: %s %s %v, at most %v", c.Scenario, b.name, time.Duration(b.v), time.Duration(b.max))
		default:
			return fmt.Errorf("scenario case: %s %s %d, at most %d", c.Scenario, b.name, b.v, b.max)
		}
	}
	return nil
}

func wrapScenario(err error) error {
	if err != nil {
		return fmt.Errorf("scenario case: %w", err)
	}
	return nil
}

func (c *ScenarioCase) readScenario() model.ReadScenario {
	s := model.DefaultReadScenario()
	s.Clients, s.Ops, s.ReadSize, s.Blocks, s.BlockSize, s.Pattern = c.Clients, c.Ops, c.ReadSize, c.Blocks, c.BlockSize, c.Pattern
	s.Server.Mode = model.ServerMode(c.Server)
	s.Server.NoDelay, s.Client.NoDelay = c.NoDelay, c.NoDelay
	s.Server.Keepalive = c.Keepalive
	s.Server.PoolMax = c.PoolMax
	s.Server.InlineIO = c.InlineIO
	s.Server.NoTransferTo = c.NoTransferTo
	s.Client.CacheCapacity = c.CacheCapacity
	s.Client.CacheExpiry = c.CacheExpiry
	s.StartTogether = c.StartTogether
	if c.Stale > 0 {
		s.Stored = staleReplica(c.Stale)
	}
	if b, ok := LookupScenarioBug(c.Bug); ok && b.apply != nil {
		b.apply(&s)
	}
	return s
}

func (c *ScenarioCase) tcpPattern() model.TCPPattern {
	s := model.TCPPattern{Writes: c.Writes, Msg: c.Msg, Reply: c.Reply, Ops: c.Ops, NoDelay: c.NoDelay}
	if b, ok := LookupScenarioBug(c.Bug); ok && b.pattern != nil {
		b.pattern(&s)
	}
	return s
}

func (c *ScenarioCase) parallelRead() model.ParallelRead {
	s := model.DefaultParallelRead()
	s.Files, s.Readers, s.Iterations, s.FileSize, s.NoDelay = c.Blocks, c.Clients, c.Ops, c.BlockSize, c.NoDelay
	if c.Stale > 0 {
		s.Stored = staleReplica(c.Stale)
	}
	return s
}

func (c *ScenarioCase) scRead() shortcircuit.ReadScenario {
	s := shortcircuit.DefaultReadScenario()
	s.Path, s.Readers, s.Ops, s.ReadSize, s.Blocks, s.BlockSize, s.Pattern = c.Path, c.Clients, c.Ops, c.ReadSize, c.Blocks, c.BlockSize, c.Pattern
	s.Cache.Shards, s.Cache.Capacity, s.Backlog = c.Shards, c.CacheCapacity, c.Backlog
	return s
}

func (c *ScenarioCase) pairsScenario() model.Pairs {
	s := model.Pairs{Pairs: c.Clients, Request: c.Msg, Reply: c.Reply, WarmUp: c.WarmUp, Window: c.Duration}
	if b, ok := LookupScenarioBug(c.Bug); ok && b.pairs != nil {
		b.pairs(&s)
	}
	return s
}

func (c *ScenarioCase) rpcScenario() namespace.Scenario {
	s := namespace.DefaultScenario()
	s.Clients, s.Threads = c.Clients, c.Threads
	s.Depth, s.Fanout, s.Files, s.FileSize = c.Depth, c.Fanout, c.Files, c.BlockSize
	s.Reads, s.Writes = c.Reads, c.WriteMix
	s.Lock = namespace.LockKind(c.Lock)
	s.RPC = rpc.ServerConfig{Readers: c.Readers, Handlers: c.Handlers}
	s.NamenodeCores, s.DatanodeCores = 2, 2
	s.Warmup, s.Duration = c.Duration/4, c.Duration
	return s
}

// ScenarioResult is what a scenario run gave.
type ScenarioResult struct {
	Property, Message string // empty when every property held
	Events            uint64
	TraceHash         string
	// SimEvents are the events the simulator processed in the case's
	// world (sim.World.Events, what BenchmarkSimEvents counts; the side
	// worlds the report checks start run a few each and are not
	// counted); Events counts the trace's records.
	SimEvents uint64
}

// scenarioLimit bounds a scenario run's virtual time: far above what the
// drawn sizes need (a read scenario waits out keep-alives of up to 4 s).
const scenarioLimit = 10 * time.Minute

// scenarioSettle is how long a run goes on after its scenario returned,
// past every timeout it drew, before the leak check.
const scenarioSettle = 10 * time.Second

type scenarioRun struct {
	c         *ScenarioCase
	w         *sim.World
	prop, msg string
	// tamperRead, if set, alters the read scenario's result before its
	// report is checked: the tests' way to show the report check fires.
	tamperRead func(*model.ReadResult)
}

func (r *scenarioRun) fail(prop, format string, a ...any) {
	if r.prop == "" && !slices.Contains(r.c.Ignore, prop) {
		r.prop, r.msg = prop, fmt.Sprintf(format, a...)
		r.w.Note("violation " + prop + ": " + r.msg)
		r.w.Stop()
	}
}

// RunScenario runs a scenario case in the simulator and checks it.
func RunScenario(c ScenarioCase) *ScenarioResult { return RunScenarioTraced(c, nil) }

// RunScenarioTraced is RunScenario writing every event as a JSON line to
// out (nil: nowhere), for replay's HTML view.
func RunScenarioTraced(c ScenarioCase, out io.Writer) *ScenarioResult {
	return runScenario(c, out, hashed)
}

// RunScenarioUnhashed is RunScenario without the trace hash of the
// case's world (sim's Config.Unhashed; TraceHash says "unhashed"), for
// check's first run of a seed, which it runs again, hashed, to compare
// or to save.
func RunScenarioUnhashed(c ScenarioCase) *ScenarioResult { return runScenario(c, nil, unhashed) }

func runScenario(c ScenarioCase, out io.Writer, hashing hashing) *ScenarioResult {
	return runScenarioTampered(c, out, hashing, nil)
}

// runScenarioTampered is runScenario with the read scenario's result
// altered by tamperRead (if not nil) before its report is checked.
func runScenarioTampered(c ScenarioCase, out io.Writer, hashing hashing, tamperRead func(*model.ReadResult)) (res *ScenarioResult) {
	cfg := worldConfig(c.Seed, 20_000_000, hashing)
	cfg.CheckShared = true // tcp-pattern's reply is a shared write
	w := sim.New(cfg)
	if out != nil {
		w.TraceTo(out)
	}
	// Deferred first, so it runs last: the result below reads only the
	// trace's counters, never the buffers handed back.
	defer useArena(w)()
	r := &scenarioRun{c: &c, w: w, tamperRead: tamperRead}
	defer func() {
		if p := recover(); p != nil {
			r.prop, r.msg = PropHarness, fmt.Sprintf("panic at %v: %v", w.Now(), p)
		}
		res = &ScenarioResult{Property: r.prop, Message: r.msg, Events: w.TraceEvents(), SimEvents: w.Events(), TraceHash: w.TraceHashString()}
	}()
	if err := c.Validate(); err != nil {
		r.fail(PropHarness, "invalid case: %v", err)
		return
	}
	var err error
	switch c.Scenario {
	case ScenarioRead:
		err = r.read()
	case ScenarioTCPPattern:
		err = r.tcpPattern()
	case ScenarioParallelRead:
		err = r.parallelRead()
	case ScenarioSCRead:
		err = r.scRead()
	case ScenarioRPC:
		err = r.rpc()
	case ScenarioPairs:
		err = r.pairs()
	}
	switch {
	case r.prop != "":
	case err != nil && errors.Is(err, sim.ErrLimit):
		r.fail(PropLiveness, "%s did not finish: %v", c.Scenario, err)
	case err != nil:
		r.fail(PropHarness, "%s: %v", c.Scenario, err)
	default:
		r.checkConfig()
		r.checkLimit()
		r.checkSetup()
	}
	return
}

// settle runs the world on past every timeout, then checks that no
// process holds a connection or a block file: what a process keeps at
// rest is its listeners, loops and files, never a peer's socket (the
// scenarios keep no pool minimum).
func (r *scenarioRun) settle() error { return r.settleAfter(nil) }

// settleAfter is settle for a run that ended with failure, the world's
// recorded failure (nil: none), which settling reports again.
func (r *scenarioRun) settleAfter(failure error) error {
	if err := r.w.RunFor(scenarioSettle); err != nil && err != failure {
		return err
	}
	for _, p := range r.w.Processes() {
		fds := p.FDs()
		k := &fds.ByKind
		if n := k[model.FDSocket] + k[model.FDPassed] + k[model.FDBlockFile] + k[model.FDMetaFile]; n > 0 {
			r.fail(PropLeakFree, "%s at rest holds %d sockets, %d passed fds, %d block and %d meta files", p.Name(),
				k[model.FDSocket], k[model.FDPassed], k[model.FDBlockFile], k[model.FDMetaFile])
			return nil
		}
	}
	return nil
}

func (r *scenarioRun) read() error {
	s := r.c.readScenario()
	var dn *model.Datanode
	var clients []*model.Client
	var dnProc *sim.Process
	procs := make([]*sim.Process, s.Clients)
	s.Observe = func(d *model.Datanode, cls []*model.Client) { dn, clients = d, cls }
	obs := &readObserver{hists: make([]*model.History, s.Clients)}
	s.OnClient = obs.onClient
	want := s.Ops
	if s.StartTogether {
		want++ // the warm-up read
	}
	// At every event: the datanode's sockets are its connections', its
	// block files the pool's (reactor) or two per connection (threaded);
	// a client's sockets are its reads' and its cached peers'; and a
	// client that has done its reads has closed, holding no connection,
	// well before any cache expiry or keep-alive could close them for it.
	r.w.AfterEach(func() {
		if r.prop != "" || dn == nil {
			return
		}
		if dnProc == nil {
			dnProc = r.w.Process("datanode")
		}
		fds := dnProc.FDs()
		blockFDs := fds.ByKind[model.FDBlockFile] + fds.ByKind[model.FDMetaFile]
		if sockets := fds.ByKind[model.FDSocket]; sockets > dn.Conns() {
			r.fail(PropFDBounds, "datanode holds %d sockets for %d connections", sockets, dn.Conns())
			return
		}
		if pool := dn.Pool(); pool != nil {
			switch {
			case pool.Open() > s.Server.PoolMax:
				r.fail(PropPoolBound, "the handle pool holds %d block fds, bound %d", pool.Open(), s.Server.PoolMax)
			case blockFDs != pool.Open():
				r.fail(PropFDBounds, "datanode holds %d block and meta fds, the pool accounts for %d", blockFDs, pool.Open())
			}
		} else if blockFDs > 2*dn.Conns() {
			r.fail(PropFDBounds, "threaded datanode holds %d block and meta fds for %d connections", blockFDs, dn.Conns())
		}
		for i, cl := range clients {
			if cl == nil || r.prop != "" {
				continue
			}
			if procs[i] == nil {
				procs[i] = r.w.Process(fmt.Sprintf("client-%d", i))
			}
			n := procs[i].FDs().ByKind[model.FDSocket]
			switch {
			case n > cl.InFlight()+cl.Cached():
				r.fail(PropFDBounds, "client-%d holds %d sockets but has %d reads in flight and %d cached peers", i, n, cl.InFlight(), cl.Cached())
			case cl.Stats().Ops >= want && cl.InFlight() == 0 && (n > 0 || cl.Cached() > 0):
				r.fail(PropLeakFree, "client-%d finished its %d reads but holds %d sockets (%d cached peers)", i, s.Ops, n, cl.Cached())
			}
		}
	})
	res, err := model.RunRead(r.w, s, scenarioLimit)
	if r.prop != "" || err != nil {
		return err
	}
	total := s.Clients * s.Ops
	staleOps, staleBytes := obs.staleReads(s.StartTogether, r.c.Stale)
	switch {
	case res.Errors > 0:
		r.fail(PropAvailability, "%d of %d reads failed (first: %s)", res.Errors, total, res.FirstError)
	case res.Ops != total:
		r.fail(PropLiveness, "%d of %d reads done", res.Ops, total)
	case res.Mismatches != staleOps || res.BytesVerified != int64(total)*int64(s.ReadSize)-staleBytes:
		r.fail(PropStream, "%d reads counted as wrong bytes, %d read the wrong replica of block %d; %d of %d bytes verified",
			res.Mismatches, staleOps, r.c.Stale, res.BytesVerified, int64(total)*int64(s.ReadSize)-staleBytes)
	case res.ClientEndFDs != 0 || res.ServerEndConns != 0 || res.ServerEndBufs != 0:
		r.fail(PropLeakFree, "after every timeout: datanode %d connections, %d buffers out; clients %d fds", res.ServerEndConns, res.ServerEndBufs, res.ClientEndFDs)
	}
	if r.prop != "" {
		return nil
	}
	if r.tamperRead != nil {
		r.tamperRead(res)
	}
	r.checkReadReport(s, res, obs, clients, dn, dnProc)
	if r.prop != "" {
		return nil
	}
	return r.settle()
}

func (r *scenarioRun) tcpPattern() error {
	s := r.c.tcpPattern()
	reset := r.armReset()
	var w model.World = r.w
	if r.c.Seed%2 == 1 {
		// Half the runs read as on a Conn that is not sim's: real's.
		w = plainWorld{r.w}
	}
	res, err := model.RunTCPPattern(w, s, scenarioLimit)
	if errors.Is(err, sim.ErrSharedWrite) {
		r.fail(PropShared, "%v", err)
		return nil
	}
	if reset.hit && err != nil {
		// The op the client was in fails with the reset (unless all its
		// reply had arrived: a reset socket still gives what it holds),
		// and both ends close.
		if !errors.Is(err, model.ErrReset) {
			r.fail(PropReport, "tcp-pattern whose connection was reset returned %v, want an error wrapping %q", err, model.ErrReset)
			return nil
		}
		return r.settleAfter(err)
	}
	if r.prop != "" || err != nil {
		return err
	}
	if res.Latencies.Len() != s.Ops {
		r.fail(PropLiveness, "%d of %d ops done", res.Latencies.Len(), s.Ops)
		return nil
	}
	// With NODELAY no write waits for an ACK: an op takes a few round
	// trips on loopback, far from a delayed ACK's 40 ms.
	if s.NoDelay {
		if st := res.Latencies.Summarize(); st.Max >= model.StallThreshold {
			r.fail(PropAvailability, "with NODELAY an op took %v (≥ %v: it waited for a delayed ACK)", st.Max, model.StallThreshold)
			return nil
		}
	}
	if r.checkPatternReport(&res.Latencies); r.prop != "" {
		return nil
	}
	return r.settle()
}

// tcpReset is a drawn reset of tcp-pattern's connection.
type tcpReset struct {
	armed, hit bool
}

// armReset resets every connection of the server right after its
// ResetAt-th data segment, wherever the server then is: writing a reply
// that the send buffer could not take, or waiting for the next request.
func (r *scenarioRun) armReset() *tcpReset {
	st := &tcpReset{}
	if r.c.ResetAt == 0 {
		return st
	}
	segs := 0
	r.w.Observe(func(e *sim.Event) {
		if st.armed || e.Kind != "seg" || e.Proc != "server" || e.B == 0 {
			return
		}
		if segs++; segs < r.c.ResetAt {
			return
		}
		st.armed = true
		r.w.At(r.w.Now(), func() {
			if p := r.w.Process("server"); p != nil {
				for _, id := range p.TCPConns() {
					st.hit = r.w.ResetConn(id) || st.hit
				}
			}
		})
	})
	return st
}

func (r *scenarioRun) parallelRead() error {
	s := r.c.parallelRead()
	var hists []*model.History
	s.OnClient = func(cl *model.Client) {
		cl.History = &model.History{}
		hists = append(hists, cl.History)
	}
	res, err := model.RunParallelRead(r.w, s, scenarioLimit)
	if r.prop != "" || err != nil {
		return err
	}
	total := s.Files * s.Readers * s.Iterations
	stale := 0 // reads of the wrong replica: each a mismatch
	for _, h := range hists {
		for i := range h.Ops {
			if op := &h.Ops[i]; r.c.Stale > 0 && op.Block == uint64(r.c.Stale) && op.Done && op.Result.Err == nil {
				stale++
			}
		}
	}
	switch {
	case res.Errors > 0:
		r.fail(PropAvailability, "%d of %d reads failed (first: %s)", res.Errors, total, res.FirstError)
	case res.Mismatches != stale:
		r.fail(PropStream, "%d of %d reads counted as wrong bytes, %d read the wrong replica of block %d", res.Mismatches, total, stale, r.c.Stale)
	case res.Reads+res.Streams+res.Mismatches != total:
		r.fail(PropLiveness, "%d of %d reads done", res.Reads+res.Streams+res.Mismatches, total)
	}
	if r.prop != "" {
		return nil
	}
	if r.checkParallelReport(res, hists, uint64(r.c.Stale)); r.prop != "" {
		return nil
	}
	return r.settle()
}

func (r *scenarioRun) scRead() error {
	s := r.c.scRead()
	res, err := shortcircuit.RunRead(r.w, s, scenarioLimit)
	if r.prop != "" || err != nil {
		return err
	}
	total := s.Readers * s.Ops
	switch {
	case res.Errors > 0:
		r.fail(PropAvailability, "%d of %d reads failed (first: %s)", res.Errors, total, res.FirstError)
	case res.Mismatches > 0:
		r.fail(PropStream, "%d of %d reads returned wrong bytes", res.Mismatches, total)
	case res.Ops != total:
		r.fail(PropLiveness, "%d of %d reads done", res.Ops, total)
	case res.LeakedClientFDs != 0 || res.LeakedServerFDs != 0:
		r.fail(PropLeakFree, "after close: client %d fds, datanode %d fds beyond their baselines", res.LeakedClientFDs, res.LeakedServerFDs)
	}
	return nil
}

func (r *scenarioRun) rpc() error {
	s := r.c.rpcScenario()
	res, err := namespace.RunScenario(r.w, s)
	if r.prop != "" || err != nil {
		return err
	}
	switch {
	case res.Errors > 0:
		// An op's failed call or datanode read or write, one each.
		r.fail(PropAvailability, "%d ops failed, %d calls in the window (first: %s)", res.Errors, res.Calls, res.FirstError)
	case res.Calls == 0:
		r.fail(PropLiveness, "no call completed in a window of %v", s.Duration)
	}
	return nil
}

// pairs runs the case's pairs. At every event each client holds at most
// its one socket, the server one per pair; once it has returned, every
// request the server read was answered and read (the orderly end), and
// the window's counts add up.
func (r *scenarioRun) pairs() error {
	s := r.c.pairsScenario()
	var w model.World = r.w
	if r.c.Seed%2 == 1 {
		// Half the runs read and write as on a Conn that is not sim's.
		w = plainWorld{r.w}
	}
	// procs[i] is names[i]'s process, once it exists (the server first).
	names := []string{"server"}
	for i := range s.Pairs {
		names = append(names, fmt.Sprintf("client-%d", i))
	}
	procs := make([]*sim.Process, len(names))
	r.w.AfterEach(func() {
		if r.prop != "" {
			return
		}
		for i, name := range names {
			p := procs[i]
			if p == nil {
				if p = r.w.Process(name); p == nil {
					continue
				}
				procs[i] = p
			}
			bound := 1
			if i == 0 {
				bound = s.Pairs
			}
			if n := p.FDs().ByKind[model.FDSocket]; n > bound {
				r.fail(PropFDBounds, "%s holds %d sockets, bound %d", name, n, bound)
				return
			}
		}
	})
	res, err := model.RunPairs(w, s, scenarioLimit)
	switch {
	case r.prop != "":
		return nil
	case errors.Is(err, sim.ErrSharedWrite):
		r.fail(PropShared, "%v", err)
		return nil
	case err != nil && !errors.Is(err, sim.ErrLimit):
		r.fail(PropAvailability, "%v", err)
		return nil
	case err != nil:
		return err
	case res.Requests != res.Replies:
		r.fail(PropStream, "the server read %d requests in full, the clients %d replies", res.Requests, res.Replies)
	case res.Replies < s.Pairs:
		r.fail(PropLiveness, "%d pairs made %d exchanges in all: some made none", s.Pairs, res.Replies)
	case res.Exchanges > res.Replies || res.Starved < 0 || res.Starved > s.Pairs || (res.Exchanges > 0) != (res.Rate > 0):
		r.fail(PropReport, "%d exchanges in the window (%d in all), %.0f a second, %d of %d pairs starved", res.Exchanges, res.Replies, res.Rate, res.Starved, s.Pairs)
	}
	if r.prop != "" {
		return nil
	}
	return r.settle()
}

// ShrinkScenario halves a failing case's sizes (ops, clients, blocks)
// while the same property still fails, within budget runs.
func ShrinkScenario(c ScenarioCase, r *ScenarioResult, budget int) (ScenarioCase, *ScenarioResult, int) {
	runs := 0
	for changed := true; changed && runs < budget; {
		changed = false
		for _, f := range []func(*ScenarioCase) *int{
			func(x *ScenarioCase) *int { return &x.Ops },
			func(x *ScenarioCase) *int { return &x.Clients },
			func(x *ScenarioCase) *int { return &x.Blocks },
			func(x *ScenarioCase) *int { return &x.Writes },
			func(x *ScenarioCase) *int { return &x.Threads },
			func(x *ScenarioCase) *int { return &x.Reply },
		} {
			for runs < budget && *f(&c) > 1 {
				cand := c
				*f(&cand) = *f(&c) / 2
				if cand.Validate() != nil {
					break
				}
				runs++
				cr := RunScenario(cand)
				if cr.Property != r.Property {
					break
				}
				c, r, changed = cand, cr, true
			}
		}
	}
	return c, r, runs
}

// ScenarioTrace is a recorded scenario failure: the case, and what its
// run gave.
type ScenarioTrace struct {
	TraceHead              // Format: ScenarioTraceFormat
	Case      ScenarioCase `json:"scenario_case"`
}

// ScenarioTraceFormat names the file layout (and the code version: a
// change that alters a scenario run's events bumps it and re-records the
// corpus).
const ScenarioTraceFormat = "xceiver-scenario-trace/11"

// CheckScenarioSeed draws and runs one scenario seed, shrinking a failure.
func CheckScenarioSeed(seed uint64, bug string, budget int) (ScenarioCase, *ScenarioResult, error) {
	c, err := DrawScenario(SeedSource(seed), seed, bug)
	if err != nil {
		return c, nil, err
	}
	r := RunScenario(c)
	if r.Property == "" || r.Property == PropHarness {
		return c, r, nil
	}
	c, r, _ = ShrinkScenario(c, r, budget)
	return c, r, nil
}

// RecordScenario runs c and returns its trace.
func RecordScenario(c ScenarioCase) (ScenarioTrace, *ScenarioResult) {
	r := RunScenario(c)
	return ScenarioTraceOf(c, r), r
}

// ScenarioTraceOf is the trace of c, whose run gave r.
func ScenarioTraceOf(c ScenarioCase, r *ScenarioResult) ScenarioTrace {
	return ScenarioTrace{TraceHead{ScenarioTraceFormat, r.Property, r.Message, r.Events, r.TraceHash}, c}
}

// ReadScenarioTrace reads a trace file; a file that is not one is an
// error naming why.
func ReadScenarioTrace(path string) (ScenarioTrace, error) {
	var t ScenarioTrace
	if err := readJSONTrace(path, "a scenario", &t); err != nil {
		return ScenarioTrace{}, err
	}
	if err := t.check(path, ScenarioTraceFormat, "scenario", t.Case.Seed, t.Case.Bug, t.Case.Validate); err != nil {
		return ScenarioTrace{}, err
	}
	return t, nil
}

// WriteScenarioTrace writes t to path.
func WriteScenarioTrace(path string, t ScenarioTrace) error {
	return writeJSONTrace(path, t)
}

// ReplayScenario re-runs a trace: nil when it fails the same property
// with the same event hash.
func ReplayScenario(t ScenarioTrace) (*ScenarioResult, error) {
	r := RunScenario(t.Case)
	return r, ReplayMismatch(r.Property, r.Message, r.Events, r.TraceHash, t.TraceHead)
}
