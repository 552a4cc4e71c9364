package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"xceiver/model"
)

// Process is a simulated OS process. It implements model.Process.
type Process struct {
	w        *World
	name     string
	nameHash strHash // of name, for the trace (segTag)
	cfg      model.ProcessConfig
	main     func(model.Process)
	gen      int // bumped by Crash; objects of an older generation are dead

	rng  *rand.Rand
	disk *Disk
	cpu  *cpu

	fds      fdTable
	mainLoop *Loop
	loops    []*Loop
	pools    []*WorkerPool
	threads  int
	peakThr  int
	timers   int // pending AfterFuncs
	work     int // submitted work not yet completed
	// buffersMade counts the model buffers it allocated (NewBuffer), for
	// tests of what its free lists keep.
	buffersMade int
	// pausedUntil: the process is stopped (Pause) until then; its
	// threads start no callback or work item before it.
	pausedUntil time.Duration
	crashed     bool
	restarts    int
	// epoch changes whenever the process's state may have: a callback
	// ran on one of its threads, its fd table changed, it crashed or
	// restarted, or the harness acted (World.At). See Epoch.
	epoch uint64

	netFaults procFaults    // see faults.go
	segments  []*shmMap     // shared-memory mappings
	cpuTime   time.Duration // modelled CPU used (CPUTime)

	// Buffer faults (corrupt.go). Flips counts bits flipped in flight.
	flipPermille int
	poison       bool
	Flips        int
	// logged counts p's Log calls by kind (Logged).
	logged map[string]int
	// Socket buffer sizes of p's new TCP connections (0: the world's).
	sockSnd, sockRcv int
	// active counts p's callbacks in progress (more than one only when a
	// worker's and a loop's nest through interleaving). While it is
	// positive, dispatches of p's threads wait in deferred, to be queued
	// again when it ends: a process is never re-entered.
	active   int
	deferred []deferredDispatch
}

type deferredDispatch struct {
	at time.Duration
	fn func()
}

// arrive numbers a thread becoming runnable: the line for a core is in
// this order (cpu.wait).
func (w *World) arrive() uint64 {
	w.arrivals++
	return w.arrivals
}

func newProcess(w *World, name string, cfg model.ProcessConfig, main func(model.Process)) *Process {
	if cfg.FDLimit <= 0 {
		cfg.FDLimit = w.cfg.FDLimit
	}
	if cfg.Cores <= 0 {
		cfg.Cores = 1
	}
	p := &Process{w: w, name: name, nameHash: newStrHash(name), cfg: cfg, main: main}
	p.disk = newDisk(w, p)
	p.reset()
	return p
}

func (p *Process) reset() {
	h := fnv.New64a()
	fmt.Fprintf(h, "proc:%s:%d", p.name, p.restarts)
	p.rng = rand.New(rand.NewPCG(p.w.cfg.Seed, h.Sum64()))
	p.cpu = p.w.hostCPU
	if p.cpu == nil {
		p.cpu = newCPU(p.w, p.cfg.Cores)
	}
	p.clearFDs()
	p.loops, p.pools = nil, nil
	p.threads, p.timers, p.work = 0, 0, 0
	p.crashed = false
}

func (p *Process) start() {
	p.w.record(Event{Proc: p.name, Kind: "spawn", A: int64(p.restarts)})
	if c := p.w.cfg.CPU.Spawn; c > 0 {
		p.w.charge(c)
	}
	l, err := p.newLoop("main")
	if err != nil {
		p.w.Fail(fmt.Errorf("process %s: main loop: %w", p.name, err))
		return
	}
	p.mainLoop = l
	l.Post(func() { p.main(p) })
}

// Name implements model.Process.
func (p *Process) Name() string { return p.name }

// World implements model.Process.
func (p *Process) World() model.World { return p.w }

// MainLoop implements model.Process.
func (p *Process) MainLoop() model.Loop { return p.mainLoop }

// NewLoop implements model.Process.
func (p *Process) NewLoop(name string) (model.Loop, error) {
	l, err := p.newLoop(name)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (p *Process) newLoop(name string) (*Loop, error) {
	fd, err := p.allocFD(model.FDEpoll, nil)
	if err != nil {
		return nil, fmt.Errorf("new loop %s: %w", name, err)
	}
	// Like the real world's loops, each has an eventfd to be woken by
	// timers and posted completions.
	evfd, err := p.allocFD(model.FDEventfd, nil)
	if err != nil {
		p.freeFD(fd)
		return nil, fmt.Errorf("new loop %s: %w", name, err)
	}
	p.w.charge(p.w.cfg.CPU.ThreadStart)
	l := &Loop{thread: thread{p: p, name: name, kind: p.w.threadKind(p, name)}, gen: p.gen, epfd: fd, evfd: evfd, bornAt: p.w.Now()}
	l.dispatchF = l.dispatch
	p.loops = append(p.loops, l)
	p.addThreads(1)
	return l, nil
}

func (p *Process) addThreads(n int) {
	p.threads += n
	if p.threads > p.peakThr {
		p.peakThr = p.threads
	}
}

// NewWorkerPool implements model.Process.
func (p *Process) NewWorkerPool(name string, n int) model.WorkerPool {
	if n < 1 {
		n = 1
	}
	wp := &WorkerPool{p: p, name: name, gen: p.gen}
	wp.dispatchF = wp.dispatch
	kind := p.w.threadKind(p, name)
	for i := 0; i < n; i++ {
		wp.workers = append(wp.workers, &thread{p: p, name: fmt.Sprintf("%s-%d", name, i), kind: kind})
	}
	p.pools = append(p.pools, wp)
	p.addThreads(n)
	return wp
}

// NewLock implements model.Process.
func (p *Process) NewLock(name string) model.Lock {
	return &Lock{p: p, name: name, barging: p.w.cfg.BargingLocks}
}

// Listen implements model.Process.
func (p *Process) Listen(network, addr string, backlog int, loop model.Loop) (model.Listener, error) {
	l, ok := loop.(*Loop)
	if !ok || l.p != p {
		return nil, fmt.Errorf("listen %s: loop belongs to another process", addr)
	}
	switch network {
	case "tcp", "unix":
	default:
		return nil, fmt.Errorf("listen %s: unknown network %q", addr, network)
	}
	return p.w.listenOn(p, network, addr, backlog, l)
}

// Dial implements model.Process.
func (p *Process) Dial(network, addr string, loop model.Loop, h model.Handler) (model.Conn, error) {
	l, ok := loop.(*Loop)
	if !ok || l.p != p {
		return nil, fmt.Errorf("dial %s: loop belongs to another process", addr)
	}
	switch network {
	case "tcp":
		return p.w.dialTCP(p, addr, l, h)
	case "unix":
		return p.w.dialUnix(p, addr, l, h)
	}
	return nil, fmt.Errorf("dial %s: unknown network %q", addr, network)
}

// Disk implements model.Process.
func (p *Process) Disk() model.Disk { return p.disk }

// SimDisk is the process's disk with its fault controls.
func (p *Process) SimDisk() *Disk { return p.disk }

// Rand implements model.Process.
func (p *Process) Rand() model.Rand { return p.rng }

// CPU implements model.Process.
func (p *Process) CPU(kind model.CPUWork, n int) {
	c := &p.w.cfg.CPU
	switch kind {
	case model.CPUChecksum:
		p.w.charge(time.Duration(int64(c.ChecksumPerK) * int64(n) / 1024))
	case model.CPUCopy:
		p.w.charge(time.Duration(int64(c.CopyPerKB) * int64(n) / 1024))
	case model.CPUParse:
		p.w.charge(time.Duration(int64(c.Parse) * int64(n)))
	case model.CPUInode:
		p.w.charge(time.Duration(int64(c.Inode) * int64(n)))
	case model.CPUFrame:
		p.w.charge(time.Duration(int64(c.Frame) * int64(n)))
	case model.CPUToken:
		p.w.charge(time.Duration(int64(c.Token) * int64(n)))
	case model.CPUCompare:
		if c.ComparePerKB > 0 {
			p.w.charge(time.Duration(int64(c.ComparePerKB) * int64(n) / 1024))
		}
	case model.CPUFirstTouch:
		if c.PageFault > 0 && n > 0 {
			p.w.charge(c.PageFault * time.Duration(model.Pages(n)))
		}
	}
}

// Log implements model.Process.
func (p *Process) Log(kind string, kv ...any) {
	if keys := p.w.cfg.LogKeys; keys != nil && !logFits(keys, kind, kv) {
		p.w.Fail(fmt.Errorf("process %s logged %q with fields %v, which its schema (model.LogKeys) does not allow", p.name, kind, kv))
	}
	if p.logged == nil {
		p.logged = make(map[string]int)
	}
	p.logged[kind]++
	if p.w.skipLog() {
		return
	}
	var buf [128]byte
	b := append(buf[:0], kind...)
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, ' ')
		b = appendValue(b, kv[i])
		b = append(b, '=')
		b = appendValue(b, kv[i+1])
	}
	p.w.recordLog(p.name, b)
}

// Logged is how many times p has logged kind (Log), over its whole life,
// restarts included: a harness holds a model's counters to the events it
// logged beside them.
func (p *Process) Logged(kind string) int { return p.logged[kind] }

// logFits reports whether a Log call fits keys: a known kind, and
// key-value pairs whose keys are among its keys.
func logFits(keys map[string][]string, kind string, kv []any) bool {
	allowed, ok := keys[kind]
	if !ok || len(kv)%2 != 0 {
		return false
	}
	for i := 0; i < len(kv); i += 2 {
		if k, ok := kv[i].(string); !ok || !slices.Contains(allowed, k) {
			return false
		}
	}
	return true
}

// appendValue appends v as fmt's %v would: strconv for the plain types
// that most log values are (a failed op logs a few; fmt's state machine
// was most of what logging cost), fmt for the rest, which includes every
// named type (a String method decides there).
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return append(b, x...)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case bool:
		return strconv.AppendBool(b, x)
	}
	return fmt.Appendf(b, "%v", v)
}

// FDs implements model.Process.
func (p *Process) FDs() model.FDStats {
	return model.FDStats{Open: p.fds.open, Peak: p.fds.peak, Limit: p.fds.limit, ByKind: p.fds.byKind, Segments: len(p.segments)}
}

// Threads implements model.Process.
func (p *Process) Threads() (now, peak int) { return p.threads, p.peakThr }

// Resources is what a process holds; leak checks compare it to a baseline.
type Resources struct {
	FDs     int
	ByKind  [model.NumFDKinds]int
	Threads int
	Timers  int
	Work    int
}

// Resources reports what the process holds now.
func (p *Process) Resources() Resources {
	return Resources{FDs: p.fds.open, ByKind: p.fds.byKind, Threads: p.threads, Timers: p.timers, Work: p.work}
}

// FDsMade is how many fds of kind the process has allocated since it
// (re)started: what a model's own counter (connections accepted) must
// agree with.
func (p *Process) FDsMade(kind model.FDKind) int { return p.fds.made[kind] }

// AcceptFailures is how many accepts the process's listeners refused
// for want of an fd since it (re)started: a server that retries at once
// spins.
func (p *Process) AcceptFailures() int { return p.fds.acceptFails }

// CPUTime is the modelled CPU the process's threads have used so far,
// summed over its cores (what getrusage would report).
func (p *Process) CPUTime() time.Duration { return p.cpuTime }

// Epoch is a counter that changes whenever the process's state may have
// changed: a callback ran on one of its threads, its fd table changed, it
// crashed or restarted, or a kernel event (World.At) ran. A per-event
// invariant over the process's fds and its model state need not be
// checked again while its epoch stays the same.
func (p *Process) Epoch() uint64 { return p.epoch }

// bumpEpoch moves the process's epoch and the world's with it.
func (p *Process) bumpEpoch() { p.epoch++; p.w.epoch++ }

// Crashed reports whether the process is down.
func (p *Process) Crashed() bool { return p.crashed }

// Crash kills the process as the kernel would: every fd is closed (sockets
// with unread data reset their peers), threads and timers vanish. The disk
// keeps what was written (a process crash, not a power loss).
func (p *Process) Crash() {
	if p.crashed {
		return
	}
	open := p.fds.open
	p.w.record(Event{Proc: p.name, Kind: "crash", A: int64(open)})
	p.crashed = true
	p.bumpEpoch()
	p.gen++
	for fd := range p.fds.objs {
		if o := p.fds.objs[fd]; o != nil {
			o.kill()
		}
	}
	for _, s := range p.segments {
		s.release() // the kernel unmaps a dead process's memory
	}
	p.segments = nil
	for _, l := range p.loops {
		l.closed = true
		l.queue = nil
		l.unkeep()
	}
	for _, wp := range p.pools {
		wp.closed = true
		wp.queue = nil
	}
	p.threads, p.timers, p.work = 0, 0, 0
	p.clearFDs()
}

// Restart starts a crashed process again: main runs on fresh state over
// the same disk.
func (p *Process) Restart() {
	if !p.crashed {
		return
	}
	p.restarts++
	p.bumpEpoch()
	p.pausedUntil = 0 // a stopped process killed starts afresh
	p.reset()
	p.start()
}

// fdObject is what an fd refers to; kill releases it at process death.
type fdObject interface{ kill() }

type fdTable struct {
	objs   []fdObject // index = fd number; nil = free
	kinds  []model.FDKind
	open   int
	peak   int
	limit  int
	byKind [model.NumFDKinds]int
	made   [model.NumFDKinds]int // fds ever allocated, by kind
	// acceptFails counts accepts refused for want of an fd (EMFILE).
	acceptFails int
	hint        int
}

// clearFDs gives p an empty fd table (a fresh process, or a crashed one's
// fds all gone at once), keeping the world's count of sockets.
func (p *Process) clearFDs() {
	p.w.sockets -= p.fds.byKind[model.FDSocket]
	p.fds = fdTable{limit: p.cfg.FDLimit}
}

// firstFD leaves 0, 1 and 2 to stdio, which the accounting does not count.
const firstFD = 3

// fdRoom reports the error allocFD would fail with, if any.
func (p *Process) fdRoom() error {
	if p.crashed {
		return model.ErrProcessExited
	}
	if p.fds.open >= p.fds.limit {
		return model.ErrTooManyFiles
	}
	return nil
}

func (p *Process) allocFD(kind model.FDKind, obj fdObject) (int, error) {
	t := &p.fds
	if err := p.fdRoom(); err != nil {
		return -1, err
	}
	fd := t.hint
	if fd < firstFD {
		fd = firstFD
	}
	for fd < len(t.objs) && (t.objs[fd] != nil || t.kinds[fd] != fdFree) {
		fd++
	}
	for fd >= len(t.objs) {
		t.objs = append(t.objs, nil)
		t.kinds = append(t.kinds, fdFree)
	}
	t.objs[fd] = obj
	t.kinds[fd] = kind
	t.hint = fd + 1
	p.bumpEpoch()
	t.open++
	t.byKind[kind]++
	if kind == model.FDSocket {
		p.w.sockets++
	}
	t.made[kind]++
	if t.open > t.peak {
		t.peak = t.open
	}
	p.w.record(Event{Proc: p.name, Kind: "fd", Conn: uint64(fd), A: 1, B: int64(t.open), S: kind.String()})
	return fd, nil
}

// setFDObject attaches the object once it exists (allocation comes first
// so EMFILE is reported before anything is built).
func (p *Process) setFDObject(fd int, obj fdObject) {
	if fd >= 0 && fd < len(p.fds.objs) {
		p.fds.objs[fd] = obj
	}
}

const fdFree model.FDKind = -1

func (p *Process) freeFD(fd int) {
	t := &p.fds
	if fd < firstFD || fd >= len(t.kinds) || t.kinds[fd] == fdFree {
		return
	}
	kind := t.kinds[fd]
	p.bumpEpoch()
	t.objs[fd] = nil
	t.kinds[fd] = fdFree
	t.open--
	t.byKind[kind]--
	if kind == model.FDSocket {
		p.w.sockets--
	}
	if fd < t.hint {
		t.hint = fd
	}
	p.w.record(Event{Proc: p.name, Kind: "fd", Conn: uint64(fd), A: -1, B: int64(t.open), S: kind.String()})
}

// thread is a serial server: a loop or a worker. Work on it queues behind
// whatever it is already doing.
type thread struct {
	p         *Process
	name      string
	kind      *model.ThreadCPU // its kind's CPU (World.ThreadCPU)
	busyUntil time.Duration
	// woken is set when the thread was woken from sleep: its next
	// callback pays CPUConfig.WakeupCPU.
	woken bool
	// held is 1 + the core this loop keeps while blocked in epoll_wait
	// (CPUConfig.SyscallHold), 0 for none.
	held int
	// inCB is set while a callback of the thread runs, events run
	// inside it (interleave) included.
	inCB bool
	// lastCore is 1 + the core the thread last ran a callback on (0:
	// none yet): where Linux puts it when it is woken and that CPU is
	// idle (cpu.free).
	lastCore int
}

// threadKind is the CPU record of thread name's kind in p (ThreadCPU).
// A world has a handful of kinds (client/main, datanode/worker, …): a
// scan finds one, and the kind's name is built only for a new one.
func (w *World) threadKind(p *Process, name string) *model.ThreadCPU {
	for _, tc := range w.threadKinds {
		if model.IsThreadKind(tc.Thread, p.name, name) {
			return tc
		}
	}
	tc := &model.ThreadCPU{Thread: model.ThreadKind(p.name, name)}
	w.threadKinds = append(w.threadKinds, tc)
	return tc
}

// ThreadCPU is the modelled CPU each kind of thread has spent in
// callbacks so far, sorted by kind (model.ThreadCPU): what the callbacks
// themselves did (a spawn or a thread's start included, in the callback
// that made it). What the real world's accounting of a callback leaves
// out is left out here too: the thread's dispatch (CPUConfig.Callback,
// CallbackByConns), the accounting itself (Account) and a woken thread's
// wake-up (WakeupCPU).
func (w *World) ThreadCPU() []model.ThreadCPU {
	out := make([]model.ThreadCPU, 0, len(w.threadKinds))
	for _, tc := range w.threadKinds {
		out = append(out, *tc)
	}
	slices.SortFunc(out, func(a, b model.ThreadCPU) int { return strings.Compare(a.Thread, b.Thread) })
	return out
}

// wakeDelay is how long a blocked thread takes to run after being woken
// (CPUConfig.Wakeup); zero when t is the thread running now, which needs
// no wake-up.
func (w *World) wakeDelay(t *thread) time.Duration {
	if w.running == t || w.cfg.CPU.Wakeup|w.cfg.CPU.WakeupSpread == 0 {
		return 0
	}
	return w.drawWakeDelay()
}

func (w *World) drawWakeDelay() time.Duration {
	cfg := &w.cfg.CPU
	d := cfg.Wakeup
	if cfg.WakeupSpread > 0 {
		d += time.Duration(w.cpuRand.Int64N(int64(cfg.WakeupSpread)))
	}
	return d
}

// wait advances the running callback's clock by d spent blocked in a
// device (fsync): its thread is busy, but uses no CPU.
func (w *World) wait(d time.Duration) {
	if w.running != nil {
		w.ctx += d
		w.waited += d
	}
}

// charge adds modelled CPU time to the callback now running.
func (w *World) charge(d time.Duration) {
	if w.running != nil {
		w.ctx += d
		if w.ctx > w.sliceEnd {
			w.preempt()
		}
	}
}

// cpu is a set of cores shared by threads (one process's, or a whole
// host's). A thread that wants a core when none is free waits in line;
// when a core frees, the head of the line runs, so many runnable threads
// cost one wake-up each instead of a thundering herd.
type cpu struct {
	w     *World
	cores []time.Duration // when each core is next free
	// holder is the loop that went idle on each core and holds it until
	// cores[i] (CPUConfig.SyscallHold), or nil.
	holder []*thread
	// holdFrom is when core i's holder's last callback, and its wake-up's
	// CPU, ended: the hold runs from then (hold).
	holdFrom []time.Duration
	// kept is the loop that ran a callback on each core with more work
	// queued and runs its next there, ahead of the line (Loop.keep;
	// nil: none).
	kept   []*thread
	slices *slicer // nil: the machine is this world's alone
	waitQ  []waiter
	// wakeArmed: a wake is queued. Nothing cancels it, so it is a
	// pooled event and wakeF is c.wake bound once.
	wakeArmed bool
	wakeAt    time.Duration // when the queued wake is due
	wakeF     func()
	// waking: wake is handing a core to the head of waitQ, whose
	// dispatch may take it past the others (a pool: for each item it
	// can start). The events that callbacks of the dispatch run
	// (interleave) do not have the pass: they wait in line as any
	// other.
	waking bool

	// The runtime poller (CPUConfig.Poller): polling is when a core's
	// thread waits in it, from then on (noPoller: none does); missed
	// are parked loops with work that no processor has found yet, and
	// sysmon is set while sysmon's poll for them is due.
	polling  time.Duration
	missed   []*Loop
	sysmon   bool
	sysmonAt time.Duration
	sysmonF  func()

	// Stacked wake-ups (CPUConfig.StackBalance). A core is parked when
	// its thread went to sleep: idleAt is when its last thread ran out of
	// work (-1 while a thread runs on it), and it slept then if no thread
	// was waiting for a core (waitSince: since when one has been). A
	// thread handed work while another core is busy that would take a
	// parked core is stacked behind the busy one instead: it waits for a
	// core, and the parked core is unusable until stackedUntil (then the
	// balancer has moved the thread there). Only one core is stacked at a
	// time, as Go wakes one thread at a time. A stack ends when a thread
	// runs out of work with none waiting for a core (idle: the busy
	// core's thread sleeps and the stacked one runs there), or at
	// stackedUntil. A waiter that takes the busy core as it frees does
	// not end it: the busy core's thread ran that work without sleeping,
	// and the thread woken for the parked core still waits behind it.
	stacking     bool // StackBalance > 0, with Poller (idle parks the cores)
	idleAt       []time.Duration
	waitSince    time.Duration
	stackedUntil []time.Duration

	// A woken thread's wake-up CPU on an idle core (spinTail): core i,
	// free from freeFrom[i], spins from spinFrom[i] to cores[i]
	// (spinning[i]), and owes the part of a spin a thread cut short by
	// taking it (owed[i], paid after that thread's callback). inCB[i] is
	// set while a callback runs on core i, whose clock may pass cores[i].
	// spins: a wake-up's CPU may go to an idle core (Poller); without
	// it no core ever spins. On a shared machine (host slices) a spin
	// starts only on a core in one of its slices, and its CPU runs in
	// them (slicer.finish, slicer.busy).
	spins    bool
	spinning []bool
	freeFrom []time.Duration
	spinFrom []time.Duration
	owed     []time.Duration
	inCB     []bool

	// checkCores (set by tests) asserts that a callback starts on a core
	// only once the one before on it has ended, with its owed spin and
	// a wake-up's CPU kept there (workEnd); the first breach is kept in
	// overlap.
	checkCores bool
	workEnd    []time.Duration
	overlap    string
}

// noPoller is cpu.polling when no core waits in the poller.
const noPoller = time.Duration(-1)

// sysmonPoll is how often Go's sysmon polls the network when no thread
// waits in the poller (runtime.sysmon: lastpoll older than 10 ms).
const sysmonPoll = 10 * time.Millisecond

// pollerWake is when parked loop l, given work now, starts (CPUConfig.Poller),
// or false when it was missed and waits for a core to go idle.
func (c *cpu) pollerWake(l *Loop) (time.Duration, bool) {
	w, cfg := c.w, &c.w.cfg.CPU
	now := w.Now()
	switch {
	case c.polling != noPoller && c.polling <= now:
		c.polling = noPoller
		return now + c.pollerDelay(), true
	case c.polling != noPoller:
		// A core is on its way to idle: it finds l as it polls.
		t := c.polling
		c.polling = noPoller
		return t + cfg.PollerMissed, true
	}
	l.missedAt = now
	c.missed = append(c.missed, l)
	if !c.sysmon {
		// (Go's sysmon polls once the poller has not been polled for
		// 10 ms; this counts from the first loop missed.)
		c.sysmon, c.sysmonAt = true, now+sysmonPoll
		w.post(c.sysmonAt, c.sysmonF)
	}
	return 0, false
}

// pollerDelay is how long a loop given work waits for the thread in the
// poller to run it: PollerWake plus a draw from [0, PollerWakeSpread).
func (c *cpu) pollerDelay() time.Duration {
	cfg := &c.w.cfg.CPU
	d := cfg.PollerWake
	if cfg.PollerWakeSpread > 0 {
		d += time.Duration(c.w.cpuRand.Int64N(int64(cfg.PollerWakeSpread)))
	}
	return d
}

// idle is core i's thread parking at t with nothing of its own to run:
// it polls, finding the loops missed so far, or else, if no other thread
// waits for a core, waits in the poller itself (CPUConfig.Poller).
//
// Go polls on the way to idle only once its run queues are empty, but
// the sim's line of threads waiting for a core is not Go's run queue:
// the real loops yield after every callback and park as soon as their
// epoll is empty, so Go's queues drain far more often than that line
// does. Requiring an empty line starved parked loops: 128
// thread-per-connection transfers ran about 17 at a time in sim, where
// real runs all 128 at once (validate's read-fds-threaded).
func (c *cpu) idle(i int, t time.Duration) {
	if !c.w.cfg.CPU.Poller {
		return
	}
	if c.stacking && len(c.waitQ) == 0 && len(c.missed) == 0 {
		// No thread waits for a core: this thread sleeps, the stacked
		// one runs on its CPU, and no stack is left.
		clear(c.stackedUntil)
	}
	if len(c.missed) > 0 && c.found(t+c.w.cfg.CPU.PollerMissed, true) {
		// The thread found missed loops as it polled and runs them: it
		// does not sleep, so its core is not parked (until a thread
		// runs out of work on it again).
		if c.stacking {
			c.idleAt[i] = -1
		}
		return
	}
	if c.stacking {
		// The thread sleeps once the core frees: after the wake-up's
		// CPU (WakeupCPU) when it was woken and no other core was idle
		// to spin it, or the rest of a spin a callback cut short
		// (takeSpinning), as Go's scheduler looks for work first, and
		// finds what is queued meanwhile.
		c.idleAt[i] = max(t, c.cores[i])
	}
	if len(c.waitQ) > 0 {
		return
	}
	if c.polling == noPoller || t < c.polling {
		c.polling = t
	}
}

// found dispatches the loops missed by t at t, or at sysmon's poll if
// that comes first. It reports whether the thread going idle (idling)
// found one to run then, rather than sleeping in the poller until one
// is handed work.
//
// A loop can be missed later than t: a long callback's clock runs ahead
// of the events, so a loop it posts to at its 15th millisecond is missed
// before sysmon's poll at its 12th, or the idle of another core at its
// 5th, is run. No core finds that loop before it was missed. A core
// going idle (idling) polls from t on and wakes as the loop is handed
// its work; sysmon's poll leaves it for its next poll.
func (c *cpu) found(t time.Duration, idling bool) (runs bool) {
	polled := t
	if c.sysmon {
		t = min(t, c.sysmonAt)
	}
	// A loop posted at t runs on the idling core unless sysmon's poll,
	// due first, takes it.
	idlerPolls := idling && t == polled
	kept := c.missed[:0]
	for _, l := range c.missed {
		switch {
		case l.dead():
			l.scheduled = false
			l.unkeep()
		case l.missedAt <= t:
			c.w.post(max(t, c.w.now), l.dispatchF)
			runs = runs || idlerPolls
		case idling && l.missedAt <= polled:
			c.w.post(polled, l.dispatchF)
			runs = true
		case idling:
			c.w.post(l.missedAt+c.w.cfg.CPU.PollerWake, l.dispatchF)
		default:
			kept = append(kept, l)
		}
	}
	clear(c.missed[len(kept):])
	c.missed = kept
	if len(kept) == 0 {
		c.sysmon = false
		return
	}
	if !c.sysmon {
		c.sysmon, c.sysmonAt = true, max(t, c.w.now)+sysmonPoll
		c.w.post(c.sysmonAt, c.sysmonF)
	}
	return runs
}

// sysmonPoll is sysmon's network poll: it finds the missed loops.
func (c *cpu) sysmonPollNow() {
	if !c.sysmon || c.w.now != c.sysmonAt {
		return // the loops were found before; a later poll is due
	}
	c.sysmon = false
	c.found(c.w.now, false)
}

func newCPU(w *World, n int) *cpu {
	c := &cpu{w: w, cores: make([]time.Duration, n), holder: make([]*thread, n), holdFrom: make([]time.Duration, n), kept: make([]*thread, n), slices: newSlicer(w, n), polling: 0,
		stacking: w.cfg.CPU.StackBalance > 0 && w.cfg.CPU.Poller, idleAt: make([]time.Duration, n), stackedUntil: make([]time.Duration, n),
		spinning: make([]bool, n), freeFrom: make([]time.Duration, n), spinFrom: make([]time.Duration, n), owed: make([]time.Duration, n), inCB: make([]bool, n), workEnd: make([]time.Duration, n)}
	c.spins = w.cfg.CPU.Poller
	c.wakeF = c.wake
	c.sysmonF = c.sysmonPollNow
	return c
}

// free returns a core that is free now. Threads already waiting go first,
// so a thread that keeps finding work cannot hog a core.
//
// On a shared machine (slices.go) a thread that was runnable waits for its
// core's next slice, but one just woken from sleep preempts the other
// process, as Linux's wake-up preemption lets a sleeper do.
//
// A loop that still holds the core it went idle on (SyscallHold) takes it
// back at once, ahead of the line, as a goroutine returning from a system
// call takes back the processor it kept.
//
// A woken thread t whose last core (t.lastCore) is parked runs there at
// once, rather than stacking behind a busy core: this VM shows the kernel
// no shared cache, so each CPU is its own last-level-cache domain
// (sd_llc_size 1), wake_wide() holds for any two threads that have each
// woken more than one partner, and such a wake-up goes to the wakee's
// previous CPU (select_task_rq_fair without want_affine). Where the
// previous core is busy the thread waits behind it, as stacks has it.
func (c *cpu) free(t *thread, woken bool) (int, bool) {
	if i, ok := c.takeHeld(t); ok {
		return i, true
	}
	prev := 0
	if t != nil {
		prev = t.lastCore
	}
	now := c.w.now
	if len(c.waitQ) > 0 && !c.waking {
		return 0, false
	}
	if i, ok := c.takeSpinning(now, woken); ok {
		return i, true
	}
	parked, prevParked := -1, -1
	for i, at := range c.cores {
		if at > now || c.waitsForSlice(i, now, woken) || c.kept[i] != nil {
			continue
		}
		if c.stacking {
			switch until := c.stackedUntil[i]; {
			case until > now:
				continue // a thread is stacked for it
			case until > 0:
				// The stack expired: the balancer has moved the
				// stacked thread here.
				c.stackedUntil[i] = 0
			case c.parkedAt(i, now):
				if parked < 0 {
					parked = i
				}
				if prev == i+1 {
					prevParked = i
				}
				continue
			}
		}
		c.take(i)
		return i, true
	}
	if prevParked >= 0 {
		c.take(prevParked)
		return prevParked, true
	}
	if parked < 0 || c.stacks(parked, now) {
		return 0, false
	}
	c.take(parked)
	return parked, true
}

// spinTail puts the wake-up CPU d of a thread woken for the callback that
// ran on core and ended at end: on a core idle by then, with the Go
// runtime's model (Poller), else after the callback on core itself.
//
// WakeupCPU is the scheduler's work around a wake-up (switching the
// woken thread in and out, looking for more work). After the callback,
// on the woken thread's own core, it lay on every hop of a serial
// chain: a one-client read ran all its callbacks on one core, 8.4 µs
// after each woken one, 134 µs a read where real takes 86–95 at more
// CPU, real's one client keeping 1.5 cores busy (Go's spinning
// threads look for work on the other CPU while the chain's thread runs
// the next goroutine itself). On an idle core the spin is off the
// chain, and the CPU an op is the same.
//
// On a shared machine (--host-steal) the spin goes only to a core in one
// of its slices at end (one in a gap is the other process's), and lasts
// d of that core's slices. Until 4 December host slices turned the rule
// off: validate, which slices by default when the host withheld
// anything, simulated a one-client read at 134 µs with 0.2% withheld and
// at 117 µs with none.
func (c *cpu) spinTail(core int, end, d time.Duration) {
	if c.spins {
		now := c.w.now
		for k, at := range c.cores {
			if k == core || at > end || !c.unclaimed(k, end) || c.slices.runnable(k, now, end) != end {
				continue
			}
			c.freeFrom[k], c.spinFrom[k] = at, end
			c.cores[k], c.spinning[k] = c.slices.finish(k, now, end, d), true
			return
		}
	}
	c.cores[core] = c.slices.finish(core, c.w.now, c.cores[core], d)
}

// takeSpinning gives a thread asking for a core now one that spins a
// wake-up's CPU (spinTail), or is free until its spin: the spinning
// thread finds the work, with no wake-up and no stack. The rest of the
// spin is owed, and paid after the thread's callback, so the CPU stays
// what the profile says it is. A core a stacked thread is due on is not
// taken (free would refuse it too: cpu.wake's trial call and the
// waiter's own must agree). On a shared machine a spin paused in its
// core's gap is the other process's turn: only a thread just woken
// takes it then, preempting, as free lets it take an idle core there.
func (c *cpu) takeSpinning(now time.Duration, woken bool) (int, bool) {
	if !c.spins {
		return 0, false // (check's costs: no core ever spins)
	}
	for i, at := range c.cores {
		if !c.spinning[i] || at <= now || c.freeFrom[i] > now || !c.unclaimed(i, now) || c.waitsForSlice(i, now, woken) {
			continue
		}
		c.owed[i] += c.slices.busy(i, now, max(now, c.spinFrom[i]), at)
		c.cores[i], c.spinning[i] = now, false
		c.take(i)
		return i, true
	}
	return 0, false
}

// waitsForSlice reports whether a thread asking for core i now must wait
// for the core's next slice (slices.go): it is between slices, and the
// thread was not just woken (one that was preempts the other process).
// free and takeSpinning ask the same.
func (c *cpu) waitsForSlice(i int, now time.Duration, woken bool) bool {
	return c.slices != nil && !woken && c.slices.runnable(i, now, now) != now
}

// unclaimed reports whether core i is no one's at t but whoever asks: no
// callback runs on it, no loop keeps or holds it, and no stacked thread
// is due on it (a spin may go there, or a thread take its spin).
func (c *cpu) unclaimed(i int, t time.Duration) bool {
	return !c.inCB[i] && c.kept[i] == nil && c.holder[i] == nil && !(c.stacking && c.stackedUntil[i] > t)
}

// heldBusy is when the core t holds (hold) has finished t's own wake-up
// CPU, if that is still to come: until then the core is not free, not
// even for t, and the hold stands.
func (c *cpu) heldBusy(t *thread) (time.Duration, bool) {
	if t == nil || t.held == 0 {
		return 0, false
	}
	i := t.held - 1
	return c.holdFrom[i], c.holder[i] == t && c.holdFrom[i] > c.w.now
}

// take gives core i to the thread asking for it.
func (c *cpu) take(i int) {
	c.holder[i] = nil
	if c.stacking {
		c.idleAt[i] = -1
	}
}

// parkedAt reports whether core i, free by t, is parked then: its thread
// ran out of work and no thread was waiting for a core.
func (c *cpu) parkedAt(i int, t time.Duration) bool {
	at := c.idleAt[i]
	return at >= 0 && at <= t && (len(c.waitQ) == 0 || at < c.waitSince)
}

// stacks decides whether the thread asking for a core now, with only
// parked core i free, is stacked (CPUConfig.StackBalance): it was handed
// work while another core is busy, and Go's wake-up of a sleeping thread
// for it queues that thread behind the busy CPU. Then core i stays
// unusable until the stack ends. While one core is stacked every other
// such thread waits too: Go wakes one thread at a time, and the stacked
// one counts as on its way. A loop woken through the poller stacks as
// any other: the stack probe that measures StackBalance is goroutine
// pairs woken through the poller alone, and one such pair kept one CPU
// (1.02 cores of real run pairs --pairs 1 on 2 December; the sim, with
// poller wakes spared, gave 1.55).
func (c *cpu) stacks(i int, now time.Duration) bool {
	for _, until := range c.stackedUntil {
		if until > now {
			return true
		}
	}
	if !c.otherBusy(i, now) {
		return false
	}
	c.stackedUntil[i] = now + c.w.cfg.CPU.StackBalance
	return true
}

// otherBusy reports whether a core other than i is busy past now. (A
// callback in progress counts: interleave marks its core busy past its
// clock while other events run, and free runs only from events.)
func (c *cpu) otherBusy(i int, now time.Duration) bool {
	for j, t := range c.cores {
		if j != i && t > now {
			return true
		}
	}
	return false
}

// takeHeld ends the hold of loop t on its core (SyscallHold) and returns
// the core, if t still holds it.
func (c *cpu) takeHeld(t *thread) (int, bool) {
	if t == nil || t.held == 0 {
		return 0, false
	}
	if _, busy := c.heldBusy(t); busy {
		return 0, false
	}
	i := t.held - 1
	t.held = 0
	if c.holder[i] != t {
		return 0, false
	}
	c.holder[i] = nil
	if c.cores[i] <= c.w.now {
		return 0, false
	}
	c.cores[i] = c.w.now
	return i, true
}

// hold keeps core i from other threads after it frees, for loop t, which
// went idle on it (CPUConfig.SyscallHold).
func (c *cpu) hold(t *thread, i int) {
	cfg := &c.w.cfg.CPU
	if cfg.SyscallHold <= 0 && cfg.SyscallHoldSpread <= 0 {
		return
	}
	d := cfg.SyscallHold
	if cfg.SyscallHoldSpread > 0 {
		d += time.Duration(c.w.cpuRand.Int64N(int64(cfg.SyscallHoldSpread)))
	}
	c.holdFrom[i] = c.cores[i]
	c.cores[i] += d
	c.holder[i] = t
	t.held = i + 1
}

// waiter is a thread of process p waiting for a core; dispatch starts it.
// The line is in the order the threads became runnable (arrival).
type waiter struct {
	p        *Process
	dispatch func()
	arrival  uint64
}

// wait queues a thread in the order threads became runnable
// (World.arrive): behind every thread that became runnable before it.
// That is the back of the line, except for a thread whose dispatch
// waited out a callback of its process (deferDispatch stamped its
// *arrival) while others queued: it keeps the turn it had. The turn is
// used up (*arrival is 0 again). Threads put at the head out of turn
// (waitFront) carry arrival 0, below every stamp, so none is passed.
func (c *cpu) wait(p *Process, dispatch func(), arrival *uint64) {
	if *arrival == 0 {
		*arrival = c.w.arrive()
	}
	if len(c.waitQ) == 0 {
		c.waitSince = c.w.now
	}
	i := len(c.waitQ)
	for i > 0 && c.waitQ[i-1].arrival > *arrival {
		i--
	}
	c.waitQ = slices.Insert(c.waitQ, i, waiter{p, dispatch, *arrival})
	*arrival = 0
	c.armWake()
}

// waitFront queues a thread ahead of the others: a thread woken by a lock
// it waited for preempts, as Linux's wake-up preemption lets it.
func (c *cpu) waitFront(p *Process, dispatch func()) {
	if len(c.waitQ) == 0 {
		c.waitSince = c.w.now
	}
	c.waitQ = slices.Insert(c.waitQ, 0, waiter{p, dispatch, 0})
	c.armWake()
}

func (c *cpu) armWake() {
	if c.wakeArmed || len(c.waitQ) == 0 {
		return
	}
	now := c.w.now
	// While a core is stacked, a parked one is no use either (stacks).
	var stackEnd time.Duration
	if c.stacking {
		stackEnd = slices.Max(c.stackedUntil)
	}
	first := time.Duration(-1)
	for i, t := range c.cores {
		if c.kept[i] != nil {
			continue // its loop hands it back when it stops (Loop.unkeep)
		}
		if c.spinning[i] && !c.inCB[i] && c.holder[i] == nil {
			// A waiter takes a spinning core (takeSpinning).
			t = min(t, c.freeFrom[i])
		}
		t = c.slices.runnable(i, now, max(t, now))
		if c.stacking {
			t = max(t, c.stackedUntil[i])
			if c.parkedAt(i, t) {
				t = max(t, stackEnd)
			}
		}
		if first < 0 || t < first {
			first = t
		}
	}
	if first < 0 {
		return // every core is kept
	}
	c.wakeArmed, c.wakeAt = true, first
	c.w.post(first, c.wakeF)
}

// wakeSooner has the waiting threads look for a core by t (a core the
// line passed over while a loop kept it is theirs again then). The wake
// it replaces, if later, finds itself superseded and does nothing: one
// wake is ever live, not a chain per post.
func (c *cpu) wakeSooner(t time.Duration) {
	if len(c.waitQ) == 0 || c.wakeArmed && c.wakeAt <= t {
		return
	}
	c.wakeArmed, c.wakeAt = true, t
	c.w.post(t, c.wakeF)
}

func (c *cpu) wake() {
	if !c.wakeArmed || c.w.now != c.wakeAt {
		return // superseded by a sooner wake (wakeSooner)
	}
	c.wakeArmed = false
	skipped := 0
	for skipped < len(c.waitQ) {
		wt := c.waitQ[skipped]
		if wt.p != nil && wt.p.active > 0 {
			// This wake runs inside a callback of the thread's
			// process (interleave), which the process's threads do
			// not enter: the thread keeps its place, and the line is
			// woken again when the callback ends (runOn). Handed the
			// core and sent to the back instead, a process whose
			// callbacks ran whenever a wake did lost its turn over and
			// over: with seven pairs and no profile, one pair traded
			// for 100 ms while six server connections never replied.
			skipped++
			continue
		}
		c.waking = true
		if _, ok := c.free(nil, false); !ok {
			break
		}
		if skipped == 0 && len(c.waitQ) > 16 {
			// The head of a long line: no copy of it.
			c.waitQ[0] = waiter{}
			c.waitQ = c.waitQ[1:]
		} else {
			// A short line (nearly always) is shifted down, so it keeps
			// its array's start and the next waits append into it
			// (sliced past the head, a line of one or two walked off its
			// array's end every few waits and allocated a new one).
			c.waitQ = slices.Delete(c.waitQ, skipped, skipped+1)
		}
		wt.dispatch()
	}
	c.waking = false
	if skipped < len(c.waitQ) {
		c.armWake()
	}
}

// runOn runs fn as a callback of thread t on core c, starting now; it
// returns when the callback's virtual time ends.
func (w *World) runOn(t *thread, core int, fn func()) time.Duration {
	start := w.now
	t.lastCore = core + 1
	w.running, w.core = t, core
	w.ctx = start
	w.waited = 0
	w.sliceEnd, w.sliceWait = noSliceEnd, 0
	if sl := t.p.cpu.slices; sl != nil {
		w.sliceEnd = sl.at(core, start, start).end
	}
	p := t.p
	woken := t.woken
	t.woken = false
	p.active++
	p.bumpEpoch()
	// The dispatch and the accounting: the thread's, but outside the
	// callback proper (in the real world they run around what its
	// accounting measures), so not its kind's (ThreadCPU).
	dispatch := w.cfg.CPU.Callback + w.callbackByConns() + w.cfg.CPU.Account
	w.charge(dispatch)
	if c := p.cpu; c.checkCores && c.overlap == "" && (c.inCB[core] || start < c.workEnd[core]) {
		c.overlap = fmt.Sprintf("%s/%s starts on core %d at %v, in a callback %v, the one before ending at %v", p.name, t.name, core, start, c.inCB[core], c.workEnd[core])
	}
	t.inCB = true
	p.cpu.inCB[core] = true
	fn()
	p.cpu.inCB[core] = false
	t.inCB = false
	p.active--
	// Again at the end: events interleaved into fn may have looked at
	// the process half-way.
	p.bumpEpoch()
	end := w.ctx
	w.running = nil
	w.reached = max(w.reached, end)
	// Time blocked in a device is the thread's but not its core's: the
	// core is free for others as if the wait came at the callback's end.
	used := end - start - w.sliceWait - w.waited
	p.cpuTime += used
	t.kind.Callbacks++
	t.kind.CPU += used - dispatch
	w.sliceWait = 0
	t.busyUntil = end
	// A spin cut short on this core is paid now (takeSpinning).
	p.cpu.cores[core] = end - w.waited
	if owed := p.cpu.owed[core]; owed > 0 {
		// In the core's slices, as the spin it was cut from.
		p.cpu.cores[core] = p.cpu.slices.finish(core, w.now, end-w.waited, owed)
	}
	p.cpu.owed[core], p.cpu.spinning[core] = 0, false
	if woken && w.cfg.CPU.WakeupCPU > 0 {
		// The wake-up's CPU beyond its latency (switching out, Go's
		// scheduler looking for work) keeps a core busy after the
		// callback: an idle one if there is one (spinTail); the
		// callback's effects do not wait for it.
		p.cpu.spinTail(core, end-w.waited, w.cfg.CPU.WakeupCPU)
		p.cpuTime += w.cfg.CPU.WakeupCPU
	}
	if p.cpu.checkCores {
		p.cpu.workEnd[core] = p.cpu.cores[core]
	}
	if p.active == 0 && len(p.cpu.waitQ) > 0 {
		// Threads the line passed over while p was in the callback
		// (cpu.wake) may have their turn now.
		p.cpu.armWake()
	}
	if p.active == 0 && len(p.deferred) > 0 {
		for i, d := range p.deferred {
			w.post(d.at, d.fn)
			p.deferred[i] = deferredDispatch{}
		}
		p.deferred = p.deferred[:0]
	}
	return end
}

// callbackByConns is the callback's cost for the connections open now
// (CPUConfig.CallbackByConns), worked out again only when the number of
// sockets has changed since (the config cannot change in a world's life).
// (Small enough to inline: it costs runOn a compare.)
func (w *World) callbackByConns() time.Duration {
	if w.sockets != w.cbSockets {
		w.rescaleCallback()
	}
	return w.cbSocketsCost
}

func (w *World) rescaleCallback() {
	w.cbSockets, w.cbSocketsCost = w.sockets, 0
	if by := w.cfg.CPU.CallbackByConns; by != ([3]time.Duration{}) {
		w.cbSocketsCost = connScale(by, float64(w.sockets)/2)
	}
}

// connScale interpolates by, the costs at 8, 32 and 128 connections, at
// conns, in log2 of the connections: 0 at one or fewer, flat past 128.
func connScale(by [3]time.Duration, conns float64) time.Duration {
	if conns <= 1 {
		return 0
	}
	x := math.Log2(conns)
	lo, hi := 0.0, 0.0 // log2 of the connections at the ends of x's span
	var from, to time.Duration
	switch {
	case x <= 3:
		lo, hi, from, to = 0, 3, 0, by[0]
	case x <= 5:
		lo, hi, from, to = 3, 5, by[0], by[1]
	case x <= 7:
		lo, hi, from, to = 5, 7, by[1], by[2]
	default:
		return by[2]
	}
	return from + time.Duration(float64(to-from)*(x-lo)/(hi-lo))
}

// deferDispatch holds back a dispatch of one of p's threads that came due
// while p is inside a callback (interleave); runOn queues it again at
// its time when the callback ends. The thread became runnable now: its
// *arrival, unless already stamped, records its turn in the line for a
// core (cpu.wait).
func (p *Process) deferDispatch(fn func(), arrival *uint64) {
	if *arrival == 0 {
		*arrival = p.w.arrive()
	}
	p.deferred = append(p.deferred, deferredDispatch{at: p.w.now, fn: fn})
}

// interleave runs, before a syscall of the running callback takes effect,
// the events due by the callback's clock: other processes' callbacks on
// other cores, timers, deliveries. It is what lets a peer read and ACK
// between two writes of one handler, as a process on another core of a
// real machine does. The running thread keeps its core, its process is
// not re-entered (its threads' dispatches are deferred), events from
// outside the model (At: faults, harness phases) are barriers, and no
// event later than the earliest clock among the callbacks in progress
// runs, so nested interleaving never gets ahead of an interrupted caller.
func (w *World) interleave() {
	// Every syscall comes here, and mostly nothing is due: the first
	// event is the fifo's or the heap's (whose queued key is no later
	// than its own), and the limit below is at most the callback's
	// clock, so this test is exact and keeps the call inlined. Outside
	// a callback ctx is stale, and interleaveDue returns at once.
	if w.fifoAt <= w.ctx || len(w.queue) > 0 && w.queue[0].at <= w.ctx {
		w.interleaveDue()
	}
}

func (w *World) interleaveDue() {
	t := w.running
	if t == nil || !w.cfg.Interleave || w.inSoftirq {
		return
	}
	limit := w.ctx
	if w.depth > 0 && w.capAt < limit {
		limit = w.capAt
	}
	if w.runEnd > 0 && limit > w.runEnd {
		limit = w.runEnd
	}
	if w.waited > 0 {
		// Time blocked in a device is not its core's: once the
		// callback ends its core is free from end − waited (runOn),
		// and threads waiting for a core run from then. The world
		// must not have run past that, or they would act, at their
		// time, on what happened after it.
		limit = min(limit, w.ctx-w.waited)
	}
	if ev := w.first(); ev == nil || ev.at > limit || ev.barrier {
		return
	}
	ctx, core, now, capAt := w.ctx, w.core, w.now, w.capAt
	sliceEnd, sliceWait, waited := w.sliceEnd, w.sliceWait, w.waited
	// Busy past limit: nothing run below may start on this core.
	t.p.cpu.cores[core] = ctx + 1
	// A wake's pass to the head of the line (cpu.waking) is not for the
	// threads the events below make runnable.
	pass := t.p.cpu.waking
	t.p.cpu.waking = false
	w.depth++
	w.capAt = limit
	for !w.stopped && w.events < w.cfg.MaxEvents {
		ev := w.first()
		if ev == nil || ev.at > limit || ev.barrier {
			break
		}
		w.take(ev)
		if ev.dead {
			w.freeEvent(ev)
			continue
		}
		w.running = nil
		w.now = ev.at
		w.events++
		w.fire(ev)
	}
	t.p.cpu.waking = pass
	w.depth--
	w.running, w.ctx, w.core, w.now, w.capAt = t, ctx, core, now, capAt
	w.sliceEnd, w.sliceWait, w.waited = sliceEnd, sliceWait, waited
}

// Loop is a simulated event loop (a selector thread). It implements
// model.Loop.
type Loop struct {
	thread
	gen       int
	epfd      int
	evfd      int
	queue     []task
	head      int
	scheduled bool
	closed    bool
	boost     bool // next wait for a core goes to the front (woken by a lock)
	// timers counts the loop's timers that its process's Resources count
	// (armed, or due and queued): Close takes them all off at once, as
	// the real world frees a closed loop's timers.
	timers int
	// arrival is when the loop became runnable (World.arrive), kept while
	// its dispatch waits out a callback of its process; 0 otherwise.
	arrival   uint64
	dispatchF func() // l.dispatch, bound once: a wake-up allocates nothing
	// missedAt is when the loop was handed work that no core's poller
	// saw (cpu.pollerWake); no core finds it before then.
	missedAt time.Duration
	// parked: the loop has run a callback, so it waits for work in the
	// poller. Handed work in the callback that made it (bornAt), it is
	// a goroutine just started, which Go makes runnable at once and
	// wakes an idle core for (newproc's wakep): the poller plays no
	// part. Later its goroutine has parked in the poller, callback or
	// not.
	parked bool
	bornAt time.Duration
	// keptCore is 1 + the core the loop kept after a callback to run its
	// next one there (0: none); runSince is when it took a core from the
	// line, so how long it has run without parking.
	keptCore int
	runSince time.Duration
}

// goPreempt is how long Go lets a goroutine run before sysmon preempts
// it (the runtime's forcePreemptNS): a loop that keeps finding work keeps
// its core for that long.
const goPreempt = 10 * time.Millisecond

// sysmonRetake is how long a thread may stay in a system call before
// Go's sysmon hands its processor to other goroutines (retake): the
// goroutine then queues for one again when the call returns.
const sysmonRetake = 20 * time.Microsecond

// keep has the loop, which just ran a callback on core c and has more
// queued, run the next there, ahead of every thread waiting for a core
// (CPUConfig.Poller). A real-world loop runs every event one epoll_wait
// returns, and polls again without parking while more are ready: its
// goroutine keeps its processor until it runs out of work, or Go
// preempts it after goPreempt. Sending it back to the end of the line
// after each callback made a busy loop wait behind every client for
// each of its callbacks: run read's one selector then bounded 32
// clients at 1.2 of 2 cores, where real used 1.7.
//
// A callback of sysmonRetake or more does not keep its core: the
// model's long callbacks are system calls (a sendfile, a large write or
// read), and Go gives the processor of a thread that long in one to
// other goroutines. (Kept after those too, 32 thread-per-connection
// transfers of 2 MiB each ran 16 at a time; real runs all 32.)
func (l *Loop) keep(c int, end, ran time.Duration) bool {
	if !l.p.w.cfg.CPU.Poller || end-l.runSince >= goPreempt || ran >= sysmonRetake {
		return false
	}
	l.p.cpu.kept[c] = &l.thread
	l.keptCore = c + 1
	return true
}

// unkeep hands the loop's kept core back to the line.
func (l *Loop) unkeep() {
	if l.keptCore == 0 {
		return
	}
	cpu := l.p.cpu
	k := l.keptCore - 1
	l.keptCore = 0
	cpu.kept[k] = nil
	// The line passed over it while it was kept.
	cpu.wakeSooner(max(cpu.cores[k], cpu.w.now))
}

type task struct {
	fn     func()
	onDrop func() // called if the loop closes before the task runs
	lock   *Lock  // fn runs under lock (Lock.Do): no closure per Do
	timer  *Timer
	conn   readyConn
}

// drop clears a run task's references, field by field and only those
// set, so its closures can go. Clearing the whole struct was a bulk write
// barrier over all six pointer words on every task while the collector
// marked (with one processor, about 17 ms of every 60): 6% of
// BenchmarkSimEvents at GOMAXPROCS 1. Leaving it uncleared was slower
// still, the closures staying alive.
func (t *task) drop() {
	if t.fn != nil {
		t.fn = nil
	}
	if t.onDrop != nil {
		t.onDrop = nil
	}
	if t.lock != nil {
		t.lock = nil
	}
	if t.timer != nil {
		t.timer = nil
	}
	if t.conn != nil {
		t.conn = nil
	}
}

// readyConn is a connection whose readiness the loop reports.
type readyConn interface {
	dispatchReady()
}

// Name implements model.Loop.
func (l *Loop) Name() string { return l.name }

// Process implements model.Loop.
func (l *Loop) Process() model.Process { return l.p }

// Now implements model.Loop.
func (l *Loop) Now() time.Duration { return l.p.w.Now() }

func (l *Loop) dead() bool { return l.closed || l.gen != l.p.gen }

func (l *Loop) enqueue(t task) {
	if l.dead() {
		return
	}
	l.queue = append(l.queue, t)
	l.wake()
}

func (l *Loop) wake() {
	if l.scheduled || l.dead() || l.head >= len(l.queue) {
		return
	}
	l.scheduled = true
	w := l.p.w
	at := l.busyUntil
	if now := w.Now(); at <= now && w.cfg.CPU.Poller && (l.inCB || l.keptCore > 0) {
		// Woken by an event run inside its own callback (interleave),
		// or keeping its core for its next callback (keep): the loop
		// is running, not parked in the poller, and looks at its epoll
		// again when the callback ends.
		at = now
	} else if at <= now {
		if w.cfg.CPU.Poller && w.running != &l.thread && (l.parked || now != l.bornAt) {
			var ok bool
			if at, ok = l.p.cpu.pollerWake(l); !ok {
				// Missed: cpu.found posts the dispatch. (A hop
				// through this path costs about the CPU of one
				// through a waiting poller: calibrate's two
				// probes.)
				l.scheduled = true
				l.woken = true
				return
			}
		} else {
			at = now + w.wakeDelay(&l.thread) // blocked in epoll_wait
		}
		if w.running != &l.thread {
			l.woken = true
			if w.inSoftirq {
				// A segment delivered in the sender's write woke
				// the loop: the sender pays the wake-up's share on
				// its side (CPUConfig.TCPWake).
				w.charge(w.cfg.CPU.TCPWake)
			}
		}
	}
	w.post(at, l.dispatchF)
}

func (l *Loop) dispatch() {
	if l.p.active > 0 {
		l.p.deferDispatch(l.dispatchF, &l.arrival)
		return
	}
	l.scheduled = false
	if l.dead() || l.head >= len(l.queue) {
		l.unkeep()
		return
	}
	w := l.p.w
	if at := max(l.busyUntil, l.p.pausedUntil); at > w.now {
		if l.p.pausedUntil > w.now {
			// A stopped thread holds no core: one it kept goes back to
			// the host's other threads for the pause.
			l.unkeep()
		}
		l.scheduled = true
		w.post(at, l.dispatchF)
		return
	}
	var c int
	var ok bool
	ran := true // a callback ran (not a timer stopped after it fired)
	if k := l.keptCore - 1; k >= 0 {
		if at := l.p.cpu.cores[k]; at > w.now {
			// The wake-up's CPU still runs on it (WakeupCPU), or the
			// rest of a spin its callback cut short (takeSpinning):
			// that is on the loop's way.
			l.scheduled = true
			w.post(at, l.dispatchF)
			return
		}
		// Still kept while the callback runs; keep or unkeep below.
		l.p.cpu.take(k)
		c, ok = k, true
	} else if at, busy := l.p.cpu.heldBusy(&l.thread); busy {
		// The core it holds still runs its wake-up's CPU: the thread
		// comes back from epoll_wait once it has switched out.
		l.scheduled = true
		w.post(at, l.dispatchF)
		return
	} else if c, ok = l.p.cpu.free(&l.thread, l.woken); ok {
		l.runSince = w.now
	}
	if !ok {
		l.scheduled = true
		if l.boost {
			l.p.cpu.waitFront(l.p, l.dispatchF)
		} else {
			l.p.cpu.wait(l.p, l.dispatchF, &l.arrival)
		}
		return
	}
	l.boost, l.arrival = false, 0
	l.parked = true
	t := l.queue[l.head]
	l.queue[l.head].drop()
	l.head++
	switch {
	case l.head == len(l.queue):
		l.queue, l.head = l.queue[:0], 0
	case l.head >= 64 && l.head >= len(l.queue)/2:
		// A busy loop may never drain its queue: slide the pending
		// tasks down so the array grows with what is queued, not with
		// every task ever run.
		n := copy(l.queue, l.queue[l.head:])
		clear(l.queue[n:])
		l.queue, l.head = l.queue[:n], 0
	}
	switch {
	case t.timer != nil:
		tm := t.timer
		tm.queued--
		if tm.stale > 0 || tm.stopped {
			// Stopped, or reset after it came due: as the timer a
			// fresh AfterFunc would have replaced.
			tm.stale = max(tm.stale-1, 0)
			ran = false
			break
		}
		tm.fired = true
		l.uncountTimer()
		w.runOn(&l.thread, c, tm.f)
	case t.conn != nil:
		// A TCP socket, the common case, is called directly.
		if tc, ok := t.conn.(*tcpConn); ok {
			w.runOn(&l.thread, c, tc.socketEvents.dispatch)
		} else {
			w.runOn(&l.thread, c, t.conn.dispatchReady)
		}
	case t.lock != nil:
		// (runOn does not keep fn, so this closure stays on the stack.)
		w.runOn(&l.thread, c, func() { t.lock.try(l, t.fn, false) })
	default:
		w.runOn(&l.thread, c, t.fn)
	}
	more := l.head < len(l.queue)
	if !more || !ran || !l.keep(c, l.busyUntil, l.busyUntil-w.now) {
		l.unkeep()
	}
	if more {
		l.wake()
		return
	}
	// Nothing more to do: the loop blocks in epoll_wait, and Go lets its
	// core go only when sysmon takes it back; or it parks in Go's
	// poller, and its core looks for other work. (Neither applies
	// with the hand-set costs: tested here, not in a call.)
	if cfg := &w.cfg.CPU; cfg.SyscallHold > 0 || cfg.SyscallHoldSpread > 0 {
		l.p.cpu.hold(&l.thread, c)
	}
	if w.cfg.CPU.Poller {
		l.p.cpu.idle(c, l.busyUntil)
	}
}

// AfterFunc implements model.Loop.
func (l *Loop) AfterFunc(d time.Duration, f func()) model.Timer {
	tm := &Timer{l: l, f: f}
	if l.dead() || f == nil {
		tm.stopped = true // (a nil f: stopped, as in the real world)
		return tm
	}
	l.countTimer()
	w := l.p.w
	// The timer's event lives in the timer: one allocation per
	// AfterFunc, not three. Only the timer holds it, and it is never
	// recycled.
	tm.ev = event{w: w, index: -1, timer: tm}
	w.schedule(&tm.ev, w.Now()+max(d, 0), nil)
	return tm
}

// countTimer and uncountTimer keep the process's count of pending timers
// and the loop's share of it.
func (l *Loop) countTimer() { l.p.timers++; l.timers++ }

func (l *Loop) uncountTimer() { l.p.timers--; l.timers-- }

// expire is the timer's event: the callback is queued on the loop.
func (tm *Timer) expire() {
	if !tm.stopped && !tm.l.dead() {
		tm.queued++
		tm.l.enqueue(task{timer: tm})
	}
}

// Post implements model.Loop. A nil f is dropped, as in the real world.
func (l *Loop) Post(f func()) {
	if f != nil {
		l.enqueue(task{fn: f})
	}
}

// Close implements model.Loop.
func (l *Loop) Close() {
	if l.closed {
		return
	}
	l.closed = true
	l.unkeep()
	for i := l.head; i < len(l.queue); i++ {
		if tm := l.queue[i].timer; tm != nil {
			tm.queued--
			if tm.stale > 0 {
				tm.stale-- // reset since: its new arming is not this task's
			} else if !tm.stopped {
				// Its f will never run, but it has not run either:
				// a Stop still reports true, as in the real world.
				tm.stopped, tm.dropped = true, true
			}
		}
		if d := l.queue[i].onDrop; d != nil {
			defer d()
		}
	}
	l.queue, l.head = nil, 0
	if l.gen == l.p.gen {
		// Its timers are freed, due or not: none will run, and a Stop
		// of one not yet due still reports true (Timer.Stop).
		l.p.timers -= l.timers
		l.timers = 0
		l.p.freeFD(l.epfd)
		l.p.freeFD(l.evfd)
		l.p.threads--
	}
}

// Timer implements model.Timer.
type Timer struct {
	l       *Loop
	f       func()
	ev      event
	stopped bool
	fired   bool
	// dropped: stopped by its loop's Close while it was due, its f never
	// run; the first Stop after that reports true.
	dropped bool
	// queued counts the timer's tasks in its loop's queue (it came due,
	// its callback not yet run); stale, how many of those a Reset has
	// made void since.
	queued, stale int32
}

// Reset implements model.Timer: Stop, then arm the same timer. A pending
// timer's event stays in the heap, re-keyed in place (World.schedule), so
// a deadline put back at every message costs no heap work; the order is
// what a new AfterFunc's would be.
func (t *Timer) Reset(d time.Duration) bool {
	l := t.l
	if l.dead() || t.f == nil {
		return t.Stop() // (nothing to run: it stays stopped, as in real)
	}
	was := !t.stopped && !t.fired
	if was {
		t.ev.disarm() // still counted in p.timers
	} else {
		l.countTimer()
	}
	t.stale = t.queued
	t.stopped, t.fired = false, false
	w := l.p.w
	w.schedule(&t.ev, w.Now()+max(d, 0), nil)
	return was
}

// Stop implements model.Timer.
func (t *Timer) Stop() bool {
	if t.dropped {
		t.dropped = false
		return true
	}
	if t.stopped || t.fired {
		return false
	}
	t.stopped = true
	t.ev.cancel()
	if !t.l.dead() {
		t.l.uncountTimer() // (a closed loop's went with it)
	}
	return true
}

// WorkerPool is a simulated pool of worker threads. It implements
// model.WorkerPool.
type WorkerPool struct {
	p       *Process
	name    string
	gen     int
	workers []*thread
	queue   []workItem
	kicked  bool
	closed  bool
	arrival uint64 // as Loop.arrival
	// wp.dispatch, bound once: a kick allocates nothing.
	dispatchF func()
}

func noWork() {}

type workItem struct {
	loop *Loop
	work func()
	done func()
}

// Submit implements model.WorkerPool.
func (wp *WorkerPool) Submit(loop model.Loop, work func(), done func()) {
	l, ok := loop.(*Loop)
	if !ok || wp.closed || wp.gen != wp.p.gen {
		return
	}
	if work == nil {
		work = noWork // as the real world's pool: done is still posted
	}
	wp.p.work++
	wp.queue = append(wp.queue, workItem{loop: l, work: work, done: done})
	wp.kick()
}

func (wp *WorkerPool) kick() {
	if wp.kicked {
		return
	}
	wp.kicked = true
	w := wp.p.w
	// Handing work to an idle worker wakes it.
	w.post(w.Now()+w.wakeDelay(nil), wp.dispatchF)
}

// dispatch starts queued work on idle workers. The work function runs at
// once, in virtual time from the worker's start; its completion reaches
// the submitting loop when the worker's modelled time ends.
func (wp *WorkerPool) dispatch() {
	if wp.p.active > 0 {
		wp.p.deferDispatch(wp.dispatchF, &wp.arrival)
		return
	}
	wp.kicked = false
	if wp.closed || wp.gen != wp.p.gen {
		return
	}
	w := wp.p.w
	if at := wp.p.pausedUntil; at > w.now && len(wp.queue) > 0 {
		wp.kicked = true
		w.post(at, wp.dispatchF)
		return
	}
	// Handed a core by the line (cpu.waking), the pool starts each item
	// it can on the cores free now: its workers were made runnable
	// together, when the work was submitted. Items left without a core
	// queue again with a new turn, behind the threads waiting: that
	// exception fits run read's figures (keeping the pool's turn, 64 KiB
	// reads with 128 clients went from a p50 of 14.2 ms to 18.7 ms; real
	// 14.5).
	for len(wp.queue) > 0 {
		var idle *thread
		next := time.Duration(-1)
		for _, t := range wp.workers {
			if t.busyUntil <= w.now {
				idle = t
				break
			}
			if next < 0 || t.busyUntil < next {
				next = t.busyUntil
			}
		}
		if idle == nil {
			wp.kicked = true
			w.post(next, wp.dispatchF)
			return
		}
		// Work a loop handed over just before it went idle runs on
		// the core the loop holds: Go readies the worker on the loop's
		// processor, and the loop yields it after each callback.
		c, ok := wp.p.cpu.takeHeld(&wp.queue[0].loop.thread)
		if !ok {
			c, ok = wp.p.cpu.free(idle, idle.busyUntil < w.now)
		}
		if !ok {
			wp.kicked = true
			wp.p.cpu.wait(wp.p, wp.dispatchF, &wp.arrival)
			return
		}
		wp.arrival = 0
		it := wp.queue[0]
		wp.queue[0] = workItem{}
		if len(wp.queue) == 1 {
			// Drained: the next Submit reuses the array (sliced past
			// its last item, it had no room left, and nearly every
			// Submit grew a new one).
			wp.queue = wp.queue[:0]
		} else {
			wp.queue = wp.queue[1:]
		}
		// A worker that finished before now went to sleep on the queue
		// and was woken; one finishing just now takes the next item.
		idle.woken = idle.busyUntil < w.now
		end := w.runOn(idle, c, it.work)
		if len(wp.queue) == 0 {
			wp.p.cpu.idle(c, end)
		}
		// (A pooled carrier: checking a case hands workers hundreds of
		// thousands of items, and a closure each was a tenth of its
		// allocations.)
		w.post(end, w.workDone.bind(workDone{wp: wp, gen: wp.gen, it: it}))
	}
}

// workDone is the completion of a work item, due when the worker's
// modelled time ends (World.workDone recycles it).
type workDone struct {
	wp  *WorkerPool
	gen int
	it  workItem
}

// complete is a completion's event: the item's done callback queues on
// the loop that submitted it, unless the process restarted meanwhile.
func (d workDone) complete() {
	if d.gen != d.wp.p.gen {
		return
	}
	d.wp.p.work--
	if d.it.done != nil {
		d.it.loop.enqueue(task{fn: d.it.done})
	}
}

// carriers recycles the payloads of posted events: bind returns a func
// bound once per carrier that runs fn on its payload, so posting one
// allocates nothing once the pool has warmed up. The carrier is back in
// the pool before fn runs, so fn may bind again; fn gets a copy (a
// pointer to one would escape through fn, a heap copy per event).
type carriers[T any] struct {
	free []*carrier[T]
	fn   func(T)
}

type carrier[T any] struct {
	v   T
	run func()
}

func (cs *carriers[T]) bind(v T) func() {
	var c *carrier[T]
	if n := len(cs.free); n > 0 {
		c = cs.free[n-1]
		cs.free = cs.free[:n-1]
	} else {
		c = &carrier[T]{}
		c.run = func() {
			v := c.v
			var zero T
			c.v = zero
			cs.free = append(cs.free, c)
			cs.fn(v)
		}
	}
	c.v = v
	return c.run
}

// Size implements model.WorkerPool.
func (wp *WorkerPool) Size() int { return len(wp.workers) }

// Close implements model.WorkerPool. Work already queued is dropped.
func (wp *WorkerPool) Close() {
	if wp.closed {
		return
	}
	wp.closed = true
	if wp.gen == wp.p.gen {
		wp.p.work -= len(wp.queue)
		wp.p.threads -= len(wp.workers)
	}
	wp.queue = nil
}

// Lock is a modelled mutex shared by a process's loops. A callback takes
// it when its thread runs and holds it for the virtual time the callback
// spends inside. A thread that finds it held (on another core, in virtual
// time) queues; the lock is handed to the first in line when it frees, so
// contention costs time as it would on a fair mutex, without a thundering
// herd of retries. A barging lock (Config.BargingLocks) wakes the first in
// line instead of handing it the lock: whoever runs first takes it.
type Lock struct {
	p         *Process
	name      string
	busyUntil time.Duration
	// reserved: handed to the head of waiters, which has not run yet; on
	// a barging lock, the head was woken and has not run yet.
	reserved bool
	barging  bool
	waiters  []lockWaiter
	woken    wokenLoops
	// Acquisitions and Contended count uses, for experiments; Barged
	// counts acquisitions ahead of a woken waiter (barging only).
	Acquisitions, Contended, Barged int
}

type lockWaiter struct {
	l *Loop
	f func()
}

// Do implements model.Lock.
func (lk *Lock) Do(loop model.Loop, f func()) {
	l, ok := loop.(*Loop)
	if !ok || f == nil {
		return
	}
	l.enqueue(task{fn: f, lock: lk})
}

func (lk *Lock) try(l *Loop, f func(), granted bool) {
	w := lk.p.w
	if lk.barging {
		lk.tryBarging(l, f, granted)
		return
	}
	if !granted && (lk.reserved || w.Now() < lk.busyUntil) {
		lk.Contended++
		lk.waiters = append(lk.waiters, lockWaiter{l, f})
		if !lk.reserved {
			lk.handOff()
		}
		return
	}
	lk.reserved = false
	lk.Acquisitions++
	f()
	lk.busyUntil = w.Now()
	lk.handOff()
}

// tryBarging takes the lock if it is free, whoever waits; woken says f's
// thread was woken at a release, and waits again at the head if another
// took the lock meanwhile.
func (lk *Lock) tryBarging(l *Loop, f func(), woken bool) {
	w := lk.p.w
	if woken {
		lk.reserved = false
		lk.woken.remove(l)
	}
	if w.Now() < lk.busyUntil || !woken && queuedOn(lk.woken, lk.waiters, l) {
		if woken {
			lk.waiters = slices.Insert(lk.waiters, 0, lockWaiter{l, f})
		} else {
			lk.Contended++
			lk.waiters = append(lk.waiters, lockWaiter{l, f})
		}
		if !lk.reserved {
			lk.handOff()
		}
		return
	}
	if lk.reserved {
		lk.Barged++
	}
	lk.Acquisitions++
	f()
	lk.busyUntil = w.Now()
	if !lk.reserved {
		lk.handOff()
	}
}

// queuedOn reports whether an earlier Do of loop l waits for a barging
// lock, in line or woken: a later Do of the same loop must not barge
// ahead of it, for a loop's callbacks run in order (model.Lock: two Do
// calls on one loop keep their order), as on a real mutex a thread's
// second acquisition follows its first. Barging is between threads.
func queuedOn[W interface{ loop() *Loop }](woken wokenLoops, waiters []W, l *Loop) bool {
	return woken.has(l) || slices.ContainsFunc(waiters, func(w W) bool { return w.loop() == l })
}

func (w lockWaiter) loop() *Loop { return w.l }

// handOff gives the lock, once free, to the first waiter whose thread is
// still alive (on a barging lock: wakes it to try).
func (lk *Lock) handOff() {
	for len(lk.waiters) > 0 {
		next := lk.waiters[0]
		lk.waiters[0] = lockWaiter{}
		lk.waiters = lk.waiters[1:]
		if next.l.dead() {
			continue
		}
		lk.reserved = true
		if lk.barging {
			lk.woken.add(next.l)
		}
		release := func() {
			lk.reserved = false
			lk.woken.remove(next.l)
			lk.handOff()
		}
		lk.p.w.at(lk.busyUntil, func() {
			if next.l.dead() {
				release()
				return
			}
			next.l.boost = true
			next.l.enqueue(task{fn: func() { lk.try(next.l, next.f, true) }, onDrop: release})
		})
		return
	}
}

// wokenLoops are the loops whose waiters a barging lock woke and whose
// tries have not run yet.
type wokenLoops []*Loop

func (ws *wokenLoops) add(l *Loop) { *ws = append(*ws, l) }

func (ws *wokenLoops) remove(l *Loop) {
	if i := slices.Index(*ws, l); i >= 0 {
		*ws = slices.Delete(*ws, i, i+1)
	}
}

func (ws wokenLoops) has(l *Loop) bool { return slices.Contains(ws, l) }
