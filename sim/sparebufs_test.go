package sim

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
)

// stuckReaders dials n readers that each ask for block 1 (size bytes)
// and read nothing through a 4 KiB receive buffer, against a datanode
// whose send buffer is 16 KiB: each stays mid-packet with a packet buffer
// lent. nil if a dial failed (the world is failed).
func stuckReaders(w *World, dnProc, pp model.Process, n, size int) []model.Conn {
	dnProc.(*Process).SetSocketBuffers(16<<10, 0)
	pp.(*Process).SlowReader(4096)
	conns := make([]model.Conn, 0, n)
	for i := 0; i < n; i++ {
		c := sendAndIgnore(w, pp, request(model.OpReadBlock, 1, 0, 0, int64(size)))
		if c == nil {
			return nil
		}
		conns = append(conns, c)
	}
	return conns
}

// A selector keeps the packet buffers its connections give back, but not
// those that go unused. 150 readers ask for a 1 MiB block and read
// nothing (a 4 KiB receive buffer, the datanode's send buffer 16 KiB), so
// each stays mid-packet with a buffer lent. At 1 s, 100 of them close:
// their buffers are kept for reuse while 50 are still lent, and a second
// after the first went unused the trim leaves 64. At 3 s the rest close:
// with no connection left the spares drop to 64 at once (114 were kept until the
// trim's timer came round, which outlived the connections). Kept without bound, all 150 stayed for the datanode's
// life.
func TestSpareBuffersAreBounded(t *testing.T) {
	const readers = 150
	dcfg := model.DatanodeConfig{Selectors: 1, PoolMax: 2 * readers, MaxConns: 4 * readers, SendTimeout: time.Minute,
		StallTimeout: time.Minute, HandleWait: time.Minute}
	block := model.BlockContent(1, 1<<20)
	peak := 0
	spare := map[time.Duration]int{}
	datanodeWorld(t, dcfg, [][]byte{block}, "readers", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		conns := stuckReaders(w, dnProc, pp, readers, len(block))
		if conns == nil {
			return
		}
		l := pp.MainLoop()
		l.AfterFunc(time.Second, func() {
			peak = dn.BuffersOut()
			for _, c := range conns[:100] {
				c.Close()
			}
		})
		for _, at := range []time.Duration{1500 * time.Millisecond, 2500 * time.Millisecond, 3500 * time.Millisecond} {
			l.AfterFunc(at, func() { spare[at] = dn.SpareBuffers() })
		}
		l.AfterFunc(3*time.Second, func() {
			for _, c := range conns[100:] {
				c.Close()
			}
		})
	})
	if peak < readers {
		t.Fatalf("%d packet buffers lent with %d readers stuck mid-packet: want one each (the test no longer fills the free list)", peak, readers)
	}
	want := map[time.Duration]int{1500 * time.Millisecond: 100, 2500 * time.Millisecond: 64, 3500 * time.Millisecond: 64}
	for at, n := range want {
		if spare[at] != n {
			t.Errorf("at %v the selector keeps %d spare buffers, want %d", at, spare[at], n)
		}
	}
}

// A selector whose connections stay open keeps its spares when its lent
// count falls to zero: a busy reactor's lent count does so between
// bursts, and dropping the spares there made each burst allocate its
// buffers again (bench hdfs-918 in sim: 775 MB/s fell to 693). 150
// readers stuck mid-packet hold a buffer each; at 1 s they read their
// blocks to the end and stay connected. When the last buffer comes back
// all 150 are spare, and the trim leaves 64 once they have gone unused a
// second.
func TestSparesOutliveALentCountOfZero(t *testing.T) {
	const readers = 150
	dcfg := model.DatanodeConfig{Selectors: 1, PoolMax: 2 * readers, MaxConns: 4 * readers, SendTimeout: time.Minute,
		StallTimeout: time.Minute, HandleWait: time.Minute, Keepalive: time.Minute}
	block := model.BlockContent(1, 1<<20)
	peak, atZero, later := 0, -1, -1
	var zeroAt time.Duration
	datanodeWorld(t, dcfg, [][]byte{block}, "readers", func(w *World, dn *model.Datanode, dnProc, pp model.Process) {
		conns := stuckReaders(w, dnProc, pp, readers, len(block))
		if conns == nil {
			return
		}
		l := pp.MainLoop()
		l.AfterFunc(time.Second, func() {
			peak = dn.BuffersOut()
			buf := make([]byte, 64<<10)
			for _, c := range conns {
				c.SetHandler(l, func(model.Events) {
					for {
						n, err := c.Read(buf)
						if err != nil && !errors.Is(err, model.ErrWouldBlock) {
							c.Close() // the datanode's keep-alive ran out
						}
						if n == 0 || err != nil {
							return
						}
					}
				})
				c.SetReadInterest(true)
			}
			var watch func()
			watch = func() {
				if dn.BuffersOut() > 0 {
					l.AfterFunc(time.Millisecond, watch)
					return
				}
				atZero, zeroAt = dn.SpareBuffers(), l.Now()
				l.AfterFunc(2*time.Second, func() { later = dn.SpareBuffers() })
			}
			l.AfterFunc(time.Millisecond, watch)
		})
	})
	if peak < readers {
		t.Fatalf("%d packet buffers lent with %d readers stuck mid-packet: want one each", peak, readers)
	}
	if atZero != readers {
		t.Errorf("at %v, with none lent and %d connections open, the selector keeps %d spare buffers, want %d", zeroAt, readers, atZero, readers)
	}
	if later != 64 {
		t.Errorf("2 s after the last buffer came back the selector keeps %d spares, want 64", later)
	}
}
