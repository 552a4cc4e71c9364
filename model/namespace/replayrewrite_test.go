package namespace_test

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/sim"
)

// Replay writes what it replayed again before the namenode serves it, for
// a sync that failed before the restart left those pages clean, never
// written to the device. If that write fails, Replay fails: a namenode
// that served the replayed edits anyway would lose them, once answered
// to readers, at the next power loss. check's power loss at rest sees
// that only when no edit after the restart writes the same page again.
func TestReplayFailsWhenItCannotWriteTheLogAgain(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var err error
	n := -1
	w.Spawn("nn", model.ProcessConfig{}, func(p model.Process) {
		f, _ := p.Disk().Open("edits", model.ReadWrite|model.Create, model.FDFile)
		f.WriteAt(namespace.EditRecord(1, namespace.Request{Method: namespace.MethodMkdir, Path: "/x"}), 0)
		f.Close()
		ns, nerr := namespace.New(p, namespace.Config{EditLog: "edits"})
		if nerr != nil {
			t.Error(nerr)
			return
		}
		p.(*sim.Process).SimDisk().SetFaults(sim.DiskFaults{WriteEIO: 1})
		n, err = ns.Replay()
		ns.Close()
	})
	if rerr := w.Run(time.Second); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil || !errors.Is(err, model.ErrIO) {
		t.Errorf("Replay of 1 edit whose rewrite fails: %d replayed, error %v; want EIO", n, err)
	}
}
