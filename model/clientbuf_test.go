package model

import (
	"testing"
)

// freedProc records the buffers a client declares freed (BufferFaults).
type freedProc struct {
	Process
	freed []int
}

func (p *freedProc) CPU(CPUWork, int)   {}
func (p *freedProc) Log(string, ...any) {}
func (p *freedProc) InFlight([]byte)    {}
func (p *freedProc) Freed(b []byte)     { p.freed = append(p.freed, len(b)) }

// scriptConn hands its bytes to reads, at most per at a time.
type scriptConn struct {
	fakeConn
	in  []byte
	per int
}

func (c *scriptConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, ErrWouldBlock
	}
	n := copy(p[:min(len(p), c.per)], c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *scriptConn) Err() error { return nil }

// A finished op declares freed the bytes of its input buffer its reads
// wrote, which a use after the return would find (poisoned in a sim run
// that poisons), not the whole buffer: a write's answer is a few bytes
// of a buffer of 80 KiB. It gives both its buffers back to the client.
func TestClientOpDeclaresFreedWhatItsReadsWrote(t *testing.T) {
	p := &freedProc{}
	cl := &Client{p: p, loop: &fakeLoop{}}
	answer := AppendResponse(nil, Response{Status: StatusSuccess, GenStamp: 7, BlockLength: 100})
	for _, per := range []int{len(answer), 3} {
		p.freed = nil
		var got *Result
		op := &clientOp{cl: cl, kind: OpWriteBlock, phase: opResponse, rec: -1,
			conn: &scriptConn{in: answer, per: per}, out: make([]byte, 0, 1000),
			done: func(r Result) { got = &r }}
		cl.ops++
		op.readInput()
		if got == nil || got.Err != nil || got.Stamp != 7 {
			t.Fatalf("answer read %d bytes at a time: result %+v, want success at stamp 7", per, got)
		}
		if len(p.freed) != 1 || p.freed[0] != len(answer) {
			t.Errorf("answer of %d bytes read %d at a time: declared freed %v, want [%d]", len(answer), per, p.freed, len(answer))
		}
		if op.out != nil || op.in != nil {
			t.Errorf("a finished op kept its buffers")
		}
	}
	if len(cl.bufs) != 1 || cap(cl.bufs[0].b) < MaxPacketLen {
		t.Errorf("the client keeps %d input buffers, want its one of %d bytes or more back", len(cl.bufs), MaxPacketLen)
	}
	// The output buffers came back too, for the next ops to encode into.
	if len(cl.outs) != 2 || cap(cl.takeOut()) != 1000 {
		t.Errorf("the client keeps %d output buffers, want the two ops' back", len(cl.outs))
	}
}

func (c *scriptConn) Write(p []byte) (int, error) { return len(p), nil }

// readAnswer is a datanode's whole answer to a read of block 1's first n
// bytes: the response, one packet, the empty last one.
func readAnswer(data []byte) []byte {
	b := AppendResponse(nil, Response{Status: StatusSuccess, ChecksumType: ChecksumCRC32C, BytesPerChecksum: BytesPerChecksum, GenStamp: 7, BlockLength: int64(len(data))})
	var seq int64
	if len(data) > 0 { // (as the datanode sends it: no empty packet before the last)
		b = AppendPacket(b, PacketHeader{Offset: 0, Seqno: 0}, data, BytesPerChecksum)
		seq++
	}
	return AppendPacketHeader(b, PacketHeader{Offset: int64(len(data)), Seqno: seq, Last: true}, 0, BytesPerChecksum)
}

// ReadInto's result is the caller's buffer when it holds the read, and a
// buffer of the client's own when it does not; either holds the bytes.
func TestReadIntoFillsTheCallersBuffer(t *testing.T) {
	data := []byte("the block's first bytes, read into a buffer the caller keeps")
	for _, size := range []int{len(data), 2 * len(data), len(data) - 1} {
		cl := &Client{p: &freedProc{}, loop: &fakeLoop{}}
		buf := make([]byte, size)
		var got *Result
		op := &clientOp{cl: cl, kind: OpReadBlock, block: 1, n: int64(len(data)), into: buf, phase: opResponse, rec: -1,
			conn: &scriptConn{in: readAnswer(data), per: 1 << 20}, done: func(r Result) { got = &r }}
		cl.ops++
		op.readInput()
		if got == nil || got.Err != nil || string(got.Data) != string(data) {
			t.Fatalf("buffer of %d bytes: result %+v, want the %d bytes", size, got, len(data))
		}
		if inBuf := &got.Data[0] == &buf[0]; inBuf != (size >= len(data)) {
			t.Errorf("buffer of %d bytes for %d: data in the caller's buffer %v", size, len(data), inBuf)
		}
	}
}

// The client keeps at most four output buffers for later ops, none over
// 1 MiB: a burst of ops, or one write of a whole block, must not leave
// the client holding that memory for good.
func TestClientKeepsFewSmallOutputBuffers(t *testing.T) {
	cl := &Client{}
	for range 6 {
		cl.putOut(make([]byte, 100, 4096))
	}
	if len(cl.outs) != 4 {
		t.Fatalf("the client keeps %d output buffers after six came back, want 4", len(cl.outs))
	}
	cl.outs = cl.outs[:1]
	cl.putOut(make([]byte, 0, 1<<20+1))
	if len(cl.outs) != 1 {
		t.Fatalf("the client kept an output buffer of more than 1 MiB")
	}
	cl.putOut(make([]byte, 0, 1<<20))
	if len(cl.outs) != 2 || len(cl.outs[1]) != 0 {
		t.Fatalf("the client did not keep, emptied, an output buffer of 1 MiB (%d kept)", len(cl.outs))
	}
}

// A plain Read (no buffer given) of nothing succeeds with empty, non-nil
// data, as before ReadInto: a nil buffer is not a buffer that holds it.
func TestReadOfNothingHasEmptyData(t *testing.T) {
	cl := &Client{p: &freedProc{}, loop: &fakeLoop{}}
	var got *Result
	op := &clientOp{cl: cl, kind: OpReadBlock, block: 1, n: 0, phase: opResponse, rec: -1,
		conn: &scriptConn{in: readAnswer(nil), per: 1 << 20}, done: func(r Result) { got = &r }}
	cl.ops++
	op.readInput()
	if got == nil || got.Err != nil || got.Data == nil || len(got.Data) != 0 {
		t.Fatalf("read of 0 bytes: result %+v, want success with empty, non-nil data", got)
	}
}

// compactInput moves what is left of a buffer's input to its front, so
// the next read has all the room after it; input at the front already
// stays as it is, uncopied.
func TestCompactInput(t *testing.T) {
	buf := make([]byte, 10, 16)
	copy(buf, "0123456789")
	if got := compactInput(buf, buf[:10]); &got[0] != &buf[0] || string(got) != "0123456789" || cap(got) != 16 {
		t.Errorf("input at the front: %q (cap %d)", got, cap(got))
	}
	if got := compactInput(buf, buf[7:10]); &got[0] != &buf[0] || string(got) != "789" || cap(got) != 16 {
		t.Errorf("input at 7: %q (cap %d), want 789 at the front", got, cap(got))
	}
	if got := compactInput(buf, buf[10:10]); len(got) != 0 || cap(got) != 16 {
		t.Errorf("all taken: %d bytes, cap %d; want none and the whole room", len(got), cap(got))
	}
	if got := compactInput(nil, nil); got != nil {
		t.Errorf("no buffer: %q", got)
	}
}

// A failed op's outcome is unknown only for a write (or other change)
// whose request went out whole: the datanode may have applied it. A read
// changes nothing, and a change whose request was cut short cannot have
// been applied; the linearizability check treats an unknown op as one
// that may have happened, so calling those unknown would weaken it.
func TestClientOpFailureIsUnknownOnlyForAChangeSentWhole(t *testing.T) {
	for _, tc := range []struct {
		kind    Op
		sentAll bool
		want    bool
	}{
		{OpReadBlock, false, false}, {OpReadBlock, true, false},
		{OpWriteBlock, false, false}, {OpWriteBlock, true, true},
	} {
		cl := &Client{p: &freedProc{}, loop: &fakeLoop{}}
		var got *Result
		op := &clientOp{cl: cl, kind: tc.kind, sentAll: tc.sentAll, rec: -1, conn: &scriptConn{},
			done: func(r Result) { got = &r }}
		cl.ops++
		op.fail(ErrTimedOut, true)
		if got == nil || got.Unknown != tc.want {
			t.Errorf("op %v failed, its request sent whole %v: result %+v, want Unknown %v", tc.kind, tc.sentAll, got, tc.want)
		}
	}
}
