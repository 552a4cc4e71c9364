package model_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
)

func sameInBothWorlds(t *testing.T) func(simGot, realGot string) {
	return func(simGot, realGot string) {
		t.Helper()
		t.Logf("sim:  %s", simGot)
		t.Logf("real: %s", realGot)
		if simGot != realGot {
			t.Errorf("worlds differ:\nsim:  %s\nreal: %s", simGot, realGot)
		}
	}
}

// ReadFDs of a two-fd message with room for one.
func TestReadFDsPartialRoom(t *testing.T) {
	sameInBothWorlds(t)(untilDone(t, model.ProcessConfig{FDLimit: 8}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		g, _ := p.Disk().Open("g", model.ReadWrite|model.Create, model.FDFile)
		if _, err := sv.SendFDs([]byte("abc"), []model.File{f, g}); err != nil {
			done("sendfds: " + err.Error())
			return
		}
		files := fillFDs(p)
		files[len(files)-1].Close()
		files = files[:len(files)-1]
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			b := make([]byte, 100)
			n, got, err := cl.ReadFDs(b)
			s := fmt.Sprint(n, " ", len(got), " ", errName(err))
			for _, x := range got {
				x.Close()
			}
			n, got, err = cl.ReadFDs(b)
			s += "; then " + readFDsResult(n, got, err, b)
			for _, x := range files {
				x.Close()
			}
			f.Close()
			g.Close()
			cl.Close()
			sv.Close()
			done(s)
		})
	})))
}

// The reader closes with an fd message unread; the sender reads, writes.
func TestCloseWithFDsUnread(t *testing.T) {
	sameInBothWorlds(t)(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		sv.SendFDs([]byte("abc"), []model.File{f})
		f.Close()
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			cl.Close()
			p.MainLoop().AfterFunc(20*time.Millisecond, func() {
				var out []string
				for i := 0; i < 2; i++ {
					n, err := sv.Read(make([]byte, 10))
					out = append(out, opResult(n, err))
				}
				n, err := sv.Write([]byte("x"))
				out = append(out, opResult(n, err))
				n, err = sv.SendFDs([]byte("x"), nil)
				out = append(out, opResult(n, err))
				sv.Close()
				done(fmt.Sprint(out))
			})
		})
	})))
}

// Sender sends fds and closes at once; the reader still gets them, then EOF.
func TestSenderClosesWithFDsInFlight(t *testing.T) {
	sameInBothWorlds(t)(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		f.WriteAt([]byte("data"), 0)
		sv.SendFDs([]byte("abc"), []model.File{f})
		f.Close()
		sv.Close()
		p.Disk().Unlink("f")
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			b := make([]byte, 10)
			n, got, err := cl.ReadFDs(b)
			s := fmt.Sprint(n, " ", len(got), " ", errName(err))
			if len(got) == 1 {
				rb := make([]byte, 10)
				k, _ := got[0].ReadAt(rb, 0)
				s += " " + string(rb[:k])
				got[0].Close()
			}
			n, got, err = cl.ReadFDs(b)
			s += "; then " + readFDsResult(n, got, err, b)
			cl.Close()
			done(s)
		})
	})))
}

// Both ends have unread data when one closes: the survivor reads its
// data, then ECONNRESET, then EOF; it writes EPIPE.
func TestBothUnreadClose(t *testing.T) {
	sameInBothWorlds(t)(untilDone(t, model.ProcessConfig{}, unixPair(func(p model.Process, cl, sv model.Conn, done func(string)) {
		sv.Write([]byte("to-cl"))
		cl.Write([]byte("to-sv"))
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			sv.Close()
			p.MainLoop().AfterFunc(20*time.Millisecond, func() {
				var out []string
				n, err := cl.Write([]byte("x"))
				out = append(out, "w"+opResult(n, err))
				for i := 0; i < 3; i++ {
					n, err := cl.Read(make([]byte, 3))
					out = append(out, opResult(n, err))
				}
				out = append(out, "err="+errName(cl.Err()))
				cl.Close()
				done(fmt.Sprint(out))
			})
		})
	})))
}

// A listener closes with a connection not yet accepted (data and fds on
// it): the dialer hears Hangup, reads ECONNRESET then EOF, writes EPIPE.
func TestListenerClosedBeforeAccept(t *testing.T) {
	sameInBothWorlds(t)(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		ln, err := p.Listen("unix", "lc.sock", 4, p.MainLoop())
		if err != nil {
			done(err.Error())
			return
		}
		f, _ := p.Disk().Open("f", model.ReadWrite|model.Create, model.FDFile)
		var evs []string
		var c model.Conn
		c, err = p.Dial("unix", "lc.sock", p.MainLoop(), func(ev model.Events) {
			evs = append(evs, ev.String())
		})
		if err != nil {
			done(err.Error())
			return
		}
		c.SetReadInterest(false)
		p.MainLoop().AfterFunc(10*time.Millisecond, func() {
			n, err := c.SendFDs([]byte("abc"), []model.File{f})
			s := "send " + opResult(n, err)
			f.Close()
			p.MainLoop().AfterFunc(10*time.Millisecond, func() {
				ln.Close()
				p.MainLoop().AfterFunc(20*time.Millisecond, func() {
					var out []string
					for i := 0; i < 2; i++ {
						n, err := c.Read(make([]byte, 3))
						out = append(out, opResult(n, err))
					}
					n, err := c.Write([]byte("x"))
					out = append(out, "w"+opResult(n, err))
					c.Close()
					done(fmt.Sprint(s, " ", out, " events ", evs))
				})
			})
		})
	}))
}
