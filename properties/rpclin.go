package properties

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"

	"xceiver/model/namespace"
)

// The namespace model, for porcupine: a flat table from path to node, written
// from HDFS's rules independently of model/namespace's tree. Every
// namespace call is an op; a call whose answer never came (a connection
// error) has output Unknown and return time +∞: it may have applied or not.

// NSInput is a namespace call.
type NSInput struct {
	Req namespace.Request
	// Limit is the namenode's ListLimit (0: namespace.ListLimit).
	Limit int
	// image, if set, makes the op the tree a restarted namenode
	// replayed: it fits only a state equal to it.
	image *nsState
	// end makes the op the synthetic last one (withEnd).
	end bool
}

// NSOutput is its answer.
type NSOutput struct {
	Unknown bool
	Code    namespace.Code
	Resp    namespace.Response
}

type nsNode struct {
	dir      bool
	complete bool
	blocks   []namespace.Location // id, stamp, length
}

// nsEntry is a node under its path.
type nsEntry struct {
	path string
	node nsNode
}

// nsState is immutable once built: steps copy it. Its nodes are a slice
// sorted by path rather than a map: porcupine steps through every call
// many times while it searches, and each change copies the state, which
// for a slice is one allocation and a copy, where cloning a map rehashed
// every key (a third of an rpc seed's linearizability check). Sorted, a
// directory's subtree is one run of the slice, so listing and deleting
// it need no sort of the keys either.
type nsState struct {
	nodes []nsEntry // by path; "" is the root
	fixed *nsFixed  // a subtree kept apart and shared (nil: none)
	next  uint64    // next block id
	sum   uint64    // of nodeHash over nodes and fixed's, kept by put and del
	// ended: the synthetic end op is placed; unknown calls after it
	// change nothing (withEnd).
	ended bool
}

// nsFixed is a subtree that no call of a case's workload can reach (the
// harness's /big: the workload's names never make that path), kept once
// and shared by every state that holds it. Porcupine copies a state for
// every change it tries, and /big's two hundred entries were most of what
// it copied (half an rpc seed's CPU, with the namenode paused). A call
// that does reach it moves the subtree back into nodes first
// (materialize), so the model's answers never depend on the split.
type nsFixed struct {
	root  string    // its root's path; the root's own node stays in nodes
	nodes []nsEntry // the entries strictly below root, by path
}

// holds reports whether path is strictly below f's root.
func (f *nsFixed) holds(path string) bool {
	return f != nil && within(path, f.root)
}

// reaches reports whether a change to the subtree at p (removing it,
// moving it) changes f's entries: p is f's root, below it or above it.
func (f *nsFixed) reaches(p string) bool {
	return f != nil && (p == f.root || f.holds(p) || p == "" || strings.HasPrefix(f.root, p+"/"))
}

// materialize moves the fixed subtree's entries into nodes.
func (s *nsState) materialize() {
	if s.fixed == nil {
		return
	}
	s.nodes = s.all()
	s.fixed = nil
}

// all is every entry of s, by path.
func (s nsState) all() []nsEntry {
	if s.fixed == nil {
		return s.nodes
	}
	out := make([]nsEntry, 0, len(s.nodes)+len(s.fixed.nodes))
	i, j := 0, 0
	for i < len(s.nodes) || j < len(s.fixed.nodes) {
		if j == len(s.fixed.nodes) || i < len(s.nodes) && s.nodes[i].path < s.fixed.nodes[j].path {
			out = append(out, s.nodes[i])
			i++
		} else {
			out = append(out, s.fixed.nodes[j])
			j++
		}
	}
	return out
}

// withFixed is s with the entries below f's root kept in f, if they are
// exactly f's (a restarted namenode's /big is built again the same);
// otherwise s as it is.
func (s nsState) withFixed(f *nsFixed) nsState {
	if s.fixed != nil || f == nil {
		return s
	}
	from, to := s.under(f.root)
	if to-from != len(f.nodes) {
		return s
	}
	for i, e := range s.nodes[from:to] {
		if g := f.nodes[i]; e.path != g.path || !sameNode(e.node, g.node) {
			return s
		}
	}
	nodes := slices.Concat(s.nodes[:from], s.nodes[to:])
	return nsState{nodes: nodes, fixed: f, next: s.next, sum: s.sum}
}

// splitFixed keeps everything below root in an nsFixed of its own.
func (s nsState) splitFixed(root string) nsState {
	from, to := s.under(root)
	return s.withFixed(&nsFixed{root: root, nodes: slices.Clone(s.nodes[from:to])})
}

func sameNode(a, b nsNode) bool {
	return a.dir == b.dir && a.complete == b.complete && slices.EqualFunc(a.blocks, b.blocks, sameLocation)
}

func newNSState(next uint64) nsState {
	s := nsState{next: next}
	s.put("", nsNode{dir: true})
	return s
}

func (s nsState) clone() nsState {
	// Room for a few new paths: most changes add one or two.
	nodes := make([]nsEntry, len(s.nodes), len(s.nodes)+4)
	copy(nodes, s.nodes)
	return nsState{nodes: nodes, fixed: s.fixed, next: s.next, sum: s.sum, ended: s.ended}
}

// find is where path is, or would be inserted, in s.nodes.
func (s nsState) find(path string) (int, bool) { return findIn(s.nodes, path) }

// findIn is where path is, or would be inserted, in nodes (by path).
func findIn(nodes []nsEntry, path string) (int, bool) {
	return slices.BinarySearchFunc(nodes, path, func(e nsEntry, p string) int { return strings.Compare(e.path, p) })
}

func (s nsState) get(path string) (nsNode, bool) {
	nodes := s.nodes
	if s.fixed.holds(path) {
		nodes = s.fixed.nodes
	}
	if i, ok := findIn(nodes, path); ok {
		return nodes[i].node, true
	}
	return nsNode{}, false
}

func (s *nsState) put(k string, n nsNode) {
	if s.fixed.holds(k) {
		s.materialize()
	}
	i, ok := s.find(k)
	if ok {
		s.sum -= nodeHash(k, s.nodes[i].node)
		s.nodes[i].node = n
	} else {
		s.nodes = slices.Insert(s.nodes, i, nsEntry{k, n})
	}
	s.sum += nodeHash(k, n)
}

func (s *nsState) del(k string) {
	if s.fixed.holds(k) {
		s.materialize()
	}
	if i, ok := s.find(k); ok {
		s.sum -= nodeHash(k, s.nodes[i].node)
		s.nodes = slices.Delete(s.nodes, i, i+1)
	}
}

// under is the run of s.nodes strictly below directory p: the paths that
// begin with p+"/" (not counting the fixed subtree's).
func (s nsState) under(p string) (from, to int) { return underIn(s.nodes, p) }

// underIn is the run of nodes (by path) strictly below directory p.
func underIn(nodes []nsEntry, p string) (from, to int) {
	prefix := p + "/"
	from, _ = findIn(nodes, prefix)
	to = from
	for to < len(nodes) && strings.HasPrefix(nodes[to].path, prefix) {
		to++
	}
	return from, to
}

// nsDiff says the first way the tree got differs from want, which
// !want.equal(got) says it does.
func nsDiff(want, got nsState) string {
	wn, gn := want.all(), got.all()
	i, j := 0, 0
	for i < len(wn) || j < len(gn) {
		switch {
		case j == len(gn) || i < len(wn) && wn[i].path < gn[j].path:
			return fmt.Sprintf("%s is missing", nsShow(wn[i]))
		case i == len(wn) || gn[j].path < wn[i].path:
			return fmt.Sprintf("%s is extra", nsShow(gn[j]))
		}
		a, b := wn[i], gn[j]
		if !sameNode(a.node, b.node) {
			return fmt.Sprintf("%s is %s instead", nsShow(a), nsShow(b))
		}
		i, j = i+1, j+1
	}
	return fmt.Sprintf("the next block id is %d instead of %d", got.next, want.next)
}

func nsShow(e nsEntry) string {
	switch {
	case e.path == "":
		return "/"
	case e.node.dir:
		return e.path + " (a directory)"
	case !e.node.complete:
		return fmt.Sprintf("%s (open, %d blocks)", e.path, len(e.node.blocks))
	}
	return fmt.Sprintf("%s (%d blocks)", e.path, len(e.node.blocks))
}

func (s nsState) equal(o nsState) bool {
	if s.next != o.next || s.sum != o.sum || s.ended != o.ended {
		return false
	}
	sn, on := s.nodes, o.nodes
	if s.fixed != o.fixed {
		sn, on = s.all(), o.all()
	}
	if len(sn) != len(on) {
		return false
	}
	for i := range sn {
		if a, b := &sn[i], &on[i]; a.path != b.path || !sameNode(a.node, b.node) {
			return false
		}
	}
	return true
}

// hash sums a hash of each node, so it needs no order of the nodes
// (sorting a map's keys was a third of an rpc seed's CPU: porcupine
// hashes every state it caches), and keeps the sum as nodes change
// (hashing every node for every state was a fifth). It only buckets
// states: equal decides.
func (s nsState) hash() uint64 {
	h := mix(0, s.next) + s.sum
	if s.ended {
		h = mix(h, 1)
	}
	return h
}

func nodeHash(k string, n nsNode) uint64 {
	e := mixString(0, k)
	if n.dir {
		e = mix(e, 1)
	}
	if n.complete {
		e = mix(e, 2)
	}
	for _, b := range n.blocks {
		e = mix(mix(mix(e, b.Block), b.Stamp), uint64(b.Length))
	}
	return mix(e, uint64(len(n.blocks)))
}

func join(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	return "/" + strings.Join(parts, "/")
}

// lookup follows HDFS: a missing component is ENOENT, a file met before
// the end ENOTDIR.
func (s nsState) lookup(parts []string) (nsNode, string, namespace.Code) {
	for i := range parts {
		if n, ok := s.get(join(parts[:i])); !ok {
			return nsNode{}, "", namespace.ENOENT
		} else if !n.dir {
			return nsNode{}, "", namespace.ENOTDIR
		}
	}
	p := join(parts)
	n, ok := s.get(p)
	if !ok {
		return nsNode{}, "", namespace.ENOENT
	}
	return n, p, namespace.OK
}

// mkdirs makes parts and every missing parent; a file on the way is
// ENOTDIR, or EEXIST when it is parts itself.
func (s *nsState) mkdirs(parts []string) namespace.Code {
	for i := 1; i <= len(parts); i++ {
		p := join(parts[:i])
		n, ok := s.get(p)
		if !ok {
			s.put(p, nsNode{dir: true})
			continue
		}
		if !n.dir {
			if i == len(parts) {
				return namespace.EEXIST
			}
			return namespace.ENOTDIR
		}
	}
	return namespace.OK
}

// children are the names directly under directory p, in path order.
func (s nsState) children(p string) []nsEntry {
	nodes := s.nodes
	if s.fixed != nil && (p == s.fixed.root || s.fixed.holds(p)) {
		// Below the fixed root every entry is the subtree's.
		nodes = s.fixed.nodes
	}
	from, to := underIn(nodes, p)
	var out []nsEntry
	for _, e := range nodes[from:to] {
		if name := e.path[len(p)+1:]; !strings.Contains(name, "/") {
			out = append(out, nsEntry{name, e.node})
		}
	}
	return out
}

// removeTree deletes p and everything below it.
func (s *nsState) removeTree(p string) {
	if s.fixed.reaches(p) {
		s.materialize()
	}
	from, to := s.under(p)
	for _, e := range s.nodes[from:to] {
		s.sum -= nodeHash(e.path, e.node)
	}
	s.nodes = slices.Delete(s.nodes, from, to)
	s.del(p)
}

func length(n nsNode) int64 {
	var l int64
	for _, b := range n.blocks {
		l += b.Length
	}
	return l
}

// apply runs one request on a copy of s.
func (s nsState) apply(r namespace.Request, datanode string) (nsState, namespace.Response, namespace.Code) {
	return s.applyLimit(r, datanode, 0)
}

// applyLimit: apply with list pages of limit entries (0: ListLimit).
func (s nsState) applyLimit(r namespace.Request, datanode string, limit int) (nsState, namespace.Response, namespace.Code) {
	if limit <= 0 {
		limit = namespace.ListLimit
	}
	var resp namespace.Response
	parts, ok := namespace.SplitPath(r.Path)
	if !ok {
		return s, resp, namespace.EINVAL
	}
	t := s
	if r.Method != namespace.MethodList && r.Method != namespace.MethodGetBlockLocations {
		t = s.clone() // (reads change nothing: no copy)
	}
	switch r.Method {
	case namespace.MethodMkdir:
		if c := t.mkdirs(parts); c != namespace.OK {
			return s, resp, c
		}
		return t, resp, namespace.OK
	case namespace.MethodCreate:
		if len(parts) == 0 {
			return s, resp, namespace.EEXIST
		}
		if c := t.mkdirs(parts[:len(parts)-1]); c != namespace.OK {
			return s, resp, namespace.ENOTDIR
		}
		p := join(parts)
		if _, ok := t.get(p); ok {
			return s, resp, namespace.EEXIST
		}
		var n nsNode
		for i := 0; i < r.Blocks; i++ {
			n.blocks = append(n.blocks, namespace.Location{Block: t.next})
			resp.Blocks = append(resp.Blocks, t.next)
			t.next++
		}
		t.put(p, n)
		return t, resp, namespace.OK
	case namespace.MethodComplete:
		n, p, c := t.lookup(parts)
		switch {
		case c != namespace.OK:
			return s, resp, c
		case n.dir:
			return s, resp, namespace.EISDIR
		case n.complete || len(r.Done) != len(n.blocks):
			return s, resp, namespace.EINVAL
		}
		blocks := slices.Clone(n.blocks)
		for i, l := range r.Done {
			if l.Block != blocks[i].Block || l.Length < 0 {
				return s, resp, namespace.EINVAL
			}
			blocks[i].Stamp, blocks[i].Length = l.Stamp, l.Length
		}
		t.put(p, nsNode{complete: true, blocks: blocks})
		return t, resp, namespace.OK
	case namespace.MethodList:
		n, p, c := t.lookup(parts)
		if c != namespace.OK {
			return s, resp, c
		}
		if !n.dir {
			resp.Entries = []namespace.Entry{{Name: parts[len(parts)-1], Length: length(n)}}
			return s, resp, namespace.OK
		}
		children := t.children(p)
		from := 0
		if r.After != "" {
			from = sort.Search(len(children), func(i int) bool { return children[i].path > r.After })
		}
		to := min(len(children), from+limit)
		for _, ch := range children[from:to] {
			resp.Entries = append(resp.Entries, namespace.Entry{Name: ch.path, Dir: ch.node.dir, Length: length(ch.node)})
		}
		resp.Remaining = len(children) - to
		return s, resp, namespace.OK
	case namespace.MethodGetBlockLocations:
		n, _, c := t.lookup(parts)
		switch {
		case c != namespace.OK:
			return s, resp, c
		case n.dir:
			return s, resp, namespace.EISDIR
		case !n.complete:
			return s, resp, namespace.EINCOMPLETE
		}
		resp.Locations = make([]namespace.Location, len(n.blocks))
		for i, b := range n.blocks {
			b.Datanode = datanode
			resp.Locations[i] = b
		}
		return s, resp, namespace.OK
	case namespace.MethodDelete:
		if len(parts) == 0 {
			return s, resp, namespace.EINVAL
		}
		parent, _, c := t.lookup(parts[:len(parts)-1])
		switch {
		case c != namespace.OK:
			return s, resp, c
		case !parent.dir:
			return s, resp, namespace.ENOTDIR
		}
		p := join(parts)
		if _, ok := t.get(p); !ok {
			return s, resp, namespace.ENOENT
		}
		t.removeTree(p)
		return t, resp, namespace.OK
	case namespace.MethodRename:
		dst, ok := namespace.SplitPath(r.Dst)
		if !ok || len(parts) == 0 || len(dst) == 0 {
			return s, resp, namespace.EINVAL
		}
		if len(dst) >= len(parts) && slices.Equal(dst[:len(parts)], parts) {
			return s, resp, namespace.EINVAL
		}
		sp, _, c := t.lookup(parts[:len(parts)-1])
		switch {
		case c != namespace.OK:
			return s, resp, c
		case !sp.dir:
			return s, resp, namespace.ENOTDIR
		}
		src := join(parts)
		if _, ok := t.get(src); !ok {
			return s, resp, namespace.ENOENT
		}
		dp, _, c := t.lookup(dst[:len(dst)-1])
		switch {
		case c != namespace.OK:
			return s, resp, c
		case !dp.dir:
			return s, resp, namespace.ENOTDIR
		}
		to := join(dst)
		if _, ok := t.get(to); ok {
			return s, resp, namespace.EEXIST
		}
		// The subtree moves as a whole: taken out, then put back under
		// its new path (dst is not inside src, so none collide).
		if t.fixed.reaches(src) {
			t.materialize()
		}
		from, end := t.under(src)
		moved := slices.Clone(t.nodes[from:end])
		root, _ := t.get(src)
		t.removeTree(src)
		t.put(to, root)
		for _, e := range moved {
			t.put(to+e.path[len(src):], e.node)
		}
		return t, resp, namespace.OK
	}
	return s, resp, namespace.EINVAL
}

// NSModel is the porcupine model of the namespace; datanode is the address
// locations name, first the first block id. A call of unknown outcome may
// take effect anywhere after its call, or never. (CheckNSHistory checks
// with an equivalent model that searches less: nsModelFrom.)
func NSModel(datanode string, first uint64) porcupine.Model {
	return nsPlainModelFrom(datanode, newNSState(first))
}

// snapshotNS is ns's tree as a model state.
func snapshotNS(ns *namespace.Namespace) nsState {
	s := newNSState(ns.NextBlock())
	ns.Walk(func(path string, dir, complete bool, blocks []namespace.Location) {
		n := nsNode{dir: dir, complete: complete}
		for _, b := range blocks {
			n.blocks = append(n.blocks, namespace.Location{Block: b.Block, Stamp: b.Stamp, Length: b.Length})
		}
		s.put(path, n)
	})
	return s
}

// nsModelFrom is the model starting from init, for histories withEnd:
// it places each call of unknown outcome only where the call changes the
// tree, or after the synthetic end op, where it changes nothing.
//
// Porcupine memoizes on (the calls linearized, state), so an unknown call
// placed where it changes nothing (a mkdir of a directory there, a create
// of a file there, a delete of nothing) gives a new entry with the same
// state, and each such call doubled the entries: rpc seed 90155042, 108
// calls with 13 of unknown outcome (timed out in a namenode pause), some
// 2,000 distinct states, 9 million steps in 20 s without an answer (50 s
// and 2.8 GB alone, 60 s and no answer with both cores busy). Such a
// placement is the same as placing the call last, after every call with
// a known answer, where nothing sees it: the states every other call
// meets are the same, and a call never answered need precede nothing. So
// any linearization can be rewritten into one this model accepts, and
// each it accepts is one of the plain model (nsPlainModelFrom), which
// applies an unknown call wherever it goes: the verdict is the same
// (TestNSCanonicalUnknownsKeepVerdict), and the seed's history is decided
// in 4 s.
func nsModelFrom(datanode string, init nsState) porcupine.Model {
	return nsModel(datanode, init, true)
}

// nsPlainModelFrom is nsModelFrom without the rule: an unknown call may
// apply anywhere, and end changes nothing.
func nsPlainModelFrom(datanode string, init nsState) porcupine.Model {
	return nsModel(datanode, init, false)
}

func nsModel(datanode string, init nsState, canonical bool) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, output any) (bool, any) {
			s := state.(nsState)
			in, out := input.(NSInput), output.(NSOutput)
			switch {
			case in.image != nil:
				return s.equal(*in.image), s
			case in.end && !canonical:
				return true, s
			case in.end:
				if s.ended {
					return false, s
				}
				s.ended = true
				return true, s
			case out.Unknown && s.ended:
				return true, s
			}
			t, resp, code := s.applyLimit(in.Req, datanode, in.Limit)
			if out.Unknown {
				return !canonical || !t.equal(s), t
			}
			if code != out.Code {
				return false, s
			}
			if code != namespace.OK {
				return true, t
			}
			return sameResponse(resp, out.Resp), t
		},
		Equal: func(a, b any) bool { return a.(nsState).equal(b.(nsState)) },
		Hash:  func(s any) uint64 { return s.(nsState).hash() },
		DescribeOperation: func(input, output any) string {
			in, out := input.(NSInput), output.(NSOutput)
			if in.end {
				return "end (every unknown call after it changes nothing)"
			}
			if in.image != nil {
				return fmt.Sprintf("namenode restarted: replayed %d nodes, next block %d", len(in.image.all()), in.image.next)
			}
			r := in.Req
			d := namespace.MethodName(r.Method) + " " + r.Path
			if r.Dst != "" {
				d += " → " + r.Dst
			}
			switch {
			case out.Unknown:
				return d + ": unknown"
			case out.Code != namespace.OK:
				return d + ": " + out.Code.String()
			}
			return fmt.Sprintf("%s: ok %v", d, out.Resp)
		},
	}
}

// sameResponse compares answers without their tokens (signed with an
// expiry the model does not know; the datanode checks them).
func sameResponse(a, b namespace.Response) bool {
	return slices.Equal(a.Blocks, b.Blocks) && slices.Equal(a.Entries, b.Entries) && a.Remaining == b.Remaining &&
		slices.EqualFunc(a.Locations, b.Locations, sameLocation)
}

func sameLocation(x, y namespace.Location) bool {
	return x.Block == y.Block && x.Stamp == y.Stamp && x.Length == y.Length && x.Datanode == y.Datanode
}

// CheckNSHistory checks a namespace history, giving up once its searches
// have spent budget (DefaultLinBudget's units); Unknown (the checker gave
// up) is a failure, never a pass.
func CheckNSHistory(h []porcupine.Operation, datanode string, first uint64, budget int64) *Failure {
	return checkNS(nsModelFrom(datanode, newNSState(first)), h, newLinBudget(budget), PropLinearizable, "")
}

// checkNS checks h, withEnd, against m (nsModelFrom's), spending budget.
// The calls with a known answer are tried alone first
// (fitsWithoutUnknowns), then a linearization is built (witnessNS) and
// checked (validLinearization), and only then does porcupine search.
func checkNS(m porcupine.Model, h []porcupine.Operation, budget *linBudget, prop, what string) *Failure {
	n := len(h)
	calls := n
	if prop == PropDurable {
		calls-- // the replayed tree is no call
	}
	// The shortcuts are for calls of unknown outcome; most histories have
	// none, and then nothing to try.
	if slices.ContainsFunc(h, func(op porcupine.Operation) bool { return op.Output.(NSOutput).Unknown }) {
		h = neverAnswered(h)
		if fitsWithoutUnknowns(m, h, knownSteps, budget) {
			return nil
		}
		if order := witnessNS(m, h, witnessSteps); order != nil && validLinearization(m, h, order) == nil {
			return nil
		}
	}
	search := budget.meter(&m, math.MaxInt64)
	switch {
	case porcupine.CheckOperations(m, withEnd(h)):
		return nil
	case search.cut:
		// Named for the check that gave up: a durability check's was
		// called linearizability, and --ignore durability missed it.
		return &Failure{prop, fmt.Sprintf("unknown: %sthe checker gave up after %d steps and state comparisons on %d namespace calls (not a pass)", what, budget.total, calls)}
	case prop == PropDurable:
		return &Failure{prop, fmt.Sprintf("%sthe tree the restarted namenode replayed is not what any order of the %d changes called before its crash gives, with every change answered OK applied", what, calls)}
	}
	return &Failure{prop, fmt.Sprintf("%sthe namespace history of %d calls fits no order of the namespace model", what, n)}
}

// neverAnswered is h with each call of unknown outcome returning at +∞:
// it has no answer (the harness records it so; the shortcuts rely on it).
func neverAnswered(h []porcupine.Operation) []porcupine.Operation {
	h = slices.Clone(h)
	for i := range h {
		if h[i].Output.(NSOutput).Unknown {
			h[i].Return = math.MaxInt64
		}
	}
	return h
}

// knownSteps bounds fitsWithoutUnknowns' search. Undecided within it
// (or Illegal), the whole history is searched.
const knownSteps = 200_000

// fitsWithoutUnknowns reports whether the calls of h with a known answer,
// alone, fit an order of m, found within steps steps (spending budget).
// If they do, so does h:
// its unknown calls go last, where nothing sees them, and a call never
// answered need precede nothing. Porcupine's search tries each call as
// soon as it meets it, so it places unknown calls early, in every subset
// and order that changes the tree, before it tries none: rpc seed 184
// with the responder-blocks-handler bug, 39 calls, 25 of them unknown
// (the responder blocked, so its calls timed out) and the 14 others fit
// with none applied, gave up after 60 s.
func fitsWithoutUnknowns(m porcupine.Model, h []porcupine.Operation, steps int64, budget *linBudget) bool {
	known := make([]porcupine.Operation, 0, len(h))
	for _, op := range h {
		if !op.Output.(NSOutput).Unknown {
			known = append(known, op)
		}
	}
	if len(known) == len(h) {
		return false // the same search
	}
	budget.meter(&m, steps)
	return porcupine.CheckOperations(m, known)
}

// witnessNS looks for one linearization of h under m (nsModelFrom's),
// of the kind a search among unknown calls loses itself before finding:
// the calls with an answer in the order of their answers, each unknown
// call placed only just before an answered call that needs it (one whose
// answer the tree does not give without it), and called no later than
// that call's answer. It tries no unknown call first, then each in turn
// and chains of up to witnessChain, with a memo of (answered calls
// placed, unknown calls placed, state) by hash and at most budget steps
// (check: witnessSteps, as the block model's witness). It returns the
// order it built, as indices into h, or nil. What it builds is a
// linearization: the order of answers is one real time allows, and an
// unknown call made before an answer can take effect just before the call
// that gave it; checkNS still checks it by itself (validLinearization)
// before it counts. What it does not find may still exist, and the search
// decides. Rpc seed 74 with the responder-blocks-handler bug: 66 calls,
// 28 of them unknown, and the later answers show that some took effect
// (a file created, a directory gone); porcupine gave up after 60 s.
//
// An answered call may also be placed early, among those before an
// answered call it overlaps: with the edit log a change is answered only
// once it is synced, but a read sees it as soon as it is made, so a read
// can return first having seen it. Rpc seed 709234695: a list of /c
// answered 61 µs before the create of /c/a it saw, which its answers'
// order could never place first; 27 of 102 calls unknown (timed out on
// connections whose clients had stopped reading, slow and stall faults),
// and porcupine gave up after 5 million steps
// (it decides at 5.4 million, in 23 s).
func witnessNS(m porcupine.Model, h []porcupine.Operation, budget int64) (order []int) {
	var known, unknown []int
	for i, op := range h {
		if op.Output.(NSOutput).Unknown {
			unknown = append(unknown, i)
		} else {
			known = append(known, i)
		}
	}
	if len(unknown) == 0 {
		return nil // nothing to place: the search is as quick
	}
	slices.SortStableFunc(known, func(a, b int) int {
		return cmp.Or(cmp.Compare(h[a].Return, h[b].Return), cmp.Compare(h[a].Call, h[b].Call))
	})
	// Placing answered calls early multiplies what a search that fails
	// tries (rpc seed 1478 with the responder-blocks-handler bug needed
	// 1 million steps for what it built in 200,000 without), so it is a
	// second search, with a budget of its own, where the first fails.
	for _, early := range []bool{false, true} {
		w := nsWitness{m: m, h: h, known: known, unknown: unknown, used: make([]uint64, (len(unknown)+len(known)+63)/64),
			seen: map[[3]uint64]bool{}, budget: budget, early: early}
		if w.place(0, witnessChain, m.Init()) {
			return w.order
		}
	}
	return nil
}

type nsWitness struct {
	m              porcupine.Model
	h              []porcupine.Operation
	known, unknown []int // indices into h
	// used has a bit for each unknown call placed, then one for each
	// answered call placed ahead of its answer's turn (known's order).
	used          []uint64
	seen          map[[3]uint64]bool
	steps, budget int64
	early         bool  // answered changes may be placed early
	order         []int // the calls placed, in order
}

func (w *nsWitness) step(state any, i int) (bool, any) {
	w.steps++
	return w.m.Step(state, w.h[i].Input, w.h[i].Output)
}

func (w *nsWitness) isUsed(b int) bool { return w.used[b/64]&(1<<(b%64)) != 0 }
func (w *nsWitness) setUsed(b int)     { w.used[b/64] |= 1 << (b % 64) }
func (w *nsWitness) clearUsed(b int)   { w.used[b/64] &^= 1 << (b % 64) }

// witnessChain is how many calls, unknown or answered early, witnessNS
// places before one answered call at most.
const witnessChain = 3

// place places known[i:] from state, with at most chain more calls
// before known[i] (unknown ones, or answered ones from later in known),
// and before each later one as it needs.
func (w *nsWitness) place(i, chain int, state any) bool {
	for i < len(w.known) && w.isUsed(len(w.unknown)+i) {
		i++ // placed early
	}
	if i == len(w.known) {
		return true
	}
	if w.steps > w.budget {
		return false
	}
	key := [3]uint64{uint64(i), w.m.Hash(state), uint64(chain)}
	for _, b := range w.used {
		key[2] = mix(key[2], b)
	}
	if w.seen[key] {
		return false // (a collision only loses a witness: the search decides)
	}
	w.seen[key] = true
	k := w.known[i]
	mark := len(w.order)
	if ok, next := w.step(state, k); ok {
		w.order = append(w.order, k)
		if w.place(i+1, witnessChain, next) {
			return true
		}
		w.order = w.order[:mark]
	}
	if chain == 0 {
		return false
	}
	for j, u := range w.unknown {
		if w.isUsed(j) || w.h[u].Call > w.h[k].Return || !touchSame(w.h[u], w.h[k]) {
			continue
		}
		if w.placeBefore(i, chain, state, j, u, mark) {
			return true
		}
	}
	// A change answered OK later in known (so no earlier than k) that was
	// made by k's answer: real time lets it go first, and everything
	// placed after it was answered no earlier than k. (Only changes
	// answered OK wait for a sync; reads and failed changes do not.)
	for j := i + 1; w.early && j < len(w.known); j++ {
		a := w.known[j]
		if w.isUsed(len(w.unknown)+j) || w.h[a].Call > w.h[k].Return || !syncedChange(w.h[a]) || !touchSame(w.h[a], w.h[k]) {
			continue
		}
		if w.placeBefore(i, chain, state, len(w.unknown)+j, a, mark) {
			return true
		}
	}
	return false
}

// syncedChange reports whether op is a change answered OK: one the
// namenode answers only once its edit is synced.
func syncedChange(op porcupine.Operation) bool {
	switch op.Input.(NSInput).Req.Method {
	case namespace.MethodList, namespace.MethodGetBlockLocations:
		return false
	}
	out := op.Output.(NSOutput)
	return !out.Unknown && out.Code == namespace.OK
}

// placeBefore places call c (its bit b in used) from state, then
// known[i:] with chain-1 more calls before known[i]; if that fails, it
// takes c and what followed back out of the order, to mark.
func (w *nsWitness) placeBefore(i, chain int, state any, b, c, mark int) bool {
	ok, next := w.step(state, c) // (an unknown call is refused where it changes nothing)
	if !ok {
		return false
	}
	w.setUsed(b)
	w.order = append(w.order, c)
	found := w.place(i, chain-1, next)
	w.clearUsed(b)
	if !found {
		w.order = w.order[:mark]
	}
	return found
}

// validLinearization checks order (indices into h), as witnessNS built
// it, against h and m by itself, so that a pass never rests on the
// witness's search alone: every answered call of h placed once and every
// unknown one at most once (the rest go last, where the model takes them
// as changing nothing); no call placed before one that returned before it
// was made (at equal times a call comes before a return, as in
// porcupine); every step taken by m from its initial state. Its error
// says what is wrong.
func validLinearization(m porcupine.Model, h []porcupine.Operation, order []int) error {
	placed := make([]bool, len(h))
	for p, i := range order {
		if i < 0 || i >= len(h) || placed[i] {
			return fmt.Errorf("place %d: call %d is not in the history, or placed twice", p, i)
		}
		placed[i] = true
	}
	for i, op := range h {
		if !op.Output.(NSOutput).Unknown && (!placed[i] || op.Return < op.Call) {
			return fmt.Errorf("answered call %d not placed, or answered before it was made", i)
		}
	}
	for p, i := range order {
		for _, j := range order[p+1:] {
			if h[j].Return < h[i].Call {
				return fmt.Errorf("place %d: call %d was made after call %d, placed later, had returned", p, i, j)
			}
		}
	}
	state := m.Init()
	for p, i := range order {
		ok, next := m.Step(state, h[i].Input, h[i].Output)
		if !ok {
			return fmt.Errorf("place %d: the model refuses %s", p, m.DescribeOperation(h[i].Input, h[i].Output))
		}
		state = next
	}
	return nil
}

// touchSame reports whether u's call can change what k sees, so that it
// is worth placing before k: a path of u's (its path, or a rename's
// destination) is one of k's, or above or below one (a parent made or
// removed, the path itself, what is below it); or both create files,
// whose block ids come from one counter (rpc seed 1478 with the
// responder-blocks-handler bug: a create answered ids two past those the
// answered creates had taken, so two unknown creates of other paths took
// effect first).
func touchSame(u, k porcupine.Operation) bool {
	ur, kr := u.Input.(NSInput).Req, k.Input.(NSInput)
	if kr.image != nil {
		return true // a replayed tree sees every path
	}
	if ur.Method == namespace.MethodCreate && kr.Req.Method == namespace.MethodCreate && ur.Blocks > 0 && kr.Req.Blocks > 0 {
		return true // (a create of no blocks neither moves the counter nor shows it)
	}
	for _, a := range []string{ur.Path, ur.Dst} {
		for _, b := range []string{kr.Req.Path, kr.Req.Dst} {
			if a != "" && b != "" && (a == b || within(a, b) || within(b, a)) {
				return true
			}
		}
	}
	return false
}

// within reports whether path a is strictly below b (the root is above
// every path).
func within(a, b string) bool {
	return b == "/" || len(a) > len(b) && a[len(b)] == '/' && strings.HasPrefix(a, b)
}

// withEnd is h with a synthetic last op (nsModelFrom), called after every
// call and every answer of h, so that every call with a known answer is
// placed before it.
func withEnd(h []porcupine.Operation) []porcupine.Operation {
	last := int64(0)
	for _, op := range h {
		last = max(last, op.Call)
		if op.Return != math.MaxInt64 {
			last = max(last, op.Return)
		}
	}
	return append(slices.Clip(h), porcupine.Operation{ClientId: 1 << 21, Input: NSInput{end: true}, Call: last + 1, Output: NSOutput{}, Return: last + 2})
}
