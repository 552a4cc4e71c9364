package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
)

// Linux since 4.13 (errseq_t, mm/filemap.c file_check_and_advance_wb_err)
// reports a writeback error once to every open file description that was
// open when it happened, not once in all: a second fd's fsync after the
// first fd's failed one returns EIO too, for its pages were dropped as
// well. The sim returns nil there, though a power loss then takes the
// bytes back: the second writer was told its data was durable.
func TestFsyncErrorReportedToEveryOpenFile(t *testing.T) {
	var errA, errB, errB2 error
	var data []byte
	onTrackedDisk(func(p model.Process, d *Disk) {
		fa, _ := p.Disk().Open("log", model.ReadWrite|model.Create, model.FDFile)
		fb, _ := p.Disk().Open("log", model.ReadWrite, model.FDFile)
		fb.WriteAt([]byte("written through fb"), 0)
		d.SetFaults(DiskFaults{SyncEIO: 1})
		errA = fa.Sync() // writeback of the inode's pages fails
		d.SetFaults(DiskFaults{})
		errB = fb.Sync()  // Linux: EIO (fb has not seen the error)
		errB2 = fb.Sync() // Linux: 0 (seen now)
		p.(*Process).Crash()
		d.PowerLoss()
		data = d.names["log"].data
	})
	if !errors.Is(errA, model.ErrIO) {
		t.Fatalf("first fsync: %v, want EIO", errA)
	}
	if !errors.Is(errB, model.ErrIO) || errB2 != nil {
		t.Errorf("fsync through the other fd returned %v, then %v; want EIO, then nil (after the power loss the file holds %q: fb's write is gone)", errB, errB2, data)
	}
}

// write(2) on a full file system writes what fits and returns its count;
// the next write fails ENOSPC (the real world's WriteAt, which loops,
// returns both). The sim wrote nothing and left the space free, so a
// failed append took space in the real world and none in the sim.
func TestWriteOnAFullDiskWritesWhatFits(t *testing.T) {
	c := DefaultConfig(1)
	c.Disk.Capacity = 64 << 10
	w := New(c)
	var got string
	w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		d := p.Disk()
		f1, _ := d.Open("f1", model.ReadWrite|model.Create, model.FDFile)
		if _, err := f1.WriteAt(make([]byte, 40<<10), 0); err != nil {
			got = "f1: " + err.Error()
			return
		}
		f2, _ := d.Open("f2", model.ReadWrite|model.Create, model.FDFile)
		n, err := f2.WriteAt(make([]byte, 32<<10), 0)
		size, _ := f2.Size()
		m, err2 := f2.WriteAt([]byte("x"), size)
		got = fmt.Sprintf("wrote %d (%v), size %d; then %d (%v)", n, errors.Is(err, model.ErrNoSpace), size, m, errors.Is(err2, model.ErrNoSpace))
	})
	w.RunFor(10 * time.Millisecond)
	if want := "wrote 24576 (true), size 24576; then 0 (true)"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}
