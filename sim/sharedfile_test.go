package sim

import (
	"bytes"
	"io"
	"testing"

	"xceiver/model"
)

// A file written with WriteAtShared holds the caller's bytes without a
// copy, and nothing done to the file afterwards changes them: an
// overwrite, an append, bit rot, a truncation, a power loss. Each time the
// file reads back what was done to it, and the caller's bytes are as
// written.
func TestWriteAtSharedNeverChangesTheCallersBytes(t *testing.T) {
	w := New(DefaultConfig(1))
	_, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		sp := p.(*Process)
		d := sp.SimDisk()
		d.TrackDurability()
		orig := model.BlockContent(9, 3000)
		kept := bytes.Clone(orig)
		want := bytes.Clone(orig)
		open := func(flag model.OpenFlag) model.File {
			f, err := d.Open("blk", flag, model.FDBlockFile)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		check := func(step string) {
			t.Helper()
			if !bytes.Equal(kept, orig) {
				t.Fatalf("%s changed the caller's bytes", step)
			}
			f := open(model.ReadOnly)
			defer f.Close()
			got := make([]byte, len(want)+10)
			n, err := f.ReadAt(got, 0)
			if err != nil && err != io.EOF || !bytes.Equal(got[:n], want) {
				t.Fatalf("after %s the file holds %d bytes (%v), want %d as written", step, n, err, len(want))
			}
		}
		f := open(model.ReadWrite | model.Create)
		kf, ok := f.(model.SharedFileWriter)
		if !ok {
			t.Fatal("a sim file is not a model.SharedFileWriter")
		}
		if n, err := kf.WriteAtShared(kept, 0); n != len(kept) || err != nil {
			t.Fatalf("WriteAtShared: %d, %v", n, err)
		}
		if &d.names["blk"].data[0] != &kept[0] {
			t.Fatal("WriteAtShared copied the bytes")
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		check("the kept write")
		if _, err := f.WriteAt([]byte("overwrite"), 100); err != nil {
			t.Fatal(err)
		}
		copy(want[100:], "overwrite")
		check("an overwrite")
		f.Close()

		// A fresh kept write, then bit rot, an append, power loss.
		f = open(model.ReadWrite | model.Truncate)
		want = bytes.Clone(orig)
		if _, err := f.(model.SharedFileWriter).WriteAtShared(kept, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if !sp.FlipBit("blk", 5, 2) {
			t.Fatal("FlipBit found no byte 5")
		}
		want[5] ^= 1 << 2
		check("bit rot")
		if _, err := f.WriteAt([]byte("tail"), int64(len(kept))); err != nil {
			t.Fatal(err)
		}
		want = append(want, "tail"...)
		check("an append")
		f.Close()
		d.PowerLoss()
		// The synced contents, the kept write, with the rot: it is in
		// the device's bytes, which the power loss keeps.
		want = bytes.Clone(orig)
		want[5] ^= 1 << 2
		check("a power loss")
		f = open(model.ReadWrite | model.Truncate)
		f.Close()
		want = nil
		check("a truncation")
	})
	if err != nil {
		t.Fatal(err)
	}
	w.RunFor(ms)
}

// WriteAtShared costs and records what WriteAt does: the same trace.
func TestWriteAtSharedTracesAsWriteAt(t *testing.T) {
	trace := func(kept bool) string {
		w := New(DefaultConfig(3))
		_, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
			store := model.NewBlockStore(p.Disk(), "data")
			for id := uint64(1); id <= 4; id++ {
				data := model.BlockContent(id, int(id)*5000)
				var err error
				if kept {
					_, err = store.WriteShared(id, data)
				} else {
					_, err = store.Write(id, data)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		w.RunFor(ms)
		return w.TraceHashString()
	}
	if a, b := trace(false), trace(true); a != b {
		t.Errorf("trace %s with Write, %s with WriteShared", a, b)
	}
}
