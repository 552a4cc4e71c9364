package shortcircuit_test

import (
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// Releases queued behind one to a hung datanode do not each wait out the
// timeout: the first one's failure drops the segment, which frees every
// slot at the datanode, and those behind it then have no one to tell.
// Three replicas are cached, the datanode stops for good, the cache is
// closed: its three releases went one at a time, a second (the timeout)
// each, and Close took 3 s; it now takes one timeout.
func TestReleasesBehindAHungDatanodeEndTogether(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var took time.Duration
	var st shortcircuit.SharedStats
	startEnv(t, w, "dn:50010", "/run/dn_socket", shortcircuit.SharedConfig{Timeout: time.Second}, shortcircuit.ClientConfig{}, func(e *env) {
		loop := e.cp.MainLoop()
		read := func(b uint64) func(func()) {
			return func(next func()) { e.cl.ReadVia(b, 0, 0, 512, func(model.Result, bool) { next() }) }
		}
		steps(read(1), read(2), read(3),
			func(next func()) {
				w.Process("datanode").Pause(time.Hour)
				from := loop.Now()
				e.cl.Close()
				e.tcp.Close()
				e.sh.Close(loop, func() {
					took = loop.Now() - from
					e.sh.Stats(loop, func(s shortcircuit.SharedStats) { st = s; w.Stop() })
				})
			})
	})
	if st.SlotsReleased != 3 || st.ReleaseErrors != 1 {
		t.Errorf("closing the cache of 3 replicas with the datanode hung: %d slots released, %d release errors; want 3 and 1", st.SlotsReleased, st.ReleaseErrors)
	}
	if took > 1200*time.Millisecond {
		t.Errorf("closing the cache took %v with a 1 s timeout: the releases behind the first each waited it out", took)
	}
}
