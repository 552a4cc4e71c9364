package sim

import (
	"fmt"
	"strings"

	"xceiver/model"
)

// Faults that corrupt bytes or cut multi-step disk updates short. The data
// path must turn each into an error for the reader (checksums) or recover
// from it (restart), never into bad bytes returned as good.

// crashPoint arms a crash at a coming disk operation.
type crashPoint struct {
	left       int  // operations to let through first
	writesOnly bool // count only operations that change the disk
	then       func()
}

// CrashAtDiskOp crashes p just before its disk operation number k (from
// 0) from now — with writesOnly, counting only operations that change the
// disk (create, write, sync, rename, unlink), the steps of multi-step
// updates. A write met by the crash is torn: a whole number of 512-byte
// sectors of it, drawn, reaches the disk. The operation and every later
// one of the crashed process fail; then runs after the crash.
func (p *Process) CrashAtDiskOp(k int, writesOnly bool, then func()) {
	p.w.fault(p.name, 0, fmt.Sprintf("crash at disk op %d (writes only %v)", k, writesOnly))
	p.disk.crashAt = &crashPoint{left: k, writesOnly: writesOnly, then: then}
}

// step is called first by every disk operation: it fails the operations of
// a crashed process and fires an armed crash point. tear, when the
// operation is a write the crash meets, receives how much of it persists.
func (d *Disk) step(write bool, tear func(keep int)) error {
	if d.p.crashed {
		return model.ErrProcessExited
	}
	cp := d.crashAt
	if cp == nil || (cp.writesOnly && !write) {
		return nil
	}
	if cp.left > 0 {
		cp.left--
		return nil
	}
	d.crashAt = nil
	if tear != nil {
		tear(d.w.faultRand.IntN(1 << 20))
	}
	d.p.Crash()
	if cp.then != nil {
		cp.then()
	}
	return model.ErrProcessExited
}

// FlipBit flips one bit of a file on p's disk (bit rot): bit bit%8 of the
// byte at off. It reports false if there is no such file or byte.
func (p *Process) FlipBit(path string, off int64, bit int) bool {
	ino := p.disk.names[path]
	if ino == nil || off < 0 || off >= int64(len(ino.data)) {
		return false
	}
	ino.own()
	ino.data[off] ^= 1 << (bit % 8)
	if p.disk.track && off < int64(len(ino.durable)) {
		// The device's bytes rotted: a power loss keeps the flip.
		ino.durable[off] ^= 1 << (bit % 8)
	}
	p.w.fault(p.name, ino.ino, fmt.Sprintf("bit rot %s byte %d bit %d", path, off, bit%8))
	return true
}

// SetBufferFaults switches p's buffer faults: flip, per mille of the
// buffers the data path declares in flight, has one bit flipped (memory
// or DMA corruption after the checksum was computed); poison fills every
// buffer the moment it returns to a free list, so a use after the return
// sends the pattern instead of data.
func (p *Process) SetBufferFaults(flipPermille int, poison bool) {
	p.w.fault(p.name, 0, fmt.Sprintf("buffer faults flip %d‰ poison %v", flipPermille, poison))
	p.flipPermille, p.poison = flipPermille, poison
}

// PoisonPattern is the byte poisoned buffers are filled with.
const PoisonPattern = 0xDB

// InFlight implements model.BufferFaults.
func (p *Process) InFlight(b []byte) {
	if p.flipPermille <= 0 || len(b) == 0 || p.w.faultRand.IntN(1000) >= p.flipPermille {
		return
	}
	i := p.w.faultRand.IntN(len(b))
	bit := p.w.faultRand.IntN(8)
	b[i] ^= 1 << bit
	p.w.fault(p.name, 0, fmt.Sprintf("bit flip in flight: byte %d of %d, bit %d", i, len(b), bit))
	p.Flips++
}

// Freed implements model.BufferFaults: it fills b (its length: the bytes
// the data path says it held).
func (p *Process) Freed(b []byte) {
	if !p.poison || len(b) == 0 {
		return
	}
	b[0] = PoisonPattern
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// DiskNames lists the names in dir on p's disk, sorted, as a test sees
// them (no system call: no cost, no fault).
func (p *Process) DiskNames(dir string) []string {
	prefix := dir + "/"
	var out []string
	for _, n := range p.disk.sortedNames() {
		if rest, ok := strings.CutPrefix(n, prefix); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	return out
}

// FileSize is the size of a file on p's disk, as a test sees it.
func (p *Process) FileSize(path string) (int64, bool) {
	ino := p.disk.names[path]
	if ino == nil {
		return 0, false
	}
	return int64(len(ino.data)), true
}

// DisarmCrash cancels a crash point that has not fired.
func (p *Process) DisarmCrash() {
	if p.disk.crashAt != nil {
		p.w.fault(p.name, 0, "crash point disarmed")
		p.disk.crashAt = nil
	}
}

// SetSocketBuffers sets the send and receive buffer sizes of p's TCP
// connections made from now on (SO_SNDBUF, SO_RCVBUF; 0 keeps the
// world's); a receive buffer set so is never autotuned. Small ones make
// partial writes common.
func (p *Process) SetSocketBuffers(snd, rcv int) { p.sockSnd, p.sockRcv = snd, rcv }
