package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"xceiver/model"
)

// New fills each zero part of a Config with its default and keeps every
// part that is set: a world made from a bare Config{Seed: s} has the
// defaults' TCP, Unix sockets, disk and CPU costs (a zero Unix config
// would leave a send buffer of 0 bytes, every AF_UNIX write EAGAIN for
// ever), and one made with its own parts runs with those.
func TestNewFillsZeroPartsOfTheConfig(t *testing.T) {
	// differ names the parts of got that are not want's.
	differ := func(got, want Config) []string {
		var d []string
		for _, c := range []struct {
			name string
			same bool
		}{
			{"FDLimit", got.FDLimit == want.FDLimit}, {"MaxEvents", got.MaxEvents == want.MaxEvents},
			{"TCP", got.TCP == want.TCP}, {"Unix", got.Unix == want.Unix},
			{"Disk", got.Disk == want.Disk}, {"CPU", got.CPU == want.CPU},
		} {
			if !c.same {
				d = append(d, c.name)
			}
		}
		return d
	}
	def := DefaultConfig(1)
	def.MaxEvents = 200_000_000
	if d := differ(New(Config{Seed: 1}).cfg, def); d != nil {
		t.Errorf("New(Config{Seed: 1}): %v not the defaults", d)
	}
	own := def
	own.FDLimit, own.MaxEvents = 77, 12345
	own.TCP.MSS = 1000
	own.Unix = UnixConfig{Delay: 5 * time.Microsecond, BufSize: 4096}
	own.Disk.Bandwidth = def.Disk.Bandwidth / 2
	own.CPU.Callback = 3 * def.CPU.Callback
	if d := differ(New(own).cfg, own); d != nil {
		t.Errorf("New replaced the config's own %v", d)
	}
}

// A busy loop that never drains its queue (each callback posts the next
// while two more wait) slides its pending tasks down once it has run 64
// and at least as many as wait, so its queue holds what is pending, not
// every task it ever ran: after 10,000 callbacks it is at most 64 run
// slots and the pending three long.
func TestBusyLoopQueueStaysBounded(t *testing.T) {
	w := New(DefaultConfig(1))
	var loop *Loop
	ran, longest := 0, 0
	_, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		l := p.MainLoop()
		loop = l.(*Loop)
		var step func()
		step = func() {
			ran++
			longest = max(longest, len(loop.queue))
			if ran < 10_000 {
				l.Post(step)
			}
		}
		for range 3 {
			l.Post(step)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if ran < 10_000 || longest > 64+3 {
		t.Errorf("%d callbacks ran; the queue grew to %d tasks, want at most %d", ran, longest, 64+3)
	}
}

// A process counts its threads and their peak: loops and worker-pool
// threads add to both, and a pool's close lowers the count, never the
// peak (the read scenario reports the server's).
func TestProcessCountsThreadsAndTheirPeak(t *testing.T) {
	w := New(DefaultConfig(1))
	var pool model.WorkerPool
	sp, err := w.Spawn("srv", model.ProcessConfig{}, func(p model.Process) {
		if _, err := p.NewLoop("second"); err != nil {
			t.Error(err)
		}
		pool = p.NewWorkerPool("workers", 4)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(ms); err != nil {
		t.Fatal(err)
	}
	p := sp.(*Process)
	if now, peak := p.Threads(); now != 6 || peak != 6 {
		t.Errorf("threads %d, peak %d with two loops and four workers, want 6 and 6", now, peak)
	}
	pool.Close()
	if err := w.RunFor(ms); err != nil {
		t.Fatal(err)
	}
	if now, peak := p.Threads(); now != 2 || peak != 6 {
		t.Errorf("threads %d, peak %d after the pool closed, want 2 and 6", now, peak)
	}
}

// Each start of a process is a "spawn" event in the trace, numbered by
// how many times it restarted: 0 when spawned, 1 after a crash and a
// restart.
func TestSpawnEventCountsRestarts(t *testing.T) {
	w := New(DefaultConfig(1))
	var spawns []int64
	w.Observe(func(e *Event) {
		if e.Kind == "spawn" && e.Proc == "srv" {
			spawns = append(spawns, e.A)
		}
	})
	sp, err := w.Spawn("srv", model.ProcessConfig{}, func(model.Process) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(ms); err != nil {
		t.Fatal(err)
	}
	p := sp.(*Process)
	p.Crash()
	p.Restart()
	if err := w.RunFor(ms); err != nil {
		t.Fatal(err)
	}
	if len(spawns) != 2 || spawns[0] != 0 || spawns[1] != 1 {
		t.Errorf("spawn events numbered %v, want [0 1]", spawns)
	}
}

// The world runs its events in time order and, at one instant, in the
// order they were armed, whichever queue holds them: the fifo, for events
// posted in time order, or the heap, for the rest. A run's order, and so
// its trace, depends on nothing else. Here a thousand events posted in
// time order (the fifo) and two thousand armed at random times (the
// heap), half before them and half after, many at the fifo's instants,
// so that ties between the queues' heads go both ways; and events that
// arm more, some at the instant they run. They run as a stable sort by
// time of the order they were armed in.
func TestEventsRunInTimeThenPostOrder(t *testing.T) {
	w := New(DefaultConfig(1))
	r := rand.New(rand.NewPCG(1, 2))
	type key struct {
		at time.Duration
		i  int
	}
	var want, got []key
	var arm func(at time.Duration, inFifo bool)
	arm = func(at time.Duration, inFifo bool) {
		k := key{at, len(want)}
		want = append(want, k)
		f := func() {
			got = append(got, k)
			if len(want) < 5000 && r.IntN(2) == 0 {
				arm(w.now+time.Duration(r.IntN(4))*us, r.IntN(2) == 0)
			}
		}
		if inFifo {
			w.post(at, f)
		} else {
			w.at(at, f)
		}
	}
	random := func() {
		for range 1000 {
			arm(time.Duration(r.IntN(1000))*5*us, false)
		}
	}
	random()
	for i := range 1000 {
		arm(time.Duration(i)*5*us, true)
	}
	random()
	if len(w.fifo)-w.fifoHead != 1000 {
		t.Fatalf("setup: %d events in the fifo, want the 1,000 posted in time order", len(w.fifo)-w.fifoHead)
	}
	if err := w.RunFor(10 * ms); err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(want, func(a, b key) int { return cmp.Compare(a.at, b.at) })
	if len(got) != len(want) {
		t.Fatalf("%d events ran of %d armed", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d: ran %+v, want %+v (time, then the order armed)", i, got[i], want[i])
		}
	}
}

// The world's epoch moves whenever a process's does (a crash, a restart),
// so a harness that skips its per-event checks while the world's epoch
// stands still (World.Epoch) never skips a process's change.
func TestWorldEpochMovesWithEveryProcessEpoch(t *testing.T) {
	w := New(DefaultConfig(1))
	p := idleProc(t, w, "p", model.ProcessConfig{})
	for _, step := range []struct {
		name string
		do   func()
	}{{"crash", p.Crash}, {"restart", p.Restart}} {
		pe, we := p.Epoch(), w.Epoch()
		step.do()
		if p.Epoch() == pe || w.Epoch() == we {
			t.Errorf("%s: process epoch %d -> %d, world epoch %d -> %d; want both to move", step.name, pe, p.Epoch(), we, w.Epoch())
		}
	}
}

// A worker pool asked for no workers (or fewer) gets one, as the real
// world's does: a pool that ran nothing would hang its submitters.
func TestWorkerPoolHasAtLeastOneWorker(t *testing.T) {
	w := New(DefaultConfig(1))
	var sizes []int
	if _, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		for _, n := range []int{0, -3, 1, 3} {
			sizes = append(sizes, p.NewWorkerPool("w", n).(*WorkerPool).Size())
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(ms); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sizes, []int{1, 1, 1, 3}) {
		t.Errorf("pools asked for 0, -3, 1 and 3 workers have %v", sizes)
	}
}

// Each process draws from a random stream of its own, and a restarted
// process from a new one: same world seed, different names or lives,
// different numbers.
func TestProcessRandomStreamsAreTheirOwn(t *testing.T) {
	w := New(DefaultConfig(1))
	procs := []*Process{idleProc(t, w, "a", model.ProcessConfig{}), idleProc(t, w, "b", model.ProcessConfig{})}
	first := func(p *Process) uint64 { return p.Rand().Uint64() }
	a, b := first(procs[0]), first(procs[1])
	procs[0].Crash()
	procs[0].Restart()
	again := first(procs[0])
	if a == b || a == again {
		t.Errorf("first draws: a %x, b %x, a restarted %x; want all different", a, b, again)
	}
}
