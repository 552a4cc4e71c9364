package model_test

import (
	"fmt"
	"testing"

	"xceiver/model"
)

func TestUnlinkRenameOpenFiles(t *testing.T) {
	sameInBoth(t, "read old 3 old; size 3; stat new 3; list []; write-after-unlink 1 size 4")(inBothWorlds(t, model.ProcessConfig{}, func(p model.Process) string {
		d := p.Disk()
		a, _ := d.Open("a", model.ReadWrite|model.Create, model.FDFile)
		a.WriteAt([]byte("old"), 0)
		b, _ := d.Open("b", model.ReadWrite|model.Create, model.FDFile)
		b.WriteAt([]byte("new"), 0)
		b.Close()
		d.Rename("b", "a") // replaces a; the open fd keeps the old inode
		buf := make([]byte, 10)
		n, _ := a.ReadAt(buf, 0)
		size, _ := a.Size()
		ssize, _ := d.Stat("a")
		d.Unlink("a")
		names, _ := d.List(".")
		w, _ := a.WriteAt([]byte("!"), 3)
		size2, _ := a.Size()
		a.Close()
		return fmt.Sprintf("read old %d %s; size %d; stat new %d; list %v; write-after-unlink %d size %d", n, buf[:n], size, ssize, names, w, size2)
	}))
}
