package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

// A pread that misses the page cache sleeps on the device for the disk's
// latency and transfer time: the reading loop is blocked, but its core
// is free, so on a one-core process another loop runs meanwhile and the
// process is charged none of that time as CPU. (A slow-I/O fault adds to
// the same wait.)
func TestUncachedReadWaitsWithoutCPU(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.HostCores = 0
	cfg.Disk.PageCache = false
	cfg.Disk.Latency = 5 * ms
	w := New(cfg)
	var read, other time.Duration
	sp, err := w.Spawn("p", model.ProcessConfig{Cores: 1}, func(p model.Process) {
		f, err := p.Disk().Open("blk", model.ReadWrite|model.Create, model.FDFile)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, 4096), 0); err != nil {
			t.Fatal(err)
		}
		second, _ := p.NewLoop("second")
		l := p.MainLoop()
		l.AfterFunc(ms, func() {
			t0 := l.Now()
			second.Post(func() { other = second.Now() - t0 })
			if _, err := f.ReadAt(make([]byte, 4096), 0); err != nil {
				t.Error(err)
			}
			read = l.Now() - t0
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	proc := sp.(*Process)
	w.RunFor(20 * ms)
	lat := cfg.Disk.Latency
	if read < lat {
		t.Errorf("the uncached read returned after %v, want at least the disk's %v", read, lat)
	}
	if other >= lat {
		t.Errorf("the other loop ran %v after the read began, want it to run during the %v wait", other, lat)
	}
	if cpu := proc.CPUTime(); cpu >= lat {
		t.Errorf("process used %v CPU, want far less than the %v device wait", cpu, lat)
	}
}
