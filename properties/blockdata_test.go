package properties

import (
	"hash/fnv"
	"testing"
)

// The content pool is shared by every case a process checks: a case that
// changed a byte of it would change what later cases write, and check
// would no longer be the same seed by seed. Cases with corruption, torn
// writes, poisoned buffers and appends all leave it as it was.
func TestContentPoolUnchanged(t *testing.T) {
	sum := func() uint64 {
		h := fnv.New64a()
		h.Write(contentPool())
		return h.Sum64()
	}
	before := sum()
	for seed := uint64(1); seed <= 150; seed++ {
		c, err := Draw(SeedSource(seed), seed, "")
		if err != nil {
			t.Fatal(err)
		}
		if r := Run(c, Options{}); r.Failure != nil {
			t.Fatalf("seed %d: %v", seed, r.Failure)
		}
	}
	if sum() != before {
		t.Fatalf("a case changed the shared content pool")
	}
}

// Windows end at their length (an append copies), a shorter one of a key
// is the prefix of a longer one, and keys start at different bytes.
func TestBlockDataWindows(t *testing.T) {
	a := blockData(7, 1000)
	if cap(a) != len(a) {
		t.Fatalf("window of %d bytes has capacity %d", len(a), cap(a))
	}
	if b := blockData(7, 10); string(b) != string(a[:10]) {
		t.Fatalf("blockData(7, 10) is not the first 10 bytes of blockData(7, 1000)")
	}
	if string(blockData(8, 1000)) == string(a) {
		t.Fatalf("keys 7 and 8 give the same content")
	}
	if big := blockData(7, maxPooledContent+1); len(big) != maxPooledContent+1 {
		t.Fatalf("a content past the pool's largest window has %d bytes", len(big))
	}
}

// Every content Draw makes comes from the pool.
func TestHostileBlockFitsThePool(t *testing.T) {
	if hostileBlockSize > maxPooledContent {
		t.Fatalf("a hostile peer's block (%d bytes) is past the pool's largest window (%d)", hostileBlockSize, maxPooledContent)
	}
}
