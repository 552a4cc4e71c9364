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
