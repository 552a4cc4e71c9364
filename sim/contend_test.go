package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// rawReader asks for a read over a raw connection and counts the bytes
// of the answer; it takes them only while reading is on.
type rawReader struct {
	c       model.Conn
	req     []byte
	got     int
	reading bool
}

func (r *rawReader) onEvent(ev model.Events) {
	if ev&model.Writable != 0 && len(r.req) > 0 {
		n, _ := r.c.Write(r.req)
		if r.req = r.req[n:]; len(r.req) == 0 {
			r.c.SetWriteInterest(false)
		}
	}
	if ev&model.Readable == 0 || !r.reading {
		return
	}
	var b [16 << 10]byte
	for {
		n, err := r.c.Read(b[:])
		r.got += n
		if err != nil {
			if err != model.ErrWouldBlock {
				r.c.SetReadInterest(false)
			}
			return
		}
	}
}

// readFrom dials the datanode and asks for all of block.
func readFrom(w *World, pp model.Process, block uint64, size int) *rawReader {
	r := &rawReader{req: request(model.OpReadBlock, block, 0, 0, int64(size)), reading: true}
	c, err := pp.Dial("tcp", "dn:50010", pp.MainLoop(), r.onEvent)
	if err != nil {
		w.Fail(err)
		return r
	}
	r.c = c
	c.SetWriteInterest(true)
	return r
}

// Once a read has waited the press delay for a handle, every holder
// gives its handle back as soon as its client's window closes, not only
// the holders whose output is stuck at the moment of the press. A read
// whose disk is slow holds its handle mostly while a worker reads its
// next packet, nothing pending; pressed then, it must still park when its
// client stops reading a little later (the contended flag), and not hold
// the handle until the stall cut-off closes it a stall timeout later
// (mutant f14c975e18, which survived 30,000 check seeds). Parked, it
// finishes its read once its client reads again.
func TestReadPressedBetweenPacketsParksWhenItsWindowCloses(t *testing.T) {
	const big, small = 16 << 20, 100 << 10
	dcfg := model.DatanodeConfig{PoolMax: 2, Workers: 1, NoTransferTo: true,
		StallTimeout: time.Second, HandleWait: 10 * time.Second, SendTimeout: time.Minute, ReadTimeout: time.Minute}
	var a, b *rawReader
	bAt, stalled := -1, -1 // at 2.5 s
	datanodeWorld(t, dcfg, [][]byte{model.BlockContent(1, big), model.BlockContent(2, small)}, "readers", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		// Every disk read takes 20 ms: the holder's worker is busy
		// reading most of the time, and its output drains at once.
		dnProc.(*Process).SimDisk().SetFaults(DiskFaults{SlowIO: 1, SlowDelay: 20 * time.Millisecond})
		dnProc.(*Process).SetSocketBuffers(16<<10, 0)
		pp.(*Process).SlowReader(16 << 10)
		l := pp.MainLoop()
		a = readFrom(w, pp, 1, big)
		// b waits for the one handle from 0.5 s and presses at 1.5 s.
		l.AfterFunc(500*time.Millisecond, func() { b = readFrom(w, pp, 2, small) })
		l.AfterFunc(2*time.Second, func() {
			a.reading = false
			a.c.SetReadInterest(false)
		})
		// By 2.5 s a has parked (b has its handle and its whole answer),
		// and the stall cut-off (3 s at the earliest) has not come.
		l.AfterFunc(2500*time.Millisecond, func() {
			bAt, stalled = b.got, dnProc.(*Process).Logged("dn-stalled")
		})
		l.AfterFunc(4*time.Second, func() {
			a.reading = true
			a.c.SetReadInterest(true)
		})
		l.AfterFunc(20*time.Second, func() {
			a.c.Close()
			b.c.Close()
		})
	})
	if bAt <= small || stalled != 0 {
		t.Errorf("at 2.5 s, half a second after the holder's client stopped reading: the waiting read had %d bytes of its answer (want all %d bytes of data and more), %d holders cut off as stalled (want 0)", bAt, small, stalled)
	}
	if a.got < big {
		t.Errorf("the pressed holder's client got %d bytes of its %d-byte read: want it parked and finished, not cut off", a.got, big)
	}
}

// A read parked on a handle that is then pinned (retired while only
// parked reads hold it) is looked at every stall timeout, as a holder
// is: once a read waits for a handle it is cut off at its next look, and
// the pinned handle's room goes to the waiter. Two reads of one block
// share the pool's one handle: r's client never reads, s's reads until
// 1.5 s. A read of another block waits from 0.1 s and presses at 0.6 s:
// r, its output stuck, parks; s, whose small packets go out whole while
// its client reads, keeps the handle; the waiter gives up at 1.1 s. Once
// s's client stops, s stalls holding the handle and, with no read
// waiting, does not park. A second read waits from 3.5 s: s's stall
// look cuts it off (3.7 s) and retires the handle, which r's parking
// then pins; the waiter's press (4 s) finds no holder; r's own look, a
// stall timeout after its previous one, cuts r off (4.3 s) and frees the
// room before the waiter's handle wait ends (4.5 s). Looked at only at
// its send timeout once parked (mutant bc0a895fd2, the parked test
// negated in watchSend, which survived 30,000 datanode check seeds), r
// keeps the pinned room until its send timeout, a minute, and at 4.4 s
// the waiter still has nothing.
func TestPinnedParkedReadIsCutOffAtItsNextStallLook(t *testing.T) {
	const big, small = 4 << 20, 10 << 10
	dcfg := model.DatanodeConfig{PoolMax: 2, Workers: 2, NoTransferTo: true, PacketSize: 4 << 10,
		StallTimeout: 2 * time.Second, HandleWait: time.Second, SendTimeout: time.Minute, ReadTimeout: time.Minute}
	blocks := [][]byte{model.BlockContent(1, big), model.BlockContent(2, small)}
	var r, s, waiter *rawReader
	stalled, got := -1, -1 // at 4.4 s
	datanodeWorld(t, dcfg, blocks, "readers", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		dnProc.(*Process).SimDisk().SetFaults(DiskFaults{SlowIO: 1, SlowDelay: 20 * time.Millisecond})
		dnProc.(*Process).SetSocketBuffers(16<<10, 0)
		pp.(*Process).SlowReader(16 << 10)
		l := pp.MainLoop()
		r = readFrom(w, pp, 1, big)
		r.reading = false
		r.c.SetReadInterest(false)
		s = readFrom(w, pp, 1, big)
		l.AfterFunc(100*time.Millisecond, func() { readFrom(w, pp, 2, small) })
		l.AfterFunc(1500*time.Millisecond, func() {
			s.reading = false
			s.c.SetReadInterest(false)
		})
		l.AfterFunc(3500*time.Millisecond, func() { waiter = readFrom(w, pp, 2, small) })
		l.AfterFunc(4400*time.Millisecond, func() {
			stalled, got = dnProc.(*Process).Logged("dn-stalled"), waiter.got
		})
		l.AfterFunc(10*time.Second, func() {
			r.c.Close()
			s.c.Close()
			waiter.c.Close()
		})
	})
	// (The answer's first bytes go out once the read has its handle.)
	if stalled != 2 || got == 0 {
		t.Errorf("at 4.4 s, 0.9 s after a read began to wait: %d reads cut off as stalled (want the holder and the pinned parked read), the waiting read had %d bytes of its answer (want some)", stalled, got)
	}
}
