package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// rawReader asks for a read over a raw connection and takes its answer
// apart as it comes: the response, then the packets, counting their data
// until the last; it reads only while reading is on.
type rawReader struct {
	c       model.Conn
	req     []byte
	in      []byte // read and not yet decoded
	resp    *model.Response
	data    int  // bytes of packet data
	done    bool // the last packet arrived
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
		r.in = append(r.in, b[:n]...)
		r.decode()
		if err != nil {
			if err != model.ErrWouldBlock {
				r.c.SetReadInterest(false)
			}
			return
		}
	}
}

// decode takes the response and whole packets off in.
func (r *rawReader) decode() {
	if r.resp == nil {
		resp, n, err := model.DecodeResponse(r.in)
		if err != nil {
			return
		}
		r.resp, r.in = &resp, r.in[n:]
	}
	for !r.done {
		pkt, n, err := model.DecodePacket(r.in, model.BytesPerChecksum)
		if err != nil {
			return
		}
		r.data += len(pkt.Data)
		r.done = pkt.Last
		r.in = r.in[n:]
	}
}

// whole reports whether r has read a successful answer of size bytes of
// data to its end.
func (r *rawReader) whole(size int) bool {
	return r.resp != nil && r.resp.Status == model.StatusSuccess && r.done && r.data == size
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
// gives its handle back at its next packet that does not go out whole,
// not only the holders whose output is stuck at the moment of the press.
// A read whose disk is slow holds its handle mostly while a worker reads
// its next packet, nothing pending; pressed then (at 1.5 s), it must
// still park at its next partial send, its client's small window full
// for a moment (the contended flag), and not hold the handle for the
// rest of its read, 16 MiB at 20 ms a disk read (mutant f14c975e18,
// which survived 30,000 check seeds: the waiting read then had nothing
// at 1.7 s). Parked, it takes its replica again and finishes.
func TestReadPressedBetweenPacketsParksAtItsNextPartialSend(t *testing.T) {
	const big, small = 16 << 20, 100 << 10
	dcfg := model.DatanodeConfig{PoolMax: 2, Workers: 1, NoTransferTo: true,
		StallTimeout: time.Second, HandleWait: 10 * time.Second, SendTimeout: time.Minute, ReadTimeout: time.Minute}
	var a, b *rawReader
	bWhole, bData := false, 0 // at 1.7 s
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
		l.AfterFunc(1700*time.Millisecond, func() { bWhole, bData = b.whole(small), b.data })
		l.AfterFunc(30*time.Second, func() {
			a.c.Close()
			b.c.Close()
		})
	})
	if !bWhole {
		t.Errorf("at 1.7 s, 0.2 s after the press: the waiting read had not its whole answer (%d bytes of data), want all %d", bData, small)
	}
	if !a.whole(big) {
		t.Errorf("the pressed holder's client got %d bytes of data of its %d-byte read: want it parked and finished", a.data, big)
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
	const big, small = 4 << 20, 4 << 10
	dcfg := model.DatanodeConfig{PoolMax: 2, Workers: 2, NoTransferTo: true, PacketSize: 4 << 10,
		StallTimeout: 2 * time.Second, HandleWait: time.Second, SendTimeout: time.Minute, ReadTimeout: time.Minute}
	blocks := [][]byte{model.BlockContent(1, big), model.BlockContent(2, small)}
	var r model.Conn
	var s, waiter *rawReader
	stalled, whole, data := -1, false, 0 // at 4.4 s
	datanodeWorld(t, dcfg, blocks, "readers", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		dnProc.(*Process).SimDisk().SetFaults(DiskFaults{SlowIO: 1, SlowDelay: 20 * time.Millisecond})
		dnProc.(*Process).SetSocketBuffers(16<<10, 0)
		pp.(*Process).SlowReader(16 << 10)
		l := pp.MainLoop()
		r = sendAndIgnore(w, pp, request(model.OpReadBlock, 1, 0, 0, big))
		s = readFrom(w, pp, 1, big)
		l.AfterFunc(100*time.Millisecond, func() { readFrom(w, pp, 2, small) })
		l.AfterFunc(1500*time.Millisecond, func() {
			s.reading = false
			s.c.SetReadInterest(false)
		})
		l.AfterFunc(3500*time.Millisecond, func() { waiter = readFrom(w, pp, 2, small) })
		l.AfterFunc(4400*time.Millisecond, func() {
			stalled, whole, data = dnProc.(*Process).Logged("dn-stalled"), waiter.whole(small), waiter.data
		})
		l.AfterFunc(10*time.Second, func() {
			r.Close()
			s.c.Close()
			waiter.c.Close()
		})
	})
	if stalled != 2 || !whole {
		t.Errorf("at 4.4 s, 0.9 s after a read began to wait: %d reads cut off as stalled (want the holder and the pinned parked read), the waiting read's whole answer %v (%d bytes of data of %d)", stalled, whole, data, small)
	}
}
