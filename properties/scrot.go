package properties

import (
	"fmt"
	"path"
	"slices"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// Bit rot in the short-circuit system: a bit of a block's data file or of
// its meta file flips on the datanode's disk (sim.Process.FlipBit, as the
// device would, not through the datanode). HDFS's BlockReaderLocal
// verifies what it reads through passed fds (unless
// dfs.client.read.shortcircuit.skip.checksum) and throws a
// ChecksumException; here the reader falls back to TCP, where the
// datanode sends what is on disk and the client verifies it again. So a
// read that meets the rot fails with a checksum error, wherever it was
// served; it never returns the rotted bytes as good data
// (linearizability), and a checksum error where no rot may be is a read
// failed for nothing (availability).
//
// What later changes do to it: a replace, and a delete (with the
// re-create after it), write new data and meta files and rename them into
// place, so once one has returned the rot is gone for every read that
// starts after; an append extends the data file in place and copies the
// whole chunks' checksums into its new meta file, so the rot stays.

// scRotSpan bounds where rot lands: a byte of the first 3,584 of a block,
// never in the last chunk of any version (blocks hold 4,096 bytes or
// more), whose checksum a restart's recovery uses to find the replica's
// length and an append verifies before extending it.
const scRotSpan = 4096 - model.BytesPerChecksum

// drawSCRot draws 1-3 rots into a case, in 25% of cases. Each lands in
// what the first read after it reads (rot nobody reads tests nothing),
// or, with no read after, anywhere.
func drawSCRot(d drawer, c *SCCase) {
	if !d.chance(25, "sc_rot") {
		return
	}
	for k := d.n(1, 3, "sc_rots"); k > 0; k-- {
		at := d.n(0, len(c.Ops), "sc_rot_at")
		op := SCOp{Op: "rot", Block: 1, Off: int64(d.n(0, 511, "sc_rot_off")), Meta: d.chance(50, "sc_rot_meta")}
		if i := slices.IndexFunc(c.Ops[at:], func(o SCOp) bool { return o.Op == "read" || o.Op == "idle-read" }); i >= 0 {
			read := c.Ops[at+i]
			op.Block, op.Off = read.Block, min(read.Off+op.Off, scRotSpan-1)
		} else {
			op.Block, op.Off = uint64(d.n(1, scBlocks, "sc_rot_block")), op.Off*scRotSpan/512
		}
		c.Ops = scInsert(c.Ops, at, op)
	}
}

// scDataDir is where the sc datanode keeps its blocks.
const scDataDir = "data"

// scRotInject flips the bit op names on dn's disk: bit Off%8 of data byte
// Off, or (Meta) of byte Off%4 of the checksum of the chunk holding Off.
// It reports false when there is nothing to rot (the block deleted; not
// exactly one meta file, as a crash in a change may leave, where which one
// the datanode reads is its recovery's choice).
func scRotInject(dn *sim.Process, op SCOp) bool {
	if !op.Meta {
		return dn.FlipBit(path.Join(scDataDir, fmt.Sprintf("blk_%d", op.Block)), op.Off, int(op.Off%8))
	}
	meta, ok := replicaMeta(dn, scDataDir, op.Block)
	return ok && dn.FlipBit(meta, checksumByteOf(op.Off), int(op.Off%8))
}

// scRot is one rot of a block: the chunk, when it was injected and when a
// change that rewrote the block's files returned (0: not yet).
type scRot struct {
	chunk   int64
	at      time.Duration
	goneAt  time.Duration
	cleared bool
}

// scRots are a case's rots, by block.
type scRots map[uint64][]scRot

func (rs scRots) add(block uint64, off int64, at time.Duration) {
	rs[block] = append(rs[block], scRot{chunk: off / model.BytesPerChecksum, at: at})
}

// clear records that a change rewriting block's files returned at now:
// reads that start from now on read none of the rot before it.
func (rs scRots) clear(block uint64, now time.Duration) {
	for i := range rs[block] {
		if r := &rs[block][i]; !r.cleared {
			r.cleared, r.goneAt = true, now
		}
	}
}

// may reports whether a read of n bytes at off of block during [start,
// end] may meet rot, and when the first such rot was injected.
func (rs scRots) may(block uint64, off, n int64, start, end time.Duration) (time.Duration, bool) {
	first, last := off/model.BytesPerChecksum, (off+n-1)/model.BytesPerChecksum
	for _, r := range rs[block] {
		if r.chunk >= first && r.chunk <= last && r.at <= end && (!r.cleared || r.goneAt > start) {
			return r.at, true
		}
	}
	return 0, false
}
