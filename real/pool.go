package real

import (
	"fmt"
	"runtime/debug"
	"sync"

	"xceiver/model"
)

// pool is a worker pool: n goroutines taking work from a queue. It
// implements model.WorkerPool. The queue is unbounded, so Submit never
// blocks the submitting loop; completions go back to that loop with Post,
// which wakes it through its eventfd.
type pool struct {
	p    *process
	name string
	kind *threadKind // its kind's CPU (World.ThreadCPU)
	n    int
	wg   sync.WaitGroup

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []task
	closed bool
}

type task struct {
	l    *loop
	work func()
	done func()
}

var _ model.WorkerPool = (*pool)(nil)

// newPool starts n workers (at least one).
func (p *process) newPool(name string, n int) *pool {
	n = max(n, 1)
	wp := &pool{p: p, name: name, n: n, kind: p.w.threadKind(p.name, name)}
	wp.cond = sync.NewCond(&wp.mu)
	p.mu.Lock()
	if p.shuttingDown {
		// World.Close is tearing the process down: a pool that does
		// nothing (Submit drops work) rather than goroutines that leak.
		p.mu.Unlock()
		wp.closed = true
		return wp
	}
	p.pools[wp] = struct{}{}
	p.threads += n
	p.peakThreads = max(p.peakThreads, p.threads)
	p.mu.Unlock()
	wp.wg.Add(n)
	for range n {
		go wp.worker()
	}
	return wp
}

func (wp *pool) Size() int { return wp.n }

// Submit queues work; a free worker runs it and then posts done to loop.
// Work submitted to a closed pool is dropped, and so is a completion for
// a loop closed meanwhile. A loop of another process fails the world.
func (wp *pool) Submit(ml model.Loop, work func(), done func()) {
	l, err := wp.p.loopOf(ml)
	if err != nil {
		wp.p.w.Fail(fmt.Errorf("real: pool %s/%s: Submit: %w", wp.p.name, wp.name, err))
		return
	}
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if wp.closed {
		return
	}
	wp.queue = append(wp.queue, task{l: l, work: work, done: done})
	wp.cond.Signal()
}

func (wp *pool) worker() {
	defer wp.wg.Done()
	for {
		wp.mu.Lock()
		for len(wp.queue) == 0 && !wp.closed {
			wp.cond.Wait()
		}
		if wp.closed {
			wp.mu.Unlock()
			return
		}
		t := wp.queue[0]
		wp.queue[0] = task{}
		wp.queue = wp.queue[1:]
		wp.mu.Unlock()
		ok := true
		if wp.p.w.cfg.AccountCPU {
			wp.p.accounted(wp.kind, func() { ok = wp.run(t.work) })
		} else {
			ok = wp.run(t.work)
		}
		if ok && t.done != nil {
			t.l.Post(t.done)
		}
	}
}

// run runs work, turning a panic into a world failure (and dropping the
// completion).
func (wp *pool) run(work func()) (ok bool) {
	if work == nil {
		return true
	}
	defer func() {
		if r := recover(); r != nil {
			wp.p.w.Fail(fmt.Errorf("real: panic in work on pool %s/%s: %v\n%s", wp.p.name, wp.name, r, debug.Stack()))
			ok = false
		}
	}()
	work()
	return true
}

// Close stops the workers: queued work is dropped, work already running
// finishes (and its completion is still posted), and Close waits for the
// workers to exit. Do not call it from a work function.
func (wp *pool) Close() {
	wp.mu.Lock()
	if wp.closed {
		wp.mu.Unlock()
		return
	}
	wp.closed = true
	wp.queue = nil
	wp.cond.Broadcast()
	wp.mu.Unlock()
	wp.wg.Wait()
	p := wp.p
	p.mu.Lock()
	if _, ok := p.pools[wp]; ok {
		delete(p.pools, wp)
		p.threads -= wp.n
	}
	p.mu.Unlock()
}

// lock is a real mutex shared by a process's loops. It implements
// model.Lock.
type lock struct {
	p    *process
	name string
	mu   sync.Mutex
}

var _ model.Lock = (*lock)(nil)

// Do posts a callback to loop that takes the mutex, runs f and releases
// it. f runs on loop, as the interface requires, and the loop really
// blocks while another loop holds the mutex, so contention costs what it
// costs in a real multi-threaded client. f must not wait for another loop
// (which could be blocked on the same mutex).
func (k *lock) Do(ml model.Loop, f func()) {
	l, err := k.p.loopOf(ml)
	if err != nil {
		k.p.w.Fail(fmt.Errorf("real: lock %s/%s: Do: %w", k.p.name, k.name, err))
		return
	}
	if f == nil {
		return
	}
	l.Post(func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if l.closing.Load() {
			// Closed while this callback waited for the mutex (Close
			// from a callback does not wait for the loop's own): a
			// closed loop's pending callbacks are dropped, as in the
			// sim, where a waiting Do is pending on its loop.
			return
		}
		f()
	})
}

// rwlock is a model.RWLock that serves its waiters in arrival order, as
// the interface promises and the sim's does: a sync.RWMutex lets the
// readers waiting on a writer go before a writer that came first. Like
// lock, f runs on the loop, which really blocks while the lock is held the
// other way.
type rwlock struct {
	p    *process
	name string
	mu   sync.Mutex
	// writer: held exclusively; readers: how many hold it shared.
	writer  bool
	readers int
	// waiters, in arrival order; each is granted the lock by the release
	// that frees it for it (the head only, or the run of readers at the
	// head), and woken through its channel.
	waiters []rwWaiter
}

type rwWaiter struct {
	write   bool
	granted chan struct{}
}

var _ model.RWLock = (*rwlock)(nil)

func (k *rwlock) free(write bool) bool { return !k.writer && (!write || k.readers == 0) }

func (k *rwlock) take(write bool) {
	if write {
		k.writer = true
	} else {
		k.readers++
	}
}

// acquire blocks until the lock is held (write: exclusively); a waiter
// never overtakes one that came before it.
func (k *rwlock) acquire(write bool) {
	k.mu.Lock()
	if len(k.waiters) == 0 && k.free(write) {
		k.take(write)
		k.mu.Unlock()
		return
	}
	w := rwWaiter{write: write, granted: make(chan struct{})}
	k.waiters = append(k.waiters, w)
	k.mu.Unlock()
	<-w.granted
}

func (k *rwlock) release(write bool) {
	k.mu.Lock()
	if write {
		k.writer = false
	} else {
		k.readers--
	}
	for len(k.waiters) > 0 && k.free(k.waiters[0].write) {
		w := k.waiters[0]
		k.waiters[0] = rwWaiter{}
		k.waiters = k.waiters[1:]
		k.take(w.write)
		close(w.granted)
	}
	k.mu.Unlock()
}

func (k *rwlock) post(ml model.Loop, op string, write bool, f func()) {
	l, err := k.p.loopOf(ml)
	if err != nil {
		k.p.w.Fail(fmt.Errorf("real: rwlock %s/%s: %s: %w", k.p.name, k.name, op, err))
		return
	}
	if f == nil {
		return
	}
	l.Post(func() {
		k.acquire(write)
		defer k.release(write)
		if l.closing.Load() {
			return // closed while waiting: dropped, as lock.Do's
		}
		f()
	})
}

// Do runs f on loop holding the lock exclusively.
func (k *rwlock) Do(ml model.Loop, f func()) { k.post(ml, "Do", true, f) }

// RDo runs f on loop holding the lock shared.
func (k *rwlock) RDo(ml model.Loop, f func()) { k.post(ml, "RDo", false, f) }
