package sim

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"

	"xceiver/model"
)

// cleanPath's shortcut for names already clean gives what cleaning them
// gives, for every name of up to seven characters from "a", "/" and ".":
// the name cleaned, or a refusal of an absolute name, one naming nothing
// or one with "..".
func TestCleanPathShortcut(t *testing.T) {
	slow := func(p string) (string, bool) {
		c := path.Clean("/" + p)[1:]
		if c == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
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
		if got != want || (err == nil) != ok {
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
