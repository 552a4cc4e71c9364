package properties

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"xceiver/model/namespace"
)

// The namespace model's hash is a running sum kept by put and del; after
// any sequence of calls it is what summing every node afresh gives, and
// reads leave the state they were given as it was.
func TestNSStateHashIsRunningSum(t *testing.T) {
	full := func(s nsState) uint64 {
		h := mix(0, s.next)
		for _, e := range s.nodes {
			h += nodeHash(e.path, e.node)
		}
		return h
	}
	paths := []string{"/a", "/a/b", "/a/b/c", "/d", "/d/e", "/a/f", "/g"}
	r := rand.New(rand.NewPCG(1, 2))
	for run := range 50 {
		s := newNSState(1)
		for i := range 60 {
			req := namespace.Request{Method: uint8(1 + r.IntN(int(namespace.MethodRename))), Path: paths[r.IntN(len(paths))], Dst: paths[r.IntN(len(paths))], Blocks: r.IntN(3)}
			if req.Method == namespace.MethodComplete {
				if n, ok := s.get(req.Path); ok {
					for _, b := range n.blocks {
						req.Done = append(req.Done, namespace.Location{Block: b.Block, Stamp: uint64(1 + r.IntN(3)), Length: int64(r.IntN(100))})
					}
				}
			}
			before := full(s)
			next, _, _ := s.apply(req, "dn")
			if got := full(s); got != before {
				t.Fatalf("run %d call %d (%s %s): the state it started from changed", run, i, namespace.MethodName(req.Method), req.Path)
			}
			if got, want := next.hash(), full(next); got != want {
				t.Fatalf("run %d call %d (%s %s → %s): hash %#x, summing every node gives %#x", run, i, namespace.MethodName(req.Method), req.Path, req.Dst, got, want)
			}
			s = next
		}
	}
}

// A state that keeps a subtree apart (nsFixed) answers every call as the
// same state with the subtree in its nodes does, and stays equal to it,
// including the calls that reach into the subtree (which the harness's
// workload never makes) and move it back (materialize). The fixed state's
// hash stays the plain one's.
func TestNSFixedSameAsPlain(t *testing.T) {
	paths := []string{"/a", "/a/b", "/big", "/big/x", "/big/y", "/big/x/z", "/c", "/bi", "/big0"}
	rapid.Check(t, func(rt *rapid.T) {
		plain := newNSState(1)
		plain.put("/big", nsNode{dir: true})
		for _, p := range []string{"/big/f1", "/big/f2", "/big/x"} {
			plain.put(p, nsNode{complete: p != "/big/x", dir: p == "/big/x"})
		}
		fixed := plain.clone().splitFixed("/big")
		if fixed.fixed == nil || len(fixed.fixed.nodes) != 3 {
			rt.Fatalf("splitFixed kept %v apart", fixed.fixed)
		}
		for i := range rapid.IntRange(1, 40).Draw(rt, "calls") {
			req := namespace.Request{
				Method: uint8(rapid.IntRange(1, int(namespace.MethodRename)).Draw(rt, "method")),
				Path:   rapid.SampledFrom(paths).Draw(rt, "path"),
				Dst:    rapid.SampledFrom(paths).Draw(rt, "dst"),
				Blocks: rapid.IntRange(0, 2).Draw(rt, "blocks"),
			}
			if req.Method == namespace.MethodComplete {
				if n, ok := plain.get(req.Path); ok {
					for _, b := range n.blocks {
						req.Done = append(req.Done, namespace.Location{Block: b.Block, Stamp: 1, Length: 10})
					}
				}
			}
			p2, pr, pc := plain.apply(req, "dn")
			f2, fr, fc := fixed.apply(req, "dn")
			what := fmt.Sprintf("call %d (%s %s → %s)", i, namespace.MethodName(req.Method), req.Path, req.Dst)
			if pc != fc || !sameResponse(pr, fr) || !slices.Equal(pr.Entries, fr.Entries) {
				rt.Fatalf("%s: plain %v %+v, fixed %v %+v", what, pc, pr, fc, fr)
			}
			if !p2.equal(f2) || !f2.equal(p2) || p2.hash() != f2.hash() {
				rt.Fatalf("%s: the states differ: %s", what, nsDiff(p2, f2))
			}
			plain, fixed = p2, f2
		}
	})
}
