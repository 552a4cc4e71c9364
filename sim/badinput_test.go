package sim

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"xceiver/model"
)

// Bad input reaching a datanode gets an error status on the wire and a
// clean close: never a panic, never a leaked fd, and other clients keep
// being served.

type rawResult struct {
	got    []byte
	closed bool // EOF or reset seen
}

// rawExchange sends payload to a datanode holding block 1 (8 KiB), reads
// until the datanode closes, then checks that the datanode is back to its
// baseline and still serves a normal read.
func rawExchange(t *testing.T, payload []byte, closeAfterSend bool, readLimit int) rawResult {
	t.Helper()
	var res rawResult
	baseline := 0
	content := model.BlockContent(1, 8192)
	var normal model.Result
	var dnProc model.Process
	_, dn := datanodeWorld(t, model.DatanodeConfig{Keepalive: time.Second}, [][]byte{content}, "raw", func(w *World, _ *model.Datanode, p, rp model.Process) {
		dnProc, baseline = p, p.FDs().Open
		buf := make([]byte, 1<<17)
		var c model.Conn
		sent := false
		finish := func() {
			c.Close()
			// Then a well-behaved client must still be served.
			cl, err := model.NewClient(rp, rp.MainLoop(), 1, model.ClientConfig{Datanode: "dn:50010", NoDelay: true, CacheCapacity: 1})
			if err != nil {
				w.Fail(err)
				return
			}
			cl.Read(1, 0, 100, 1000, func(r model.Result) {
				normal = r
				cl.Close()
			})
		}
		c, _ = rp.Dial("tcp", "dn:50010", rp.MainLoop(), func(ev model.Events) {
			if !sent && ev&model.Writable != 0 {
				sent = true
				c.SetWriteInterest(false)
				if len(payload) > 0 {
					if _, err := c.Write(payload); err != nil {
						w.Fail(err)
						return
					}
				}
				if closeAfterSend {
					finish()
					return
				}
			}
			for {
				n, err := c.Read(buf)
				res.got = append(res.got, buf[:n]...)
				if readLimit > 0 && len(res.got) >= readLimit {
					// Disconnect mid-stream.
					finish()
					return
				}
				if errors.Is(err, model.ErrWouldBlock) {
					return
				}
				if err != nil {
					res.closed = true
					finish()
					return
				}
			}
		})
		c.SetWriteInterest(true)
	})
	if normal.Err != nil || string(normal.Data) != string(content[100:1100]) {
		t.Errorf("a normal read after the bad input: %v (got %d bytes)", normal.Err, len(normal.Data))
	}
	if got := dnProc.FDs().Open; got != baseline {
		t.Errorf("datanode holds %d fds after the timeouts, baseline %d", got, baseline)
	}
	if dn.Conns() != 0 || dn.BuffersOut() != 0 || dn.Pool().InUse() != 0 {
		t.Errorf("datanode holds %d conns, %d buffers, %d handles in use", dn.Conns(), dn.BuffersOut(), dn.Pool().InUse())
	}
	return res
}

func wantErrorStatus(t *testing.T, res rawResult, want model.Status) {
	t.Helper()
	resp, _, err := model.DecodeResponse(res.got)
	if err != nil {
		t.Fatalf("no response decoded from %d bytes: %v", len(res.got), err)
	}
	if resp.Status != want {
		t.Errorf("status %v (%q), want %v", resp.Status, resp.Message, want)
	}
	if !res.closed {
		t.Errorf("datanode did not close the connection")
	}
}

func request(op model.Op, block, stamp uint64, off, n int64) []byte {
	tok := model.IssueToken(model.DefaultTokenKey, model.BlockToken{BlockID: block, GenStamp: stamp, Modes: model.ModeFor(op), Expiry: time.Hour})
	return model.AppendRequest(nil, model.Request{Op: op, BlockID: block, GenStamp: stamp, Offset: off, Length: n, ClientName: "raw", Token: tok})
}

func TestBadInputGarbage(t *testing.T) {
	wantErrorStatus(t, rawExchange(t, []byte("GET / HTTP/1.1\r\n\r\n"), false, 0), model.StatusErrorInvalid)
}

func TestBadInputUnknownOp(t *testing.T) {
	b := request(model.OpReadBlock, 1, 0, 0, 10)
	b[2] = 99
	wantErrorStatus(t, rawExchange(t, b, false, 0), model.StatusErrorUnsupported)
}

func TestBadInputOversizedLength(t *testing.T) {
	b := request(model.OpReadBlock, 1, 0, 0, 10)
	binary.BigEndian.PutUint32(b[3:], 1<<30)
	wantErrorStatus(t, rawExchange(t, b, false, 0), model.StatusErrorInvalid)
}

func TestBadInputWrongGenerationStamp(t *testing.T) {
	wantErrorStatus(t, rawExchange(t, request(model.OpReadBlock, 1, 1<<40, 0, 10), false, 0), model.StatusErrorInvalid)
}

func TestBadInputReadPastBlockEnd(t *testing.T) {
	wantErrorStatus(t, rawExchange(t, request(model.OpReadBlock, 1, 0, 8000, 500), false, 0), model.StatusErrorInvalid)
}

func TestBadInputMissingBlock(t *testing.T) {
	wantErrorStatus(t, rawExchange(t, request(model.OpReadBlock, 77, 0, 0, 10), false, 0), model.StatusErrorInvalid)
}

func TestBadInputCorruptWritePacket(t *testing.T) {
	data := []byte("hello, block")
	b := request(model.OpWriteBlock, 9, 0, 0, int64(len(data)))
	b = model.AppendPacket(b, model.PacketHeader{}, data, model.BytesPerChecksum)
	b[len(b)-1] ^= 0xff // flip a data byte after its checksum was computed
	b = model.AppendPacketHeader(b, model.PacketHeader{Offset: int64(len(data)), Seqno: 1, Last: true}, 0, model.BytesPerChecksum)
	wantErrorStatus(t, rawExchange(t, b, false, 0), model.StatusErrorChecksum)
}

func TestBadInputTruncatedRequestThenClose(t *testing.T) {
	b := request(model.OpReadBlock, 1, 0, 0, 10)
	rawExchange(t, b[:len(b)-3], true, 0)
}

func TestBadInputTruncatedWriteThenClose(t *testing.T) {
	data := make([]byte, 3000)
	b := request(model.OpWriteBlock, 9, 0, 0, int64(len(data)))
	b = model.AppendPacket(b, model.PacketHeader{}, data, model.BytesPerChecksum)
	rawExchange(t, b[:len(b)-100], true, 0)
}

func TestBadInputClientVanishesMidStream(t *testing.T) {
	res := rawExchange(t, request(model.OpReadBlock, 1, 0, 0, 8192), false, 100)
	if len(res.got) < 100 {
		t.Fatalf("got %d bytes before disconnecting", len(res.got))
	}
}

func TestBadInputWrongStatusAfterRead(t *testing.T) {
	// A read, then a malformed final status: the datanode closes instead
	// of keeping the connection.
	b := request(model.OpReadBlock, 1, 0, 0, 10)
	b = append(b, 0xff, 0xff)
	res := rawExchange(t, b, false, 0)
	if !res.closed {
		t.Errorf("datanode kept a connection whose final status was garbage")
	}
	if _, _, err := model.DecodeResponse(res.got); err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("the read's response did not decode: %v", err)
	}
}
