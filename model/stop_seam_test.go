package model_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
)

// StopThen's callback runs once the datanode is gone, in both worlds: the
// process holds what it held before the datanode started (and the client
// end of a connection that was open when it stopped), runs only its main
// loop, and a StopThen asked after that still runs.
func TestDatanodeStopThenRunsOnceReleased(t *testing.T) {
	const want = "while serving: 5 threads; released: 0 fds beyond the start and the client's end, 1 thread, the client heard the close: true; asked again: ran"
	sameInBoth(t, want)(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		fds0 := p.FDs().Open
		addr := "dn:50010"
		if p.World().Kind() == "real" {
			addr = "127.0.0.1:0"
		}
		dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: addr, Selectors: 2, Workers: 2})
		if err != nil {
			done(err.Error())
			return
		}
		heard := false
		c, err := p.Dial("tcp", dn.Addr(), p.MainLoop(), func(ev model.Events) {
			if ev&(model.Hangup|model.Readable) != 0 {
				heard = true
			}
		})
		if err != nil {
			done(err.Error())
			return
		}
		p.MainLoop().AfterFunc(50*time.Millisecond, func() {
			serving, _ := p.Threads()
			dn.StopThen(func() {
				threads, _ := p.Threads()
				got := fmt.Sprintf("while serving: %d threads; released: %d fds beyond the start and the client's end, %d thread", serving, p.FDs().Open-fds0-1, threads)
				// The datanode's end closed on its selector before the
				// loops went; the client's end hears of it a little later.
				p.MainLoop().AfterFunc(20*time.Millisecond, func() {
					got += fmt.Sprintf(", the client heard the close: %v", heard)
					c.Close()
					dn.StopThen(func() { done(got + "; asked again: ran") })
				})
			})
		})
	}))
}
