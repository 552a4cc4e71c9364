package sim

import (
	"bytes"
	"errors"
	"testing"

	"xceiver/model"
)

// The datanode sends what is on disk; the client verifies, and a flipped
// bit anywhere in a read's chunks fails that read (counted), never returns
// bytes. Both a data bit and a checksum bit.
func TestBitRotFailsTheRead(t *testing.T) {
	for _, target := range []struct {
		path string
		off  int64
	}{{"data/blk_2", 1500}, {"data/blk_2_1002.meta", 7 + 4*2}} {
		var got []model.Result
		var st model.ClientStats
		clientWorld(t, model.DefaultDatanodeConfig(), model.DefaultClientConfig(), func(w *World, p model.Process, cl *model.Client) {
			dn := w.procs[0]
			if !dn.FlipBit(target.path, target.off, 3) {
				t.Errorf("FlipBit(%s, %d) found no such byte (names %v)", target.path, target.off, dn.DiskNames("data"))
			}
			cl.Read(2, 0, 0, 1000, func(r model.Result) { // chunks 0, 1: clean
				got = append(got, r)
				cl.Read(2, 0, 0, 4096, func(r model.Result) { // chunk 2 rotted
					got = append(got, r)
					st = cl.Stats()
					cl.Close()
				})
			})
		})
		if len(got) != 2 {
			t.Fatalf("%s: %d reads returned", target.path, len(got))
		}
		if got[0].Err != nil || !bytes.Equal(got[0].Data, model.BlockContent(2, 4096)[:1000]) {
			t.Errorf("%s: read of the clean chunks: %v", target.path, got[0].Err)
		}
		var ce *model.ChecksumError
		if !errors.As(got[1].Err, &ce) || ce.Offset != 1024 || got[1].Data != nil {
			t.Errorf("%s: read over the rotten chunk: err %v, %d bytes; want a checksum error at 1024 and no bytes", target.path, got[1].Err, len(got[1].Data))
		}
		if st.ChecksumErrors != 1 {
			t.Errorf("%s: client counted %d checksum errors, want 1", target.path, st.ChecksumErrors)
		}
	}
}

// A crash point fires at the k-th write, tears that write to whole
// sectors, and fails every later disk operation of the crashed process.
func TestCrashAtDiskOpTearsTheWrite(t *testing.T) {
	kept := 0
	for seed := uint64(1); seed <= 8; seed++ {
		if tornWriteKeeps(t, seed) > 0 {
			kept++
		}
	}
	// How much persists is drawn: over eight seeds some draw keeps sectors.
	if kept == 0 {
		t.Error("no torn write kept any sector of the write over seeds 1-8")
	}
}

// tornWriteKeeps runs a crash at the write of a 2000-byte file with seed
// and returns the bytes of the write that reached the disk.
func tornWriteKeeps(t *testing.T, seed uint64) int64 {
	t.Helper()
	w := New(DefaultConfig(seed))
	var errs []error
	fired := false
	p, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		d := p.Disk()
		f, err := d.Open("f", model.ReadWrite|model.Create, model.FDFile) // write op 0
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteAt(bytes.Repeat([]byte{1}, 2000), 0) // write op 1: fires
		errs = append(errs, err)
		errs = append(errs, f.Sync())
		_, err = d.Open("g", model.ReadWrite|model.Create, model.FDFile)
		errs = append(errs, err)
		errs = append(errs, d.Rename("f", "h"))
	})
	if err != nil {
		t.Fatal(err)
	}
	sp := p.(*Process)
	sp.CrashAtDiskOp(1, true, func() { fired = true })
	if err := w.Run(0); err != nil {
		t.Fatal(err)
	}
	if !fired || !sp.Crashed() {
		t.Fatalf("crash point did not fire (fired %v, crashed %v)", fired, sp.Crashed())
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("disk op %d after the crash point succeeded", i)
		}
	}
	size, ok := sp.FileSize("f")
	if !ok || size%512 != 0 || size > 2000 {
		t.Errorf("torn file: size %d (exists %v), want whole sectors of the 2000-byte write", size, ok)
	}
	if _, ok := sp.FileSize("g"); ok {
		t.Error("a file created after the crash exists")
	}
	return size
}

// Poison fills a freed buffer up to its capacity; flips change one bit.
func TestBufferFaults(t *testing.T) {
	w := New(DefaultConfig(3))
	p, _ := w.Spawn("p", model.ProcessConfig{}, func(model.Process) {})
	sp := p.(*Process)
	b := make([]byte, 37, 64)
	sp.Freed(b)
	if b[36] != 0 {
		t.Fatal("poison off, yet the buffer changed")
	}
	sp.SetBufferFaults(1000, true)
	sp.Freed(b)
	for i, c := range b[:64] {
		if want := byte(PoisonPattern); i >= len(b) {
			want = 0
			if c != want {
				t.Fatalf("byte %d past the freed length is %#x, want it untouched", i, c)
			}
		} else if c != want {
			t.Fatalf("byte %d of the freed buffer is %#x, want the pattern", i, c)
		}
	}
	c := make([]byte, 100)
	sp.InFlight(c)
	ones := 0
	for _, x := range c {
		for ; x != 0; x &= x - 1 {
			ones++
		}
	}
	if ones != 1 || sp.Flips != 1 {
		t.Fatalf("in flight at 1000‰: %d bits flipped, %d counted; want 1", ones, sp.Flips)
	}
	// Any bit of any byte may flip, a one-byte buffer's too.
	var seen byte
	for range 200 {
		one := []byte{0}
		sp.InFlight(one)
		seen |= one[0]
	}
	if seen != 0xff {
		t.Errorf("200 flips of a one-byte buffer flipped bits %08b, want all eight", seen)
	}
}

// A fault that strikes a whole process is recorded as a "fault" event of
// that process with connection 0: Conn names the connection (or, for bit
// rot, the inode) a fault hit, as the trace's "conn" that the traces
// package reads back, and none is hit here. Disarming a crash
// point that has not fired is recorded too; disarming none records
// nothing.
func TestProcessFaultsNameNoConnection(t *testing.T) {
	w := New(DefaultConfig(1))
	var faults []Event
	w.Observe(func(e *Event) {
		if e.Kind == "fault" {
			faults = append(faults, *e)
		}
	})
	sp, err := w.Spawn("p", model.ProcessConfig{}, func(model.Process) {})
	if err != nil {
		t.Fatal(err)
	}
	p := sp.(*Process)
	for _, c := range []struct {
		arm  func()
		want string
	}{
		{func() { p.Spike(5 * ms) }, "spike 5ms"},
		{func() { p.Pause(5 * ms) }, "pause 5ms"},
		{func() { p.SlowReader(4096) }, "slow-reader 4096"},
		{func() { p.Fragment(100, 1000, ms) }, "fragment 100/1000/1ms"},
		{func() { p.ResetNextFDPass(true) }, "reset next fd pass (after true)"},
		{func() { p.CrashAtDiskOp(3, true, nil) }, "crash at disk op 3 (writes only true)"},
		{p.DisarmCrash, "crash point disarmed"},
		{p.DisarmCrash, ""}, // none armed
	} {
		n := len(faults)
		c.arm()
		got := faults[n:]
		if c.want == "" {
			if len(got) != 0 {
				t.Errorf("disarming no crash point recorded %+v", got)
			}
			continue
		}
		if len(got) != 1 || got[0].Proc != "p" || got[0].Conn != 0 || got[0].S != c.want {
			t.Errorf("recorded %+v, want one fault of p on connection 0: %q", got, c.want)
		}
	}
}
