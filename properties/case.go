// Package properties holds xceiver's specifications and the property
// checks that run them (docs/ARCHITECTURE.md §5): a porcupine model of the block
// store, partitioned by block; invariants checked at every event of a
// simulated run (fd bounds, the handle pool's bound, no handle closed while
// in use); leak-freedom at quiescence; availability when no fault is in
// force; and linearizability of every client's history.
//
// A Case — seed, configuration and schedule of ops and faults — fully
// determines a run. Draw makes one from any Source of numbers: a seeded PCG
// for `xceiver check`, rapid for `go test`, which then shrinks it.
package properties

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"xceiver/model"
)

// Case is one fully determined run.
type Case struct {
	Seed uint64 `json:"seed"`
	Bug  string `json:"bug,omitempty"` // a catalogued bug switched on, or ""
	// Ignore lists properties this run does not enforce, so that one
	// breaking at every seed does not hide the others (check --ignore).
	Ignore   []string `json:"ignore,omitempty"`
	Config   Config   `json:"config"`
	Schedule Schedule `json:"schedule"`
}

// Config is the drawn configuration of a run. Durations are nanoseconds.
type Config struct {
	// Datanode
	Mode        string        `json:"mode"` // reactor or threaded
	Selectors   int           `json:"selectors"`
	Workers     int           `json:"workers"`
	PoolMax     int           `json:"pool_max"`
	PoolMin     int           `json:"pool_min"`
	PoolIdle    time.Duration `json:"pool_idle"`
	Keepalive   time.Duration `json:"keepalive"`
	ReadTimeout time.Duration `json:"read_timeout"`
	DNNoDelay   bool          `json:"dn_nodelay"`
	DNPacket    int           `json:"dn_packet"`
	FDLimit     int           `json:"fd_limit"`
	InlineIO    bool          `json:"inline_io,omitempty"`
	// NoTransferTo: reads copy their data through a buffer instead of
	// sendfile (model.DatanodeConfig.NoTransferTo).
	NoTransferTo bool `json:"no_transfer_to,omitempty"`

	// Clients
	Clients       int           `json:"clients"`
	ClientWorkers int           `json:"client_workers"` // concurrent op streams per client
	NoDelay       bool          `json:"nodelay"`
	CacheCapacity int           `json:"cache_capacity"`
	CacheExpiry   time.Duration `json:"cache_expiry"`
	Timeout       time.Duration `json:"timeout"`
	Packet        int           `json:"packet"`
	// ClientNameLen, if set, pads the clients' names to that many bytes
	// (the protocol's bound: rogue.go).
	ClientNameLen int `json:"client_name_len,omitempty"`

	// Sim: the datanode's socket send buffer and the clients' receive
	// buffers (0: the default), and whether buffers returning to a free
	// list are poisoned.
	SndBuf int  `json:"dn_sndbuf,omitempty"`
	RcvBuf int  `json:"client_rcvbuf,omitempty"`
	Poison bool `json:"poison,omitempty"`
	// FragPiece, if set, has the clients' messages reach the datanode in
	// pieces (sim's Process.Fragment): the first fragSpan bytes of every
	// write cut into pieces of 1 to FragPiece bytes, each up to FragGap
	// after the one before, so its partial-request paths run.
	FragPiece int           `json:"frag_piece,omitempty"`
	FragGap   time.Duration `json:"frag_gap,omitempty"`

	// Blocks written before the datanode serves.
	Blocks []InitBlock `json:"blocks"`
	// MaxBlock is the largest block id ops name (some never exist).
	MaxBlock uint64 `json:"max_block"`
	// Faults lists the fault kinds this run may inject (swarm testing).
	Faults []string `json:"faults"`

	// The datanode's defences (drawDatanodeLimits) and the hostile peers
	// that test them (hostile.go).
	MaxWrite       int           `json:"max_write,omitempty"`
	MaxBuffered    int           `json:"max_buffered,omitempty"`
	MaxConns       int           `json:"max_conns,omitempty"`
	RequestTimeout time.Duration `json:"request_timeout,omitempty"`
	SendTimeout    time.Duration `json:"send_timeout,omitempty"`
	HandleWait     time.Duration `json:"handle_wait,omitempty"`
	StallTimeout   time.Duration `json:"stall_timeout,omitempty"`
	Hostile        []HostilePeer `json:"hostile,omitempty"`
	// Liar, if set, is a hostile datanode with a client of its own
	// (liar.go).
	Liar *Liar `json:"liar,omitempty"`
	// BadConfig names a value the datanode or a client must refuse at
	// start (badconfig.go), tried before the run's datanode starts.
	BadConfig string `json:"bad_config,omitempty"`

	// Bug switches: set by the catalogue (see bugs.go), or, for
	// PoolSharersSleep, PoolRetakeAppendedFails, PoolRetakeWakeLost, PoolRetireIdle,
	// PressDelayAgain, ParkedWakeLost, ClosedGrowKept and
	// InlineOvertakes, by the regression test that shows its saved case
	// failing with the bug (the old behaviour, or for ParkedWakeLost and
	// ClosedGrowKept a mutant's), so it still reaches the path.
	KeepaliveForever    bool `json:"keepalive_forever,omitempty"`
	PoolKeyIgnoresStamp bool `json:"pool_key_ignores_stamp,omitempty"`
	PoolClosesInUse     bool `json:"pool_closes_in_use,omitempty"`
	CloseLeaksCache     bool `json:"close_leaks_cache,omitempty"`
	ReturnUnclean       bool `json:"return_unclean,omitempty"`
	EmptyReadPanics     bool `json:"empty_read_panics,omitempty"`
	VerifyFirstChunk    bool `json:"verify_first_chunk,omitempty"`
	ReturnBufferEarly   bool `json:"return_buffer_early,omitempty"`
	WriteUnverified     bool `json:"write_unverified,omitempty"`
	PacketsUnchecked    bool `json:"packets_unchecked,omitempty"`
	SendfileOffsetStuck bool `json:"sendfile_offset_stuck,omitempty"`
	// Issue 9's defects (hostile.go draws the peers that find them).
	ClosedConnsReachable    bool `json:"closed_conns_reachable,omitempty"`
	WritePrealloc           bool `json:"write_prealloc,omitempty"`
	NoSendTimeout           bool `json:"no_send_timeout,omitempty"`
	PoolWaitForever         bool `json:"pool_wait_forever,omitempty"`
	HoldWhileStalled        bool `json:"hold_while_stalled,omitempty"`
	PoolSharersSleep        bool `json:"pool_sharers_sleep,omitempty"`
	PoolRetakeAppendedFails bool `json:"pool_retake_appended_fails,omitempty"`
	PoolRetakeWakeLost      bool `json:"pool_retake_wake_lost,omitempty"`
	PoolRetireIdle          bool `json:"pool_retire_idle,omitempty"`
	PressDelayAgain         bool `json:"press_delay_again,omitempty"`
	ParkedWakeLost          bool `json:"parked_wake_lost,omitempty"`
	ParkedWaiterDeaf        bool `json:"parked_waiter_deaf,omitempty"`
	ClosedGrowKept          bool `json:"closed_grow_kept,omitempty"`
	InlineOvertakes         bool `json:"inline_overtakes,omitempty"` // the simulator's (sim.TCPConfig)
	WaiterDeaf              bool `json:"waiter_deaf,omitempty"`
	WaiterDeafWhenFull      bool `json:"waiter_deaf_when_full,omitempty"`
	SpinOnUnread            bool `json:"spin_on_unread,omitempty"`
	FullWaiterSpins         bool `json:"full_waiter_spins,omitempty"`
	HoldersWaitForRoom      bool `json:"holders_wait_for_room,omitempty"`
	WriteWaiterDeaf         bool `json:"write_waiter_deaf,omitempty"`
	NoConnCap               bool `json:"no_conn_cap,omitempty"`
	BusyWhenFull            bool `json:"busy_when_full,omitempty"`
	KeepsCutWrite           bool `json:"keeps_cut_write,omitempty"`
	WriteAnyByte            bool `json:"write_any_byte,omitempty"`
	Slowloris               bool `json:"slowloris,omitempty"`
	RequestInOneRead        bool `json:"request_in_one_read,omitempty"`
	ReleaseOnThread         bool `json:"release_on_thread,omitempty"`
	AcceptSpin              bool `json:"accept_spin,omitempty"`
	EvictFresh              bool `json:"evict_fresh,omitempty"`
	AcceptShortStream       bool `json:"accept_short_stream,omitempty"`
	FirstOpReused           bool `json:"first_op_reused,omitempty"`
	TCPDrip                 bool `json:"tcp_drip,omitempty"`
}

// InitBlock is a block on the datanode's disk at the start.
type InitBlock struct {
	ID   uint64 `json:"id"`
	Size int    `json:"size"`
	Key  uint64 `json:"key"` // content seed (model.BlockContent)
}

// Schedule is what happens in a run: client ops in the workload phase,
// faults during it, probing reads as soon as faults stop (which use what
// the faults left behind, such as cached connections), and the reads of
// the liveness phase once the system had time to recover.
type Schedule struct {
	Ops    []Op    `json:"ops"`
	Faults []Fault `json:"faults"`
	Probe  []Op    `json:"probe,omitempty"`
	Live   []Op    `json:"live"`
	// Rogue ops run one after another during the workload, each with the
	// bad block token its Token names (rogue.go): each must be refused
	// with ERROR_ACCESS_TOKEN and change nothing.
	Rogue []Op `json:"rogue,omitempty"`
	// Close ops run at quiescence on their client around its Close:
	// reads started just before it (in flight when it closes) and, marked
	// AfterClose, ops started after it, which must fail cleanly.
	Close []Op `json:"close,omitempty"`
}

// Op is one client op. Ops of one (client, worker) run one after another,
// each Gap after the previous one returned.
type Op struct {
	Client int           `json:"c"`
	Worker int           `json:"w,omitempty"`
	Gap    time.Duration `json:"gap"`
	Kind   string        `json:"op"` // read, write, append, replace, delete
	Block  uint64        `json:"b"`
	Off    int64         `json:"off,omitempty"`
	Len    int64         `json:"len,omitempty"`
	// Stamped reads name the last generation stamp the client saw.
	Stamped bool `json:"stamped,omitempty"`
	// Stream reads go through Client.ReadStream (a sink per packet).
	Stream bool   `json:"stream,omitempty"`
	Size   int    `json:"size,omitempty"` // data of a write, append or replace
	Key    uint64 `json:"key,omitempty"`  // its content seed
	// Token, on a rogue op, names the bad token it carries (BadTokens).
	Token string `json:"token,omitempty"`
	// AfterClose, on a close op, issues it once its client is closed.
	AfterClose bool `json:"after_close,omitempty"`
}

// Fault is one injected fault: it starts At and is undone Dur later.
type Fault struct {
	At   time.Duration `json:"at"`
	Kind string        `json:"kind"`
	Dur  time.Duration `json:"dur,omitempty"`
	// Arg picks the target or the strength; its meaning depends on Kind
	// (see run.go, inject).
	Arg  int    `json:"arg,omitempty"`
	Size int    `json:"size,omitempty"`
	Key  uint64 `json:"key,omitempty"`
}

// Fault kinds (docs/ARCHITECTURE.md §3, §7).
const (
	FaultReset      = "reset"       // a connection is reset
	FaultVanish     = "vanish"      // a connection's peer vanishes without FIN
	FaultSpike      = "spike"       // latency spike on a process's network
	FaultSlowReader = "slow-reader" // a client's receive window shrinks
	FaultEIO        = "eio"         // the datanode's disk fails reads and writes
	FaultSlowDisk   = "slow-disk"   // latency spikes of the datanode's disk
	FaultMutate     = "mutate"      // a block is replaced, deleted or stamp-bumped under readers
	FaultCrash      = "crash"       // the datanode crashes and restarts
	FaultFDPressure = "fd-pressure" // the datanode runs out of fds
)

// FaultKinds lists every fault kind.
var FaultKinds = []string{FaultReset, FaultVanish, FaultSpike, FaultSlowReader, FaultEIO, FaultSlowDisk, FaultMutate, FaultCrash, FaultFDPressure,
	FaultBitRot, FaultFlip, FaultCrashPoint}

// Op kinds.
const (
	OpRead    = "read"
	OpWrite   = "write"
	OpAppend  = "append"
	OpReplace = "replace"
	OpDelete  = "delete"
)

// ExpiryMargin is how much shorter than the datanode's keep-alive a
// correct client's cache expiry is: more than the longest a request can
// be held by Nagle waiting for a delayed ACK (200 ms), so a peer taken
// from the cache is still open when the request arrives.
const ExpiryMargin = 250 * time.Millisecond

// Source draws the numbers a case is made of.
type Source interface {
	// IntRange returns an int in [lo, hi].
	IntRange(lo, hi int, label string) int
}

// SeedSource is the Source of `xceiver check`: a PCG seeded by seed.
func SeedSource(seed uint64) Source {
	return &pcgSource{rand.New(rand.NewPCG(seed, 0x7863656976657221))}
}

type pcgSource struct{ r *rand.Rand }

func (s *pcgSource) IntRange(lo, hi int, _ string) int {
	if hi <= lo {
		return lo
	}
	return lo + s.r.IntN(hi-lo+1)
}

// RapidSource draws from rapid, which then shrinks what it drew.
func RapidSource(t *rapid.T) Source { return rapidSource{t} }

type rapidSource struct{ t *rapid.T }

func (s rapidSource) IntRange(lo, hi int, label string) int {
	if hi <= lo {
		return lo
	}
	return rapid.IntRange(lo, hi).Draw(s.t, label)
}

// drawer wraps a Source with the shapes the generator needs.
type drawer struct{ s Source }

func (d drawer) n(lo, hi int, label string) int { return d.s.IntRange(lo, hi, label) }

// chance is true with probability pct%.
func (d drawer) chance(pct int, label string) bool { return d.s.IntRange(0, 99, label) < pct }

func pick[T any](d drawer, label string, xs ...T) T { return xs[d.s.IntRange(0, len(xs)-1, label)] }

func (d drawer) dur(lo, hi time.Duration, label string) time.Duration {
	// Drawn in microseconds, so rapid shrinks toward lo in few steps.
	return lo + time.Duration(d.n(0, int((hi-lo)/time.Microsecond), label))*time.Microsecond
}

func (d drawer) key(label string) uint64 { return uint64(d.n(1, 1<<30, label)) }

// Draw makes a case from src. seed only labels it (and feeds nothing);
// bug switches on a catalogued bug ("" for the correct code).
func Draw(src Source, seed uint64, bug string) (Case, error) {
	b, err := LookupBug(bug)
	if err != nil {
		return Case{}, err
	}
	d := drawer{src}
	c := Case{Seed: seed, Bug: bug}
	cfg := &c.Config

	cfg.Mode = "reactor"
	if d.chance(25, "threaded") {
		cfg.Mode = "threaded"
	}
	cfg.Selectors = d.n(1, 3, "selectors")
	cfg.Workers = d.n(1, 4, "workers")
	cfg.PoolMax = pick(d, "pool_max", 2, 2, 4, 6, 8, 16, 64)
	cfg.PoolMin = d.n(0, min(2, cfg.PoolMax/2), "pool_min")
	cfg.PoolIdle = pick(d, "pool_idle", 5*time.Millisecond, 50*time.Millisecond, 500*time.Millisecond, 2*time.Second)
	cfg.Keepalive = pick(d, "keepalive", 300*time.Millisecond, time.Second, 4*time.Second)
	cfg.ReadTimeout = pick(d, "read_timeout", time.Second, 5*time.Second, 60*time.Second)
	cfg.DNNoDelay = d.chance(50, "dn_nodelay")
	cfg.DNPacket = pick(d, "dn_packet", 512, 4096, 64<<10)
	cfg.FDLimit = pick(d, "fd_limit", 160, 256, 1024)
	cfg.InlineIO = cfg.Mode == "reactor" && d.chance(25, "inline_io")

	cfg.Clients = d.n(1, 4, "clients")
	cfg.ClientWorkers = d.n(1, 3, "client_workers")
	cfg.NoDelay = d.chance(50, "nodelay")
	cfg.CacheCapacity = pick(d, "cache_capacity", 0, 1, 2, 4, 16)
	// HDFS-941: the client's cache expiry is shorter than the server's
	// keep-alive (3 s vs 4 s by default), by more than the longest stall
	// a request can suffer without NODELAY (a delayed ACK: ≤ 200 ms).
	cfg.CacheExpiry = (cfg.Keepalive - ExpiryMargin) * time.Duration(pick(d, "cache_expiry", 1, 2, 3)) / 4
	cfg.Timeout = pick(d, "timeout", 150*time.Millisecond, 500*time.Millisecond, 2*time.Second)
	cfg.Packet = pick(d, "packet", 512, 4096, 64<<10)
	if cfg.CacheCapacity <= 4 && d.chance(20, "more_workers_than_cache") {
		// More concurrent ops than cached peers: returns overflow the
		// cache, evicting.
		cfg.ClientWorkers = cfg.CacheCapacity + d.n(1, 3, "workers_over_cache")
	}
	if d.chance(30, "small_buffers") {
		// Partial writes become common: a packet does not fit at once.
		cfg.SndBuf = pick(d, "sndbuf", 2048, 4096, 8192)
		cfg.RcvBuf = pick(d, "rcvbuf", 4096, 16384, 65536)
	}
	cfg.Poison = d.chance(50, "poison")

	nb := d.n(2, 5, "blocks")
	for i := 1; i <= nb; i++ {
		cfg.Blocks = append(cfg.Blocks, InitBlock{ID: uint64(i), Size: drawSize(d, "block_size"), Key: d.key("block_key")})
	}
	cfg.MaxBlock = uint64(nb + 2)

	if !d.chance(30, "fault_free") {
		for _, k := range FaultKinds {
			if d.chance(50, "fault_"+k) {
				cfg.Faults = append(cfg.Faults, k)
			}
		}
		if len(cfg.Faults) == 0 {
			cfg.Faults = append(cfg.Faults, pick(d, "fault_kind", FaultKinds...))
		}
	}
	b.apply(d, cfg)

	// Workload: each worker a sequence of ops with think times.
	idle := max(cfg.Keepalive, cfg.CacheExpiry)
	var starts []time.Duration // estimated start of each op
	for cl := 0; cl < cfg.Clients; cl++ {
		for wk := 0; wk < cfg.ClientWorkers; wk++ {
			n := d.n(1, 15, "ops")
			var span time.Duration
			for i := 0; i < n; i++ {
				op := drawOp(d, cfg, idle)
				op.Client, op.Worker = cl, wk
				span += op.Gap
				starts = append(starts, span)
				span += 500 * time.Microsecond
				c.Schedule.Ops = append(c.Schedule.Ops, op)
			}
		}
	}
	for _, k := range cfg.Faults {
		n := d.n(1, 4, "fault_count")
		for i := 0; i < n; i++ {
			// Faults strike near ops, where they matter.
			at := starts[d.n(0, len(starts)-1, "fault_near")] + d.dur(0, 5*time.Millisecond, "fault_after")
			c.Schedule.Faults = append(c.Schedule.Faults, drawFault(d, cfg, k, at))
		}
	}
	sortFaults(c.Schedule.Faults)
	// Probes: right after the faults stop, each client reads at once.
	for cl := 0; cl < cfg.Clients; cl++ {
		n := d.n(0, 3, "probe_ops")
		for i := 0; i < n; i++ {
			c.Schedule.Probe = append(c.Schedule.Probe, Op{
				Client: cl, Gap: d.dur(0, 2*time.Millisecond, "probe_gap"), Kind: OpRead,
				Block: uint64(d.n(1, int(cfg.MaxBlock), "probe_block")), Len: int64(d.n(0, 4096, "probe_len")),
			})
		}
	}
	// Liveness: each client reads a few times, with idle gaps around the
	// keep-alive and cache expiry, after faults stopped.
	for cl := 0; cl < cfg.Clients; cl++ {
		n := d.n(2, 4, "live_ops")
		for i := 0; i < n; i++ {
			gap := time.Duration(d.n(0, 150, "live_gap")) * idle / 100
			c.Schedule.Live = append(c.Schedule.Live, Op{
				Client: cl, Gap: gap, Kind: OpRead, Block: uint64(d.n(1, int(cfg.MaxBlock), "live_block")),
				Len: int64(d.n(0, 512, "live_len")),
			})
		}
	}
	drawDatanodeLimits(d, cfg)
	drawHostile(d, cfg, b.hostile)
	drawRogue(d, cfg, &c.Schedule)
	drawBadConfig(d, cfg)
	// Both send paths stay under the properties. Drawn last, so the
	// draws before it are what they were before transferTo.
	cfg.NoTransferTo = !cfg.SendfileOffsetStuck && d.chance(30, "no_transfer_to")
	drawFragment(d, cfg, b.fragment)
	drawLiar(d, cfg, b.liar)
	drawMisfits(d, cfg, b.hostile)
	drawHoarders(d, cfg, b.hostile)
	drawDrainers(d, cfg, b.hostile)
	drawGrabbers(d, cfg, b.hostile)
	drawDripFlood(d, cfg, b.hostile)
	// What check runs passes the same validation as what replay reads.
	if err := c.Validate(); err != nil {
		return Case{}, fmt.Errorf("drew an invalid case (a bug in Draw): %w", err)
	}
	return c, nil
}

// fragSpan is how much of each write a fragmenting path splits: a
// request, a write's first packet header, a status, whole.
const fragSpan = 256

// drawFragment draws whether the clients' messages arrive in pieces. It
// runs last, so earlier seeds keep the rest of their cases.
func drawFragment(d drawer, cfg *Config, force bool) {
	if !d.chance(15, "fragment") && !force {
		return
	}
	cfg.FragPiece = pick(d, "frag_piece", 1, 3, 8, 24, 64)
	cfg.FragGap = pick(d, "frag_gap", 0, 5*time.Microsecond, 100*time.Microsecond)
}

func drawSize(d drawer, label string) int {
	switch d.n(0, 9, label) {
	case 0:
		return 0
	case 1, 2, 3:
		n := d.n(1, 1100, label+"_small")
		if n > 1070 {
			// Writes of a byte or three, which a loop over partial
			// writes must not stop short of (no draw consumed).
			n = 1 + n%3
		}
		return n
	case 4, 5, 6, 7, 8:
		return d.n(1100, 20000, label+"_mid")
	}
	return d.n(20000, 100000, label+"_large")
}

func drawOp(d drawer, cfg *Config, idle time.Duration) Op {
	var op Op
	switch g := d.n(0, 99, "gap_kind"); {
	case g < 60:
		op.Gap = d.dur(0, time.Millisecond, "gap")
	case g < 85:
		op.Gap = d.dur(time.Millisecond, 20*time.Millisecond, "gap")
	default:
		op.Gap = d.dur(20*time.Millisecond, 20*time.Millisecond+idle*3/2, "gap")
	}
	op.Block = uint64(d.n(1, int(cfg.MaxBlock), "block"))
	switch k := d.n(0, 99, "kind"); {
	case k < 55:
		op.Kind = OpRead
		if d.chance(30, "off_zero") {
			op.Off = 0
		} else {
			op.Off = int64(d.n(0, 6000, "off"))
		}
		op.Len = int64(d.n(0, 5000, "len"))
		if d.chance(5, "len_big") {
			op.Len = int64(d.n(5000, 120000, "len"))
		}
		op.Stamped = d.chance(15, "stamped")
		op.Stream = d.chance(30, "stream")
	case k < 67:
		op.Kind = OpWrite
	case k < 80:
		op.Kind = OpAppend
	case k < 92:
		op.Kind = OpReplace
	default:
		op.Kind = OpDelete
	}
	switch op.Kind {
	case OpWrite, OpReplace:
		op.Size = drawSize(d, "size")
		op.Key = d.key("key")
	case OpAppend:
		op.Size = d.n(0, 3000, "size")
		if op.Size > 2930 {
			op.Size = 1 + op.Size%3 // (as drawSize's tiny writes)
		}
		op.Key = d.key("key")
	}
	return op
}

func drawFault(d drawer, cfg *Config, kind string, at time.Duration) Fault {
	f := Fault{Kind: kind, At: at}
	durs := func() time.Duration {
		return pick(d, "fault_dur", time.Millisecond, 10*time.Millisecond, 100*time.Millisecond, 500*time.Millisecond, 2*time.Second)
	}
	switch kind {
	case FaultReset:
		f.Arg = d.n(0, 1000, "target")
	case FaultVanish:
		f.Arg = d.n(0, 1000, "target") // even: an idle connection
	case FaultSpike:
		f.Arg = d.n(0, cfg.Clients, "target") // 0: the datanode, k: client k-1
		f.Dur = durs()
	case FaultSlowReader:
		f.Arg = d.n(0, cfg.Clients-1, "target")
		f.Size = pick(d, "rcvbuf", 2048, 4096, 16384)
		f.Dur = durs()
	case FaultEIO:
		f.Arg = pick(d, "eio_permille", 20, 100, 500) // read EIO rate ‰; writes half of it
		f.Dur = durs()
	case FaultSlowDisk:
		f.Arg = pick(d, "slow_permille", 50, 200, 1000) // share of I/Os that are slow, ‰
		f.Size = pick(d, "slow_ms", 20, 200, 1000)      // their extra latency, ms
		f.Dur = durs()
	case FaultMutate:
		f.Arg = d.n(0, 2, "mutation") // 0 replace, 1 bump the stamp (empty append), 2 delete
		f.Size = drawSize(d, "size")
		f.Key = d.key("key")
	case FaultCrash:
		f.Dur = pick(d, "downtime", 0, 10*time.Millisecond, 200*time.Millisecond, time.Second)
	case FaultFDPressure:
		f.Arg = d.n(0, 6, "fds_left")
		f.Dur = durs()
	case FaultBitRot:
		f.Arg = d.n(0, 1000, "rot_target") // even: data, odd: checksums; /2: the chunk
		f.Size = d.n(0, 1<<16, "rot_pos")  // byte within the chunk or checksum, and bit
		f.Key = d.key("key")
	case FaultFlip:
		f.Arg = pick(d, "flip_permille", 100, 500, 1000)
		f.Dur = durs()
	case FaultCrashPoint:
		f.Arg = d.n(0, 12, "crash_op")
		f.Size = d.n(0, 1, "crash_in_recovery")
		f.Dur = pick(d, "crash_window", 10*time.Millisecond, 100*time.Millisecond, time.Second)
	}
	return f
}

func sortFaults(fs []Fault) {
	// Insertion sort: stable and deterministic, and lists are short.
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].At < fs[j-1].At; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// Bounds of a case read from a trace. Each holds what Draw makes with
// room to spare (the figures are Draw's largest), and together they keep
// a run to seconds of work and a few hundred MB, ending well inside
// runLimit: a hand-edited number past them is bad input, never a
// liveness or harness failure of the code under test.
const (
	// Blocks: at most 5 of 100,000 bytes and 4 of a non-reader's 512
	// KiB (hostile.go), 2.6 MB in all.
	maxInitBytes = 16 << 20
	// What ops write or ask to read, and mutate faults write: 420
	// workload ops of up to 120,000 bytes (a read; a write is at most
	// 100,000), 6 rogue, 8 after-close and 8 in-flight close ops, 12
	// probes, 16 liveness reads and 4 mutations, some 53 MB. A run holds
	// about 2.7 times this: at the bound, 360 MB.
	maxMovedBytes = 128 << 20
	maxOpBytes    = 16 << 20 // an op's size or length
	// 420 workload ops, 12 probes, 16 liveness reads, 6 rogue and 16
	// close ops; 12 fault kinds of 4 faults each.
	maxOps    = 4096
	maxFaults = 1024
	// A gap is at most 20 ms + 1.5 × the longer of keep-alive and cache
	// expiry (12 s with HDFS-4911): 18.02 s. A worker's 15 ops wait
	// 270 s at most, a client's 4 liveness reads 72 s, its 3 probes
	// 6 ms, the 6 rogue ops 108 s; a fault starts by the end of the
	// longest worker's ops (270 s and 12 ms) and lasts at most 2 s.
	// The sum of the phases these bound, with the timeouts below, is
	// some 22 minutes, inside runLimit's 30.
	maxGap        = time.Minute
	maxWorkerGaps = 8 * time.Minute
	maxLiveGaps   = 4 * time.Minute
	maxRogueGaps  = 5 * time.Minute
	maxOtherGaps  = time.Minute // a client's probes, its close ops
	maxFaultAt    = 8 * time.Minute
	maxFaultDur   = time.Minute
	// Timeouts are at most 60 s (the datanode's read timeout), the
	// clients' 2 s (an op waits for it at each attempt), and the sum the
	// leak check waits for with hostile peers (stuckBound) 136 s.
	maxTimeout       = 2 * time.Minute
	maxClientTimeout = 10 * time.Second
	maxStuck         = 5 * time.Minute
	// A hostile peer's first connection and its reconnect gap: at most
	// 20 ms and 1 s.
	maxHostileWait = time.Minute
	// The datanode's write bounds: at most 4 MiB and 64 MiB (a
	// write-prealloc datanode allocates a write's whole announced length).
	maxMaxWrite    = 64 << 20
	maxMaxBuffered = 1 << 30
)

// faultRange is what the injector of a fault kind takes of Arg and Size
// (inject.go, corrupt.go): a negative index panicked in it, a negative
// fd count asked sim for an array of as many fds.
type faultRange struct {
	argLo, argHi, sizeLo, sizeHi int
}

// faultRanges holds, per kind, the Arg and Size drawFault draws, with
// room (a -1 bound is the case's clients or fd limit, filled in by
// Validate). Targets taken modulo a count go to 2^20, per mille rates to
// 1000.
var faultRanges = map[string]faultRange{
	FaultReset:      {0, 1 << 20, 0, 0},       // drawn [0, 1000]
	FaultVanish:     {0, 1 << 20, 0, 0},       // drawn [0, 1000]
	FaultSpike:      {0, -1, 0, 0},            // 0 the datanode, k client k-1
	FaultSlowReader: {0, -1, 1024, 1 << 20},   // a client, its window (drawn 2048 to 16384)
	FaultEIO:        {0, 1000, 0, 0},          // ‰ (drawn 20 to 500)
	FaultSlowDisk:   {0, 1000, 0, 10000},      // ‰, and ms (drawn up to 1000)
	FaultMutate:     {0, 2, 0, 16 << 20},      // replace, bump, delete; the new data
	FaultCrash:      {0, 0, 0, 0},             // (downtime is Dur)
	FaultFDPressure: {0, -1, 0, 0},            // fds left (drawn up to 6)
	FaultBitRot:     {0, 1 << 20, 0, 1 << 20}, // drawn [0, 1000], [0, 65536]
	FaultFlip:       {0, 1000, 0, 0},          // ‰ (drawn 100 to 1000)
	FaultCrashPoint: {0, 1 << 20, 0, 1},       // the disk op (drawn up to 12); in recovery
}

// Validate reports a case that cannot run (a hand-edited trace).
func (c *Case) Validate() error {
	cfg := &c.Config
	if _, err := LookupBug(c.Bug); err != nil {
		return err
	}
	switch {
	case cfg.Mode != "reactor" && cfg.Mode != "threaded":
		return fmt.Errorf("mode %q: want reactor or threaded", cfg.Mode)
	case cfg.Clients < 1 || cfg.Clients > 64:
		return fmt.Errorf("clients %d outside [1, 64]", cfg.Clients)
	case cfg.ClientWorkers < 1 || cfg.ClientWorkers > 64:
		return fmt.Errorf("client workers %d outside [1, 64]", cfg.ClientWorkers)
	case cfg.FDLimit < 16:
		return fmt.Errorf("fd limit %d below 16", cfg.FDLimit)
	case cfg.SndBuf < 0 || cfg.RcvBuf < 0 || (cfg.SndBuf > 0 && cfg.SndBuf < 1024) || (cfg.RcvBuf > 0 && cfg.RcvBuf < 1024):
		return fmt.Errorf("socket buffers %d/%d: want 0 (default) or at least 1024", cfg.SndBuf, cfg.RcvBuf)
	case cfg.FragPiece < 0 || cfg.FragPiece > 1<<16 || cfg.FragGap < 0 || cfg.FragGap > 10*time.Millisecond:
		return fmt.Errorf("fragment piece %d, gap %v: want [0, 65536] bytes, [0, 10ms]", cfg.FragPiece, cfg.FragGap)
	case cfg.Timeout <= 0 || cfg.Keepalive <= 0 || cfg.CacheExpiry <= 0 || cfg.PoolIdle <= 0 || cfg.ReadTimeout <= 0:
		return fmt.Errorf("timeouts must be positive")
	}
	for _, t := range []struct {
		name   string
		v, max time.Duration
	}{
		{"timeout", cfg.Timeout, maxClientTimeout}, {"keepalive", cfg.Keepalive, maxTimeout},
		{"cache_expiry", cfg.CacheExpiry, maxTimeout}, {"pool_idle", cfg.PoolIdle, maxTimeout},
		{"read_timeout", cfg.ReadTimeout, maxTimeout}, {"request_timeout", cfg.RequestTimeout, maxTimeout},
		{"send_timeout", cfg.SendTimeout, maxTimeout}, {"handle_wait", cfg.HandleWait, maxTimeout},
		{"stall_timeout", cfg.StallTimeout, maxTimeout},
	} {
		if t.v > t.max {
			return fmt.Errorf("%s %v: at most %v", t.name, t.v, t.max)
		}
	}
	if s := cfg.stuckBound(); s > maxStuck {
		return fmt.Errorf("read, request, handle-wait, send timeouts and keep-alive add up to %v: at most %v", s, maxStuck)
	}
	// The datanode and client would read a zero as "default" and take
	// absurd sizes at face value: a case (drawn, shrunk or read from a
	// trace) must name every value, within what the simulator can run.
	if err := checkBounds("", []bound{
		{"selectors", int64(cfg.Selectors), 1, 64},
		{"workers", int64(cfg.Workers), 1, 256},
		// A handle holds two fds, and the pool keeps at most half its
		// handles idle (model.NewHandlePool).
		{"pool_max", int64(cfg.PoolMax), 2, 4096},
		{"pool_min", int64(cfg.PoolMin), 0, int64(cfg.PoolMax / 2)},
		{"dn_packet", int64(cfg.DNPacket), model.BytesPerChecksum, model.MaxPacketData},
		{"packet", int64(cfg.Packet), model.BytesPerChecksum, model.MaxPacketData},
		{"fd_limit", int64(cfg.FDLimit), 16, 1 << 20},
		{"cache_capacity", int64(cfg.CacheCapacity), 0, 4096},
		{"max_write", int64(cfg.MaxWrite), 0, maxMaxWrite},
		{"max_buffered", int64(cfg.MaxBuffered), 0, maxMaxBuffered},
	}); err != nil {
		return err
	}
	// The datanode refuses to start on a packet of part of a chunk
	// (the client takes any size in the range).
	if cfg.DNPacket%model.BytesPerChecksum != 0 {
		return fmt.Errorf("dn_packet %d: want a multiple of %d", cfg.DNPacket, model.BytesPerChecksum)
	}
	for _, k := range cfg.Faults {
		if !slices.Contains(FaultKinds, k) {
			return fmt.Errorf("unknown fault kind %q in faults (want %s)", k, strings.Join(FaultKinds, ", "))
		}
	}
	for _, p := range c.Ignore {
		if !KnownProperty(p) {
			return fmt.Errorf("ignore: unknown property %q", p)
		}
	}
	if err := validateLiar(cfg); err != nil {
		return err
	}
	if err := validateHostile(cfg); err != nil {
		return err
	}
	for _, p := range cfg.Hostile {
		if p.At > maxHostileWait || p.Gap > maxHostileWait {
			return fmt.Errorf("hostile %s: first connection at %v, reconnect gap %v: at most %v", p.Kind, p.At, p.Gap, maxHostileWait)
		}
	}
	if cfg.MaxBlock < 1 || cfg.MaxBlock > 1<<16 {
		return fmt.Errorf("max block %d outside [1, 65536]", cfg.MaxBlock)
	}
	seen := map[uint64]bool{}
	initBytes := 0
	for _, b := range cfg.Blocks {
		switch {
		case b.Size < 0 || b.Size > 16<<20:
			return fmt.Errorf("block %d: size %d outside [0, 16 MiB]", b.ID, b.Size)
		case b.ID < 1 || b.ID > cfg.MaxBlock || seen[b.ID]:
			return fmt.Errorf("block %d: id repeated or outside [1, max block %d]", b.ID, cfg.MaxBlock)
		}
		seen[b.ID] = true
		// (Each at most 16 MiB, and at most 65,536 of them: no wrap.)
		if initBytes += b.Size; initBytes > maxInitBytes {
			return fmt.Errorf("blocks hold more than %d bytes in all", maxInitBytes)
		}
	}
	if err := validateRogue(c); err != nil {
		return err
	}
	if err := validateBadConfig(cfg); err != nil {
		return err
	}
	if err := c.validateSchedule(); err != nil {
		return err
	}
	return nil
}

// validateSchedule checks the ops and faults: their kinds, targets and
// sizes, and the gaps that set when each runs.
func (c *Case) validateSchedule() error {
	cfg := &c.Config
	sc := &c.Schedule
	if n := len(sc.Ops) + len(sc.Probe) + len(sc.Live) + len(sc.Rogue) + len(sc.Close); n > maxOps {
		return fmt.Errorf("%d ops, more than %d", n, maxOps)
	}
	if len(sc.Faults) > maxFaults {
		return fmt.Errorf("%d faults, more than %d", len(sc.Faults), maxFaults)
	}
	var moved int64
	// The ops of a sequence run one after another, each a gap after the
	// last returned: a worker's workload ops; a client's probes,
	// liveness reads or close ops; all rogue ops.
	const perWorker, perClient, inAll = 0, 1, 2
	// A sequence's gaps so far, by client and worker (Validate bounded
	// both to 64 already): a slice, not a map, since every run checks
	// its case.
	waits := make([]time.Duration, cfg.Clients*cfg.ClientWorkers)
	for _, l := range []struct {
		name string
		ops  []Op
		seq  int
		max  time.Duration // the gaps of a sequence, in all
	}{
		{"workload", sc.Ops, perWorker, maxWorkerGaps},
		{"probe", sc.Probe, perClient, maxOtherGaps},
		{"liveness", sc.Live, perClient, maxLiveGaps},
		{"rogue", sc.Rogue, inAll, maxRogueGaps},
		{"close", sc.Close, perClient, maxOtherGaps},
	} {
		clear(waits)
		for _, op := range l.ops {
			if op.Client < 0 || op.Client >= cfg.Clients || op.Worker < 0 || op.Worker >= cfg.ClientWorkers {
				return fmt.Errorf("op names client %d worker %d of %d×%d", op.Client, op.Worker, cfg.Clients, cfg.ClientWorkers)
			}
			switch op.Kind {
			case OpRead, OpWrite, OpAppend, OpReplace, OpDelete:
			default:
				return fmt.Errorf("unknown op %q", op.Kind)
			}
			if op.Gap < 0 || op.Off < 0 || op.Len < 0 || op.Len > maxOpBytes || op.Size < 0 || op.Size > maxOpBytes || op.Block < 1 || op.Block > cfg.MaxBlock {
				return fmt.Errorf("op %s: negative or oversized field, or block outside [1, max block]", op.Kind)
			}
			if op.Gap > maxGap {
				return fmt.Errorf("%s op %s: gap %v, at most %v", l.name, op.Kind, op.Gap, maxGap)
			}
			var k int
			switch l.seq {
			case perWorker:
				k = op.Client*cfg.ClientWorkers + op.Worker
			case perClient:
				k = op.Client * cfg.ClientWorkers
			}
			// (Each gap at most a minute, and at most maxOps of them: no
			// wrap.)
			switch waits[k] += op.Gap; {
			case waits[k] <= l.max:
			case l.seq == perWorker:
				return fmt.Errorf("%s ops of client %d worker %d wait more than %v in all", l.name, op.Client, op.Worker, l.max)
			case l.seq == perClient:
				return fmt.Errorf("%s ops of client %d wait more than %v in all", l.name, op.Client, l.max)
			default:
				return fmt.Errorf("%s ops wait more than %v in all", l.name, l.max)
			}
			// (At most 16 MiB each, and at most maxOps of them: no wrap.)
			moved += op.Len + int64(op.Size)
		}
	}
	for _, f := range sc.Faults {
		r, known := faultRanges[f.Kind]
		if !known {
			return fmt.Errorf("unknown fault %q", f.Kind)
		}
		if f.At < 0 || f.Dur < 0 || f.Size < 0 || f.Size > 16<<20 {
			return fmt.Errorf("fault %s: negative or oversized field", f.Kind)
		}
		if f.At > maxFaultAt || f.Dur > maxFaultDur {
			return fmt.Errorf("fault %s at %v for %v: want at most %v, for at most %v", f.Kind, f.At, f.Dur, maxFaultAt, maxFaultDur)
		}
		switch f.Kind {
		case FaultSpike:
			r.argHi = cfg.Clients
		case FaultSlowReader:
			r.argHi = cfg.Clients - 1
		case FaultFDPressure:
			r.argHi = cfg.FDLimit
		}
		switch {
		case f.Arg < r.argLo || f.Arg > r.argHi:
			return fmt.Errorf("fault %s: arg %d outside [%d, %d]", f.Kind, f.Arg, r.argLo, r.argHi)
		case f.Size < r.sizeLo || f.Size > r.sizeHi:
			return fmt.Errorf("fault %s: size %d outside [%d, %d]", f.Kind, f.Size, r.sizeLo, r.sizeHi)
		}
		if f.Kind == FaultMutate {
			moved += int64(f.Size)
		}
	}
	if moved > maxMovedBytes {
		return fmt.Errorf("ops and faults write or ask to read %d bytes, more than %d", moved, maxMovedBytes)
	}
	return nil
}

// bound is a figure of a case by its name in the file, and its range.
type bound struct {
	name      string
	v, lo, hi int64
}

// checkBounds refuses the first figure outside its range, named as in the
// file (prefix says whose case it is).
func checkBounds(prefix string, bs []bound) error {
	for _, b := range bs {
		if b.v < b.lo || b.v > b.hi {
			return fmt.Errorf("%s%s %d outside [%d, %d]", prefix, b.name, b.v, b.lo, b.hi)
		}
	}
	return nil
}
