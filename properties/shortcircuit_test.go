package properties

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// Short-circuit reads, drawn per seed: a few reader threads sharing one
// short-circuit cache (shards and capacity drawn) read blocks while a
// writer replaces, appends to, deletes and re-creates them. Checked:
//
//   - no stale read: a read returns the contents of the last change that
//     returned before it started, or of a change concurrent with it, never
//     older data (through a cached fd or otherwise);
//   - fd bound: the client's passed fds never exceed 2 × cache capacity +
//     2 × reads in flight;
//   - leak-freedom: after closing, the client holds no passed fd, segment
//     or extra fd, and the datanode no segment, slot or extra fd.

type scVersion struct {
	start, end time.Duration
	data       []byte // nil: deleted
}

type scRun struct {
	failure string
}

func (r *scRun) fail(format string, a ...any) {
	if r.failure == "" {
		r.failure = fmt.Sprintf(format, a...)
	}
}

func checkShortCircuitSeed(seed uint64, bugs shortcircuit.ServerBugs, cacheBugs shortcircuit.CacheBugs) string {
	w := sim.New(sim.DefaultConfig(seed))
	run := &scRun{}
	const blocks = 3
	versions := map[uint64][]scVersion{}
	for b := uint64(1); b <= blocks; b++ {
		versions[b] = []scVersion{{data: model.BlockContent(b, 4096)}}
	}
	var dnProc model.Process
	var dn *model.Datanode
	var srv *shortcircuit.Server
	var dnBase int
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dnProc = p
		store := model.NewBlockStore(p.Disk(), "data")
		for b := uint64(1); b <= blocks; b++ {
			if _, err := store.Write(b, versions[b][0].data); err != nil {
				w.Fail(err)
				return
			}
		}
		var err error
		if dn, err = model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010", Keepalive: 100 * time.Millisecond, PoolIdle: 50 * time.Millisecond}); err != nil {
			w.Fail(err)
			return
		}
		if srv, err = shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/dn_socket", Bugs: bugs}); err != nil {
			w.Fail(err)
			return
		}
		dnBase = p.FDs().Open
		w.Spawn("client", model.ProcessConfig{Cores: 2}, func(cp model.Process) {
			rng := cp.Rand()
			shards := 1 + rng.IntN(3)
			capacity := shards + rng.IntN(4)
			sh, err := shortcircuit.NewShared(cp, shortcircuit.SharedConfig{Cache: shortcircuit.CacheConfig{Shards: shards, Capacity: capacity, Bugs: cacheBugs}})
			if err != nil {
				w.Fail(err)
				return
			}
			main := cp.MainLoop()
			base := cp.FDs().Open
			var readers []*shortcircuit.Client
			var loops []model.Loop
			for i := 0; i < 1+rng.IntN(3); i++ {
				l, _ := cp.NewLoop(fmt.Sprintf("reader-%d", i))
				c, err := shortcircuit.NewClient(cp, l, i, sh, shortcircuit.ClientConfig{Path: "/run/dn_socket", TCP: model.ClientConfig{Datanode: "dn:50010", NoDelay: true}})
				if err != nil {
					w.Fail(err)
					return
				}
				readers, loops = append(readers, c), append(loops, l)
			}
			writer, err := model.NewClient(cp, main, 99, model.ClientConfig{Datanode: "dn:50010", NoDelay: true})
			if err != nil {
				w.Fail(err)
				return
			}
			base += 2 * len(loops)
			inflight, pending := 0, 0
			// One change at a time per block, so each change's result is
			// known from the one before.
			writing := map[uint64]bool{}
			checkFDs := func() {
				if passed := cp.FDs().ByKind[model.FDPassed]; passed > 2*capacity+2*inflight {
					run.fail("client holds %d passed fds, bound 2×%d + 2×%d in flight", passed, capacity, inflight)
				}
			}
			ops := 20 + rng.IntN(20)
			var t time.Duration
			for i := 0; i < ops; i++ {
				t += time.Duration(rng.IntN(3000)) * time.Microsecond
				block := uint64(1 + rng.IntN(blocks))
				kind := rng.IntN(10)
				idx := rng.IntN(len(readers))
				pending++
				n := i
				main.AfterFunc(t, func() {
					start := main.Now()
					done := func() {
						pending--
						if pending == 0 {
							finish(w, run, cp, main, sh, readers, loops, writer, base, dnProc, dn, srv, dnBase)
						}
					}
					if kind >= 6 && writing[block] {
						kind = 0
					}
					switch {
					case kind < 6: // read
						off := int64(rng.IntN(2048))
						inflight++
						l := loops[idx]
						l.Post(func() {
							readers[idx].Read(block, 0, off, 512, func(r model.Result) {
								end := l.Now()
								main.Post(func() {
									inflight--
									checkFDs()
									if r.Err == nil {
										ok := false
										for _, v := range allowed(versions[block], start, end) {
											if v != nil && int64(len(v)) >= off+512 && bytes.Equal(v[off:off+512], r.Data) {
												ok = true
											}
										}
										if !ok {
											run.fail("read %d of block %d at %v–%v returned data no version allowed (stale read)", n, block, start, end)
										}
									}
									done()
								})
							})
						})
					default: // replace, append, delete or re-create
						data := model.BlockContent(seed<<16|uint64(n), 4096)
						writing[block] = true
						record := func(r model.Result, newData []byte, deleted bool) {
							writing[block] = false
							if r.Err == nil || r.Unknown {
								v := scVersion{start: start, end: main.Now(), data: newData}
								if deleted {
									v.data = nil
								}
								if r.Unknown {
									v.end = 1 << 62 // may or may not have happened
								}
								versions[block] = append(versions[block], v)
							}
							done()
						}
						last := versions[block][len(versions[block])-1].data
						switch {
						case kind == 6 || kind == 7:
							writer.Replace(block, data, func(r model.Result) { record(r, data, false) })
						case kind == 8 && last != nil:
							grown := append(append([]byte(nil), last...), data[:100]...)
							writer.Append(block, data[:100], func(r model.Result) { record(r, grown, false) })
						case last == nil:
							writer.Write(block, data, func(r model.Result) { record(r, data, false) })
						default:
							writer.Delete(block, func(r model.Result) { record(r, nil, true) })
						}
					}
				})
			}
		})
	})
	if err != nil {
		return err.Error()
	}
	if err := w.Run(time.Hour); err != nil {
		return err.Error()
	}
	return run.failure
}

// allowed is what a read during [start, end] may return: the last version
// that ended before start, and every version concurrent with the read.
func allowed(vs []scVersion, start, end time.Duration) [][]byte {
	var out [][]byte
	lastBefore := -1
	for i, v := range vs {
		if v.end < start && (lastBefore < 0 || v.end >= vs[lastBefore].end) {
			lastBefore = i
		}
	}
	for i, v := range vs {
		if i == lastBefore || (v.start <= end && v.end >= start) {
			out = append(out, v.data)
		}
	}
	return out
}

func finish(w *sim.World, run *scRun, cp model.Process, main model.Loop, sh *shortcircuit.Shared, readers []*shortcircuit.Client, loops []model.Loop, writer *model.Client, base int, dnProc model.Process, dn *model.Datanode, srv *shortcircuit.Server, dnBase int) {
	for _, r := range readers {
		r.Close()
	}
	writer.Close()
	sh.Close(main, func() {
		main.AfterFunc(500*time.Millisecond, func() {
			st := cp.FDs()
			if st.ByKind[model.FDPassed] != 0 || st.Segments != 0 || st.Open != base {
				run.fail("client at rest: %d fds (baseline %d), %d passed, %d segments", st.Open, base, st.ByKind[model.FDPassed], st.Segments)
			}
			dl := dnProc.MainLoop()
			dl.Post(func() {
				srv.Registry(dl, func(segs, slots, passing int) {
					if segs != 0 || slots != 0 || passing != 0 || dnProc.FDs().Open != dnBase {
						run.fail("datanode at rest: %d segments, %d slots, %d fds being passed, %d fds (baseline %d)", segs, slots, passing, dnProc.FDs().Open, dnBase)
					}
					for _, l := range loops {
						l.Close()
					}
					srv.Stop()
					dn.Stop()
					dl.AfterFunc(10*time.Millisecond, w.Stop)
				})
			})
		})
	})
}

func TestShortCircuitProperties(t *testing.T) {
	seeds := uint64(200)
	if testing.Short() {
		seeds = 40
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		if f := checkShortCircuitSeed(seed, shortcircuit.ServerBugs{}, shortcircuit.CacheBugs{}); f != "" {
			t.Fatalf("seed %d: %s", seed, f)
		}
	}
}

// The properties find HDFS-6750 within 200 seeds. (The sharding bug is
// not found by them in 200 seeds; the cache's state-machine test finds
// it.)
func TestShortCircuitPropertiesFindBugs(t *testing.T) {
	for _, c := range []struct {
		name  string
		bugs  shortcircuit.ServerBugs
		cache shortcircuit.CacheBugs
	}{
		{"HDFS-6750", shortcircuit.ServerBugs{NoInvalidateOnDelete: true}, shortcircuit.CacheBugs{}},
	} {
		found := uint64(0)
		for seed := uint64(1); seed <= 200 && found == 0; seed++ {
			if f := checkShortCircuitSeed(seed, c.bugs, c.cache); f != "" {
				found = seed
				t.Logf("%s: seed %d: %s", c.name, seed, f)
			}
		}
		if found == 0 {
			t.Errorf("%s not found in 200 seeds", c.name)
		}
	}
}
