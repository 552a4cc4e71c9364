package sim

import (
	"errors"
	"io"
	"testing"
	"time"

	"xceiver/model"
)

// A datanode that cannot listen (its address taken) fails to start and
// leaves nothing behind: its selectors' loops, made before the listen,
// are closed, their fds and threads given back.
func TestFailedStartClosesItsLoops(t *testing.T) {
	w := New(DefaultConfig(1))
	var err error
	fds, threads := [2]int{-1, -1}, [2]int{-1, -1}
	w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		if _, err := p.Listen("tcp", "dn:50010", 16, p.MainLoop()); err != nil {
			w.Fail(err)
			return
		}
		fds[0], threads[0] = p.FDs().Open, threadsNow(p)
		_, err = model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010", Selectors: 3})
		fds[1], threads[1] = p.FDs().Open, threadsNow(p)
		w.Stop()
	})
	if runErr := w.Run(time.Minute); runErr != nil {
		t.Fatal(runErr)
	}
	if !errors.Is(err, model.ErrAddrInUse) || fds[1] != fds[0] || threads[1] != threads[0] {
		t.Errorf("StartDatanode on a taken address: %v; fds %d before, %d after; threads %d, %d: want EADDRINUSE and nothing left open", err, fds[0], fds[1], threads[0], threads[1])
	}
}

// A connection handed to a stopped datanode (Adopt: another endpoint
// accepted it) is closed, not served: its client sees the end of the
// stream at once.
func TestStoppedDatanodeClosesAnAdoptedConn(t *testing.T) {
	w := New(DefaultConfig(1))
	eofAt := time.Duration(-1)
	w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010"})
		if err != nil {
			w.Fail(err)
			return
		}
		dn.Stop()
		ln, err := p.Listen("tcp", "dn:9000", 16, p.MainLoop())
		if err != nil {
			w.Fail(err)
			return
		}
		ln.SetHandler(func() {
			if c, err := ln.Accept(); err == nil {
				dn.Adopt(c, nil, false)
			}
		})
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			l := cp.MainLoop()
			var c model.Conn
			c, err := cp.Dial("tcp", "dn:9000", l, func(ev model.Events) {
				var b [16]byte
				if _, err := c.Read(b[:]); errors.Is(err, io.EOF) && eofAt < 0 {
					eofAt = l.Now()
					c.Close()
				}
			})
			if err != nil {
				w.Fail(err)
				return
			}
			l.AfterFunc(time.Second, w.Stop)
		})
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if eofAt < 0 || eofAt > 10*time.Millisecond {
		t.Errorf("a connection adopted by a stopped datanode: its client saw the end of the stream at %v (-1: never), want at once", eofAt)
	}
}

func threadsNow(p model.Process) int {
	now, _ := p.(*Process).Threads()
	return now
}
