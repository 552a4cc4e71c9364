package properties

import (
	"math/rand/v2"
	"testing"

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
