package model

import (
	"bytes"
	"testing"
)

// A block's content of any size is the prefix of a longer one of the same
// id (a read of part of a block is checked against BlockContent of its
// length), and ids, even neighbours, give unrelated bytes.
func TestBlockContentPrefixesAndIDs(t *testing.T) {
	for _, id := range []uint64{0, 1, 2, 1 << 40} {
		full := BlockContent(id, 300)
		for n := 0; n <= len(full); n++ {
			if got := BlockContent(id, n); !bytes.Equal(got, full[:n]) {
				t.Fatalf("BlockContent(%d, %d) is not the first %d bytes of BlockContent(%d, 300)", id, n, n, id)
			}
		}
		other := BlockContent(id+1, 300)
		same := 0
		for i := range full {
			if full[i] == other[i] {
				same++
			}
		}
		if same > 10 { // about 300/256 by chance
			t.Errorf("ids %d and %d share %d of 300 bytes", id, id+1, same)
		}
	}
}

// BenchmarkBlockContent: check makes tens of blocks a seed.
func BenchmarkBlockContent(b *testing.B) {
	b.SetBytes(64 << 10)
	for i := 0; i < b.N; i++ {
		BlockContent(uint64(i), 64<<10)
	}
}

// SplitMix64 is splitmix64's step (Vigna): from state 1234567 the
// generator's published first outputs, and from state 0 its first.
func TestSplitMix64ReferenceOutputs(t *testing.T) {
	const golden = 0x9e3779b97f4a7c15
	for i, want := range []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423} {
		if got := SplitMix64(1234567 + uint64(i)*golden); got != want {
			t.Errorf("output %d from state 1234567: %d, want %d", i, got, want)
		}
	}
	if got := SplitMix64(0); got != 0xe220a8397b1dcdaf {
		t.Errorf("SplitMix64(0) = %#x, want 0xe220a8397b1dcdaf", got)
	}
}
