package real

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"xceiver/model"
)

// process is one model process. It implements model.Process.
type process struct {
	w    *World
	name string
	dir  string // its disk
	rnd  *lockedRand
	disk *disk
	main *loop
	fds  fdTable
	// segments counts shared-memory mappings (segment.go).
	segments atomic.Int64
	// cpu is the thread CPU its callbacks and work used, in ns
	// (Config.AccountCPU).
	cpu atomic.Int64

	mu           sync.Mutex
	loops        map[*loop]struct{}
	pools        map[*pool]struct{}
	threads      int
	peakThreads  int
	shuttingDown bool
}

var _ model.Process = (*process)(nil)

func (p *process) Name() string           { return p.name }
func (p *process) World() model.World     { return p.w }
func (p *process) MainLoop() model.Loop   { return p.main }
func (p *process) Disk() model.Disk       { return p.disk }
func (p *process) Rand() model.Rand       { return p.rnd }
func (p *process) CPU(model.CPUWork, int) {}

// Log appends an event to the world's log, if one is configured.
func (p *process) Log(kind string, kv ...any) { p.w.log(p.name, kind, kv) }

// FDs reports the process's fd table.
func (p *process) FDs() model.FDStats {
	st := p.fds.stats()
	st.Segments = int(p.segments.Load())
	return st
}

// Threads reports loops plus workers alive now and at peak.
func (p *process) Threads() (now, peak int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.threads, p.peakThreads
}

func (p *process) addThreads(n int) {
	p.mu.Lock()
	p.threads += n
	p.peakThreads = max(p.peakThreads, p.threads)
	p.mu.Unlock()
}

// NewLoop starts another event loop; it costs an epoll fd and an eventfd.
func (p *process) NewLoop(name string) (model.Loop, error) {
	l, err := p.newLoop(name)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// NewWorkerPool starts n worker goroutines (at least one).
func (p *process) NewWorkerPool(name string, n int) model.WorkerPool {
	return p.newPool(name, n)
}

// NewLock makes a lock backed by a sync.Mutex.
func (p *process) NewLock(name string) model.Lock { return &lock{p: p, name: name} }

// NewRWLock makes a read-write lock backed by a sync.RWMutex.
func (p *process) NewRWLock(name string) model.RWLock { return &rwlock{p: p, name: name} }

// loopOf converts a model.Loop handed to p back into one of p's loops.
func (p *process) loopOf(ml model.Loop) (*loop, error) {
	l, ok := ml.(*loop)
	if !ok || l == nil {
		return nil, fmt.Errorf("real: process %s: %T is not a loop of the real world", p.name, ml)
	}
	if l.p != p {
		return nil, fmt.Errorf("real: process %s: loop %s belongs to process %s", p.name, l.name, l.p.name)
	}
	return l, nil
}

// shutdown stops the process's pools and loops and closes every fd model
// code left open. Used by World.Close after Run has returned.
func (p *process) shutdown() {
	p.mu.Lock()
	p.shuttingDown = true
	pools := make([]*pool, 0, len(p.pools))
	for wp := range p.pools {
		pools = append(pools, wp)
	}
	loops := make([]*loop, 0, len(p.loops))
	for l := range p.loops {
		loops = append(loops, l)
	}
	p.mu.Unlock()
	for _, wp := range pools {
		wp.Close()
	}
	for _, l := range loops {
		l.Close()
	}
	p.fds.closeAll()
}

// lockedRand makes a *rand.Rand safe for the process's loops and workers.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (r *lockedRand) Uint64() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Uint64()
}

func (r *lockedRand) IntN(n int) int {
	if n <= 0 {
		return 0 // rand.IntN panics; model code gets a harmless answer
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.IntN(n)
}

func (r *lockedRand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Float64()
}

// fdCloser is an object owning an fd in a table. forceClose closes it on
// World.Close, marking the object closed so a late Close cannot hit a
// reused fd number.
type fdCloser interface{ forceClose() }

type fdEntry struct {
	kind  model.FDKind
	owner fdCloser // nil for a loop's own fds
}

// fdTable is a process's fd accounting. Every fd is created and closed
// with mu held, so the table and the kernel's view agree whenever mu is
// free; CheckFDs relies on that. mu is a leaf lock.
type fdTable struct {
	mu     sync.Mutex
	limit  int
	peak   int
	byKind [model.NumFDKinds]int
	fds    map[int]fdEntry
}

func (t *fdTable) init(limit int) {
	t.limit = limit
	t.fds = make(map[int]fdEntry)
}

// room reports ErrTooManyFiles unless n more fds fit. Called with mu held.
func (t *fdTable) room(op, obj string, n int) error {
	if len(t.fds)+n > t.limit {
		return newErr(op, obj, model.ErrTooManyFiles)
	}
	return nil
}

// add records fd. Called with mu held.
func (t *fdTable) add(fd int, kind model.FDKind, owner fdCloser) {
	t.fds[fd] = fdEntry{kind: kind, owner: owner}
	t.byKind[kind]++
	t.peak = max(t.peak, len(t.fds))
}

// own attaches the object owning fd, which World.Close will force-close
// if model code leaves it open.
func (t *fdTable) own(fd int, owner fdCloser) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.fds[fd]; ok {
		e.owner = owner
		t.fds[fd] = e
	}
}

// create makes one fd of kind with mk, if the limit allows.
func (t *fdTable) create(op, obj string, kind model.FDKind, mk func() (int, error)) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.room(op, obj, 1); err != nil {
		return -1, err
	}
	fd, err := mk()
	if err != nil {
		return -1, wrapErr(op, obj, err)
	}
	t.add(fd, kind, nil)
	return fd, nil
}

// close closes fd and forgets it.
func (t *fdTable) close(fd int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closeLocked(fd)
}

func (t *fdTable) closeLocked(fd int) error {
	e, ok := t.fds[fd]
	if !ok {
		return fmt.Errorf("real: close fd %d: not in the fd table", fd)
	}
	delete(t.fds, fd)
	t.byKind[e.kind]--
	// close(2) releases the fd even when it reports an error (EINTR, or
	// EIO from a deferred write), so the table forgets it either way.
	if err := unix.Close(fd); err != nil && err != unix.EINTR {
		return wrapErr("close", fmt.Sprintf("fd %d", fd), err)
	}
	return nil
}

// closeWith forgets fd, which an *os.File owns, and closes it with
// closeFile; the table's lock is held throughout, so the number cannot be
// reused and recorded before the table forgets it.
func (t *fdTable) closeWith(fd int, closeFile func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.fds[fd]
	if !ok {
		return fmt.Errorf("real: close fd %d: not in the fd table", fd)
	}
	delete(t.fds, fd)
	t.byKind[e.kind]--
	if err := closeFile(); err != nil {
		return wrapErr("close", fmt.Sprintf("fd %d", fd), err)
	}
	return nil
}

// closeAll force-closes every fd still in the table.
func (t *fdTable) closeAll() {
	t.mu.Lock()
	var owners []fdCloser
	var bare []int
	for fd, e := range t.fds {
		if e.owner != nil {
			owners = append(owners, e.owner)
		} else {
			bare = append(bare, fd)
		}
	}
	slices.Sort(bare)
	for _, fd := range bare {
		t.closeLocked(fd)
	}
	t.mu.Unlock()
	for _, o := range owners {
		o.forceClose()
	}
}

func (t *fdTable) stats() model.FDStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return model.FDStats{Open: len(t.fds), Peak: t.peak, Limit: t.limit, ByKind: t.byKind}
}

// consistent checks the per-kind counts against the table. Called with mu
// held.
func (t *fdTable) consistent() error {
	var byKind [model.NumFDKinds]int
	for _, e := range t.fds {
		byKind[e.kind]++
	}
	if byKind != t.byKind {
		return fmt.Errorf("fd counts by kind %v, table holds %v", t.byKind, byKind)
	}
	return nil
}

// Listen opens a listening socket on loop. TCP addresses are
// "127.0.0.1:port" (port 0 picks one; Addr reports it), Unix addresses are
// socket paths, relative ones under the world's directory.
func (p *process) Listen(network, addr string, backlog int, ml model.Loop) (model.Listener, error) {
	l, err := p.loopOf(ml)
	if err != nil {
		return nil, err
	}
	return listen(p, l, network, addr, backlog)
}

// Dial starts a non-blocking connect; h gets Writable once connected, or
// Hangup with Err set if the connect failed.
func (p *process) Dial(network, addr string, ml model.Loop, h model.Handler) (model.Conn, error) {
	l, err := p.loopOf(ml)
	if err != nil {
		return nil, err
	}
	return dial(p, l, network, addr, h)
}

// accounted runs f on one OS thread and adds the thread CPU it used to
// p's and to its thread's kind (Config.AccountCPU). Locking the thread
// keeps both clock reads on the same thread, should the goroutine be
// preempted in between.
func (p *process) accounted(kind *threadKind, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	f()
	d := max(threadCPU()-t0, 0)
	p.cpu.Add(d)
	kind.callbacks.Add(1)
	kind.cpu.Add(d)
}

// AccountingCost is the thread CPU Config.AccountCPU adds to each
// callback and work item: n empty functions run through the accounting
// on one thread, less the same n run bare, per function. It is the
// wrapper's own cost (two reads of the thread's CPU clock, the thread
// lock, the counters); measured from a whole process instead, as a loop
// posting to itself with and without accounting, the difference carries
// whatever Go's scheduler did meanwhile in its other threads, and on a
// virtual machine whose clock reads are system calls that came out 1 to
// 4 times the wrapper's cost from one run to the next.
func AccountingCost(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := &process{}
	kind := &threadKind{}
	f := func() {}
	t0 := threadCPU()
	for range n {
		p.accounted(kind, f)
	}
	t1 := threadCPU()
	for range n {
		noInline(f)
	}
	t2 := threadCPU()
	return time.Duration(max((t1-t0)-(t2-t1), 0) / int64(n))
}

//go:noinline
func noInline(f func()) { f() }

// threadCPU is the calling thread's CPU time in ns.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// CPUTime is the CPU p's callbacks and work have used so far, with
// Config.AccountCPU (zero without it, or for a process of another world).
func CPUTime(p model.Process) time.Duration {
	rp, ok := p.(*process)
	if !ok {
		return 0
	}
	return time.Duration(rp.cpu.Load())
}
