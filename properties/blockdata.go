package properties

import (
	"sync"

	"xceiver/model"
)

// blockData is the content a case's block or write with this key and
// size holds: a window of contentPool at an offset drawn from the key. A
// shorter content of a key is the prefix of a longer one, as
// BlockContent's are. Check makes tens of contents a seed (the blocks
// written before the datanode serves, every write op's data); making each
// (allocating it, then writing every byte) was a twelfth of check's CPU,
// and a window costs nothing. The windows are read-only, like every
// content the harness hands out (the checker keeps them as strings, the
// sim's files borrow them), and end at their length, so an append copies.
//
// Two contents of a case share bytes only as windows that overlap do,
// shifted: a read served from another block or another offset still
// differs from what it should have read unless the two windows start at
// the very same byte (one chance in millions a pair).
func blockData(key uint64, size int) []byte {
	if size > maxPooledContent {
		return model.BlockContent(key, size)
	}
	pool := contentPool()
	off := int(model.SplitMix64(key) % uint64(len(pool)-maxPooledContent+1))
	return pool[off : off+size : off+size]
}

// contentPool is made at its first use, once per process: 4 MiB of
// model.BlockContent.
var contentPool = sync.OnceValue(func() []byte { return model.BlockContent(0x636f6e74656e74, 4<<20) })

// maxPooledContent is the largest content taken from the pool: a hostile
// non-reader's block (hostileBlockSize) is the largest Draw makes.
const maxPooledContent = 512 << 10
