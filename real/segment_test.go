package real

import (
	"io"
	"testing"
	"time"

	"xceiver/model"
)

// A memfd segment passed over a Unix socket and mapped by the receiver is
// the same memory: a store on one side is a load on the other. The fds
// and mappings are accounted and, once closed and unmapped, gone.
func TestSegmentSharedAcrossProcesses(t *testing.T) {
	w := newWorld(t)
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen("unix", "dn_socket", 4, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	seg, f, err := srv.NewSegment("shm", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if st := srv.FDs(); st.ByKind[model.FDSegment] != 1 || st.Segments != 1 {
		t.Fatalf("creator after NewSegment: %+v", st)
	}
	seg.Store(64, 42)
	acceptAll(srv, ln, func(c model.Conn) {
		c.SetHandler(srv.MainLoop(), func(ev model.Events) {
			var b [8]byte
			n, err := c.Read(b[:])
			if err == io.EOF {
				c.Close()
				return
			}
			if n == 1 && b[0] == 'r' {
				seg.Store(64, 7) // the receiver asks for a second value
				c.Write([]byte{'s'})
			}
		})
		if _, err := c.SendFDs([]byte{'!'}, []model.File{f}); err != nil {
			failf(srv, "SendFDs: %v", err)
		}
		f.Close()
	})
	var first, second uint64
	var mapped model.FDStats
	var cseg model.Segment
	cl := spawn(t, w, "cl", 0, func(p model.Process) {
		var c model.Conn
		c, _ = p.Dial("unix", "dn_socket", p.MainLoop(), func(ev model.Events) {
			if ev&model.Readable == 0 {
				return
			}
			b := make([]byte, 8)
			n, files, err := c.ReadFDs(b)
			if err != nil || n != 1 {
				failf(p, "ReadFDs: %d, %v", n, err)
				return
			}
			if b[0] == 's' {
				second = cseg.Load(64)
				if err := cseg.Unmap(); err != nil {
					failf(p, "unmap: %v", err)
				}
				c.Close()
				p.MainLoop().AfterFunc(20*time.Millisecond, p.World().Stop)
				return
			}
			if len(files) != 1 {
				failf(p, "%d files", len(files))
				return
			}
			cseg, err = p.MapSegment(files[0], 4096)
			if err != nil {
				failf(p, "map: %v", err)
				return
			}
			files[0].Close()
			mapped = p.FDs()
			first = cseg.Load(64)
			c.Write([]byte{'r'})
		})
	})
	run(t, w, 5*time.Second)
	if first != 42 || second != 7 {
		t.Errorf("receiver loaded %d then %d, want 42 then 7", first, second)
	}
	if mapped.Segments != 1 || mapped.ByKind[model.FDPassed] != 0 {
		t.Errorf("receiver with the segment mapped and its fd closed: %+v", mapped)
	}
	if st := cl.FDs(); st.Segments != 0 {
		t.Errorf("receiver after unmap: %+v", st)
	}
	if err := seg.Unmap(); err != nil || srv.FDs().Segments != 0 || seg.Load(64) != 0 {
		t.Errorf("creator unmap: %v %+v", err, srv.FDs())
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}
}
