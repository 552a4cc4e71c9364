package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

func TestDialReportsWritableOnce(t *testing.T) {
	w := New(DefaultConfig(1))
	w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
		ln, _ := p.Listen("tcp", "s:1", 0, p.MainLoop())
		ln.SetHandler(func() { ln.Accept() })
	})
	var got []model.Events
	w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		p.Dial("tcp", "s:1", p.MainLoop(), func(ev model.Events) { got = append(got, ev) })
	})
	w.RunFor(100 * time.Millisecond)
	if len(got) != 1 || got[0]&model.Writable == 0 {
		t.Fatalf("events %v", got)
	}
}
