package shortcircuit

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"xceiver/model"
)

// The cache's critical sections (the shard methods) against a small
// reference: which replicas are cached, who holds them, which are
// evictable in what order, which are closed, and which readers fetch a
// block and which wait for that fetch and are handed its replica.

type fakeLoop struct{ now time.Duration }

func (l *fakeLoop) Name() string                                { return "test" }
func (l *fakeLoop) Process() model.Process                      { return nil }
func (l *fakeLoop) Now() time.Duration                          { return l.now }
func (l *fakeLoop) AfterFunc(time.Duration, func()) model.Timer { panic("not used") }
func (l *fakeLoop) Post(func())                                 { panic("not used") }
func (l *fakeLoop) Close()                                      {}

type fakeFile struct {
	closed *int
	done   bool
}

func (f *fakeFile) ReadAt([]byte, int64) (int, error)  { return 0, nil }
func (f *fakeFile) WriteAt([]byte, int64) (int, error) { return 0, nil }
func (f *fakeFile) Size() (int64, error)               { return 0, nil }
func (f *fakeFile) Sync() error                        { return nil }
func (f *fakeFile) Kind() model.FDKind                 { return model.FDPassed }
func (f *fakeFile) Close() error {
	if f.done {
		panic("closed twice")
	}
	f.done = true
	*f.closed++
	return nil
}

type fakeSeg struct{ words []uint64 }

func (s *fakeSeg) Size() int               { return 8 * len(s.words) }
func (s *fakeSeg) Load(off int) uint64     { return s.words[off/8] }
func (s *fakeSeg) Store(off int, v uint64) { s.words[off/8] = v }
func (s *fakeSeg) Unmap() error            { return nil }

type refRep struct {
	r       *Replica
	readers int
	cached  bool
	closed  bool
	seq     int // order in which it became evictable
	since   time.Duration
}

type cacheMachine struct {
	c       *Cache
	loop    *fakeLoop
	seg     *fakeSeg
	shm     *clientShm
	closes  int
	reps    []*refRep // every replica ever inserted
	held    []*refRep // one entry per reader reference
	seq     int
	nextIdx int
	// What the cache's counters must say.
	inserts, stale, purged, hits, misses, shared, failed int
	// fetches are the blocks readers were told to fetch and have not
	// finished; waiting, the readers queued behind each block's fetch.
	fetches  []uint64
	waiting  map[uint64][]*fetchWait
	underway map[uint64]bool
}

func newCacheMachine(t *rapid.T) *cacheMachine {
	shards := rapid.IntRange(1, 4).Draw(t, "shards")
	cfg := CacheConfig{
		Shards:   shards,
		Capacity: rapid.IntRange(shards, 8).Draw(t, "capacity"),
		Expiry:   time.Duration(rapid.IntRange(1, 5).Draw(t, "expiry")) * time.Second,
	}
	m := &cacheMachine{loop: &fakeLoop{}, seg: &fakeSeg{words: make([]uint64, 1024)}, waiting: map[uint64][]*fetchWait{}, underway: map[uint64]bool{}}
	m.shm = &clientShm{seg: m.seg}
	m.c = &Cache{cfg: cfg, onClose: func(_ model.Loop, r *Replica) {
		_ = r.Data.Close()
		_ = r.Meta.Close()
		for _, rr := range m.reps {
			if rr.r == r {
				if rr.closed {
					t.Fatalf("replica %v closed twice", r.Key)
				}
				rr.closed = true
			}
		}
	}}
	for i := 0; i < cfg.Shards; i++ {
		m.c.shards = append(m.c.shards, newShard(nil))
	}
	return m
}

func (m *cacheMachine) shardOf(block uint64) *shard { return m.c.lookupShard(block) }

// refCached is the reference's cached replica of block.
func (m *cacheMachine) refCached(block uint64) *refRep {
	for _, rr := range m.reps {
		if rr.cached && rr.r.Key.Block == block {
			return rr
		}
	}
	return nil
}

func (m *cacheMachine) refDrop(rr *refRep) {
	rr.cached = false
}

// refExpire drops the reference's evictable replicas of block's shard that
// are too old.
func (m *cacheMachine) refExpire(block uint64) {
	n := uint64(len(m.c.shards))
	for _, rr := range m.reps {
		if rr.cached && rr.readers == 0 && rr.r.Key.Block%n == block%n && m.loop.now-rr.since >= m.c.cfg.Expiry {
			m.refDrop(rr)
		}
	}
}

func (m *cacheMachine) valid(rr *refRep) bool { return rr.r.valid() }

// fetchDone picks a fetch under way and ends it.
func (m *cacheMachine) fetchDone(t *rapid.T) uint64 {
	if len(m.fetches) == 0 {
		t.Skip("no fetch under way")
	}
	i := rapid.IntRange(0, len(m.fetches)-1).Draw(t, "fetch")
	block := m.fetches[i]
	m.fetches = slices.Delete(m.fetches, i, i+1)
	return block
}

// handOut is the reference's end of block's fetch, bringing r (nil: it
// failed), and checks what the cache told the readers waiting for it.
func (m *cacheMachine) handOut(t *rapid.T, block uint64, rr *refRep, got []wake) {
	waiting := m.waiting[block]
	delete(m.waiting, block)
	m.underway[block] = false
	var want []wake
	for _, w := range waiting {
		switch {
		case rr == nil:
			m.failed++
			want = append(want, wake{w: w, how: LookupFailed})
		case rr.cached && rr.r.Key.Stamp >= w.stamp:
			m.shared++
			rr.readers++
			m.held = append(m.held, rr)
			want = append(want, wake{w: w, r: rr.r, how: LookupShared})
		case !m.underway[block]:
			m.underway[block] = true
			m.fetches = append(m.fetches, block)
			want = append(want, wake{w: w, how: LookupFetch})
		default:
			m.waiting[block] = append(m.waiting[block], w)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("block %d's fetch ended: %d waiters told, want %d", block, len(got), len(want))
	}
	for i := range got {
		if got[i].w != want[i].w || got[i].r != want[i].r || got[i].how != want[i].how || (got[i].err != nil) != (rr == nil) {
			t.Fatalf("block %d's fetch ended: waiter %d told %+v, want %+v", block, i, got[i], want[i])
		}
	}
}

func (m *cacheMachine) FetchFailed(t *rapid.T) {
	block := m.fetchDone(t)
	m.failed++
	m.handOut(t, block, nil, m.shardOf(block).fetched(m.c, block, nil, fmt.Errorf("refused")))
}

func (m *cacheMachine) Insert(t *rapid.T) {
	block := m.fetchDone(t)
	stamp := rapid.Uint64Range(1, 3).Draw(t, "stamp")
	// Stale: fetched before a change its slot has told of since.
	stale := rapid.IntRange(0, 4).Draw(t, "stale") == 0
	// Each replica its own slot, never reused: a reused slot could make
	// an invalidated replica valid again, which the datanode never does.
	idx := m.nextIdx
	m.nextIdx++
	if need := (idx + 1) * SlotSize / 8; need > len(m.seg.words) {
		m.seg.words = append(m.seg.words, make([]uint64, need-len(m.seg.words))...)
	}
	off := idx * SlotSize
	m.seg.Store(off+slotBlock, block)
	m.seg.Store(off+slotStamp, stamp)
	m.seg.Store(off+slotFlags, 0)
	if !stale {
		m.seg.Store(off+slotFlags, flagValid)
	}
	r := &Replica{Key: Key{block, stamp}, Length: 1, Data: &fakeFile{closed: &m.closes}, Meta: &fakeFile{closed: &m.closes}, Slot: &Slot{shm: m.shm, idx: idx}}
	rr := &refRep{r: r, readers: 1}
	m.inserts++
	if stale {
		m.stale++
		// Not cached, and what is cached stays: the reader's alone.
		m.reps = append(m.reps, rr)
		m.held = append(m.held, rr)
		m.shardOf(block).insert(m.c, m.loop, r)
		m.handOut(t, block, rr, m.shardOf(block).fetched(m.c, block, r, nil))
		return
	}
	if old := m.refCached(block); old != nil {
		m.refDrop(old)
	}
	rr.cached = true
	m.reps = append(m.reps, rr)
	m.held = append(m.held, rr)
	m.refExpire(block)
	m.shardOf(block).insert(m.c, m.loop, r)
	m.handOut(t, block, rr, m.shardOf(block).fetched(m.c, block, r, nil))
}

func (m *cacheMachine) Lookup(t *rapid.T) {
	block := rapid.Uint64Range(1, 6).Draw(t, "block")
	stamp := rapid.Uint64Range(0, 3).Draw(t, "stamp")
	m.refExpire(block)
	want := m.refCached(block)
	if want != nil && (!m.valid(want) || want.r.Key.Stamp < stamp) {
		m.purged++
		m.refDrop(want)
		want = nil
	}
	got, how, w := m.shardOf(block).lookup(m.c, m.loop, block, fetchWait{stamp: stamp})
	waits := w != nil
	switch {
	case want == nil && got != nil:
		t.Fatalf("lookup(%d, %d) hit %v; the reference misses", block, stamp, got.Key)
	case want != nil && (got != want.r || how != LookupHit || waits):
		t.Fatalf("lookup(%d, %d) = %v, %v, waits %v; the reference hits %v", block, stamp, got, how, waits, want.r.Key)
	case want == nil && waits != m.underway[block]:
		t.Fatalf("lookup(%d, %d) misses and waits %v; the reference says a fetch is under way: %v", block, stamp, waits, m.underway[block])
	case want == nil && !waits && how != LookupFetch:
		t.Fatalf("lookup(%d, %d) misses, tells %v; the reference says fetch", block, stamp, how)
	}
	switch {
	case want != nil:
		m.hits++
		want.readers++
		m.held = append(m.held, want)
	case waits:
		m.misses++
		m.waiting[block] = append(m.waiting[block], w)
	default:
		m.misses++
		m.underway[block] = true
		m.fetches = append(m.fetches, block)
	}
}

func (m *cacheMachine) Unref(t *rapid.T) {
	if len(m.held) == 0 {
		t.Skip("nothing held")
	}
	i := rapid.IntRange(0, len(m.held)-1).Draw(t, "held")
	rr := m.held[i]
	m.held = slices.Delete(m.held, i, i+1)
	rr.readers--
	if rr.readers == 0 && rr.cached {
		if !m.valid(rr) {
			m.purged++
			m.refDrop(rr)
		} else {
			m.seq++
			rr.seq, rr.since = m.seq, m.loop.now
			// Evict the shard's least recently used beyond the capacity.
			n := uint64(len(m.c.shards))
			capacity := m.c.cfg.Capacity / len(m.c.shards)
			for {
				var ev []*refRep
				for _, o := range m.reps {
					if o.cached && o.readers == 0 && o.r.Key.Block%n == rr.r.Key.Block%n {
						ev = append(ev, o)
					}
				}
				if len(ev) <= capacity {
					break
				}
				oldest := slices.MinFunc(ev, func(a, b *refRep) int { return a.seq - b.seq })
				m.refDrop(oldest)
			}
		}
	}
	m.c.lookupShard(rr.r.Key.Block).unref(m.c, m.loop, rr.r)
}

func (m *cacheMachine) Invalidate(t *rapid.T) {
	block := rapid.Uint64Range(1, 6).Draw(t, "block")
	for _, rr := range m.reps {
		if rr.r.Key.Block == block {
			m.seg.Store(rr.r.Slot.idx*SlotSize+slotFlags, 0)
		}
	}
}

func (m *cacheMachine) Tick(t *rapid.T) {
	m.loop.now += time.Duration(rapid.IntRange(1, 3000).Draw(t, "ms")) * time.Millisecond
}

func (m *cacheMachine) Check(t *rapid.T) {
	var st CacheStats
	for _, s := range m.c.shards {
		st.add(s.stats)
	}
	if st.Inserts != m.inserts || st.Stale != m.stale || st.Purged != m.purged {
		t.Fatalf("cache counts %d inserts, %d stale, %d purged as invalid; the reference %d, %d and %d", st.Inserts, st.Stale, st.Purged, m.inserts, m.stale, m.purged)
	}
	if st.Hits != m.hits || st.Misses != m.misses || st.Shared != m.shared || st.Failed != m.failed {
		t.Fatalf("cache counts %d hits, %d misses, %d shared, %d failed; the reference %d, %d, %d and %d", st.Hits, st.Misses, st.Shared, st.Failed, m.hits, m.misses, m.shared, m.failed)
	}
	if st.MaxFetches > 1 {
		t.Fatalf("the cache had %d fetches of one block under way at once", st.MaxFetches)
	}
	// Every miss ends inserted, shared or failed, or is still waiting.
	waiting := 0
	for _, ws := range m.waiting {
		waiting += len(ws)
	}
	if st.Inserts+st.Shared+st.Failed+len(m.fetches)+waiting != st.Misses {
		t.Fatalf("%d misses: %d inserted, %d shared, %d failed, %d fetching, %d waiting", st.Misses, st.Inserts, st.Shared, st.Failed, len(m.fetches), waiting)
	}
	open := 0
	for _, rr := range m.reps {
		wantClosed := !rr.cached && rr.readers == 0
		if rr.closed != wantClosed {
			t.Fatalf("replica %v: closed %v, reference says %v (cached %v, readers %d)", rr.r.Key, rr.closed, wantClosed, rr.cached, rr.readers)
		}
		if rr.cached != rr.r.cached {
			t.Fatalf("replica %v: cached %v, reference says %v", rr.r.Key, rr.r.cached, rr.cached)
		}
		if !rr.closed {
			open++
		}
	}
	if want := 2 * (len(m.reps) - open); m.closes != want {
		t.Fatalf("%d fds closed, want %d", m.closes, want)
	}
	capacity := m.c.cfg.Capacity / len(m.c.shards)
	for i, s := range m.c.shards {
		if s.lruLen > capacity {
			t.Fatalf("shard %d holds %d evictable replicas, capacity %d", i, s.lruLen, capacity)
		}
	}
	// The fd bound the properties check: 2 per cached replica (at most
	// the capacity evictable) plus 2 per replica a reader holds.
	held := map[*refRep]bool{}
	for _, rr := range m.held {
		held[rr] = true
	}
	if limit := 2*m.c.cfg.Capacity + 2*len(held); 2*open > limit {
		t.Fatalf("%d fds open, bound %d", 2*open, limit)
	}
}

func TestCacheAgainstReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newCacheMachine(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}

// The sharding bug is found: with inserts and lookups picking different
// shards, a cached replica is not found where the reference finds it.
func TestCacheShardingBugIsFound(t *testing.T) {
	found := false
	for seed := uint64(0); seed < 200 && !found; seed++ {
		func() {
			defer func() {
				if recover() != nil {
					found = true
				}
			}()
			c := &Cache{cfg: CacheConfig{Shards: 3, Capacity: 6, Expiry: time.Hour, Bugs: CacheBugs{InsertShardByStamp: true}}, onClose: func(model.Loop, *Replica) {}}
			for i := 0; i < 3; i++ {
				c.shards = append(c.shards, newShard(nil))
			}
			loop := &fakeLoop{}
			block, stamp := seed%7+1, seed%5+1
			r := &Replica{Key: Key{block, stamp}, Data: &fakeFile{closed: new(int)}, Meta: &fakeFile{closed: new(int)}}
			c.insertShard(r.Key).insert(c, loop, r)
			c.lookupShard(block).unref(c, loop, r)
			if got, _, _ := c.lookupShard(block).lookup(c, loop, block, fetchWait{}); got != r {
				panic(fmt.Sprintf("block %d stamp %d cached but not found", block, stamp))
			}
		}()
	}
	if !found {
		t.Error("inserting and looking up in different shards went unnoticed")
	}
}

// MaxFetches counts the fetches of one block under way at once: readers
// that miss a block together share one fetch, so 1; with FetchPerReader
// each fetches its own, which is how check's sc-stats finds that bug.
func TestCacheCountsFetchesUnderWay(t *testing.T) {
	for _, perReader := range []bool{false, true} {
		c := &Cache{cfg: CacheConfig{Shards: 1, Capacity: 4, Expiry: time.Hour, Bugs: CacheBugs{FetchPerReader: perReader}}, onClose: func(model.Loop, *Replica) {}}
		c.shards = append(c.shards, newShard(nil))
		s, loop := c.shards[0], &fakeLoop{}
		fetches := 0
		for i := 0; i < 3; i++ {
			if _, how, _ := s.lookup(c, loop, 1, fetchWait{}); how == LookupFetch {
				fetches++
			}
		}
		want := 1
		if perReader {
			want = 3
		}
		if fetches != want || s.stats.MaxFetches != want {
			t.Errorf("FetchPerReader %v: 3 readers missed block 1 together: %d told to fetch, MaxFetches %d; want %d and %d", perReader, fetches, s.stats.MaxFetches, want, want)
		}
		// The fetch of the block ends when its last fetcher's does.
		for i := 0; i < fetches; i++ {
			if s.fetching[1] == nil {
				t.Errorf("FetchPerReader %v: no fetch of block 1 under way after %d of %d ended", perReader, i, fetches)
			}
			s.fetched(c, 1, nil, fmt.Errorf("refused"))
		}
		if s.fetching[1] != nil {
			t.Errorf("FetchPerReader %v: a fetch of block 1 still under way after all %d ended", perReader, fetches)
		}
	}
}
