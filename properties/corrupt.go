package properties

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// Faults that corrupt bytes or cut disk updates short (sim/corrupt.go),
// and what the properties expect of them: a corrupt chunk fails the read
// that meets it (a checksum error to the caller, never the bytes), and a
// checksum error with no corruption injected means the data path itself
// sent bytes that do not match their checksums.

// Fault kinds of this file.
const (
	FaultBitRot     = "bit-rot"     // a bit of a stored block's data or checksums flips
	FaultFlip       = "flip"        // bits flip in the datanode's packet buffers after checksumming
	FaultCrashPoint = "crash-point" // the datanode crashes at a disk operation of an update or a recovery
)

// corruptionSeen reports whether a fault of this run may have corrupted
// bytes a reader meets.
func (h *harness) corruptionSeen() bool {
	if h.rotted || (h.dnProc != nil && h.dnProc.Flips > 0) {
		return true
	}
	for _, ch := range h.clients {
		if ch.p != nil && ch.p.Flips > 0 {
			return true
		}
	}
	return false
}

// isChecksumErr reports whether err is a read failed on a corrupt chunk.
func isChecksumErr(err error) bool {
	if err == nil {
		return false // (most ops: errors.As's target would be allocated for nothing)
	}
	var ce *model.ChecksumError
	return errors.As(err, &ce)
}

// checkChecksumErr judges a checksum error: expected after corruption,
// a broken stream otherwise. It reports whether the op's failure is
// explained (no availability verdict on it).
func (h *harness) checkChecksumErr(ch *clientH, op Op, err error) bool {
	if !isChecksumErr(err) {
		return false
	}
	if !h.corruptionSeen() {
		h.fail(PropStream, "client %d: %s of block %d met bytes that do not match their checksums, though no fault corrupted any: %v", ch.id, op.Kind, op.Block, err)
	}
	return true
}

// rot flips one bit of a stored replica: in the data or the checksum of a
// chunk other than the last (whose checksum a restart uses to find the
// replica's length), of a replica with one meta file.
func (h *harness) rot(f Fault) {
	dn := h.dnProc
	block := f.Key%h.cfg.MaxBlock + 1
	if b := h.blockBeingRead(); b != 0 {
		block = b
	}
	meta, ok := replicaMeta(dn, dnDir, block)
	if !ok {
		return
	}
	msize, ok := dn.FileSize(meta)
	chunks := (msize - metaHeaderLen) / model.ChecksumSize
	if !ok || chunks < 2 {
		return
	}
	off := int64(f.Arg/2)%(chunks-1)*model.BytesPerChecksum + int64(f.Size)%model.BytesPerChecksum
	var done bool
	if f.Arg%2 == 0 {
		done = dn.FlipBit(path.Join(dnDir, fmt.Sprintf("blk_%d", block)), off, f.Size)
	} else {
		done = dn.FlipBit(meta, checksumByteOf(off), f.Size)
	}
	h.rotted = h.rotted || done
}

// metaHeaderLen is the size of a meta file's header (model's block store).
const metaHeaderLen = 7

// replicaMeta is the path of block's one meta file under dir on dn's
// disk; false when there is not exactly one, as a crash in a change may
// leave, where which one the datanode reads is its recovery's choice.
func replicaMeta(dn *sim.Process, dir string, block uint64) (string, bool) {
	prefix, meta, n := fmt.Sprintf("blk_%d_", block), "", 0
	for _, name := range dn.DiskNames(dir) {
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".meta") {
			meta, n = path.Join(dir, name), n+1
		}
	}
	return meta, n == 1
}

// checksumByteOf is where in a meta file byte off%ChecksumSize of the
// checksum of the chunk holding data byte off lies.
func checksumByteOf(off int64) int64 {
	return metaHeaderLen + off/model.BytesPerChecksum*model.ChecksumSize + off%model.ChecksumSize
}

// blockBeingRead is a block some client reads now, or 0.
func (h *harness) blockBeingRead() uint64 {
	for _, ch := range h.clients {
		for _, b := range ch.reading {
			if b != 0 {
				return b
			}
		}
	}
	return 0
}

// crashPoint crashes the datanode at a coming disk operation, within Dur:
// Size 0, the Arg-th write of whatever updates come next (a write it meets
// is torn); Size 1, a crash now and another at the Arg-th disk operation of
// the restart's recovery. The datanode restarts 20 ms after each crash.
func (h *harness) crashPoint(f Fault) {
	dn := h.dnProc
	if dn.Crashed() {
		return
	}
	const downtime = 20 * time.Millisecond
	var crashed func()
	crashed = func() {
		h.stats.Crashes++
		h.dn = nil
		h.w.At(h.w.Now()+downtime, func() {
			if dn.Crashed() {
				dn.Restart()
			}
		})
	}
	if f.Size == 0 {
		dn.CrashAtDiskOp(f.Arg, true, crashed)
	} else {
		dn.Crash()
		crashed()
		dn.CrashAtDiskOp(f.Arg, false, crashed)
	}
	h.w.At(h.w.Now()+f.Dur, dn.DisarmCrash)
}
