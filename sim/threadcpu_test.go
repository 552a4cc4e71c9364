package sim

import (
	"slices"
	"testing"
	"time"

	"xceiver/model"
)

// threadCPUWorld runs two processes of one kind, each a main loop that
// posts three callbacks, each of which hands a worker an item.
func threadCPUWorld(t *testing.T, wakeCPU time.Duration) (*World, time.Duration) {
	t.Helper()
	cfg := DefaultConfig(1)
	cfg.CPU.WakeupCPU = wakeCPU
	w := New(cfg)
	for _, name := range []string{"client-1", "client-12"} {
		_, err := w.Spawn(name, model.ProcessConfig{Cores: 2}, func(p model.Process) {
			l := p.MainLoop()
			wp := p.NewWorkerPool("worker", 2)
			for range 3 {
				l.Post(func() {
					w.charge(10 * us)
					wp.Submit(l, func() { w.charge(20 * us) }, nil)
				})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.RunFor(10 * ms); err != nil {
		t.Fatal(err)
	}
	var cpu time.Duration
	for _, p := range w.Processes() {
		cpu += p.CPUTime()
	}
	return w, cpu
}

func TestThreadCPUIsEachKindsCallbacks(t *testing.T) {
	w, cpu := threadCPUWorld(t, 0)
	got := w.ThreadCPU()
	if names := []string{got[0].Thread, got[len(got)-1].Thread}; len(got) != 2 || !slices.Equal(names, []string{"client/main", "client/worker"}) {
		t.Fatalf("kinds %v, want client/main and client/worker (numbers dropped)", got)
	}
	cb := w.cfg.CPU.Callback
	main, worker := got[0], got[1]
	// Each process's main callback, then its three posts.
	if main.Callbacks != 8 || worker.Callbacks != 6 {
		t.Errorf("callbacks: main %d, worker %d; want 8 and 6", main.Callbacks, worker.Callbacks)
	}
	// A callback's dispatch is the thread's, not its kind's: the real
	// world's accounting does not see it either.
	if want := 6 * 20 * us; worker.CPU != want {
		t.Errorf("worker CPU %v, want %v (six items of 20 µs, not their dispatch)", worker.CPU, want)
	}
	// Without wake-ups' CPU, the rest is the 14 dispatches.
	if dispatches := 14 * cb; main.CPU+worker.CPU+dispatches != cpu {
		t.Errorf("kinds' CPU %v + %v and 14 dispatches of %v, processes' %v: want equal", main.CPU, worker.CPU, cb, cpu)
	}

	// A wake-up's CPU is the process's but outside every callback.
	w2, cpu2 := threadCPUWorld(t, 7*us)
	if got2 := w2.ThreadCPU(); !slices.Equal(got2, got) {
		t.Errorf("with wake-ups' CPU the kinds are %v, want %v as without", got2, got)
	}
	if cpu2 <= cpu || (cpu2-cpu)%(7*us) != 0 {
		t.Errorf("processes' CPU %v with wake-ups, %v without: want more, by whole wake-ups", cpu2, cpu)
	}
}
