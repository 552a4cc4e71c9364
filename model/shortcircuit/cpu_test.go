package shortcircuit

import (
	"testing"
	"time"

	"xceiver/model"
)

// The work the cache and the local reader charge to the thread that does
// it, step by step: in sim it is the lock's hold time and the reader's
// CPU, so a step more or less changes every timing a run reports.

// cpuProc is a process that only records the work charged to it.
type cpuProc struct {
	model.Process // nil: nothing else is called
	kinds         []model.CPUWork
	units         []int
}

func (p *cpuProc) CPU(kind model.CPUWork, n int) {
	p.kinds = append(p.kinds, kind)
	p.units = append(p.units, n)
}

// take returns what was charged since the last take.
func (p *cpuProc) take() (kinds []model.CPUWork, units []int) {
	kinds, units = p.kinds, p.units
	p.kinds, p.units = nil, nil
	return kinds, units
}

// Each step of the cache's bookkeeping is one CPUInode unit: a map lookup
// or insert, a replica linked into or out of the evictable list, a purge,
// a waiter handed the fetched replica.
func TestCacheChargesEachStepOfItsBookkeeping(t *testing.T) {
	p := &cpuProc{}
	closes := 0
	c := &Cache{cfg: CacheConfig{Shards: 1, Capacity: 4, Expiry: time.Hour}, p: p, onClose: func(_ model.Loop, r *Replica) {
		_ = r.Data.Close()
		_ = r.Meta.Close()
	}}
	c.shards = append(c.shards, newShard(nil))
	s, loop := c.shards[0], &fakeLoop{}
	seg := &fakeSeg{words: make([]uint64, SegmentSize/8)}
	shm := &clientShm{seg: seg}
	replica := func(idx int) *Replica {
		seg.Store(idx*SlotSize+slotBlock, 1)
		seg.Store(idx*SlotSize+slotStamp, 1)
		seg.Store(idx*SlotSize+slotFlags, flagValid)
		return &Replica{Key: Key{1, 1}, Length: 1, Data: &fakeFile{closed: &closes}, Meta: &fakeFile{closed: &closes}, Slot: &Slot{shm: shm, idx: idx}}
	}
	r1, r2 := replica(0), replica(1)
	for _, st := range []struct {
		what  string
		steps int
		do    func()
	}{
		{"a miss", 1, func() { s.lookup(c, loop, 1, fetchWait{}) }},
		{"the insert of the fetched replica", 1, func() { s.insert(c, loop, r1) }},
		{"the end of a fetch no one waited for", 0, func() { s.fetched(c, 1, r1, nil) }},
		{"the last reader's unref (into the evictable list)", 1, func() { s.unref(c, loop, r1) }},
		{"a hit on an evictable replica (the lookup, out of the list)", 2, func() { s.lookup(c, loop, 1, fetchWait{}) }},
		{"a reader's unref", 1, func() { s.unref(c, loop, r1) }},
		{"a lookup of an invalid replica (the lookup, the purge, out of the list)", 3, func() {
			seg.Store(slotFlags, 0)
			s.lookup(c, loop, 1, fetchWait{})
		}},
		{"a miss queued behind the fetch under way", 1, func() { s.lookup(c, loop, 1, fetchWait{}) }},
		{"the insert of the fetched replica", 1, func() { s.insert(c, loop, r2) }},
		{"the end of a fetch one reader waited for", 1, func() { s.fetched(c, 1, r2, nil) }},
	} {
		st.do()
		kinds, units := p.take()
		n := 0
		for i, k := range kinds {
			if k != model.CPUInode {
				t.Fatalf("%s: charged CPU work of kind %d, want only CPUInode (%d)", st.what, k, model.CPUInode)
			}
			n += units[i]
		}
		if n != st.steps {
			t.Errorf("%s: charged %d steps, want %d", st.what, n, st.steps)
		}
	}
	if closes != 2 {
		t.Errorf("%d fds closed, want the invalid replica's 2", closes)
	}
}

// A local read of n bytes charges the copy of the n bytes into the
// result, and (skipping checksums) nothing else.
func TestLocalReadChargesItsCopy(t *testing.T) {
	p := &cpuProc{}
	cl := &Client{p: p, cfg: ClientConfig{SkipChecksum: true}}
	closes := 0
	r := &Replica{Key: Key{1, 1}, Length: 4096, Data: &fakeFile{closed: &closes}, Meta: &fakeFile{closed: &closes}}
	var res model.Result
	cl.readReplica(r, 1, 0, 100, 1000, nil, func(got model.Result, fallback bool) {
		if fallback {
			t.Fatalf("the read fell back: %v", got.Err)
		}
		res = got
	})
	if res.Err != nil || len(res.Data) != 1000 {
		t.Fatalf("read: %v, %d bytes", res.Err, len(res.Data))
	}
	kinds, units := p.take()
	if len(kinds) != 1 || kinds[0] != model.CPUCopy || units[0] != 1000 {
		t.Errorf("charged kinds %v units %v, want one copy (kind %d) of 1000 bytes", kinds, units, model.CPUCopy)
	}
}
