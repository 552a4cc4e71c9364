package shortcircuit_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/real"
	"xceiver/sim"
)

// env is a datanode with a domain endpoint and a client process with the
// short-circuit state, in either world.
type env struct {
	w      model.World
	dn     *model.Datanode
	srv    *shortcircuit.Server
	dnProc model.Process
	cp     model.Process
	sh     *shortcircuit.Shared
	cl     *shortcircuit.Client
	tcp    *model.Client // a second client, for writes
	base   int           // datanode fds at rest
	cbase  int           // client fds at rest
}

const blockLen = 4096

// startEnv starts the datanode (blocks 1..3 of blockLen bytes) and the
// client, then runs script on the client's loop.
func startEnv(t *testing.T, w model.World, tcpAddr, path string, scfg shortcircuit.SharedConfig, ccfg shortcircuit.ClientConfig, script func(e *env)) *env {
	t.Helper()
	return startEnvBugs(t, w, tcpAddr, path, shortcircuit.ServerBugs{}, scfg, ccfg, script)
}

// startEnvCfg is a sim environment with server bugs switched on.
func startEnvCfg(t *testing.T, w model.World, bugs shortcircuit.ServerBugs, script func(e *env)) *env {
	t.Helper()
	return startEnvBugs(t, w, "dn:50010", "/run/dn_socket", bugs, shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{}, script)
}

func startEnvBugs(t *testing.T, w model.World, tcpAddr, path string, bugs shortcircuit.ServerBugs, scfg shortcircuit.SharedConfig, ccfg shortcircuit.ClientConfig, script func(e *env)) *env {
	t.Helper()
	return startEnvDN(t, w, model.DatanodeConfig{Addr: tcpAddr}, path, bugs, scfg, ccfg, script)
}

// startEnvDN is startEnvBugs with the datanode's configuration (Addr set;
// a zero Keepalive and PoolIdle become 100 ms and 50 ms).
func startEnvDN(t *testing.T, w model.World, dcfg model.DatanodeConfig, path string, bugs shortcircuit.ServerBugs, scfg shortcircuit.SharedConfig, ccfg shortcircuit.ClientConfig, script func(e *env)) *env {
	t.Helper()
	if dcfg.Keepalive == 0 {
		dcfg.Keepalive = 100 * time.Millisecond
	}
	if dcfg.PoolIdle == 0 {
		dcfg.PoolIdle = 50 * time.Millisecond
	}
	e := &env{w: w}
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		e.dnProc = p
		store := model.NewBlockStore(p.Disk(), "data")
		for i := uint64(1); i <= 3; i++ {
			if _, err := store.Write(i, model.BlockContent(i, blockLen)); err != nil {
				w.Fail(err)
				return
			}
		}
		var err error
		e.dn, err = model.StartDatanode(p, p.MainLoop(), dcfg)
		if err != nil {
			w.Fail(err)
			return
		}
		e.srv, err = shortcircuit.Start(e.dn, shortcircuit.ServerConfig{Path: path, Bugs: bugs})
		if err != nil {
			w.Fail(err)
			return
		}
		e.base = p.FDs().Open
		addr := e.dn.Addr()
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			e.cp = cp
			e.cbase = cp.FDs().Open
			var err error
			if e.sh, err = shortcircuit.NewShared(cp, scfg); err != nil {
				w.Fail(err)
				return
			}
			ccfg.Path = path
			ccfg.TCP.Datanode = addr
			ccfg.TCP.NoDelay = true
			if e.cl, err = shortcircuit.NewClient(cp, cp.MainLoop(), 0, e.sh, ccfg); err != nil {
				w.Fail(err)
				return
			}
			if e.tcp, err = model.NewClient(cp, cp.MainLoop(), 1, model.ClientConfig{Datanode: addr, NoDelay: true}); err != nil {
				w.Fail(err)
				return
			}
			script(e)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return e
}

// steps runs functions in order on the client's loop, each calling next
// when done.
func steps(fs ...func(next func())) {
	var run func(i int)
	run = func(i int) {
		if i < len(fs) {
			fs[i](func() { run(i + 1) })
		}
	}
	run(0)
}

// finish closes everything on the client, waits past the keep-alive, and
// stops the world after recording the datanode's state in *after.
type rest struct {
	dnFDs, clFDs, clSegs, dnSegs, dnSlots, dnPassing, dnConns int
}

func (e *env) finish(after *rest) func(next func()) {
	return func(next func()) {
		loop := e.cp.MainLoop()
		e.cl.Close()
		e.tcp.Close()
		e.sh.Close(loop, func() {
			loop.AfterFunc(300*time.Millisecond, func() {
				after.clFDs, after.clSegs = e.cp.FDs().Open, e.cp.FDs().Segments
				dl := e.dnProc.MainLoop()
				dl.Post(func() {
					after.dnFDs, after.dnConns = e.dnProc.FDs().Open, e.srv.Conns()+e.dn.Conns()
					e.srv.Registry(dl, func(segs, slots, passing int) {
						after.dnSegs, after.dnSlots, after.dnPassing = segs, slots, passing
						e.srv.Stop()
						e.dn.Stop()
						dl.AfterFunc(50*time.Millisecond, e.w.Stop)
					})
				})
			})
		})
	}
}

func (e *env) checkRest(t *testing.T, after rest) {
	t.Helper()
	if after.clFDs != e.cbase || after.clSegs != 0 {
		t.Errorf("client holds %d fds (baseline %d) and %d segments after close", after.clFDs, e.cbase, after.clSegs)
	}
	if after.dnFDs != e.base || after.dnSegs != 0 || after.dnSlots != 0 || after.dnPassing != 0 || after.dnConns != 0 {
		t.Errorf("datanode at rest: %+v, baseline %d fds", after, e.base)
	}
}

func simWorld() model.World { return sim.New(sim.DefaultConfig(1)) }

// replaceStep is a step (see steps) that replaces block with data over
// TCP, failing the world if the replace fails.
func (e *env) replaceStep(block uint64, data []byte) func(next func()) {
	return func(next func()) {
		e.tcp.Replace(block, data, func(r model.Result) {
			if r.Err != nil {
				e.w.Fail(r.Err)
			}
			next()
		})
	}
}

func realWorld(t *testing.T) (model.World, func() error) {
	w, err := real.New(real.Config{Seed: 1, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return w, w.Close
}

// inWorld runs f in a new world of the kind named ("sim" or "real") and
// closes it; the error is f's, else the close's.
func inWorld(t *testing.T, kind string, f func(w model.World) error) error {
	if kind != "real" {
		return f(simWorld())
	}
	w, closeW := realWorld(t)
	err := f(w)
	if cerr := closeW(); err == nil {
		err = cerr
	}
	return err
}

// readLifecycle: a read goes short-circuit with two passed fds; the next
// one hits the cache; a replace invalidates the slot, so the read after it
// sees the new contents; a delete does too, and the read after it is
// refused; the datanode never holds a block fd after passing; at the end
// both sides are back to their baselines.
func readLifecycle(t *testing.T, w model.World, tcpAddr, path string) {
	var got []string
	var fdsAfterPass, passedKind, dnBlockFDs int
	var after rest
	want1 := model.BlockContent(1, blockLen)
	newData := bytes.Repeat([]byte("new!"), 300)
	var e *env
	check := func(what string, r model.Result, data []byte) {
		if r.Err != nil || !bytes.Equal(r.Data, data) {
			e.w.Fail(fmt.Errorf("%s: err %v, %d bytes, match %v", what, r.Err, len(r.Data), bytes.Equal(r.Data, data)))
		}
	}
	e = startEnv(t, w, tcpAddr, path, shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{}, func(e *env) {
		steps(
			func(next func()) {
				e.cl.Read(1, 0, 100, 1000, func(r model.Result) {
					check("first read", r, want1[100:1100])
					st := e.cl.Stats()
					got = append(got, fmt.Sprintf("local %d fds %d", st.LocalReads, st.FDsReceived))
					fdsAfterPass = e.cp.FDs().Open - e.cbase
					passedKind = e.cp.FDs().ByKind[model.FDPassed]
					// On the datanode's loop: the callback that passed the
					// fds has finished.
					e.dnProc.MainLoop().Post(func() {
						by := e.dnProc.FDs().ByKind
						dnBlockFDs = by[model.FDBlockFile] + by[model.FDMetaFile]
						e.cp.MainLoop().Post(next)
					})
				})
			},
			func(next func()) {
				e.cl.Read(1, 0, 0, blockLen, func(r model.Result) {
					check("cached read", r, want1)
					next()
				})
			},
			e.replaceStep(1, newData),
			func(next func()) {
				e.cl.Read(1, 0, 0, int64(len(newData)), func(r model.Result) {
					check("read after replace", r, newData)
					next()
				})
			},
			func(next func()) {
				e.cl.Read(2, 0, 0, 10, func(r model.Result) {
					check("read block 2", r, model.BlockContent(2, blockLen)[:10])
					e.tcp.Delete(2, func(r model.Result) {
						if r.Err != nil {
							e.w.Fail(r.Err)
						}
						next()
					})
				})
			},
			func(next func()) {
				e.cl.Read(2, 0, 0, 10, func(r model.Result) {
					if r.Status != model.StatusErrorInvalid || !errors.Is(r.Err, model.ErrRejected) {
						e.w.Fail(fmt.Errorf("read of a deleted block: status %v, err %v, %d bytes", r.Status, r.Err, len(r.Data)))
					}
					st := e.cl.Stats()
					got = append(got, fmt.Sprintf("hits %d misses %d fallbacks %d", st.Hits, st.Misses, st.Fallbacks))
					next()
				})
			},
			e.finish(&after),
		)
	})
	want := []string{"local 1 fds 2", "hits 1 misses 4 fallbacks 1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats %q, want %q", got, want)
	}
	// Two passed fds, the segment's connection and the fd request's,
	// cached for the next request; the segment's own fd was closed after
	// mapping.
	if fdsAfterPass != 4 || passedKind != 2 {
		t.Errorf("client after the first read: %d fds above baseline (%d passed), want 4 (2 passed)", fdsAfterPass, passedKind)
	}
	if dnBlockFDs != 0 {
		t.Errorf("datanode holds %d block fds after passing them", dnBlockFDs)
	}
	e.checkRest(t, after)
}

func TestReadLifecycleSim(t *testing.T) {
	readLifecycle(t, simWorld(), "dn:50010", "/run/hdfs/dn_socket")
}

func TestReadLifecycleReal(t *testing.T) {
	w, closeWorld := realWorld(t)
	readLifecycle(t, w, "127.0.0.1:0", "dn_socket")
	if err := closeWorld(); err != nil {
		t.Error(err)
	}
}

// ReadInto reads into the caller's buffer when it has ReadRoom for the
// read, short-circuit or over TCP (no path), and into a buffer of its own
// when it has less, even room enough for this one read; the bytes are the
// block's either way.
func TestReadIntoUsesTheCallersBuffer(t *testing.T) {
	want := model.BlockContent(1, blockLen)
	// within: whether data lies in buf (a change to it shows in buf).
	within := func(buf, data []byte) bool {
		before := bytes.Clone(buf[:cap(buf)])
		data[0] ^= 0xff
		in := !bytes.Equal(before, buf[:cap(buf)])
		data[0] ^= 0xff
		return in
	}
	var got []string
	startEnv(t, simWorld(), "dn:50010", "/run/dn_socket", shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{}, func(e *env) {
		room := make([]byte, shortcircuit.ReadRoom(1000))
		small := make([]byte, 999)
		tcpOnly, err := shortcircuit.NewClient(e.cp, e.cp.MainLoop(), 2, e.sh, shortcircuit.ClientConfig{TCP: model.ClientConfig{Datanode: e.dn.Addr(), NoDelay: true}})
		if err != nil {
			e.w.Fail(err)
			return
		}
		unverified, err := shortcircuit.NewClient(e.cp, e.cp.MainLoop(), 3, e.sh, shortcircuit.ClientConfig{Path: "/run/dn_socket", SkipChecksum: true, TCP: model.ClientConfig{Datanode: e.dn.Addr(), NoDelay: true}})
		if err != nil {
			e.w.Fail(err)
			return
		}
		read := func(cl *shortcircuit.Client, name string, off int64, buf []byte) func(next func()) {
			return func(next func()) {
				cl.ReadInto(1, 0, off, 1000, buf, func(r model.Result, local bool) {
					match := bytes.Equal(r.Data, want[off:off+1000])
					got = append(got, fmt.Sprintf("%s: local %v err %v match %v in buf %v", name, local, r.Err, match, match && within(buf, r.Data)))
					next()
				})
			}
		}
		steps(
			read(e.cl, "first local, unaligned", 100, room),
			read(e.cl, "cached local, aligned", 512, room),
			read(e.cl, "local, small buffer", 100, small),
			// Room for this read (two whole chunks) but under ReadRoom:
			// its own buffer, as documented.
			read(e.cl, "local, under ReadRoom", 512, make([]byte, 2*(model.BytesPerChecksum+model.ChecksumSize))),
			read(tcpOnly, "tcp", 100, room),
			read(tcpOnly, "tcp, small buffer", 100, small),
			read(tcpOnly, "tcp, under ReadRoom", 100, make([]byte, 1000)),
			read(unverified, "skipping checksums", 600, room),
			read(unverified, "skipping checksums, small buffer", 600, small),
			func(next func()) {
				tcpOnly.Close()
				unverified.Close()
				next()
			},
			e.finish(new(rest)),
		)
	})
	wantReads := []string{
		"first local, unaligned: local true err <nil> match true in buf true",
		"cached local, aligned: local true err <nil> match true in buf true",
		"local, small buffer: local true err <nil> match true in buf false",
		"local, under ReadRoom: local true err <nil> match true in buf false",
		"tcp: local false err <nil> match true in buf true",
		"tcp, small buffer: local false err <nil> match true in buf false",
		"tcp, under ReadRoom: local false err <nil> match true in buf false",
		"skipping checksums: local true err <nil> match true in buf true",
		"skipping checksums, small buffer: local true err <nil> match true in buf false",
	}
	if strings.Join(got, "\n") != strings.Join(wantReads, "\n") {
		t.Errorf("reads:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantReads, "\n"))
	}
}

// ReadRoom is the most room a local read of n bytes takes (its whole
// checksum chunks and their checksums) over every offset: never less, so
// that a buffer of it holds any read of n bytes, and no more.
func TestReadRoomIsTheMostAReadTakes(t *testing.T) {
	const bpc, sum = model.BytesPerChecksum, model.ChecksumSize
	sizes := []int64{64<<10 - 1, 64 << 10, 64<<10 + 1}
	for n := int64(0); n <= 3*bpc+3; n++ {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		most := int64(0)
		for off := int64(0); off < 2*bpc; off++ {
			first, end := off/bpc*bpc, off+n
			if end%bpc != 0 {
				end = (end/bpc + 1) * bpc
			}
			most = max(most, end-first+(end-first)/bpc*sum)
		}
		if got := shortcircuit.ReadRoom(n); int64(got) != most {
			t.Errorf("ReadRoom(%d) = %d, the most a read of %d bytes takes is %d", n, got, n, most)
		}
	}
}
