package model_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

// untilDone runs main as process "a" of a sim world and of a real one,
// each until main calls done, and returns what each reported.
func untilDone(t *testing.T, pc model.ProcessConfig, main func(p model.Process, done func(string))) (simGot, realGot string) {
	t.Helper()
	sw := sim.New(sim.DefaultConfig(1))
	if _, err := sw.Spawn("a", pc, func(p model.Process) {
		main(p, func(s string) { simGot = s })
	}); err != nil {
		t.Fatal(err)
	}
	sw.RunFor(time.Second)
	rw, err := real.New(real.Config{Seed: 1, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Spawn("a", pc, func(p model.Process) {
		main(p, func(s string) { realGot = s; p.World().Stop() })
	}); err != nil {
		t.Fatal(err)
	}
	if err := rw.Run(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	return simGot, realGot
}

// inBothWorlds is untilDone for a main that reports as it returns.
func inBothWorlds(t *testing.T, pc model.ProcessConfig, main func(p model.Process) string) (simGot, realGot string) {
	t.Helper()
	return untilDone(t, pc, func(p model.Process, done func(string)) { done(main(p)) })
}

// A file's edge cases come out as Linux gives them, in both worlds: a
// zero-length pread past the end reads nothing without an error, a
// zero-length pwrite past it leaves the size alone, O_RDONLY|O_TRUNC
// truncates, a write to a read-only fd is not supported (not "closed"),
// negative offsets are bad arguments, and sendfile to no conn
// is one too rather than a crash, as are a file opened as a socket and an
// unknown flag. (The sim differed on each, found by an audit running the
// disk seam in both.)
func TestFileEdgesInBothWorlds(t *testing.T) {
	const want = "read0 0 <nil>; write0 0 <nil> size 5; rdonly-trunc size 0, write unsupported; negative read invalid, write invalid; sendfile nil invalid; socket kind invalid, unknown flag invalid"
	sameInBoth(t, want)(inBothWorlds(t, model.ProcessConfig{}, fileEdges))
}

// sameInBoth checks both worlds' reports against want.
func sameInBoth(t *testing.T, want string) func(simGot, realGot string) {
	return func(simGot, realGot string) {
		t.Helper()
		if simGot != want {
			t.Errorf("sim:  %s\nwant: %s", simGot, want)
		}
		if realGot != want {
			t.Errorf("real: %s\nwant: %s", realGot, want)
		}
	}
}

// At its fd limit a process's open fails with EMFILE whatever the name,
// as open(2) reserves the fd before it looks the name up (a missing name
// is not ENOENT, an existing one with Create|Excl not EEXIST), and a
// listing fails too, as opendir takes an fd. The sim said ENOENT and
// EEXIST, which the block store treats as harmless.
func TestOpenAtFDLimitIsEMFILE(t *testing.T) {
	sameInBoth(t, "EMFILE EMFILE EMFILE ENOENT")(inBothWorlds(t, model.ProcessConfig{FDLimit: 8}, func(p model.Process) string {
		files := fillFDs(p)
		defer func() {
			for _, f := range files[1:] {
				f.Close()
			}
		}()
		_, missing := p.Disk().Open("missing", model.ReadOnly, model.FDFile)
		_, excl := p.Disk().Open("f0", model.ReadWrite|model.Create|model.Excl, model.FDFile)
		_, list := p.Disk().List(".")
		files[0].Close()
		_, below := p.Disk().Open("missing", model.ReadOnly, model.FDFile)
		return fmt.Sprint(errName(missing), " ", errName(excl), " ", errName(list), " ", errName(below))
	}))
}

// A path names the same file in both worlds: "a..b" is a name, "d/../y"
// is "y", and a path that is empty, absolute or leaves the disk is a bad
// argument (fs.ErrInvalid), not a missing file. The sim refused any path
// containing "..", as a missing file.
func TestPathsNameTheSameInBothWorlds(t *testing.T) {
	sameInBoth(t, "[ok ok invalid invalid invalid invalid invalid]")(inBothWorlds(t, model.ProcessConfig{}, func(p model.Process) string {
		var got []string
		for _, name := range []string{"a..b", "d/../y", "", ".", "/abs", "../x", "d/../../x"} {
			f, err := p.Disk().Open(name, model.ReadWrite|model.Create, model.FDFile)
			if err == nil {
				f.Close()
				got = append(got, "ok")
			} else {
				got = append(got, errName(err))
			}
		}
		if _, err := p.Disk().Stat("y"); err != nil {
			got = append(got, "no y: "+err.Error())
		}
		return fmt.Sprint(got)
	}))
}

func fileEdges(p model.Process) string {
	d := p.Disk()
	f, err := d.Open("f", model.ReadWrite|model.Create, model.FDFile)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	f.WriteAt([]byte("hello"), 0)
	rn, rerr := f.ReadAt(nil, 100)
	wn, werr := f.WriteAt(nil, 100)
	size, _ := f.Size()
	g, err := d.Open("f", model.ReadOnly|model.Truncate, model.FDFile)
	if err != nil {
		return err.Error()
	}
	tsize, _ := g.Size()
	_, ro := g.WriteAt([]byte("x"), 0)
	g.Close()
	_, nr := f.ReadAt(make([]byte, 1), -1)
	_, nw := f.WriteAt([]byte("x"), -1)
	_, ns := d.Sendfile(nil, f, 0, 1)
	_, nk := d.Open("f", model.ReadOnly, model.FDSocket)
	_, nf := d.Open("f", model.OpenFlag(1<<7), model.FDFile)
	return fmt.Sprintf("read0 %d %v; write0 %d %v size %d; rdonly-trunc size %d, write %s; negative read %s, write %s; sendfile nil %s; socket kind %s, unknown flag %s",
		rn, rerr, wn, werr, size, tsize, errName(ro), errName(nr), errName(nw), errName(ns), errName(nk), errName(nf))
}

// errName is the short name of the errors these tests expect, or the
// error itself.
func errName(err error) string {
	switch {
	case errors.Is(err, fs.ErrInvalid):
		return "invalid"
	case errors.Is(err, model.ErrNotSupported):
		return "unsupported"
	case errors.Is(err, model.ErrTooManyFiles):
		return "EMFILE"
	case errors.Is(err, model.ErrNotExist):
		return "ENOENT"
	case errors.Is(err, model.ErrReset):
		return "ECONNRESET"
	case errors.Is(err, model.ErrPipe):
		return "EPIPE"
	case errors.Is(err, model.ErrRefused):
		return "ECONNREFUSED"
	}
	return fmt.Sprint(err)
}

// A create that fails at the fd limit and a rename of a missing file
// leave nothing behind in either world: the real one made the missing
// directories first, and a listing showed them.
func TestFailedCreateLeavesNothing(t *testing.T) {
	sameInBoth(t, "EMFILE ENOENT [f0 f1 f2 f3 f4 f5]")(inBothWorlds(t, model.ProcessConfig{FDLimit: 8}, func(p model.Process) string {
		files := fillFDs(p)
		_, create := p.Disk().Open("nd/x", model.ReadWrite|model.Create, model.FDFile)
		for _, f := range files {
			f.Close()
		}
		rename := p.Disk().Rename("missing", "md/y")
		names, err := p.Disk().List(".")
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(errName(create), " ", errName(rename), " ", names)
	}))
}

// fillFDs opens files f0, f1, ... until p's fd table is full.
func fillFDs(p model.Process) []model.File {
	var files []model.File
	for {
		f, err := p.Disk().Open(fmt.Sprintf("f%d", len(files)), model.ReadWrite|model.Create, model.FDFile)
		if err != nil {
			return files
		}
		files = append(files, f)
	}
}
