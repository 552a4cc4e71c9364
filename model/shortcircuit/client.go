package shortcircuit

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"xceiver/model"
)

// SharedConfig configures a process's short-circuit state.
type SharedConfig struct {
	Cache CacheConfig
	// TokenKey signs the clients' block tokens (nil: model.DefaultTokenKey).
	TokenKey []byte
	// Timeout fails a domain-socket exchange that makes no progress.
	Timeout time.Duration
	Bugs    ClientBugs
	// Watch, if set, hears the path state's decisions as they are made
	// (nil: no one listens).
	Watch *PathWatch
}

// PathWatch hears what turns short-circuit to a path off and what it
// keeps from the datanode, as HDFS's tests read DomainSocketFactory's
// path state: check holds their timing to DisableFor. Each hook runs
// inline, on the loop named, and must not block, post or charge CPU.
type PathWatch struct {
	// Failed: a read's short-circuit attempt on loop failed with err,
	// heard before the client decides what the failure means for the
	// path (a refusal, IsPathDisabled's error and IsLocalReadError's turn
	// nothing off).
	Failed func(loop model.Loop, err error)
	// Off: the failure last heard on loop has turned the path off, under
	// the lock every fetch's look at the path takes.
	Off func(loop model.Loop)
	// Asking: a fetch on loop is about to look at the path's state; the
	// func returned hears, under that lock, whether the fetch goes on to
	// ask the datanode (false: the path is off).
	Asking func(loop model.Loop) func(ask bool)
}

func (pw *PathWatch) failed(loop model.Loop, err error) {
	if pw != nil && pw.Failed != nil {
		pw.Failed(loop, err)
	}
}

func (pw *PathWatch) off(loop model.Loop) {
	if pw != nil && pw.Off != nil {
		pw.Off(loop)
	}
}

func (pw *PathWatch) asking(loop model.Loop) func(bool) {
	if pw != nil && pw.Asking != nil {
		return pw.Asking(loop)
	}
	return func(bool) {}
}

// ClientBugs switch on historic client bugs.
type ClientBugs struct {
	// ReleaseToWrongPath is HDFS-16535: a slot's release goes to the
	// domain socket at this address (another datanode on the host)
	// instead of the one that registered the slot.
	ReleaseToWrongPath string
	// NeverDisable: a failed attempt turns short-circuit off for no
	// time, so the next miss asks the datanode again at once.
	NeverDisable bool
	// OffExtendedByTCP: a fetch that finds the path off counts as a
	// failure and turns it off again from then, so reads made while it
	// is off keep it off for good.
	OffExtendedByTCP bool
	// LocalUnverified: a replica read through its passed fds is not
	// checked against its checksums though SkipChecksum is off, so bytes
	// rotted on the datanode's disk come back as good data.
	LocalUnverified bool
	// OffOnLocalError: a read of a replica through its passed fds that
	// fails (a checksum error: rot on the datanode's disk) turns
	// short-circuit to the path off for DisableFor, as a failed fd
	// request does, though nothing is wrong with the domain socket.
	OffOnLocalError bool
}

// Shared is a process's short-circuit state (HDFS's ClientContext): the
// cache and the shared-memory segments, shared by the clients on its
// loops.
type Shared struct {
	cfg   SharedConfig
	p     model.Process
	cache *Cache
	lock  model.Lock // guards the fields below

	shms      map[string]*clientShm // by domain path; the current segment
	all       []*clientShm          // every segment still mapped
	releasing int                   // slot releases in flight
	cleaning  bool                  // a cleaner timer is armed
	// cleanAgain: an insert came while a pass was under way, so the
	// pass goes on even if it counted an empty cache.
	cleanAgain bool
	closed     bool
	stats      SharedStats
	// disabled: short-circuit to a domain socket path stays off until
	// then after a failure (HDFS's DomainSocketFactory path state: per
	// process and path, not per reader).
	disabled map[string]time.Duration

	// The slot releaser (HDFS's SlotReleaser) runs on the process's main
	// loop: one release at a time over one cached domain connection.
	// These fields belong to that loop.
	relQ    []func()
	relBusy bool
	rel     idleConn
}

// idleExpiry is how long an idle domain connection stays cached (HDFS's
// dfs.client.socketcache.expiryMsec).
const idleExpiry = 3 * time.Second

// errPathDisabled: short-circuit is off for the path after a failure.
var errPathDisabled = errors.New("short-circuit is off for this domain socket path after a failure")

// IsPathDisabled reports whether err is a fetch's that found short-circuit
// off for its path (no attempt was made, so nothing failed).
func IsPathDisabled(err error) bool { return errors.Is(err, errPathDisabled) }

// errLocalRead: reading a replica through its passed fds failed.
var errLocalRead = errors.New("read through passed fds")

// IsLocalReadError reports whether err is a failed read of a replica
// through its passed fds (a checksum error, mostly), which says nothing
// about the domain socket, so it turns nothing off.
func IsLocalReadError(err error) bool { return errors.Is(err, errLocalRead) }

// idleConn caches one idle domain connection to a path, owned by one
// loop; it is dropped when it expires or when anything happens on it
// (the datanode closed it).
type idleConn struct {
	c     model.Conn
	path  string
	timer model.Timer
}

// park caches c (closing the one cached before, if any).
func (ic *idleConn) park(loop model.Loop, path string, c model.Conn) {
	ic.drop()
	ic.c, ic.path = c, path
	c.SetWriteInterest(false)
	c.SetHandler(loop, func(model.Events) {
		if ic.c != c {
			return
		}
		var b [1]byte
		if _, err := c.Read(b[:]); errors.Is(err, model.ErrWouldBlock) {
			return
		}
		ic.drop() // closed by the datanode, or bytes nobody asked for
	})
	ic.timer = loop.AfterFunc(idleExpiry, func() {
		ic.timer = nil
		ic.drop()
	})
}

// take returns the cached connection to path, if any.
func (ic *idleConn) take(path string) model.Conn {
	c := ic.c
	if c == nil || ic.path != path {
		return nil
	}
	ic.c = nil
	if ic.timer != nil {
		ic.timer.Stop()
		ic.timer = nil
	}
	return c
}

func (ic *idleConn) drop() {
	if ic.timer != nil {
		ic.timer.Stop()
		ic.timer = nil
	}
	if ic.c != nil {
		_ = ic.c.Close()
		ic.c = nil
	}
}

// SharedStats counts what the shared state did.
type SharedStats struct {
	Segments, SlotsAllocated, SlotsReleased, ReleaseErrors, Disconnects int
}

// clientShm is a segment the client mapped.
type clientShm struct {
	path    string
	id      uint64
	seg     model.Segment
	conn    model.Conn
	ready   bool
	gone    bool // its connection to the datanode closed
	used    [SlotsPerSegment]bool
	nused   int
	waiters []slotWaiter
}

type slotWaiter struct {
	loop model.Loop
	cb   func(*Slot, error)
}

// Slot is a replica's slot in a segment.
type Slot struct {
	shm *clientShm
	idx int
}

// Valid reports whether the datanode still vouches for the slot's replica.
func (s *Slot) Valid() bool {
	return s.shm.seg.Load(s.idx*SlotSize+slotFlags)&flagValid != 0
}

// vouchesFor reports whether the slot is valid for replica k: valid, and
// registered for k's block and stamp, which the datanode writes before it
// sets the valid bit (and clears after it clears it). The valid bit alone
// would let a slot the datanode cleared, then registered again for another
// block (a request naming this segment's slot, from whoever learnt the
// segment's id), vouch for a replica whose block has since changed.
func (s *Slot) vouchesFor(k Key) bool {
	off := s.idx * SlotSize
	return s.Valid() && s.shm.seg.Load(off+slotBlock) == k.Block && s.shm.seg.Load(off+slotStamp) == k.Stamp
}

// NewShared makes the short-circuit state of process p.
func NewShared(p model.Process, cfg SharedConfig) (*Shared, error) {
	if cfg.TokenKey == nil {
		cfg.TokenKey = model.DefaultTokenKey
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	sh := &Shared{cfg: cfg, p: p, lock: p.NewLock("sc-shm"), shms: map[string]*clientShm{}, disabled: map[string]time.Duration{}}
	cache, err := NewCache(p, cfg.Cache, sh.closeReplica)
	if err != nil {
		return nil, err
	}
	sh.cache = cache
	return sh, nil
}

// Cache is the short-circuit cache.
func (sh *Shared) Cache() *Cache { return sh.cache }

// Resources reports, under the lock, the segments mapped, the slots in
// use and the releases in flight; done runs on loop.
func (sh *Shared) Resources(loop model.Loop, done func(segments, slots, releasing int)) {
	sh.lock.Do(loop, func() {
		slots := 0
		for _, s := range sh.all {
			slots += s.nused
		}
		segs, rel := len(sh.all), sh.releasing
		loop.Post(func() { done(segs, slots, rel) })
	})
}

// Stats returns the counters; done runs on loop.
func (sh *Shared) Stats(loop model.Loop, done func(SharedStats)) {
	sh.lock.Do(loop, func() {
		st := sh.stats
		loop.Post(func() { done(st) })
	})
}

// Close empties the cache, waits for the slot releases and unmaps the
// segments, closing their connections; then done runs on loop. Replicas
// readers still hold are closed when given back.
func (sh *Shared) Close(loop model.Loop, done func()) {
	sh.cache.PurgeAll(loop, func() {
		var wait func()
		wait = func() {
			sh.lock.Do(loop, func() {
				if sh.releasing > 0 {
					loop.AfterFunc(time.Millisecond, wait)
					return
				}
				sh.closed = true
				for _, s := range append([]*clientShm(nil), sh.all...) {
					sh.disconnect(s)
				}
				ml := sh.p.MainLoop()
				ml.Post(func() {
					sh.rel.drop()
					loop.Post(done)
				})
			})
		}
		wait()
	})
}

// armCleaner makes sure a timer expires idle replicas (HDFS's
// CacheCleaner) while the cache holds any.
func (sh *Shared) armCleaner(loop model.Loop) {
	sh.lock.Do(loop, func() {
		if sh.closed {
			return
		}
		if sh.cleaning {
			// The pass under way may have counted the cache before this
			// insert: it must go on whatever it counted.
			sh.cleanAgain = true
			return
		}
		sh.cleaning = true
		sh.scheduleClean()
	})
}

// scheduleClean arms the cleaner's next pass on the process's main loop,
// which outlives every reader's (HDFS's cleaner has a thread of its own).
// Under the lock.
func (sh *Shared) scheduleClean() {
	sh.cleanAgain = false
	ml := sh.p.MainLoop()
	ml.Post(func() {
		ml.AfterFunc(sh.cache.cfg.Expiry, func() {
			sh.cache.Expire(ml, func() {
				sh.cache.Stats(ml, func(_ CacheStats, cached, _ int) {
					// Whether to stop is decided under the lock an
					// insert's armCleaner takes, so no insert falls
					// between.
					sh.lock.Do(ml, func() {
						if (cached > 0 || sh.cleanAgain) && !sh.closed {
							sh.scheduleClean()
							return
						}
						sh.cleaning = false
					})
				})
			})
		})
	})
}

// closeReplica runs when a replica's last reference goes: its fds close
// and its slot is released.
func (sh *Shared) closeReplica(loop model.Loop, r *Replica) {
	_ = r.Data.Close()
	_ = r.Meta.Close()
	if r.Slot != nil {
		sh.releaseSlot(loop, r.Slot)
	}
}

// allocSlot gives a free slot in the segment of the datanode at path,
// asking the datanode for a segment first if there is none.
func (sh *Shared) allocSlot(loop model.Loop, path string, cb func(*Slot, error)) {
	decided := sh.cfg.Watch.asking(loop)
	sh.lock.Do(loop, func() {
		if sh.closed {
			loop.Post(func() { cb(nil, model.ErrClientClosed) })
			return
		}
		if loop.Now() < sh.disabled[path] {
			decided(false)
			loop.Post(func() { cb(nil, fmt.Errorf("%s: %w", path, errPathDisabled)) })
			return
		}
		decided(true)
		for _, s := range sh.all {
			if s.path == path && !s.gone && s.nused < SlotsPerSegment {
				slot, err := sh.take(s)
				loop.Post(func() { cb(slot, err) })
				return
			}
		}
		// Every segment is full (or there is none): ask for another, as
		// HDFS's DfsClientShmManager does.
		s := sh.shms[path]
		if s == nil || s.gone || s.ready {
			s = &clientShm{path: path}
			sh.shms[path] = s
			loop.Post(func() { sh.requestShm(loop, s) })
		}
		s.waiters = append(s.waiters, slotWaiter{loop, cb})
	})
}

// take allocates a slot of s. Under the lock.
func (sh *Shared) take(s *clientShm) (*Slot, error) {
	for i := range s.used {
		if !s.used[i] {
			s.used[i] = true
			s.nused++
			sh.stats.SlotsAllocated++
			return &Slot{shm: s, idx: i}, nil
		}
	}
	return nil, fmt.Errorf("segment %#x has no free slot: %w", s.id, model.ErrTooManyFiles)
}

// requestShm asks the datanode for a segment over a connection that then
// stays open: the datanode frees the segment when it closes, and the
// client learns that the datanode is gone when it does.
func (sh *Shared) requestShm(loop model.Loop, s *clientShm) {
	ex := &exchange{sh: sh, loop: loop, path: s.path, req: Request{Op: OpRequestShm, ClientID: sh.p.Name()}, keep: true}
	ex.done = func(resp Response, files []model.File, c model.Conn, err error) {
		var seg model.Segment
		if err == nil && (len(files) != 1 || resp.Size != SegmentSize) {
			err = fmt.Errorf("segment reply with %d fds, size %d: %w", len(files), resp.Size, ErrFallback)
		}
		if err == nil {
			seg, err = sh.p.MapSegment(files[0], SegmentSize)
		}
		for _, f := range files {
			_ = f.Close()
		}
		if err != nil && c != nil {
			_ = c.Close()
		}
		if err == nil {
			c.SetHandler(loop, func(ev model.Events) { sh.watchShm(loop, s, c) })
		}
		sh.lock.Do(loop, func() {
			waiters := s.waiters
			s.waiters = nil
			if err != nil || sh.closed {
				if sh.shms[s.path] == s {
					delete(sh.shms, s.path)
				}
				if err == nil {
					err = model.ErrClientClosed
					_ = seg.Unmap()
					_ = c.Close()
				}
				for _, w := range waiters {
					w.loop.Post(func() { w.cb(nil, err) })
				}
				return
			}
			s.id, s.seg, s.conn, s.ready = resp.ShmID, seg, c, true
			sh.all = append(sh.all, s)
			sh.stats.Segments++
			if sh.shms[s.path] == s {
				delete(sh.shms, s.path) // no longer pending
			}
			for _, w := range waiters {
				if s.nused == SlotsPerSegment {
					w.loop.Post(func() { sh.allocSlot(w.loop, s.path, w.cb) })
					continue
				}
				slot, err := sh.take(s)
				w.loop.Post(func() { w.cb(slot, err) })
			}
		})
	}
	ex.start()
}

// watchShm notices the datanode closing a segment's connection.
func (sh *Shared) watchShm(loop model.Loop, s *clientShm, c model.Conn) {
	var b [64]byte
	for {
		n, err := c.Read(b[:])
		if n > 0 {
			continue // nothing is expected; ignore
		}
		if errors.Is(err, model.ErrWouldBlock) {
			return
		}
		break
	}
	c.SetReadInterest(false)
	sh.lock.Do(loop, func() {
		sh.stats.Disconnects++
		sh.disconnect(s)
	})
}

// disconnect forgets a segment whose datanode went away (or at close):
// every slot turns invalid, so cached replicas are purged when next
// looked up, and the segment is unmapped once no slot is in use. Under
// the lock.
func (sh *Shared) disconnect(s *clientShm) {
	if !s.gone {
		s.gone = true
		for i, u := range s.used {
			if u {
				s.seg.Store(i*SlotSize+slotFlags, 0)
			}
		}
		if s.conn != nil {
			_ = s.conn.Close()
		}
		if sh.shms[s.path] == s {
			delete(sh.shms, s.path)
		}
	}
	sh.unmapIfIdle(s)
}

func (sh *Shared) unmapIfIdle(s *clientShm) {
	if !s.gone || s.nused > 0 || s.seg == nil {
		return
	}
	_ = s.seg.Unmap()
	s.seg = nil
	for i, o := range sh.all {
		if o == s {
			sh.all = append(sh.all[:i], sh.all[i+1:]...)
			break
		}
	}
}

// freeSlot returns a slot to its segment. Under the lock.
func (sh *Shared) freeSlot(slot *Slot) {
	s := slot.shm
	if s.used[slot.idx] {
		s.used[slot.idx] = false
		s.nused--
	}
	sh.unmapIfIdle(s)
}

// releaseSlot tells the datanode a slot is free, then frees it; when the
// datanode is gone there is no one to tell.
func (sh *Shared) releaseSlot(loop model.Loop, slot *Slot) {
	sh.lock.Do(loop, func() {
		s := slot.shm
		if s.gone {
			sh.stats.SlotsReleased++
			sh.freeSlot(slot)
			return
		}
		sh.releasing++
		path := s.path
		if p := sh.cfg.Bugs.ReleaseToWrongPath; p != "" {
			path = p
		}
		ml := sh.p.MainLoop()
		start := func() {
			ex := &exchange{sh: sh, loop: ml, path: path, req: Request{Op: OpReleaseSlot, ShmID: s.id, Slot: uint32(slot.idx)}, keep: true, c: sh.rel.take(path)}
			ex.done = func(resp Response, files []model.File, c model.Conn, err error) {
				for _, f := range files {
					_ = f.Close()
				}
				if c != nil {
					sh.rel.park(ml, path, c)
				}
				sh.lock.Do(ml, func() {
					sh.releasing--
					if err != nil {
						sh.stats.ReleaseErrors++
						sh.p.Log("sc-release-error", "shm", s.id, "slot", slot.idx, "err", err.Error())
					}
					if err != nil && !errors.Is(err, model.ErrRejected) {
						// The datanode may still count the slot, and the
						// client cannot tell it otherwise: drop the whole
						// segment (its connection's close frees every slot
						// there), as HDFS shuts a segment's manager down.
						// A rejection means the datanode holds no such
						// slot.
						sh.disconnect(s)
					}
					// The next release starts once this one's failure
					// has dropped the segment, if it did.
					sh.released(ml, slot)
				})
			}
			ex.start()
		}
		job := func() {
			// Released one at a time, a release may have waited behind
			// others long enough for its segment to go (an earlier
			// release to a hung datanode failed, and dropping the
			// segment freed every slot at the datanode): there is no
			// one to tell, and asking would wait out a timeout more.
			sh.lock.Do(ml, func() {
				if !s.gone {
					ml.Post(start)
					return
				}
				sh.releasing--
				sh.released(ml, slot)
			})
		}
		ml.Post(func() {
			sh.relQ = append(sh.relQ, job)
			sh.pumpReleases()
		})
	})
}

// released frees a slot whose release is over (told, failed, or with no
// one left to tell) and starts the next queued release. Under the lock.
func (sh *Shared) released(ml model.Loop, slot *Slot) {
	sh.stats.SlotsReleased++
	sh.freeSlot(slot)
	ml.Post(func() {
		sh.relBusy = false
		sh.pumpReleases()
	})
}

// pumpReleases starts the next queued release on the main loop, over the
// cached connection when it goes to the same path.
func (sh *Shared) pumpReleases() {
	if sh.relBusy || len(sh.relQ) == 0 {
		return
	}
	job := sh.relQ[0]
	sh.relQ[0] = nil
	sh.relQ = sh.relQ[1:]
	sh.relBusy = true
	job()
}

// exchange is one request and its response (with fds) on a domain
// connection: c if set (a cached one), else a fresh one. The connection
// is closed after unless keep is set: then done gets it on success (a
// segment's connection, or one to cache for the next request).
type exchange struct {
	sh   *Shared
	loop model.Loop
	path string
	req  Request
	keep bool
	c    model.Conn
	fds  int // fds the response passes (checked when it asks for a receipt)
	done func(resp Response, files []model.File, c model.Conn, err error)

	reused   bool // c came from a cache
	redials  int  // times it started again on a fresh connection
	out      []byte
	outOff   int
	in       []byte
	files    []model.File
	timer    model.Timer
	finished bool
	dialWait time.Duration // waited for room in the accept queue (model.RetryUnixDial)
}

func (ex *exchange) start() {
	if ex.finished {
		return // timed out while it waited for room in the accept queue
	}
	if ex.c != nil {
		ex.reused = true
		ex.c.SetHandler(ex.loop, ex.onEvent)
		ex.c.SetReadInterest(true)
	} else {
		c, err := ex.sh.p.Dial("unix", ex.path, ex.loop, ex.onEvent)
		if err != nil {
			if model.RetryUnixDial("unix", err, &ex.dialWait, ex.sh.cfg.Timeout) {
				if ex.timer == nil {
					// Waiting is no progress: the timeout bounds it.
					ex.armTimeout()
				}
				ex.loop.AfterFunc(model.UnixDialRetry, ex.start)
				return
			}
			ex.finish(Response{}, fmt.Errorf("dial %s: %w", ex.path, err))
			return
		}
		ex.c = c
	}
	c := ex.c
	ex.out = AppendRequest(nil, ex.req)
	if ex.timer != nil {
		ex.timer.Stop() // the wait's: the exchange starts its own now
	}
	ex.armTimeout()
	c.SetWriteInterest(true)
}

// armTimeout fails the exchange if no answer comes within the timeout.
func (ex *exchange) armTimeout() {
	ex.timer = ex.loop.AfterFunc(ex.sh.cfg.Timeout, func() {
		ex.timer = nil
		ex.finish(Response{}, fmt.Errorf("domain socket %s: no answer for %v: %w", ex.path, ex.sh.cfg.Timeout, model.ErrTimedOut))
	})
}

func (ex *exchange) onEvent(ev model.Events) {
	if ex.finished {
		return
	}
	if ev&model.Writable != 0 && ex.outOff < len(ex.out) {
		n, err := ex.c.Write(ex.out[ex.outOff:])
		if err != nil && !errors.Is(err, model.ErrWouldBlock) {
			ex.finish(Response{}, fmt.Errorf("send to %s: %w", ex.path, err))
			return
		}
		ex.outOff += n
		if ex.outOff == len(ex.out) {
			ex.c.SetWriteInterest(false)
		}
	}
	if ev&(model.Readable|model.Hangup) == 0 {
		return
	}
	for !ex.finished {
		var b [512]byte
		n, files, err := ex.c.ReadFDs(b[:])
		ex.files = append(ex.files, files...)
		ex.in = append(ex.in, b[:n]...)
		if err != nil && !errors.Is(err, model.ErrWouldBlock) {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("datanode closed the domain connection: %w", io.ErrUnexpectedEOF)
			}
			ex.finish(Response{}, fmt.Errorf("receive from %s: %w", ex.path, err))
			return
		}
		if len(ex.in) > 0 {
			resp, _, derr := DecodeResponse(ex.in)
			if derr == nil {
				switch {
				case resp.Status != model.StatusSuccess:
					ex.finish(resp, fmt.Errorf("%s: %s: %w", resp.Status, resp.Message, model.ErrRejected))
				case resp.Receipt:
					ex.confirm(resp)
				default:
					ex.finish(resp, nil)
				}
				return
			}
			if !errors.Is(derr, model.ErrNeedMore) {
				ex.finish(Response{}, fmt.Errorf("%w: %v", model.ErrBadStream, derr))
				return
			}
		}
		if n == 0 {
			return
		}
	}
}

// confirm sends the receipt the datanode asked for, once every fd
// arrived: fds the kernel dropped (MSG_CTRUNC) get none, and the
// connection's close tells the datanode to free the slot.
func (ex *exchange) confirm(resp Response) {
	if len(ex.files) != ex.fds {
		ex.finish(resp, fmt.Errorf("%d fds passed, want %d: %w", len(ex.files), ex.fds, ErrFallback))
		return
	}
	if _, err := ex.c.Write([]byte{ReceiptByte}); err != nil {
		ex.finish(resp, fmt.Errorf("send receipt to %s: %w", ex.path, err))
		return
	}
	ex.finish(resp, nil)
}

func (ex *exchange) finish(resp Response, err error) {
	if ex.finished {
		return
	}
	if ex.timer != nil {
		ex.timer.Stop()
		ex.timer = nil
	}
	if err != nil && ex.reused && len(ex.in) == 0 && len(ex.files) == 0 && !errors.Is(err, model.ErrTimedOut) {
		// A cached connection the datanode closed while it sat idle:
		// try once more on a fresh one, as HDFS does with a cached peer.
		_ = ex.c.Close()
		ex.c, ex.reused, ex.outOff = nil, false, 0
		ex.redials++
		ex.start()
		return
	}
	ex.finished = true
	var c model.Conn
	if ex.c != nil {
		if ex.keep && err == nil {
			c = ex.c // done sets its handler
		} else {
			_ = ex.c.Close()
		}
	}
	files := ex.files
	ex.files = nil
	ex.done(resp, files, c, err)
}

// ClientConfig configures a short-circuit client.
type ClientConfig struct {
	// Path is the datanode's domain socket; reads go short-circuit.
	Path string
	// TCP is the fallback client's configuration (and its datanode).
	TCP model.ClientConfig
	// SkipChecksum reads without verifying CRC32C (HDFS's
	// dfs.client.read.shortcircuit.skip.checksum).
	SkipChecksum bool
	// DisableFor is how long short-circuit stays off after a failure
	// (HDFS's dfs.client.domain.socket.disable.interval, 10 min).
	DisableFor time.Duration
}

// DefaultDisableFor is how long short-circuit stays off after a failure
// unless configured (HDFS's dfs.client.domain.socket.disable.interval).
const DefaultDisableFor = 10 * time.Minute

// ClientStats counts what a short-circuit client did.
type ClientStats struct {
	Reads, LocalReads, TCPReads, Fallbacks, Hits, Misses, FDsReceived, LocalErrors int
	// Shared counts the misses served by the replica another reader's
	// fetch of the block brought in: they received no fds of their own.
	Shared int
	// Redials counts fd requests started again on a fresh connection
	// after the cached one turned out closed by the datanode (the dead
	// cached socket of HDFS's peer cache), whether or not the new dial
	// then connected.
	Redials int
}

// Client reads blocks short-circuit where it can and over TCP where it
// cannot. Its methods run on its loop.
type Client struct {
	cfg   ClientConfig
	p     model.Process
	loop  model.Loop
	sh    *Shared
	tcp   *model.Client
	stats ClientStats
	ops   int
	// idle caches the domain connection of the last fd request for the
	// next (HDFS's PeerCache); it belongs to the client's loop.
	idle   idleConn
	closed bool
}

// NewClient makes a short-circuit client on loop sharing sh.
func NewClient(p model.Process, loop model.Loop, id int, sh *Shared, cfg ClientConfig) (*Client, error) {
	if cfg.DisableFor == 0 {
		cfg.DisableFor = DefaultDisableFor
	}
	if cfg.TCP.TokenKey == nil {
		cfg.TCP.TokenKey = sh.cfg.TokenKey
	}
	tcp, err := model.NewClient(p, loop, id, cfg.TCP)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, p: p, loop: loop, sh: sh, tcp: tcp}, nil
}

// TCP is the fallback client.
func (c *Client) TCP() *model.Client { return c.tcp }

// Stats returns the counters.
func (c *Client) Stats() ClientStats { return c.stats }

// InFlight is the number of reads not finished.
func (c *Client) InFlight() int { return c.ops }

// Close closes the fallback client and the cached domain connection (the
// shared state is closed by its owner).
func (c *Client) Close() {
	c.closed = true
	c.idle.drop()
	c.tcp.Close()
}

// Read reads n bytes at off of block (stamp 0: any), short-circuit if it
// can, and calls done.
func (c *Client) Read(block, stamp uint64, off, n int64, done func(model.Result)) {
	c.ReadVia(block, stamp, off, n, func(r model.Result, _ bool) { done(r) })
}

// ReadRoom is the room ReadInto's buffer needs for a read of n bytes:
// the most checksum chunks n bytes can touch (a local read takes whole
// chunks), and their checksums.
func ReadRoom(n int64) int {
	chunks := (n+model.BytesPerChecksum-2)/model.BytesPerChecksum + 1
	return int(chunks) * (model.BytesPerChecksum + model.ChecksumSize)
}

// ReadVia is Read telling done whether the read was served from the
// replica's passed fds (local) or over TCP, as HDFS's ReadStatistics
// count short-circuit bytes apart from the rest.
func (c *Client) ReadVia(block, stamp uint64, off, n int64, done func(r model.Result, local bool)) {
	c.ReadInto(block, stamp, off, n, nil, done)
}

// ReadInto is ReadVia into the caller's buffer, as model.Client's
// ReadInto: done's Result.Data lies within into (a local read's after
// the chunks' checksums and the first chunk's lead, not at into[:n]) when
// cap(into) is at least ReadRoom(n), since a local read takes whole
// checksum chunks and their checksums; else, over TCP too, it is in a
// buffer of its own (nil: ReadVia). A reader that reads over and over (a
// pread into its buffer, as bench hdfs-15202's threads) spares a buffer
// of the read's size each time. into is the client's until done is
// called.
func (c *Client) ReadInto(block, stamp uint64, off, n int64, into []byte, done func(r model.Result, local bool)) {
	if cap(into) < ReadRoom(n) {
		into = nil // (a buffer of the read's own, whichever way it goes)
	}
	c.ops++
	c.stats.Reads++
	finish := func(r model.Result, local bool) {
		c.ops--
		done(r, local)
	}
	// The path's state is looked at only where the datanode would be
	// asked (a miss): a cached replica whose slot is valid stays
	// readable. HDFS looks before its cache lookup, in a concurrent map;
	// here that would put a process-wide lock on every read.
	if c.cfg.Path == "" || off < 0 || n < 0 {
		c.viaTCP(block, stamp, off, n, into, finish)
		return
	}
	c.sh.cache.Lookup(c.loop, block, stamp, func(r *Replica, how Outcome, err error) {
		if how == LookupHit {
			c.stats.Hits++
		} else {
			c.stats.Misses++
		}
		if how == LookupShared {
			c.stats.Shared++
		}
		switch how {
		case LookupHit, LookupShared:
			c.readLocal(r, block, stamp, off, n, into, finish)
		case LookupFailed:
			// The fetch this read waited for failed; its reader has
			// recorded the failure (fallback), as HDFS's waiters in
			// fetchOrCreate go on to the next block reader.
			c.viaTCP(block, stamp, off, n, into, finish)
		case LookupFetch:
			c.fetch(block, stamp, func(r *Replica, err error) {
				if err != nil {
					c.sh.cache.FetchFailed(c.loop, block, err)
					c.sh.cfg.Watch.failed(c.loop, err)
					if !errors.Is(err, errPathDisabled) || c.sh.cfg.Bugs.OffExtendedByTCP {
						c.fallback(err)
					}
					c.viaTCP(block, stamp, off, n, into, finish)
					return
				}
				c.sh.cache.Insert(c.loop, r, func() {
					c.sh.armCleaner(c.loop)
					c.readLocal(r, block, stamp, off, n, into, finish)
				})
			})
		}
	})
}

func (c *Client) viaTCP(block, stamp uint64, off, n int64, into []byte, done func(model.Result, bool)) {
	c.stats.TCPReads++
	c.tcp.ReadInto(block, stamp, off, n, into, func(r model.Result) { done(r, false) })
}

// fallback records a failed short-circuit attempt. A rejection (missing
// block, refused token) says nothing about the path, nor does a replica
// that failed its read; anything else (the fd request failed) turns
// short-circuit to the path off for a while for the whole process, as
// HDFS's DomainSocketFactory.disableShortCircuitForPath does.
func (c *Client) fallback(err error) {
	c.stats.Fallbacks++
	c.p.Log("sc-fallback", "err", err.Error())
	if !errors.Is(err, model.ErrRejected) && (!IsLocalReadError(err) || c.sh.cfg.Bugs.OffOnLocalError) {
		sh, path, until := c.sh, c.cfg.Path, c.loop.Now()+c.cfg.DisableFor
		if c.sh.cfg.Bugs.NeverDisable {
			until = c.loop.Now()
		}
		sh.lock.Do(c.loop, func() {
			sh.disabled[path] = max(sh.disabled[path], until)
			sh.cfg.Watch.off(c.loop)
		})
	}
}

// fetch asks the datanode for a replica's fds, with a slot.
func (c *Client) fetch(block, stamp uint64, cb func(*Replica, error)) {
	c.sh.allocSlot(c.loop, c.cfg.Path, func(slot *Slot, err error) {
		if err != nil {
			cb(nil, err)
			return
		}
		tok := model.IssueToken(c.sh.cfg.TokenKey, model.BlockToken{
			BlockID: block, GenStamp: stamp, Modes: model.ModeRead, Expiry: c.loop.Now() + model.DefaultTokenLifetime,
		})
		ex := &exchange{sh: c.sh, loop: c.loop, path: c.cfg.Path, req: Request{
			Op: OpRequestFDs, BlockID: block, Stamp: stamp, ShmID: slot.shm.id, Slot: uint32(slot.idx), Token: tok,
		}, fds: 2, keep: true, c: c.idle.take(c.cfg.Path)}
		ex.done = func(resp Response, files []model.File, conn model.Conn, err error) {
			if conn != nil {
				if c.closed {
					_ = conn.Close()
				} else {
					c.idle.park(c.loop, c.cfg.Path, conn)
				}
			}
			c.stats.FDsReceived += len(files)
			c.stats.Redials += ex.redials
			if err == nil && len(files) != 2 {
				err = fmt.Errorf("%d fds passed for block %d, want 2: %w", len(files), block, ErrFallback)
			}
			if err != nil {
				for _, f := range files {
					_ = f.Close()
				}
				// As HDFS's ShortCircuitCache.freeSlot: the slot is freed
				// here without a word to the datanode, which either
				// refused before registering it or frees it itself when
				// no receipt comes (HDFS-7915).
				c.sh.lock.Do(c.loop, func() { c.sh.freeSlot(slot) })
				cb(nil, err)
				return
			}
			cb(&Replica{Key: Key{block, resp.Stamp}, Length: resp.Length, Data: files[0], Meta: files[1], Slot: slot}, nil)
		}
		ex.start()
	})
}

// readLocal reads from a replica's fds (the caller holds a reference,
// given back before done runs, so a read that returned holds no fd),
// verifying checksums unless told not to.
func (c *Client) readLocal(r *Replica, block, stamp uint64, off, n int64, into []byte, done func(model.Result, bool)) {
	c.readReplica(r, block, stamp, off, n, into, func(res model.Result, fallback bool) {
		c.sh.cache.Unref(c.loop, r, func() {
			if fallback {
				c.viaTCP(block, stamp, off, n, into, done)
				return
			}
			done(res, true)
		})
	})
}

func (c *Client) readReplica(r *Replica, block, stamp uint64, off, n int64, into []byte, done func(model.Result, bool)) {
	if off > r.Length || n > r.Length-off {
		done(model.Result{Status: model.StatusErrorInvalid, Stamp: r.Key.Stamp, Length: r.Length,
			Err: fmt.Errorf("read of %d bytes at %d past the end of block %d (%d bytes): %w", n, off, block, r.Length, model.ErrRejected)}, false)
		return
	}
	first := off / model.BytesPerChecksum * model.BytesPerChecksum
	end := off + n
	if end%model.BytesPerChecksum != 0 {
		end = min(r.Length, (end/model.BytesPerChecksum+1)*model.BytesPerChecksum)
	}
	var data []byte
	var err error
	if c.cfg.SkipChecksum || c.sh.cfg.Bugs.LocalUnverified {
		data = slices.Grow(into[:0], int(end-first))[:end-first]
		var m int
		m, err = r.Data.ReadAt(data, first)
		if err == io.EOF && int64(m) == end-first {
			err = nil
		}
	} else {
		bf := model.BlockFiles{ID: block, Stamp: r.Key.Stamp, Length: r.Length, Data: r.Data, Meta: r.Meta}
		data, _, err = bf.ReadChunks(into[:0], first, int(end-first))
		c.p.CPU(model.CPUChecksum, len(data))
	}
	if err != nil {
		// A broken replica (HDFS's BlockReaderLocal throws a
		// ChecksumException): DFSInputStream reports the block corrupt
		// and reads this range from the next replica, here the datanode
		// over TCP, which sends what is on disk for the client to verify
		// again. It is no failure of the domain socket, whose path state
		// HDFS changes only where an fd request fails
		// (BlockReaderFactory), so short-circuit stays on for the next
		// read; and the replica stays cached, as ShortCircuitCache drops
		// one only when its slot turns invalid (the datanode changed or
		// deleted the block) or it expires.
		err = fmt.Errorf("%w: %w", errLocalRead, err)
		c.stats.LocalErrors++
		c.sh.cfg.Watch.failed(c.loop, err)
		c.fallback(err)
		done(model.Result{}, true)
		return
	}
	c.stats.LocalReads++
	// The copy into the reader's buffer is charged; the bytes are not
	// copied again: data is this read's own buffer (or the caller's,
	// ReadInto), so the result is a window of it, capped so that an
	// append cannot reach past it. (bench hdfs-15202's 100,000 reads a
	// run spent 15% of their CPU zeroing and filling a second 64 KiB
	// buffer each.)
	c.p.CPU(model.CPUCopy, int(n))
	lo := off - first
	out := data[lo : lo+n : lo+n]
	done(model.Result{Status: model.StatusSuccess, Stamp: r.Key.Stamp, Length: r.Length, Data: out}, false)
}
