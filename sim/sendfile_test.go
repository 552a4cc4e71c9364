package sim

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// sendfileRead runs sequential 64 KiB reads of a 1 MiB block with the
// datanode's send buffer at sndbuf (0: the default) and returns the result
// and the datanode process's modelled CPU.
func sendfileRead(t *testing.T, noTransferTo bool, sndbuf int, bugs model.DatanodeBugs) (*model.ReadResult, time.Duration) {
	t.Helper()
	w := New(DefaultConfig(7))
	s := model.DefaultReadScenario()
	s.Clients, s.Ops, s.Blocks, s.BlockSize, s.ReadSize, s.Pattern = 1, 32, 2, 1<<20, 64<<10, "sequential"
	s.Server.NoTransferTo = noTransferTo
	s.Server.Bugs = bugs
	var dnp *Process
	s.Observe = func(dn *model.Datanode, _ []*model.Client) {
		dnp = dn.Process().(*Process)
		if sndbuf > 0 {
			dnp.SetSocketBuffers(sndbuf, 0)
		}
	}
	res, err := model.RunRead(w, s, time.Hour)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, dnp.CPUTime()
}

// transferTo takes both of a read's data copies out of the datanode (the
// pread into a buffer and the write out of it): with the hand-set costs
// (no per-KiB stack cost either way) its CPU falls by two copies of the
// bytes sent, less the socket calls a packet sent in two parts adds, and
// the data still verifies.
func TestTransferToSendsWithoutCopies(t *testing.T) {
	cp, cpuCopy := sendfileRead(t, true, 0, model.DatanodeBugs{})
	zc, cpuZC := sendfileRead(t, false, 0, model.DatanodeBugs{})
	for _, r := range []*model.ReadResult{cp, zc} {
		if r.Errors != 0 || r.Mismatches != 0 || r.BytesVerified != 32*64<<10 {
			t.Fatalf("%d errors (%s), %d mismatches, %d bytes verified", r.Errors, r.FirstError, r.Mismatches, r.BytesVerified)
		}
	}
	copies := 2 * time.Duration(int64(DefaultCPUConfig().CopyPerKB)*(32*64))
	saved := cpuCopy - cpuZC
	t.Logf("datanode CPU: copying %v, transferTo %v, saved %v (two copies: %v)", cpuCopy, cpuZC, saved, copies)
	if saved < copies*8/10 || saved > copies {
		t.Errorf("transferTo saved %v of datanode CPU, want about two copies of the data, %v", saved, copies)
	}
}

// Under a small send buffer each packet's sendfile is partial; the rest
// must go from where the last call stopped. With the offset left where
// the packet's data began the client gets the packet's first bytes again,
// which its checksums catch.
func TestPartialSendfileAdvancesTheOffset(t *testing.T) {
	res, _ := sendfileRead(t, false, 4096, model.DatanodeBugs{})
	if res.Errors != 0 || res.Mismatches != 0 || res.BytesVerified != 32*64<<10 {
		t.Fatalf("%d errors (%s), %d mismatches, %d bytes verified", res.Errors, res.FirstError, res.Mismatches, res.BytesVerified)
	}
	bug, _ := sendfileRead(t, false, 4096, model.DatanodeBugs{SendfileOffsetStuck: true})
	t.Logf("offset stuck: %d errors (first: %s), %d mismatches", bug.Errors, bug.FirstError, bug.Mismatches)
	if bug.Errors == 0 && bug.Mismatches == 0 {
		t.Error("a datanode that does not advance the offset after a partial sendfile went unnoticed")
	}
	if bug.Errors > 0 && !strings.Contains(bug.FirstError, "checksum error") {
		t.Errorf("first error %q is not a checksum error", bug.FirstError)
	}
}

// fileServer spawns "srv": it writes data into its file "f", listens on
// srv:1, and hands its first connection, with the file, to serve.
func fileServer(t *testing.T, w *World, data []byte, serve func(p model.Process, f model.File, c model.Conn)) *Process {
	t.Helper()
	srv, err := w.Spawn("srv", model.ProcessConfig{}, func(p model.Process) {
		f, err := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDBlockFile)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteAt(data, 0)
		ln, err := p.Listen("tcp", "srv:1", 4, p.MainLoop())
		if err != nil {
			t.Error(err)
			return
		}
		ln.SetHandler(func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetHandler(p.MainLoop(), func(model.Events) {})
			serve(p, f, c)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv.(*Process)
}

// Disk.Sendfile sends what the send buffer has room for, fails like a
// write on a full socket (a peer that reads nothing, with a small receive
// buffer), and reports the end of the file, which alone counts as failing
// to read it (SendfileErrs).
func TestDiskSendfilePartialAndFull(t *testing.T) {
	w := New(DefaultConfig(1))
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte(i)
	}
	var sent []int
	var full, eof error
	srv := fileServer(t, w, data, func(p model.Process, f model.File, c model.Conn) {
		off := int64(1000)
		for {
			n, err := p.Disk().Sendfile(c, f, off, len(data))
			if err != nil {
				full = err
				break
			}
			sent = append(sent, n)
			off += int64(n)
		}
		_, eof = p.Disk().Sendfile(c, f, int64(len(data)), 1)
	})
	srv.SetSocketBuffers(4096, 0)
	cl, _ := w.Spawn("cl", model.ProcessConfig{}, func(p model.Process) {
		p.Dial("tcp", "srv:1", p.MainLoop(), func(model.Events) {})
		p.MainLoop().AfterFunc(100*time.Millisecond, p.World().Stop)
	})
	cl.(*Process).SetSocketBuffers(0, 4096)
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range sent {
		total += n
		if n <= 0 || n > 4096 {
			t.Errorf("a sendfile sent %d bytes through a 4096-byte send buffer", n)
		}
	}
	if len(sent) == 0 || total >= len(data)-1000 {
		t.Errorf("sends %v before the socket filled, want some, short of %d", sent, len(data)-1000)
	}
	if !errors.Is(full, model.ErrWouldBlock) {
		t.Errorf("sendfile to a full socket: %v, want ErrWouldBlock", full)
	}
	if eof != io.EOF {
		t.Errorf("sendfile at the end of the file: %v, want io.EOF", eof)
	}
	if d := srv.Disk().(*Disk); d.SendfileErrs != 1 {
		t.Errorf("%d sendfiles counted as failing to read the file, want 1 (the one at its end)", d.SendfileErrs)
	}
}

// Bytes the datanode sent with sendfile cost the client's reads
// TCPRecvSplicedPerKB more per KiB (the first touch of the file's pages
// since they were cached); the headers and checksums it writes, and
// data it copies out of a buffer (--no-transfer-to), do not.
func TestSplicedBytesCostTheirReader(t *testing.T) {
	client := func(noTransferTo bool, perKB time.Duration) time.Duration {
		cfg := DefaultConfig(7)
		cfg.CPU.TCPRecvSplicedPerKB = perKB
		w := New(cfg)
		s := model.DefaultReadScenario()
		s.Clients, s.Ops, s.Blocks, s.BlockSize, s.ReadSize, s.Pattern = 1, 32, 2, 1<<20, 64<<10, "sequential"
		s.Server.NoTransferTo = noTransferTo
		s.ProcessCPU = func(p model.Process) time.Duration { return p.(*Process).CPUTime() }
		res, err := model.RunRead(w, s, time.Hour)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if res.Errors != 0 || res.Mismatches != 0 {
			t.Fatalf("%d errors (%s), %d mismatches", res.Errors, res.FirstError, res.Mismatches)
		}
		return res.ClientCPU
	}
	// 32 reads of 64 KiB: 2048 KiB spliced, at 1 µs a KiB (less the
	// rounding of each read's share).
	if d := client(false, us) - client(false, 0); d < 2048*us-100*time.Nanosecond || d > 2048*us {
		t.Errorf("2 MiB sent with sendfile cost its reader %v more at 1µs per KiB, want 2.048ms", d)
	}
	if d := client(true, us) - client(true, 0); d != 0 {
		t.Errorf("2 MiB copied and written cost its reader %v more, want nothing", d)
	}
}

// The send buffer holds sendfile's bytes by reference (no copy), as the
// kernel holds page-cache pages, but the simulator promises what a copy
// gives: the peer reads the bytes as they were when sendfile queued them,
// whatever the file does after. Each change below comes after the send
// and before the peer reads; an append, which leaves the sent bytes
// alone, must not take the file's array back to change it.
func TestSendfileBytesStayAsSent(t *testing.T) {
	for _, change := range []string{"overwrite", "overwrite-past-end", "bit-rot", "truncate-rewrite", "append", "power-loss"} {
		t.Run(change, func(t *testing.T) {
			w := New(DefaultConfig(3))
			data := make([]byte, 20000)
			for i := range data {
				data[i] = byte(i * 7)
			}
			want := slices.Clone(data[1000:])
			var got []byte
			var srvP *Process
			srvP = fileServer(t, w, data, func(p model.Process, f model.File, c model.Conn) {
				d := p.Disk()
				d.(*Disk).TrackDurability() // the file as written is synced
				if n, err := d.Sendfile(c, f, 1000, len(data)); n != len(data)-1000 || err != nil {
					t.Errorf("sendfile: %d, %v; want all %d bytes", n, err, len(data)-1000)
				}
				ino := f.(*File).ino
				switch change {
				case "overwrite":
					f.WriteAt(make([]byte, 5000), 3000)
				case "overwrite-past-end":
					// Into the array's spare room: append keeps it.
					f.WriteAt(make([]byte, 300), 19900)
				case "bit-rot":
					srvP.FlipBit("f", 2000, 3)
				case "truncate-rewrite":
					g, err := d.Open("f", model.ReadWrite|model.Truncate, model.FDBlockFile)
					if err != nil {
						t.Error(err)
						return
					}
					g.WriteAt(make([]byte, 20000), 0)
					g.Close()
				case "append":
					f.WriteAt(make([]byte, 5000), int64(len(data)))
					if !ino.lent {
						t.Error("an append after sendfile took the file's bytes back (own) to add past them")
					}
				case "power-loss":
					f.WriteAt(make([]byte, 100), 5000) // unsynced
					srvP.Crash()
					d.(*Disk).PowerLoss()
				}
			})
			w.Spawn("cl", model.ProcessConfig{}, func(p model.Process) {
				buf := make([]byte, 4096)
				var c model.Conn
				c, _ = p.Dial("tcp", "srv:1", p.MainLoop(), func(ev model.Events) {
					for {
						n, err := c.Read(buf)
						got = append(got, buf[:n]...)
						if err != nil || n == 0 {
							return
						}
					}
				})
				p.MainLoop().AfterFunc(100*time.Millisecond, p.World().Stop)
			})
			if err := w.Run(time.Second); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the peer read %d bytes, want the %d sent; they differ", len(got), len(want))
			}
		})
	}
}

// A sendfile to a socket whose write side is shut down fails as a write
// would, before any page is read: the disk counts no read and records no
// sendfile. (sendfile checks the socket first, as tcp_sendmsg does.)
func TestSendfileAfterShutdownReadsNothing(t *testing.T) {
	h := newPair(t)
	d := h.cli.p.SimDisk()
	f, err := d.Open("blk", model.Create|model.ReadWrite, model.FDBlockFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 8192), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.cli.c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	reads, t0 := d.Reads, len(h.events)
	if n, err := d.Sendfile(h.cli.c, f, 0, 8192); n != 0 || !errors.Is(err, model.ErrPipe) {
		t.Fatalf("Sendfile after shutdown = %d, %v; want EPIPE, as a write", n, err)
	}
	if d.Reads != reads {
		t.Errorf("the disk counted %d reads for a sendfile that could send nothing", d.Reads-reads)
	}
	for _, e := range h.events[t0:] {
		if e.Kind == "disk" && e.S == "sendfile" {
			t.Errorf("a sendfile was recorded after the shutdown: %+v", e)
		}
	}
}

// Sendfile calls one after another, before the reader has taken any of
// it, make one spliced range (the reader's spliced cost is charged over
// it) and deliver every byte in order. (Without interleaving, the reader
// runs only after the sender's callback.)
func TestConsecutiveSendfilesDeliverInOrder(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.CPU.TCPRecvSplicedPerKB = 50
	cfg.Interleave = false
	w := New(cfg)
	data := make([]byte, 6000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var sendErr error
	fileServer(t, w, data, func(p model.Process, f model.File, c model.Conn) {
		for off := int64(0); off < int64(len(data)); off += 2000 {
			if _, err := p.Disk().Sendfile(c, f, off, 2000); err != nil {
				sendErr = err
				return
			}
		}
		if tc := c.(*tcpConn); len(tc.spliced) != 1 {
			t.Errorf("three sendfiles in a row made %d spliced ranges, want 1", len(tc.spliced))
		}
	})
	var got []byte
	if _, err := w.Spawn("cl", model.ProcessConfig{}, func(p model.Process) {
		var c model.Conn
		c, _ = p.Dial("tcp", "srv:1", p.MainLoop(), func(model.Events) {
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil || n == 0 {
					return
				}
			}
		})
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(100 * ms); err != nil {
		t.Fatal(err)
	}
	if sendErr != nil || !bytes.Equal(got, data) {
		t.Errorf("sendfile error %v; the client got %d bytes, equal %v", sendErr, len(got), bytes.Equal(got, data))
	}
}
