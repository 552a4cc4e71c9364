package properties

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
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
