package real

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
)

// A client that sends garbage, or vanishes mid-request, gets an error
// status or a clean close; the datanode keeps serving other clients and
// leaks no fd (the world's Close checks /proc/self/fd and goroutines).
func TestDatanodeSurvivesBadClients(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	content := model.BlockContent(1, 64<<10)
	var dn *model.Datanode
	var dnProc model.Process
	var baseline int
	var garbageStatus model.Status = 999
	var normal model.Result
	_, err = w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dnProc = p
		store := model.NewBlockStore(p.Disk(), "data")
		if _, err := store.Write(1, content); err != nil {
			w.Fail(err)
			return
		}
		dn, err = model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "127.0.0.1:0", Keepalive: 100 * time.Millisecond, PoolIdle: 50 * time.Millisecond})
		if err != nil {
			w.Fail(err)
			return
		}
		baseline = p.FDs().Open
		addr := dn.Addr()
		w.Spawn("bad", model.ProcessConfig{}, func(bp model.Process) {
			// One client vanishes mid-request; another sends garbage.
			half, err := bp.Dial("tcp", addr, bp.MainLoop(), func(model.Events) {})
			if err != nil {
				w.Fail(err)
				return
			}
			req := model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: 1, Length: 10})
			var c model.Conn
			var got []byte
			buf := make([]byte, 4096)
			sent := false
			c, err = bp.Dial("tcp", addr, bp.MainLoop(), func(ev model.Events) {
				if !sent && ev&model.Writable != 0 {
					sent = true
					c.SetWriteInterest(false)
					c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
					half.Write(req[:5])
					half.Close()
				}
				for {
					n, err := c.Read(buf)
					got = append(got, buf[:n]...)
					if errors.Is(err, model.ErrWouldBlock) {
						return
					}
					if err != nil {
						c.Close()
						if resp, _, derr := model.DecodeResponse(got); derr == nil {
							garbageStatus = resp.Status
						}
						cl, cerr := model.NewClient(bp, bp.MainLoop(), 1, model.ClientConfig{Datanode: addr, NoDelay: true})
						if cerr != nil {
							w.Fail(cerr)
							return
						}
						cl.Read(1, 0, 1000, 5000, func(r model.Result) {
							normal = r
							cl.Close()
							// Past the keep-alive, every connection is gone.
							bp.MainLoop().AfterFunc(300*time.Millisecond, w.Stop)
						})
						return
					}
				}
			})
			if err != nil {
				w.Fail(err)
				return
			}
			c.SetWriteInterest(true)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if garbageStatus != model.StatusErrorInvalid {
		t.Errorf("garbage got status %v, want %v", garbageStatus, model.StatusErrorInvalid)
	}
	if normal.Err != nil || string(normal.Data) != string(content[1000:6000]) {
		t.Errorf("normal read after bad clients: %v, %d bytes", normal.Err, len(normal.Data))
	}
	if got := dnProc.FDs().Open; got != baseline {
		t.Errorf("datanode holds %d fds, baseline %d", got, baseline)
	}
	if dn.Conns() != 0 {
		t.Errorf("datanode holds %d connections", dn.Conns())
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}
	// Stopping the datanode leaves its process with its main loop only.
	dnProc.MainLoop().Post(func() { dn.StopThen(w.Stop) })
	if err := w.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := dnProc.FDs().Open; got != 2 {
		t.Errorf("datanode process holds %d fds after Stop, want its main loop's 2", got)
	}
	if now, _ := dnProc.Threads(); now != 1 {
		t.Errorf("%d threads after Stop, want 1", now)
	}
	if err := w.Close(); err != nil {
		t.Errorf("leak after close: %v", err)
	}
}
