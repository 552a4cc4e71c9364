package real

import (
	"strings"
	"testing"
	"time"
)

const procStat = `cpu  5067716 0 618001 9668973 44031 0 90313 213970 0 0
cpu0 2533858 0 309000 4834486 22015 0 45156 106985 0 0
cpu1 2533858 0 309001 4834487 22016 0 45157 106985 0 0
intr 1 2 3
ctxt 123
`

func TestParseHostCPU(t *testing.T) {
	h, err := ParseHostCPU([]byte(procStat))
	if err != nil {
		t.Fatal(err)
	}
	tick := 10 * time.Millisecond
	want := HostCPU{Busy: (5067716 + 618001 + 90313) * tick, Steal: 213970 * tick, Idle: (9668973 + 44031) * tick}
	if h != want {
		t.Fatalf("got %+v, want %+v", h, want)
	}
}

func TestParseHostCPUErrors(t *testing.T) {
	for _, tc := range []struct{ name, stat, want string }{
		{"empty", "", "no cpu line"},
		{"per-core lines only", "cpu0 1 2 3 4 5 6 7 8\n", "no cpu line"},
		{"no steal", "cpu  1 2 3 4 5 6 7\n", "7 figures, want at least 8"},
		{"not a number", "cpu  1 2 3 x 5 6 7 8\n", "figure 4"},
		{"negative", "cpu  1 2 3 4 5 6 7 -8\n", "figure 8"},
		{"too large", "cpu  1 2 3 4 5 6 7 99999999999999999999\n", "figure 8"},
		{"out of range", "cpu  1 2 3 4 5 6 7 9000000000000000\n", "out of range"},
	} {
		_, err := ParseHostCPU([]byte(tc.stat))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestStealShare(t *testing.T) {
	a := HostCPU{Busy: time.Second, Steal: time.Second, Idle: time.Second}
	b := HostCPU{Busy: 4 * time.Second, Steal: 2 * time.Second, Idle: 9 * time.Second}
	d := b.Since(a)
	if d != (HostCPU{Busy: 3 * time.Second, Steal: time.Second, Idle: 8 * time.Second}) {
		t.Fatalf("Since: %+v", d)
	}
	// Measured against the time wanted, not the wall: idle time does
	// not dilute it.
	if s, ok := d.StealShare(); !ok || s != 0.25 {
		t.Fatalf("StealShare: %v %v, want 0.25", s, ok)
	}
	if _, ok := a.Since(a).StealShare(); ok {
		t.Fatal("StealShare of nothing wanted reported a share")
	}
	if _, ok := (HostCPU{Busy: 50 * time.Millisecond, Steal: 40 * time.Millisecond}).StealShare(); ok {
		t.Fatal("StealShare of 90 ms wanted (nine ticks) reported a share")
	}
	if s, ok := (HostCPU{Busy: 60 * time.Millisecond, Steal: 40 * time.Millisecond}).StealShare(); !ok || s != 0.4 {
		t.Fatalf("StealShare of 100 ms wanted: %v %v, want 0.4", s, ok)
	}
	if _, ok := a.Since(b).StealShare(); ok {
		t.Fatal("StealShare of counters that went backwards reported a share")
	}
}

func TestReadHostCPU(t *testing.T) {
	a, err := ReadHostCPU()
	if err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	// Spin until the machine has wanted enough CPU for a share: the
	// counters move a tick at a time, and under a CPU quota or with a
	// /proc/stat of its own a container's may not move for us at all.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := ReadHostCPU()
		if err != nil {
			t.Fatal(err)
		}
		d := b.Since(a)
		if d.Busy < 0 || d.Steal < 0 || d.Idle < 0 {
			t.Fatalf("counters went backwards: %+v", d)
		}
		if s, ok := d.StealShare(); ok {
			if s < 0 || s > 1 {
				t.Fatalf("share %v from %+v", s, d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Skipf("5 s of spinning moved /proc/stat's counters by only %+v", d)
		}
	}
}

func FuzzParseHostCPU(f *testing.F) {
	f.Add([]byte(procStat))
	f.Add([]byte("cpu 1 2 3 4 5 6 7 8"))
	f.Add([]byte("\n\ncpu\t0 0 0 0 0 0 0 0 0 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHostCPU(b)
		if err != nil {
			return
		}
		if h.Busy < 0 || h.Steal < 0 || h.Idle < 0 {
			t.Fatalf("negative figures from %q: %+v", b, h)
		}
		if s, ok := h.StealShare(); ok && (s < 0 || s > 1) {
			t.Fatalf("share %v from %q", s, b)
		}
	})
}
