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
