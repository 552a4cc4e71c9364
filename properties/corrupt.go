package properties

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"xceiver/model"
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
	data := path.Join(dnDir, fmt.Sprintf("blk_%d", block))
	var metas []string
	for _, name := range dn.DiskNames(dnDir) {
		if strings.HasPrefix(name, fmt.Sprintf("blk_%d_", block)) && strings.HasSuffix(name, ".meta") {
			metas = append(metas, path.Join(dnDir, name))
		}
	}
	if len(metas) != 1 {
		return
	}
	msize, ok := dn.FileSize(metas[0])
	const header = 7 // the meta file's header
	chunks := (msize - header) / model.ChecksumSize
	if !ok || chunks < 2 {
		return
	}
	chunk := int64(f.Arg/2) % (chunks - 1)
	pos := int64(f.Size)
	var done bool
	if f.Arg%2 == 0 {
		done = dn.FlipBit(data, chunk*model.BytesPerChecksum+pos%model.BytesPerChecksum, f.Size)
	} else {
		done = dn.FlipBit(metas[0], header+chunk*model.ChecksumSize+pos%model.ChecksumSize, f.Size)
	}
	h.rotted = h.rotted || done
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
