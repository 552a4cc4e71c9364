package properties

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"xceiver/model"
	"xceiver/real"
)

// The same properties, in the real world: a drawn case without faults
// runs on real sockets, files and threads. What can be checked there is
// checked: the history is linearizable, every op gets an answer with no
// dead cached peer (availability), the pool and fd bounds held at their
// peaks, and at quiescence the datanode and clients are back to their
// baselines while the world's Close finds /proc/self/fd and the goroutine
// count back to where they started. Per-event checks and faults need the
// simulator's control of time and stay there.

// RealLimits shapes a case for the real world: fault-free, short idle
// timeouts (the properties do not depend on their length), a bounded
// number of ops, gaps capped so a run takes wall seconds, not minutes.
type RealLimits struct {
	MaxOps int
	MaxGap time.Duration
}

// DefaultRealLimits keeps a real run to about a second.
var DefaultRealLimits = RealLimits{MaxOps: 60, MaxGap: 3 * time.Millisecond}

// ForReal adapts a drawn case to the real world (see RealLimits).
func ForReal(c Case, lim RealLimits) Case {
	c.Config.Faults = nil
	c.Schedule.Faults = nil
	c.Schedule.Probe = nil
	cfg := &c.Config
	cfg.Keepalive = 300 * time.Millisecond
	cfg.CacheExpiry = cfg.Keepalive - ExpiryMargin
	cfg.PoolIdle = 100 * time.Millisecond
	cfg.Timeout = 10 * time.Second
	cfg.ReadTimeout = 10 * time.Second
	ops := append(c.Schedule.Ops, c.Schedule.Live...)
	if len(ops) > lim.MaxOps {
		ops = ops[:lim.MaxOps]
	}
	for i := range ops {
		ops[i].Gap = min(ops[i].Gap, lim.MaxGap)
	}
	c.Schedule.Ops, c.Schedule.Live = ops, nil
	return c
}

type realClient struct {
	id   int
	p    model.Process
	cl   *model.Client
	hist model.History
	rows []int // per history entry: its porcupine client row
	base int   // fds before the client started
	dead int
	errs []string
}

// RunReal runs c (see ForReal) in a real world rooted in root ("" for the
// system's temporary directory).
func RunReal(c Case, root string) (*Result, error) {
	cfg := c.Config
	w, err := real.New(real.Config{Seed: c.Seed, Root: root})
	if err != nil {
		return nil, err
	}
	res := &Result{}
	fail := func(prop, format string, a ...any) {
		if res.Failure == nil && !slices.Contains(c.Ignore, prop) {
			res.Failure = &Failure{prop, fmt.Sprintf(format, a...)}
		}
	}
	initState := make(map[uint64]blockState)
	var dn *model.Datanode
	var dnProc model.Process
	var dnBase int
	var clients []*realClient
	workersLeft := 0

	dcfg := cfg.Datanode("127.0.0.1:0")
	settle := func() {
		// Every op is done and every client closed: wait past the
		// timeouts, then compare with the baselines.
		wait := max(cfg.Keepalive, cfg.CacheExpiry, cfg.PoolIdle) + 200*time.Millisecond
		dnProc.MainLoop().AfterFunc(wait, func() {
			if dn.Conns() != 0 || dn.BuffersOut() != 0 {
				fail(PropLeakFree, "datanode holds %d connections and %d buffers at quiescence", dn.Conns(), dn.BuffersOut())
			}
			if pool := dn.Pool(); pool != nil {
				if pool.Handles() > cfg.PoolMin || pool.Waiting() != 0 {
					fail(PropLeakFree, "handle pool holds %d handles (min %d) and %d waiters at quiescence", pool.Handles(), cfg.PoolMin, pool.Waiting())
				}
			}
			extra := 0 // idle handles the pool may keep (≤ PoolMin)
			if pool := dn.Pool(); pool != nil {
				extra = pool.Open()
			}
			if got := dnProc.FDs().Open; got != dnBase+extra {
				fail(PropLeakFree, "datanode holds %d fds at quiescence, baseline %d (+%d pooled)", got, dnBase, extra)
			}
			for _, rc := range clients {
				if got := rc.p.FDs().Open; got != rc.base {
					fail(PropLeakFree, "client %d holds %d fds after Close, baseline %d", rc.id, got, rc.base)
				}
			}
			w.Stop()
		})
	}
	workerDone := func() {
		dnProc.MainLoop().Post(func() {
			workersLeft--
			if workersLeft == 0 {
				settle()
			}
		})
	}
	startClient := func(rc *realClient, addr string, ops [][]Op) {
		_, err := w.Spawn(fmt.Sprintf("client-%d", rc.id), model.ProcessConfig{FDLimit: cfg.FDLimit}, func(p model.Process) {
			rc.p = p
			rc.base = p.FDs().Open
			cl, err := model.NewClient(p, p.MainLoop(), rc.id, cfg.Client(fmt.Sprintf("client-%d", rc.id), addr))
			if err != nil {
				w.Fail(err)
				return
			}
			cl.History = &rc.hist
			rc.cl = cl
			running := len(ops)
			var run func(worker, i int)
			run = func(worker, i int) {
				if i == len(ops[worker]) {
					running--
					if running == 0 {
						cl.Close()
					}
					workerDone()
					return
				}
				op := ops[worker][i]
				p.MainLoop().AfterFunc(op.Gap, func() {
					dead := cl.Stats().DeadPeers
					done := func(r model.Result) {
						if r.Err != nil && !errors.Is(r.Err, model.ErrRejected) {
							rc.errs = append(rc.errs, fmt.Sprintf("%s of block %d: %v", op.Kind, op.Block, r.Err))
						}
						rc.dead += cl.Stats().DeadPeers - dead
						run(worker, i+1)
					}
					rc.rows = append(rc.rows, rc.id*cfg.ClientWorkers+worker+1)
					startOp(cl, op, 0, done)
				})
			}
			for worker := range ops {
				run(worker, 0)
			}
		})
		if err != nil {
			w.Fail(err)
		}
	}
	_, err = w.Spawn("datanode", model.ProcessConfig{FDLimit: cfg.FDLimit}, func(p model.Process) {
		dnProc = p
		store := model.NewBlockStore(p.Disk(), dnDir)
		store.KeepStampRecord(model.StampRecord)
		for id := uint64(1); id <= cfg.MaxBlock; id++ {
			initState[id] = blockState{set: true}
		}
		for _, b := range cfg.Blocks {
			data := blockData(b.Key, b.Size)
			stamp, err := store.Write(b.ID, data)
			if err != nil {
				w.Fail(fmt.Errorf("write block %d: %w", b.ID, err))
				return
			}
			initState[b.ID] = blockState{set: true, exists: true, known: true, stamp: stamp, floor: stamp, data: text(string(data))}
		}
		var err error
		if dn, err = model.StartDatanode(p, p.MainLoop(), dcfg); err != nil {
			w.Fail(err)
			return
		}
		dnBase = p.FDs().Open
		perClient := make([][][]Op, cfg.Clients)
		for i := range perClient {
			perClient[i] = make([][]Op, cfg.ClientWorkers)
		}
		for _, op := range c.Schedule.Ops {
			perClient[op.Client][op.Worker] = append(perClient[op.Client][op.Worker], op)
		}
		for i := 0; i < cfg.Clients; i++ {
			rc := &realClient{id: i}
			clients = append(clients, rc)
			workersLeft += len(perClient[i])
		}
		if workersLeft == 0 {
			settle()
		}
		for i, rc := range clients {
			startClient(rc, dn.Addr(), perClient[i])
		}
	})
	if err != nil {
		w.Close()
		return nil, err
	}
	runErr := w.Run(time.Minute)
	if runErr == nil {
		if pool := dn.Pool(); pool != nil {
			if pool.PeakOpen > cfg.PoolMax {
				fail(PropPoolBound, "the pool held %d block fds at its peak, max %d", pool.PeakOpen, cfg.PoolMax)
			}
			if pool.ClosedInUse != 0 {
				fail(PropNoCloseInUse, "%d handles were closed while in use", pool.ClosedInUse)
			}
		}
		for _, p := range append([]model.Process{dnProc}, procsOf(clients)...) {
			if st := p.FDs(); st.Peak > st.Limit {
				fail(PropFDBounds, "%s peaked at %d fds, limit %d", p.Name(), st.Peak, st.Limit)
			}
		}
		var history []porcupine.Operation
		for id := uint64(1); id <= cfg.MaxBlock; id++ {
			s := initState[id]
			history = append(history, porcupine.Operation{ClientId: 0, Call: -2, Return: -1, Output: LinOutput{},
				Input: LinInput{Kind: kInit, Block: id, Exists: s.exists, Stamp: s.stamp, Data: s.data.String()}})
		}
		for _, rc := range clients {
			if len(rc.errs) > 0 {
				fail(PropAvailability, "client %d: %s (no fault was injected)", rc.id, rc.errs[0])
			}
			for i, o := range rc.hist.Ops {
				if op, ok := convert(o, rc.rows[i]); ok {
					history = append(history, op)
				}
			}
			if rc.dead > 0 {
				fail(PropAvailability, "client %d found %d dead cached peers (no fault was injected)", rc.id, rc.dead)
			}
			res.Ops += len(rc.hist.Ops)
		}
		res.History = history
		var lf *Failure
		res.Lin, _, lf = CheckHistory(history, DefaultLinBudget, false)
		if lf != nil {
			fail(lf.Property, "%s", lf.Message)
		}
	}
	closeErr := w.Close()
	if runErr != nil {
		return res, fmt.Errorf("real run: %w", runErr)
	}
	if closeErr != nil {
		fail(PropLeakFree, "the OS process did not return to its baseline: %v", closeErr)
	}
	return res, nil
}

func procsOf(cs []*realClient) []model.Process {
	var ps []model.Process
	for _, c := range cs {
		if c.p != nil {
			ps = append(ps, c.p)
		}
	}
	return ps
}
