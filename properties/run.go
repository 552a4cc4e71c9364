package properties

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"xceiver/model"
	"xceiver/sim"
)

// Bounds of a run.
const (
	// LiveBound: once faults have stopped and the system had time to
	// recover, every op must return within this (and succeed).
	LiveBound = time.Second
	// runLimit is the virtual time after which a run that has not reached
	// quiescence fails the liveness property.
	runLimit = 30 * time.Minute
	// maxEvents stops a run that never quiesces (a livelock).
	maxEvents = 5_000_000
	// DefaultLinBudget bounds the linearizability check of one run: the
	// work porcupine's searches may do, counted as model steps and
	// comparisons of states, before the checker gives up, which is a
	// failure ("unknown"). A unit of the block model costs 0.1 to 1.3 µs
	// on the hardest histories saved in testdata (up to six seconds for
	// the budget), one of the namespace model some 4 µs (rpc seed 184
	// with responder-blocks-handler, searched whole: 20 s);
	// check's seeds spend at most some tens of thousands (23,626 in
	// 20,000 mix seeds from 530000001). The bound was the wall clock's
	// once, and each caller's own (check's rpc runs 60 s, their shrinking
	// and the rpc corpus's record 10 s, datanode runs 5 s), so a verdict
	// on a heavy history depended on the machine's load and on who asked:
	// a seed could fail "unknown" in check and pass when shrunk or
	// replayed. Work counts the same everywhere, so a verdict replays.
	DefaultLinBudget = 5_000_000

	dnAddr = "datanode:50010"
	dnDir  = "data"
)

// Properties, as named in failures.
const (
	PropFDBounds     = "fd-bounds"        // per-process fds ≤ limit; block fds = the pool's; client sockets ≤ ops + cached peers
	PropPoolBound    = "pool-bound"       // the handle pool holds at most PoolMax block fds
	PropNoCloseInUse = "no-close-in-use"  // no handle closed while a read holds it
	PropLinearizable = "linearizability"  // the history fits the block-store model
	PropStream       = "stream-integrity" // a client never sees a malformed stream
	PropAvailability = "availability"     // no fault in force → every op succeeds, in time, without dead peers
	PropLiveness     = "liveness"         // the run reaches quiescence
	PropLeakFree     = "leak-freedom"     // at quiescence every process is back to its baseline
	PropDeterminism  = "determinism"      // the same case gives the same trace
	PropHarness      = "harness"          // the world failed (an assertion in model code)
	PropCache        = "peer-cache"       // reads take the newest live cached peer, other ops none; the cache within its capacity; a client's dials are its process's sockets
)

// Failure is a broken property.
type Failure struct {
	Property string `json:"property"`
	Message  string `json:"message"`
}

func (f *Failure) String() string { return f.Property + ": " + f.Message }

// Unknown reports a linearizability check that gave up (a failure, not a
// pass).
func (f *Failure) Unknown() bool {
	return (f.Property == PropLinearizable || f.Property == PropDurable) && strings.HasPrefix(f.Message, "unknown")
}

// Options shape a run.
type Options struct {
	// Trace, if set, receives every event as a JSON line.
	Trace io.Writer
	// LinBudget bounds the linearizability check (0: DefaultLinBudget).
	LinBudget int64
	// Verbose keeps what the HTML rendering needs (LinInfo).
	Verbose bool
	// MaxEvents and Limit, if set below the defaults (maxEvents,
	// runLimit), cut a run short: the shrinker bounds its candidates by
	// the failing run they shrink, so a candidate that no longer fails
	// does not simulate half an hour to say so. A cut run has Cut set and
	// no failure of its own.
	MaxEvents uint64
	Limit     time.Duration
	// Ignore lists properties not to enforce (CheckSeed copies it into
	// the case, so traces replay it).
	Ignore []string
	// MemoryScan is how often, in datanode checks, the bounded-memory
	// check also scans every connection and compares what it finds with
	// the running accounting it checks after each event (0:
	// DefaultMemoryScan; 1: after every event, as the tests do).
	MemoryScan int
	// tamperStats, if set, alters the datanode's counters before the
	// stats property judges them: the tests' way to show each of its
	// comparisons fires on its own.
	tamperStats func(*model.DatanodeStats)
	// scanAllHostile makes every scan of the hostile peers look at all
	// of them, as scans did before they looked only at those that
	// changed: the tests' reference for the shortcut.
	scanAllHostile bool
	// hostileVisits, if set, counts the peers the hostile scans looked
	// at: the tests' measure of what the shortcut saves.
	hostileVisits *int
	// hashing is what the run keeps of its trace's hash
	// (CheckSeedShrinking's runs).
	hashing hashing
}

// hashing is what a run keeps of its trace's hash.
type hashing int

const (
	// hashed: the hash, and every check.
	hashed hashing = iota
	// unhashed: no hash (sim's Config.Unhashed), for check's first run
	// of a seed, whose hash is compared only when the seed runs twice
	// or fails.
	unhashed
	// hashOnly: the hash, without the history's checks, for the run
	// again of a case whose verdict is known (a failing seed's first
	// run was unhashed). The linearizability check is the one thing in
	// a run bounded by the wall clock, and it records no event.
	hashOnly
)

// worldConfig is the simulator's configuration for one run a check makes:
// every system's harness starts from it, so each holds the trace log to
// logKeys and hashes only when it is asked to (the sc and rpc harnesses,
// each building its own, once left the schema out). maxEvents 0 keeps
// the simulator's own bound.
func worldConfig(seed uint64, maxEvents uint64, h hashing) sim.Config {
	cfg := sim.DefaultConfig(seed)
	cfg.MaxEvents = maxEvents
	cfg.SpinLimit = sim.DefaultSpinLimit // a loop spinning on readiness it ignores fails the run
	cfg.LogKeys = logKeys                // a log event off its schema fails the run
	cfg.Unhashed = h == unhashed         // (a traced world hashes: TraceTo)
	return cfg
}

// DefaultMemoryScan is Options.MemoryScan's default: often enough that a
// change the accounting missed is found within the run, rarely enough to
// cost little.
const DefaultMemoryScan = 64

// Result is what a run found.
type Result struct {
	Failure *Failure
	Events  uint64
	// SimEvents are the events the simulator processed
	// (sim.World.Events, what BenchmarkSimEvents counts); Events counts
	// the trace's records.
	SimEvents uint64
	TraceHash string
	End       time.Duration // virtual time when the run stopped
	Ops       int           // client ops recorded
	// FailurePeer is the kind of hostile peer the failure is about, if
	// any: the shrinker keeps it, so one failure does not shrink into
	// another of the same property.
	FailurePeer string
	Lin         porcupine.CheckResult
	History     []porcupine.Operation
	LinInfo     porcupine.LinearizationInfo // with Options.Verbose
	Stats       RunStats
	// Cut: the run hit Options.MaxEvents or Options.Limit (not a verdict).
	Cut bool
}

// RunStats count what happened, to judge how hard a run pushed.
type RunStats struct {
	Errors, Rejected, Unknown, Timeouts, DeadPeers, Retries, Faults, Crashes int
}

// Passed reports whether every property held.
func (r *Result) Passed() bool { return r.Failure == nil }

type phase int

const (
	phaseWork phase = iota
	phaseRecover
	phaseLive
	phaseQuiesce
	phaseDone
)

var phaseNames = [...]string{"workload", "recovery", "liveness", "quiescence", "done"}

// stream names a list of ops one client worker runs in sequence.
type stream int

const (
	streamWork  stream = iota // the workload, during faults
	streamProbe               // right after faults stop
	streamLive                // after recovery: must succeed in time
)

type clientH struct {
	id      int
	name    string
	p       *sim.Process
	epoch   uint64 // p's epoch when its fds were last checked
	loop    model.Loop
	cl      *model.Client
	hist    model.History
	workers []int // per history entry: the worker that issued it (-1: liveness)
	base    sim.Resources
	reading []uint64 // per worker: block being read, or 0
	// unsettled, per worker: blocks whose last mutation by the worker
	// has an unknown outcome (lookups only).
	unsettled []map[uint64]bool
	stamps    map[uint64]uint64 // last stamp seen per block (lookups only)
	ops       [][]Op            // per worker
	probe     []Op
	live      []Op
	closing   []Op // at quiescence, around Close (rogue.go)
}

type harness struct {
	c     *Case
	cfg   *Config
	opt   Options
	w     *sim.World
	start time.Duration

	dnProc   *sim.Process
	dn       *model.Datanode
	dnBase   sim.Resources
	dnStarts int
	// parkedExcused: reads failed by the datanode's ParkedLost that
	// availability excused, of the datanode started last.
	parkedExcused int
	dnPre         sim.Resources // its process's before the datanode last started
	dnStartedAt   time.Duration // when the datanode last started
	dnAcceptFails int           // accepts its process had refused (EMFILE) then
	dnSockets     int           // sockets the datanode's process had made when it started
	dnErrLogs     int           // its error events (dnErrorLogs) when it started
	dnReadErrLogs int           // its dn-read-error events when it started
	dnSendfileErr int           // its disk's failed sendfile reads when it started
	dnSeen        dnObserved    // what the clients saw it do (dnstats.go)
	dnWritten     bool
	badTried      bool                  // the case's bad configuration was tried (badconfig.go)
	dnEpoch       uint64                // dnProc's epoch when the datanode was last checked
	worldEpoch    uint64                // the world's epoch when afterEach last checked
	epochSeen     bool                  // worldEpoch is set
	initState     map[uint64]blockState // lookups only

	clients     []*clientH
	admin       *clientH
	rogue       *clientH // sends ops with bad tokens (rogue.go)
	rogueToken  string   // the bad token kind of the rogue's op in progress
	workersLeft int
	liveLeft    int
	probesLeft  int
	liveDue     bool // the recovery allowance is over; start live once probes end
	healPending bool // heal once the datanode serves again
	faultsEnd   time.Duration
	faultFree   bool
	phase       phase
	vanished    bool // a vanish fault hit a connection
	rotted      bool // a bit-rot fault flipped a stored bit

	slowActive  map[int]int
	failure     *Failure
	stats       RunStats
	hostile     *hostileH
	liar        *liarH
	failurePeer string
	healedAt    time.Duration // when faults stopped (heal)
	// ignoreMemory skips the per-event memory check (c.Ignore).
	ignoreMemory bool
	memChecks    int // checkMemory calls, for Options.MemoryScan
	memScanAt    int // memChecks at the last scan of every connection
	memScanned   int // the connections it visited
}

// Run runs c in a fresh simulated world and checks every property.
func Run(c Case, opt Options) *Result {
	if opt.LinBudget == 0 {
		opt.LinBudget = DefaultLinBudget
	}
	if err := c.Validate(); err != nil {
		return &Result{Failure: &Failure{PropHarness, "invalid case: " + err.Error()}}
	}
	h := &harness{c: &c, cfg: &c.Config, opt: opt, faultFree: len(c.Schedule.Faults) == 0,
		initState: make(map[uint64]blockState), slowActive: make(map[int]int)}
	h.ignoreMemory = h.ignored(PropMemory)
	return h.run()
}

func (h *harness) run() *Result {
	scfg := worldConfig(h.c.Seed, maxEvents, h.opt.hashing)
	scfg.CheckShared = true
	scfg.TCP.InlineOvertakes = h.cfg.InlineOvertakes
	limit, bounded := runLimit, false
	if m := h.opt.MaxEvents; m > 0 && m < maxEvents {
		scfg.MaxEvents, bounded = m, true
	}
	if l := h.opt.Limit; l > 0 && l < runLimit {
		limit, bounded = l, true
	}
	w := sim.New(scfg)
	h.w = w
	defer useArena(w)()
	if h.opt.Trace != nil {
		w.TraceTo(h.opt.Trace)
	}
	w.AfterEach(h.afterEach)
	p, err := w.Spawn("datanode", model.ProcessConfig{FDLimit: h.cfg.FDLimit, Cores: 2}, h.dnMain)
	if err != nil {
		return &Result{Failure: &Failure{PropHarness, err.Error()}}
	}
	h.dnProc = p.(*sim.Process)
	h.dnProc.SetBufferFaults(0, h.cfg.Poison)
	h.dnProc.SetSocketBuffers(h.cfg.SndBuf, 0)
	runErr := h.runWorld(limit)

	res := &Result{Events: w.TraceEvents(), SimEvents: w.Events(), End: w.Now(), Stats: h.stats}
	switch {
	case h.failure != nil:
	case runErr != nil && errors.Is(runErr, sim.ErrLimit) && bounded:
		res.Cut = true
		res.TraceHash = w.TraceHashString()
		return res
	case runErr != nil && errors.Is(runErr, sim.ErrLimit):
		h.failAfter(PropLiveness, fmt.Sprintf("no quiescence in the %s phase: %v", phaseNames[h.phase], runErr))
	case runErr != nil:
		h.failAfter(PropHarness, runErr.Error())
	case h.phase != phaseDone:
		h.failAfter(PropLiveness, fmt.Sprintf("the world ran out of events in the %s phase", phaseNames[h.phase]))
	}
	res.History = h.history()
	res.Ops = len(res.History) - len(h.initState)
	if (h.failure == nil || h.opt.Verbose) && h.opt.hashing != hashOnly {
		var f *Failure
		res.Lin, res.LinInfo, f = CheckHistory(res.History, h.opt.LinBudget, h.opt.Verbose)
		if f != nil {
			h.failAfter(f.Property, f.Message)
		}
	}
	res.Failure = h.failure
	res.FailurePeer = h.failurePeer
	res.TraceHash = w.TraceHashString()
	res.Events = w.TraceEvents()
	return res
}

// arenas carry buffers from one run's world to the next: one arena per
// world at a time, and check runs worlds on several goroutines, so as many
// arenas as runs at once. (Not a sync.Pool: it drops its items at every
// other collection, and a new arena allocates everything again.)
var arenas struct {
	sync.Mutex
	free []*sim.Arena
}

// useArena gives w an arena and returns what hands it back, once the run's
// results are computed (nothing of them may point into its buffers).
func useArena(w *sim.World) (release func()) {
	a := takeArena()
	w.UseArena(a)
	return func() {
		w.ReleaseArena()
		putArena(a)
	}
}

// dropArenas lets go of the idle arenas (the next runs make new ones) and
// returns the bytes each held.
func dropArenas() []int {
	arenas.Lock()
	defer arenas.Unlock()
	var held []int
	for _, a := range arenas.free {
		held = append(held, a.Bytes())
	}
	arenas.free = nil
	return held
}

func takeArena() *sim.Arena {
	arenas.Lock()
	defer arenas.Unlock()
	if n := len(arenas.free); n > 0 {
		a := arenas.free[n-1]
		arenas.free = arenas.free[:n-1]
		return a
	}
	return new(sim.Arena)
}

func putArena(a *sim.Arena) {
	arenas.Lock()
	arenas.free = append(arenas.free, a)
	arenas.Unlock()
}

// runWorld runs the world, turning a panic in model (or sim) code into a
// harness failure: the run ends there, with its trace so far, and check
// goes on with the next seed instead of crashing.
func (h *harness) runWorld(limit time.Duration) (err error) {
	defer func() {
		if r := recover(); r != nil {
			h.fail(PropHarness, "panic at %v: %v", h.w.Now(), r)
			err = nil
		}
	}()
	return h.w.Run(limit)
}

// Properties lists every property a datanode case checks, by name: what
// its failures name, what its ignore list may hold, and what check lists.
var Properties = []string{PropFDBounds, PropPoolBound, PropNoCloseInUse, PropLinearizable, PropStream, PropAvailability,
	PropLiveness, PropLeakFree, PropDeterminism, PropHarness, PropMemory, PropTimeout, PropHostileAvail, PropToken, PropClosed,
	PropConfig, PropCache, PropLiar, PropRefusal, PropStats}

// KnownProperty reports whether name is a property.
func KnownProperty(name string) bool {
	for _, p := range Properties {
		if p == name {
			return true
		}
	}
	return false
}

func (h *harness) ignored(prop string) bool {
	for _, p := range h.c.Ignore {
		if p == prop {
			return true
		}
	}
	return false
}

// failAfter is fail once the world has stopped: the verdicts taken after
// the run (its end, linearizability) are ignored as the others are, and
// note nothing in a trace that is already whole.
func (h *harness) failAfter(prop, msg string) {
	if h.failure == nil && !h.ignored(prop) {
		h.failure = &Failure{prop, msg}
	}
}

func (h *harness) fail(prop, format string, a ...any) {
	if h.failure != nil || h.ignored(prop) {
		return
	}
	h.failure = &Failure{prop, fmt.Sprintf(format, a...)}
	h.w.Note("violation " + prop + ": " + h.failure.Message)
	h.w.Stop()
}

// --- the datanode ---

func (h *harness) dnConfig() model.DatanodeConfig { return h.cfg.Datanode(dnAddr) }

// Datanode is the datanode configuration a case draws, listening on addr.
func (c *Config) Datanode(addr string) model.DatanodeConfig {
	mode := model.Reactor
	if c.Mode == "threaded" {
		mode = model.Threaded
	}
	return model.DatanodeConfig{
		Addr: addr, Mode: mode, Selectors: c.Selectors, Workers: c.Workers,
		PoolMax: c.PoolMax, PoolMin: c.PoolMin, PoolIdle: c.PoolIdle, Keepalive: c.Keepalive, ReadTimeout: c.ReadTimeout,
		NoDelay: c.DNNoDelay, PacketSize: c.DNPacket, Dir: dnDir, InlineIO: c.InlineIO, NoTransferTo: c.NoTransferTo,
		MaxWrite: c.MaxWrite, MaxBuffered: c.MaxBuffered, RequestTimeout: c.RequestTimeout, SendTimeout: c.SendTimeout,
		HandleWait: c.HandleWait, StallTimeout: c.StallTimeout, MaxConns: c.MaxConns,
		Bugs: model.DatanodeBugs{
			KeepaliveForever: c.KeepaliveForever, PoolKeyIgnoresStamp: c.PoolKeyIgnoresStamp, PoolClosesInUse: c.PoolClosesInUse,
			EmptyReadPanics: c.EmptyReadPanics, ReturnBufferEarly: c.ReturnBufferEarly,
			WriteUnverified: c.WriteUnverified, PacketsUnchecked: c.PacketsUnchecked, SendfileOffsetStuck: c.SendfileOffsetStuck,
			ClosedConnsReachable: c.ClosedConnsReachable, WritePrealloc: c.WritePrealloc,
			NoSendTimeout: c.NoSendTimeout, PoolWaitForever: c.PoolWaitForever, WaiterDeaf: c.WaiterDeaf, WaiterDeafWhenFull: c.WaiterDeafWhenFull, SpinOnUnread: c.SpinOnUnread, FullWaiterSpins: c.FullWaiterSpins, HoldersWaitForRoom: c.HoldersWaitForRoom, WriteWaiterDeaf: c.WriteWaiterDeaf,
			HoldWhileStalled: c.HoldWhileStalled, PoolSharersSleep: c.PoolSharersSleep, PoolRetakeAppendedFails: c.PoolRetakeAppendedFails, PoolRetakeWakeLost: c.PoolRetakeWakeLost, PoolRetireIdle: c.PoolRetireIdle, PressDelayAgain: c.PressDelayAgain, ParkedWakeLost: c.ParkedWakeLost, ParkedWaiterDeaf: c.ParkedWaiterDeaf, ClosedGrowKept: c.ClosedGrowKept,
			NoConnCap: c.NoConnCap, BusyWhenFull: c.BusyWhenFull, KeepsCutWrite: c.KeepsCutWrite, WriteAnyByte: c.WriteAnyByte, Slowloris: c.Slowloris, RequestInOneRead: c.RequestInOneRead,
			ReleaseOnThread: c.ReleaseOnThread, AcceptSpin: c.AcceptSpin, EvictFresh: c.EvictFresh,
			FirstOpReused: c.FirstOpReused, TCPDrip: c.TCPDrip,
		},
	}
}

// dnMain runs at the datanode's start and at every restart.
func (h *harness) dnMain(p model.Process) {
	loop := p.MainLoop()
	if !h.dnWritten {
		h.dnWritten = true
		store := model.NewBlockStore(p.Disk(), dnDir)
		store.KeepStampRecord(model.StampRecord)
		for id := uint64(1); id <= h.cfg.MaxBlock; id++ {
			h.initState[id] = blockState{set: true}
		}
		for _, b := range h.cfg.Blocks {
			data := blockData(b.Key, b.Size)
			stamp, err := store.WriteShared(b.ID, data)
			if err != nil {
				h.fail(PropHarness, "write block %d: %v", b.ID, err)
				return
			}
			h.initState[b.ID] = blockState{set: true, exists: true, known: true, stamp: stamp, floor: stamp, data: text(frozen(data))}
		}
	}
	if !h.badTried {
		h.badTried = true
		h.tryBadConfig(p, loop)
	}
	h.startDatanode(p, loop)
}

func (h *harness) startDatanode(p model.Process, loop model.Loop) {
	if h.dnProc.Crashed() {
		return
	}
	pre := h.dnProc.Resources()
	dn, err := model.StartDatanode(p, loop, h.dnConfig())
	if h.dnProc.Crashed() {
		// A crash point struck during its recovery.
		return
	}
	if err != nil {
		if h.dnStarts == 0 {
			h.fail(PropHarness, "start datanode: %v", err)
			return
		}
		// A supervisor restarts it a moment later (the disk or the fd
		// table may still be failing).
		p.Log("restart-failed", "err", err.Error())
		loop.AfterFunc(20*time.Millisecond, func() { h.startDatanode(p, loop) })
		return
	}
	h.dn = dn
	h.dnStarts++
	h.parkedExcused = 0
	h.dnPre = pre
	h.dnStartedAt, h.dnAcceptFails = h.w.Now(), h.dnProc.AcceptFailures()
	h.dnBase = h.dnProc.Resources()
	h.dnSockets = h.dnProc.FDsMade(model.FDSocket)
	h.dnErrLogs, h.dnReadErrLogs = dnErrorLogs(h.dnProc), h.dnProc.Logged("dn-read-error")
	h.dnSendfileErr = h.dnProc.Disk().(*sim.Disk).SendfileErrs
	if h.healPending {
		h.healPending = false
		h.w.At(h.w.Now(), h.tryHeal)
	}
	if h.dnStarts == 1 {
		h.start = h.w.Now()
		h.startClients()
		h.scheduleFaults()
		h.startHostile()
		h.startLiar()
	}
}

// --- clients ---

func (h *harness) clientConfig(name string) model.ClientConfig { return h.cfg.Client(name, dnAddr) }

// Client is the client configuration a case draws, for a datanode at addr.
func (c *Config) Client(name, addr string) model.ClientConfig {
	if pad := c.ClientNameLen - len(name); pad > 0 {
		name += strings.Repeat(".", pad)
	}
	return model.ClientConfig{
		Name: name, Datanode: addr, NoDelay: c.NoDelay, CacheCapacity: c.CacheCapacity,
		CacheExpiry: c.CacheExpiry, Timeout: c.Timeout, PacketSize: c.Packet,
		Bugs: model.ClientBugs{CloseLeaksCache: c.CloseLeaksCache, ReturnUnclean: c.ReturnUnclean, VerifyFirstChunk: c.VerifyFirstChunk,
			AcceptShortStream: c.AcceptShortStream},
	}
}

func (h *harness) startClients() {
	cfg := h.cfg
	for i := 0; i < cfg.Clients; i++ {
		ch := &clientH{id: i, name: fmt.Sprintf("client-%d", i), stamps: make(map[uint64]uint64),
			ops: make([][]Op, cfg.ClientWorkers), reading: make([]uint64, cfg.ClientWorkers)}
		for range cfg.ClientWorkers {
			ch.unsettled = append(ch.unsettled, make(map[uint64]bool))
		}
		h.clients = append(h.clients, ch)
	}
	for _, op := range h.c.Schedule.Ops {
		ch := h.clients[op.Client]
		ch.ops[op.Worker] = append(ch.ops[op.Worker], op)
	}
	for _, op := range h.c.Schedule.Probe {
		h.clients[op.Client].probe = append(h.clients[op.Client].probe, op)
	}
	for _, op := range h.c.Schedule.Live {
		h.clients[op.Client].live = append(h.clients[op.Client].live, op)
	}
	for _, op := range h.c.Schedule.Close {
		h.clients[op.Client].closing = append(h.clients[op.Client].closing, op)
	}
	for _, ch := range h.clients {
		for _, ops := range ch.ops {
			if len(ops) > 0 {
				h.workersLeft++
			}
		}
		h.spawnClient(ch, func() {
			for wk, ops := range ch.ops {
				if len(ops) > 0 {
					h.runOps(ch, wk, ops, 0, streamWork)
				}
			}
		})
	}
	for _, f := range h.c.Schedule.Faults {
		if f.Kind == FaultMutate {
			h.admin = &clientH{id: cfg.Clients, name: "admin", stamps: make(map[uint64]uint64), reading: make([]uint64, 1),
				unsettled: []map[uint64]bool{make(map[uint64]bool)}}
			h.spawnClient(h.admin, func() {})
			break
		}
	}
	h.startRogue()
	if h.workersLeft == 0 {
		h.w.At(h.w.Now(), h.workloadDone)
	}
}

func (h *harness) spawnClient(ch *clientH, then func()) {
	p, err := h.w.Spawn(ch.name, model.ProcessConfig{}, func(p model.Process) {
		cfg := h.clientConfig(ch.name)
		if ch == h.rogue {
			cfg.MintToken = h.rogueMint
		}
		cl, err := model.NewClient(p, p.MainLoop(), ch.id, cfg)
		if err != nil {
			h.fail(PropHarness, "client: %v", err)
			return
		}
		cl.History = &ch.hist
		ch.cl, ch.loop = cl, p.MainLoop()
		ch.base = ch.p.Resources()
		ch.p.SetBufferFaults(0, h.cfg.Poison)
		ch.p.SetSocketBuffers(0, h.cfg.RcvBuf)
		if h.cfg.FragPiece > 0 {
			ch.p.Fragment(h.cfg.FragPiece, fragSpan, h.cfg.FragGap)
		}
		then()
	})
	if err != nil {
		h.fail(PropHarness, "spawn %s: %v", ch.name, err)
		return
	}
	ch.p = p.(*sim.Process)
}

// runOps runs ops[i:] of one worker (or a client's probe or liveness
// ops), one after the other.
func (h *harness) runOps(ch *clientH, worker int, ops []Op, i int, s stream) {
	if i == len(ops) {
		switch s {
		case streamWork:
			h.workerDone()
		case streamProbe:
			h.probesDone()
		case streamLive:
			h.liveOpsDone()
		}
		return
	}
	op := ops[i]
	ch.loop.AfterFunc(op.Gap, func() {
		if h.failure != nil {
			return
		}
		h.issue(ch, worker, op, s == streamLive, func() { h.runOps(ch, worker, ops, i+1, s) })
	})
}

func (h *harness) issue(ch *clientH, worker int, op Op, live bool, next func()) {
	cl := ch.cl
	var unsettled map[uint64]bool
	if worker >= 0 && worker < len(ch.unsettled) {
		unsettled = ch.unsettled[worker]
	}
	if op.Token != "" {
		h.rogueToken = op.Token
	}
	if op.Kind != OpRead && unsettled[op.Block] {
		// Like a careful application, a worker that lost track of a
		// block (a mutation with an unknown outcome) reads it before
		// changing it again. This bounds the ops of unknown outcome a
		// block's history holds, which the linearizability checker
		// pays for exponentially.
		op = Op{Client: op.Client, Worker: op.Worker, Gap: op.Gap, Kind: OpRead, Block: op.Block, Token: op.Token}
	}
	idx := len(ch.hist.Ops)
	start := ch.loop.Now()
	dead0 := cl.Stats().DeadPeers
	ch.p.Log("op", "i", idx, "w", worker, "op", op.Kind, "b", op.Block)
	done := func(r model.Result) {
		if op.Kind == OpRead && worker >= 0 && worker < len(ch.reading) {
			ch.reading[worker] = 0
		}
		h.opDone(ch, idx, op, r, start, live, dead0)
		if unsettled != nil {
			definite := r.Err == nil || (errors.Is(r.Err, model.ErrRejected) &&
				(r.Status == model.StatusErrorExists || r.Status == model.StatusErrorInvalid || r.Status == model.StatusErrorAccessToken))
			switch {
			case op.Kind == OpRead && definite:
				delete(unsettled, op.Block)
			case op.Kind != OpRead && !definite && (r.Unknown || errors.Is(r.Err, model.ErrRejected)):
				unsettled[op.Block] = true
			}
		}
		if next != nil {
			next()
		}
	}
	wk := worker
	if live {
		wk = -1
	}
	var stamp uint64
	if op.Kind == OpRead {
		if op.Stamped {
			stamp = ch.stamps[op.Block]
		}
		if worker >= 0 && worker < len(ch.reading) {
			ch.reading[worker] = op.Block
		}
	}
	cached, st0 := cl.Cached(), cl.Stats()
	startOp(cl, op, stamp, done)
	h.checkCacheTake(ch, op, cached, st0)
	for len(ch.workers) < len(ch.hist.Ops) {
		ch.workers = append(ch.workers, wk)
	}
}

// liveBound is how long op may take once faults are over: LiveBound,
// plus, for a read from a datanode whose send buffer was drawn small
// (small_buffers, not the larger one of runs with non-readers), one TCP_DELACK_MAX per buffer's worth of the reply and
// per packet. With a buffer smaller than two segments only one segment is
// in flight, and its receiver holds the ACK for a delayed-ACK timeout, as
// Linux does when less than two full frames have arrived; so a 67 KB read
// through a 2 KiB buffer takes 27 delayed ACKs (about 1.2 s), which is TCP
// doing what it should, not the datanode starving a reader.
func (h *harness) liveBound(op Op, r model.Result) time.Duration {
	if h.cfg.SndBuf == 0 || h.cfg.SndBuf >= nonReaderSndBuf || op.Kind != "read" {
		return LiveBound
	}
	n := op.Len
	if n == 0 || (r.Length > 0 && n > r.Length) {
		n = r.Length
	}
	n += model.BytesPerChecksum // reads start at a chunk boundary
	packets := n/int64(h.cfg.DNPacket) + 1
	wire := n + (n/model.BytesPerChecksum+packets)*model.ChecksumSize + packets*model.PacketHeaderLen
	rounds := wire/int64(h.cfg.SndBuf) + packets + 1
	return LiveBound + time.Duration(rounds)*sim.DefaultConfig(0).TCP.DelackMax
}

func (h *harness) opDone(ch *clientH, idx int, op Op, r model.Result, start time.Duration, live bool, dead0 int) {
	now := ch.loop.Now()
	status := "ok"
	if r.Err != nil {
		status = r.Err.Error()
	}
	ch.p.Log("ret", "i", idx, "st", status)
	st := ch.cl.Stats()
	h.dnSeen.add(op, r)
	h.sampleWaits()
	switch {
	case r.Err == nil:
		if op.Kind != OpDelete {
			ch.stamps[op.Block] = r.Stamp
		}
	case errors.Is(r.Err, model.ErrRejected):
		h.stats.Rejected++
	default:
		h.stats.Errors++
		if r.Unknown {
			h.stats.Unknown++
		}
		if errors.Is(r.Err, model.ErrTimedOut) {
			h.stats.Timeouts++
		}
	}
	if errors.Is(r.Err, model.ErrBadStream) {
		h.fail(PropStream, "client %d: %s of block %d: %v", ch.id, op.Kind, op.Block, r.Err)
		return
	}
	if op.AfterClose {
		h.checkClosed(ch, op, r)
		return
	}
	if h.checkToken(ch, op, r) || h.failure != nil {
		return
	}
	explained := h.checkChecksumErr(ch, op, r.Err)
	if h.failure != nil || explained || (!h.faultFree && !live) {
		return
	}
	why := "no fault was injected in this run"
	if live {
		why = "faults had stopped and the system had time to recover"
	}
	definite := r.Err == nil || (errors.Is(r.Err, model.ErrRejected) && (r.Status == model.StatusErrorExists || r.Status == model.StatusErrorInvalid))
	prop := PropAvailability
	if len(h.cfg.Hostile) > 0 {
		prop = PropHostileAvail
	}
	if h.failure != nil {
		return
	}
	if prop == PropHostileAvail {
		defer func() { h.failPeer(h.hostileLoad()) }()
	}
	bound := h.liveBound(op, r)
	switch {
	case !definite && h.parkedLoss(op, r, start, now):
		// The datanode bounds its fds by letting stalled reads give
		// their handles back; one whose block was replaced or deleted
		// meanwhile has nothing left to finish from.
	case !definite:
		h.fail(prop, "client %d: %s of block %d failed though %s: %v%s", ch.id, op.Kind, op.Block, why, r.Err, h.hostileContext())
	case now-start > bound:
		h.fail(prop, "client %d: %s of block %d took %v > %v though %s%s", ch.id, op.Kind, op.Block, now-start, bound, why, h.hostileContext())
	case st.DeadPeers > dead0 && len(h.cfg.Hostile) == 0:
		// (Under hostile peers a full datanode may close idle
		// connections, cached ones included; the op must still succeed.)
		h.fail(prop, "client %d: %s of block %d reused a cached peer the datanode had already closed, though %s", ch.id, op.Kind, op.Block, why)
	}
}

// parkedLoss reports whether a read's short stream is the loss the
// datanode counts in ParkedLost: a read that parked its handle, had it
// closed and could not take its replica back because the block was
// replaced or deleted. Only that is excused: the datanode must have
// counted a loss not yet excused, and a replace or delete of the read's
// block must have overlapped the read (a change before it started, or an
// append, never loses it).
func (h *harness) parkedLoss(op Op, r model.Result, start, now time.Duration) bool {
	if op.Kind != OpRead || h.dn == nil || !errors.Is(r.Err, io.ErrUnexpectedEOF) || errors.Is(r.Err, model.ErrRejected) ||
		h.dn.ParkedLost() <= h.parkedExcused {
		return false
	}
	for _, c := range h.clients {
		for _, o := range c.hist.Ops {
			if o.Block == op.Block && (o.Kind == model.OpReplaceBlock || o.Kind == model.OpDeleteBlock) &&
				o.Call < now && (!o.Done || o.Return > start) {
				h.parkedExcused++
				return true
			}
		}
	}
	return false
}

func (h *harness) workerDone() {
	h.workersLeft--
	if h.workersLeft == 0 {
		h.w.At(h.w.Now(), h.workloadDone)
	}
}

// workloadDone: every worker finished; once the faults' windows are over
// too, the system heals and, after a recovery allowance, the liveness
// phase begins.
func (h *harness) workloadDone() {
	h.w.At(max(h.w.Now(), h.faultsEnd), h.tryHeal)
}

// tryHeal heals once faults have stopped and the datanode serves again,
// done with what it started under them.
func (h *harness) tryHeal() {
	switch busy := h.dnProc.BusyUntil(); {
	case h.dn == nil:
		// Down or failing to restart: heal once it serves again.
		h.healPending = true
	case h.w.Now() < busy:
		// A callback or a work item that met a slow disk (a restart's
		// Load, a packet) is still running.
		h.w.At(busy, h.tryHeal)
	default:
		h.heal()
	}
}

// heal: faults have stopped and the datanode serves.
func (h *harness) heal() {
	{
		h.phase = phaseRecover
		h.w.Note("heal")
		h.healedAt = h.w.Now()
		c := h.cfg
		// Probing reads use at once what the faults left behind.
		for _, ch := range h.clients {
			if len(ch.probe) > 0 {
				h.probesLeft++
				ch.loop.Post(func() { h.runOps(ch, 0, ch.probe, 0, streamProbe) })
			}
		}
		// Ops in flight end within a timeout; peers cached before now
		// expire; idle datanode connections time out.
		recover := c.Timeout + max(c.Keepalive, c.CacheExpiry) + 100*time.Millisecond
		h.w.At(h.w.Now()+recover, func() {
			h.liveDue = true
			if h.probesLeft == 0 {
				h.startLive()
			}
		})
	}
}

func (h *harness) probesDone() {
	h.probesLeft--
	if h.probesLeft == 0 && h.liveDue {
		h.w.At(h.w.Now(), h.startLive)
	}
}

func (h *harness) startLive() {
	h.phase = phaseLive
	h.w.Note("live")
	for _, ch := range h.clients {
		if len(ch.live) > 0 {
			h.liveLeft++
		}
	}
	if h.liveLeft == 0 {
		h.quiesce()
		return
	}
	for _, ch := range h.clients {
		if len(ch.live) > 0 {
			ch.loop.Post(func() { h.runOps(ch, 0, ch.live, 0, streamLive) })
		}
	}
}

func (h *harness) liveOpsDone() {
	h.liveLeft--
	if h.liveLeft == 0 {
		h.w.At(h.w.Now(), h.quiesce)
	}
}

// quiesce closes the clients and, once every timeout has passed, checks
// that everything is back to its baseline.
func (h *harness) quiesce() {
	h.phase = phaseQuiesce
	h.w.Note("quiesce")
	for _, ch := range h.allClients() {
		switch {
		case ch.cl == nil:
		case len(ch.closing) > 0:
			ch.loop.Post(func() { h.closeOps(ch) })
		default:
			ch.loop.Post(ch.cl.Close)
		}
	}
	c := h.cfg
	wait := max(c.Keepalive, c.CacheExpiry, 2*c.PoolIdle, c.Timeout, c.ReadTimeout) + 500*time.Millisecond
	if len(c.Hostile) > 0 {
		// Every connection of a hostile peer, stuck in whatever state,
		// must have timed out by then.
		h.stopHostile()
		wait = max(wait, c.stuckBound()+time.Second)
	}
	at := h.w.Now() + wait
	if h.vanished {
		// A connection whose peer vanished holds its fd until TCP gives
		// up retransmitting what it sent since (RetryLimit), unless the
		// data path closes it first.
		at = max(at, h.w.Now()+h.w.Config().TCP.RetryLimit+time.Second)
	}
	h.w.At(at, h.checkLeaks)
}

func (h *harness) allClients() []*clientH {
	all := h.clients
	for _, ch := range []*clientH{h.admin, h.rogue} {
		if ch != nil {
			all = append(all[:len(all):len(all)], ch)
		}
	}
	return all
}

// --- invariants ---

// afterEach checks the invariants that must hold after every event.
func (h *harness) afterEach() {
	if h.failure != nil {
		return
	}
	// A check that passed passes again while the process's epoch (its
	// callbacks, fds, crashes, harness actions) has not moved. After most
	// events no process's has, and only the hostile scan, which goes by
	// the clock, has anything to look at.
	e := h.w.Epoch()
	if h.epochSeen && e == h.worldEpoch {
		h.scanHostile(false)
		return
	}
	h.worldEpoch, h.epochSeen = e, true
	dnChanged := h.dnProc != nil && h.dnProc.Epoch() != h.dnEpoch
	if dnChanged {
		h.dnEpoch = h.dnProc.Epoch()
	}
	if p := h.dnProc; dnChanged && !p.Crashed() {
		fds := p.FDs()
		if fds.Open > fds.Limit {
			h.fail(PropFDBounds, "datanode holds %d fds over its limit %d", fds.Open, fds.Limit)
			return
		}
		if dn := h.dn; dn != nil {
			blockFDs := fds.ByKind[model.FDBlockFile] + fds.ByKind[model.FDMetaFile]
			if sockets := fds.ByKind[model.FDSocket]; sockets > dn.Conns() {
				h.fail(PropFDBounds, "datanode holds %d sockets for %d connections", sockets, dn.Conns())
				return
			}
			if pool := dn.Pool(); pool != nil {
				switch {
				case pool.ClosedInUse > 0:
					h.fail(PropNoCloseInUse, "the handle pool closed %d handle(s) a read was using", pool.ClosedInUse)
				case pool.Open() > h.cfg.PoolMax:
					h.fail(PropPoolBound, "the handle pool holds %d block fds, bound %d", pool.Open(), h.cfg.PoolMax)
				case blockFDs != pool.Open():
					h.fail(PropFDBounds, "datanode holds %d block and meta fds, the pool accounts for %d", blockFDs, pool.Open())
				case fds.ByKind[model.FDEpoll] != 1+h.cfg.Selectors:
					h.fail(PropFDBounds, "reactor datanode holds %d epoll fds, want %d (main + selectors, none per connection)", fds.ByKind[model.FDEpoll], 1+h.cfg.Selectors)
				}
			} else if h.cfg.Mode == "reactor" {
				h.fail(PropPoolBound, "reactor datanode has no handle pool: its block fds are unbounded")
			} else if blockFDs > 2*dn.Conns() {
				h.fail(PropFDBounds, "threaded datanode holds %d block and meta fds for %d connections", blockFDs, dn.Conns())
			}
		}
	}
	if dnChanged && !h.ignoreMemory {
		h.checkMemory()
	}
	h.scanHostile(false)
	for _, ch := range h.clients {
		h.checkClientFDs(ch)
	}
	if h.admin != nil {
		h.checkClientFDs(h.admin)
	}
	if h.rogue != nil {
		h.checkClientFDs(h.rogue)
	}
}

func (h *harness) checkClientFDs(ch *clientH) {
	if ch.cl == nil || h.failure != nil || ch.p.Epoch() == ch.epoch {
		return
	}
	ch.epoch = ch.p.Epoch()
	fds := ch.p.FDs()
	switch s := fds.ByKind[model.FDSocket]; {
	case fds.Open > fds.Limit:
		h.fail(PropFDBounds, "%s holds %d fds over its limit %d", ch.name, fds.Open, fds.Limit)
	case s > ch.cl.InFlight()+ch.cl.Cached():
		h.fail(PropFDBounds, "%s holds %d sockets but has %d ops in flight and %d cached peers", ch.name, s, ch.cl.InFlight(), ch.cl.Cached())
	case ch.cl.Cached() > h.cfg.CacheCapacity:
		h.fail(PropCache, "%s caches %d peers, capacity %d", ch.name, ch.cl.Cached(), h.cfg.CacheCapacity)
	}
}

// checkLeaks runs at quiescence: every process must be back to its
// baseline.
func (h *harness) checkLeaks() {
	if lh := h.liar; lh != nil && !lh.done && h.failure == nil {
		// Its reads end within a timeout each; then look.
		lh.then = h.checkLeaks
		return
	}
	h.leaks()
	if h.failure != nil {
		h.w.Stop()
		return
	}
	h.checkStop(h.done)
}

func (h *harness) done() {
	if h.failure == nil {
		h.phase = phaseDone
		h.w.Note("done")
	}
	h.w.Stop()
}

// grownSpares is how many grown input buffers the datanode's selectors
// keep as spares (the first size's are kept for good, as packet buffers).
func grownSpares(dn *model.Datanode) int {
	_, grown := dn.SpareInputBuffers()
	return grown
}

func (h *harness) leaks() {
	h.scanHostile(true)
	if h.failure != nil {
		return
	}
	dn := h.dn
	if dn == nil {
		h.fail(PropLiveness, "the datanode is not running at quiescence")
		return
	}
	if len(h.cfg.Hostile) > 0 {
		// Every write a hostile peer makes is malformed or never ends.
		for _, id := range dn.Store().Blocks() {
			if id >= hostileBlocks {
				h.fail(PropRefusal, "the datanode stored block %d, which only a hostile peer wrote: a write it should have refused, or one never finished", id)
				return
			}
		}
	}
	res := h.dnProc.Resources()
	base := h.dnBase
	handles := 0
	if pool := dn.Pool(); pool != nil {
		handles = pool.Handles()
		switch {
		case pool.InUse() > 0:
			h.fail(PropLeakFree, "datanode: %d handles still in use", pool.InUse())
			return
		case pool.Waiting() > 0:
			h.fail(PropLeakFree, "datanode: %d reads still wait for a handle", pool.Waiting())
			return
		case handles > h.cfg.PoolMin:
			h.fail(PropLeakFree, "datanode: %d idle handles, more than PoolMin %d after the idle timeout", handles, h.cfg.PoolMin)
			return
		case pool.Blocks() > handles:
			h.fail(PropLeakFree, "datanode: the handle pool tracks %d blocks with %d handles open", pool.Blocks(), handles)
			return
		case h.faultFree && len(h.cfg.Hostile) > 0 && dn.MaxHandleWait() > h.cfg.handleWaitBound():
			h.fail(PropHostileAvail, "datanode: a read waited %v for a pool handle, more than %v (the press delay, min(HandleWait/2, StallTimeout), then a stall timeout)",
				dn.MaxHandleWait(), h.cfg.handleWaitBound())
			return
		}
	}
	switch {
	case dn.Conns() > 0:
		h.fail(PropLeakFree, "datanode: %d connections still open", dn.Conns())
	case dn.ReadsWaiting() > 0:
		// (With every connection closed: a withdrawal from the pool's
		// queue still pending, or a count that never goes to zero.)
		h.fail(PropLeakFree, "datanode: %d reads still counted as waiting for a pool handle", dn.ReadsWaiting())
	case dn.BuffersOut() > 0:
		h.fail(PropLeakFree, "datanode: %d packet buffers still lent", dn.BuffersOut())
	case dn.SelectorsLive() > 0:
		h.fail(PropLeakFree, "datanode: its selectors still count %d connections as theirs", dn.SelectorsLive())
	case grownSpares(dn) > 0:
		// With no connection left nothing will grow into them: a
		// selector drops them at once (atRest), not a trim later.
		h.fail(PropLeakFree, "datanode: its selectors keep %d grown input buffers with no connection left", grownSpares(dn))
	case h.reachableConns() > 0:
		h.fail(PropLeakFree, "datanode: %d closed connections still reachable (through a freed slot of its list)", h.reachableConns())
	case dn.Holders() > 0:
		h.fail(PropLeakFree, "datanode: %d connections still listed as holding a pool handle", dn.Holders())
	case res.ByKind[model.FDFile] != 0:
		h.fail(PropLeakFree, "datanode: %d plain files open (%v)", res.ByKind[model.FDFile], kinds(res.ByKind))
	case res.FDs != base.FDs-base.ByKind[model.FDFile]+2*handles:
		// (The baseline may have been taken under fd pressure: its
		// fillers are plain files, released since.)
		h.fail(PropLeakFree, "datanode: %d fds open, baseline %d + %d for idle handles (%v)", res.FDs, base.FDs-base.ByKind[model.FDFile], 2*handles, kinds(res.ByKind))
	case res.Threads != base.Threads:
		h.fail(PropLeakFree, "datanode: %d threads, baseline %d", res.Threads, base.Threads)
	case res.Timers != 0:
		h.fail(PropLeakFree, "datanode: %d timers pending", res.Timers)
	case res.Work != 0:
		h.fail(PropLeakFree, "datanode: %d work items pending", res.Work)
	case dn.ReservedWriteBytes() != 0:
		h.fail(PropLeakFree, "datanode: %d bytes of write buffer still reserved against MaxBuffered with no write in progress", dn.ReservedWriteBytes())
	default:
		if w, q := dn.WriteRoomLists(); w+q != 0 {
			h.fail(PropLeakFree, "datanode: %d connections still listed as holding write room and %d as waiting for some, with no write in progress", w, q)
		}
	}
	if h.failure != nil {
		return
	}
	h.checkStats()
	if h.failure != nil {
		return
	}
	for _, ch := range h.allClients() {
		if ch.cl == nil {
			continue
		}
		res, st := ch.p.Resources(), ch.cl.Stats()
		made, deadLogged := ch.p.FDsMade(model.FDSocket), ch.p.Logged("client-dead-peer")
		switch {
		case ch.cl.InFlight() > 0:
			h.fail(PropLeakFree, "%s: %d ops still in flight", ch.name, ch.cl.InFlight())
		case ch.cl.Cached() > 0:
			h.fail(PropLeakFree, "%s: %d peers still cached after close", ch.name, ch.cl.Cached())
		case res.FDs != ch.base.FDs:
			h.fail(PropLeakFree, "%s: %d fds open after close, baseline %d (%v)", ch.name, res.FDs, ch.base.FDs, kinds(res.ByKind))
		case res.Timers != ch.base.Timers:
			h.fail(PropLeakFree, "%s: %d timers pending, baseline %d", ch.name, res.Timers, ch.base.Timers)
		case res.Threads != ch.base.Threads:
			h.fail(PropLeakFree, "%s: %d threads, baseline %d", ch.name, res.Threads, ch.base.Threads)
		case st.Dials != made:
			// Every socket of a client's process is a connection its
			// client dialed: an op reuses a cached peer or counts a dial.
			// (FDsMade counts from the process's last start, the client's
			// figures from its making: client processes never restart.)
			h.fail(PropCache, "%s counts %d connections dialed; its process made %d sockets", ch.name, st.Dials, made)
		case st.DeadPeers != deadLogged || st.Retries != st.DeadPeers:
			// A cached peer found dead is counted, logged and counted as
			// a retry. (The counters only: whether the retry then went
			// out on a fresh connection is availability's to see.)
			h.fail(PropCache, "%s counts %d dead cached peers and %d retries; it logged %d dead peers", ch.name, st.DeadPeers, st.Retries, deadLogged)
		}
		if h.failure != nil {
			return
		}
		h.stats.DeadPeers += st.DeadPeers
		h.stats.Retries += st.Retries
	}
}

func kinds(by [model.NumFDKinds]int) string {
	s := ""
	for k, n := range by {
		if n > 0 {
			if s != "" {
				s += " "
			}
			s += fmt.Sprintf("%s=%d", model.FDKind(k), n)
		}
	}
	return s
}

// startOp issues op on cl; reads name stamp (0: any).
func startOp(cl *model.Client, op Op, stamp uint64, done func(model.Result)) {
	switch op.Kind {
	case OpRead:
		if op.Stream {
			readStream(cl, op, stamp, done)
			return
		}
		cl.Read(op.Block, stamp, op.Off, op.Len, done)
	case OpWrite:
		cl.Write(op.Block, blockData(op.Key, op.Size), done)
	case OpAppend:
		cl.Append(op.Block, blockData(op.Key, op.Size), done)
	case OpReplace:
		cl.Replace(op.Block, blockData(op.Key, op.Size), done)
	case OpDelete:
		cl.Delete(op.Block, done)
	}
}

// readStream reads with Client.ReadStream (the read scenario's way, which
// hands each verified packet to a sink) and assembles what the sink saw
// into the result and the client's history entry, so the history checks
// it like any read. A sink call out of order is a broken stream.
func readStream(cl *model.Client, op Op, stamp uint64, done func(model.Result)) {
	rec := -1
	if cl.History != nil {
		rec = len(cl.History.Ops)
	}
	var got []byte
	next := op.Off
	var bad error
	cl.ReadStream(op.Block, stamp, op.Off, op.Len, func(off int64, p []byte) {
		if off != next && bad == nil {
			bad = fmt.Errorf("%w: the sink got %d bytes at %d, want them at %d", model.ErrBadStream, len(p), off, next)
		}
		next = off + int64(len(p))
		got = append(got, p...)
	}, func(r model.Result) {
		if r.Err == nil {
			r.Data = got
			if bad != nil {
				r.Err = bad
			}
			if h := cl.History; h != nil && rec >= 0 && rec < len(h.Ops) {
				h.Ops[rec].Result = r
			}
		}
		done(r)
	})
}
