package shortcircuit_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
)

// rogueExchange sends b on a fresh domain connection from p, and a
// millisecond later sends the receipt if the answer asks for one (closing
// the fds it got), then calls then with the answer, leaving the
// connection open.
func rogueExchange(p model.Process, path string, b []byte, then func(shortcircuit.Response)) {
	rawExchange(p, path, b, time.Millisecond, func(r rawResult, c model.Conn) {
		for _, f := range r.files {
			f.Close()
		}
		resp, _, err := shortcircuit.DecodeResponse(r.got)
		if err != nil {
			p.World().Fail(fmt.Errorf("rogue's answer: %w", err))
			return
		}
		if resp.Receipt && !r.closed {
			c.Write([]byte{shortcircuit.ReceiptByte})
		}
		then(resp)
	})
}

// A slot vouches for the replica it was registered for, not for whatever
// the datanode registered in it last. The client caches block 1 in slot
// 0 of its segment; block 1 is replaced, so the datanode clears the slot.
// A local user who has learnt the segment's id then releases slot 0 and
// asks for block 2's fds in it, which sets the slot valid again. The
// client's next read of block 1 must not take that for its replica: the
// slot names block 2. Trusting the valid bit alone, it read block 1's old
// bytes through its cached fds.
func TestForgedSlotDoesNotRevalidateAReplica(t *testing.T) {
	w := simWorld()
	var second []byte
	var secondLocal bool
	var released, granted model.Status
	newData := model.BlockContent(77, blockLen)
	startEnv(t, w, "dn:50010", "/run/dn_socket", shortcircuit.SharedConfig{}, shortcircuit.ClientConfig{}, func(e *env) {
		steps(
			func(next func()) {
				e.cl.ReadVia(1, 0, 0, 512, func(model.Result, bool) { next() })
			},
			e.replaceStep(1, newData),
			func(next func()) {
				shm := shortcircuit.SegmentIDs(e.sh)[0]
				e.w.Spawn("rogue", model.ProcessConfig{}, func(rp model.Process) {
					rel := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpReleaseSlot, ShmID: shm, Slot: 0})
					rogueExchange(rp, "/run/dn_socket", rel, func(resp shortcircuit.Response) {
						released = resp.Status
						rogueExchange(rp, "/run/dn_socket", fdsReq(2, 0, shm, 0, goodToken(2, 0)), func(resp shortcircuit.Response) {
							granted = resp.Status
							e.cp.MainLoop().AfterFunc(time.Millisecond, next)
						})
					})
				})
			},
			func(next func()) {
				e.cl.ReadVia(1, 0, 0, 512, func(r model.Result, local bool) {
					second, secondLocal = r.Data, local
					e.w.Stop()
				})
			},
		)
	})
	if released != model.StatusSuccess || granted != model.StatusSuccess {
		t.Fatalf("the rogue's release answered %v and its request for block 2's fds in the slot %v: want both granted (the case no longer sets the slot valid for another block)", released, granted)
	}
	if !bytes.Equal(second, newData[:512]) {
		t.Errorf("block 1 read after its replace (local %v) returned the old bytes %v: the slot a rogue made valid for block 2 was taken for block 1's", secondLocal, bytes.Equal(second, model.BlockContent(1, blockLen)[:512]))
	}
}
