package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// An fsync takes the disk's latency of the thread's time but none of its
// CPU: on a one-core process, another loop runs while the first waits.
func TestFsyncWaitsWithoutCPU(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.HostCores = 0
	w := New(cfg)
	lat := cfg.Disk.Latency
	var synced, other time.Duration
	sp, err := w.Spawn("p", model.ProcessConfig{Cores: 1}, func(p model.Process) {
		f, err := p.Disk().Open("log", model.ReadWrite|model.Create, model.FDFile)
		if err != nil {
			t.Fatal(err)
		}
		second, _ := p.NewLoop("second")
		l := p.MainLoop()
		l.AfterFunc(ms, func() {
			t0 := l.Now()
			second.Post(func() { other = second.Now() - t0 })
			if err := f.Sync(); err != nil {
				t.Error(err)
			}
			synced = l.Now() - t0
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	proc := sp.(*Process)
	w.RunFor(10 * ms)
	if synced < lat {
		t.Errorf("fsync returned after %v, want at least the disk's %v", synced, lat)
	}
	if other >= lat {
		t.Errorf("the other loop ran %v after the fsync began, want it to run during the %v wait", other, lat)
	}
	if cpu := proc.CPUTime(); cpu >= lat {
		t.Errorf("process used %v CPU, want far less than the %v fsync", cpu, lat)
	}
}
