package real

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"xceiver/model"
)

// loop is an event loop: a goroutine waiting for its own epoll fd, woken
// through its own eventfd when a callback is posted or an earlier timer is
// set. It implements model.Loop.
//
// The goroutine does not block in epoll_wait. The epoll fd is itself
// registered with Go's runtime poller (an *os.File, waited on through
// syscall.RawConn), and the loop only ever calls epoll_wait with a zero
// timeout: when nothing is ready it parks in the Go scheduler, and the
// runtime resumes it on whatever thread is running when the fd becomes
// readable or the deadline (the first timer) passes. Blocking in
// epoll_wait instead cost a thread hand-off per wake-up: the woken thread
// had lost its P while asleep and had to get one back (futex,
// nanosleep), which made the reactor pay several context switches per
// read that plain Go's netpoller does not.
//
// Each iteration waits for readiness (or the first timer, or a wake-up),
// then runs, one at a time: the handlers of ready fds, the callbacks
// posted so far, and the timers due.
type loop struct {
	p    *process
	name string
	kind *threadKind // its kind's CPU (World.ThreadCPU)
	epfd int
	evfd int
	epf  *os.File        // epfd, registered with the runtime poller
	rc   syscall.RawConn // epf's
	done chan struct{}   // closed when the goroutine has exited

	// deadline is the read deadline last set on epf, zero for none; used
	// only by the loop goroutine.
	deadline time.Time

	// closing mirrors closed for the world's gate, which must not take mu.
	closing atomic.Bool

	events []unix.EpollEvent // used only by the loop goroutine
	late   *rand.Rand        // Config.Late's draws, nil without; loop goroutine only

	mu       sync.Mutex
	closed   bool // Close was called (or the loop died): no more callbacks
	released bool // epfd and evfd are closed
	inCB     bool // the goroutine is running a callback
	woken    bool // evfd was written since the last time posted was taken
	posted   []func()
	spare    []func()
	timers   timerHeap
	tseq     uint64
	regs     map[uint64]pollable // epoll token → registered object
}

// pollable is an object with an fd registered on a loop's epoll.
type pollable interface {
	// dispatch handles epoll events for the object; it runs as a callback
	// on l.
	dispatch(l *loop, events uint32)
}

// wakeToken is the epoll token of a loop's eventfd; objects get tokens
// from World.nextID, which never returns 0.
const wakeToken = 0

var _ model.Loop = (*loop)(nil)

// newLoop makes a loop and starts its goroutine.
func (p *process) newLoop(name string) (*loop, error) {
	obj := fmt.Sprintf("%s/%s", p.name, name)
	p.fds.mu.Lock()
	if err := p.fds.room("new loop", obj, 2); err != nil {
		p.fds.mu.Unlock()
		return nil, err
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		p.fds.mu.Unlock()
		return nil, wrapErr("epoll_create", obj, err)
	}
	p.fds.add(epfd, model.FDEpoll, nil)
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		p.fds.closeLocked(epfd)
		p.fds.mu.Unlock()
		return nil, wrapErr("eventfd", obj, err)
	}
	p.fds.add(evfd, model.FDEventfd, nil)
	p.fds.mu.Unlock()

	release := func() {
		p.fds.close(evfd)
		p.fds.close(epfd)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		release()
		return nil, wrapErr("epoll_ctl", obj, err)
	}
	// Non-blocking, so os.NewFile registers the fd with the runtime
	// poller; epoll_wait itself ignores the flag.
	if err := unix.SetNonblock(epfd, true); err != nil {
		release()
		return nil, wrapErr("fcntl", obj, err)
	}
	epf := os.NewFile(uintptr(epfd), obj)
	rc, err := epf.SyscallConn()
	if err != nil {
		p.fds.close(evfd)
		p.fds.closeWith(epfd, epf.Close)
		return nil, wrapErr("epoll fd", obj, err)
	}
	release = func() {
		p.fds.close(evfd)
		p.fds.closeWith(epfd, epf.Close)
	}
	l := &loop{
		p:      p,
		name:   name,
		kind:   p.w.threadKind(p.name, name),
		epfd:   epfd,
		evfd:   evfd,
		epf:    epf,
		rc:     rc,
		done:   make(chan struct{}),
		events: make([]unix.EpollEvent, 128),
		regs:   make(map[uint64]pollable),
	}
	if p.w.cfg.Late > 0 {
		h := fnv.New64a()
		h.Write([]byte(obj))
		l.late = rand.New(rand.NewPCG(p.w.cfg.Seed, h.Sum64()))
	}
	p.mu.Lock()
	if p.shuttingDown {
		p.mu.Unlock()
		release()
		return nil, newErr("new loop", obj, model.ErrProcessExited)
	}
	p.loops[l] = struct{}{}
	p.threads++
	p.peakThreads = max(p.peakThreads, p.threads)
	p.mu.Unlock()
	go l.run()
	return l, nil
}

func (l *loop) Name() string           { return l.name }
func (l *loop) Process() model.Process { return l.p }
func (l *loop) Now() time.Duration     { return l.p.w.Now() }
func (l *loop) String() string         { return l.p.name + "/" + l.name }
func (l *loop) world() *World          { return l.p.w }

// Post runs f on the loop as soon as it is free. It may be called from any
// goroutine. Posts to a closed loop are dropped.
func (l *loop) Post(f func()) {
	if f == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.posted = append(l.posted, f)
	l.wakeLocked()
}

// AfterFunc runs f on the loop after d. It may be called from any
// goroutine. Timers due at the same time run in the order they were set.
func (l *loop) AfterFunc(d time.Duration, f func()) model.Timer {
	t := &timer{l: l, f: f, when: l.Now() + max(d, 0)}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armLocked(t)
	return t
}

// armLocked queues t for t.when, after the timers already set for then,
// and wakes the loop if t comes first; on a closed loop, or with no f,
// t stays stopped. Called with mu held.
func (l *loop) armLocked(t *timer) {
	if l.closed || t.f == nil {
		t.state = timerStopped
		return
	}
	t.seq, t.state = l.tseq, timerPending
	l.tseq++
	heap.Push(&l.timers, t)
	if l.timers[0] == t {
		l.wakeLocked()
	}
}

// wakeLocked makes the goroutine's epoll_wait return. It is skipped while
// a callback runs: the goroutine looks at posts and timers again before it
// sleeps. Called with mu held, which keeps evfd from being closed under it.
func (l *loop) wakeLocked() {
	if l.woken || l.inCB || l.released {
		return
	}
	l.woken = true
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 1)
	// The only failure is EAGAIN when the counter would overflow, and
	// then the loop is awake anyway.
	unix.Write(l.evfd, b[:])
}

// Close stops the loop and releases its epoll fd and eventfd; pending
// callbacks and timers are dropped. Called from one of the loop's own
// callbacks (or while another goroutine runs one), it releases the fds at
// once and the goroutine exits when that callback returns; called while
// the loop is idle (between callbacks, in epoll_wait or parked by the
// world), it wakes the goroutine and waits for it to exit, which it does
// without running another callback. Either way the fds are gone when Close
// returns, and Close never waits for a callback (with Config.Late, it may
// wait out the goroutine's sleep before one). Connections still
// registered on the loop stay open (and accounted) until closed; they get
// no more events.
func (l *loop) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.markClosedLocked()
	if l.inCB {
		// The goroutine is inside a callback, not in epoll_wait, and
		// will exit without touching the fds once the callback returns;
		// every other use of them checks released under mu.
		l.releaseLocked()
		l.mu.Unlock()
		return
	}
	l.woken = false
	l.wakeLocked()
	l.mu.Unlock()
	l.world().wakeGate()
	<-l.done
}

// markClosedLocked moves the loop to closed and stops counting it as a
// thread. Called with mu held.
func (l *loop) markClosedLocked() {
	l.closed = true
	l.closing.Store(true)
	l.p.addThreads(-1)
}

// releaseLocked closes the epoll fd and the eventfd and drops everything
// queued. Called with mu held.
func (l *loop) releaseLocked() {
	if l.released {
		return
	}
	l.released = true
	l.p.fds.close(l.evfd)
	l.p.fds.closeWith(l.epfd, l.epf.Close)
	l.posted, l.spare = nil, nil
	l.timers = nil // their Stop still reports true: f never ran
	clear(l.regs)
}

// run is the loop's goroutine.
func (l *loop) run() {
	defer l.exited()
	for {
		deadline, now, ok := l.prepare()
		if !ok {
			return
		}
		n, err := l.wait(deadline, now)
		if l.late != nil && l.late.Float64() < l.p.w.cfg.LateShare {
			time.Sleep(time.Duration(l.late.Int64N(int64(l.p.w.cfg.Late))))
		}
		if err != nil {
			l.world().Fail(wrapErr("epoll_wait", l.String(), err))
			return
		}
		for i := range n {
			ev := l.events[i]
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if tok == wakeToken {
				l.drainWake()
				continue
			}
			l.mu.Lock()
			obj := l.regs[tok]
			l.mu.Unlock()
			if obj == nil {
				continue // unregistered by an earlier callback of this batch
			}
			if !l.callback(func() { obj.dispatch(l, ev.Events) }) {
				return
			}
		}
		if !l.runPosted() || !l.runTimers() {
			return
		}
		// A loop stands for an OS thread, and the kernel time-slices
		// threads; without a yield, a goroutine with a queue of
		// callbacks would keep its P for up to 10 ms and starve the
		// other "threads".
		runtime.Gosched()
	}
}

// prepare computes how long the loop may sleep: not at all if callbacks
// were posted or a timer is due (now), until the first timer (its
// deadline), or indefinitely (a zero deadline). It reports false once the
// loop is closed.
func (l *loop) prepare() (deadline time.Time, now bool, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return time.Time{}, false, false
	}
	switch {
	case len(l.posted) > 0:
		return time.Time{}, true, true
	case len(l.timers) > 0:
		when := l.timers[0].when
		if when <= l.Now() {
			return time.Time{}, true, true
		}
		return l.p.w.start.Add(when), false, true
	default:
		return time.Time{}, false, true
	}
}

// wait collects ready events into l.events: at once if now, else parking
// in the runtime poller until the epoll fd is readable (an event, or the
// eventfd written by a wake-up) or deadline (unless zero) passes.
func (l *loop) wait(deadline time.Time, now bool) (int, error) {
	var n int
	var werr error
	poll := func(uintptr) bool {
		for {
			n, werr = unix.EpollWait(l.epfd, l.events, 0)
			if werr != unix.EINTR {
				return n > 0 || werr != nil
			}
		}
	}
	if now {
		poll(0)
		return n, werr
	}
	// The deadline is the first timer's, which seldom changes between
	// iterations; setting it costs a runtime timer update.
	if !deadline.Equal(l.deadline) {
		if err := l.epf.SetReadDeadline(deadline); err != nil {
			return 0, err
		}
		l.deadline = deadline
	}
	err := l.rc.Read(poll)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, nil // the first timer is due
	}
	if err != nil {
		return 0, err
	}
	return n, werr
}

func (l *loop) drainWake() {
	var b [8]byte
	unix.Read(l.evfd, b[:])
}

// runPosted runs the callbacks posted so far (not those they post).
func (l *loop) runPosted() bool {
	l.mu.Lock()
	posted := l.posted
	l.posted, l.spare = l.spare[:0], nil
	l.woken = false
	l.mu.Unlock()
	for i, f := range posted {
		posted[i] = nil
		if !l.callback(f) {
			return false
		}
	}
	l.mu.Lock()
	if l.spare == nil && !l.released {
		l.spare = posted[:0]
	}
	l.mu.Unlock()
	return true
}

// runTimers runs the timers due now, in (deadline, creation) order, but
// not timers set by these callbacks, so a zero-delay timer re-arming
// itself cannot starve readiness. A timer leaves the heap only once its
// callback is past the world's gate: one that comes due while the world
// is parked can still be stopped or reset meanwhile.
func (l *loop) runTimers() bool {
	now := l.Now()
	l.mu.Lock()
	limit := l.tseq
	l.mu.Unlock()
	due := func() bool {
		return len(l.timers) > 0 && l.timers[0].when <= now && l.timers[0].seq < limit
	}
	for {
		l.mu.Lock()
		more := due()
		l.mu.Unlock()
		if !more {
			return true
		}
		if !l.callbackTake(func() func() {
			if !due() {
				return nil // stopped or reset while the world was parked
			}
			t := heap.Pop(&l.timers).(*timer)
			t.state = timerFired
			return t.f
		}) {
			return false
		}
	}
}

// callback runs f as one callback: it waits at the world's gate, runs f
// unless the loop was closed, and turns a panic into a world failure. It
// reports whether the loop is still open.
func (l *loop) callback(f func()) bool {
	return l.callbackTake(func() func() { return f })
}

// callbackTake is callback for the function take returns, called with mu
// held once past the gate (nil: nothing to run).
func (l *loop) callbackTake(take func() func()) bool {
	w := l.world()
	if !w.enter(&l.closing) {
		return false
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		w.exit()
		return false
	}
	f := take()
	if f == nil {
		l.mu.Unlock()
		w.exit()
		return true
	}
	l.inCB = true
	l.mu.Unlock()

	if w.cfg.AccountCPU {
		l.p.accounted(l.kind, func() { l.protect(f) })
	} else {
		l.protect(f)
	}

	l.mu.Lock()
	l.inCB = false
	closed := l.closed
	l.mu.Unlock()
	w.exit()
	return !closed
}

func (l *loop) protect(f func()) {
	defer func() {
		if r := recover(); r != nil {
			l.world().Fail(fmt.Errorf("real: panic in a callback on loop %s: %v\n%s", l, r, debug.Stack()))
		}
	}()
	f()
}

// exited cleans up after the goroutine's last iteration.
func (l *loop) exited() {
	l.mu.Lock()
	if !l.closed {
		l.markClosedLocked() // the loop died (epoll_wait failed)
	}
	l.releaseLocked()
	l.mu.Unlock()
	l.p.mu.Lock()
	delete(l.p.loops, l)
	l.p.mu.Unlock()
	close(l.done)
}

// setInterest changes fd's registration on the loop's epoll from prev to
// mask (0 means not registered). tok identifies obj in epoll events. It
// may be called from any goroutine.
func (l *loop) setInterest(obj pollable, tok uint64, fd int, prev, mask uint32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.released {
		// Leaving, or asking nothing new of, a closed loop is not an
		// error (interest turned off there is a no-op, and no event
		// bits but the errors' sentinel remain); a new registration is.
		if mask == 0 || mask == prev || prev != 0 && mask == unix.EPOLLERR {
			return nil
		}
		return newErr("register on loop", l.String(), model.ErrClosed)
	}
	ev := unix.EpollEvent{Events: mask, Fd: int32(uint32(tok)), Pad: int32(uint32(tok >> 32))}
	var err error
	switch {
	case prev == mask:
		return nil
	case prev == 0:
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
		if err == nil {
			l.regs[tok] = obj
		}
	case mask == 0:
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
		delete(l.regs, tok)
	default:
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, fd, &ev)
	}
	if err != nil {
		return wrapErr("epoll_ctl", l.String(), err)
	}
	return nil
}

// timer is a pending AfterFunc. It implements model.Timer.
type timer struct {
	l     *loop
	f     func()
	when  time.Duration
	seq   uint64
	index int        // in the heap, under l.mu
	state timerState // under l.mu
}

type timerState uint8

const (
	timerPending timerState = iota
	timerFired
	timerStopped
)

// Stop cancels the timer and reports whether f had not yet run. It may be
// called from any goroutine.
func (t *timer) Stop() bool {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	return t.stopLocked()
}

// stopLocked is Stop with mu held.
func (t *timer) stopLocked() bool {
	if t.state != timerPending {
		return false
	}
	if !t.l.released {
		heap.Remove(&t.l.timers, t.index)
	}
	t.state = timerStopped
	return true
}

// Reset is Stop, then the same timer armed again d from now as AfterFunc
// would arm a new one. It may be called from any goroutine.
func (t *timer) Reset(d time.Duration) bool {
	l := t.l
	when := l.Now() + max(d, 0)
	l.mu.Lock()
	defer l.mu.Unlock()
	was := t.stopLocked()
	t.when = when
	l.armLocked(t)
	return was
}

// timerHeap orders timers by deadline, then by creation.
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
