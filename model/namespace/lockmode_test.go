package namespace_test

import (
	"fmt"
	"testing"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// sim runs a critical section in one callback, so a change made under the
// lock held shared races with nothing; modeLock flags one.
type modeProc struct {
	model.Process
	lk *modeLock
}

func (p *modeProc) NewRWLock(name string) model.RWLock {
	p.lk = &modeLock{RWLock: p.Process.NewRWLock(name)}
	return p.lk
}

type modeLock struct {
	model.RWLock
	ns              *namespace.Namespace
	shared, changed int
}

func tree(ns *namespace.Namespace) (s string) {
	ns.Walk(func(p string, d, c bool, b []namespace.Location) { s += fmt.Sprintln(p, d, c, b) })
	return s
}

func (l *modeLock) RDo(loop model.Loop, f func()) {
	l.RWLock.RDo(loop, func() {
		l.shared++
		before := tree(l.ns)
		if f(); tree(l.ns) != before {
			l.changed++
		}
	})
}

func TestChangesHoldTheLockExclusively(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var mp *modeProc
	ok := 0
	w.Spawn("namenode", model.ProcessConfig{}, func(p model.Process) {
		mp = &modeProc{Process: p}
		ns, err := namespace.New(mp, namespace.Config{Lock: namespace.RWLock})
		if err != nil {
			w.Fail(err)
			return
		}
		mp.lk.ns = ns
		for _, r := range []namespace.Request{{Method: namespace.MethodMkdir, Path: "/a/b"},
			{Method: namespace.MethodCreate, Path: "/a/f", Blocks: 1}, {Method: namespace.MethodList, Path: "/a"},
			{Method: namespace.MethodRename, Path: "/a/b", Dst: "/c"}, {Method: namespace.MethodDelete, Path: "/a/f"},
			{Method: namespace.MethodList, Path: "/"}} {
			ns.Serve(p.MainLoop(), r.Method, namespace.EncodeRequest(r), func(st rpc.Status, _ []byte) {
				if st == rpc.StatusOK {
					ok++
				}
			})
		}
	})
	if err := w.Run(w.Now() + 1e9); err != nil {
		t.Fatal(err)
	}
	if ok != 6 || mp.lk.shared != 2 || mp.lk.changed != 0 {
		t.Errorf("%d of 6 calls OK; %d sections held the lock shared (want the 2 lists), %d changed the tree (want 0)", ok, mp.lk.shared, mp.lk.changed)
	}
}
