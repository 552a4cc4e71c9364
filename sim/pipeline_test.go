package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
)

// A client may send its next request without waiting for the answer to
// the one before: HDFS's DataXceiver reads ops in a loop from a buffered
// stream, so it serves whatever arrived together, in order. The datanode
// must serve the request it has already buffered when the op before it
// ends, without waiting for bytes that will never come. A write ends when
// its answer is out, outside the loop that took its input (process), so
// endOp must look at that input again itself: the read sent behind the
// write is what holds it to that. The reads' statuses, each sent with the
// next read, are consumed inside process's loop, which then serves the
// read after them. check's clients send each request on its own, so this
// test is what holds the datanode to either.
func TestPipelinedRequestsAreServed(t *testing.T) {
	type read struct{ off, n int64 }
	reads := []read{{0, 10}, {4000, 3000}, {100, 1}}
	written := []byte("a block written in one go")
	write := request(model.OpWriteBlock, 9, 0, 0, int64(len(written)))
	write = model.AppendPacket(write, model.PacketHeader{}, written, model.BytesPerChecksum)
	write = model.AppendPacketHeader(write, model.PacketHeader{Offset: int64(len(written)), Seqno: 1, Last: true}, 0, model.BytesPerChecksum)
	wroteOK := false
	content := model.BlockContent(1, 8192)
	var got []time.Duration // how long after its request each response had fully arrived
	var sentAt time.Duration
	closedEarly := false
	dcfg := model.DatanodeConfig{Keepalive: time.Second, ReadTimeout: 2 * time.Second, NoDelay: true}
	_, dn := datanodeWorld(t, dcfg, [][]byte{content}, "raw", func(w *World, _ *model.Datanode, _, rp model.Process) {
		buf := make([]byte, 1<<16)
		var in []byte
		var c model.Conn
		next := 0 // the read whose response is awaited
		var resp model.Response
		inResp := false
		covered := int64(0)
		send := func(b []byte) {
			if _, err := c.Write(b); err != nil {
				w.Fail(err)
			}
			sentAt = rp.MainLoop().Now()
		}
		// response takes a success's header off in; false: more bytes
		// are needed first (or the run failed).
		response := func(what string) (model.Response, bool) {
			r, n, err := model.DecodeResponse(in)
			if errors.Is(err, model.ErrNeedMore) {
				return r, false
			}
			if err != nil || r.Status != model.StatusSuccess {
				w.Fail(fmt.Errorf("%s: %v (status %v)", what, err, r.Status))
				return r, false
			}
			in = in[n:]
			return r, true
		}
		sent := false
		c, _ = rp.Dial("tcp", "dn:50010", rp.MainLoop(), func(ev model.Events) {
			if ev&model.Writable != 0 && !sent {
				sent = true
				c.SetWriteInterest(false)
				send(append(write, request(model.OpReadBlock, 1, 0, reads[0].off, reads[0].n)...))
			}
			for {
				n, err := c.Read(buf)
				in = append(in, buf[:n]...)
				if errors.Is(err, model.ErrWouldBlock) {
					break
				}
				if err != nil {
					closedEarly = next < len(reads)
					c.Close()
					return
				}
			}
			if !wroteOK {
				if _, wroteOK = response("the write's response"); !wroteOK {
					return
				}
			}
			for next < len(reads) {
				if !inResp {
					r, ok := response("a read's response")
					if !ok {
						return
					}
					resp, inResp, covered = r, true, r.FirstChunkOffset
				}
				p, n, err := model.DecodePacket(in, resp.BytesPerChecksum)
				if errors.Is(err, model.ErrNeedMore) {
					return
				}
				if err != nil || p.Offset != covered || string(p.Data) != string(content[p.Offset:p.Offset+int64(len(p.Data))]) {
					w.Fail(errors.New("a packet is not the block's"))
					return
				}
				in, covered = in[n:], covered+int64(len(p.Data))
				if !p.Last {
					continue
				}
				if r := reads[next]; resp.FirstChunkOffset > r.off || covered < r.off+r.n {
					w.Fail(errors.New("a response does not cover its read"))
					return
				}
				got = append(got, rp.MainLoop().Now()-sentAt)
				inResp = false
				next++
				// The status, and the next request with it.
				b := model.AppendStatus(nil, model.StatusChecksumOK)
				if next < len(reads) {
					b = append(b, request(model.OpReadBlock, 1, 0, reads[next].off, reads[next].n)...)
				}
				send(b)
				if next == len(reads) {
					c.Close()
					return
				}
			}
		})
		// (Nagle off at both ends, so no response waits on a
		// delayed ACK and a late one means the datanode waited.)
		if err := c.SetNoDelay(true); err != nil {
			w.Fail(err)
			return
		}
		c.SetWriteInterest(true)
	})
	if !wroteOK || closedEarly || len(got) != len(reads) {
		t.Fatalf("write answered: %v; %d of %d reads answered (the connection closed early: %v)", wroteOK, len(got), len(reads), closedEarly)
	}
	for i, d := range got {
		if d > 10*time.Millisecond {
			t.Errorf("response %d arrived %v after its request", i+1, d)
		}
	}
	if _, n, ok := dn.Store().Info(9); !ok || n != int64(len(written)) {
		t.Errorf("block 9: %d bytes (stored: %v), want %d", n, ok, len(written))
	}
	if dn.Conns() != 0 {
		t.Errorf("datanode still holds %d connections", dn.Conns())
	}
}
