package shortcircuit_test

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
)

// A read against a domain socket whose accept queue never drains fails
// with the op's timeout, counted from when the wait began, in both worlds
// (the retries' nominal millisecond each ran 23% long in the real world,
// and the error was the dial's "operation would block").
func TestDialWaitEndsAtTheOpTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, world := range []string{"sim", "real"} {
		const path = "stuck_socket"
		var took time.Duration
		var rerr error
		err := inWorld(t, world, func(w model.World) error {
			_, err := w.Spawn("srv", model.ProcessConfig{}, func(p model.Process) {
				if _, err := p.Listen("unix", path, 1, p.MainLoop()); err != nil {
					w.Fail(err)
					return
				}
				if _, err := w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
					for { // fill the queue; nothing accepts
						_, err := cp.Dial("unix", path, cp.MainLoop(), func(model.Events) {})
						if errors.Is(err, model.ErrWouldBlock) {
							break
						}
						if err != nil {
							w.Fail(err)
							return
						}
					}
					cl, err := model.NewClient(cp, cp.MainLoop(), 0, model.ClientConfig{Datanode: path, Network: "unix", Timeout: timeout})
					if err != nil {
						w.Fail(err)
						return
					}
					t0 := cp.MainLoop().Now()
					cl.Read(1, 0, 0, 10, func(r model.Result) {
						took, rerr = cp.MainLoop().Now()-t0, r.Err
						w.Stop()
					})
				}); err != nil {
					w.Fail(err)
				}
			})
			if err != nil {
				return err
			}
			return w.Run(time.Minute)
		})
		if err != nil {
			t.Fatalf("%s: %v", world, err)
		}
		if !errors.Is(rerr, model.ErrTimedOut) {
			t.Errorf("%s: the read failed with %v, want a timeout", world, rerr)
		}
		// Exact in sim; real timers run late, never early.
		if took < timeout || (world == "sim" && took > timeout+time.Millisecond) || took > 3*timeout {
			t.Errorf("%s: the read failed after %v, want its %v timeout", world, took, timeout)
		}
	}
}
