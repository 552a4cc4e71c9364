package model_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"xceiver/model"
)

func touch(p model.Process, name string) string {
	f, err := p.Disk().Open(name, model.ReadWrite|model.Create, model.FDFile)
	if err != nil {
		return dirErr(err)
	}
	f.WriteAt([]byte("x"), 0)
	f.Close()
	return "ok"
}

// dirErr names an error of the namespace by its errno.
func dirErr(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, model.ErrExist):
		return "EEXIST"
	case strings.Contains(err.Error(), "is a directory"):
		return "EISDIR"
	case strings.Contains(err.Error(), "not a directory"):
		return "ENOTDIR"
	}
	return errName(err)
}

func listResult(names []string, err error) string {
	if err != nil {
		return dirErr(err)
	}
	return fmt.Sprint(names)
}

func statResult(size int64, err error) string {
	if err != nil {
		return dirErr(err)
	}
	return fmt.Sprint("size>=0")
}

// Probe the flat namespace against real directories.
func TestDirectorySemantics(t *testing.T) {
	simGot, realGot := inBothWorlds(t, model.ProcessConfig{}, func(p model.Process) string {
		d := p.Disk()
		var out []string
		add := func(k, v string) { out = append(out, k+"="+v) }
		add("list-missing", listResult(d.List("missing")))
		touch(p, "d/sub/x")
		touch(p, "d/y")
		add("list-d", listResult(d.List("d")))
		add("stat-d/sub", statResult(d.Stat("d/sub")))
		add("stat-dot", statResult(d.Stat(".")))
		add("unlink-d", dirErr(d.Unlink("d")))
		add("create-d-over-dir", touch(p, "d"))
		add("create-under-file", touch(p, "d/y/z"))
		d.Unlink("d/sub/x")
		add("list-d-after-unlink", listResult(d.List("d")))
		add("rename-file-onto-dir", dirErr(d.Rename("d/y", "d/sub")))
		return fmt.Sprint(out)
	})
	t.Logf("sim:  %s", simGot)
	t.Logf("real: %s", realGot)
	if simGot != realGot {
		t.Errorf("worlds differ:\nsim:  %s\nreal: %s", simGot, realGot)
	}
}

// O_EXCL on a directory's name is EEXIST (Linux checks it before
// EISDIR), and a path through a file is ENOTDIR for stat and unlink. (A
// read-only open of a directory still differs: the real world hands back
// a directory fd, the sim has no inode for one; no model code opens a
// directory.)
func TestDirectoryExclAndPathThroughAFile(t *testing.T) {
	simGot, realGot := inBothWorlds(t, model.ProcessConfig{}, func(p model.Process) string {
		d := p.Disk()
		var out []string
		add := func(k, v string) { out = append(out, k+"="+v) }
		touch(p, "d/sub/x")
		touch(p, "d/y")
		_, err := d.Open("d/sub", model.ReadWrite|model.Create|model.Excl, model.FDFile)
		add("open-dir-create-excl", dirErr(err))
		add("stat-under-file", statResult(d.Stat("d/y/z")))
		add("unlink-under-file", dirErr(d.Unlink("d/y/z")))
		return fmt.Sprint(out)
	})
	if simGot != realGot {
		t.Errorf("worlds differ:\nsim:  %s\nreal: %s", simGot, realGot)
	}
}
