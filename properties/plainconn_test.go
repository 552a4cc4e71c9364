package properties

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// A tcp-pattern run on plain connections (no ViewReader: model.ReadView
// reads into the buffer, as on real's) is the run sim's ReadView makes:
// the same events, hash and latencies.
func TestPlainConnsRunAsSims(t *testing.T) {
	run := func(plain bool) (string, model.Latencies) {
		w := sim.New(sim.DefaultConfig(3))
		var mw model.World = w
		if plain {
			mw = plainWorld{w}
		}
		s := model.TCPPattern{Writes: 3, Msg: 3000, Reply: 70000, Ops: 5, NoDelay: true}
		res, err := model.RunTCPPattern(mw, s, time.Minute)
		if err != nil {
			t.Fatalf("plain %v: %v", plain, err)
		}
		return w.TraceHashString(), res.Latencies.Listed()
	}
	h0, l0 := run(false)
	h1, l1 := run(true)
	if h0 != h1 || len(l0) != len(l1) {
		t.Fatalf("trace %s with sim's conns, %s with plain ones (%d and %d ops)", h0, h1, len(l0), len(l1))
	}
	for i := range l0 {
		if l0[i] != l1[i] {
			t.Fatalf("op %d took %v with sim's conns, %v with plain ones", i, l0[i], l1[i])
		}
	}
}
