package model_test

import (
	"fmt"
	"io"
	"testing"
	"time"

	"xceiver/model"
)

// opResult names what a read or write returned, for comparing the worlds.
func opResult(n int, err error) string {
	switch {
	case err == nil:
		return fmt.Sprint(n)
	case err == io.EOF:
		return "EOF"
	}
	return errName(err)
}

// serve listens on addr from p's main loop and hands it every connection
// it accepts, on that loop; a failed listen is reported to done, and
// serve returns nil.
func serve(p model.Process, network, addr string, done func(string), accepted func(c model.Conn)) model.Listener {
	ln, err := p.Listen(network, addr, 4, p.MainLoop())
	if err != nil {
		done("listen: " + err.Error())
		return nil
	}
	stopped := func() bool { return false }
	ln.SetHandler(func() { model.AcceptAll(p, p.MainLoop(), ln, "accept-error", stopped, accepted) })
	return ln
}

// resetScenario: a TCP server that writes pre (if any) and aborts 20 ms
// after accepting; the client, interests off, runs ops on Hangup.
func resetScenario(network, addr string, pre []byte, ops func(p model.Process, c model.Conn, f model.File) string) func(p model.Process, done func(string)) {
	return func(p model.Process, done func(string)) {
		ln := serve(p, network, addr, done, func(c model.Conn) {
			c.SetReadInterest(false)
			c.SetHandler(p.MainLoop(), func(model.Events) {})
			if pre != nil {
				c.Write(pre)
			}
			p.MainLoop().AfterFunc(20*time.Millisecond, func() {
				if network == "tcp" {
					c.Abort()
				} else {
					c.Close()
				}
			})
		})
		if ln == nil {
			return
		}
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		f.WriteAt([]byte("hello"), 0)
		var c model.Conn
		c, err := p.Dial(network, ln.Addr(), p.MainLoop(), func(ev model.Events) {
			c.SetWriteInterest(false)
			c.SetReadInterest(false)
			if ev&model.Hangup != 0 {
				s := ops(p, c, f)
				c.Close()
				f.Close()
				done(s)
			}
		})
		if err != nil {
			done("dial: " + err.Error())
			return
		}
		c.SetWriteInterest(true)
		if network == "unix" {
			c.Write([]byte("unread")) // the server closes with it unread
		}
	}
}

// After a reset, sendfile takes the error once as a write does, and a
// read then sees EOF, in both worlds (tcp_sendmsg's sk_err, once).
func TestSendfileThenReadAfterReset(t *testing.T) {
	sameInBoth(t, "ECONNRESET EOF")(untilDone(t, model.ProcessConfig{}, resetScenario("tcp", "127.0.0.1:0", nil, func(p model.Process, c model.Conn, f model.File) string {
		a, e1 := p.Disk().Sendfile(c, f, 0, 5)
		b, e2 := c.Read(make([]byte, 8))
		return opResult(a, e1) + " " + opResult(b, e2)
	})))
}

// After a reset, a read takes the error once, and sendfile then fails
// with EPIPE, in both worlds.
func TestReadThenSendfileAfterReset(t *testing.T) {
	sameInBoth(t, "ECONNRESET EPIPE")(untilDone(t, model.ProcessConfig{}, resetScenario("tcp", "127.0.0.1:0", nil, func(p model.Process, c model.Conn, f model.File) string {
		b, e2 := c.Read(make([]byte, 8))
		a, e1 := p.Disk().Sendfile(c, f, 0, 5)
		return opResult(b, e2) + " " + opResult(a, e1)
	})))
}

// Data queued before a reset is read first, then the error once, then
// EOF, as raw Linux sockets give them (real.TestRawLinuxDataThenReset).
func TestDataThenResetReads(t *testing.T) {
	sameInBoth(t, "5 ECONNRESET EOF ")(untilDone(t, model.ProcessConfig{}, resetScenario("tcp", "127.0.0.1:0", []byte("hello"), func(p model.Process, c model.Conn, f model.File) string {
		out := ""
		for i := 0; i < 3; i++ {
			n, err := c.Read(make([]byte, 8))
			out += opResult(n, err) + " "
		}
		return out
	})))
}

// A Unix conn's reset is read once, by ReadFDs as by Read, then EOF.
func TestUnixReadFDsAfterReset(t *testing.T) {
	sameInBoth(t, "ECONNRESET EOF EOF")(untilDone(t, model.ProcessConfig{}, resetScenario("unix", "rs.sock", nil, func(p model.Process, c model.Conn, f model.File) string {
		out := ""
		for i := 0; i < 2; i++ {
			n, _, err := c.ReadFDs(make([]byte, 8))
			out += opResult(n, err) + " "
		}
		n, err := c.Read(make([]byte, 8))
		return out + opResult(n, err)
	})))
}

// After a refused connect, a write returns the error once, then EPIPE,
// and a read EOF, in both worlds (Linux: sk_err once, then the socket is
// shut both ways, whatever the error).
func TestRefusedDialThenWrites(t *testing.T) {
	want := "ECONNREFUSED EPIPE EOF"
	sameInBoth(t, want)(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		var c model.Conn
		c, err := p.Dial("tcp", "127.0.0.1:1", p.MainLoop(), func(ev model.Events) {
			if ev&model.Hangup == 0 {
				return
			}
			a, e1 := c.Write([]byte("x"))
			b, e2 := c.Write([]byte("x"))
			n, e3 := c.Read(make([]byte, 8))
			c.Close()
			done(opResult(a, e1) + " " + opResult(b, e2) + " " + opResult(n, e3))
		})
		if err != nil {
			done("dial: " + err.Error())
		}
	}))
}
