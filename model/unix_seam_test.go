package model_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
)

// unixPair connects a Unix socket to a listener in the same process,
// then calls body with the dialled end and the accepted end, both with
// interests off, 20 ms later (so whatever body sends has arrived by the
// time it reads again after another wait).
func unixPair(body func(p model.Process, cl, sv model.Conn, done func(string))) func(p model.Process, done func(string)) {
	return connPair("unix", "pair.sock", body)
}

// connPair is unixPair on network at addr.
func connPair(network, addr string, body func(p model.Process, cl, sv model.Conn, done func(string))) func(p model.Process, done func(string)) {
	return func(p model.Process, done func(string)) {
		ln, err := p.Listen(network, addr, 4, p.MainLoop())
		if err != nil {
			done("listen: " + err.Error())
			return
		}
		var cl, sv model.Conn
		ln.SetHandler(func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ln.SetHandler(nil)
			sv = c
			sv.SetReadInterest(false)
			sv.SetHandler(p.MainLoop(), func(model.Events) {})
			p.MainLoop().AfterFunc(20*time.Millisecond, func() { body(p, cl, sv, done) })
		})
		cl, err = p.Dial(network, ln.Addr(), p.MainLoop(), func(model.Events) {})
		if err != nil {
			done("dial: " + err.Error())
			return
		}
		cl.SetReadInterest(false)
	}
}

// Files travel on Unix sockets only: ReadFDs on TCP is ENOTSUP in both
// worlds, and reads nothing. (Before, the sim's read the bytes.)
func TestTCPReadFDsNotSupported(t *testing.T) {
	sameInBoth(t, "unsupported; then read 2")(untilDone(t, model.ProcessConfig{}, connPair("tcp", "127.0.0.1:0", func(p model.Process, cl, sv model.Conn, done func(string)) {
		sv.Write([]byte("hi"))
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			b := make([]byte, 10)
			n, _, err := cl.ReadFDs(b)
			a := opResult(n, err)
			n, err = cl.Read(b)
			cl.Close()
			sv.Close()
			done(a + "; then read " + opResult(n, err))
		})
	})))
}

func readFDsResult(n int, files []model.File, err error, b []byte) string {
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		return opResult(n, err)
	}
	return fmt.Sprintf("%q+%dfd", b[:n], len(files))
}

// A recvmsg glues bytes sent before a message that carries fds onto it
// and stops after that message (unix_stream_read_generic; raw sockets in
// real/rawunix_test.go): [aaa][bbb+fd][ccc] reads "aaabbb"+fd, then
// "ccc". (Before, the sim stopped before the fds and read on past them:
// "aaa", then "bbbccc"+fd.)
func TestUnixReadStopsAfterFDs(t *testing.T) {
	want := `"aaabbb"+1fd "ccc"+0fd`
	sameInBoth(t, want)(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		sv.Write([]byte("aaa"))
		if _, err := sv.SendFDs([]byte("bbb"), []model.File{f}); err != nil {
			done("sendfds: " + err.Error())
			return
		}
		sv.Write([]byte("ccc"))
		f.Close()
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			var out []string
			for i := 0; i < 2; i++ {
				b := make([]byte, 100)
				n, files, err := cl.ReadFDs(b)
				out = append(out, readFDsResult(n, files, err, b))
			}
			cl.Close()
			sv.Close()
			done(fmt.Sprint(out[0], " ", out[1]))
		})
	})))
}

// A partial read takes a message's fds with its first bytes; the rest
// of it carries none, so the next read runs on into the next message and
// stops after that one's fds, as Linux's (real/rawunix_test.go).
func TestUnixPartialReadThenNextFDs(t *testing.T) {
	sameInBoth(t, `"x"+1fd "xy"+1fd`)(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		sv.SendFDs([]byte("xx"), []model.File{f})
		sv.SendFDs([]byte("y"), []model.File{f})
		f.Close()
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			b := make([]byte, 1)
			n, files, err := cl.ReadFDs(b)
			first := readFDsResult(n, files, err, b)
			b = make([]byte, 100)
			n, files, err = cl.ReadFDs(b)
			cl.Close()
			sv.Close()
			done(first + " " + readFDsResult(n, files, err, b))
		})
	})))
}

// A Unix listener's backlog admits backlog+1 connections
// (unix_recvq_full: queue length > sk_max_ack_backlog) before a
// non-blocking connect fails with EAGAIN. (Before, the sim one fewer.)
func TestUnixBacklogAdmitsOneMore(t *testing.T) {
	sameInBoth(t, "ok ok EAGAIN")(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		ln, err := p.Listen("unix", "bl.sock", 1, p.MainLoop())
		if err != nil {
			done("listen: " + err.Error())
			return
		}
		var out []string
		var conns []model.Conn
		for i := 0; i < 3; i++ {
			c, err := p.Dial("unix", "bl.sock", p.MainLoop(), func(model.Events) {})
			switch {
			case err == nil:
				out = append(out, "ok")
				conns = append(conns, c)
			case errors.Is(err, model.ErrWouldBlock):
				out = append(out, "EAGAIN")
			default:
				out = append(out, err.Error())
			}
		}
		for _, c := range conns {
			c.Close()
		}
		ln.Close()
		done(fmt.Sprint(out[0], " ", out[1], " ", out[2]))
	}))
}

// A dial to a Unix path nobody listens on returns a conn, and the
// failure comes as Hangup with Err ECONNREFUSED (connect's ENOENT), as a
// refused TCP dial's does. (Before, the sim's Dial returned the error.)
func TestUnixRefusedDialHangsUp(t *testing.T) {
	sameInBoth(t, "conn, then Hangup ECONNREFUSED")(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		var c model.Conn
		c, err := p.Dial("unix", "nobody.sock", p.MainLoop(), func(ev model.Events) {
			if ev&model.Hangup != 0 {
				err := c.Err()
				c.Close()
				done("conn, then Hangup " + opResult(0, err))
			}
		})
		if err != nil {
			done("Dial error " + opResult(0, err))
		}
	}))
}

// A plain Read of a message carrying fds, at the fd limit: read(2) has no
// control buffer, so the kernel drops the fds without installing them
// (MSG_CTRUNC, invisible to read) and returns the bytes, no error.
// (Before, the sim installed them, failed at the limit, and said so.)
func TestUnixPlainReadDropsFDsAtFDLimit(t *testing.T) {
	pc := model.ProcessConfig{FDLimit: 8}
	sameInBoth(t, "3")(untilDone(t, pc, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		if _, err := sv.SendFDs([]byte("abc"), []model.File{f}); err != nil {
			done("sendfds: " + err.Error())
			return
		}
		files := fillFDs(p)
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			n, err := cl.Read(make([]byte, 100))
			for _, g := range files {
				g.Close()
			}
			f.Close()
			cl.Close()
			sv.Close()
			done(opResult(n, err))
		})
	})))
}

// A passed fd shares the sender's open file description, its access mode
// included: a file opened read-write stays writable in the receiver.
// (Before, the sim passed every file read-only.)
func TestUnixPassedFileKeepsItsMode(t *testing.T) {
	sameInBoth(t, "write 1 <nil>")(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		sv.SendFDs([]byte("x"), []model.File{f})
		f.Close()
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			b := make([]byte, 10)
			_, files, err := cl.ReadFDs(b)
			if err != nil || len(files) != 1 {
				done(fmt.Sprint("readfds ", len(files), err))
				return
			}
			n, werr := files[0].WriteAt([]byte("y"), 0)
			files[0].Close()
			cl.Close()
			sv.Close()
			done(fmt.Sprint("write ", n, " ", werr))
		})
	})))
}

// More than SCM_MAX_FD (253) fds in one message is EINVAL.
func TestUnixSCMMaxFD(t *testing.T) {
	sameInBoth(t, "invalid")(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		files := make([]model.File, 254)
		for i := range files {
			files[i] = f
		}
		n, err := sv.SendFDs([]byte("x"), files)
		f.Close()
		cl.Close()
		sv.Close()
		if err == nil {
			done(fmt.Sprint("sent ", n))
			return
		}
		done(errName(err))
	})))
}

// SendFDs of nothing with no files is a zero write; a zero-length Read
// or ReadFDs of an empty queue reads nothing.
func TestUnixZeroLengthEdges(t *testing.T) {
	sameInBoth(t, "sendfds0 0; read0 0; readfds0 0")(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		n, err := sv.SendFDs(nil, nil)
		a := opResult(n, err)
		n, err = cl.Read(nil)
		b := opResult(n, err)
		n, _, err = cl.ReadFDs(nil)
		c := opResult(n, err)
		cl.Close()
		sv.Close()
		done("sendfds0 " + a + "; read0 " + b + "; readfds0 " + c)
	})))
}

// SendFDs with files and no bytes is refused as an invalid argument in
// both worlds. (Linux's sendmsg would send nothing and drop the fds.)
func TestUnixZeroByteFDsInvalid(t *testing.T) {
	sameInBoth(t, "invalid")(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		_, err := sv.SendFDs(nil, []model.File{f})
		f.Close()
		cl.Close()
		sv.Close()
		done(errName(err))
	})))
}
