package properties

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bug is a catalogued historic bug: a configuration of the data path that
// reproduces it. The code paths exist in model/ behind DatanodeBugs and
// ClientBugs; only tests and `xceiver check --bug` switch them on.
type Bug struct {
	Name string // as given to --bug
	What string // one line
	// Catches names the property expected to catch it.
	Catches string
	apply   func(d drawer, cfg *Config)
	// hostile lists the hostile peer kinds the bug needs drawn.
	hostile []string
	// fragment: the bug needs requests that arrive in pieces.
	fragment bool
	// liar: the bug needs a hostile datanode telling this lie.
	liar string
}

// Bugs is the catalogue, in a fixed order.
var Bugs = []Bug{
	{
		Name:    "HDFS-4911",
		What:    "the client's peer cache expiry exceeds the datanode's keep-alive: cached peers are dead when reused",
		Catches: "availability",
		apply: func(d drawer, cfg *Config) {
			if cfg.CacheCapacity == 0 {
				cfg.CacheCapacity = 16
			}
			cfg.CacheExpiry = cfg.Keepalive * time.Duration(pick(d, "bug_expiry", 3, 4, 6)) / 2
		},
	},
	{
		Name:    "HDFS-3359",
		What:    "the client's close forgets its cached peers without closing them",
		Catches: "fd-bounds",
		apply:   func(d drawer, cfg *Config) { cfg.CloseLeaksCache = true },
	},
	{
		Name:    "HDFS-3357",
		What:    "the datanode's keep-alive wait has no timeout",
		Catches: "leak-freedom",
		apply:   func(d drawer, cfg *Config) { cfg.KeepaliveForever = true },
	},
	{
		Name:    "stale-handle",
		What:    "the handle pool keys handles by block id alone and never retires them",
		Catches: "linearizability",
		apply:   func(d drawer, cfg *Config) { cfg.PoolKeyIgnoresStamp = true },
	},
	{
		Name:    "unclean-return",
		What:    "the client returns a connection to its cache after an op that did not end cleanly",
		Catches: "stream-integrity",
		apply:   func(d drawer, cfg *Config) { cfg.ReturnUnclean = true },
	},
	{
		Name:    "close-in-use",
		What:    "the handle pool's eviction closes handles that reads still use",
		Catches: "no-close-in-use",
		apply:   func(d drawer, cfg *Config) { cfg.PoolClosesInUse = true },
	},
	{
		Name:    "write-unverified",
		What:    "the datanode stores a write's packets without verifying their checksums: bytes corrupted in flight are stored as good",
		Catches: "linearizability",
		apply:   func(d drawer, cfg *Config) { cfg.WriteUnverified = true },
	},
	{
		Name:    "packets-unchecked",
		What:    "the datanode takes a write's packets at their word, at whatever offset they name, complete at the one marked last however short of the announced length: a misfit write is stored",
		Catches: PropRefusal,
		apply:   func(d drawer, cfg *Config) { cfg.PacketsUnchecked = true },
		hostile: []string{HostileMisfit},
	},
	{
		Name:    "empty-read-panic",
		What:    "the datanode indexes the last chunk of an empty read and panics (check must report it, not crash)",
		Catches: "harness",
		apply:   func(d drawer, cfg *Config) { cfg.EmptyReadPanics = true },
	},
	{
		Name:    "checksum-first-chunk",
		What:    "the client verifies only the first chunk of each packet: corruption past it reaches the caller",
		Catches: "linearizability",
		apply:   func(d drawer, cfg *Config) { cfg.VerifyFirstChunk = true },
	},
	{
		Name:    "buffer-early-return",
		What:    "the datanode returns a packet buffer to its free list after a partial write, then sends the rest from it",
		Catches: "stream-integrity",
		apply: func(d drawer, cfg *Config) {
			cfg.ReturnBufferEarly = true
			// It needs partial writes: draw the small send buffers under
			// which they are common (poison stays drawn as for any case).
			if cfg.SndBuf == 0 {
				cfg.SndBuf = pick(d, "bug_sndbuf", 2048, 4096)
			}
		},
	},
	{
		Name:    "sendfile-offset-stuck",
		What:    "after a partial sendfile the datanode sends the rest of a packet's data from the packet's first byte again (the file offset not advanced)",
		Catches: "stream-integrity",
		apply: func(d drawer, cfg *Config) {
			cfg.SendfileOffsetStuck = true
			// Partial sends are common under small send buffers.
			if cfg.SndBuf == 0 {
				cfg.SndBuf = pick(d, "bug_sndbuf", 2048, 4096)
			}
		},
	},
	// Issue 9: defects an abuse test found; the hostile peers find each.
	{
		Name:    "closed-conns-reachable",
		What:    "a closed connection keeps its buffers and its freed slot keeps it reachable (issue 9 item 1)",
		Catches: PropMemory,
		apply:   func(d drawer, cfg *Config) { cfg.ClosedConnsReachable = true },
	},
	{
		Name:    "write-prealloc",
		What:    "a write's whole announced length is allocated when its header arrives (issue 9 item 2)",
		Catches: PropMemory,
		apply:   func(d drawer, cfg *Config) { cfg.WritePrealloc = true },
		hostile: []string{HostileAnnounce},
	},
	{
		Name:    "no-send-timeout",
		What:    "nothing times out while sending: a client that never reads holds its connection forever (issue 9 item 3)",
		Catches: PropTimeout,
		apply:   func(d drawer, cfg *Config) { cfg.NoSendTimeout = true },
		hostile: []string{HostileNonReader},
	},
	{
		Name:    "pool-wait-forever",
		What:    "reads wait for a pool handle without bound while non-reading holders keep theirs (issue 9 item 4)",
		Catches: PropHostileAvail,
		apply: func(d drawer, cfg *Config) {
			cfg.PoolWaitForever = true
			cfg.PoolMax, cfg.PoolMin = 2, 0
		},
		hostile: []string{HostileNonReader},
	},
	{
		Name:    "waiter-deaf",
		What:    "a read waiting for a pool handle reads nothing, so its client's FIN goes unseen until a handle frees (issue 9 item 5)",
		Catches: PropTimeout,
		apply:   func(d drawer, cfg *Config) { cfg.WaiterDeaf = true },
		hostile: []string{HostileQuitter},
	},
	{
		Name:    "waiter-deaf-when-full",
		What:    "a read waiting for a pool handle reads its client's pipelined input only until it has buffered all it may (MaxRequestLen+64 bytes), then hears nothing: a FIN behind more than that goes unseen until a handle frees or HandleWait has passed (waiter-deaf's fix before PeerClosed)",
		Catches: PropTimeout,
		apply:   func(d drawer, cfg *Config) { cfg.WaiterDeafWhenFull = true },
		hostile: []string{HostileQuitter},
	},
	{
		Name:    "parked-waiter-deaf",
		What:    "a parked read waiting to take its handle again listens for nothing, so a client that took all it was sent and closed goes unheard until a handle frees or HandleWait has passed",
		Catches: PropTimeout,
		apply:   func(d drawer, cfg *Config) { cfg.ParkedWaiterDeaf = true },
		hostile: []string{HostileNonReader + ":spread", HostileDrainer},
	},
	{
		Name:    "spin-on-unread",
		What:    "a connection not expecting input leaves reading on, so its loop is woken for the unread bytes (a status pipelined while it sends) at every turn: a spin, which the simulator fails once a handler is called 1,000 times in a row with readiness it neither reads nor writes on",
		Catches: PropHarness,
		apply:   func(d drawer, cfg *Config) { cfg.SpinOnUnread = true },
	},
	{
		Name:    "full-waiter-spins",
		What:    "a read waiting for a pool handle that has buffered all it may of its client's pipelined input listens for the FIN but leaves reading on, so the unread rest wakes its loop at every turn while the client holds its connection: a spin (PeerClosed's fix with one line missing)",
		Catches: PropHarness,
		apply:   func(d drawer, cfg *Config) { cfg.FullWaiterSpins = true },
		hostile: []string{HostileQuitter},
	},
	{
		Name:    "handle-held-stalled",
		What:    "a read keeps its pool handle while its client takes nothing; stalled holders are cut off one stall timeout after another, so a read queued behind several waits for all (issue 9 item 4's first fix)",
		Catches: PropHostileAvail,
		apply: func(d drawer, cfg *Config) {
			cfg.HoldWhileStalled = true
			cfg.PoolMax, cfg.PoolMin = 2, 0
		},
		hostile: []string{HostileNonReader + ":spread"},
	},
	{
		Name:    "no-conn-cap",
		What:    "connections are accepted until the fd table is full, idle ones lock everyone out (issue 9 item 6)",
		Catches: PropHostileAvail,
		apply:   func(d drawer, cfg *Config) { cfg.NoConnCap = true },
		hostile: []string{HostileIdle + ":flood"},
	},
	{
		Name:    "busy-when-full",
		What:    "a write that finds MaxBuffered taken is refused busy at once, not made to wait while silent writers are cut off: clients that send half a largest write and stop lock well-behaved writes out until their read timeout (and a misfit's write is answered busy, not invalid)",
		Catches: PropHostileAvail,
		apply:   func(d drawer, cfg *Config) { cfg.BusyWhenFull = true },
		hostile: []string{HostileHoarder},
	},
	{
		Name:    "cut-write-kept",
		What:    "a write whose connection closes before its last packet is stored with the data that arrived, as if a replica being written were finalized when its writer went away: clients that send most of a write and stop, cut off by the datanode, leave blocks no one wrote (caught at rest: a block only hostile peers write is stored)",
		Catches: PropRefusal,
		apply:   func(d drawer, cfg *Config) { cfg.KeepsCutWrite = true },
		hostile: []string{HostileHoarder},
	},
	{
		Name:    "write-trickle",
		What:    "any byte a write's client sends counts as progress: the read timeout restarts and the stall clock resets on every read, so clients that send half a largest write, then a packet of one byte just under each stall timeout, hold their connections and the buffer room for good, and well-behaved writes fail busy",
		Catches: PropTimeout,
		apply:   func(d drawer, cfg *Config) { cfg.WriteAnyByte = true },
		hostile: []string{HostileTrickler},
	},
	{
		Name:    "write-waiter-deaf",
		What:    "a write waiting for buffer room leaves its input in the socket and listens for nothing behind it, so its client's FIN goes unseen: a client that has gone keeps its connection and its place among the waiting writes until HandleWait has passed (issue 9 item 5, for writes)",
		Catches: PropTimeout,
		apply:   func(d drawer, cfg *Config) { cfg.WriteWaiterDeaf = true },
		hostile: []string{HostileWriteQuitter},
	},
	{
		Name:    "holders-wait-for-room",
		What:    "a write that holds room waits for more as long as one holding none (HandleWait): writes that each hold part of the room and all wait for more (grabbers) hold it all until then, and well-behaved writes behind them wait as long",
		Catches: PropHostileAvail,
		apply:   func(d drawer, cfg *Config) { cfg.HoldersWaitForRoom = true },
		hostile: []string{HostileGrabber},
	},
	{
		Name:    "slowloris",
		What:    "no deadline for a whole request: one dripped a byte at a time holds a connection for hours (issue 9 item 7)",
		Catches: PropTimeout,
		apply:   func(d drawer, cfg *Config) { cfg.Slowloris = true },
		hostile: []string{HostileDrip},
	},
	{
		Name:     "request-in-one-read",
		What:     "the datanode assumes a request arrives whole and refuses one a read left incomplete, though its rest is on the way",
		Catches:  PropToken,
		apply:    func(d drawer, cfg *Config) { cfg.RequestInOneRead = true },
		fragment: true,
	},
	{
		Name:    "thread-release-lost",
		What:    "a closing thread-per-connection gives its write buffer reservation back through its own loop, which closes first: MaxBuffered shrinks for good",
		Catches: PropLeakFree,
		apply: func(d drawer, cfg *Config) {
			cfg.ReleaseOnThread = true
			cfg.Mode, cfg.InlineIO = "threaded", false
			// The release is lost when it waits for the lock as its
			// thread closes: a slow disk holds the lock (a write's
			// apply) for long, and resets close writes midway.
			for _, k := range []string{FaultSlowDisk, FaultReset} {
				if !slices.Contains(cfg.Faults, k) {
					cfg.Faults = append(cfg.Faults, k)
				}
			}
		},
	},
	{
		Name:    "accept-spin",
		What:    "an accept refused for want of an fd is retried at once, not after a pause: the acceptor spins while the fd table is full",
		Catches: PropFDBounds,
		apply: func(d drawer, cfg *Config) {
			cfg.AcceptSpin = true
			if !slices.Contains(cfg.Faults, FaultFDPressure) {
				cfg.Faults = append(cfg.Faults, FaultFDPressure)
			}
		},
	},
	{
		Name:    "evict-fresh",
		What:    "a full datanode closes a connection accepted moments ago as idle, though its request is on the way: the client's read fails with an EOF",
		Catches: PropHostileAvail,
		apply: func(d drawer, cfg *Config) {
			cfg.EvictFresh = true
			// A thread per connection, in the smallest fd table:
			// few connections fill it, so once the flood's idle
			// peers are closed the oldest connection not yet heard
			// from is a client's, many of whose ops are in flight.
			cfg.Mode, cfg.InlineIO, cfg.FDLimit = "threaded", false, 160
			cfg.Clients, cfg.ClientWorkers = max(cfg.Clients, 2), d.n(4, 7, "bug_workers")
			cfg.Faults = nil
		},
		hostile: []string{HostileIdle + ":flood"},
		// Requests in pieces keep the datanode's input queue long, so
		// one may still be on its way when its connection is accepted.
		fragment: true,
	},
	{
		Name:    "tcp-drip",
		What:    "a full datanode counts a TCP connection idle only while nothing has arrived on it: clients dripping requests into connections up to past the cap hold it until each one's request timeout, and well-behaved clients wait in the listen backlog as long",
		Catches: PropHostileAvail,
		apply:   func(d drawer, cfg *Config) { cfg.TCPDrip = true },
		hostile: []string{HostileDrip + ":flood"},
	},
	{
		Name:    "first-op-reused",
		What:    "the datanode counts a connection's first op as a keep-alive reuse: run read's keepalive_reuses, the figure validate holds against real sockets, says every op found a kept-alive connection",
		Catches: PropStats,
		apply:   func(d drawer, cfg *Config) { cfg.FirstOpReused = true },
	},
	{
		Name:    "short-stream",
		What:    "the client takes the last packet as the end of a read without checking it got the whole range: a datanode that ends early returns a short read as a success",
		Catches: PropLiar,
		apply:   func(d drawer, cfg *Config) { cfg.AcceptShortStream = true },
		liar:    LieShort,
	},
}

var noBug = Bug{apply: func(drawer, *Config) {}}

// LookupBug finds a catalogued bug by name; "" is the correct code.
func LookupBug(name string) (Bug, error) {
	if name == "" {
		return noBug, nil
	}
	var names []string
	for _, b := range Bugs {
		if b.Name == name {
			return b, nil
		}
		names = append(names, b.Name)
	}
	return Bug{}, fmt.Errorf("unknown bug %q (want one of %s, or list)", name, strings.Join(names, ", "))
}
