package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// model.Touched charges each page of a buffer once, at its first use
// (CPUFirstTouch at CPUConfig.PageFault a page).
func TestFirstTouchChargesEachPageOnce(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.CPU.PageFault = 10 * us
	w := New(cfg)
	var steps []time.Duration
	if _, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		l := p.MainLoop()
		var used model.Touched
		for _, n := range []int{5000, 6000, 8193, 100, 4096 * 4} {
			t0 := l.Now()
			used.Use(p, n)
			steps = append(steps, l.Now()-t0)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{20 * us, 0, 10 * us, 0, 10 * us}
	for i := range want {
		if i >= len(steps) || steps[i] != want[i] {
			t.Fatalf("charges %v, want %v (pages 2, 2, 3, 3, 4)", steps, want)
		}
	}
}

// A read client's input buffer pays its page faults at its first reads,
// once: its later ops reuse the buffer, already mapped, as a real
// client's do. So what the faults add to the clients' CPU is the same
// for 3 ops a client as for 30, a whole number of pages, and no more than
// the buffers' pages.
func TestReadClientInputBufferFaultsOnce(t *testing.T) {
	const clients = 2
	clientCPU := func(fault time.Duration, ops int) time.Duration {
		cfg := DefaultConfig(1)
		cfg.CPU.PageFault = fault
		w := New(cfg)
		s := model.DefaultReadScenario()
		s.Clients, s.Ops, s.ReadSize = clients, ops, 64<<10
		s.ProcessCPU = func(p model.Process) time.Duration { return p.(*Process).CPUTime() }
		res, err := model.RunRead(w, s, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops != clients*ops || res.Errors != 0 {
			t.Fatalf("%d ops, %d errors: want %d clean ops", res.Ops, res.Errors, clients*ops)
		}
		return res.ClientCPU
	}
	const fault = 10 * us
	few := clientCPU(fault, 3) - clientCPU(0, 3)
	many := clientCPU(fault, 30) - clientCPU(0, 30)
	maxPages := clients * model.Pages(model.MaxPacketLen+16<<10)
	if few <= 0 || few%fault != 0 || few > time.Duration(maxPages)*fault {
		t.Fatalf("the faults added %v to 3 ops a client: want a whole number of %v pages, at most %d", few, fault, maxPages)
	}
	if many != few {
		t.Errorf("the faults added %v to 30 ops a client, %v to 3: want them paid once", many, few)
	}
}
