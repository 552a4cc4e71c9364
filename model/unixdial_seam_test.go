package model_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
)

// Dial's contract: "The connection reports Writable once established".
// A Unix dial with default interests (read on, write off) hears Writable
// once in real (EPOLLOUT registered while connecting), as a sim TCP dial
// does; the sim's Unix dial reports nothing.
func TestUnixDialReportsWritableOnce(t *testing.T) {
	sameInBoth(t, "[Writable]")(untilDone(t, model.ProcessConfig{}, func(p model.Process, done func(string)) {
		ln, err := p.Listen("unix", "w.sock", 4, p.MainLoop())
		if err != nil {
			done(err.Error())
			return
		}
		var evs []string
		c, err := p.Dial("unix", "w.sock", p.MainLoop(), func(ev model.Events) { evs = append(evs, ev.String()) })
		if err != nil {
			done(err.Error())
			return
		}
		p.MainLoop().AfterFunc(20*time.Millisecond, func() {
			c.Close()
			ln.Close()
			done(fmt.Sprint(evs))
		})
	}))
}
