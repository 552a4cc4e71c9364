package sim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"

	"xceiver/model"
)

// AF_UNIX stream flow control as in Linux: a send is cut into skbs of at
// most unixSkbMax bytes; the sender's sk_wmem_alloc holds each skb's
// truesize until the reader has consumed it all; no skb is allocated
// while wmem_alloc ≥ sndbuf, and the socket is writable again only at
// wmem_alloc × 4 ≤ sndbuf.
func TestUnixSkbsAndSendBuffer(t *testing.T) {
	h, sc, cc, _, _, _, _ := unixPair(t)
	sc.SetReadInterest(false)
	sndbuf := h.w.cfg.Unix.BufSize
	t0 := len(h.events)
	n, err := cc.Write(make([]byte, 100<<10))
	if n != 100<<10 || err != nil {
		t.Fatalf("write of 100 KiB = %d, %v", n, err)
	}
	var sizes []int64
	for _, e := range h.events[t0:] {
		if e.Kind == "uds" {
			sizes = append(sizes, e.A)
		}
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int64{unixSkbMax, unixSkbMax, 100<<10 - 2*unixSkbMax}) {
		t.Errorf("skbs of a 100 KiB send: %v", sizes)
	}
	// The model charges each skb its bytes and 576 of truesize besides (a
	// 256-byte sk_buff and a 320-byte skb_shared_info, Linux's figure for
	// a full skb; a partial one's linear part rounds up a little more)
	// until it is read.
	if want := 100<<10 + 3*576; cc.wmem != want {
		t.Errorf("wmem %d after three skbs of 100 KiB, want %d", cc.wmem, want)
	}
	// Fill the send buffer: skbs go while wmem_alloc < sndbuf.
	total := n
	for {
		k, err := cc.Write(make([]byte, 64<<10))
		total += k
		if errors.Is(err, model.ErrWouldBlock) {
			break
		}
		if err != nil || k == 0 {
			t.Fatalf("write: %d, %v", k, err)
		}
	}
	if cc.wmem < sndbuf || cc.wmem-(unixSkbMax+unixSkbOverhead) >= sndbuf {
		t.Errorf("wmem %d with sndbuf %d: want the last skb to have gone below sndbuf", cc.wmem, sndbuf)
	}
	h.runTo(h.now() + ms)
	if cc.readiness()&model.Writable != 0 {
		t.Errorf("writable with %d of %d bytes of send buffer in use", cc.wmem, sndbuf)
	}
	// Reading frees whole skbs only; writable once a quarter is in use.
	buf := make([]byte, 1000)
	read := 0
	for cc.readiness()&model.Writable == 0 {
		k, err := sc.Read(buf)
		if err != nil {
			t.Fatalf("read after %d bytes: %v", read, err)
		}
		read += k
		if cc.wmem*4 <= sndbuf && cc.readiness()&model.Writable == 0 {
			t.Fatalf("not writable at wmem %d ≤ sndbuf/4", cc.wmem)
		}
	}
	if cc.wmem*4 > sndbuf || (cc.wmem+unixSkbMax+unixSkbOverhead)*4 <= sndbuf {
		t.Errorf("writable again at wmem %d (sndbuf %d): want the first skb boundary at or below a quarter", cc.wmem, sndbuf)
	}
	if read >= total {
		t.Errorf("read everything (%d bytes) before the writer could go on", read)
	}
}

// unix_poll reports EPOLLOUT by the send buffer alone: a writer that asks
// for room after its peer closed is woken, and its write fails with EPIPE.
// (Before, readiness withheld Writable once the peer closed, and a writer
// waiting only for room slept for ever.)
func TestUnixWriterWokenAfterPeerClose(t *testing.T) {
	h, sc, cc, _, cp, _, _ := unixPair(t)
	var evs []model.Events
	cc.SetHandler(cp.MainLoop(), func(ev model.Events) {
		evs = append(evs, ev)
		if ev&model.Writable != 0 {
			cc.SetWriteInterest(false)
		}
	})
	cc.SetReadInterest(false)
	sc.Close()
	h.runTo(h.now() + ms)
	cc.SetWriteInterest(true)
	h.runTo(h.now() + ms)
	if len(evs) == 0 || evs[0]&model.Writable == 0 {
		t.Fatalf("events %v after the peer closed, want Writable", evs)
	}
	if n, err := cc.Write([]byte("x")); !errors.Is(err, model.ErrPipe) || n != 0 {
		t.Fatalf("write after the peer closed: %d bytes, %v; want 0 and EPIPE (unix_stream_sendmsg writes nothing)", n, err)
	}
}

// Bytes sent but not yet delivered when the reader closes are, in Linux,
// already in its receive queue (unix_stream_sendmsg queues on the peer at
// once), so its close resets the writer (unix_release_sock: ECONNRESET)
// instead of giving it EOF, and the close counts them as unread.
func TestUnixCloseWithDataInTransitResetsWriter(t *testing.T) {
	h, sc, cc, _, cp, _, _ := unixPair(t)
	var evs []model.Events
	cc.SetHandler(cp.MainLoop(), func(ev model.Events) { evs = append(evs, ev) })
	cc.SetReadInterest(false)
	var closeEv []Event
	h.w.Observe(func(e *Event) {
		if e.Kind == "close" && e.Conn == sc.id {
			closeEv = append(closeEv, *e)
		}
	})
	if n, err := cc.Write([]byte("in transit")); n != 10 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	sc.Close() // before the 2 µs delivery
	h.runTo(h.now() + ms)
	if len(closeEv) != 1 || closeEv[0].A != 10 {
		t.Errorf("close events %+v, want one counting the 10 bytes in transit unread", closeEv)
	}
	if !errors.Is(cc.Err(), model.ErrReset) {
		t.Fatalf("writer's error %v, want ECONNRESET", cc.Err())
	}
	if len(evs) == 0 || evs[len(evs)-1]&model.Hangup == 0 {
		t.Fatalf("writer's events %v, want a Hangup", evs)
	}
	// As on real sockets (real.TestUnixCloseWithDataUnread): the write
	// fails with EPIPE (unix_stream_sendmsg sees the peer shut down, not
	// sk_err), the read with ECONNRESET (sock_error, once), and later
	// reads see EOF (the receive side is shut).
	if n, err := cc.Write([]byte("x")); !errors.Is(err, model.ErrPipe) || n != 0 {
		t.Errorf("write after the reset close: %d bytes, %v; want 0 and EPIPE", n, err)
	}
	buf := make([]byte, 16)
	if _, err := cc.Read(buf); !errors.Is(err, model.ErrReset) {
		t.Errorf("first read: %v, want ECONNRESET", err)
	}
	if _, err := cc.Read(buf); err != io.EOF {
		t.Errorf("second read: %v, want EOF", err)
	}
}

// A file passed over a Unix socket is the receiver's own open file, as an
// SCM_RIGHTS fd holds its own struct file: its pread keeps working after
// the sender crashes, and a crash point armed on the sender does not fire
// on it. (Before, both went through the sender's disk: the read failed
// with "process exited", and the receiver's read crashed the sender.)
func TestPassedFileOutlivesSender(t *testing.T) {
	h, sc, _, sp, _, _, _ := unixPair(t)
	f, err := sp.Disk().Open("blk_1", model.Create|model.ReadWrite, model.FDBlockFile)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("hello"), 0)
	if _, err := sc.SendFDs([]byte{7}, []model.File{f}); err != nil {
		t.Fatal(err)
	}
	h.runTo(h.now() + ms)
	if len(h.passed) != 1 {
		t.Fatalf("%d files passed", len(h.passed))
	}
	pf := h.passed[0]
	buf := make([]byte, 5)
	sp.CrashAtDiskOp(0, false, nil)
	if _, err := pf.ReadAt(buf, 0); err != nil || sp.Crashed() {
		t.Fatalf("pread with a crash point armed on the sender: %v (sender crashed: %v)", err, sp.Crashed())
	}
	sp.Crash()
	if n, err := pf.ReadAt(buf, 0); n != 5 || err != nil || string(buf) != "hello" {
		t.Fatalf("pread after the sender crashed = %d, %v, %q; want 5 bytes of hello", n, err, buf[:n])
	}
}

// An fd pass that finds the send buffer full passes nothing: sendmsg
// fails with EAGAIN before any skb is allocated (unix_stream_sendmsg's
// sock_alloc_send_pskb, non-blocking), so a reset armed for the next pass
// (ResetNextFDPass) is still armed, the connection is not reset and the
// file's inode gains no in-flight reference. The pass that goes once the
// reader has made room is the one reset.
func TestUnixFDPassThatWouldBlockLeavesTheResetArmed(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after=%v", after), func(t *testing.T) {
			h, sc, cc, sp, _, _, _ := unixPair(t)
			cc.SetReadInterest(false)
			for {
				k, err := sc.Write(make([]byte, 64<<10))
				if errors.Is(err, model.ErrWouldBlock) {
					break
				}
				if err != nil || k == 0 {
					t.Fatalf("write: %d, %v", k, err)
				}
			}
			f, err := sp.Disk().Open("blk_1", model.Create|model.ReadWrite, model.FDBlockFile)
			if err != nil {
				t.Fatal(err)
			}
			ino := f.(*File).ino
			sp.ResetNextFDPass(after)
			if n, err := sc.SendFDs([]byte{7}, []model.File{f}); n != 0 || !errors.Is(err, model.ErrWouldBlock) {
				t.Fatalf("SendFDs on a full send buffer = %d, %v; want 0, EAGAIN", n, err)
			}
			if sc.reset || sc.Err() != nil || sp.netFaults.resetFDPass == 0 || ino.refs != 1 {
				t.Fatalf("after a pass that would block: reset %v, error %v, fault armed %v, inode refs %d; want no reset, still armed, 1 ref",
					sc.reset, sc.Err(), sp.netFaults.resetFDPass != 0, ino.refs)
			}
			cc.SetReadInterest(true) // the client drains: room again
			h.runTo(h.now() + ms)
			n, err := sc.SendFDs([]byte{7}, []model.File{f})
			if after && (n != 1 || err != nil) || !after && (n != 0 || !errors.Is(err, model.ErrReset)) {
				t.Errorf("SendFDs with room (reset after %v) = %d, %v", after, n, err)
			}
			if !sc.reset || sp.netFaults.resetFDPass != 0 {
				t.Errorf("the pass with room: reset %v, fault still armed %v; want reset, spent", sc.reset, sp.netFaults.resetFDPass != 0)
			}
			f.Close()
		})
	}
}

// Abort on a domain socket closes it, as Close does (AF_UNIX has no
// reset to send): its fd is freed and the peer reads EOF.
func TestUnixAbortClosesTheSocket(t *testing.T) {
	h, sc, cc, _, cp, _, _ := unixPair(t)
	before := cp.FDs().ByKind[model.FDSocket]
	if err := cc.Abort(); err != nil {
		t.Fatal(err)
	}
	h.runTo(h.now() + ms)
	if got := cp.FDs().ByKind[model.FDSocket]; got != before-1 {
		t.Errorf("client sockets %d after Abort, want %d", got, before-1)
	}
	if n, err := sc.Read(make([]byte, 8)); n != 0 || err == nil || errors.Is(err, model.ErrWouldBlock) {
		t.Errorf("server read after the client's Abort = %d, %v, want EOF", n, err)
	}
}

// A domain socket closed with even one byte unread makes its peer see
// ECONNRESET (unix_release_sock), not EOF.
func TestUnixCloseWithOneUnreadByteResetsThePeer(t *testing.T) {
	h, sc, cc, _, _, _, _ := unixPair(t)
	sc.SetReadInterest(false)
	cc.SetReadInterest(false) // the first read to see the reset is the test's
	if n, err := cc.Write([]byte{1}); n != 1 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	h.runTo(h.now() + ms)
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	h.runTo(h.now() + ms)
	if _, err := cc.Read(make([]byte, 8)); !errors.Is(err, model.ErrReset) {
		t.Errorf("client read after the server closed with a byte unread: %v, want ECONNRESET", err)
	}
}

// A listener closed before accepting a connection drops what waits in
// it, files passed over it too: the last reference to an unlinked file
// goes, and its blocks with it.
func TestUnixListenerClosedDropsFilesPassedToUnacceptedConnection(t *testing.T) {
	h := newHarness(t)
	var ln model.Listener
	if _, err := h.w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
		var err error
		if ln, err = p.Listen("unix", "/run/dn.sock", 8, p.MainLoop()); err != nil {
			t.Error(err)
		}
		// No handler: the connection is never accepted.
	}); err != nil {
		t.Fatal(err)
	}
	h.runTo(ms)
	var disk *Disk
	var cc model.Conn
	heard := false // the client's handler saw the reset
	if _, err := h.w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		disk = p.(*Process).SimDisk()
		c, err := p.Dial("unix", "/run/dn.sock", p.MainLoop(), func(model.Events) {
			if cc != nil && errors.Is(cc.Err(), model.ErrReset) {
				heard = true
			}
		})
		if err != nil {
			t.Error(err)
			return
		}
		cc = c
		f, err := p.Disk().Open("blk", model.Create|model.ReadWrite, model.FDBlockFile)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteAt(make([]byte, 1000), 0)
		if n, err := c.(*unixConn).SendFDs([]byte{1}, []model.File{f}); n != 1 || err != nil {
			t.Errorf("SendFDs = %d, %v", n, err)
		}
		f.Close()
		if err := p.Disk().Unlink("blk"); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	h.runTo(10 * ms)
	if disk == nil {
		t.Fatal("the client never ran")
	}
	if disk.used != 1000 {
		t.Fatalf("before the listener closes: %d bytes used, want the passed file's 1000 held by the queued message", disk.used)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	h.runTo(20 * ms)
	if disk.used != 0 {
		t.Errorf("%d bytes still used after the listener closed: the unaccepted connection's passed file was kept", disk.used)
	}
	// The dialer learns it: its connection is reset, and its handler
	// is told.
	if err := cc.Err(); !errors.Is(err, model.ErrReset) || !heard {
		t.Errorf("the client's connection after the listener closed unaccepted: %v (handler told %v), want ECONNRESET, told", err, heard)
	}
}

// SendFDs of a file already closed sends nothing: a count of 0 beside
// ErrClosed (EBADF in Linux), and the message does not go.
func TestUnixSendFDsOfClosedFile(t *testing.T) {
	h, _, cc, _, cp, sgot, _ := unixPair(t)
	f, err := cp.Disk().Open("blk", model.Create|model.ReadWrite, model.FDBlockFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n, err := cc.SendFDs([]byte{1}, []model.File{f}); n != 0 || !errors.Is(err, model.ErrClosed) {
		t.Errorf("SendFDs of a closed file = %d, %v, want 0 and ErrClosed", n, err)
	}
	h.runTo(h.now() + ms)
	if len(*sgot) != 0 || len(h.passed) != 0 {
		t.Errorf("the server received %q and %d files", *sgot, len(h.passed))
	}
}

// Sendfile to a domain socket writes the file's bytes from the offset
// asked.
func TestUnixSendfileSendsTheFilesBytes(t *testing.T) {
	h, sc, _, sp, _, _, cgot := unixPair(t)
	d := sp.SimDisk()
	f, err := d.Open("blk", model.Create|model.ReadWrite, model.FDBlockFile)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("abcdefgh"), 0)
	if n, err := d.Sendfile(sc, f, 2, 3); n != 3 || err != nil {
		t.Fatalf("Sendfile of 3 bytes at 2 = %d, %v", n, err)
	}
	h.runTo(h.now() + ms)
	if string(*cgot) != "cde" {
		t.Errorf("the client received %q, want \"cde\"", *cgot)
	}
}

// PeerNoDelay reports on simulated TCP connections with a peer only: a
// domain socket's answer is "not known", not a crash.
func TestPeerNoDelayOnlyForTCP(t *testing.T) {
	_, sc, cc, _, _, _, _ := unixPair(t)
	for _, c := range []model.Conn{sc, cc} {
		if on, ok := PeerNoDelay(c); on || ok {
			t.Errorf("PeerNoDelay of a domain socket: %v, %v; want false, false", on, ok)
		}
	}
	h := newPair(t)
	h.srv.noDelay(true)
	if on, ok := PeerNoDelay(h.cli.c); !on || !ok {
		t.Errorf("PeerNoDelay of a TCP client whose server set NODELAY: %v, %v", on, ok)
	}
}

// The domain socket's refusals and closed-socket errors: a connect to no
// listener is ECONNREFUSED naming the address (the model's one refusal:
// Linux gives ENOENT when no socket file exists, ECONNREFUSED when one
// does with no listener); a message of files and no byte is EINVAL (the
// model's rule: a Linux stream socket sends nothing and returns 0); a
// read or a write on a closed socket is EBADF with nothing read or
// written, as Linux's.
func TestUnixErrors(t *testing.T) {
	h := newHarness(t)
	var refused model.Conn
	if _, err := h.w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		c, err := p.Dial("unix", "/run/none.sock", p.MainLoop(), func(model.Events) {})
		if err != nil {
			t.Errorf("dial: %v", err)
			return
		}
		refused = c
	}); err != nil {
		t.Fatal(err)
	}
	h.runTo(ms)
	if refused == nil {
		t.Fatal("the client never dialed")
	}
	if err := refused.Err(); !errors.Is(err, model.ErrRefused) || !strings.Contains(err.Error(), "connect unix /run/none.sock") {
		t.Errorf("connect to no listener: %v, want ECONNREFUSED naming the address", err)
	}

	_, _, cc, _, cp, _, _ := unixPair(t)
	f, err := cp.Disk().Open("blk", model.Create|model.ReadWrite, model.FDBlockFile)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := cc.SendFDs(nil, []model.File{f}); n != 0 || !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("SendFDs of a file and no byte = %d, %v; want EINVAL", n, err)
	}
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := cc.Write([]byte("x")); n != 0 || !errors.Is(err, model.ErrClosed) {
		t.Errorf("write on a closed socket = %d, %v; want 0, EBADF", n, err)
	}
	if n, err := cc.Read(make([]byte, 8)); n != 0 || !errors.Is(err, model.ErrClosed) {
		t.Errorf("read on a closed socket = %d, %v; want 0, EBADF", n, err)
	}
}

// An skb that reaches a socket closed while it was in transit is
// dropped, and its truesize comes off the sender's send buffer: the
// sender's wmem goes back to nothing, so a later writer is not held by
// memory no message holds.
func TestUnixSkbDroppedAtClosedPeerFreesSendBuffer(t *testing.T) {
	h, sc, cc, _, _, _, _ := unixPair(t)
	if n, err := cc.Write(make([]byte, 1000)); n != 1000 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	if cc.wmem == 0 || sc.transit != 1000 {
		t.Fatalf("setup: the skb charged %d to the sender, %d bytes in transit; want it charged and on its way", cc.wmem, sc.transit)
	}
	if err := sc.Close(); err != nil { // before the skb arrives
		t.Fatal(err)
	}
	h.runTo(h.now() + ms)
	if cc.wmem != 0 {
		t.Errorf("the sender's wmem is %d after its skb was dropped at the closed peer, want 0", cc.wmem)
	}
}
