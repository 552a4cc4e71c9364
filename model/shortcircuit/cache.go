package shortcircuit

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"xceiver/model"
)

// The short-circuit cache (HDFS's ShortCircuitCache): replicas whose fds
// a client received, keyed by (block, stamp) and refcounted. The cache
// holds one reference while a replica is in it, each reader one more; a
// replica's fds close when the last reference goes. Replicas only the
// cache references are evictable: at most Capacity of them, the least
// recently used evicted first, and none older than Expiry. A replica whose
// slot the datanode invalidated is purged when next looked up.
//
// One fetch per block at a time (HDFS's fetchOrCreate): a reader that
// misses while another's fetch of the block is under way waits for it and
// shares its replica, rather than asking the datanode for fds and a slot
// of its own. Readers that missed together and each fetched across a
// change put one replica in after another, each purging the one before:
// one change cost several purges (check seed 300268036).
//
// HDFS-15202 shards the cache N ways by block id, one lock per shard, so
// many reader threads do not queue on one lock. Every shard operation runs
// under its shard's model.Lock (a modelled lock with queueing and wake-up
// costs in sim, a mutex in real); the methods of shard are the critical
// sections and are called only under it.

// Key names a replica.
type Key struct {
	Block, Stamp uint64
}

// Replica is a cached replica: the passed fds and the slot the datanode
// invalidates when the block changes.
type Replica struct {
	Key    Key
	Length int64
	Data   model.File
	Meta   model.File
	Slot   *Slot // nil when the datanode gave none (tests)

	refs     int // the cache's one (while cached) plus readers'
	cached   bool
	lastUsed time.Duration // when it last became evictable
	// purged is set once the replica left the cache; its fds close with
	// its last reference.
	purged bool
	// Links in the evictable list of lruShard, while in one.
	lruPrev, lruNext *Replica
	lruShard         *shard
}

// valid reports whether the datanode still vouches for the replica.
func (r *Replica) valid() bool { return r.Slot == nil || r.Slot.vouchesFor(r.Key) }

// CacheConfig shapes the cache. Zero values take HDFS's defaults.
type CacheConfig struct {
	Shards   int           // dfs.client.short.circuit.num (1 in HDFS)
	Capacity int           // evictable replicas per cache (256)
	Expiry   time.Duration // evictable replicas older than this go (5 min)
	Bugs     CacheBugs
}

// CacheBugs switch on historic cache bugs.
type CacheBugs struct {
	// FetchPerReader lets every reader that misses fetch its own
	// replica, as if no fetch of the block were under way (the
	// client's fd cache before HDFS's ShortCircuitCache): readers that
	// miss a block together each take a slot and two fds, and each
	// insert purges the replica before it.
	FetchPerReader bool
	// InsertShardByStamp picks the shard for an insert by (block+stamp)
	// mod N and for a lookup by block mod N: after the first bump, a
	// block's replica lands where lookups never look, so its invalid
	// slot is never purged and its fds live until evicted.
	InsertShardByStamp bool
}

// DefaultCacheConfig returns HDFS's defaults.
func DefaultCacheConfig() CacheConfig {
	return CacheConfig{Shards: 1, Capacity: 256, Expiry: 5 * time.Minute}
}

func (c *CacheConfig) fill() error {
	d := DefaultCacheConfig()
	if c.Shards == 0 {
		c.Shards = d.Shards
	}
	if c.Capacity == 0 {
		c.Capacity = d.Capacity
	}
	if c.Expiry == 0 {
		c.Expiry = d.Expiry
	}
	switch {
	case c.Shards < 1 || c.Shards > 1024:
		return fmt.Errorf("short-circuit cache: %d shards outside [1, 1024]", c.Shards)
	case c.Capacity < c.Shards:
		// Each shard keeps capacity/shards evictable replicas, so the
		// whole cache keeps at most capacity.
		return fmt.Errorf("short-circuit cache: capacity %d < %d shards", c.Capacity, c.Shards)
	case c.Expiry < 0:
		return fmt.Errorf("short-circuit cache: negative expiry %v", c.Expiry)
	}
	return nil
}

// Cache is a process's short-circuit cache, shared by its clients' loops.
type Cache struct {
	cfg    CacheConfig
	p      model.Process
	shards []*shard
	// onClose runs (under the shard's lock, on loop) for each replica
	// whose last reference went: it closes the fds and releases the slot.
	onClose func(loop model.Loop, r *Replica)
}

// shard is one lock's worth of the cache.
type shard struct {
	lock    model.Lock
	byBlock map[uint64]*Replica
	// fetching holds, for each block readers are fetching, the fetch
	// under way and the readers waiting for it (HDFS's replicaInfoMap
	// Waitable).
	fetching map[uint64]*blockFetch
	// The evictable replicas, least recently used first: a linked list,
	// so taking one out is one step, as in HDFS's LinkedMap.
	lruHead, lruTail *Replica
	lruLen           int
	stats            CacheStats
}

// pushLRU makes r the most recently used evictable replica.
func (s *shard) pushLRU(r *Replica) {
	r.lruShard, r.lruPrev, r.lruNext = s, s.lruTail, nil
	if s.lruTail != nil {
		s.lruTail.lruNext = r
	} else {
		s.lruHead = r
	}
	s.lruTail = r
	s.lruLen++
}

// CacheStats counts what a cache did. Stale counts the inserts of
// replicas already invalid (fetched before a change their slot has told
// of since, or in a segment the client has dropped): each was left to
// the read that fetched it and not cached. Shared counts the misses
// served by a replica another reader's fetch brought in, Failed those
// whose fetch (their own or the one they waited on) failed; every miss
// is one of Inserts, Shared or Failed. MaxFetches is the most fetches of
// one block ever under way at once: 1 when fetches are shared.
type CacheStats struct {
	Hits, Misses, Inserts, Evicted, Expired, Purged, Stale int
	Shared, Failed, MaxFetches                             int
}

func (s *CacheStats) add(o CacheStats) {
	s.Hits += o.Hits
	s.Misses += o.Misses
	s.Inserts += o.Inserts
	s.Evicted += o.Evicted
	s.Expired += o.Expired
	s.Purged += o.Purged
	s.Stale += o.Stale
	s.Shared += o.Shared
	s.Failed += o.Failed
	s.MaxFetches = max(s.MaxFetches, o.MaxFetches)
}

// A miss's outcome, as Lookup tells it.
type Outcome int

const (
	LookupHit    Outcome = iota // a valid cached replica
	LookupFetch                 // a miss: fetch the replica, then Insert or FetchFailed
	LookupShared                // a miss, served by another reader's fetch
	LookupFailed                // a miss whose shared fetch failed (the error says why)
)

// fetchWait is a reader waiting for another's fetch of its block.
type fetchWait struct {
	loop  model.Loop
	stamp uint64
	done  func(*Replica, Outcome, error)
}

// blockFetch is a block's fetch under way: how many (one, or more with
// FetchPerReader, for MaxFetches) and the readers waiting for it.
type blockFetch struct {
	under   int
	waiters []*fetchWait
}

// wake is what a waiter is told when the fetch it waited for ends.
type wake struct {
	w   *fetchWait
	r   *Replica
	how Outcome
	err error
}

func (wk wake) post() {
	w, r, how, err := wk.w, wk.r, wk.how, wk.err
	w.loop.Post(func() { w.done(r, how, err) })
}

// NewCache makes a cache whose shard locks come from p. onClose is called
// for each replica whose last reference goes, under its shard's lock.
func NewCache(p model.Process, cfg CacheConfig, onClose func(model.Loop, *Replica)) (*Cache, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	c := &Cache{cfg: cfg, p: p, onClose: onClose}
	for i := 0; i < cfg.Shards; i++ {
		c.shards = append(c.shards, newShard(p.NewLock(fmt.Sprintf("sc-cache-%d", i))))
	}
	return c, nil
}

func newShard(lock model.Lock) *shard {
	return &shard{lock: lock, byBlock: map[uint64]*Replica{}, fetching: map[uint64]*blockFetch{}}
}

// Config is the cache's configuration, defaults filled in.
func (c *Cache) Config() CacheConfig { return c.cfg }

func (c *Cache) lookupShard(block uint64) *shard {
	return c.shards[block%uint64(len(c.shards))]
}

func (c *Cache) insertShard(k Key) *shard {
	if c.cfg.Bugs.InsertShardByStamp {
		return c.shards[(k.Block+k.Stamp)%uint64(len(c.shards))]
	}
	return c.lookupShard(k.Block)
}

// Lookup finds a valid replica of block with at least stamp (0: any) and
// takes a reader's reference on it, then calls done on loop with it and
// Hit. A stale or invalid replica found on the way is purged. On a miss
// done is told to Fetch (the caller fetches, then calls Insert or
// Failed), or, when another reader's fetch of the block is under way,
// waits for it: then Shared with its replica (a reference taken),
// Failed with its error, or Fetch when its replica will not do (stale,
// or older than stamp).
func (c *Cache) Lookup(loop model.Loop, block, stamp uint64, done func(*Replica, Outcome, error)) {
	s := c.lookupShard(block)
	s.lock.Do(loop, func() {
		if r, how, queued := s.lookup(c, loop, block, fetchWait{loop: loop, stamp: stamp, done: done}); queued == nil {
			loop.Post(func() { done(r, how, nil) })
		}
	})
}

// Insert caches r, fetched after a miss told to Fetch, with one reader's
// reference taken (the caller's), hands it to the readers waiting for
// the fetch, then calls done on loop. A replica of the same block already
// cached is purged; but one already invalid is not cached (the caller's
// reference is its only one), and leaves what is cached alone.
func (c *Cache) Insert(loop model.Loop, r *Replica, done func()) {
	s, ls := c.insertShard(r.Key), c.lookupShard(r.Key.Block)
	s.lock.Do(loop, func() {
		s.insert(c, loop, r)
		if ls == s {
			for _, wk := range s.fetched(c, r.Key.Block, r, nil) {
				wk.post()
			}
		}
		loop.Post(done)
	})
	if ls != s {
		// Filed where lookups do not look (InsertShardByStamp): the
		// waiters, under their own shard's lock, fetch again.
		ls.lock.Do(loop, func() {
			for _, wk := range ls.fetched(c, r.Key.Block, nil, nil) {
				wk.post()
			}
		})
	}
}

// FetchFailed ends a fetch told to by Lookup that brought no replica:
// the readers waiting for it are told err.
func (c *Cache) FetchFailed(loop model.Loop, block uint64, err error) {
	s := c.lookupShard(block)
	s.lock.Do(loop, func() {
		for _, wk := range s.fetched(c, block, nil, err) {
			wk.post()
		}
	})
}

// Unref drops a reader's reference, then calls then (if not nil) on
// loop.
func (c *Cache) Unref(loop model.Loop, r *Replica, then func()) {
	s := c.lookupShard(r.Key.Block)
	s.lock.Do(loop, func() {
		s.unref(c, loop, r)
		if then != nil {
			loop.Post(then)
		}
	})
}

// Expire evicts the replicas that have been evictable longer than the
// expiry (HDFS's CacheCleaner), then calls done on loop.
func (c *Cache) Expire(loop model.Loop, done func()) {
	pending := len(c.shards)
	for _, s := range c.shards {
		s.lock.Do(loop, func() {
			s.expire(c, loop)
			pending--
			if pending == 0 && done != nil {
				loop.Post(done)
			}
		})
	}
}

// PurgeAll empties the cache (client close), then calls done on loop.
// Replicas readers still hold close when they are given back.
func (c *Cache) PurgeAll(loop model.Loop, done func()) {
	pending := len(c.shards)
	for _, s := range c.shards {
		s.lock.Do(loop, func() {
			for _, b := range s.blocks() {
				s.purge(c, loop, s.byBlock[b])
			}
			pending--
			if pending == 0 && done != nil {
				loop.Post(done)
			}
		})
	}
}

// Stats sums the shards' counters, then calls done on loop.
func (c *Cache) Stats(loop model.Loop, done func(st CacheStats, cached, evictable int)) {
	var st CacheStats
	var cached, evictable int
	pending := len(c.shards)
	for _, s := range c.shards {
		s.lock.Do(loop, func() {
			st.add(s.stats)
			cached += len(s.byBlock)
			evictable += s.lruLen
			pending--
			if pending == 0 {
				loop.Post(func() { done(st, cached, evictable) })
			}
		})
	}
}

// work charges n steps of the critical section's bookkeeping (a hash
// lookup, a list entry visited) to the thread holding the lock, so the
// lock's hold time in sim is what the code does, not a constant.
func (c *Cache) work(n int) {
	if c.p != nil {
		c.p.CPU(model.CPUInode, n)
	}
}

// blocks returns the cached block ids in order, so purges run in a
// deterministic order.
func (s *shard) blocks() []uint64 { return slices.Sorted(maps.Keys(s.byBlock)) }

// lookup serves w's lookup of block: a hit, a fetch for w to make, or
// w queued behind the fetch of the block under way (queued: the waiter,
// made only then, as a hit must not allocate).
func (s *shard) lookup(c *Cache, loop model.Loop, block uint64, w fetchWait) (r *Replica, how Outcome, queued *fetchWait) {
	s.expire(c, loop)
	c.work(1)
	r = s.byBlock[block]
	if r != nil && (!r.valid() || r.Key.Stamp < w.stamp) {
		s.stats.Purged++
		s.purge(c, loop, r)
		r = nil
	}
	if r == nil {
		s.stats.Misses++
		if f := s.fetching[block]; f != nil && !c.cfg.Bugs.FetchPerReader {
			queued = &w
			f.waiters = append(f.waiters, queued)
			return nil, LookupFailed, queued
		}
		s.startFetch(block)
		return nil, LookupFetch, nil
	}
	s.stats.Hits++
	if r.refs == 1 {
		s.unlru(c, r)
	}
	r.refs++
	return r, LookupHit, nil
}

func (s *shard) startFetch(block uint64) {
	f := s.fetching[block]
	if f == nil {
		f = &blockFetch{}
		s.fetching[block] = f
	}
	f.under++
	s.stats.MaxFetches = max(s.stats.MaxFetches, f.under)
}

// fetched ends a fetch of block, bringing r (nil: none, err says why
// when it failed), and says what each reader waiting for it is told: r
// if r is cached and new enough for it, the error if the fetch failed;
// otherwise the first of them fetches again and the rest wait for that.
func (s *shard) fetched(c *Cache, block uint64, r *Replica, err error) []wake {
	if err != nil {
		s.stats.Failed++
	}
	f := s.fetching[block]
	if f == nil {
		return nil
	}
	if f.under--; f.under > 0 {
		// Another fetch of the block is still under way (FetchPerReader):
		// the waiters, if any, are its.
		return nil
	}
	delete(s.fetching, block)
	waiting := f.waiters
	var wakes []wake
	again := false
	for _, w := range waiting {
		switch {
		case err != nil:
			s.stats.Failed++
			wakes = append(wakes, wake{w: w, how: LookupFailed, err: err})
		case r != nil && r.cached && r.Key.Stamp >= w.stamp:
			s.stats.Shared++
			c.work(1)
			r.refs++
			wakes = append(wakes, wake{w: w, r: r, how: LookupShared})
		case !again:
			again = true
			s.startFetch(block)
			wakes = append(wakes, wake{w: w, how: LookupFetch})
		default:
			f := s.fetching[block] // (the one the first waiter started)
			f.waiters = append(f.waiters, w)
		}
	}
	return wakes
}

func (s *shard) insert(c *Cache, loop model.Loop, r *Replica) {
	if !r.valid() {
		// Fetched before a change to its block, which its slot has
		// told of since (or its segment is gone): a lookup would purge
		// it at once, and the replica cached may be the newer one. It
		// serves the read that fetched it; the readers waiting for the
		// fetch fetch again (fetched), as HDFS's fetchOrCreate purges a
		// stale replica it waited for and loads its own. Caching it,
		// readers that each fetched across a change (FetchPerReader)
		// each put one in, each purged in turn: one change purged two
		// replicas (check seed 300268036, sc-stats). (It counts and
		// charges the insert as the cached path below does; hoisting
		// those two lines above that path's purge of the old replica
		// reorders its CPU charges.)
		s.stats.Inserts++
		s.stats.Stale++
		c.work(1)
		r.purged = true
		r.refs = 1 // the inserting reader's
		return
	}
	if old := s.byBlock[r.Key.Block]; old != nil {
		s.purge(c, loop, old)
	}
	s.stats.Inserts++
	c.work(1)
	r.cached = true
	r.refs = 2 // the cache's and the inserting reader's
	s.byBlock[r.Key.Block] = r
	s.expire(c, loop)
}

func (s *shard) unref(c *Cache, loop model.Loop, r *Replica) {
	r.refs--
	switch {
	case r.refs == 0:
		c.onClose(loop, r)
	case r.refs == 1 && r.cached:
		if !r.valid() {
			s.stats.Purged++
			s.purge(c, loop, r)
			return
		}
		r.lastUsed = loop.Now()
		c.work(1)
		s.pushLRU(r)
		s.evict(c, loop)
	}
}

// evict removes the least recently used evictable replicas beyond the
// capacity.
func (s *shard) evict(c *Cache, loop model.Loop) {
	capacity := c.cfg.Capacity / len(c.shards)
	for s.lruLen > capacity {
		s.stats.Evicted++
		s.purge(c, loop, s.lruHead)
	}
}

func (s *shard) expire(c *Cache, loop model.Loop) {
	now := loop.Now()
	for s.lruHead != nil && now-s.lruHead.lastUsed >= c.cfg.Expiry {
		s.stats.Expired++
		s.purge(c, loop, s.lruHead)
	}
}

// purge takes r out of the cache and drops the cache's reference.
func (s *shard) purge(c *Cache, loop model.Loop, r *Replica) {
	if !r.cached {
		// Not this shard's to purge (only a replica filed in the wrong
		// shard gets here); never leave it in the LRU list, or the
		// eviction loops would spin on it.
		s.unlru(c, r)
		return
	}
	r.cached, r.purged = false, true
	c.work(1)
	if s.byBlock[r.Key.Block] == r {
		delete(s.byBlock, r.Key.Block)
	}
	if r.refs == 1 {
		s.unlru(c, r)
	}
	r.refs--
	if r.refs == 0 {
		c.onClose(loop, r)
	}
}

// unlru takes r out of the evictable list it is in (only a replica
// filed in the wrong shard is in another shard's).
func (s *shard) unlru(c *Cache, r *Replica) {
	o := r.lruShard
	if o == nil {
		return
	}
	c.work(1)
	if r.lruPrev != nil {
		r.lruPrev.lruNext = r.lruNext
	} else {
		o.lruHead = r.lruNext
	}
	if r.lruNext != nil {
		r.lruNext.lruPrev = r.lruPrev
	} else {
		o.lruTail = r.lruPrev
	}
	r.lruPrev, r.lruNext, r.lruShard = nil, nil, nil
	o.lruLen--
}
