package properties

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"slices"
	"time"
	"unsafe"

	"github.com/anishathalye/porcupine"

	"xceiver/model"
)

// The block-store model, for porcupine. A history is partitioned by block;
// each partition starts with a synthetic "init" op that sets the block's
// state as written before the run (porcupine's Init knows no partition).
//
// State per block: whether it exists, its generation stamp and its bytes,
// and the highest stamp it ever had (a new stamp must exceed it: a stamp
// never names two contents of a block). Ops: read (offset, length,
// optionally the least stamp wanted), write, append, replace, delete.
// Outputs: ok (with stamp, length and data read), rejected (with the
// datanode's status), or unknown — a mutation whose effect is unknown after
// a fault, which gets return time +∞ and may apply or not: placed last it
// has no effect.
//
// Unknown outcomes make porcupine's search blow up unless the model keeps
// it to one linearization per way the block can change. Porcupine memoizes
// on (the set of ops linearized, state), so an unknown op placed where it
// changes nothing, or whose effect a later unknown op wipes before any op
// with a known outcome sees it, gives a new entry with the same state:
// each such op doubled the entries (check seed 92263: 16 unknown ops on one
// block, some 750 distinct states, over 2 million steps in 5 s without an
// answer). Both placements are equivalent to placing the op at the end,
// after every op with a known outcome, where nothing observes it, so the
// model refuses them and keeps only that one: each block's history ends
// with a synthetic "end" op (kEnd, added by partition), called after every
// other op's call and return; after it, an unknown op is accepted and
// changes nothing. Before it, an unknown op must change the state, and a
// reset (write, replace, delete) that would leave the same state had the
// unknown ops since the last known op not been applied is refused (see
// step). Any linearization of the history can be rewritten into one that
// obeys both rules by moving such ops to the end, and every linearization
// the rules allow is one of the history: the verdict is the same
// (TestCanonicalUnknownsKeepVerdict compares it with the unrestricted
// model).

type opKind uint8

const (
	kInit opKind = iota
	kRead
	kWrite
	kAppend
	kReplace
	kDelete
	kEnd // synthetic: after every op with a known outcome
)

var kindNames = [...]string{"init", "read", "write", "append", "replace", "delete", "end"}

// LinInput is an op's input.
type LinInput struct {
	Kind  opKind
	Block uint64
	Stamp uint64 // read: least stamp wanted (0 any); init: the stamp
	Off   int64
	Len   int64
	Data  string // write, append, replace; init: the contents
	// init: whether the block exists at the start
	Exists bool
}

type outcome uint8

const (
	outOK outcome = iota
	outRejected
	outUnknown
)

// LinOutput is an op's output.
type LinOutput struct {
	Outcome outcome
	Status  model.Status // rejected: why
	Stamp   uint64
	Length  int64
	Data    string // read
}

// blockState is the model's state of one block. The zero value is "not
// yet initialised": only init may step from it.
type blockState struct {
	set    bool
	exists bool
	known  bool   // the stamp is known (else it is above floor, unseen)
	stamp  uint64 // when known
	floor  uint64 // highest stamp the block is known to have had
	data   content
	// ended: past the end op; the rest of the state is dropped (nothing
	// observes it), so every such state is equal and memoizes.
	ended bool
	// dirty: unknown ops have changed the state since the last op with a
	// known outcome (or init), which left the block as base* say (the
	// window's start; baseData shares the string, no copy).
	dirty      bool
	baseExists bool
	baseKnown  bool
	baseStamp  uint64
	baseFloor  uint64
	baseData   content
}

// equal reports whether a and b are the same state, field by field (a
// field added to blockState belongs here too): their contents compared
// by bytes, not by how they were pieced together.
func (a blockState) equal(b blockState) bool {
	return a.set == b.set && a.exists == b.exists && a.known == b.known && a.stamp == b.stamp && a.floor == b.floor &&
		a.ended == b.ended && a.dirty == b.dirty && a.baseExists == b.baseExists && a.baseKnown == b.baseKnown &&
		a.baseStamp == b.baseStamp && a.baseFloor == b.baseFloor && a.data.equal(b.data) && a.baseData.equal(b.baseData)
}

// core is s without the bookkeeping for unknown ops: the block itself.
func (s blockState) core() blockState {
	return blockState{set: s.set, exists: s.exists, known: s.known, stamp: s.stamp, floor: s.floor, data: s.data}
}

// settled is s, reached by an op with a known outcome: a new window for
// unknown ops starts from it.
func settled(s blockState) blockState {
	s = s.core()
	s.baseExists, s.baseKnown, s.baseStamp, s.baseFloor, s.baseData = s.exists, s.known, s.stamp, s.floor, s.data
	return s
}

// start is the block at the start of s's window of unknown ops.
func (s blockState) start() blockState {
	return blockState{set: true, exists: s.baseExists, known: s.baseKnown, stamp: s.baseStamp, floor: s.baseFloor, data: s.baseData}
}

func (s blockState) describe() string {
	if !s.set {
		return "unset"
	}
	if s.ended {
		return "end"
	}
	if !s.exists {
		return fmt.Sprintf("absent (stamps so far ≤ %d)", s.floor)
	}
	st := fmt.Sprint(s.stamp)
	if !s.known {
		st = fmt.Sprintf(">%d", s.floor)
	}
	return fmt.Sprintf("stamp %s, %d bytes %s", st, s.data.len(), digest(s.data.String()))
}

func digest(s string) string {
	return fmt.Sprintf("crc %08x", crc32.ChecksumIEEE([]byte(s)))
}

// hash is cheap rather than thorough: porcupine only uses it to pick a
// cache bucket and confirms every hit with Equal, so it must agree with
// Equal (equal states, equal hashes) but need not separate every pair. The
// flags, stamps, length and at most 32 bytes from each end of the data
// separate the states a history reaches; hashing whole blocks cost more
// than the rest of the check.
func (s blockState) hash() uint64 {
	h := bit(s.set, 0) | bit(s.exists, 1) | bit(s.known, 2) | bit(s.ended, 3) | bit(s.dirty, 4) | bit(s.baseExists, 5)
	h = mix(h, s.stamp)
	h = mix(h, s.floor)
	h = mix(h, uint64(s.data.len()))
	head, tail := s.data.headTail()
	return mixString(mixString(h, head), tail)
}

// bit is b as bit i of a hash.
func bit(b bool, i uint) uint64 {
	if b {
		return 1 << i
	}
	return 0
}

func mixString(h uint64, d string) uint64 {
	for len(d) >= 8 {
		h = mix(h, uint64(d[0])|uint64(d[1])<<8|uint64(d[2])<<16|uint64(d[3])<<24|
			uint64(d[4])<<32|uint64(d[5])<<40|uint64(d[6])<<48|uint64(d[7])<<56)
		d = d[8:]
	}
	for i := 0; i < len(d); i++ {
		h = mix(h, uint64(d[i]))
	}
	return h
}

// mix folds x into h (a multiply-xorshift step, as in splitmix64).
func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>31
}

// newStamp checks a stamp a mutation returned: above every stamp the block
// had.
func (s blockState) newStampOK(st uint64) bool {
	return st > s.floor && (!s.known || !s.exists || st > s.stamp)
}

func step(state, input, output any) (bool, any) {
	s := state.(blockState)
	in := input.(LinInput)
	out := output.(LinOutput)
	if in.Kind == kInit {
		if s.set {
			return false, s
		}
		return true, settled(initState(in))
	}
	if !s.set {
		return false, s
	}
	if s.ended {
		// Only unknown ops remain (the end op's call follows every other
		// op's return): placed here they change nothing anyone sees.
		return out.Outcome == outUnknown && in.Kind != kEnd, s
	}
	if in.Kind == kEnd {
		return true, blockState{set: true, ended: true}
	}
	switch out.Outcome {
	case outUnknown:
		return unknownOK(s, in)
	case outRejected:
		if !rejectedOK(s, in, out.Status) {
			return false, s
		}
		if s.dirty && rejectedOK(s.start(), in, out.Status) {
			// It would have been refused alike at the window's start:
			// the window goes on (see windowOn).
			return true, s
		}
		return true, settled(s)
	}
	ok, n := stepKnown(s, in, out)
	if !ok {
		return false, s
	}
	if s.dirty {
		if ok, m := stepKnown(s.start(), in, out); ok && m.equal(s.start()) {
			return true, windowOn(s, n)
		}
	}
	return true, settled(n)
}

// windowOn is n, the state after an op with a known outcome that would
// also have stepped from s's window start and left it as it was (a read
// seeing the same bytes and stamp, a refusal the start would have earned
// too): the window of unknown ops goes on across it. Dropping the
// window's unknown ops would not change what this op saw, so unknownOK
// may still judge a later unknown op against the window's start, and the
// unknown ops before and after such an op do not multiply the states
// (seed 92263: a read refused for reading past the end, which every short
// block earns, between two runs of unknown ops).
func windowOn(s, n blockState) blockState {
	n.dirty, n.baseExists, n.baseKnown, n.baseStamp, n.baseFloor, n.baseData = true, s.baseExists, s.baseKnown, s.baseStamp, s.baseFloor, s.baseData
	return n
}

// unknownOK steps a mutation with an unknown outcome before the end op:
// it takes effect here, and must change what a later op could see.
func unknownOK(s blockState, in LinInput) (bool, any) {
	n := apply(s.core(), in)
	if n.equal(s.core()) {
		// No effect here: the same as placing it after the end op.
		return false, s
	}
	if s.dirty {
		// Other unknown ops changed the block in this window (since the
		// last op with a known outcome). If this one leaves the block as
		// it was at the window's start, or as it alone would have left
		// it from there, those ops and perhaps this one had no effect
		// anyone saw: the same as placing them after the end op. (Say a
		// replace after appends, a delete after a write, or anything
		// after an append of nothing, which only hid the stamp.)
		w := s.start()
		if n.equal(w) {
			return false, s
		}
		if a := apply(w, in); !a.equal(w) && a.equal(n) {
			return false, s
		}
	}
	return true, windowOn(s, n)
}

// initState is the block as the history's init op gives it. An absent
// block's stamp is not known: only its floor matters (as after a delete),
// so the two states compare equal and memoize as one.
func initState(in LinInput) blockState {
	n := blockState{set: true, exists: in.Exists, known: in.Exists, data: text(in.Data)}
	if in.Exists {
		n.stamp, n.floor = in.Stamp, in.Stamp
	}
	return n
}

// stepKnown steps an op with a known, successful outcome.
func stepKnown(s blockState, in LinInput, out LinOutput) (bool, blockState) {
	s = s.core()
	switch in.Kind {
	case kRead:
		if !s.exists || in.Off+in.Len > int64(s.data.len()) || out.Length != int64(s.data.len()) ||
			int64(len(out.Data)) != in.Len || !s.data.rangeIs(in.Off, out.Data) || out.Stamp < in.Stamp {
			return false, s
		}
		if s.known {
			return out.Stamp == s.stamp, s
		}
		if out.Stamp <= s.floor {
			return false, s
		}
		s.known, s.stamp, s.floor = true, out.Stamp, out.Stamp
		return true, s
	case kWrite:
		if s.exists || !s.newStampOK(out.Stamp) || out.Length != int64(len(in.Data)) {
			return false, s
		}
		return true, blockState{set: true, exists: true, known: true, stamp: out.Stamp, floor: out.Stamp, data: text(in.Data)}
	case kAppend, kReplace:
		if !s.exists || !s.newStampOK(out.Stamp) {
			return false, s
		}
		data := text(in.Data)
		if in.Kind == kAppend {
			data = s.data.plus(in.Data)
		}
		if out.Length != int64(data.len()) {
			return false, s
		}
		return true, blockState{set: true, exists: true, known: true, stamp: out.Stamp, floor: out.Stamp, data: data}
	case kDelete:
		if !s.exists {
			return false, s
		}
		return true, blockState{set: true, floor: max(s.floor, s.stamp)}
	}
	return false, s
}

// apply is a mutation with an unknown outcome taking effect: its stamp is
// unseen.
func apply(s blockState, in LinInput) blockState {
	switch in.Kind {
	case kWrite:
		if !s.exists {
			return blockState{set: true, exists: true, floor: s.floor, data: text(in.Data)}
		}
	case kAppend, kReplace:
		if s.exists {
			data := text(in.Data)
			if in.Kind == kAppend {
				data = s.data.plus(in.Data)
			}
			return blockState{set: true, exists: true, floor: max(s.floor, s.stamp), data: data}
		}
	case kDelete:
		if s.exists {
			return blockState{set: true, floor: max(s.floor, s.stamp)}
		}
	}
	return s
}

// rejectedOK: may the datanode refuse in with status st in state s?
func rejectedOK(s blockState, in LinInput, st model.Status) bool {
	if st == model.StatusErrorAccessToken {
		// Refused before the datanode looked at the block: whatever
		// its state, the op changed nothing (the token property judges
		// whether the refusal was right).
		return true
	}
	switch in.Kind {
	case kRead:
		if st != model.StatusErrorInvalid {
			return false
		}
		switch {
		case !s.exists, in.Off+in.Len > int64(s.data.len()):
			return true
		case s.known:
			return in.Stamp > s.stamp
		default:
			return in.Stamp > s.floor
		}
	case kWrite:
		return st == model.StatusErrorExists && s.exists
	case kAppend, kReplace, kDelete:
		return st == model.StatusErrorInvalid && !s.exists
	}
	return false
}

// CheckHistory checks a history against the model, partitioned by block,
// giving up once its searches have spent budget (DefaultLinBudget's
// units): a checker that gives up reports Unknown, and Unknown is a
// failure ("unknown"), never a pass. verbose keeps what the HTML view
// needs.
//
// Each block's unknown ops are first pinned after the reads that show
// they had not yet taken effect (pinUnknowns; seed 235722). A block whose
// ops do not overlap in time is then decided by stepping the plain model
// through them (sequentialVerdict): no search, so nothing spent. Any
// other block's history is checked against the plain model
// (PlainModel: unknown ops may take effect anywhere), which decides nearly
// every history in a few thousand steps, but only for up to plainSteps
// steps; a block it leaves undecided is checked against Model, which keeps
// one placement of each unknown op. The two models reach the same verdict
// (TestCanonicalUnknownsKeepVerdict), and each is far faster than the
// other on some histories: the plain model on histories where Model's
// refusals keep unknown ops pending, to be tried, and backtracked over,
// at every later point (check seed 6026: 3,413 steps against 687,587 for
// block 1), Model on histories with many unknown ops whose placements
// multiply the states (seed 92263: undecided after 5 s against 382k steps
// for block 2). Past its budget the plain model refuses every step, so
// its search unwinds at once: an Ok it reports then is still a
// linearization, an Illegal is not a verdict. Before Model's search, a
// block the plain model left undecided is offered to witness, which
// builds a linearization where a search would lose itself among unknown
// ops (seed 40420901); what it cannot build, Model searches for.
func CheckHistory(history []porcupine.Operation, budget int64, verbose bool) (porcupine.CheckResult, porcupine.LinearizationInfo, *Failure) {
	ops := 0
	for _, op := range history {
		if op.Input.(LinInput).Kind != kInit {
			ops++
		}
	}
	res := porcupine.Ok
	canonical := false
	var illegal []porcupine.Operation
	left := newLinBudget(budget)
	for _, part := range byBlock(history) {
		r, plain := checkBlock(part, left)
		canonical = canonical || !plain
		if r == porcupine.Illegal {
			res, illegal = r, part
			break
		}
		if r == porcupine.Unknown {
			res = r
		}
	}
	var info porcupine.LinearizationInfo
	if verbose {
		m := PlainModel()
		if canonical {
			m = Model()
		}
		_, info = porcupine.CheckOperationsVerbose(m, history, linInfoTimeout)
	}
	switch res {
	case porcupine.Illegal:
		b := illegal[0].Input.(LinInput).Block
		return res, info, &Failure{PropLinearizable, fmt.Sprintf(
			"the history of block %d (%d of %d ops) fits no order of the block-store model", b, len(illegal)-1, ops)}
	case porcupine.Unknown:
		return res, info, &Failure{PropLinearizable, fmt.Sprintf("unknown: the checker gave up after %d steps and state comparisons on %d ops (not a pass)", budget, ops)}
	}
	return res, info, nil
}

// linInfoTimeout bounds the search for what the HTML view shows of a
// history (porcupine's partial linearizations). Only the view depends on
// it, never a verdict: porcupine searches the blocks at once, each in a
// goroutine of its own, so its work cannot be metered per search.
const linInfoTimeout = 5 * time.Second

// plainSteps bounds the plain model's steps on one block's history before
// Model takes over (seeds 1–10,000 of check need at most some 10,000).
const plainSteps = 100_000

// checkBlock checks one block's history, spending budget; plain: the
// plain model decided it.
func checkBlock(part []porcupine.Operation, budget *linBudget) (res porcupine.CheckResult, plain bool) {
	part = pinUnknowns(part)
	if r, ok := sequentialVerdict(part); ok {
		return r, true
	}
	m := PlainModel()
	m.Partition = nil // part is one block's history already
	search := budget.meter(&m, plainSteps)
	if porcupine.CheckOperations(m, part) {
		return porcupine.Ok, true
	}
	if !search.cut {
		return porcupine.Illegal, true
	}
	// Undecided: past the plain model's steps or the budget (an Illegal
	// then is no verdict).
	if witness(part) {
		return porcupine.Ok, true
	}
	if budget.left <= 0 {
		return porcupine.Unknown, true
	}
	m = Model()
	search = budget.meter(&m, math.MaxInt64)
	switch {
	case porcupine.CheckOperations(m, part):
		return porcupine.Ok, false
	case search.cut:
		return porcupine.Unknown, false
	}
	return porcupine.Illegal, false
}

// linBudget is the work that a run's linearizability searches may do, in
// DefaultLinBudget's units; each search spends from it in turn.
type linBudget struct {
	total int64
	left  int64
}

func newLinBudget(total int64) *linBudget { return &linBudget{total: total, left: total} }

// searchMeter is what one metered search took.
type searchMeter struct {
	steps int64
	// cut: a step was refused for want of budget or of steps, so an
	// Illegal verdict is none.
	cut bool
}

// meter makes m's search spend b, a unit for each step and each
// comparison of two states (porcupine's cache compares a new state with
// those of its bucket, which on some histories is most of the work), and
// take at most steps steps. Past either bound m refuses every step, so
// that porcupine's search unwinds at once: an Ok is still a
// linearization, an Illegal no verdict. For one search of one partition
// at a time: porcupine runs each partition in a goroutine of its own and
// stops waiting for the others once one fails.
func (b *linBudget) meter(m *porcupine.Model, steps int64) *searchMeter {
	s := &searchMeter{}
	step, equal := m.Step, m.Equal
	m.Step = func(state, input, output any) (bool, any) {
		s.steps++
		b.left--
		if s.steps > steps || b.left < 0 {
			s.cut = true
			return false, state
		}
		return step(state, input, output)
	}
	if equal != nil {
		m.Equal = func(x, y any) bool {
			b.left--
			return equal(x, y)
		}
	}
	return s
}

// pinUnknowns returns one block's history with the calls of unknown ops
// moved as late as the reads that see a stamp pin them: the same verdict,
// far fewer placements to try. Check seed 235722: block 4's 23 ops held
// 10 unknown mutations, all called after the append that returned stamp
// 2031, and three reads called after them all saw stamp 2031; porcupine
// tried the unknown ops' subsets and orders (each a new 19 KB state)
// before each read, 686k steps (280k for Model) in 10 s without an
// answer. Pinned, they come after the last read and the plain model
// decides the block in a few dozen steps.
//
// The rule: let P be the one op whose known outcome gave the block stamp
// S (init, or a successful write, append or replace returning S; none
// when two ops claim S), K a successful read returning stamp S, and U an
// unknown op called after P returned. Then in every linearization the
// model accepts U comes after K, so U's call may be moved to K's call:
//
//   - K comes after P. Before P, the block cannot show S to K: once K
//     has seen S the floor is S (a read of an unseen stamp sets it), and
//     P's new stamp must exceed the floor.
//   - From P to K the state stays what P left (exists, stamp S known,
//     floor S, P's data): the floor never falls, so once anything gives
//     the block another stamp, hides it (an unknown op's unseen stamp) or
//     deletes it, no op can show S again, and the only op that changes
//     nothing there is an unknown write (the block exists). So every op
//     placed between P and K changes nothing.
//   - U comes after P (P returned before U was called). If U is placed
//     between P and K it changes nothing, and moving it to just after K
//     changes no state any op sees (the state there is still P's, on
//     which U again changes nothing); U returns at +∞, so no op must
//     follow it. So some linearization places U after K, at or after
//     K's call.
//
// Porcupine orders events by time alone (calls first on a tie, otherwise
// in no set order), and an op must follow exactly those that returned
// before its call: with U called at K's call, U may still come before K,
// and porcupine tried that first, K's last read being concurrent with the
// pinned ops (268k steps). So U's call goes to K's call + 1 where no op
// returns at K's call: U then must follow the ops that returned by K's
// call, which all returned before K was called and so come before K.
//
// Conversely a linearization with the later call is one of the original
// history (a later call only forbids placements). Moving a call can let
// another stamp's P have returned before it, so the rule runs until no
// call moves. TestPinnedUnknownsKeepVerdict compares the verdicts.
func pinUnknowns(part []porcupine.Operation) []porcupine.Operation {
	type stampInfo struct {
		producers int
		ret       int64 // the producer's return
		lastRead  int64 // the latest call of a read returning the stamp
		read      bool
		listed    bool // in order
	}
	stamps := make(map[uint64]*stampInfo)
	get := func(st uint64) *stampInfo {
		si, ok := stamps[st]
		if !ok {
			si = &stampInfo{}
			stamps[st] = si
		}
		return si
	}
	var order []uint64 // stamps with a producer and a read, in history order
	unknowns := 0
	returns := make(map[int64]bool)
	for _, op := range part {
		in, out := op.Input.(LinInput), op.Output.(LinOutput)
		returns[op.Return] = true
		switch {
		case out.Outcome == outUnknown:
			unknowns++
		case in.Kind == kInit && in.Exists:
			si := get(in.Stamp)
			si.producers++
			si.ret = op.Return
		case out.Outcome != outOK:
		case in.Kind == kWrite || in.Kind == kAppend || in.Kind == kReplace:
			si := get(out.Stamp)
			si.producers++
			si.ret = op.Return
		case in.Kind == kRead:
			si := get(out.Stamp)
			if !si.read || op.Call > si.lastRead {
				si.read, si.lastRead = true, op.Call
			}
		}
	}
	if unknowns == 0 {
		return part
	}
	for _, op := range part {
		in, out := op.Input.(LinInput), op.Output.(LinOutput)
		st := out.Stamp
		if in.Kind == kInit {
			st = in.Stamp
		}
		if si, ok := stamps[st]; ok && si.producers == 1 && si.read && !si.listed {
			si.listed = true
			order = append(order, st)
		}
	}
	if len(order) == 0 {
		return part
	}
	for _, st := range order {
		if si := stamps[st]; !returns[si.lastRead] {
			si.lastRead++ // see above
		}
	}
	var pinned []porcupine.Operation
	for i, op := range part {
		if op.Output.(LinOutput).Outcome != outUnknown {
			continue
		}
		call := op.Call
		for moved := true; moved; {
			moved = false
			for _, st := range order {
				si := stamps[st]
				if si.ret < call && si.lastRead > call {
					call, moved = si.lastRead, true
				}
			}
		}
		if call == op.Call {
			continue
		}
		if pinned == nil {
			pinned = slices.Clone(part)
		}
		pinned[i].Call = call
	}
	if pinned == nil {
		return part
	}
	return pinned
}

// PlainModel is the block-store model without the end op and the rules
// that keep one placement of each unknown op: every unknown op may take
// effect anywhere after its call (see CheckHistory).
func PlainModel() porcupine.Model {
	m := Model()
	m.Partition = byBlock
	m.Step = plainStep
	return m
}

func plainStep(state, input, output any) (bool, any) {
	s, in, out := state.(blockState).core(), input.(LinInput), output.(LinOutput)
	if in.Kind == kInit {
		if s.set {
			return false, s
		}
		return true, initState(in)
	}
	if !s.set {
		return false, s
	}
	switch out.Outcome {
	case outUnknown:
		return true, apply(s, in)
	case outRejected:
		return rejectedOK(s, in, out.Status), s
	}
	return stepKnown(s, in, out)
}

// Model is the porcupine model of the block store, partitioned by block.
func Model() porcupine.Model {
	return porcupine.Model{
		Partition:         partition,
		Init:              func() any { return blockState{} },
		Step:              step,
		Equal:             func(a, b any) bool { return a.(blockState).equal(b.(blockState)) },
		Hash:              func(state any) uint64 { return state.(blockState).hash() },
		DescribeOperation: describeOp,
		DescribeState:     func(state any) string { return state.(blockState).describe() },
		DescribeOperationMetadata: func(info any) string {
			if info == nil {
				return ""
			}
			return fmt.Sprint(info)
		},
	}
}

// partition splits a history by block and ends each block's history with
// the end op, called after every other op's call and return (finite ones:
// an unknown op returns at +∞, after it).
func partition(history []porcupine.Operation) [][]porcupine.Operation {
	parts := byBlock(history)
	for i, part := range parts {
		last := int64(0)
		for _, op := range part {
			last = max(last, op.Call)
			if op.Return != math.MaxInt64 {
				last = max(last, op.Return)
			}
		}
		b := part[0].Input.(LinInput).Block
		parts[i] = append(part, porcupine.Operation{
			ClientId: 0, Call: last + 1, Return: last + 2, Output: LinOutput{},
			Input: LinInput{Kind: kEnd, Block: b},
		})
	}
	return parts
}

// byBlock splits a history by block, in block order, leaving out end ops
// (partition adds them again).
func byBlock(history []porcupine.Operation) [][]porcupine.Operation {
	ops := make(map[uint64][]porcupine.Operation)
	var blocks []uint64
	for _, op := range history {
		in := op.Input.(LinInput)
		if in.Kind == kEnd {
			continue
		}
		if _, ok := ops[in.Block]; !ok {
			blocks = append(blocks, in.Block)
		}
		ops[in.Block] = append(ops[in.Block], op)
	}
	slices.Sort(blocks)
	parts := make([][]porcupine.Operation, 0, len(blocks))
	for _, b := range blocks {
		parts = append(parts, ops[b])
	}
	return parts
}

func describeOp(input, output any) string {
	in := input.(LinInput)
	out := output.(LinOutput)
	var call string
	switch in.Kind {
	case kInit:
		if !in.Exists {
			return fmt.Sprintf("init(b%d) absent", in.Block)
		}
		return fmt.Sprintf("init(b%d) stamp %d, %d bytes %s", in.Block, in.Stamp, len(in.Data), digest(in.Data))
	case kEnd:
		return fmt.Sprintf("end(b%d): later unknown ops change nothing seen", in.Block)
	case kRead:
		call = fmt.Sprintf("read(b%d, %d+%d", in.Block, in.Off, in.Len)
		if in.Stamp != 0 {
			call += fmt.Sprintf(", ≥%d", in.Stamp)
		}
		call += ")"
	case kDelete:
		call = fmt.Sprintf("delete(b%d)", in.Block)
	default:
		call = fmt.Sprintf("%s(b%d, %d bytes %s)", kindNames[in.Kind], in.Block, len(in.Data), digest(in.Data))
	}
	switch out.Outcome {
	case outUnknown:
		return call + " → unknown"
	case outRejected:
		return call + " → rejected " + out.Status.String()
	}
	if in.Kind == kRead {
		return fmt.Sprintf("%s → stamp %d, length %d, %s", call, out.Stamp, out.Length, digest(out.Data))
	}
	if in.Kind == kDelete {
		return call + " → ok"
	}
	return fmt.Sprintf("%s → stamp %d, length %d", call, out.Stamp, out.Length)
}

// history converts the clients' histories into porcupine's form, after the
// init ops. Reads that failed without an answer carry no information and
// are left out; so are mutations that failed before their request was
// fully sent. Mutations with an unknown effect return at +∞.
func (h *harness) history() []porcupine.Operation {
	var ops []porcupine.Operation
	for id := uint64(1); id <= h.cfg.MaxBlock; id++ {
		s, ok := h.initState[id]
		if !ok {
			continue
		}
		ops = append(ops, porcupine.Operation{
			ClientId: 0, Call: -2, Return: -1, Output: LinOutput{},
			Input: LinInput{Kind: kInit, Block: id, Exists: s.exists, Stamp: s.stamp, Data: s.data.String()},
		})
	}
	rows := h.cfg.ClientWorkers
	for _, ch := range h.allClients() {
		for i, o := range ch.hist.Ops {
			row := ch.id*rows + 1
			if i < len(ch.workers) && ch.workers[i] > 0 {
				row += ch.workers[i]
			}
			if op, ok := convert(o, row); ok {
				ops = append(ops, op)
			}
		}
	}
	return ops
}

// frozen is b as a string without a copy, for bytes nobody writes again:
// a block's first contents once the store has copied them, a write's data
// (model.BlockContent's, which the client only reads). Copying them was a
// tenth of what a check allocates per seed.
func frozen(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func convert(o model.Operation, row int) (porcupine.Operation, bool) {
	in := LinInput{Block: o.Block, Stamp: o.Stamp, Off: o.Off, Len: o.Len, Data: frozen(o.Input)}
	switch o.Kind {
	case model.OpReadBlock:
		in.Kind = kRead
	case model.OpWriteBlock:
		in.Kind = kWrite
	case model.OpAppendBlock:
		in.Kind = kAppend
	case model.OpReplaceBlock:
		in.Kind = kReplace
	case model.OpDeleteBlock:
		in.Kind = kDelete
	default:
		return porcupine.Operation{}, false
	}
	op := porcupine.Operation{ClientId: row, Input: in, Call: int64(o.Call), Return: int64(o.Return)}
	r := o.Result
	rejected := errors.Is(r.Err, model.ErrRejected)
	switch {
	case !o.Done:
		if in.Kind == kRead {
			return op, false
		}
		op.Output, op.Return = LinOutput{Outcome: outUnknown}, math.MaxInt64
		op.Metadata = "still in flight"
	case r.Err == nil:
		op.Output = LinOutput{Outcome: outOK, Stamp: r.Stamp, Length: r.Length, Data: string(r.Data)}
	case rejected && (r.Status == model.StatusErrorExists || r.Status == model.StatusErrorInvalid || r.Status == model.StatusErrorAccessToken):
		op.Output = LinOutput{Outcome: outRejected, Status: r.Status}
		op.Metadata = r.Err.Error()
	case in.Kind == kRead:
		return op, false
	case rejected || r.Unknown:
		// A mutation the datanode failed (a disk error) or whose answer
		// never came: it may or may not have taken effect.
		op.Output, op.Return = LinOutput{Outcome: outUnknown}, math.MaxInt64
		op.Metadata = r.Err.Error()
	default:
		return op, false
	}
	return op, true
}

// witness looks for one linearization of a block's history the plain
// model accepts, built rather than searched for among every order: it
// places the ops of known outcome one at a time, in the order of their
// calls where the model and real time allow it, and unknown ops only
// where the next known op needs them: before a known op the model
// refuses, up to witnessBefore unknown ops that change the block (one
// that changes nothing where it is placed might as well go last), trying
// one in a row at most first, then two, and so on. The
// unknown ops left over go last, where nothing sees them. Each op placed
// is checked against real time (none after an op called later than it
// returned), so a true answer is a linearization found, a proof. Where a
// choice leads nowhere witness goes back and tries the next (a known op
// called later but overlapping, or other unknown ops), remembering the
// placements that failed, up to witnessSteps steps of the model; a false
// answer proves nothing, and porcupine decides.
//
// It is for the histories porcupine's search cannot finish, which place
// unknown ops early and everywhere: check seed 40420901's block 3, 14
// unknown writes, appends and replaces pinned to one call and a known
// append whose length needs two of them first, undecided by either model
// in a minute; seed 97137534's block 4, where an append's length needs
// three of 16 unknown ops (a write of nothing and two appends, in the one
// order later reads agree with), and a read sees the stamp a replace
// called before it replaced; seed 98445948's block 3, where a read's
// length needs four of 18 unknown ops in a row, no known op between them.
// Each is decided here in milliseconds. (witness used to take the known
// ops in the order of their calls only, with one or two unknown ops
// before one, and keep the first choice that fit: it failed on the last
// two, and the plain model's 100,000 steps and Model's 5 s did not
// decide them either.) A longer run of unknown ops before a read or an
// append, which no search of their orders reaches in time, is built
// toward the length that op needs (toward): seed 101369739 needs six.
func witness(part []porcupine.Operation) bool {
	var known, unknown []porcupine.Operation
	for _, op := range part {
		if op.Output.(LinOutput).Outcome == outUnknown {
			unknown = append(unknown, op)
		} else {
			known = append(known, op)
		}
	}
	slices.SortStableFunc(known, byCall)
	slices.SortStableFunc(unknown, byCall)
	// Fewest unknown ops in a row first: allowed four from the start,
	// the search spent its budget on the wrong first choices of seed
	// 97137534, which needs no more than one between known ops.
	for before := 1; before <= witnessBefore; before++ {
		if witnessWith(known, unknown, before) {
			return true
		}
	}
	return false
}

// witnessWith is witness's search with at most before unknown ops in a
// row, and its own budget of witnessSteps.
func witnessWith(known, unknown []porcupine.Operation, before int) bool {
	placed, used := make([]bool, len(known)), make([]bool, len(unknown))
	left := len(known)
	// The sets placed so far, hashed (each op's bit a mix of its index),
	// with the state: a placement that failed once fails again. (A hash
	// that collides can only make witness miss a linearization.)
	var placedHash, usedHash uint64
	failed := make(map[uint64]bool)
	steps := 0
	step := func(s blockState, op porcupine.Operation) (bool, blockState) {
		steps++
		ok, next := plainStep(s, op.Input, op.Output)
		return ok, next.(blockState)
	}
	// place places the ops not yet placed from state, with up to n
	// unknown ops before the next known op; latest is the latest call of
	// the ops placed so far.
	var place func(n int, state blockState, latest int64) bool
	// run places the unknown ops run from state, each changing the
	// block, and then known[k] must be accepted: then the rest.
	run := func(k int, ops []int, state blockState, latest int64) bool {
		s, lat := state, latest
		for _, i := range ops {
			ok, next := step(s, unknown[i])
			if !ok || next.equal(s) {
				return false
			}
			s, lat = next, max(lat, unknown[i].Call)
		}
		if ok, _ := step(s, known[k]); !ok {
			return false
		}
		for _, i := range ops {
			used[i], usedHash = true, usedHash^mix(1, uint64(i)+1)
		}
		found := place(0, s, lat)
		for _, i := range ops {
			used[i], usedHash = false, usedHash^mix(1, uint64(i)+1)
		}
		return found
	}
	// toward tries, before known[k], which state refuses, runs of unknown
	// ops built toward the length k reads (or appends to): a write if the
	// block is absent, perhaps a replace, then appends whose lengths sum
	// to what is missing, in each of their orders. Ops before a run's
	// last write or replace would only be used up, so a run of this form
	// reaches any contents a longer one does. Seed 101369739 needs six in
	// a row: searching every order up to eight did not find them.
	toward := func(k int, state blockState, latest, first int64) bool {
		in, out := known[k].Input.(LinInput), known[k].Output.(LinOutput)
		var want int64
		switch {
		case out.Outcome == outOK && in.Kind == kRead:
			want = out.Length
		case out.Outcome == outOK && in.Kind == kAppend:
			want = out.Length - int64(len(in.Data))
		default:
			return false
		}
		var writes, replaces, appends []int
		for i, u := range unknown {
			if used[i] || u.Call > first {
				continue
			}
			switch u.Input.(LinInput).Kind {
			case kWrite:
				writes = append(writes, i)
			case kReplace:
				replaces = append(replaces, i)
			case kAppend:
				appends = append(appends, i)
			}
		}
		appends = appends[:min(len(appends), witnessAppends)]
		bases := [][]int{nil}
		if !state.exists {
			bases = bases[:0]
			for _, w := range writes {
				bases = append(bases, []int{w})
			}
		}
		for _, b := range bases[:len(bases):len(bases)] {
			for _, r := range replaces {
				bases = append(bases, append(slices.Clone(b), r))
			}
		}
		for _, b := range bases {
			have := int64(state.data.len())
			for _, i := range b {
				d := unknown[i].Input.(LinInput).Data
				have = int64(len(d)) // (a write or replace sets the contents)
			}
			for mask := 0; mask < 1<<len(appends); mask++ {
				// (Sixteen sums cost about a step of the model: the
				// budget bounds this enumeration too.)
				if mask%16 == 0 {
					steps++
				}
				if steps > witnessSteps {
					return false
				}
				if bits.OnesCount(uint(mask)) > witnessRun {
					continue
				}
				sum, sub := have, b[:len(b):len(b)]
				for j, a := range appends {
					if mask&(1<<j) != 0 {
						sum += int64(len(unknown[a].Input.(LinInput).Data))
						sub = append(sub, a)
					}
				}
				if sum != want {
					continue
				}
				if permutations(sub[len(b):], func() bool { return run(k, sub, state, latest) }) {
					return true
				}
			}
		}
		return false
	}
	place = func(n int, state blockState, latest int64) bool {
		if left == 0 {
			for i, op := range unknown {
				if used[i] {
					continue
				}
				ok, next := step(state, op)
				if !ok {
					return false
				}
				state = next
			}
			return true
		}
		key := mix(mix(mix(placedHash, usedHash), uint64(n)), state.hash())
		if failed[key] || steps > witnessSteps {
			return false
		}
		// Real time: the next op is called no later than the first
		// return of the known ops left (calls first on a tie), and none
		// of them returned before an op placed was called.
		first := int64(math.MaxInt64)
		for i, op := range known {
			if !placed[i] {
				if op.Return < latest {
					failed[key] = true
					return false
				}
				first = min(first, op.Return)
			}
		}
		var refused []int // known ops the state refuses, for toward
		for i, op := range known {
			if placed[i] || op.Call > first {
				continue
			}
			ok, next := step(state, op)
			if !ok {
				refused = append(refused, i)
				continue
			}
			placed[i], left, placedHash = true, left-1, placedHash^mix(0, uint64(i)+1)
			found := place(before, next, max(latest, op.Call))
			placed[i], left, placedHash = false, left+1, placedHash^mix(0, uint64(i)+1)
			if found {
				return true
			}
		}
		if n == before {
			for _, i := range refused {
				if toward(i, state, latest, first) {
					return true
				}
			}
		}
		if n > 0 {
			for i, u := range unknown {
				if used[i] || u.Call > first {
					continue
				}
				if ok, next := step(state, u); ok && !next.equal(state) {
					used[i], usedHash = true, usedHash^mix(1, uint64(i)+1)
					found := place(n-1, next, max(latest, u.Call))
					used[i], usedHash = false, usedHash^mix(1, uint64(i)+1)
					if found {
						return true
					}
				}
			}
		}
		failed[key] = true
		return false
	}
	return place(before, blockState{}, math.MinInt64)
}

// permutations calls f with xs in each of its orders (rearranged in
// place, and restored) until f returns true.
func permutations(xs []int, f func() bool) bool {
	if len(xs) <= 1 {
		return f()
	}
	for i := range xs {
		xs[0], xs[i] = xs[i], xs[0]
		found := permutations(xs[1:], f)
		xs[0], xs[i] = xs[i], xs[0]
		if found {
			return true
		}
	}
	return false
}

// witnessAppends and witnessRun bound the runs toward a known op: the
// first witnessAppends unknown appends, at most witnessRun of them in a
// run (their orders: 720 at most).
const (
	witnessAppends = 14
	witnessRun     = 6
)

// witnessBefore and witnessSteps bound witness's search: at most
// witnessBefore unknown ops before one op of known outcome (seed 98445948
// needs four), and witnessSteps steps of the model for each bound tried
// (tens of milliseconds each).
const (
	witnessBefore = 4
	witnessSteps  = 200_000
)

// sequentialVerdict decides one block's history when no two of its ops
// overlap, as in seven blocks of ten in check: then the time order is the
// only order porcupine may try, and the history is linearizable exactly
// when the plain model takes each op in that order. ok is false when ops
// overlap; porcupine decides those. An op called at the very time
// another returns overlaps it, as in porcupine (calls sort first on a
// tie). Deciding the easy histories here spares check a goroutine, a
// timer and a channel per block (porcupine runs each history on its
// own goroutine, and waking a thread for it cost more than the search):
// check's seeds per CPU second moved 1.01–1.03× (medians of four sets of
// alternated runs, on one core and on two).
// byCall orders ops by when they were called.
func byCall(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) }

func sequentialVerdict(part []porcupine.Operation) (res porcupine.CheckResult, ok bool) {
	if !slices.IsSortedFunc(part, byCall) {
		part = slices.Clone(part)
		slices.SortFunc(part, byCall)
	}
	for i := 1; i < len(part); i++ {
		if part[i-1].Return >= part[i].Call {
			return porcupine.Unknown, false
		}
	}
	state := any(blockState{})
	for _, op := range part {
		accepted, next := plainStep(state, op.Input, op.Output)
		if !accepted {
			return porcupine.Illegal, true
		}
		state = next
	}
	return porcupine.Ok, true
}
