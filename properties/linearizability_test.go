package properties

import (
	"slices"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"

	"xceiver/model"
)

// The model's Hash must agree with its Equal (porcupine's cache relies on
// it): states drawn from a small space collide often, and every equal
// pair must hash alike.
func TestModelHashAgreesWithEqual(t *testing.T) {
	m := Model()
	state := rapid.Custom(func(t *rapid.T) blockState {
		n := rapid.IntRange(0, 200).Draw(t, "len")
		fill := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "fill")
		data := []byte(strings.Repeat(fill, n))
		if n > 0 && rapid.Bool().Draw(t, "poke") {
			data[rapid.IntRange(0, n-1).Draw(t, "at")] = 'c'
		}
		return blockState{
			set: rapid.Bool().Draw(t, "set"), exists: rapid.Bool().Draw(t, "exists"), known: rapid.Bool().Draw(t, "known"),
			stamp: rapid.Uint64Range(0, 2).Draw(t, "stamp"), floor: rapid.Uint64Range(0, 2).Draw(t, "floor"),
			data: string(data),
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		a, b := state.Draw(t, "a"), state.Draw(t, "b")
		if m.Equal(a, b) && m.Hash(a) != m.Hash(b) {
			t.Fatalf("equal states hash differently: %+v, %+v", a, b)
		}
		c := a
		c.data = string([]byte(a.data)) // equal contents, another backing array
		if m.Hash(a) != m.Hash(c) {
			t.Fatalf("hash depends on more than the state's value: %+v", a)
		}
	})
}

// The hash must still tell apart states that differ only in their data's
// ends or length, or every block's states would share a bucket.
func TestModelHashSeparatesData(t *testing.T) {
	base := blockState{set: true, exists: true, known: true, stamp: 1, floor: 1, data: strings.Repeat("x", 1000)}
	for name, other := range map[string]string{
		"first byte": "y" + base.data[1:],
		"last byte":  base.data[:999] + "y",
		"length":     base.data + "x",
	} {
		o := base
		o.data = other
		if base.hash() == o.hash() {
			t.Errorf("%s: states hash alike", name)
		}
	}
}

// The rules that cut unknown ops' placements (unknownOK, windowOn, the end
// op) must not change a verdict: small histories of one block, drawn by
// running the mutations in a random order (unknown ones applied or not)
// and sometimes garbling an answer, get the same verdict from both models.
func TestCanonicalUnknownsKeepVerdict(t *testing.T) {
	var legal, illegal int
	rapid.Check(t, func(t *rapid.T) {
		words := []string{"", "a", "b", "ab", "ba", "abc"}
		exists := rapid.Bool().Draw(t, "exists")
		s := blockState{set: true, exists: exists, known: true}
		if exists {
			s.stamp, s.floor, s.data = 10, 10, rapid.SampledFrom(words).Draw(t, "init")
		}
		ops := []hop{initOp(1, exists, s.stamp, s.data)}
		n := rapid.IntRange(1, 7).Draw(t, "n")
		type pending struct {
			at int64 // when it takes effect (its place in the order)
			op hop
		}
		var ps []pending
		for i := 0; i < n; i++ {
			call := int64(rapid.IntRange(0, 20).Draw(t, "call"))
			ret := call + int64(rapid.IntRange(0, 6).Draw(t, "dur"))
			at := call + int64(rapid.IntRange(0, int(ret-call)).Draw(t, "at"))
			k := opKind(rapid.IntRange(int(kRead), int(kDelete)).Draw(t, "kind"))
			in := LinInput{Kind: k, Block: 1, Data: rapid.SampledFrom(words).Draw(t, "data")}
			if k == kRead || k == kDelete {
				in.Data = ""
			}
			if k == kRead {
				in.Off = int64(rapid.IntRange(0, 2).Draw(t, "off"))
				in.Len = int64(rapid.IntRange(0, 2).Draw(t, "len"))
			}
			h := hop{call: call, ret: ret, in: in}
			if k != kRead && rapid.IntRange(0, 2).Draw(t, "unknown") == 0 {
				h.ret = -1
				h.out = LinOutput{Outcome: outUnknown}
				if rapid.Bool().Draw(t, "never") {
					at = 1 << 40
				} else {
					at = call + int64(rapid.IntRange(0, 30).Draw(t, "late"))
				}
			}
			ps = append(ps, pending{at, h})
		}
		slices.SortStableFunc(ps, func(a, b pending) int { return int(a.at - b.at) })
		stamp := uint64(10)
		for _, p := range ps {
			h := p.op
			if h.out.Outcome == outUnknown {
				if p.at < 1<<40 {
					s = apply(s.core(), h.in)
				}
				ops = append(ops, h)
				continue
			}
			in := h.in
			switch {
			case in.Kind == kRead && s.exists && in.Off+in.Len <= int64(len(s.data)):
				if !s.known {
					stamp++
					s.known, s.stamp, s.floor = true, stamp, stamp
				}
				h.out = LinOutput{Stamp: s.stamp, Length: int64(len(s.data)), Data: s.data[in.Off : in.Off+in.Len]}
			case in.Kind == kRead:
				h.out = LinOutput{Outcome: outRejected, Status: model.StatusErrorInvalid}
			case in.Kind == kWrite && s.exists:
				h.out = LinOutput{Outcome: outRejected, Status: model.StatusErrorExists}
			case in.Kind != kWrite && !s.exists:
				h.out = LinOutput{Outcome: outRejected, Status: model.StatusErrorInvalid}
			case in.Kind == kDelete:
				s = blockState{set: true, floor: max(s.floor, s.stamp)}
			default:
				stamp += uint64(rapid.IntRange(1, 2).Draw(t, "gap"))
				data := in.Data
				if in.Kind == kAppend {
					data = s.data + in.Data
				}
				s = blockState{set: true, exists: true, known: true, stamp: stamp, floor: stamp, data: data}
				h.out = LinOutput{Stamp: stamp, Length: int64(len(data))}
			}
			ops = append(ops, h)
		}
		if rapid.IntRange(0, 2).Draw(t, "garble") == 0 {
			i := rapid.IntRange(1, len(ops)-1).Draw(t, "which")
			if ops[i].out.Outcome == outOK {
				ops[i].out.Stamp += uint64(rapid.IntRange(0, 2).Draw(t, "stampBy"))
				ops[i].out.Length += int64(rapid.IntRange(-1, 1).Draw(t, "lengthBy"))
			}
		}
		h := hist(ops...)
		want := porcupine.CheckOperations(PlainModel(), h)
		got := porcupine.CheckOperations(Model(), h)
		if got != want {
			for _, op := range h {
				t.Logf("[%d, %d] %s", op.Call, op.Return, describeOp(op.Input, op.Output))
			}
			t.Fatalf("verdict %v, the plain model's %v", got, want)
		}
		if got {
			legal++
		} else {
			illegal++
		}
	})
	t.Logf("%d legal, %d illegal histories", legal, illegal)
}
