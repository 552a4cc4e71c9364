package namespace_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// editLogWorld runs a namenode with an edit log and clients that each
// make ops changes (mkdir) at once and list the root; faults, if set, are
// the namenode disk's.
func editLogWorld(t *testing.T, clients, ops int, faults sim.DiskFaults) (nn *namespace.Namenode, nnp *sim.Process, answers []time.Duration, errs []error) {
	t.Helper()
	w := sim.New(sim.DefaultConfig(1))
	sp, err := w.Spawn("namenode", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		var err error
		nn, err = namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: namespace.Config{Lock: namespace.RWLock, EditLog: "edits"},
			RPC:       rpc.ServerConfig{Addr: nnAddr, Readers: 2, Handlers: 8},
		})
		if err != nil {
			w.Fail(err)
			return
		}
		p.(*sim.Process).SimDisk().SetFaults(faults)
		for i := 0; i < clients; i++ {
			w.Spawn(fmt.Sprintf("client%d", i), model.ProcessConfig{}, func(cp model.Process) {
				rc, _ := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{})
				c := &namespace.Client{RPC: rc, Addr: nnAddr}
				l := cp.MainLoop()
				for k := 0; k < ops; k++ {
					t0 := l.Now()
					c.Do(namespace.Request{Method: namespace.MethodMkdir, Path: fmt.Sprintf("/c%d/d%d", i, k)}, func(_ namespace.Response, err error) {
						answers = append(answers, l.Now()-t0)
						errs = append(errs, err)
					})
				}
				c.Do(namespace.Request{Method: namespace.MethodList, Path: "/"}, func(_ namespace.Response, err error) {
					if err != nil {
						t.Errorf("list: %v", err)
					}
				})
				l.AfterFunc(time.Minute, rc.Close)
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	return nn, sp.(*sim.Process), answers, errs
}

// Every change is answered only once the log holding it is synced, the
// changes made meanwhile share the next sync (group commit), and the log
// holds each change once, in transaction order; reads are not logged.
func TestEditLogSyncsBeforeAnswering(t *testing.T) {
	const clients, ops = 4, 5
	nn, p, answers, errs := editLogWorld(t, clients, ops, sim.DiskFaults{})
	lat := sim.DefaultDiskConfig().Latency
	for i, err := range errs {
		if err != nil {
			t.Errorf("mkdir %d: %v", i, err)
		}
	}
	for i, d := range answers {
		if d < lat {
			t.Errorf("mkdir %d answered after %v, before an fsync (%v) could have made it durable", i, d, lat)
		}
	}
	st := nn.NS.EditLogStats()
	if st.Edits != clients*ops || st.Syncs >= st.Edits || st.Syncs == 0 || st.Failed != 0 {
		t.Errorf("edit log %+v: want %d edits in fewer syncs", st, clients*ops)
	}
	f, err := p.Disk().Open("edits", model.ReadOnly, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, _ := f.Size()
	b := make([]byte, size)
	f.ReadAt(b, 0)
	var txids []uint64
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+n || n < 9 {
			t.Fatalf("log record of %d bytes with %d left", n, len(b)-4)
		}
		txids = append(txids, binary.BigEndian.Uint64(b[4:]))
		if m := b[12]; m != namespace.MethodMkdir {
			t.Errorf("logged method %d, want only mkdirs", m)
		}
		b = b[4+n:]
	}
	if len(txids) != clients*ops {
		t.Errorf("log holds %d edits, want %d", len(txids), clients*ops)
	}
	for i, id := range txids {
		if id != uint64(i+1) {
			t.Fatalf("edit %d has txid %d: %v", i, id, txids)
		}
	}
}

// A failed sync is fatal, as in HDFS: the namenode is told to stop, and no
// change the failed sync carried, nor any logged after it, is answered OK.
func TestEditLogFailedSyncIsFatal(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var fatal []error
	var nn *namespace.Namenode
	var answered, okAnswers int
	w.Spawn("namenode", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		var err error
		nn, err = namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: namespace.Config{EditLog: "edits", Fatal: func(err error) {
				fatal = append(fatal, err)
				w.At(w.Now(), p.(*sim.Process).Crash)
			}},
			RPC: rpc.ServerConfig{Addr: nnAddr, Readers: 1, Handlers: 4},
		})
		if err != nil {
			w.Fail(err)
			return
		}
		p.(*sim.Process).SimDisk().SetFaults(sim.DiskFaults{SyncEIO: 1})
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			rc, _ := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{CallTimeout: time.Second})
			c := &namespace.Client{RPC: rc, Addr: nnAddr}
			for k := 0; k < 6; k++ {
				c.Do(namespace.Request{Method: namespace.MethodMkdir, Path: fmt.Sprintf("/d%d", k)}, func(_ namespace.Response, err error) {
					answered++
					if err == nil {
						okAnswers++
					}
				})
			}
		})
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(fatal) != 1 || !errors.Is(fatal[0], model.ErrIO) {
		t.Errorf("fatal told %v, want one EIO", fatal)
	}
	if answered != 6 || okAnswers != 0 {
		t.Errorf("%d of 6 mkdirs ended, %d answered OK; want all ended by the namenode's death, none OK", answered, okAnswers)
	}
	if st := nn.NS.EditLogStats(); st.Failed != 1 {
		t.Errorf("edit log %+v: want one failed sync, then none", st)
	}
}

// A namenode that crashes and restarts replays its edit log: every change
// answered OK before the crash is there, in order (a rename after the
// mkdir it moves), block ids go on from the replayed ones, and the txids
// of new edits follow the replayed ones.
func TestEditLogReplayAfterRestart(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var nn *namespace.Namenode
	var np *sim.Process
	okBefore := map[string]bool{}
	var created []uint64
	var replayedSnapshot []string
	starts := 0
	sp, _ := w.Spawn("namenode", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		starts++
		var err error
		nn, err = namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: namespace.Config{EditLog: "edits", FirstBlock: 100},
			RPC:       rpc.ServerConfig{Addr: nnAddr, Readers: 1, Handlers: 4},
		})
		if err != nil {
			w.Fail(err)
			return
		}
		if starts == 2 {
			nn.NS.Walk(func(path string, dir, _ bool, _ []namespace.Location) {
				replayedSnapshot = append(replayedSnapshot, fmt.Sprintf("%s dir=%v", path, dir))
			})
			return
		}
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			rc, _ := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{CallTimeout: time.Second})
			c := &namespace.Client{RPC: rc, Addr: nnAddr}
			do := func(r namespace.Request, key string) {
				c.Do(r, func(resp namespace.Response, err error) {
					if err == nil {
						okBefore[key] = true
						created = append(created, resp.Blocks...)
					}
				})
			}
			do(namespace.Request{Method: namespace.MethodMkdir, Path: "/a/b"}, "/a/b")
			do(namespace.Request{Method: namespace.MethodCreate, Path: "/a/f", Blocks: 2}, "/a/f")
			do(namespace.Request{Method: namespace.MethodRename, Path: "/a/b", Dst: "/c"}, "/c")
			cp.MainLoop().AfterFunc(5*time.Millisecond, func() {
				np.Crash()
				np.Restart()
			})
			cp.MainLoop().AfterFunc(10*time.Millisecond, rc.Close)
		})
	})
	np = sp.(*sim.Process)
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(okBefore) != 3 || starts != 2 {
		t.Fatalf("answered OK before the crash: %v; namenode started %d times", okBefore, starts)
	}
	want := []string{"/a dir=true", "/a/f dir=false", "/c dir=true"}
	if fmt.Sprint(replayedSnapshot) != fmt.Sprint(want) {
		t.Errorf("replayed tree %v, want %v", replayedSnapshot, want)
	}
	if got := nn.NS.NextBlock(); got != 102 || fmt.Sprint(created) != "[100 101]" {
		t.Errorf("next block %d after replaying blocks %v, want 102", got, created)
	}
}

// Replay ends at a record cut short and at one whose txid does not follow,
// and a restarted log's next edit overwrites the cut one.
func TestEditLogReplayStopsAtTornTail(t *testing.T) {
	rec := func(txid uint64, path string) []byte {
		return namespace.EditRecord(txid, namespace.Request{Method: namespace.MethodMkdir, Path: path})
	}
	whole := append(rec(1, "/x"), rec(2, "/y")...)
	for _, tc := range []struct {
		name string
		log  []byte
		want string
	}{
		{"whole", whole, "[/x /y]"},
		{"torn", append(append([]byte(nil), whole...), rec(3, "/z")[:7]...), "[/x /y]"},
		{"gap", append(append([]byte(nil), whole...), rec(5, "/z")...), "[/x /y]"},
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff, 1}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := sim.New(sim.DefaultConfig(1))
			var got []string
			w.Spawn("nn", model.ProcessConfig{}, func(p model.Process) {
				f, _ := p.Disk().Open("edits", model.ReadWrite|model.Create, model.FDFile)
				f.WriteAt(tc.log, 0)
				f.Close()
				ns, err := namespace.New(p, namespace.Config{EditLog: "edits"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ns.Replay(); err != nil {
					t.Fatal(err)
				}
				ns.Walk(func(path string, _, _ bool, _ []namespace.Location) { got = append(got, path) })
				ns.Close()
			})
			if err := w.Run(time.Second); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("replayed %v, want %v", got, tc.want)
			}
		})
	}
}
