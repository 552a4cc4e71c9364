package sim

import (
	"testing"

	"xceiver/model"
)

// A segment passed over a Unix socket and mapped by the receiver is the
// same memory in both processes; each mapping and fd is accounted, and a
// crash unmaps the dead process's mappings while the survivor's stays.
func TestSegmentSharedAcrossProcesses(t *testing.T) {
	h, sc, _, sp, cp, _, _ := unixPair(t)
	seg, f, err := sp.NewSegment("shm", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind() != model.FDSegment || sp.FDs().ByKind[model.FDSegment] != 1 || sp.FDs().Segments != 1 {
		t.Fatalf("creator's fds after NewSegment: %+v", sp.FDs())
	}
	seg.Store(64, 42)
	if _, err := sc.SendFDs([]byte{1}, []model.File{f}); err != nil {
		t.Fatal(err)
	}
	f.Close() // the mapping keeps the segment
	h.runTo(h.now() + ms)
	if len(h.passed) != 1 {
		t.Fatalf("%d files passed", len(h.passed))
	}
	cseg, err := cp.MapSegment(h.passed[0], 4096)
	if err != nil {
		t.Fatal(err)
	}
	h.passed[0].Close()
	if cseg.Load(64) != 42 {
		t.Errorf("receiver reads %d, want 42", cseg.Load(64))
	}
	seg.Store(64, 7)
	if cseg.Load(64) != 7 {
		t.Errorf("receiver reads %d after the creator's store, want 7", cseg.Load(64))
	}
	if _, err := cp.MapSegment(h.passed[0], 4096); err == nil {
		t.Error("mapped a closed fd")
	}
	if cp.FDs().Segments != 1 || cp.FDs().ByKind[model.FDPassed] != 0 {
		t.Errorf("receiver: %+v", cp.FDs())
	}
	sp.Crash()
	if sp.FDs().Segments != 0 || seg.Load(64) != 0 {
		t.Errorf("crashed creator still maps the segment: %+v", sp.FDs())
	}
	if cseg.Load(64) != 7 {
		t.Errorf("survivor's mapping lost its contents after the creator crashed")
	}
	if err := cseg.Unmap(); err != nil || cp.FDs().Segments != 0 || cseg.Load(64) != 0 {
		t.Errorf("unmap: %v, %+v", err, cp.FDs())
	}
	if err := cseg.Unmap(); err == nil {
		t.Error("second unmap succeeded")
	}
}

func TestSegmentBadSize(t *testing.T) {
	_, _, _, sp, _, _, _ := unixPair(t)
	for _, n := range []int{0, -8, 12} {
		if _, _, err := sp.NewSegment("x", n); err == nil {
			t.Errorf("segment of %d bytes created", n)
		}
	}
	f, err := sp.Disk().Open("plain", model.Create|model.ReadWrite, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.MapSegment(f, 8); err == nil {
		t.Error("mapped a plain file as a segment")
	}
	f.Close()
}
