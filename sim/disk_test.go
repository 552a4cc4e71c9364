package sim

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"
)

// cleanPath's shortcut for names already clean gives what cleaning them
// gives, for every name of up to seven characters from "a", "/" and ".":
// the name cleaned, or a refusal (fs.ErrInvalid, as the real world's) of
// an absolute name, one naming nothing or one leaving the disk; "a..b" and
// "a/../b" are names, as the real world has them.
func TestCleanPathShortcut(t *testing.T) {
	slow := func(p string) (string, bool) {
		c := path.Clean(p)
		if p == "" || strings.HasPrefix(p, "/") || c == "." || c == ".." || strings.HasPrefix(c, "../") {
			return "", false
		}
		return c, true
	}
	var names []string
	var grow func(p string)
	grow = func(p string) {
		names = append(names, p)
		if len(p) < 7 {
			for _, r := range []string{"a", "/", "."} {
				grow(p + r)
			}
		}
	}
	grow("")
	for _, p := range names {
		got, err := cleanPath(p)
		want, ok := slow(p)
		if got != want || (err == nil) != ok || err != nil && !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("cleanPath(%q) = %q, %v; cleaning gives %q, ok %v", p, got, err, want, ok)
		}
	}
}

// Disk faults added one by one are in force together, each probability
// and delay the highest any sets; taking one away leaves the others, a
// second take-away does nothing, and SetFaults replaces them all (a
// take-away after it restores nothing).
func TestDiskAddFaultsOverlap(t *testing.T) {
	d := newDisk(New(DefaultConfig(1)), nil)
	eio := d.AddFaults(DiskFaults{ReadEIO: 0.5, SyncEIO: 0.1})
	slow := d.AddFaults(DiskFaults{SyncEIO: 0.3, SlowSync: 1, SlowDelay: time.Millisecond})
	if want := (DiskFaults{ReadEIO: 0.5, SyncEIO: 0.3, SlowSync: 1, SlowDelay: time.Millisecond}); d.faults != want {
		t.Fatalf("together: %+v, want %+v", d.faults, want)
	}
	slow()
	slow()
	if want := (DiskFaults{ReadEIO: 0.5, SyncEIO: 0.1}); d.faults != want {
		t.Fatalf("after the second's end: %+v, want the first's %+v", d.faults, want)
	}
	d.SetFaults(DiskFaults{WriteEIO: 0.2})
	eio()
	if want := (DiskFaults{WriteEIO: 0.2}); d.faults != want {
		t.Fatalf("after SetFaults and a stale end: %+v, want %+v", d.faults, want)
	}
}
