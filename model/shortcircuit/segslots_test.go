package shortcircuit_test

import (
	"bytes"
	"testing"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// A segment holds SegmentSize/SlotSize slots (64): a client that caches
// one more replica than that, each holding a slot, asks the datanode for
// a second segment, and every read is served from passed fds.
func TestSegmentHoldsSixtyFourSlots(t *testing.T) {
	const blocks = shortcircuit.SegmentSize/shortcircuit.SlotSize + 1
	var segments, local int
	var st shortcircuit.SharedStats
	writeBlocks := func(p model.Process) error {
		store := model.NewBlockStore(p.Disk(), "data")
		for b := uint64(1); b <= blocks; b++ {
			if _, err := store.Write(b, model.BlockContent(b, 600)); err != nil {
				return err
			}
		}
		return nil
	}
	cappedWorld(t, 0, shortcircuit.ServerConfig{}, writeBlocks, func(w *sim.World, p model.Process, dn *model.Datanode, srv *shortcircuit.Server) {
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			loop := cp.MainLoop()
			sh, err := shortcircuit.NewShared(cp, shortcircuit.SharedConfig{Cache: shortcircuit.CacheConfig{Shards: 1, Capacity: 2 * blocks}})
			if err != nil {
				w.Fail(err)
				return
			}
			cl, err := shortcircuit.NewClient(cp, loop, 0, sh, shortcircuit.ClientConfig{Path: "/run/dn_socket", TCP: model.ClientConfig{Datanode: dn.Addr(), NoDelay: true}})
			if err != nil {
				w.Fail(err)
				return
			}
			var read func(b uint64)
			read = func(b uint64) {
				if b > blocks {
					sh.Stats(loop, func(s shortcircuit.SharedStats) {
						st = s
						p.MainLoop().Post(func() { segments = srv.Stats().Segments })
					})
					return
				}
				cl.ReadVia(b, 0, 0, 100, func(r model.Result, viaFDs bool) {
					if r.Err == nil && viaFDs && bytes.Equal(r.Data, model.BlockContent(b, 600)[:100]) {
						local++
					}
					read(b + 1)
				})
			}
			read(1)
		})
	})
	if local != blocks || segments != 2 || st.Segments != 2 || st.SlotsAllocated != blocks {
		t.Errorf("%d of %d reads from passed fds, %d segments passed, client stats %+v; want every read local, 2 segments, %d slots", local, blocks, segments, st, blocks)
	}
}
