// Package sim is the deterministic simulated world: one goroutine, virtual
// time, an event queue ordered by (time, sequence), seeded randomness per
// concern, TCP that follows Linux's rules (Nagle with Minshall's variant,
// delayed and quick ACKs, pingpong), Unix sockets with fd passing, a disk with
// a page cache and faults, per-process fd tables and a CPU model.
//
// Same seed and same configuration give a byte-identical trace: every event
// is folded into a running hash, and optionally written out as JSON lines.
package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"xceiver/model"
)

// Config is everything that shapes a simulated run besides the model code.
type Config struct {
	Seed    uint64
	FDLimit int // default per-process RLIMIT_NOFILE (1024)
	TCP     TCPConfig
	Unix    UnixConfig
	Disk    DiskConfig
	CPU     CPUConfig
	// HostCores, if positive, makes every process share that many cores,
	// as processes on one machine talking over loopback do; otherwise each
	// process has its own (ProcessConfig.Cores).
	HostCores int
	// SpinLimit, if above 0, fails the run when a socket's handler is
	// called this many times in a row with readiness it neither reads
	// nor writes on, and that it still asks for (socketEvents.dispatch):
	// a loop spinning, as it would burn a core in the real world. Off by
	// default, as tests' bare handlers that leave reading on do spin;
	// check turns it on for the model's own code (DefaultSpinLimit).
	SpinLimit int
	// MaxEvents stops a run that never quiesces (a livelock in model code
	// is a bug, not a hang). 0 means 200 million.
	MaxEvents uint64
	// Interleave lets processes run beside each other, as on separate
	// cores: before a TCP read, write or close takes effect (Unix sockets
	// and files do not interleave yet), the events due by the
	// calling callback's clock run first (other processes' callbacks, on
	// their own cores, and the kernel's timers), so a peer can read and
	// ACK between two writes of one handler. A process is never
	// re-entered: its threads' callbacks wait until its callback ends.
	// Off, every callback runs to completion before anything else.
	Interleave bool
	// CheckShared holds bytes written with WriteShared to their promise:
	// each shared write is copied aside, and the run fails if the bytes
	// differ from the copy once the peer has read them and they are
	// acknowledged (the writer changed a buffer it had handed over).
	// It costs the copy the shared write saves; checks turn it on.
	CheckShared bool
	// Unhashed runs the world without its trace hash, for a run whose
	// hash nobody will compare (check's first run of a seed, which is
	// run again, hashed, if it fails): events are counted and observed
	// as ever, and TraceHashString says "unhashed"; a world traced
	// (TraceTo) keeps its hash all the same, which the trace carries.
	// The hash folds every event, and a log line is built
	// only to be hashed when nobody watches: a twentieth of a check's
	// time.
	Unhashed bool
	// LogKeys, if set, holds every Process.Log call to a schema: its
	// kind must be listed and each field's key be among the kind's keys
	// (model.LogKeys, with what a harness logs itself). A call that does
	// not fit fails the world: a swapped key and value misleads whoever
	// reads the trace. Checks set it.
	LogKeys map[string][]string
	// BargingLocks makes the modelled locks (Lock, RWLock) non-fair, as
	// Java's ReentrantLock and ReentrantReadWriteLock are by default and
	// Go's sync.Mutex is in its normal mode: a thread that finds the lock
	// free takes it though others wait, while the waiter woken at the
	// release is still being scheduled; a woken waiter that finds it
	// taken waits again at the head of the line. A reader does not barge
	// past a writer at the head of the line (Java's non-fair read lock
	// does not either), so writers are not starved. Off: fair locks,
	// handed to the first waiter in arrival order, idle until it runs.
	BargingLocks bool
}

// DefaultConfig returns the defaults: Linux loopback and a datacenter SSD.
func DefaultConfig(seed uint64) Config {
	return Config{
		Seed:       seed,
		FDLimit:    1024,
		HostCores:  2,
		TCP:        DefaultTCPConfig(),
		Unix:       UnixConfig{Delay: 2 * time.Microsecond, BufSize: 212992},
		Disk:       DefaultDiskConfig(),
		CPU:        DefaultCPUConfig(),
		Interleave: true,
	}
}

// CPUConfig is the modelled cost of work. Every callback, syscall and byte
// touched costs virtual time on the thread (loop or worker) that runs it;
// threads are serial servers and a process has a fixed number of cores.
type CPUConfig struct {
	Callback     time.Duration // dispatching one callback (epoll_wait return, bookkeeping)
	Syscall      time.Duration // one socket or file syscall
	CopyPerKB    time.Duration // user/kernel copies
	ChecksumPerK time.Duration // CRC32C per KiB
	Parse        time.Duration // decoding or encoding one message
	Inode        time.Duration // visiting one namespace inode: a hash lookup and its checks
	Frame        time.Duration // an rpc reader taking one call off the wire: frame decode, copy, allocation
	Token        time.Duration // issuing one block token (HMAC-SHA256)
	Softirq      time.Duration // the receiver's input path for one segment, on the sender's CPU (loopback)
	ThreadStart  time.Duration // creating a thread (a loop)
	// Spawn is what spawning a process costs beyond its main loop's
	// ThreadStart (in real, making its disk directory), charged to the
	// thread that spawns it. Zero in the hand-set defaults.
	Spawn time.Duration
	// Wake-up of a blocked thread (a loop in epoll_wait, an idle worker)
	// by another: it starts Wakeup plus a uniform draw from
	// [0, WakeupSpread) after the event that woke it. A busy thread
	// finds its work when it next looks and pays nothing. Zero in the
	// hand-set defaults; a calibrated profile sets them.
	Wakeup       time.Duration
	WakeupSpread time.Duration
	// WakeupCPU is the CPU a wake-up costs (the futex or eventfd, both
	// context switches, Go's scheduler hand-off): the core that ran the
	// woken thread's first callback stays busy that long after it (the
	// latency is Wakeup's); with Poller (and no host slices), a core
	// idle then spins it instead, off the woken thread's way
	// (cpu.spinTail). Zero in the hand-set defaults.
	WakeupCPU time.Duration
	// TCPSendPerKB and TCPRecvPerKB are the TCP stack's CPU per KiB a
	// write or a read moves, beyond the copy (skb handling, the
	// receiver's input path in the sender's softirq on loopback, cache
	// misses); charged to the calling thread. Zero in the hand-set
	// defaults.
	TCPSendPerKB, TCPRecvPerKB time.Duration
	// TCPWake is what a TCP write costs its thread beyond the syscall
	// and the segment when the segment wakes a loop blocked in
	// epoll_wait (the wake-up's share on the sender's side, in its
	// softirq on loopback). Zero in the hand-set defaults.
	TCPWake time.Duration
	// TCPRead is the CPU of a TCP read that returns data beyond the
	// syscall and the per-KiB costs (the receive queue's skbs freed, the
	// window update): what a small request-response hop costs beyond an
	// eventfd wake-up. Zero in the hand-set defaults.
	TCPRead time.Duration
	// SendfilePerKB is the sender's CPU per KiB sendfile(2) moves from
	// the page cache to a TCP socket: the whole cost, for there is no
	// user-space copy (the pages are spliced into the skbs), in place of
	// a write's CopyPerKB and TCPSendPerKB. Zero in the hand-set
	// defaults.
	SendfilePerKB time.Duration
	// TCPRecvSplicedPerKB is what a TCP read costs per KiB beyond
	// TCPRecvPerKB for bytes the peer sent with sendfile: the reader's
	// copy is the first touch of the file's pages since they were
	// cached, where a written stream's reader copies bytes the writer's
	// copy left in the cache. Zero in the hand-set defaults.
	TCPRecvSplicedPerKB time.Duration
	// SliceOn and SliceOff model a machine other processes share: each
	// core runs this world's threads for slices of about SliceOn, with
	// gaps of about SliceOff between them (slices.go). Zero: the machine
	// is this world's alone, as in the hand-set defaults.
	SliceOn, SliceOff time.Duration
	// SyscallHold plus a uniform draw from [0, SyscallHoldSpread) is how
	// long a loop that goes idle (blocks in epoll_wait) keeps its core
	// from the world's other threads: Go leaves a goroutine in a system
	// call its processor until sysmon takes it back. Work for the loop
	// itself within that time takes the core back at once. Zero in the
	// hand-set defaults.
	SyscallHold, SyscallHoldSpread time.Duration
	// Poller models loops that park in Go's runtime poller (the real
	// world's, since they stopped blocking in epoll_wait): a parked loop
	// given work runs only once a processor looks for it. At most one
	// idle core waits in the poller (armed when a core goes idle and no
	// other does): it runs the loop PollerWake plus a uniform draw from
	// [0, PollerWakeSpread) later, and is then busy. Otherwise the loop is
	// missed until a thread parks (cpu.idle), PollerMissed after that,
	// or until Go's sysmon polls,
	// every 10 ms: a loop woken by a callback's write does not run while
	// that callback does. Off in the hand-set defaults; a profile with
	// the poller probes sets it, and then the hold does not apply.
	Poller                                     bool
	PollerWake, PollerWakeSpread, PollerMissed time.Duration
	// StackBalance is how long, at most, a thread woken onto an idle
	// core while another core is busy waits behind the busy one. Go hands
	// a goroutine that a running one readies (a worker's condition, a
	// queued thread) to an idle processor by waking a sleeping thread,
	// and the kernel of a small VM often queues that thread on the
	// waker's busy CPU: it waits until the busy thread runs out of work
	// and sleeps, or the balancer moves it, while the other CPU idles
	// (calibrate's stack probe: a Go thread woken so waited about a
	// millisecond, and 8 goroutine pairs ping-ponging got 1.1 of 2
	// cores). A loop woken through the poller is delayed so too: the
	// stack probe's pairs are woken through the poller alone. Zero (the
	// hand-set defaults): off. Applies only with Poller.
	StackBalance time.Duration
	// TCPDial and TCPAccept are what setting up and tearing down a
	// loopback TCP connection costs its dialer and its acceptor beyond
	// the system calls and segments charged one by one (the kernel's
	// handshake, socket set-up and teardown): charged at the connect and
	// at a successful accept. Calibrate's connect probe, the real run's
	// less the sim's; zero in the hand-set defaults.
	TCPDial, TCPAccept time.Duration
	// CallbackByConns is what each callback costs beyond Callback when
	// 8, 32 and 128 connections (sockets in use, over two) are open in
	// the world: the same work costs Go's scheduler and the caches more
	// as more goroutines and connections share the cores (calibrate's
	// pairs probe: one 32 KiB exchange took 16 µs of CPU with one pair,
	// 31 µs with 128). Interpolated in log2 of the connections from 0 at
	// one, flat past 128; zero (off) in the hand-set defaults.
	//
	// The probe's exchange is two callbacks, one a side; the sim charges
	// the figure on every callback (a read op is 6 to 9 of them). That
	// is how real grew too: at 128 clients the datanode's selector spent
	// 24 µs a callback against 10.6 with one client, its workers 9.4
	// against 5.3 (a per-loop count of thread CPU), and at 128 clients
	// with 31 reads each the sim's CPU an op (156 µs) met real's (155).
	CallbackByConns [3]time.Duration
	// ComparePerKB is the CPU per KiB of checking data against what it
	// should be (model.CPUCompare: the read scenario's client compares
	// every byte it read with the block's content, out of cache). Zero in
	// the hand-set defaults.
	ComparePerKB time.Duration
	// AllocPerKB is the CPU per KiB of a buffer the data path allocates
	// (model.BufferSource: a threaded connection's packet buffer for
	// each request, a pool's buffer the first time): Go's large
	// allocation, its pages faulted in and the collector's share,
	// charged to the allocating callback. Measured on the large-object
	// path (the threaded server's buffer); the small buffers (a
	// connection's 4 KiB input) pay the same rate, too much, but they
	// are allocated once and pooled. Zero in the hand-set defaults.
	AllocPerKB time.Duration
	// PageFault is the CPU of mapping one page of fresh memory at its
	// first use (model.CPUFirstTouch), charged per 4 KiB page touched.
	// Zero in the hand-set defaults.
	PageFault time.Duration
	// Account is what the real world's CPU accounting adds to each
	// callback and work item (real.Config.AccountCPU: two reads of the
	// thread's CPU clock, the thread locked in between), charged only
	// where the real run it is compared with accounts: run read (cmd).
	// Zero in the hand-set defaults and in Profile.CPU.
	Account time.Duration
}

// Scaled is c with every CPU cost multiplied by f and every latency
// (how long a thread waits to be woken or to get a core back) kept: the
// same machine running f times slower, as a shared virtual machine does
// while its neighbours load the memory and caches it shares with them
// (validate --cpu-scale). f of 1, not above 0, NaN or infinite changes
// nothing.
func (c CPUConfig) Scaled(f float64) CPUConfig {
	if !(f > 0) || math.IsInf(f, 1) || f == 1 {
		return c
	}
	s := func(d *time.Duration) { *d = time.Duration(math.Round(float64(*d) * f)) }
	for _, d := range []*time.Duration{
		&c.Callback, &c.Syscall, &c.CopyPerKB, &c.ChecksumPerK, &c.Parse, &c.Inode, &c.Frame, &c.Token,
		&c.Softirq, &c.ThreadStart, &c.Spawn, &c.WakeupCPU, &c.TCPSendPerKB, &c.TCPRecvPerKB, &c.TCPWake,
		&c.TCPRead, &c.SendfilePerKB, &c.TCPRecvSplicedPerKB, &c.TCPDial, &c.TCPAccept,
		&c.CallbackByConns[0], &c.CallbackByConns[1], &c.CallbackByConns[2],
		&c.ComparePerKB, &c.AllocPerKB, &c.PageFault, &c.Account,
	} {
		s(d)
	}
	// Not scaled, for they are waits, not work: Wakeup, WakeupSpread,
	// SliceOn, SliceOff, SyscallHold, SyscallHoldSpread, PollerWake,
	// PollerWakeSpread, PollerMissed, StackBalance.
	return c
}

// HostStealGap is the mean gap WithHostSteal leaves between a core's
// slices unless told: what calibrate's slice probe measured on the
// development VM while its host withheld about half the CPU time wanted
// (0.77 ms at 19:39 on 1 December). The host's gaps vary: 0.14-0.27 ms
// in quiet spells, 1.5-3.3 ms at 20:22 with 28-56% withheld.
const HostStealGap = 750 * time.Microsecond

// MinHostStealGap and MaxHostStealGap bound the gaps WithHostSteal
// takes: shorter ones are interrupts, not a host's turns, and longer
// ones than a run's slices would make its figures a lottery.
const (
	MinHostStealGap = 50 * time.Microsecond
	MaxHostStealGap = 100 * time.Millisecond
)

// MinHostSteal and MaxHostSteal bound the share WithHostSteal withholds:
// below the least there is no host to speak of (and the slices would
// outgrow a time.Duration), past the most the slices would be shorter
// than a callback.
const (
	MinHostSteal = 0.001
	MaxHostSteal = 0.9
)

// WithHostSteal is c on a virtual machine whose host withholds share of
// the CPU time the machine wants, running other guests on its cores (the
// steal in /proc/stat; real.HostCPU): each core runs this world's threads
// in slices between gaps of about gap (HostStealGap if 0; held within
// MinHostStealGap and MaxHostStealGap), so that the gaps are share of
// its time (SliceOn, SliceOff; slices.go). A thread just woken
// still runs at once, as the host wakes an idle virtual core promptly;
// one that stays runnable waits out the gap. A share below MinHostSteal
// (or NaN) changes nothing; above MaxHostSteal it is MaxHostSteal. It
// replaces the slices a profile measured.
func (c CPUConfig) WithHostSteal(share float64, gap time.Duration) CPUConfig {
	share, gap, ok := HostSteal(share, gap)
	if !ok {
		return c
	}
	c.SliceOff = gap
	c.SliceOn = time.Duration(math.Round(float64(gap) * (1 - share) / share))
	return c
}

// HostSteal is the share and the gap WithHostSteal gives a host asked
// for share and gap; false when it gives none.
func HostSteal(share float64, gap time.Duration) (float64, time.Duration, bool) {
	if !(share >= MinHostSteal) {
		return 0, 0, false
	}
	if gap <= 0 {
		gap = HostStealGap
	}
	return min(share, MaxHostSteal), min(max(gap, MinHostStealGap), MaxHostStealGap), true
}

// DefaultCPUConfig returns costs of a current x86 core, set by hand, with
// no wake-up latency: the unit tests' and check's exact timings. run,
// validate and bench use a calibrated profile instead (Profile.CPU).
func DefaultCPUConfig() CPUConfig {
	return CPUConfig{
		Callback:     500 * time.Nanosecond,
		Syscall:      300 * time.Nanosecond,
		CopyPerKB:    100 * time.Nanosecond,
		ChecksumPerK: 250 * time.Nanosecond,
		Parse:        200 * time.Nanosecond,
		Inode:        100 * time.Nanosecond,
		// Frame as Parse, and no Token: the hand-set costs predate both,
		// and check's exact timings stay what they were.
		Frame:       200 * time.Nanosecond,
		Softirq:     1 * time.Microsecond,
		ThreadStart: 15 * time.Microsecond,
	}
}

// World is the simulated world. It implements model.World.
type World struct {
	cfg          Config
	insecureDirs []string // see SetInsecureDir
	now          time.Duration
	seq          uint64
	queue        eventQueue
	// fifo[fifoHead:] are posted events queued in the order of their
	// keys (post appends one whose time is no earlier than the last's),
	// beside the heap: most posts are a loop's wake-up at the clock of
	// the callback that woke it, and a queue costs them no heap work.
	// The first event is the earlier of the two heads (first).
	fifo     []*event
	fifoHead int
	fifoAt   time.Duration // fifo[fifoHead].at, or noEvent if it is empty
	events   uint64
	epoch    uint64 // moves with every process's epoch (Epoch)

	// ctx is the clock of the callback now running: it starts at the
	// event's time and advances with the CPU the callback spends, so what
	// the callback does (a send, a timer) happens when it would have.
	ctx     time.Duration
	running *thread
	core    int           // the core running holds
	waited  time.Duration // of ctx, time the callback spent blocked (wait)

	// Interleaving (Config.Interleave): depth counts the drains in
	// progress; capAt is the earliest clock among the callbacks they
	// interrupted, beyond which nothing runs inside them; runEnd is the
	// limit of the current Run or RunFor (0: none).
	depth  int
	capAt  time.Duration
	runEnd time.Duration

	// While a callback runs on a machine shared with other processes
	// (slices.go): the end of its slice, and how long it has waited
	// between slices.
	sliceEnd, sliceWait time.Duration
	slicers             int // slicers made, each with its own random stream

	procs   []*Process
	hostCPU *cpu
	// arrivals counts threads that became runnable (arrive).
	arrivals uint64
	// threadKinds is the CPU of each kind of thread (ThreadCPU), one
	// record a kind (threadKind).
	threadKinds []*model.ThreadCPU
	// sockets counts the sockets open in every process (allocFD, freeFD,
	// clearFDs): CPUConfig.CallbackByConns reads it on every callback.
	sockets int
	// cbSocketsCost is that cost for cbSockets sockets: it changes only
	// when a socket opens or closes, and working it out (a logarithm)
	// on every callback was a twentieth of a busy rpc run. (The zero
	// values agree: no sockets, no cost.)
	cbSockets     int
	cbSocketsCost time.Duration
	listen        map[string]*listener // address → listener; lookups only
	nextPort      int
	nextID        uint64

	tickPhase time.Duration
	netRand   *rand.Rand
	diskRand  *rand.Rand
	faultRand *rand.Rand
	cpuRand   *rand.Rand
	fragRand  *rand.Rand // made by the first Fragment

	trace traceState
	// Recycled fire-and-forget events (see post), and the carriers of
	// segments and work items' completions (carriers).
	freeEvents    []*event
	deliveries    carriers[delivery]
	workDone      carriers[workDone]
	freeSndArrays [sndArrayClasses][]*sndArray
	freeShared    []*sndArray  // headers of shared arrays (WriteShared)
	freePieces    []*segPieces // segments' piece lists (sendQueue.slice)
	arena         *Arena       // see UseArena
	arrays        []*sndArray  // every array taken while an arena is in use
	bufs          [][]byte     // model buffers handed out (NewBuffer) likewise, up to ArenaMaxBytes
	bufBytes      int          // their capacities
	// softq holds segments sent inline, waiting for softirq.
	softq     []softSeg
	inSoftirq bool
	stopped   bool
	inRun     bool // Run or RunFor is processing events
	// reached is the latest time a task's clock reached: a task runs
	// ahead of the event that began it by the CPU it used.
	reached   time.Duration
	failure   error
	observers []func(*Event)
	afterStep []func()
}

// New makes an empty world.
func New(cfg Config) *World {
	if cfg.FDLimit == 0 {
		cfg.FDLimit = 1024
	}
	if cfg.MaxEvents == 0 {
		cfg.MaxEvents = 200_000_000
	}
	if cfg.TCP.MSS == 0 {
		cfg.TCP = DefaultTCPConfig()
	}
	if cfg.Unix.BufSize == 0 {
		cfg.Unix = UnixConfig{Delay: 2 * time.Microsecond, BufSize: 212992}
	}
	if cfg.Disk.Bandwidth == 0 {
		cfg.Disk = DefaultDiskConfig()
	}
	if cfg.CPU == (CPUConfig{}) {
		cfg.CPU = DefaultCPUConfig()
	}
	w := &World{
		fifoAt:     noEvent,
		cfg:        cfg,
		listen:     make(map[string]*listener),
		nextPort:   40000,
		deliveries: carriers[delivery]{fn: delivery.arrive},
		workDone:   carriers[workDone]{fn: workDone.complete},
	}
	w.netRand = w.derivedRand("net")
	w.diskRand = w.derivedRand("disk")
	w.faultRand = w.derivedRand("fault")
	w.cpuRand = w.derivedRand("cpu")
	// Where jiffies fall relative to the run's start differs per boot;
	// draw it so timer rounding is not always the worst case.
	if cfg.TCP.Tick > 0 {
		w.tickPhase = time.Duration(w.netRand.Int64N(int64(cfg.TCP.Tick)))
	}
	w.trace.hash, w.trace.off = fnvOffset, cfg.Unhashed
	if cfg.HostCores > 0 {
		w.hostCPU = newCPU(w, cfg.HostCores)
	}
	return w
}

// derivedRand gives each concern its own stream, so that adding a random
// draw in one concern does not shift every other concern's draws.
func (w *World) derivedRand(concern string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(concern))
	return rand.New(rand.NewPCG(w.cfg.Seed, h.Sum64()))
}

// Config returns the world's configuration.
func (w *World) Config() Config { return w.cfg }

// Kind implements model.World.
func (w *World) Kind() string { return "sim" }

// Now is virtual time; inside a callback it includes the CPU the callback
// has spent so far.
//
// Between runs it is the latest time the world has reached: a task that
// stopped the run, or the last one before the queue emptied, may have run
// ahead of every event by the CPU it used, and the clock must not read
// earlier afterwards than the model saw it (a run's latencies would add
// up to more than the run took). Queued events keep their times, so a
// resumed run goes on exactly as before.
func (w *World) Now() time.Duration {
	if w.running != nil {
		return w.ctx
	}
	if !w.inRun {
		return max(w.now, w.reached)
	}
	return w.now
}

// Events is the number of events processed so far.
func (w *World) Events() uint64 { return w.events }

// Epoch changes whenever any process's epoch does (Process.Epoch). Most
// events run no callback (a segment delivered, a timer queueing its task,
// a dispatch waiting for its core), and after those a harness's per-event
// checks of process state would find what they found last time: one
// compare tells it so, where it looked at every process's epoch.
func (w *World) Epoch() uint64 { return w.epoch }

// Stop implements model.World.
func (w *World) Stop() { w.stopped = true }

// Fail implements model.World: the first failure wins and stops the run.
func (w *World) Fail(err error) {
	if w.failure == nil {
		w.failure = err
		w.record(Event{Kind: "fail", S: err.Error()})
	}
	w.stopped = true
}

// Failure is the error passed to Fail, if any.
func (w *World) Failure() error { return w.failure }

// AfterEach registers f to run after every event; property checks use it to
// assert invariants at each step rather than only at the end.
func (w *World) AfterEach(f func()) { w.afterStep = append(w.afterStep, f) }

// Observe registers f to see every trace event as it is recorded.
func (w *World) Observe(f func(*Event)) { w.observers = append(w.observers, f) }

// ErrLimit is returned by Run when the time or event limit was reached
// before the model stopped the world.
var ErrLimit = errors.New("simulation limit reached")

// Run implements model.World: it processes events until Stop, Fail, an
// empty queue, or limit of virtual time.
func (w *World) Run(limit time.Duration) error {
	w.inRun = true
	defer func() { w.inRun = false }()
	w.stopped = false
	w.runEnd = limit
	for !w.stopped {
		w.softirq() // segments sent outside a syscall: a timer, a test
		ev := w.first()
		if ev == nil {
			break
		}
		if ev.dead {
			w.take(ev)
			w.freeEvent(ev)
			continue
		}
		if limit > 0 && ev.at > limit {
			w.now = limit
			return fmt.Errorf("%w: virtual time %v", ErrLimit, limit)
		}
		w.take(ev)
		w.now = ev.at
		w.events++
		if w.events > w.cfg.MaxEvents {
			return fmt.Errorf("%w: %d events by %v of virtual time (a livelock, or more work than one run may simulate)", ErrLimit, w.cfg.MaxEvents, w.now)
		}
		w.fire(ev)
		for _, f := range w.afterStep {
			f()
		}
		w.yieldNow()
	}
	return w.failure
}

// yieldEvents is how many events a run processes between yields to Go's
// scheduler (about 250 µs of a core).
const yieldEvents = 1024

// yieldNow lets other goroutines run every yieldEvents events. A run
// allocates little, so the collector's mark phase is rarely helped by
// allocation, and on one P its worker runs only when the scheduler
// preempts the run (sysmon, every 10 ms): mark phases lasted 1 to 18 ms
// of a 60 ms cycle, with write barriers on throughout. Yielding ends each
// within a millisecond, and BenchmarkSimEvents on one core runs as fast
// as with the collector off (4.59 M events/s before, 4.76 M after).
// Nothing of the simulation depends on it: the run is the only goroutine
// that touches the world.
func (w *World) yieldNow() {
	if w.events%yieldEvents == 0 {
		runtime.Gosched()
	}
}

// RunFor processes events up to now+d, leaving later ones queued.
func (w *World) RunFor(d time.Duration) error {
	end := w.now + d
	w.inRun = true
	defer func() { w.inRun = false }()
	w.stopped = false
	w.runEnd = end
	for w.softirq(); !w.stopped; w.softirq() {
		ev := w.first()
		if ev == nil || ev.at > end {
			break
		}
		w.take(ev)
		if ev.dead {
			w.freeEvent(ev)
			continue
		}
		w.now = ev.at
		w.events++
		w.fire(ev)
		for _, f := range w.afterStep {
			f()
		}
		w.yieldNow()
	}
	if !w.stopped && w.now < end {
		w.now = end
	}
	return w.failure
}

// Pending is the number of live events queued.
func (w *World) Pending() int {
	n := len(w.fifo) - w.fifoHead // posted: never dead
	for _, e := range w.queue {
		if !e.ev.dead {
			n++
		}
	}
	return n
}

// first returns the first queued event by (at, seq), nil if none: the
// earlier of the heap's and the fifo's.
func (w *World) first() *event {
	if w.fifoHead == len(w.fifo) {
		if len(w.queue) == 0 {
			return nil
		}
		return w.queue.peek()
	}
	f := w.fifo[w.fifoHead]
	if len(w.queue) == 0 {
		return f
	}
	// The heap's top is queued by a key no later than its own: if even
	// that is later than the fifo's head, the head is first, and the top
	// need not be settled (a re-armed delayed-ACK timer stays put).
	if h := &w.queue[0]; f.at < h.at || f.at == h.at && f.seq < h.seq {
		return f
	}
	if h := w.queue.peek(); h.at < f.at || h.at == f.at && h.seq < f.seq {
		return h
	}
	return f
}

// take removes ev, which first has just returned, from its queue.
func (w *World) take(ev *event) {
	if ev.index >= 0 {
		w.queue.pop() // in the heap: first gave its top
		return
	}
	w.fifo[w.fifoHead] = nil
	w.fifoHead++
	switch {
	case w.fifoHead == len(w.fifo):
		w.fifo, w.fifoHead, w.fifoAt = w.fifo[:0], 0, noEvent
		return
	case w.fifoHead >= 64 && w.fifoHead >= len(w.fifo)/2:
		// Never drained: slide the rest down, so the array grows
		// with what is queued, not with every event posted.
		n := copy(w.fifo, w.fifo[w.fifoHead:])
		clear(w.fifo[n:])
		w.fifo, w.fifoHead = w.fifo[:n], 0
	}
	w.fifoAt = w.fifo[w.fifoHead].at
}

// noEvent is World.fifoAt when the fifo is empty: later than any time.
const noEvent = time.Duration(1<<63 - 1)

// at schedules fn at virtual time t (never earlier than now) and returns
// a handle that can cancel it. Handles are never recycled, so a stale one
// can at worst cancel nothing.
func (w *World) at(t time.Duration, fn func()) *event {
	ev := w.allocEvent(false)
	w.schedule(ev, t, fn)
	return ev
}

// post is at without a handle: nobody can cancel the event, so it is
// recycled once it has run. Hot paths (segments, loop wake-ups) use it.
func (w *World) post(t time.Duration, fn func()) {
	// schedule for a fresh event, written out: two posts per busy event.
	var ev *event
	if n := len(w.freeEvents); n > 0 {
		ev = w.freeEvents[n-1]
		w.freeEvents = w.freeEvents[:n-1]
	} else {
		ev = &event{w: w, pooled: true, index: -1}
	}
	if t < w.now {
		t = w.now
	}
	ev.at, ev.seq, ev.fn = t, w.seq, fn // (not dead: freeEvent saw to it)
	w.seq++
	// Its seq is the largest yet, so after an event no later than it,
	// it keeps the fifo in key order; else the heap places it.
	if n := len(w.fifo); n == w.fifoHead {
		w.fifo, w.fifoAt = append(w.fifo, ev), t
		return
	} else if w.fifo[n-1].at <= t {
		w.fifo = append(w.fifo, ev)
		return
	}
	w.queue.push(ev)
}

func (w *World) schedule(ev *event, t time.Duration, fn func()) {
	if t < w.now {
		t = w.now
	}
	ev.at, ev.seq, ev.fn = t, w.seq, fn
	w.seq++
	ev.dead = false
	if ev.index >= 0 {
		// Disarmed and still queued: alive again. Its new key is later
		// than the one it is queued by unless t is earlier, so it stays
		// where it is until it comes up (peek moves it then); the
		// delayed-ACK timer, re-armed by nearly every segment at the
		// same jiffy, costs no heap work that way.
		if h := &w.queue[ev.index]; t < h.at {
			h.at, h.seq = t, ev.seq
			w.queue.up(ev.index)
		}
		return
	}
	w.queue.push(ev)
}

// postConn is post of c.run(op, peer): what a closure over c and peer
// would do, without allocating one.
func (w *World) postConn(t time.Duration, op connOp, c, peer *tcpConn) {
	ev := w.allocEvent(true)
	ev.op, ev.conn, ev.peer = op, c, peer
	w.schedule(ev, t, nil)
}

// atConn is at of c.run(op, nil), for a handle to cancel.
func (w *World) atConn(t time.Duration, op connOp, c *tcpConn) *event {
	ev := w.allocEvent(false)
	ev.op, ev.conn = op, c
	w.schedule(ev, t, nil)
	return ev
}

// after schedules fn d after the current (callback) time.
func (w *World) after(d time.Duration, fn func()) *event { return w.at(w.Now()+d, fn) }

type event struct {
	at    time.Duration
	seq   uint64
	fn    func()
	w     *World
	timer *Timer // fire calls timer.expire instead of fn
	// op, if set, is what fire runs instead of fn, on conn (and peer):
	// a TCP handshake's steps and the delayed ACK, typed rather than
	// closures, since every dial posted four closures and armed a fifth.
	conn, peer *tcpConn
	index      int // position in the heap; -1 once popped or removed, and in the fifo
	op         connOp
	dead       bool
	pooled     bool // no handle exists: recycle after it runs
	// barrier: an event from outside the model (a fault, a test's
	// action) never runs inside a callback; interleaving stops at it.
	barrier bool
}

func (w *World) allocEvent(pooled bool) *event {
	if pooled {
		if n := len(w.freeEvents); n > 0 {
			ev := w.freeEvents[n-1]
			w.freeEvents = w.freeEvents[:n-1]
			return ev
		}
	}
	return &event{w: w, pooled: pooled, index: -1}
}

// fire runs an event that has left the queue (and recycles it if it is
// pooled, before it runs: what it schedules may reuse it).
func (w *World) fire(ev *event) {
	fn, tm, op, c, peer := ev.fn, ev.timer, ev.op, ev.conn, ev.peer
	w.freeEvent(ev)
	switch {
	case tm != nil:
		tm.expire()
	case op != connFn:
		c.run(op, peer)
	default:
		fn()
	}
}

// freeEvent is called once an event has left the queue.
func (w *World) freeEvent(ev *event) {
	ev.fn = nil
	ev.barrier = false
	if ev.pooled {
		ev.op, ev.conn, ev.peer = connFn, nil, nil
		ev.dead = false // post takes it from the list as it is
		w.freeEvents = append(w.freeEvents, ev)
	}
}

// cancel removes a pending event from the queue at once, so cancelled
// timers (a delayed ACK superseded by data, say) do not pile up in the
// heap. Order among the remaining events is by (time, seq) and does not
// depend on the heap's shape.
func (e *event) cancel() {
	if e != nil && !e.dead {
		e.remove() // not inlined, so that cancel is: most calls have nothing to cancel
	}
}

//go:noinline
func (e *event) remove() {
	e.dead = true
	if e.index >= 0 {
		e.w.queue.remove(e.index)
	}
}

// disarm cancels an event whose owner will schedule it again soon (the
// delayed-ACK timer, disarmed by nearly every segment and armed again by
// the next data): it stays queued, dead, until it comes up (skipped, not
// counted) or schedule revives it in place, which saves taking it out of
// the heap and putting it back. The order of live events does not change.
func (e *event) disarm() { e.dead = true }

// eventQueue is a 4-ary min-heap of events by the key they are queued by
// (time, seq), each entry holding its key beside the event, so that
// sifting compares without reading an event (a cache miss each), and a
// pop sifts through half the levels a binary heap has (comparing up to
// four children at each). It is typed rather than
// container/heap's interface calls: the queue is touched several times
// per event. Keys are unique, so the pop order is the same whatever the
// heap's shape.
type eventQueue []heapEntry

// heapEntry is an event and the key it is queued by: its (at, seq), or
// earlier while it waits after a later re-arm (schedule). Every arming
// takes a new seq, so an entry whose seq is not its event's is stale.
type heapEntry struct {
	at  time.Duration
	seq uint64
	ev  *event
}

func (e *heapEntry) before(o *heapEntry) bool {
	return e.at < o.at || e.at == o.at && e.seq < o.seq
}

func (q eventQueue) Len() int { return len(q) }

func (q eventQueue) up(j int) {
	e := q[j]
	for j > 0 {
		i := (j - 1) / 4
		if !e.before(&q[i]) {
			break
		}
		q[j] = q[i]
		q[j].ev.index = j
		j = i
	}
	q[j] = e
	e.ev.index = j
}

// down sifts i down and reports whether it moved.
func (q eventQueue) down(i0 int) bool {
	n := len(q)
	i, e := i0, q[i0]
	for {
		c := 4*i + 1
		if c >= n || c < 0 {
			break
		}
		m := c
		for k, end := c+1, min(c+4, n); k < end; k++ {
			if q[k].before(&q[m]) {
				m = k
			}
		}
		if !q[m].before(&e) {
			break
		}
		q[i] = q[m]
		q[i].ev.index = i
		i = m
	}
	q[i] = e
	e.ev.index = i
	return i > i0
}

func (q *eventQueue) push(ev *event) {
	*q = append(*q, heapEntry{ev.at, ev.seq, ev})
	q.up(len(*q) - 1)
}

// pop removes the first event; the caller has looked at it with peek.
func (q *eventQueue) pop() *event {
	old := *q
	n := len(old) - 1
	top := old[0].ev
	old[0] = old[n]
	old[n] = heapEntry{}
	*q = old[:n]
	if n > 0 {
		old[:n].down(0)
	}
	top.index = -1
	return top
}

func (q *eventQueue) remove(i int) {
	old := *q
	n := len(old) - 1
	ev := old[i].ev
	old[i] = old[n]
	old[n] = heapEntry{}
	*q = old[:n]
	if i < n && !old[:n].down(i) {
		old[:n].up(i)
	}
	ev.index = -1
}

// peek returns the first event by (at, seq). An event queued by an
// earlier key than its own (schedule) is moved to its place when it comes
// to the top, so no event runs before one with a smaller key: the order
// is exactly that of the keys, as if every re-arm had moved its event.
func (q eventQueue) peek() *event {
	if h := &q[0]; h.seq == h.ev.seq {
		return h.ev
	}
	return q.settle()
}

// settle moves events queued by an earlier key to their places until the
// first is where it belongs (outside peek, so that peek is inlined).
func (q eventQueue) settle() *event {
	for {
		h := &q[0]
		e := h.ev
		if h.seq == e.seq {
			return e
		}
		h.at, h.seq = e.at, e.seq
		q.down(0)
	}
}

// Spawn implements model.World.
func (w *World) Spawn(name string, cfg model.ProcessConfig, main func(p model.Process)) (model.Process, error) {
	for _, p := range w.procs {
		if p.name == name {
			return nil, fmt.Errorf("spawn %q: a process with that name exists", name)
		}
	}
	p := newProcess(w, name, cfg, main)
	w.procs = append(w.procs, p)
	p.start()
	return p, nil
}

// Processes lists the world's processes in spawn order.
func (w *World) Processes() []*Process { return w.procs }

// Process finds a process by name.
func (w *World) Process(name string) *Process {
	for _, p := range w.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}
