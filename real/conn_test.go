package real

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// acceptAll sets ln's handler to accept every pending connection and pass
// it to serve, on the listener's process's main loop.
func acceptAll(p model.Process, ln model.Listener, serve func(c model.Conn)) {
	ln.SetHandler(func() {
		for {
			c, err := ln.Accept()
			if errors.Is(err, model.ErrWouldBlock) {
				return
			}
			if err != nil {
				failf(p, "accept: %v", err)
				return
			}
			serve(c)
		}
	})
}

// echo serves c on loop: what it reads it writes back, with write interest
// only while output waits. closed, if not nil, runs once it has closed c.
func echo(p model.Process, loop model.Loop, c model.Conn, closed func()) {
	buf := make([]byte, 4096)
	var pending []byte
	end := func() {
		c.Close()
		if closed != nil {
			closed()
		}
	}
	c.SetHandler(loop, func(ev model.Events) {
		if ev&model.Readable != 0 {
			n, err := c.Read(buf)
			switch {
			case err == io.EOF:
				end()
				return
			case errors.Is(err, model.ErrWouldBlock):
			case err != nil:
				end()
				return
			}
			pending = append(pending, buf[:n]...)
		}
		if len(pending) > 0 {
			n, err := c.Write(pending)
			if err != nil && !errors.Is(err, model.ErrWouldBlock) {
				end()
				return
			}
			pending = pending[n:]
		}
		c.SetWriteInterest(len(pending) > 0)
	})
}

func testEcho(t *testing.T, network, addr string) { testEchoIn(t, newWorld(t), network, addr) }

func testEchoIn(t *testing.T, w *World, network, addr string) {
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen(network, addr, 16, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	// The world stops once the server has closed its end: a stop timed
	// from the client's close raced the server's loop (late on a loaded
	// machine, its socket was still open).
	acceptAll(srv, ln, func(c model.Conn) { echo(srv, srv.MainLoop(), c, w.Stop) })
	const rounds = 50
	got := 0
	spawn(t, w, "cl", 0, func(p model.Process) {
		var c model.Conn
		var want, have []byte
		buf := make([]byte, 256)
		send := func() {
			want = fmt.Appendf(nil, "message %d from %s", got, c.LocalAddr())
			have = have[:0]
			if n, err := c.Write(want); err != nil || n != len(want) {
				failf(p, "write: %d, %v", n, err)
			}
		}
		connected := false
		c, err := p.Dial(network, ln.Addr(), p.MainLoop(), func(ev model.Events) {
			if ev&model.Hangup != 0 {
				failf(p, "hangup: %v", c.Err())
				return
			}
			if ev&model.Writable != 0 && !connected {
				connected = true
				send()
			}
			if ev&model.Readable != 0 {
				n, err := c.Read(buf)
				if errors.Is(err, model.ErrWouldBlock) {
					return
				}
				if err != nil {
					failf(p, "read: %v", err)
					return
				}
				have = append(have, buf[:n]...)
				if len(have) < len(want) {
					return
				}
				if !bytes.Equal(have, want) {
					failf(p, "echo %q, want %q", have, want)
					return
				}
				got++
				if got == rounds {
					c.Close()
					return
				}
				send()
			}
		})
		if err != nil {
			failf(p, "dial: %v", err)
		}
	})
	run(t, w, 10*time.Second)
	if got != rounds {
		t.Errorf("%d echoes, want %d", got, rounds)
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}
	if s := srv.FDs(); s.ByKind[model.FDSocket] != 0 || s.ByKind[model.FDListener] != 1 || s.Peak != 4 {
		t.Errorf("server fds %+v; want no sockets left, the listener, peak 4", s)
	}
	if err := ln.Close(); err != nil {
		t.Error(err)
	}
	if err := ln.Close(); !errors.Is(err, model.ErrClosed) {
		t.Errorf("second listener Close: %v", err)
	}
}

func TestEchoTCP(t *testing.T)  { testEcho(t, "tcp", "127.0.0.1:0") }
func TestEchoUnix(t *testing.T) { testEcho(t, "unix", "dn.sock") }

// A world whose directory is too deep for a Unix sockaddr (107 bytes;
// go test puts its temporary directories under GOTMPDIR, however long)
// still listens and dials on relative addresses, through the socket
// directory's fd; the socket file is where the address says, and Close
// finds no fd left open. An absolute path that long is refused, with
// its length said.
func TestEchoUnixUnderALongRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Seed: 1, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil && !errors.Is(err, ErrWorldClosed) {
			t.Errorf("World.Close: %v", err)
		}
	})
	sub := "deeper/dn.sock"
	p := spawn(t, w, "probe", 0, nil)
	ln, err := p.Listen("unix", sub, 1, p.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Root(), "sock", sub)); err != nil || ln.Addr() != sub {
		t.Errorf("listener at %q: %v", ln.Addr(), err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Root(), "sock", sub)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the closed listener's socket file: %v", err)
	}
	abs := filepath.Join(w.Root(), "sock", "abs.sock")
	if _, err := p.Listen("unix", abs, 1, p.MainLoop()); err == nil || !strings.Contains(err.Error(), "is longer than 107 bytes") {
		t.Errorf("listen on %d-byte %q: %v", len(abs), abs, err)
	}
	testEchoIn(t, w, "unix", "dn.sock")
}

// nagleRound measures request/reply rounds on one TCP connection. The
// first rounds send the 4-byte request in one write, which puts the server
// in pingpong mode (it answers right after receiving), so it delays its
// ACKs. The measured rounds send it in two 2-byte writes: with Nagle the
// second is held until the first is ACKed, i.e. until the server's delayed
// ACK timer fires (≈40 ms); with TCP_NODELAY it leaves at once.
func nagleRounds(t *testing.T, nodelay bool) []time.Duration {
	w := newWorld(t)
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen("tcp", "127.0.0.1:0", 16, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	acceptAll(srv, ln, func(c model.Conn) {
		buf := make([]byte, 64)
		have := 0
		c.SetHandler(srv.MainLoop(), func(ev model.Events) {
			n, err := c.Read(buf)
			if errors.Is(err, model.ErrWouldBlock) {
				return
			}
			if err != nil {
				c.Close()
				return
			}
			for have += n; have >= 4; have -= 4 {
				if _, err := c.Write([]byte("pong")); err != nil {
					failf(srv, "server write: %v", err)
				}
			}
		})
	})
	const warm, measured = 3, 5
	var times []time.Duration
	spawn(t, w, "cl", 0, func(p model.Process) {
		var c model.Conn
		round, have := 0, 0
		var start time.Time
		buf := make([]byte, 64)
		write := func(s string) {
			if _, err := c.Write([]byte(s)); err != nil {
				failf(p, "client write: %v", err)
			}
		}
		send := func() {
			start = time.Now()
			if round < warm {
				write("ping")
			} else {
				write("pi")
				write("ng")
			}
		}
		connected := false
		c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			if ev&model.Hangup != 0 {
				failf(p, "hangup: %v", c.Err())
				return
			}
			if ev&model.Writable != 0 && !connected {
				connected = true
				if err := c.SetNoDelay(nodelay); err != nil {
					failf(p, "SetNoDelay: %v", err)
				}
				send()
				return
			}
			n, err := c.Read(buf)
			if err != nil {
				if !errors.Is(err, model.ErrWouldBlock) {
					failf(p, "client read: %v", err)
				}
				return
			}
			if have += n; have < 4 {
				return
			}
			have -= 4
			if round >= warm {
				times = append(times, time.Since(start))
			}
			if round++; round == warm+measured {
				c.Close()
				p.World().Stop()
				return
			}
			send()
		})
	})
	run(t, w, 10*time.Second)
	if len(times) != measured {
		t.Fatalf("%d measured rounds, want %d", len(times), measured)
	}
	return times
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestNagleIsNotHidden(t *testing.T) {
	nagle := nagleRounds(t, false)
	nodelay := nagleRounds(t, true)
	mn, md := median(nagle), median(nodelay)
	t.Logf("two small writes then a reply: Nagle %v (median %v), NODELAY %v (median %v)", nagle, mn, nodelay, md)
	if mn < 20*time.Millisecond || mn < 5*md {
		t.Errorf("Nagle median %v, NODELAY median %v: want Nagle ≥ 20ms and ≥ 5× NODELAY (delayed ACK stall)", mn, md)
	}
}

// TestPartialWritesAndWriteInterest fills the send path to a peer that does
// not read, checks that writes go partial and then would-block, that no
// Writable event comes while write interest is off, and that one comes
// once it is on and the peer drains.
func TestPartialWritesAndWriteInterest(t *testing.T) {
	w := newWorld(t)
	const total = 16 << 20
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen("tcp", "127.0.0.1:0", 16, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	received := 0
	acceptAll(srv, ln, func(c model.Conn) {
		buf := make([]byte, 64<<10)
		c.SetHandler(srv.MainLoop(), func(ev model.Events) {
			n, err := c.Read(buf)
			switch {
			case err == io.EOF:
				c.Close()
				srv.World().Stop()
			case errors.Is(err, model.ErrWouldBlock):
			case err != nil:
				failf(srv, "server read: %v", err)
			default:
				received += n
			}
		})
		c.SetReadInterest(false) // a slow reader, for now
		srv.MainLoop().AfterFunc(150*time.Millisecond, func() { c.SetReadInterest(true) })
	})
	var partial, wouldBlock bool
	writableWhileOff := 0
	sent := 0
	spawn(t, w, "cl", 0, func(p model.Process) {
		var c model.Conn
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		interest := false
		connected := false
		var pump func()
		pump = func() {
			for sent < total {
				n, err := c.Write(chunk[:min(len(chunk), total-sent)])
				if errors.Is(err, model.ErrWouldBlock) {
					if n != 0 {
						failf(p, "would-block with n=%d", n)
					}
					wouldBlock = true
					if !interest {
						// Stay deaf for a while: no Writable may come.
						p.MainLoop().AfterFunc(50*time.Millisecond, func() {
							interest = true
							c.SetWriteInterest(true)
						})
					}
					return
				}
				if err != nil {
					failf(p, "write: %v", err)
					return
				}
				if n < len(chunk) && n < total-sent {
					partial = true
				}
				sent += n
			}
			c.SetWriteInterest(false)
			if err := c.CloseWrite(); err != nil {
				failf(p, "CloseWrite: %v", err)
			}
		}
		c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			if ev&model.Writable == 0 {
				return
			}
			if !connected {
				connected = true
				pump()
				return
			}
			if !interest {
				writableWhileOff++
			}
			pump()
		})
		c.SetReadInterest(false)
	})
	run(t, w, 20*time.Second)
	if !wouldBlock {
		t.Errorf("never saw ErrWouldBlock")
	}
	if !partial {
		t.Errorf("never saw a partial write")
	}
	if writableWhileOff != 0 {
		t.Errorf("%d Writable events with write interest off", writableWhileOff)
	}
	if sent != total || received != total {
		t.Errorf("sent %d, received %d, want %d", sent, received, total)
	}
}

// TestLevelTriggered reads one byte per callback: the handler must be
// called again while data remains.
func TestLevelTriggered(t *testing.T) {
	w := newWorld(t)
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen("unix", "lt.sock", 4, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	var got []byte
	acceptAll(srv, ln, func(c model.Conn) {
		c.SetHandler(srv.MainLoop(), func(ev model.Events) {
			calls++
			var b [1]byte
			n, err := c.Read(b[:])
			if err == io.EOF {
				c.Close()
				srv.World().Stop()
				return
			}
			got = append(got, b[:n]...)
		})
	})
	spawn(t, w, "cl", 0, func(p model.Process) {
		var c model.Conn
		c, _ = p.Dial("unix", "lt.sock", p.MainLoop(), func(ev model.Events) {
			if ev&model.Writable != 0 {
				c.Write([]byte("0123456789"))
				c.Close()
			}
		})
	})
	run(t, w, 5*time.Second)
	if string(got) != "0123456789" || calls < 11 {
		t.Errorf("got %q in %d calls; want 10 bytes in ≥ 11 calls", got, calls)
	}
}

// TestMoveConnBetweenLoops hands accepted conns to a selector loop, as the
// reactor does, and closes that loop from its own callback at the end.
func TestMoveConnBetweenLoops(t *testing.T) {
	w := newWorld(t)
	srv := spawn(t, w, "dn", 0, nil)
	sel, err := srv.NewLoop("selector")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen("tcp", "127.0.0.1:0", 16, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	acceptAll(srv, ln, func(c model.Conn) {
		// First on the acceptor loop, then moved from there.
		c.SetHandler(srv.MainLoop(), func(model.Events) {})
		c.SetHandler(sel, func(ev model.Events) {
			var b [16]byte
			n, err := c.Read(b[:])
			if err == io.EOF {
				c.Close()
				sel.Close()
				srv.World().Stop()
				return
			}
			if err == nil {
				c.Write(b[:n])
			}
		})
	})
	var reply []byte
	spawn(t, w, "cl", 0, func(p model.Process) {
		var c model.Conn
		c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			if ev&model.Writable != 0 {
				c.Write([]byte("hi"))
			}
			if ev&model.Readable != 0 {
				var b [16]byte
				n, _ := c.Read(b[:])
				reply = append(reply, b[:n]...)
				if len(reply) == 2 {
					c.Close()
				}
			}
		})
	})
	run(t, w, 5*time.Second)
	if string(reply) != "hi" {
		t.Errorf("reply %q", reply)
	}
	if s := srv.FDs(); s.ByKind[model.FDEpoll] != 1 || s.ByKind[model.FDSocket] != 0 {
		t.Errorf("server fds after closing the selector: %+v", s)
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}
}

func TestUnixFDPassing(t *testing.T) {
	w := newWorld(t)
	const content = "block 1 bytes"
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen("unix", "dn_socket", 4, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	f, err := srv.Disk().Open("blk_1", model.ReadWrite|model.Create|model.Excl, model.FDBlockFile)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte(content), 0)
	f.Close()
	acceptAll(srv, ln, func(c model.Conn) {
		c.SetHandler(srv.MainLoop(), func(ev model.Events) {
			if ev&model.Readable != 0 {
				var b [1]byte
				if _, err := c.Read(b[:]); err == io.EOF {
					c.Close()
				}
			}
		})
		ro, err := srv.Disk().Open("blk_1", model.ReadOnly, model.FDBlockFile)
		if err != nil {
			failf(srv, "open: %v", err)
			return
		}
		if n, err := c.SendFDs([]byte{'!'}, []model.File{ro, ro}); n != 1 || err != nil {
			failf(srv, "SendFDs: %d, %v", n, err)
		}
		// The client's copies stay valid after the server closes its fd
		// and deletes the file.
		ro.Close()
		srv.Disk().Unlink("blk_1")
	})
	var got string
	var passed int
	cl := spawn(t, w, "cl", 0, func(p model.Process) {
		var c model.Conn
		c, _ = p.Dial("unix", "dn_socket", p.MainLoop(), func(ev model.Events) {
			if ev&model.Readable == 0 {
				return
			}
			b := make([]byte, 8)
			n, files, err := c.ReadFDs(b)
			if err != nil {
				failf(p, "ReadFDs: %v", err)
				return
			}
			if n != 1 || len(files) != 2 {
				failf(p, "ReadFDs: %d bytes, %d files", n, len(files))
				return
			}
			passed = p.FDs().ByKind[model.FDPassed]
			buf := make([]byte, 100)
			m, err := files[0].ReadAt(buf, 0)
			if err != io.EOF {
				failf(p, "ReadAt: %v, want io.EOF at the end", err)
			}
			got = string(buf[:m])
			if files[0].Kind() != model.FDPassed {
				failf(p, "kind %v", files[0].Kind())
			}
			if _, err := files[1].WriteAt([]byte("x"), 0); !errors.Is(err, model.ErrNotSupported) {
				failf(p, "write to a read-only passed fd: %v", err)
			}
			for _, f := range files {
				f.Close()
			}
			c.Close()
			p.MainLoop().AfterFunc(20*time.Millisecond, p.World().Stop)
		})
	})
	run(t, w, 5*time.Second)
	if got != content || passed != 2 {
		t.Errorf("read %q through %d passed fds; want %q through 2", got, passed, content)
	}
	if s := cl.FDs(); s.ByKind[model.FDPassed] != 0 || s.Open != 2 {
		t.Errorf("client fds after closing: %+v", s)
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}
}

// TestFDLimit checks that the accounting limit is enforced, by every way
// of getting an fd, with ErrTooManyFiles.
func TestFDLimit(t *testing.T) {
	w := newWorld(t)
	srv := spawn(t, w, "dn", 5, nil) // loop (2) + listener + conn + file
	ln, err := srv.Listen("unix", "dn.sock", 4, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	acceptAll(srv, ln, func(c model.Conn) {
		c.SetHandler(srv.MainLoop(), func(model.Events) {})
		f, err := srv.Disk().Open("b", model.ReadWrite|model.Create, model.FDBlockFile)
		if err != nil {
			failf(srv, "open: %v", err)
			return
		}
		c.SendFDs([]byte("1"), []model.File{f})
		f.Close()
	})
	var errs []error
	spawn(t, w, "cl", 6, func(p model.Process) {
		var files []model.File
		for {
			f, err := p.Disk().Open(fmt.Sprintf("f%d", len(files)), model.ReadWrite|model.Create, model.FDFile)
			if err != nil {
				errs = append(errs, err)
				break
			}
			files = append(files, f)
		}
		if len(files) != 4 {
			failf(p, "opened %d files under a limit of 6 with a loop, want 4", len(files))
		}
		if s := p.FDs(); s.Open != 6 || s.Peak != 6 || s.Limit != 6 || s.ByKind[model.FDFile] != 4 {
			failf(p, "FDs %+v", s)
		}
		_, err := p.NewLoop("x")
		errs = append(errs, err)
		_, err = p.Listen("tcp", "127.0.0.1:0", 1, p.MainLoop())
		errs = append(errs, err)
		_, err = p.Dial("unix", "dn.sock", p.MainLoop(), nil)
		errs = append(errs, err)
		_, err = p.Disk().List("")
		errs = append(errs, err)
		// Keep one slot for the connection, then none for passed fds.
		for _, f := range files[1:] {
			f.Close()
		}
		files[0].Close()
		var fillers []model.File
		for i := range 3 {
			f, err := p.Disk().Open(fmt.Sprintf("g%d", i), model.ReadOnly|model.Create, model.FDFile)
			if err != nil {
				failf(p, "open: %v", err)
				return
			}
			fillers = append(fillers, f)
		}
		var c model.Conn
		c, err = p.Dial("unix", "dn.sock", p.MainLoop(), func(ev model.Events) {
			if ev&model.Readable == 0 {
				return
			}
			var b [4]byte
			n, files, err := c.ReadFDs(b[:])
			if n != 1 || len(files) != 0 || !errors.Is(err, model.ErrTooManyFiles) {
				failf(p, "ReadFDs at the limit: %d, %d files, %v; want 1 byte, no file, ErrTooManyFiles", n, len(files), err)
			}
			for _, f := range fillers {
				f.Close()
			}
			c.Close()
			p.MainLoop().AfterFunc(10*time.Millisecond, p.World().Stop)
		})
		if err != nil {
			failf(p, "dial: %v", err)
		}
	})
	run(t, w, 5*time.Second)
	if len(errs) != 5 {
		t.Fatalf("errors %v", errs)
	}
	for i, err := range errs {
		if !errors.Is(err, model.ErrTooManyFiles) {
			t.Errorf("error %d = %v, want ErrTooManyFiles", i, err)
		}
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}

	// accept at the limit leaves the connection queued.
	srv2 := spawn(t, w, "dn2", 3, nil)
	ln2, err := srv2.Listen("tcp", "127.0.0.1:0", 4, srv2.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	var acceptErr error
	ln2.SetHandler(func() {
		_, acceptErr = ln2.Accept()
		ln2.SetHandler(nil)
		srv2.MainLoop().AfterFunc(10*time.Millisecond, srv2.World().Stop)
	})
	spawn(t, w, "cl2", 0, func(p model.Process) {
		p.Dial("tcp", ln2.Addr(), p.MainLoop(), func(model.Events) {})
	})
	run(t, w, 5*time.Second)
	if !errors.Is(acceptErr, model.ErrTooManyFiles) {
		t.Errorf("accept at the limit: %v", acceptErr)
	}
}

func TestAddrInUseAndRefused(t *testing.T) {
	w := newWorld(t)
	p := spawn(t, w, "dn", 0, nil)
	ln, err := p.Listen("tcp", "127.0.0.1:0", 4, p.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Listen("tcp", ln.Addr(), 4, p.MainLoop()); !errors.Is(err, model.ErrAddrInUse) || !bytes.Contains([]byte(err.Error()), []byte(ln.Addr())) {
		t.Errorf("listen on a used port: %v, want ErrAddrInUse naming %s", err, ln.Addr())
	}
	uln, err := p.Listen("unix", "x.sock", 4, p.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Listen("unix", "x.sock", 4, p.MainLoop()); !errors.Is(err, model.ErrAddrInUse) {
		t.Errorf("listen on a used Unix path: %v", err)
	}
	for _, bad := range [][2]string{{"tcp", "nope"}, {"tcp", "127.0.0.1:99999"}, {"udp", "127.0.0.1:1"}, {"unix", "../escape.sock"}, {"unix", ""}} {
		if _, err := p.Listen(bad[0], bad[1], 1, p.MainLoop()); err == nil {
			t.Errorf("Listen(%q, %q): no error", bad[0], bad[1])
		}
	}
	// A port nobody listens on: close a listener to free one.
	addr := ln.Addr()
	ln.Close()
	uln.Close()
	results := map[string]error{}
	spawn(t, w, "cl", 0, func(p model.Process) {
		for _, a := range [][2]string{{"tcp", addr}, {"unix", "x.sock"}, {"unix", "never.sock"}} {
			var c model.Conn
			c, err := p.Dial(a[0], a[1], p.MainLoop(), func(ev model.Events) {
				if ev != model.Hangup {
					failf(p, "dial %v: events %v, want Hangup", a, ev)
				}
				results[a[1]] = c.Err()
				c.Close()
				if len(results) == 3 {
					p.World().Stop()
				}
			})
			if err != nil {
				failf(p, "dial %v: %v", a, err)
			}
		}
	})
	run(t, w, 5*time.Second)
	for a, err := range results {
		if !errors.Is(err, model.ErrRefused) {
			t.Errorf("dial %s: Err() = %v, want ErrRefused", a, err)
		}
	}
}

// TestDisconnectMidStream has a client read part of a stream and close
// with data unread (which resets the connection); the server must see the
// error, close, and leave no fd behind.
func TestDisconnectMidStream(t *testing.T) {
	w := newWorld(t)
	srv := spawn(t, w, "dn", 0, nil)
	ln, err := srv.Listen("tcp", "127.0.0.1:0", 16, srv.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	var serverErrs []error
	const clients = 5
	acceptAll(srv, ln, func(c model.Conn) {
		chunk := bytes.Repeat([]byte("d"), 64<<10)
		c.SetHandler(srv.MainLoop(), func(ev model.Events) {
			for {
				_, err := c.Write(chunk)
				if errors.Is(err, model.ErrWouldBlock) {
					return
				}
				if err != nil {
					serverErrs = append(serverErrs, err)
					c.Close()
					if len(serverErrs) == clients {
						srv.MainLoop().AfterFunc(10*time.Millisecond, srv.World().Stop)
					}
					return
				}
			}
		})
		c.SetReadInterest(false)
		c.SetWriteInterest(true)
	})
	for i := range clients {
		spawn(t, w, fmt.Sprintf("cl%d", i), 0, func(p model.Process) {
			var c model.Conn
			got := 0
			c, _ = p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
				if ev&model.Readable == 0 {
					return
				}
				buf := make([]byte, 16<<10)
				n, _ := c.Read(buf)
				if got += n; got > 100<<10 {
					if i%2 == 0 {
						c.Close() // unread data: the kernel resets
					} else {
						c.Abort()
					}
				}
			})
		})
	}
	run(t, w, 10*time.Second)
	for _, err := range serverErrs {
		if !errors.Is(err, model.ErrReset) && !errors.Is(err, model.ErrPipe) {
			t.Errorf("server write error %v, want reset or broken pipe", err)
		}
	}
	if s := srv.FDs(); s.ByKind[model.FDSocket] != 0 {
		t.Errorf("server has %d sockets left", s.ByKind[model.FDSocket])
	}
	if err := w.CheckFDs(); err != nil {
		t.Error(err)
	}
}

func TestClosedConnErrors(t *testing.T) {
	w := newWorld(t)
	p := spawn(t, w, "a", 0, nil)
	ln, err := p.Listen("unix", "s", 1, p.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Dial("unix", "s", p.MainLoop(), func(model.Events) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetNoDelay(true); err != nil {
		t.Errorf("SetNoDelay on a Unix socket: %v", err)
	}
	if _, _, err := c.ReadFDs(make([]byte, 1)); !errors.Is(err, model.ErrWouldBlock) {
		t.Errorf("ReadFDs with nothing queued: %v", err)
	}
	c.Close()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, model.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, model.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, model.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if err := c.Abort(); !errors.Is(err, model.ErrClosed) {
		t.Errorf("Abort after Close: %v", err)
	}
	// The accepted end, never given a loop, closes fine.
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if a.RemoteAddr() != "" || a.LocalAddr() != "s" {
		t.Errorf("accepted Unix conn addrs %q → %q", a.LocalAddr(), a.RemoteAddr())
	}
	if n, err := a.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Errorf("read from closed peer: %d, %v", n, err)
	}
	a.Close()
	tcp, err := p.Listen("tcp", "127.0.0.1:0", 1, p.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := p.Dial("tcp", tcp.Addr(), p.MainLoop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.SendFDs([]byte("x"), nil); !errors.Is(err, model.ErrNotSupported) {
		t.Errorf("SendFDs on TCP: %v", err)
	}
	tc.Close()
	tcp.Close()
	ln.Close()
	if s := p.FDs(); s.Open != 2 {
		t.Errorf("%d fds open, want the loop's 2", s.Open)
	}
}

// A Unix writer that asks for room after its peer closed is woken (the
// kernel reports EPOLLHUP, and EPOLLOUT by the send buffer alone) and its
// write fails with EPIPE: the rule the simulator follows
// (sim.TestUnixWriterWokenAfterPeerClose).
func TestUnixWriterWokenAfterPeerClose(t *testing.T) {
	var writeErr error
	asked, woken := false, false
	var p model.Process
	var c model.Conn
	w, p, c := unixLoopback(t, func(_ model.Process, c model.Conn) { c.Close() }, func(ev model.Events) {
		if ev&model.Writable == 0 || !asked || woken {
			return // (a connect's Writable, before the peer closed)
		}
		woken = true
		_, writeErr = c.Write([]byte("x"))
		p.World().Stop()
	})
	// Ask for room only once the peer has surely closed.
	p.MainLoop().AfterFunc(50*time.Millisecond, func() {
		asked = true
		c.SetWriteInterest(true)
	})
	run(t, w, 5*time.Second)
	if !woken {
		t.Fatal("the writer was not woken after its peer closed")
	}
	if !errors.Is(writeErr, model.ErrPipe) {
		t.Errorf("write after the peer closed: %v, want EPIPE", writeErr)
	}
}

// unixLoopback starts a world whose one process listens on a Unix socket,
// hands each conn it accepts to serve, and dials it with handler h and
// read interest off: the two ends of the tests of Unix sockets' rules.
func unixLoopback(t *testing.T, serve func(p model.Process, c model.Conn), h model.Handler) (*World, model.Process, model.Conn) {
	t.Helper()
	w := newWorld(t)
	p := spawn(t, w, "a", 0, nil)
	ln, err := p.Listen("unix", "s", 1, p.MainLoop())
	if err != nil {
		t.Fatal(err)
	}
	acceptAll(p, ln, func(c model.Conn) { serve(p, c) })
	c, err := p.Dial("unix", "s", p.MainLoop(), h)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadInterest(false)
	return w, p, c
}

// A Unix peer that closes with data unread: the writer's next write fails
// with EPIPE, its first read with ECONNRESET, and later reads see EOF, as
// the kernel gives them. The simulator follows it:
// sim.TestUnixCloseWithDataInTransitResetsWriter.
func TestUnixCloseWithDataUnread(t *testing.T) {
	w, p, c := unixLoopback(t, func(p model.Process, c model.Conn) {
		c.SetReadInterest(false)
		p.MainLoop().AfterFunc(20*time.Millisecond, func() { c.Close() })
	}, func(model.Events) {})
	if _, err := c.Write([]byte("unread")); err != nil {
		t.Fatal(err)
	}
	var errs [3]error
	p.MainLoop().AfterFunc(60*time.Millisecond, func() {
		_, errs[0] = c.Write([]byte("x"))
		buf := make([]byte, 16)
		_, errs[1] = c.Read(buf)
		_, errs[2] = c.Read(buf)
		p.World().Stop()
	})
	run(t, w, 5*time.Second)
	if !errors.Is(errs[0], model.ErrPipe) {
		t.Errorf("write: %v, want EPIPE", errs[0])
	}
	if !errors.Is(errs[1], model.ErrReset) {
		t.Errorf("first read: %v, want ECONNRESET", errs[1])
	}
	if errs[2] != io.EOF {
		t.Errorf("second read: %v, want EOF", errs[2])
	}
}

// A reset reaches a conn's handler as Hangup even with read and write
// interest off (epoll reports EPOLLERR and EPOLLHUP to every
// registration): the client's peer cache parks conns so and evicts them
// on Hangup. The handler hears it once; a handler set afterwards (a new
// owner taking the conn over) hears it once more, as a fresh epoll
// registration would. The simulator does the same:
// sim.TestResetReachesHandlerWithNoInterest.
func TestResetReachesHandlerWithNoInterest(t *testing.T) {
	w := newWorld(t)
	p := spawn(t, w, "a", 0, nil)
	ln := listenTCP(p, 16)
	if ln == nil {
		t.Fatal(w.Run(time.Millisecond))
	}
	acceptAll(p, ln, func(c model.Conn) {
		c.SetReadInterest(false)
		c.SetHandler(p.MainLoop(), func(model.Events) {})
		p.MainLoop().AfterFunc(30*time.Millisecond, func() { c.Abort() })
	})
	var h heard
	note := func(who string, ev model.Events, err error) {
		h.add(fmt.Sprintf("%s hangup=%v reset=%v", who, ev&model.Hangup != 0, errors.Is(err, model.ErrReset)))
	}
	var c model.Conn
	c, err := p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
		c.SetWriteInterest(false)
		c.SetReadInterest(false)
		c.SetHandler(p.MainLoop(), func(ev model.Events) { note("parked", ev, c.Err()) })
	})
	if err != nil {
		t.Fatal(err)
	}
	c.SetWriteInterest(true)
	p.MainLoop().AfterFunc(150*time.Millisecond, func() {
		c.SetHandler(p.MainLoop(), func(ev model.Events) { note("owner", ev, c.Err()) })
	})
	closeAndStopAfter(p, c, 300*time.Millisecond)
	run(t, w, 5*time.Second)
	if want := "[parked hangup=true reset=true owner hangup=true reset=true]"; h.String() != want {
		t.Errorf("handlers heard %v, want %s", h.String(), want)
	}
}

// A listener asked for a backlog ≤ 0 queues model.DefaultBacklog
// connections (and one more: Linux's accept queue is full only past its
// bound), the same as the simulator's (sim.TestDefaultBacklog); the
// others' SYNs are dropped until their retransmission, a second away.
func TestDefaultBacklog(t *testing.T) {
	w := newWorld(t)
	connected := 0
	spawn(t, w, "a", 0, func(p model.Process) {
		ln := listenTCP(p, 0)
		if ln == nil {
			return
		}
		for i := 0; i < model.DefaultBacklog+20; i++ {
			var c model.Conn
			c, err := p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
				if ev&model.Writable != 0 && c.Err() == nil {
					connected++
				}
				c.SetWriteInterest(false)
				c.SetReadInterest(false)
			})
			if err != nil {
				failf(p, "dial: %v", err)
				return
			}
			c.SetWriteInterest(true)
		}
		p.MainLoop().AfterFunc(300*time.Millisecond, func() { p.World().Stop() })
	})
	run(t, w, 5*time.Second)
	if connected != model.DefaultBacklog+1 {
		t.Errorf("%d connections completed with nobody accepting, want %d", connected, model.DefaultBacklog+1)
	}
}

// SetHandler onto a loop the model closed fails the world (its epoll is
// gone); the simulator does the same (sim.TestSetHandlerOnClosedLoopFails).
func TestSetHandlerOnClosedLoopFails(t *testing.T) {
	w := newWorld(t)
	serveTCP(t, w, func(p model.Process, c model.Conn) {
		l := extraLoop(p)
		if l == nil {
			return
		}
		l.Close()
		c.SetHandler(l, func(model.Events) {})
	}, func(p model.Process, ln model.Listener) { dialIdle(p, ln) })
	if err := w.Run(5 * time.Second); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run: %v, want the world failed for SetHandler on a closed loop", err)
	}
}

// resetByPeer runs a world in which a client dials a listener whose side
// aborts the connection 20 ms after accepting it (after shutting its
// write side, with finFirst), and calls onHangup with the client's conn
// when the reset reaches it; the client reads nothing before, so with
// finFirst the reset comes in CLOSE_WAIT.
func resetByPeer(t *testing.T, finFirst bool, onHangup func(c model.Conn)) {
	t.Helper()
	w := newWorld(t)
	serveTCP(t, w, func(p model.Process, c model.Conn) {
		c.SetReadInterest(false)
		c.SetHandler(p.MainLoop(), func(model.Events) {})
		if finFirst {
			c.CloseWrite()
		}
		p.MainLoop().AfterFunc(20*time.Millisecond, func() { c.Abort() })
	}, func(p model.Process, ln model.Listener) {
		var c model.Conn
		c, err := p.Dial("tcp", ln.Addr(), p.MainLoop(), func(ev model.Events) {
			c.SetWriteInterest(false)
			c.SetReadInterest(false)
			if ev&model.Hangup != 0 {
				onHangup(c)
				c.Close()
				p.World().Stop()
			}
		})
		if err != nil {
			failf(p, "dial: %v", err)
			return
		}
		c.SetWriteInterest(true)
	})
	run(t, w, 5*time.Second)
}

// serveTCP spawns process "a" listening on a loopback port: serve gets
// each conn it accepts, and client runs once it listens.
func serveTCP(t *testing.T, w *World, serve func(p model.Process, c model.Conn), client func(p model.Process, ln model.Listener)) {
	t.Helper()
	spawn(t, w, "a", 0, func(p model.Process) {
		ln := listenTCP(p, 4)
		if ln == nil {
			return
		}
		acceptAll(p, ln, func(c model.Conn) { serve(p, c) })
		client(p, ln)
	})
}

// listenTCP listens on a loopback port for p, or fails the world.
func listenTCP(p model.Process, backlog int) model.Listener {
	ln, err := p.Listen("tcp", "127.0.0.1:0", backlog, p.MainLoop())
	if err != nil {
		failf(p, "listen: %v", err)
		return nil
	}
	return ln
}

// After a reset a TCP conn's first read returns ECONNRESET, later reads
// EOF and writes EPIPE, as on Linux (sk_err is returned once; the socket
// is then shut both ways) and in the simulator (sim.TestRSTGivesErrReset).
func TestReadsAfterResetSeeEOF(t *testing.T) {
	var errs [4]error
	resetByPeer(t, false, func(c model.Conn) {
		buf := make([]byte, 8)
		_, errs[0] = c.Read(buf)
		_, errs[1] = c.Read(buf)
		_, errs[2] = c.Write([]byte("x"))
		_, errs[3] = c.Read(buf)
	})
	if !errors.Is(errs[0], model.ErrReset) || errs[1] != io.EOF || !errors.Is(errs[2], model.ErrPipe) || errs[3] != io.EOF {
		t.Errorf("read, read, write, read after a reset: %v, want ECONNRESET, EOF, EPIPE, EOF", errs)
	}
}

// A reset that comes after the peer's FIN is a Hangup (Err EPIPE, as
// tcp_reset sets it in CLOSE_WAIT), and reads stay at EOF, the FIN having
// come first, while writes fail with EPIPE; the simulator does the same
// (sim.TestResetInCloseWaitReadsEOF).
func TestResetInCloseWaitIsHangup(t *testing.T) {
	var hangup bool
	var errs [3]error
	resetByPeer(t, true, func(c model.Conn) {
		hangup = errors.Is(c.Err(), model.ErrPipe)
		buf := make([]byte, 8)
		_, errs[0] = c.Read(buf)
		_, errs[1] = c.Write([]byte("x"))
		_, errs[2] = c.Read(buf)
	})
	if !hangup || errs[0] != io.EOF || !errors.Is(errs[1], model.ErrPipe) || errs[2] != io.EOF {
		t.Errorf("hangup with EPIPE %v; read, write, read: %v, want true; EOF, EPIPE, EOF", hangup, errs)
	}
}
