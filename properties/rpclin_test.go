package properties

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"
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

// The namespace model places a call of unknown outcome only where it
// changes the tree, or after the synthetic end op (nsModelFrom); the plain
// model applies it wherever it goes. Both give every history the same
// verdict, a history whose calls with a known answer fit alone
// (fitsWithoutUnknowns) fits with them all, and so does one witnessNS
// builds a linearization of: histories drawn as some order of calls really ran, unknown
// calls applied late or never, and one answer in three made up (so some
// fit no order).
func TestNSCanonicalUnknownsKeepVerdict(t *testing.T) {
	var legal, illegal, images, unknowns, short, witnessed int
	for range 30 {
		rapid.Check(t, nsVerdictsAgree(&legal, &illegal, &images, &unknowns, &short, &witnessed))
	}
	t.Logf("%d legal, %d illegal histories (%d with a replayed tree), %d unknown calls; %d fit without their unknown calls, witnessNS built %d of the others", legal, illegal, images, unknowns, short, witnessed)
	if legal < 300 || illegal < 300 || images < 600 || unknowns < 1500 {
		t.Errorf("%d legal and %d illegal histories, %d with a replayed tree, %d unknown calls: too few of one to compare the models", legal, illegal, images, unknowns)
	}
	if short > legal-150 {
		t.Errorf("%d of %d legal histories fit without their unknown calls: too few need them to compare the models", short, legal)
	}
	if witnessed < 80 {
		t.Errorf("witnessNS built only %d linearizations: too few to trust the ones it builds", witnessed)
	}
}

func nsVerdictsAgree(legal, illegal, images, unknowns, short, witnessed *int) func(*rapid.T) {
	return func(t *rapid.T) {
		h := drawNSHistory(t)
		for _, op := range h {
			if op.Output.(NSOutput).Unknown {
				*unknowns++
			}
			if op.Input.(NSInput).image != nil {
				*images++
			}
		}
		init := newNSState(1)
		want := porcupine.CheckOperations(nsPlainModelFrom("dn", init), h)
		if plain := porcupine.CheckOperations(nsPlainModelFrom("dn", init), withEnd(h)); plain != want {
			t.Fatalf("the end op changed the plain model's verdict: %v, without it %v", plain, want)
		}
		if fitsWithoutUnknowns(nsModelFrom("dn", init), h, knownSteps, newLinBudget(DefaultLinBudget)) {
			if !want {
				t.Fatalf("the calls with a known answer fit alone, but the history fits no order")
			}
			*short++
		} else if order := witnessNS(nsModelFrom("dn", init), h, witnessSteps); order != nil {
			if err := validLinearization(nsModelFrom("dn", init), h, order); err != nil {
				t.Fatalf("witnessNS built an order that is no linearization: %v", err)
			}
			if !want {
				t.Fatalf("witnessNS built a linearization of a history that fits no order")
			}
			*witnessed++
		}
		if got := porcupine.CheckOperations(nsModelFrom("dn", init), withEnd(h)); got != want {
			m := nsModelFrom("dn", init)
			for _, op := range h {
				t.Logf("[%d, %d] %s", op.Call, op.Return, m.DescribeOperation(op.Input, op.Output))
			}
			t.Fatalf("verdict %v, the plain model's %v", got, want)
		}
		if want {
			*legal++
		} else {
			*illegal++
		}
	}
}

// drawNSHistory draws calls on a few paths, runs them on the model in the
// order of the moments they take effect (each within its call and answer;
// an unknown call late, or never), and records what each answered; then
// makes up one answer, in a third of the histories. In a third, the
// history ends with a replayed tree (a durability check's image op): the
// tree at a moment drawn, or, one time in three, at another.
func drawNSHistory(t *rapid.T) []porcupine.Operation {
	paths := []string{"/a", "/a/b", "/b", "/a/c", "/b/a"}
	type pending struct {
		at  int64 // when it takes effect (never: math.MaxInt64)
		op  porcupine.Operation
		req namespace.Request
	}
	var ps []pending
	for i := range rapid.IntRange(1, 8).Draw(t, "calls") {
		call := int64(rapid.IntRange(0, 20).Draw(t, "call"))
		ret := call + int64(rapid.IntRange(0, 6).Draw(t, "dur"))
		at := call + int64(rapid.IntRange(0, int(ret-call)).Draw(t, "at"))
		req := namespace.Request{
			Method: uint8(rapid.IntRange(int(namespace.MethodMkdir), int(namespace.MethodRename)).Draw(t, "method")),
			Path:   rapid.SampledFrom(paths).Draw(t, "path"),
			Blocks: rapid.IntRange(0, 2).Draw(t, "blocks"),
		}
		if req.Method == namespace.MethodRename {
			req.Dst = rapid.SampledFrom(paths).Draw(t, "dst")
		}
		op := porcupine.Operation{ClientId: i + 1, Call: call, Return: ret}
		read := req.Method == namespace.MethodList || req.Method == namespace.MethodGetBlockLocations
		if !read && rapid.IntRange(0, 2).Draw(t, "unknown") == 0 {
			op.Output, op.Return = NSOutput{Unknown: true}, math.MaxInt64
			at = math.MaxInt64
			if !rapid.Bool().Draw(t, "never") {
				at = call + int64(rapid.IntRange(0, 30).Draw(t, "late"))
			}
		}
		ps = append(ps, pending{at, op, req})
	}
	slices.SortStableFunc(ps, func(a, b pending) int { return cmp.Compare(a.at, b.at) })
	s := newNSState(1)
	h := make([]porcupine.Operation, 0, len(ps)+1)
	crash, lie := int64(-1), int64(-1)
	if rapid.IntRange(0, 2).Draw(t, "image") == 0 {
		crash = int64(rapid.IntRange(0, 40).Draw(t, "crash"))
		if rapid.IntRange(0, 2).Draw(t, "wrongImage") == 0 {
			lie = int64(rapid.IntRange(-1, 40).Draw(t, "imageAt"))
		}
	}
	var image *nsState
	imageAt := func(at int64) {
		want := crash
		if lie != -1 {
			want = lie
		}
		if image == nil && crash >= 0 && at > want {
			img := s
			image = &img
		}
	}
	for _, p := range ps {
		imageAt(p.at)
		if p.req.Method == namespace.MethodComplete {
			// Completing what is there, as a client that created it.
			if n, ok := s.get(p.req.Path); ok {
				for _, b := range n.blocks {
					p.req.Done = append(p.req.Done, namespace.Location{Block: b.Block, Stamp: 1, Length: int64(rapid.IntRange(0, 9).Draw(t, "length"))})
				}
			}
		}
		p.op.Input = NSInput{Req: p.req}
		next, resp, code := s.apply(p.req, "dn")
		switch {
		case p.op.Return == math.MaxInt64:
			if p.at != math.MaxInt64 {
				s = next
			}
		case code == namespace.OK:
			p.op.Output = NSOutput{Resp: resp}
			s = next
		default:
			p.op.Output = NSOutput{Code: code}
		}
		h = append(h, p.op)
	}
	imageAt(math.MaxInt64)
	if image != nil {
		h = append(h, porcupine.Operation{ClientId: 1 << 20, Input: NSInput{image: image}, Call: crash, Output: NSOutput{}, Return: crash})
	}
	if rapid.IntRange(0, 2).Draw(t, "lie") == 0 {
		i := rapid.IntRange(0, len(h)-1).Draw(t, "liar")
		if out := h[i].Output.(NSOutput); !out.Unknown && h[i].Input.(NSInput).image == nil {
			codes := []namespace.Code{namespace.OK, namespace.ENOENT, namespace.EEXIST, namespace.ENOTDIR}
			out.Code = rapid.SampledFrom(codes).Draw(t, "lieCode")
			out.Resp = namespace.Response{}
			h[i].Output = out
		}
	}
	return h
}

// Histories whose later answers show that some unknown calls took
// effect: their answered calls do not fit alone, and a search gets lost
// among the unknown calls' subsets, but witnessNS builds a linearization
// at once. Rpc seed 90155042: 108 calls, 13 unknown (timed out while the
// namenode was paused); the plain model decided it in 15.3 million steps
// (45 s here), the model in 2.3 million (3.6 s). With the
// responder-blocks-handler bug, porcupine gave up after 60 s on seed 74
// (66 calls, 28 unknown) and seed 1478 (76 calls, 22 unknown, two of
// them creates of other paths than the create whose block ids show they
// took effect; 80 calls and 21 unknown since readers refill the queue a
// call a connection in turn, its answered calls still fitting no order
// alone; seed 90155042 likewise 110 calls, 12 unknown; and since the
// namenode caps a connection's calls in flight, drawn 4 for this seed,
// 108 calls, 13 unknown, its answered calls still fitting no order
// alone; seed 1478 81 calls, 21 unknown, since the slow client asks for
// 200 or 300 answers, not 300 or 500, likewise). Rpc seed 709234695 (edit log, clients that stopped reading): 102 calls, 27
// unknown, and a list answered before the create whose file it saw,
// which the order of the answers cannot place (witnessNS places it
// early); porcupine gave up after 5 million steps.
func TestNSWitnessPlacesNeededUnknowns(t *testing.T) {
	for _, c := range []struct {
		seed           uint64
		bug            string
		calls, unknown int
	}{{90155042, "", 108, 13}, {74, "responder-blocks-handler", 66, 28}, {1478, "responder-blocks-handler", 81, 21}, {709234695, "", 102, 27}} {
		init, hist := rpcSeedHistory(t, c.seed, c.bug, c.calls)
		unknown := 0
		for _, op := range hist {
			if op.Output.(NSOutput).Unknown {
				unknown++
			}
		}
		m := nsModelFrom(rpcDN, init)
		switch {
		case unknown != c.unknown:
			t.Fatalf("seed %d: %d calls of unknown outcome, want %d", c.seed, unknown, c.unknown)
		case fitsWithoutUnknowns(m, hist, knownSteps, newLinBudget(DefaultLinBudget)):
			t.Fatalf("seed %d: the calls with an answer fit alone: the history no longer shows what the witness is for", c.seed)
		}
		order := witnessNS(m, hist, witnessSteps)
		if order == nil {
			t.Fatalf("seed %d: witnessNS built no linearization within %d steps", c.seed, witnessSteps)
		}
		if err := validLinearization(m, hist, order); err != nil {
			t.Fatalf("seed %d: witnessNS built an order that is no linearization: %v", c.seed, err)
		}
	}
	const budget = 500_000
	init, hist := rpcSeedHistory(t, 74, "responder-blocks-handler", 66)
	if res, n := stepsToDecide(nsModelFrom(rpcDN, init), withEnd(hist), budget); n <= budget {
		t.Fatalf("seed 74: the search decided the history (%v) in %d steps: it no longer shows what the witness is for", res, n)
	}
}

// Unknown calls that change nothing where they are placed (mkdirs of a
// directory that exists) multiply the plain model's search by two each:
// on a history that fits no order, it tries every subset of them before
// every call; the model places them after the end and is done in a few
// hundred steps.
func TestNSNoOpUnknownsCostNothing(t *testing.T) {
	const noops, calls = 10, 20
	h := []porcupine.Operation{{ClientId: 1, Input: NSInput{Req: namespace.Request{Method: namespace.MethodMkdir, Path: "/a"}}, Call: 0, Output: NSOutput{}, Return: 1}}
	for i := range noops {
		h = append(h, porcupine.Operation{ClientId: 2 + i, Input: NSInput{Req: namespace.Request{Method: namespace.MethodMkdir, Path: "/a"}}, Call: 2, Output: NSOutput{Unknown: true}, Return: math.MaxInt64})
	}
	for i := range calls {
		at := int64(10 + 2*i)
		h = append(h, porcupine.Operation{ClientId: 100, Input: NSInput{Req: namespace.Request{Method: namespace.MethodList, Path: "/a"}}, Call: at, Output: NSOutput{}, Return: at + 1})
	}
	// The last answer is a lie: /a is a directory, not missing.
	h[len(h)-1].Output = NSOutput{Code: namespace.ENOENT}
	res, n := stepsToDecide(nsModelFrom("dn", newNSState(1)), withEnd(h), 1_000_000)
	if res != porcupine.Illegal || n > 1000 {
		t.Fatalf("the model: %v after %d steps, want Illegal within 1,000", res, n)
	}
	plain, pn := stepsToDecide(nsPlainModelFrom("dn", newNSState(1)), withEnd(h), 1_000_000)
	if plain != porcupine.Illegal || pn < 1<<noops {
		t.Fatalf("the plain model: %v after %d steps, fewer than the %d subsets of the no-op calls", plain, pn, 1<<noops)
	}
	t.Logf("%d steps; the plain model %d", n, pn)
}

// stepsToDecide checks h against m, stepping at most budget times (then
// every step is refused, and an Illegal is no verdict), and returns the
// verdict with the steps taken.
func stepsToDecide(m porcupine.Model, h []porcupine.Operation, budget int64) (porcupine.CheckResult, int64) {
	search := newLinBudget(math.MaxInt64).meter(&m, budget)
	if porcupine.CheckOperations(m, h) {
		return porcupine.Ok, search.steps
	}
	return porcupine.Illegal, search.steps
}

// Rpc seed 184 with the responder-blocks-handler bug: 39 calls, 25 of
// unknown outcome (the responder blocked, so calls timed out); the 14
// with an answer fit alone, so the history fits with the unknown calls
// last. Searched whole, it is still undecided after a million steps:
// porcupine places the unknown calls early, in every subset that changes
// the tree, before it tries none.
func TestNSKnownCallsTriedAloneFirst(t *testing.T) {
	init, hist := rpcSeedHistory(t, 184, "responder-blocks-handler", 39)
	m := nsModelFrom(rpcDN, init)
	if !fitsWithoutUnknowns(m, hist, knownSteps, newLinBudget(DefaultLinBudget)) {
		t.Fatalf("the calls with a known answer do not fit alone")
	}
	const budget = 1_000_000
	if res, n := stepsToDecide(m, withEnd(hist), budget); n <= budget {
		t.Fatalf("the whole history was decided (%v) in %d steps: it no longer shows what trying the known calls first is for", res, n)
	}
}

// Past its budget, fitsWithoutUnknowns' search refuses every step, so an
// answer it has not found is never a fit: a history whose answered calls
// fit no order is refused at any budget, and one that fits is found only
// within enough steps.
func TestNSKnownCallsBudget(t *testing.T) {
	mkdir := func(at int64, code namespace.Code) porcupine.Operation {
		return porcupine.Operation{ClientId: int(at) + 1, Input: NSInput{Req: namespace.Request{Method: namespace.MethodMkdir, Path: "/a"}}, Call: at, Output: NSOutput{Code: code}, Return: at + 1}
	}
	unknown := porcupine.Operation{ClientId: 99, Input: NSInput{Req: namespace.Request{Method: namespace.MethodDelete, Path: "/a"}}, Call: 0, Output: NSOutput{Unknown: true}, Return: math.MaxInt64}
	m := nsModelFrom("dn", newNSState(1))
	fits := []porcupine.Operation{mkdir(0, namespace.OK), mkdir(2, namespace.OK), mkdir(4, namespace.OK), unknown}
	lies := []porcupine.Operation{mkdir(0, namespace.OK), mkdir(2, namespace.EEXIST), mkdir(4, namespace.OK), unknown}
	for _, budget := range []int64{0, 1, 2, knownSteps} {
		if fitsWithoutUnknowns(m, lies, budget, newLinBudget(DefaultLinBudget)) {
			t.Errorf("budget %d: a history whose answered calls fit no order fits", budget)
		}
	}
	if fitsWithoutUnknowns(m, fits, 1, newLinBudget(DefaultLinBudget)) {
		t.Errorf("one step found an order of three calls")
	}
	if !fitsWithoutUnknowns(m, fits, knownSteps, newLinBudget(DefaultLinBudget)) {
		t.Errorf("three mkdirs of a directory there, answered OK, do not fit")
	}
	if fitsWithoutUnknowns(m, fits, knownSteps, newLinBudget(0)) {
		t.Errorf("a run's spent budget found an order of three calls")
	}
}

// A call of unknown outcome is one whose answer never came: checkNS takes
// it as returning at +∞ whatever return time it carries, as the harness
// records it. (With the time it carried, the model's two shortcuts,
// which move such calls last, would not hold: here the second history
// came out illegal.)
func TestNSUnknownCallsNeverReturn(t *testing.T) {
	call := func(client int, m uint8, path string, from, to int64, out NSOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: NSInput{Req: namespace.Request{Method: m, Path: path}}, Call: from, Output: out, Return: to}
	}
	unknown := NSOutput{Unknown: true}
	for i, h := range [][]porcupine.Operation{
		{call(1, namespace.MethodCreate, "/x", 0, 1, unknown), call(2, namespace.MethodList, "/", 2, 3, NSOutput{})},
		{call(1, namespace.MethodMkdir, "/a", 0, 1, NSOutput{}), call(2, namespace.MethodMkdir, "/a", 2, 3, unknown),
			call(3, namespace.MethodMkdir, "/b", 0, math.MaxInt64, unknown), call(4, namespace.MethodGetBlockLocations, "/b", 4, 5, NSOutput{Code: namespace.EISDIR})},
	} {
		if f := CheckNSHistory(h, "dn", 1, DefaultLinBudget); f != nil {
			t.Errorf("history %d: %v", i, f)
		}
	}
}

// rpcSeedHistory runs rpc seed seed (with bug), as runRPC does but
// without its hash or the check of its history, and returns the tree its namenode started
// from and the history of calls to it, which must be its only
// incarnation's and hold calls calls (else the seed no longer makes the
// history a test is about).
func rpcSeedHistory(t *testing.T, seed uint64, bug string, calls int) (nsState, []porcupine.Operation) {
	t.Helper()
	c, err := DrawRPC(SeedSource(seed), seed, bug)
	if err != nil {
		t.Fatal(err)
	}
	// (Drawn after these histories were found, a stuck pipeliner holds
	// responder-blocks-handler's handlers for good, and a quitter's calls
	// take turns in the queue: not the history.)
	c.Faults = slices.DeleteFunc(c.Faults, func(f RPCFault) bool { return f.Kind == RPCFaultStuck || f.Kind == RPCFaultQuitBurst })
	// The server these histories were found on served the calls a
	// vanished client left queued: skipped, seed 74's has one more call
	// answered, and porcupine decides it in 289,464 steps.
	c.Config.ServesDeadCalls = true
	h := newRPCHarness(c, hashOnly)
	release := useArena(h.w)
	h.run()
	release()
	epochs, _ := h.epochHistory()
	if len(epochs) != 1 || len(epochs[0]) != calls {
		t.Fatalf("seed %d made %d namenode incarnations, %d calls to the first, want one with %d: not the history the test is about", seed, len(epochs), len(epochs[0]), calls)
	}
	return *h.images[0], epochs[0]
}

// witnessNS at its bounds (cases from a review): an unknown call made at
// the very moment an answered call returned may take effect before it,
// one made a tick later may not; a short call inside a long one sees
// nothing made after it returned; an unknown call takes effect at most
// once; an answered call with no duration is still a moment. witnessNS
// may pass only what the plain model passes, and what it builds must be
// a linearization (validLinearization), which must also refuse orders
// that are not.
func TestNSWitnessBoundaries(t *testing.T) {
	create := func(path string) namespace.Request {
		return namespace.Request{Method: namespace.MethodCreate, Path: path, Blocks: 1}
	}
	op := func(client int, call, ret int64, r namespace.Request, out NSOutput) porcupine.Operation {
		if out.Unknown {
			ret = math.MaxInt64
		}
		return porcupine.Operation{ClientId: client, Input: NSInput{Req: r}, Call: call, Output: out, Return: ret}
	}
	ids := func(b ...uint64) NSOutput { return NSOutput{Resp: namespace.Response{Blocks: b}} }
	unknown := NSOutput{Unknown: true}
	for _, c := range []struct {
		name  string
		legal bool
		h     []porcupine.Operation
	}{
		{"made as the answer came", true, []porcupine.Operation{op(1, 0, 5, create("/k"), ids(2)), op(2, 5, 0, create("/u"), unknown)}},
		{"made a tick after the answer", false, []porcupine.Operation{op(1, 0, 5, create("/k"), ids(2)), op(2, 6, 0, create("/u"), unknown)}},
		{"a short call inside a long one", false, []porcupine.Operation{op(1, 0, 10, create("/k"), ids(2)), op(2, 1, 2, create("/k2"), ids(3)), op(3, 5, 0, create("/u"), unknown)}},
		{"once only", false, []porcupine.Operation{op(1, 0, 9, create("/d/k"), ids(3)), op(2, 0, 0, create("/d/u"), unknown),
			op(3, 0, 0, namespace.Request{Method: namespace.MethodDelete, Path: "/d"}, unknown)}},
		{"made at a moment's call", true, []porcupine.Operation{op(1, 3, 3, create("/k"), ids(2)), op(2, 3, 0, create("/u"), unknown)}},
		// As a read sees a change before the sync its answer waits for.
		{"answered after a call that saw it", true, []porcupine.Operation{op(1, 0, 10, create("/k"), ids(1)),
			op(2, 1, 5, create("/k"), NSOutput{Code: namespace.EEXIST}), op(3, 0, 0, create("/u"), unknown)}},
		{"made after the answer of a call that saw it", false, []porcupine.Operation{op(1, 6, 10, create("/k"), ids(1)),
			op(2, 1, 5, create("/k"), NSOutput{Code: namespace.EEXIST}), op(3, 0, 0, create("/u"), unknown)}},
	} {
		init := newNSState(1)
		if plain := porcupine.CheckOperations(nsPlainModelFrom("dn", init), c.h); plain != c.legal {
			t.Fatalf("%s: the plain model says %v, want %v", c.name, plain, c.legal)
		}
		m := nsModelFrom("dn", init)
		order := witnessNS(m, c.h, witnessSteps)
		switch {
		case order != nil && !c.legal:
			t.Errorf("%s: witnessNS passed a history that fits no order (%v)", c.name, order)
		case order == nil && c.legal:
			t.Errorf("%s: witnessNS built no linearization", c.name)
		case order != nil:
			if err := validLinearization(m, c.h, order); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	}
	// validLinearization refuses orders that are not linearizations.
	h := []porcupine.Operation{op(1, 0, 5, create("/k"), ids(2)), op(2, 6, 0, create("/u"), unknown), op(3, 0, 1, create("/j"), ids(1))}
	m := nsModelFrom("dn", newNSState(1))
	if err := validLinearization(m, h, []int{2, 0}); err != nil {
		t.Errorf("validLinearization refused a linearization: %v", err)
	}
	// Made after an answer, placed before it; one answered call left
	// out; one placed twice; the answer of /k before /j took id 1; a
	// call not in the history.
	for _, bad := range [][]int{{2, 1, 0}, {2}, {2, 0, 0}, {0, 2}, {2, 0, 3}} {
		if validLinearization(m, h, bad) == nil {
			t.Errorf("validLinearization passed %v", bad)
		}
	}
}

// The model pages a listing as the namespace does (namespace's
// TestBigDirectoryListsInPages): ListLimit entries after After, in name
// order, and how many remain.
func TestNSModelPagesListings(t *testing.T) {
	s := newNSState(1)
	s.put("/d", nsNode{dir: true})
	var names []string
	for i := range 2500 {
		name := fmt.Sprintf("%05d", 2*i)
		names = append(names, name)
		s.put("/d/"+name, nsNode{complete: true})
	}
	s.put("/d/00002/below", nsNode{complete: true}) // not an entry of /d
	for _, c := range []struct {
		after               string
		from, to, remaining int
	}{{"", 0, 1000, 1500}, {names[999], 1000, 2000, 500}, {"01999", 1000, 2000, 500}, {"02999", 1500, 2500, 0}, {names[2499], 2500, 2500, 0}} {
		_, resp, code := s.apply(namespace.Request{Method: namespace.MethodList, Path: "/d", After: c.after}, "dn")
		var got []string
		for _, e := range resp.Entries {
			got = append(got, e.Name)
		}
		if code != namespace.OK || !slices.Equal(got, names[c.from:c.to]) || resp.Remaining != c.remaining {
			t.Errorf("list /d after %q: %v, %d entries, %d remaining; want entries %d to %d, %d remaining", c.after, code, len(got), resp.Remaining, c.from, c.to, c.remaining)
		}
	}
}
