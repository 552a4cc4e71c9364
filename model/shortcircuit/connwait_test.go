package shortcircuit_test

import (
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// With the datanode's cap full of idle domain connections, the endpoint
// keeps one accepted connection waiting and accepts nothing more until it
// gets in; once it does, accepting must start again, or every connection
// behind it stays in the accept queue for good. Two honest readers arrive
// while three idle connections fill a cap of 4 (one left for TCP): both
// REQUEST_SHMs are answered, each once an idler has been silent for
// model.IdleGrace and is closed to make room. (Mutation testing found
// that check, at 300 seeds, missed an endpoint that never accepted again
// after its first wait.)
func TestAcceptResumesAfterWaiting(t *testing.T) {
	answered := map[string]model.Status{}
	var evicted int
	cappedWorld(t, 4, shortcircuit.ServerConfig{}, nil, func(w *sim.World, p model.Process, _ *model.Datanode, srv *shortcircuit.Server) {
		p.MainLoop().AfterFunc(20*time.Millisecond, func() { evicted = srv.Stats().Evicted })
		floodDomain(w, "flooder", 3)
		for i := range 2 {
			name := fmt.Sprintf("reader-%d", i)
			askShm(w, name, func(resp shortcircuit.Response, _ int, _ time.Duration) { answered[name] = resp.Status })
		}
	})
	for i := range 2 {
		name := fmt.Sprintf("reader-%d", i)
		switch st, ok := answered[name]; {
		case !ok:
			t.Errorf("%s's REQUEST_SHM never answered, want SUCCESS", name)
		case st != model.StatusSuccess:
			t.Errorf("%s's REQUEST_SHM answered %s, want SUCCESS", name, st)
		}
	}
	if evicted != 2 {
		t.Errorf("Stats().Evicted %d, want 2 (one idler closed for each reader)", evicted)
	}
}
