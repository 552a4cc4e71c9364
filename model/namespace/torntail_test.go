package namespace_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// Replay stops at a torn record and the next edits are written over it.
// The log was never cut there: whatever of the torn record lay past the
// new edits stayed, and the replay after the next crash read on into it.
// A client's path can hold an encoded edit, so the torn tail of its own
// mkdir replayed, one crash later, as a delete nobody made. Replay now
// zeroes what follows the last whole record, with the catalogued bug
// ReplaySyncOnly too (it skips rewriting what was replayed, a bug of its
// own).
func TestTornTailDoesNotReplayAsAnEdit(t *testing.T) {
	for _, syncOnly := range []bool{false, true} {
		tornTailReplay(t, syncOnly)
	}
}

func tornTailReplay(t *testing.T, syncOnly bool) {
	rec := namespace.EditRecord
	// The edit hidden in the mkdir's path: txid 3, delete /x.
	forged := rec(3, namespace.Request{Method: namespace.MethodDelete, Path: "/x"})
	hostile := "/a" + string(forged) + "bc" // a legal path: components "a\x00…\x02" and "xbc"
	if _, ok := namespace.SplitPath(hostile); !ok {
		t.Fatal("the hostile path is not legal")
	}
	old := rec(2, namespace.Request{Method: namespace.MethodMkdir, Path: hostile})
	// Incarnation 0 logged mkdir /x (synced) and the hostile mkdir, whose
	// write a crash tore: its last byte never reached the disk.
	log0 := append(rec(1, namespace.Request{Method: namespace.MethodMkdir, Path: "/x"}), old[:len(old)-1]...)

	w := sim.New(sim.DefaultConfig(1))
	var np *sim.Process
	starts := 0
	var trees [][]string
	sp, _ := w.Spawn("namenode", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		starts++
		if starts == 1 {
			f, _ := p.Disk().Open("edits", model.ReadWrite|model.Create, model.FDFile)
			f.WriteAt(log0, 0)
			f.Sync()
			f.Close()
		}
		nn, err := namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: namespace.Config{EditLog: "edits", Bugs: namespace.Bugs{ReplaySyncOnly: syncOnly}},
			RPC:       rpc.ServerConfig{Addr: nnAddr, Readers: 1, Handlers: 2},
		})
		if err != nil {
			w.Fail(err)
			return
		}
		var tree []string
		nn.NS.Walk(func(path string, _, _ bool, _ []namespace.Location) { tree = append(tree, fmt.Sprintf("%q", path)) })
		trees = append(trees, tree)
		if starts > 1 {
			return
		}
		// Incarnation 1: one short change, answered OK, then a crash.
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			rc, _ := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{CallTimeout: time.Second})
			c := &namespace.Client{RPC: rc, Addr: nnAddr}
			c.Do(namespace.Request{Method: namespace.MethodMkdir, Path: "/y"}, func(_ namespace.Response, err error) {
				if err != nil {
					t.Errorf("mkdir /y: %v", err)
				}
				rc.Close()
				np.Crash()
				np.Restart()
			})
		})
	})
	np = sp.(*sim.Process)
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(trees) != 2 {
		t.Fatalf("namenode started %d times", len(trees))
	}
	t.Logf("after the torn write: %v; after the next crash: %v", trees[0], trees[1])
	want := fmt.Sprint(append(append([]string(nil), trees[0]...), `"/y"`))
	if got := fmt.Sprint(trees[1]); got != want {
		t.Errorf("ReplaySyncOnly %v: replayed %s, want %s: the stale tail was replayed as an edit", syncOnly, got, want)
	}
}
