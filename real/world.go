// Package real implements the model's world interface (model.World and
// friends) over real resources on Linux: non-blocking sockets driven by
// epoll, one goroutine per event loop, goroutine worker pools, real files
// under a temporary directory and real fds.
//
// Many model processes share this one OS process. Each keeps its own fd
// table — the fds its sockets, files and loops really hold, tagged with a
// model.FDKind — and the wrapper enforces the process's fd limit
// (model.ErrTooManyFiles) before asking the kernel for a new fd, so a model
// process runs out of fds exactly where its configuration says. The tables
// are cross-checked against /proc/self/fd by World.CheckFDs, and
// World.Close checks that fds and goroutines are back to where they were
// when the world was created.
//
// Sockets are made with golang.org/x/sys/unix rather than package net: net
// turns TCP_NODELAY on for every connection, and the data path under test
// must see Nagle's algorithm and delayed ACKs exactly as the kernel applies
// them.
//
// # Threading
//
// Every loop is a goroutine waiting for its epoll fd through Go's runtime
// poller (see loop). Callbacks of one loop
// run one at a time on its goroutine; different loops run in parallel.
// Objects belong to the loop that drives them: a Conn may be used from
// callbacks of the loop it is registered on (and, for Sendfile and the
// like, from a worker it was handed to), a File from whoever holds it. The
// wrapper's own state is locked, so misuse shows up as a race in the model
// (caught by -race), never as corrupted fd tables.
//
// Callbacks run only while World.Run is running: before the first Run, and
// between a Run returning and the next one, every loop is parked, so code
// outside the world (a test, the command line tool) may set up or inspect
// model state without racing with it. Worker goroutines are not parked:
// work functions touch only what they were handed.
//
// A callback that panics fails the world (World.Run returns the panic with
// its stack) instead of crashing the OS process.
package real

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"xceiver/model"
)

// Config configures a real world.
type Config struct {
	// Root is the directory in which the world makes its temporary
	// directory (process disks and Unix socket paths live there). Empty
	// means os.TempDir(). It must exist and be writable.
	Root string
	// Seed seeds each process's random source, together with the process
	// name.
	Seed uint64
	// FDLimit is the fd limit of a process whose ProcessConfig.FDLimit is
	// 0. Zero means DefaultFDLimit.
	FDLimit int
	// LogWriter, if set, receives one text line per Process.Log call.
	LogWriter io.Writer
	// OnLog, if set, is called (from the logging goroutine, serialized)
	// with each Process.Log entry. With neither LogWriter nor OnLog set,
	// Log costs a branch.
	OnLog func(LogEntry)
	// Settle is how long Close waits for fds and goroutines to return to
	// their baseline. Zero means 2s.
	Settle time.Duration
	// AccountCPU charges each callback and work item the CPU its thread
	// spent on it (CLOCK_THREAD_CPUTIME_ID read before and after, the
	// goroutine held on its thread in between), to its process: CPUTime.
	// What runs outside them (epoll_wait, Go's scheduler, the garbage
	// collector) is no process's. It costs two clock reads per callback.
	AccountCPU bool
	// Late makes loops run late, as on a machine busy with other work:
	// a share LateShare of a loop's turns (zero: a tenth) sleeps for a
	// time drawn below Late after epoll_wait, before its callbacks run
	// (worker pools are not delayed). It flushes out code and tests that
	// assume another loop runs at once (a post followed by a timed stop,
	// a count taken a fixed time after a close). At most MaxLate. Zero
	// Late takes it, and LateShare when it gives one, from
	// XCEIVER_REAL_LATE if that is set: "20ms", or "20ms@0.5".
	Late      time.Duration
	LateShare float64
}

// LateEnv names the environment variable that sets Config.Late (and
// LateShare) for a world whose Config leaves Late zero.
const LateEnv = "XCEIVER_REAL_LATE"

// MaxLate bounds Config.Late: a loop asleep longer would hold up Close
// past the leak check's Settle.
const MaxLate = time.Second

// fillLate takes Late and LateShare from LateEnv when Late is zero, and
// checks them.
func (cfg *Config) fillLate() error {
	if v := os.Getenv(LateEnv); cfg.Late == 0 && v != "" {
		d, share, hasShare := strings.Cut(v, "@")
		var err error
		if cfg.Late, err = time.ParseDuration(d); err != nil || cfg.Late <= 0 || cfg.Late > MaxLate {
			return fmt.Errorf("real: %s=%q: want a duration in (0, %v], optionally @share (20ms@0.5)", LateEnv, v, MaxLate)
		}
		if hasShare {
			if cfg.LateShare, err = strconv.ParseFloat(share, 64); err != nil || !(cfg.LateShare > 0 && cfg.LateShare <= 1) {
				return fmt.Errorf("real: %s=%q: want a share in (0, 1] after @", LateEnv, v)
			}
		}
	}
	if cfg.Late < 0 || cfg.Late > MaxLate || !(cfg.LateShare >= 0 && cfg.LateShare <= 1) {
		return fmt.Errorf("real: Late %v, LateShare %v: want Late in [0, %v] and a share in [0, 1]", cfg.Late, cfg.LateShare, MaxLate)
	}
	if cfg.Late > 0 && cfg.LateShare == 0 {
		cfg.LateShare = 0.1
	}
	return nil
}

// DefaultFDLimit is a process's fd limit when neither ProcessConfig nor
// Config sets one; it is Linux's usual soft RLIMIT_NOFILE.
const DefaultFDLimit = 1024

// LogEntry is one Process.Log call.
type LogEntry struct {
	T    time.Duration // world time
	Proc string
	Kind string
	KV   []any // alternating keys and values, as passed to Log
}

// World is the real world. It implements model.World.
type World struct {
	cfg   Config
	root  string // the world's own temporary directory
	start time.Time
	ids   atomic.Uint64 // conn and listener ids, and epoll tokens

	mu      sync.Mutex
	procs   []*process
	names   map[string]*process
	closed  bool
	failure error

	runMu  sync.Mutex // one Run at a time
	stopCh chan struct{}

	// The gate parks all loops between runs. A loop counts itself active
	// while it runs a callback; pause waits until none is.
	paused atomic.Bool
	active atomic.Int64
	gateMu sync.Mutex
	gateCV *sync.Cond

	logMu sync.Mutex

	baseFDs map[int]bool // /proc/self/fd at New
	baseG   int          // runtime.NumGoroutine at New

	// sockDir is an O_PATH fd on Root()/sock, opened the first time a
	// relative Unix address's path is too long for a sockaddr
	// (sockAlias); -1 until then. Closed by Close.
	sockDirMu sync.Mutex
	sockDir   int

	// kinds is each kind of thread's CPU (ThreadCPU, with AccountCPU).
	kindsMu sync.Mutex
	kinds   map[string]*threadKind
}

// threadKind is the CPU one kind of thread spent in callbacks or work
// (model.ThreadCPU); its loops and workers add to it as they run.
type threadKind struct {
	callbacks atomic.Int64
	cpu       atomic.Int64 // ns
}

// threadKind is the record of thread name's kind in process; nil
// without Config.AccountCPU, which nothing then adds to or reads.
func (w *World) threadKind(process, name string) *threadKind {
	if !w.cfg.AccountCPU {
		return nil
	}
	k := model.ThreadKind(process, name)
	w.kindsMu.Lock()
	defer w.kindsMu.Unlock()
	if w.kinds == nil {
		w.kinds = make(map[string]*threadKind)
	}
	tk := w.kinds[k]
	if tk == nil {
		tk = &threadKind{}
		w.kinds[k] = tk
	}
	return tk
}

// ThreadCPU is the thread CPU each kind of thread has spent in callbacks
// and work items so far, sorted by kind (model.ThreadCPU): measured only
// with Config.AccountCPU, nil without. What Go spends between them (the
// scheduler, the poller, a thread's wake-up) is in no kind.
func (w *World) ThreadCPU() []model.ThreadCPU {
	if !w.cfg.AccountCPU {
		return nil
	}
	w.kindsMu.Lock()
	defer w.kindsMu.Unlock()
	out := make([]model.ThreadCPU, 0, len(w.kinds))
	for k, tk := range w.kinds {
		out = append(out, model.ThreadCPU{Thread: k, Callbacks: tk.callbacks.Load(), CPU: time.Duration(tk.cpu.Load())})
	}
	slices.SortFunc(out, func(a, b model.ThreadCPU) int { return strings.Compare(a.Thread, b.Thread) })
	return out
}

var _ model.World = (*World)(nil)

// scratch holds the roots of the worlds not yet closed, for
// RemoveScratch.
var scratch scratchRoots

type scratchRoots struct {
	mu      sync.Mutex
	roots   []string
	removed bool // RemoveScratch has run: the process is ending
}

// make makes a world's directory under parent and holds it, in one step
// as RemoveScratch sees it: a directory made just before the removal
// and held just after it would be left behind.
func (sc *scratchRoots) make(parent string) (string, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.removed {
		return "", errors.New("the process is ending (RemoveScratch)")
	}
	root, err := os.MkdirTemp(parent, "xceiver-real-")
	if err == nil {
		sc.roots = append(sc.roots, root)
	}
	return root, err
}

func (sc *scratchRoots) remove(root string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.roots = slices.DeleteFunc(sc.roots, func(r string) bool { return r == root })
}

// RemoveScratch removes the temporary directories of the worlds not yet
// closed (their disks and sockets), for a process about to end without
// closing them: one stopped by a signal. The worlds are unusable after
// it, and no world can be made. It returns the directories it removed.
func RemoveScratch() ([]string, error) {
	scratch.mu.Lock()
	defer scratch.mu.Unlock()
	var errs []error
	for _, r := range scratch.roots {
		// The world's processes may still be running and making files:
		// a removal can meet a file made during it (ENOTEMPTY), so it
		// is tried until the directory is gone. They do not make the
		// world's directory again (mkdirBelow).
		err := os.RemoveAll(r)
		for try := 0; try < 100 && err != nil; try++ {
			time.Sleep(time.Millisecond)
			err = os.RemoveAll(r)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	removed := scratch.roots
	scratch.roots, scratch.removed = nil, true
	return removed, errors.Join(errs...)
}

// New creates a real world with its own temporary directory.
func New(cfg Config) (*World, error) {
	if cfg.FDLimit < 0 {
		return nil, fmt.Errorf("real: negative FDLimit %d", cfg.FDLimit)
	}
	if cfg.FDLimit == 0 {
		cfg.FDLimit = DefaultFDLimit
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Second
	}
	if err := cfg.fillLate(); err != nil {
		return nil, err
	}
	parent := cfg.Root
	if parent == "" {
		parent = os.TempDir()
	}
	if fi, err := os.Stat(parent); err != nil {
		return nil, fmt.Errorf("real: world root %q: %w", parent, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("real: world root %q is not a directory", parent)
	}
	// Go's runtime opens its own poller fds (an epoll fd and an eventfd)
	// the first time anything pollable is opened. Make that happen now,
	// before the baseline, so it is never mistaken for a leak.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	base, err := listFDs()
	if err != nil {
		return nil, fmt.Errorf("real: fd baseline: %w", err)
	}
	root, err := scratch.make(parent)
	if err != nil {
		return nil, fmt.Errorf("real: world root %q: %w", parent, err)
	}
	w := &World{
		cfg:     cfg,
		root:    root,
		start:   time.Now(),
		names:   make(map[string]*process),
		stopCh:  make(chan struct{}, 1),
		baseFDs: base,
		baseG:   runtime.NumGoroutine(),
		sockDir: -1,
	}
	w.gateCV = sync.NewCond(&w.gateMu)
	w.paused.Store(true) // nothing runs before the first Run
	for _, sub := range []string{"disk", "sock"} {
		if err := os.Mkdir(w.path(sub), 0o700); err != nil {
			os.RemoveAll(root)
			scratch.remove(root)
			return nil, fmt.Errorf("real: world root: %w", err)
		}
	}
	return w, nil
}

// sockAlias is a name for Root()/sock/rel short enough for a Unix
// sockaddr (107 bytes) however long Root() is: the same directory seen
// through /proc/self/fd, which bind and connect resolve as they would the
// path (a world under a long $TMPDIR, as go test's GOTMPDIR makes, could
// not listen on "pc.sock" otherwise). Only the name given to bind and
// connect changes: the socket file is where the path says, and addresses
// show the address as given.
func (w *World) sockAlias(rel string) (string, error) {
	w.sockDirMu.Lock()
	defer w.sockDirMu.Unlock()
	if w.sockDir < 0 {
		fd, err := unix.Open(w.path("sock"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("real: the world's socket directory: %w", err)
		}
		w.sockDir = fd
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", w.sockDir, rel), nil
}

// Root is the world's temporary directory. Process disks are under
// Root()/disk/NAME, relative Unix socket addresses under Root()/sock.
func (w *World) Root() string { return w.root }

func (w *World) path(elem ...string) string {
	return w.root + "/" + strings.Join(elem, "/")
}

// Kind reports "real".
func (w *World) Kind() string { return "real" }

// Now is the time since the world was created.
func (w *World) Now() time.Duration { return time.Since(w.start) }

func (w *World) nextID() uint64 { return w.ids.Add(1) }

// Spawn creates a process and posts main as the first callback on its main
// loop. It runs once Run runs. Process names must be unique, non-empty and
// usable as a file name (the process's disk is a directory of that name).
func (w *World) Spawn(name string, cfg model.ProcessConfig, main func(p model.Process)) (model.Process, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return nil, badArg("spawn", strconv.Quote(name), "process name must be a plain file name")
	}
	if cfg.FDLimit < 0 {
		return nil, badArg("spawn", name, "negative fd limit")
	}
	limit := cfg.FDLimit
	if limit == 0 {
		limit = w.cfg.FDLimit
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrWorldClosed
	}
	if w.names[name] != nil {
		return nil, fmt.Errorf("real: spawn %q: process exists: %w", name, model.ErrExist)
	}
	dir := w.path("disk", name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("real: spawn %q: disk: %w", name, err)
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	p := &process{
		w:     w,
		name:  name,
		dir:   dir,
		rnd:   &lockedRand{r: rand.New(rand.NewPCG(w.cfg.Seed, h.Sum64()))},
		loops: make(map[*loop]struct{}),
		pools: make(map[*pool]struct{}),
	}
	p.fds.init(limit)
	p.disk = &disk{p: p}
	l, err := p.newLoop("main")
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("real: spawn %q: %w", name, err)
	}
	p.main = l
	w.procs = append(w.procs, p)
	w.names[name] = p
	if main != nil {
		l.Post(func() { main(p) })
	}
	return p, nil
}

// Stop asks Run to return once the callbacks now running finish. The gate
// closes at once: no loop starts another callback after Stop returns, as
// none does in the sim (model.World.Stop), though Run itself wakes later.
func (w *World) Stop() {
	w.paused.Store(true)
	select {
	case w.stopCh <- struct{}{}:
	default:
	}
}

// Fail records err (the first one wins) and stops the world.
func (w *World) Fail(err error) {
	if err == nil {
		err = errors.New("real: Fail(nil)")
	}
	w.mu.Lock()
	if w.failure == nil {
		w.failure = err
	}
	w.mu.Unlock()
	w.Stop()
}

func (w *World) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failure
}

// Run lets the loops run callbacks until Stop or Fail is called or limit
// (wall time, counted from this call; 0 means none) passes. When it
// returns, every loop is parked between callbacks until the next Run. It
// returns the first failure recorded by Fail (also on later calls), or an
// error wrapping ErrRunLimit if the limit passed.
func (w *World) Run(limit time.Duration) error {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	w.mu.Lock()
	closed, failure := w.closed, w.failure
	w.mu.Unlock()
	if closed {
		return ErrWorldClosed
	}
	if failure != nil {
		return failure
	}
	var timeout <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		timeout = t.C
	}
	w.resume()
	hit := false
	select {
	case <-w.stopCh:
	case <-timeout:
		hit = true
	}
	w.pause()
	// A Stop that raced with the limit belongs to this run.
	select {
	case <-w.stopCh:
	default:
	}
	if err := w.failed(); err != nil {
		return err
	}
	if hit {
		return fmt.Errorf("%w: %v of wall time", ErrRunLimit, limit)
	}
	return nil
}

// resume opens the gate.
func (w *World) resume() {
	w.gateMu.Lock()
	w.paused.Store(false)
	w.gateCV.Broadcast()
	w.gateMu.Unlock()
}

// pause closes the gate and waits until no callback is running.
func (w *World) pause() {
	w.gateMu.Lock()
	w.paused.Store(true)
	for w.active.Load() != 0 {
		w.gateCV.Wait()
	}
	w.gateMu.Unlock()
}

// enter is called by a loop before each callback. It waits while the world
// is paused and reports false if the loop was closed meanwhile. The fast
// path is two atomic operations: active is raised before paused is read,
// and pause sets paused before reading active, so one of them sees the
// other.
func (w *World) enter(closing *atomic.Bool) bool {
	for {
		w.active.Add(1)
		if !w.paused.Load() {
			return true
		}
		w.exit()
		w.gateMu.Lock()
		for w.paused.Load() && !closing.Load() {
			w.gateCV.Wait()
		}
		w.gateMu.Unlock()
		if closing.Load() {
			return false
		}
	}
}

// exit ends a callback started by enter.
func (w *World) exit() {
	if w.active.Add(-1) == 0 && w.paused.Load() {
		w.gateMu.Lock()
		w.gateCV.Broadcast()
		w.gateMu.Unlock()
	}
}

// wakeGate wakes loops parked in enter so they notice they were closed.
func (w *World) wakeGate() {
	w.gateMu.Lock()
	w.gateCV.Broadcast()
	w.gateMu.Unlock()
}

func (w *World) processes() []*process {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.procs)
}

// Close stops every loop and worker pool, closes fds model code left open,
// removes the world's directory, and then verifies that the OS process is
// back to the baseline taken by New: no fd that was not open then, and no
// more goroutines than then (after waiting up to Config.Settle for them to
// exit). Call it after Run has returned. The error reports what leaked.
//
// The baseline is the whole OS process's, so the check is exact only when
// nothing else in it opens fds or starts goroutines meanwhile (tests using
// a real world should not run in parallel with other such tests).
func (w *World) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrWorldClosed
	}
	w.closed = true
	procs := slices.Clone(w.procs)
	w.mu.Unlock()

	var errs []error
	for _, p := range procs {
		p.shutdown()
	}
	w.sockDirMu.Lock()
	if w.sockDir >= 0 {
		unix.Close(w.sockDir)
		w.sockDir = -1
	}
	w.sockDirMu.Unlock()
	if err := os.RemoveAll(w.root); err != nil {
		errs = append(errs, fmt.Errorf("real: remove world root: %w", err))
	}
	scratch.remove(w.root)
	if err := w.settle(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// settle polls until fds and goroutines are back to the baseline.
func (w *World) settle() error {
	deadline := time.Now().Add(w.cfg.Settle)
	for {
		extra, err := w.unaccountedFDs()
		if err != nil {
			return err
		}
		g := runtime.NumGoroutine()
		if len(extra) == 0 && g <= w.baseG {
			return nil
		}
		if time.Now().After(deadline) {
			var errs []error
			if len(extra) > 0 {
				errs = append(errs, fmt.Errorf("real: leaked fds after Close: %s", describeFDs(extra)))
			}
			if g > w.baseG {
				errs = append(errs, fmt.Errorf("real: %d goroutines after Close, %d at New", g, w.baseG))
			}
			return errors.Join(errs...)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// unaccountedFDs lists the fds now open that were not open at New.
func (w *World) unaccountedFDs() ([]int, error) {
	now, err := listFDs()
	if err != nil {
		return nil, err
	}
	var extra []int
	for fd := range now {
		if !w.baseFDs[fd] {
			extra = append(extra, fd)
		}
	}
	slices.Sort(extra)
	return extra, nil
}

// CheckFDs cross-checks the processes' fd tables against /proc/self/fd:
// every fd a table holds must be open, and every fd open now that was not
// open at New must be in some table. It holds every table's lock while it
// looks, so it is exact even while loops run (fds are created and closed
// under those locks), provided nothing outside the world opens fds.
func (w *World) CheckFDs() error {
	procs := w.processes()
	for _, p := range procs {
		p.fds.mu.Lock()
	}
	defer func() {
		for _, p := range procs {
			p.fds.mu.Unlock()
		}
	}()
	now, err := listFDs()
	if err != nil {
		return err
	}
	owner := make(map[int]string)
	var errs []error
	for _, p := range procs {
		if err := p.fds.consistent(); err != nil {
			errs = append(errs, fmt.Errorf("real: process %s: %w", p.name, err))
		}
		for fd, e := range p.fds.fds {
			if prev, dup := owner[fd]; dup {
				errs = append(errs, fmt.Errorf("real: fd %d in the tables of %s and %s", fd, prev, p.name))
			}
			owner[fd] = p.name
			if !now[fd] {
				errs = append(errs, fmt.Errorf("real: process %s accounts fd %d (%v) but it is not open", p.name, fd, e.kind))
			}
		}
	}
	w.sockDirMu.Lock()
	own := w.sockDir // the world's, not a process's (sockAlias)
	w.sockDirMu.Unlock()
	var extra []int
	for fd := range now {
		if _, ok := owner[fd]; !ok && !w.baseFDs[fd] && fd != own {
			extra = append(extra, fd)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		errs = append(errs, fmt.Errorf("real: fds open but in no process's table: %s", describeFDs(extra)))
	}
	return errors.Join(errs...)
}

// listFDs reads /proc/self/fd without package os, so that the directory fd
// it needs is known and left out, and the runtime poller is not involved.
func listFDs() (map[int]bool, error) {
	dfd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("real: open /proc/self/fd: %w", err)
	}
	defer unix.Close(dfd)
	buf := make([]byte, 16<<10)
	var names []string
	for {
		n, err := unix.ReadDirent(dfd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("real: read /proc/self/fd: %w", err)
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	fds := make(map[int]bool, len(names))
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd == dfd {
			continue
		}
		fds[fd] = true
	}
	return fds, nil
}

// describeFDs names fds by what they point at, for leak reports.
func describeFDs(fds []int) string {
	var b strings.Builder
	for i, fd := range fds {
		if i > 0 {
			b.WriteString(", ")
		}
		target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			target = "?"
		}
		fmt.Fprintf(&b, "%d→%s", fd, target)
	}
	return b.String()
}

// log records a Process.Log call if logging is configured.
func (w *World) log(proc, kind string, kv []any) {
	if w.cfg.LogWriter == nil && w.cfg.OnLog == nil {
		return
	}
	e := LogEntry{T: w.Now(), Proc: proc, Kind: kind, KV: slices.Clone(kv)}
	w.logMu.Lock()
	defer w.logMu.Unlock()
	if w.cfg.LogWriter != nil {
		var b strings.Builder
		fmt.Fprintf(&b, "%d %s %s", e.T.Nanoseconds(), proc, kind)
		for i := 0; i < len(kv); i += 2 {
			if i+1 < len(kv) {
				fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
			} else {
				fmt.Fprintf(&b, " %v", kv[i])
			}
		}
		b.WriteByte('\n')
		io.WriteString(w.cfg.LogWriter, b.String())
	}
	if w.cfg.OnLog != nil {
		w.cfg.OnLog(e)
	}
}
