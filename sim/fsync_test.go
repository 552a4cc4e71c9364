package sim

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
)

// waitOnDevice runs op on a file of a one-core process and reports how
// long op took, how soon after it began another loop of the process ran,
// and the process's CPU. A device wait (fsync, a read that misses the page
// cache) blocks the calling loop but frees the core: the other loop runs
// meanwhile and the wait is not CPU.
func waitOnDevice(t *testing.T, cfg Config, faults DiskFaults, op func(model.File) error) (took, other, cpu time.Duration) {
	t.Helper()
	cfg.HostCores = 0
	w := New(cfg)
	sp, err := w.Spawn("p", model.ProcessConfig{Cores: 1}, func(p model.Process) {
		f, err := p.Disk().Open("blk", model.ReadWrite|model.Create, model.FDFile)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, 4096), 0); err != nil {
			t.Fatal(err)
		}
		p.(*Process).SimDisk().SetFaults(faults)
		second, _ := p.NewLoop("second")
		l := p.MainLoop()
		l.AfterFunc(ms, func() {
			t0 := l.Now()
			second.Post(func() { other = second.Now() - t0 })
			if err := op(f); err != nil {
				t.Error(err)
			}
			took = l.Now() - t0
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	w.RunFor(20 * ms)
	return took, other, sp.(*Process).CPUTime()
}

// An fsync, a pread that misses the page cache and a slow-I/O fault on a
// cached pread each take their device time of the thread's time but none
// of its CPU.
func TestDeviceWaitsWithoutCPU(t *testing.T) {
	pread := func(f model.File) error {
		_, err := f.ReadAt(make([]byte, 4096), 0)
		return err
	}
	for _, tc := range []struct {
		name   string
		cache  bool
		faults DiskFaults
		op     func(model.File) error
	}{
		{"fsync", true, DiskFaults{}, model.File.Sync},
		{"uncached-pread", false, DiskFaults{}, pread},
		{"slow-pread", true, DiskFaults{SlowIO: 1, SlowDelay: 5 * ms}, pread},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(1)
			cfg.Disk.PageCache = tc.cache
			cfg.Disk.Latency = 5 * ms
			lat := cfg.Disk.Latency
			if tc.faults.SlowIO > 0 {
				lat = tc.faults.SlowDelay
			}
			took, other, cpu := waitOnDevice(t, cfg, tc.faults, tc.op)
			if took < lat {
				t.Errorf("returned after %v, want at least the device's %v", took, lat)
			}
			if other >= lat {
				t.Errorf("the other loop ran %v after the wait began, want it to run during the %v wait", other, lat)
			}
			if cpu >= lat {
				t.Errorf("process used %v CPU, want far less than the %v device wait", cpu, lat)
			}
		})
	}
}

// Sync faults: an fsync fails with EIO or waits SlowDelay longer, still
// without CPU; the bytes written before a failed fsync are in the page
// cache, so the file holds them (a process crash would keep them).
func TestFsyncFaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		faults  DiskFaults
		wantErr bool
		atLeast time.Duration
	}{
		{"eio", DiskFaults{SyncEIO: 1}, true, 0},
		{"slow", DiskFaults{SlowSync: 1, SlowDelay: 5 * ms}, false, 5 * ms},
		{"none", DiskFaults{SlowIO: 1, SlowDelay: 5 * ms}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(1)
			w := New(cfg)
			var took time.Duration
			var err error
			var size int64
			sp, _ := w.Spawn("p", model.ProcessConfig{Cores: 1}, func(p model.Process) {
				p.(*Process).SimDisk().SetFaults(tc.faults)
				f, oerr := p.Disk().Open("log", model.ReadWrite|model.Create, model.FDFile)
				if oerr != nil {
					t.Fatal(oerr)
				}
				l := p.MainLoop()
				t0 := l.Now()
				if _, werr := f.WriteAt([]byte("edit"), 0); werr != nil {
					t.Fatal(werr)
				}
				err = f.Sync()
				took = l.Now() - t0
				size, _ = f.Size()
			})
			w.RunFor(20 * ms)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, model.ErrIO)) {
				t.Fatalf("fsync error %v, want EIO %v", err, tc.wantErr)
			}
			if size != 4 {
				t.Errorf("file holds %d bytes after the fsync, want the 4 written", size)
			}
			if !tc.wantErr && took < cfg.Disk.Latency+tc.atLeast {
				t.Errorf("fsync took %v, want at least %v", took, cfg.Disk.Latency+tc.atLeast)
			}
			if tc.atLeast == 0 && took >= 5*ms {
				t.Errorf("fsync took %v: a read/write fault slowed it", took)
			}
			if cpu := sp.(*Process).CPUTime(); cpu >= cfg.Disk.Latency {
				t.Errorf("process used %v CPU, want far less than the fsync's wait", cpu)
			}
		})
	}
}

// A power loss takes back the writes no fsync made durable, and only
// those; a file created and never synced comes back empty.
func TestPowerLossKeepsOnlySyncedWrites(t *testing.T) {
	var sizes []int64
	onTrackedDisk(func(p model.Process, d *Disk) {
		f, _ := p.Disk().Open("log", model.ReadWrite|model.Create, model.FDFile)
		g, _ := p.Disk().Open("other", model.ReadWrite|model.Create, model.FDFile)
		f.WriteAt([]byte("synced"), 0)
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("-lost"), 6)
		g.WriteAt([]byte("never synced"), 0)
		p.(*Process).Crash()
		d.PowerLoss()
		for _, name := range []string{"log", "other"} {
			n, _ := p.(*Process).FileSize(name)
			sizes = append(sizes, n)
		}
	})
	if fmt.Sprint(sizes) != "[6 0]" {
		t.Errorf("after the power loss the files hold %v bytes, want [6 0]", sizes)
	}
}

// A failed fsync marks its pages clean, as Linux has since 4.13: the bytes
// stay in the page cache and reads see them, but a retried fsync succeeds
// without writing them, and a power loss loses them. A later fsync writes
// only pages written since (and the file's size); bytes written again
// reach the device.
func TestFsyncAfterEIOLosesThePages(t *testing.T) {
	page := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	for _, rewrite := range []bool{false, true} {
		var got, cached []byte
		var errs []error
		onTrackedDisk(func(p model.Process, d *Disk) {
			f, _ := p.Disk().Open("log", model.ReadWrite|model.Create, model.FDFile)
			f.WriteAt(page('a', 4096), 0)
			errs = append(errs, f.Sync())
			f.WriteAt(page('b', 100), 0)
			f.WriteAt(page('c', 4096), 4096)
			d.SetFaults(DiskFaults{SyncEIO: 1})
			errs = append(errs, f.Sync())
			d.SetFaults(DiskFaults{})
			errs = append(errs, f.Sync()) // the retry: nothing left to write
			cached = make([]byte, 8192)
			f.ReadAt(cached, 0)
			f.WriteAt(page('d', 4096), 8192)
			if rewrite {
				f.WriteAt(cached, 0)
			}
			errs = append(errs, f.Sync())
			p.(*Process).Crash()
			d.PowerLoss()
			got = bytes.Clone(d.names["log"].data) // (the process is down: no fd to read it)
		})
		if len(errs) != 4 || errs[0] != nil || !errors.Is(errs[1], model.ErrIO) || errs[2] != nil || errs[3] != nil {
			t.Fatalf("rewrite %v: fsyncs returned %v, want nil, EIO, nil, nil", rewrite, errs)
		}
		if want := append(append(page('b', 100), page('a', 3996)...), page('c', 4096)...); !bytes.Equal(cached, want) {
			t.Errorf("rewrite %v: after the failed fsync the cache reads differently from what was written", rewrite)
		}
		want := append(append(page('a', 4096), make([]byte, 4096)...), page('d', 4096)...)
		if rewrite {
			want = append(append(page('b', 100), page('a', 3996)...), append(page('c', 4096), page('d', 4096)...)...)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("rewrite %v: after the power loss the file holds %d bytes, %q..., want %d, %q...", rewrite, len(got), summary(got), len(want), summary(want))
		}
	}
}

// summary is the first byte of each page, for a failure message.
func summary(b []byte) []byte {
	var s []byte
	for i := 0; i < len(b); i += 4096 {
		s = append(s, b[i])
	}
	return s
}

// A truncate reaches the device with the next successful fsync: a page
// left a hole after it reads zeros after a power loss, not the bytes the
// file held before the truncate (writeback copied only dirty pages, and
// the hole is not one).
func TestTruncateThenFsyncLeavesHolesZero(t *testing.T) {
	var got []byte
	onTrackedDisk(func(p model.Process, d *Disk) {
		f, _ := p.Disk().Open("blk", model.ReadWrite|model.Create, model.FDFile)
		f.WriteAt(bytes.Repeat([]byte{'x'}, 3*4096), 0)
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		g, _ := p.Disk().Open("blk", model.ReadWrite|model.Truncate, model.FDFile)
		g.WriteAt([]byte("y"), 5000) // page 0 a hole
		if err := g.Sync(); err != nil {
			t.Fatal(err)
		}
		p.(*Process).Crash()
		d.PowerLoss()
		got = bytes.Clone(d.names["blk"].data)
	})
	if len(got) != 5001 || !bytes.Equal(got[:5000], make([]byte, 5000)) || got[5000] != 'y' {
		t.Errorf("after the power loss the file holds %d bytes, %q... at 0, want 5001 bytes, zeros then y", len(got), summary(got))
	}
}

// onTrackedDisk runs body as process "p" of a new world whose disk tracks
// durability (as the namenode's does), for 10 ms of virtual time.
func onTrackedDisk(body func(p model.Process, d *Disk)) {
	w := New(DefaultConfig(1))
	w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		d := p.(*Process).SimDisk()
		d.TrackDurability()
		body(p, d)
	})
	w.RunFor(10 * ms)
}
