package sim

import (
	"bytes"
	"testing"
	"time"

	"xceiver/model"
)

// writerBesideAStuckReader starts one reader stuck mid-packet on block 1
// (size bytes), so that the selector is never at rest, and a client on
// pp's main loop to write with; nil if either failed (the world is
// failed).
func writerBesideAStuckReader(w *World, dnProc, pp model.Process, size int) ([]model.Conn, *model.Client) {
	stuck := stuckReaders(w, dnProc, pp, 1, size)
	if stuck == nil {
		return nil, nil
	}
	cl, err := model.NewClient(pp, pp.MainLoop(), 1, model.ClientConfig{Datanode: "dn:50010"})
	if err != nil {
		w.Fail(err)
		return nil, nil
	}
	return stuck, cl
}

// A write's connection grows its input buffer to hold a packet (4 KiB
// doubled to 128 KiB for a 64 KiB one) and closes after its write. The
// selector keeps the grown buffers for the next write to grow into: when
// it kept only buffers at their first size, every write of a steady load
// allocated the whole doubling again (run rpc --mix 1:1 --file-size
// 65536: 2,575 buffers, 131 MB, a fifth of the datanode's CPU). One
// reader stays stuck mid-packet throughout, so the selector is never at
// rest; the client writes 30 blocks of 64 KiB one after another. From the
// 5th write on the datanode allocates one buffer a write, for the write's
// data (which it hands to the store; 6 a write before); once the writes stop,
// the trim drops the grown spares within two seconds, and when the
// selector has no connection left, at once.
func TestGrownInputBuffersOutliveAWrite(t *testing.T) {
	const writes = 30
	dcfg := model.DatanodeConfig{Selectors: 1, SendTimeout: time.Minute, StallTimeout: time.Minute, HandleWait: time.Minute}
	block := model.BlockContent(1, 1<<20)
	made := map[int]int{}
	grownAfter, grownIdle, grownRest, idleFirst := -1, -1, -1, -1
	datanodeWorld(t, dcfg, [][]byte{block}, "writer", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		stuck, cl := writerBesideAStuckReader(w, dnProc, pp, len(block))
		if cl == nil {
			return
		}
		l := pp.MainLoop()
		data := model.BlockContent(2, 64<<10)
		var write func(i int)
		write = func(i int) {
			made[i] = dnProc.(*Process).buffersMade
			if i == writes {
				_, grownAfter = dn.SpareInputBuffers()
				l.AfterFunc(2500*time.Millisecond, func() {
					idleFirst, grownIdle = dn.SpareInputBuffers()
					// Once more, then the stuck reader goes too.
					cl.Write(uint64(100+writes), data, func(r model.Result) {
						if r.Err != nil {
							t.Errorf("write: %v", r.Err)
						}
						stuck[0].Close()
						l.AfterFunc(10*time.Millisecond, func() {
							_, grownRest = dn.SpareInputBuffers()
							cl.Close()
						})
					})
				})
				return
			}
			cl.Write(uint64(100+i), data, func(r model.Result) {
				if r.Err != nil {
					t.Errorf("write %d: %v", i, r.Err)
				}
				write(i + 1)
			})
		}
		l.AfterFunc(100*time.Millisecond, func() { write(0) })
	})
	if n := made[writes] - made[5]; n > writes-5 {
		t.Errorf("the datanode allocated %d buffers for writes 5 to %d of a steady load (%.1f a write; %d for the first 5), want one a write (its data)", n, writes, float64(n)/float64(writes-5), made[5]-made[0])
	}
	if grownAfter <= 0 {
		t.Errorf("after %d writes the selector keeps %d grown input buffers, want some", writes, grownAfter)
	}
	if grownIdle != 0 {
		t.Errorf("2.5 s after the last write the selector keeps %d grown input buffers, want 0", grownIdle)
	}
	if idleFirst > 64 {
		t.Errorf("the selector keeps %d input buffers of their first size, want at most 64", idleFirst)
	}
	if grownRest != 0 {
		t.Errorf("with no connection left the selector keeps %d grown input buffers, want 0", grownRest)
	}
}

// A write's data buffer (64 KiB for a 64 KiB block) goes to the selector
// once the store has copied it, and the next write's data grows into it,
// as its input buffer does into the grown input buffers: a steady load of
// writes allocates no buffer a write (one, its data, before). Poisoned
// when given back, so a write whose data were still read after would
// store poison: every block reads back as written.
func TestWriteDataBuffersOutliveAWrite(t *testing.T) {
	const writes = 30
	dcfg := model.DatanodeConfig{Selectors: 1, SendTimeout: time.Minute, StallTimeout: time.Minute, HandleWait: time.Minute}
	block := model.BlockContent(1, 1<<20)
	made, stamps := map[int]int{}, map[int]uint64{}
	read := 0
	datanodeWorld(t, dcfg, [][]byte{block}, "writer", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		dnProc.(*Process).SetBufferFaults(0, true)
		stuck, cl := writerBesideAStuckReader(w, dnProc, pp, len(block))
		if cl == nil {
			return
		}
		l := pp.MainLoop()
		data := func(i int) []byte { return model.BlockContent(uint64(100+i), 64<<10) }
		var readBack func(i int)
		readBack = func(i int) {
			if i == writes {
				stuck[0].Close()
				cl.Close()
				return
			}
			cl.Read(uint64(100+i), stamps[i], 0, 64<<10, func(r model.Result) {
				if r.Err != nil {
					t.Errorf("read %d: %v", i, r.Err)
				} else if !bytes.Equal(r.Data, data(i)) {
					t.Errorf("block %d reads back other bytes than were written", 100+i)
				} else {
					read++
				}
				readBack(i + 1)
			})
		}
		var write func(i int)
		write = func(i int) {
			made[i] = dnProc.(*Process).buffersMade
			if i == writes {
				readBack(0)
				return
			}
			cl.Write(uint64(100+i), data(i), func(r model.Result) {
				if r.Err != nil {
					t.Errorf("write %d: %v", i, r.Err)
				}
				stamps[i] = r.Stamp
				write(i + 1)
			})
		}
		l.AfterFunc(100*time.Millisecond, func() { write(0) })
	})
	if n := made[writes] - made[5]; n != 0 {
		t.Errorf("the datanode allocated %d buffers for writes 5 to %d of a steady load (%.1f a write; %d for the first 5), want none", n, writes, float64(n)/float64(writes-5), made[5]-made[0])
	}
	if read != writes {
		t.Errorf("%d of %d blocks read back as written", read, writes)
	}
}
