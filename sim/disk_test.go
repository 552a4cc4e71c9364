package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"

	"xceiver/model"
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

// At its fd limit a process's open fails with EMFILE whatever the name,
// as open(2) reserves the fd before it looks the name up: a missing name
// is not ErrNotExist, an existing one with Create|Excl not ErrExist; a
// listing, which opendir needs an fd for, fails too. The real world
// does the same (real.TestOpenAtFDLimitIsEMFILE).
func TestOpenAtFDLimitIsEMFILE(t *testing.T) {
	w := New(DefaultConfig(1))
	var errs []error
	_, err := w.Spawn("a", model.ProcessConfig{FDLimit: 3}, func(p model.Process) {
		var files []model.File
		for {
			f, err := p.Disk().Open(fmt.Sprintf("f%d", len(files)), model.ReadWrite|model.Create, model.FDFile)
			if err != nil {
				break
			}
			files = append(files, f)
		}
		_, err := p.Disk().Open("missing", model.ReadOnly, model.FDFile)
		errs = append(errs, err)
		_, err = p.Disk().Open("f0", model.ReadWrite|model.Create|model.Excl, model.FDFile)
		errs = append(errs, err)
		_, err = p.Disk().List(".")
		errs = append(errs, err)
		files[0].Close()
		_, err = p.Disk().Open("missing", model.ReadOnly, model.FDFile)
		errs = append(errs, err)
	})
	if err != nil {
		t.Fatal(err)
	}
	w.RunFor(ms)
	if len(errs) != 4 || !errors.Is(errs[0], model.ErrTooManyFiles) || !errors.Is(errs[1], model.ErrTooManyFiles) ||
		!errors.Is(errs[2], model.ErrTooManyFiles) || !errors.Is(errs[3], model.ErrNotExist) {
		t.Errorf("at the limit: open missing, create-excl existing, list; then below it, open missing: %v, want EMFILE, EMFILE, EMFILE, ENOENT", errs)
	}
}

// A path names what the real world's does: "a..b" is a name, "d/../y" is
// "y", and a path that is empty, absolute or leaves the disk is a bad
// argument, not a missing file (real.TestPathsAsBothWorldsName).
func TestPathsAsBothWorldsName(t *testing.T) {
	w := New(DefaultConfig(1))
	var got []string
	w.Spawn("a", model.ProcessConfig{}, func(p model.Process) {
		for _, name := range []string{"a..b", "d/../y", "", ".", "/abs", "../x", "d/../../x"} {
			f, err := p.Disk().Open(name, model.ReadWrite|model.Create, model.FDFile)
			switch {
			case err == nil:
				f.Close()
				got = append(got, "ok")
			case errors.Is(err, fs.ErrInvalid):
				got = append(got, "invalid")
			default:
				got = append(got, err.Error())
			}
		}
		if _, err := p.Disk().Stat("y"); err != nil {
			got = append(got, "no y: "+err.Error())
		}
	})
	w.RunFor(ms)
	if want := "[ok ok invalid invalid invalid invalid invalid]"; fmt.Sprint(got) != want {
		t.Errorf("opening a..b, d/../y, \"\", ., /abs, ../x, d/../../x: %v, want %s", got, want)
	}
}
