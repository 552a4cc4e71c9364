package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

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

// ReadAt keeps io.ReaderAt's contract, as the real world's file does (its
// pread loop ends on a read of 0 with io.EOF): fewer bytes than asked
// only with an error saying why, io.EOF at and past the end (pread(2)'s
// 0); a read of nothing reads nothing, even past the end. A reader that loops until an error would otherwise never stop
// at a file's end.
func TestReadAtStopsAtTheEndWithEOF(t *testing.T) {
	w := New(DefaultConfig(1))
	sp, err := w.Spawn("p", model.ProcessConfig{}, func(model.Process) {})
	if err != nil {
		t.Fatal(err)
	}
	f, err := sp.Disk().Open("blk", model.ReadWrite|model.Create, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.WriteAt(bytes.Repeat([]byte{7}, 1000), 0); n != 1000 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	for _, c := range []struct {
		off   int64
		len   int
		n     int
		isEOF bool
	}{
		{0, 1000, 1000, false},
		{500, 100, 100, false},
		{500, 1000, 500, true},
		{999, 2, 1, true},
		{1000, 10, 0, true},
		{5000, 10, 0, true},
		{5000, 0, 0, false},
	} {
		n, err := f.ReadAt(make([]byte, c.len), c.off)
		if n != c.n || (err == io.EOF) != c.isEOF || err != nil && err != io.EOF {
			t.Errorf("ReadAt of %d bytes at %d of 1000 = %d, %v; want %d (EOF %v)", c.len, c.off, n, err, c.n, c.isEOF)
		}
	}
}

// A squeeze's unnamed files are opened as Open of fresh names opens
// them: the same fds and trace, the same CPU, the same inode numbers (so
// the ids of the connections after them), a crash point met at the same
// open. Releasing them frees their fds, and after a crash frees nothing
// (the fd numbers may be others' by then).
func TestSqueezeFDsOpensAsNamedFilesDo(t *testing.T) {
	type outcome struct {
		hash, events uint64
		opened       int // fds open at the end, less those at the start
		base         int
		cpu          time.Duration
	}
	run := func(named bool, crashAt int) outcome {
		w := New(DefaultConfig(1))
		var sp *Process
		base := 0
		p, err := w.Spawn("p", model.ProcessConfig{FDLimit: 40}, func(p model.Process) {
			l := p.MainLoop()
			l.Post(func() {
				base = p.FDs().Open
				if crashAt >= 0 {
					sp.CrashAtDiskOp(crashAt, false, nil)
				}
				release := func() {}
				if named {
					var hog []model.File
					for p.FDs().Open < p.FDs().Limit-2 {
						f, err := p.Disk().Open(fmt.Sprintf("hog-%d", len(hog)), model.Create|model.ReadWrite, model.FDFile)
						if err != nil {
							break
						}
						hog = append(hog, f)
					}
					release = func() {
						for _, f := range hog {
							f.Close()
						}
					}
				} else {
					release = sp.SqueezeFDs(2)
				}
				if _, err := p.Listen("unix", "/s", 1, l); err == nil {
					p.Dial("unix", "/s", l, func(model.Events) {})
				}
				release()
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		sp = p.(*Process)
		if err := w.Run(time.Second); err != nil {
			t.Fatal(err)
		}
		return outcome{w.TraceHash(), w.TraceEvents(), sp.FDs().Open - base, base, sp.CPUTime()}
	}
	for _, crashAt := range []int{-1, 0, 5} {
		named, squeezed := run(true, crashAt), run(false, crashAt)
		if named != squeezed {
			t.Errorf("crash point %d: files opened by name gave %+v, squeezed %+v", crashAt, named, squeezed)
		}
	}
	if o := run(false, -1); o.opened != 2 {
		t.Errorf("after the release %d more fds open, want the listener's and the dial's 2", o.opened)
	}
	if o := run(false, 5); o.opened != -o.base {
		t.Errorf("after a crash and the release %d fds open, want 0", o.opened+o.base)
	}
}

// diskProc is a world with one idle process, for the file-system rules
// below: its disk is called from the test before any event, so no CPU is
// charged.
func diskProc(t *testing.T, cfg Config, pc model.ProcessConfig) (*World, *Process, *Disk) {
	t.Helper()
	w := New(cfg)
	p := idleProc(t, w, "p", pc)
	return w, p, p.SimDisk()
}

// The names a disk knows and does not: O_CREAT|O_EXCL fails on a name
// that exists (EEXIST), and creates one that does not (with its parent
// directories: the model makes them, where Linux would fail ENOENT); a
// missing name fails ENOENT to open without O_CREAT, to Stat and to
// Unlink; a file on the way to a name fails ENOTDIR. The model's own
// rules besides: a directory Stats as size 0, and a name outside the
// process's disk is EINVAL.
func TestDiskNameRules(t *testing.T) {
	_, _, d := diskProc(t, DefaultConfig(1), model.ProcessConfig{})
	f, err := d.Open("dir/a", model.Create|model.Excl|model.ReadWrite, model.FDFile)
	if err != nil {
		t.Fatalf("O_EXCL create of a new name: %v", err)
	}
	f.Close()
	if _, err := d.Open("dir/a", model.Create|model.Excl|model.ReadWrite, model.FDFile); !errors.Is(err, model.ErrExist) {
		t.Errorf("O_EXCL create of an existing name: %v, want EEXIST", err)
	}
	if _, err := d.Open("nope", model.ReadOnly, model.FDFile); !errors.Is(err, model.ErrNotExist) {
		t.Errorf("open of a missing name: %v, want ENOENT", err)
	}
	if _, err := d.Stat("nope"); !errors.Is(err, model.ErrNotExist) {
		t.Errorf("Stat of a missing name: %v, want ENOENT", err)
	}
	if err := d.Unlink("nope"); !errors.Is(err, model.ErrNotExist) {
		t.Errorf("Unlink of a missing name: %v, want ENOENT", err)
	}
	if f, err := d.Open("dir/a/b", model.Create|model.ReadWrite, model.FDFile); !errors.Is(err, errNotDir) || f != nil {
		t.Errorf("create under a file: %v, %v, want ENOTDIR", f, err)
	}
	if n, err := d.Stat("dir"); n != 0 || err != nil {
		t.Errorf("Stat of a directory = %d, %v, want 0 and no error", n, err)
	}
	if _, err := d.Stat("../outside"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Stat of a name outside the disk: %v, want EINVAL", err)
	}
	if err := d.Rename("dir/a", "../outside"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("rename to a name outside the disk: %v, want EINVAL", err)
	}
	if names, err := d.List("../outside"); !errors.Is(err, fs.ErrInvalid) || names != nil {
		t.Errorf("list of a name outside the disk = %v, %v, want EINVAL", names, err)
	}
}

// Open at the fd limit fails EMFILE, even for a name that exists: open(2)
// reserves the fd before it looks the name up. So does a listing, which
// holds an fd while it reads (opendir).
func TestDiskOpenAtTheFDLimit(t *testing.T) {
	_, p, d := diskProc(t, DefaultConfig(1), model.ProcessConfig{FDLimit: 8})
	if f, err := d.Open("a", model.Create|model.ReadWrite, model.FDFile); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	release := p.SqueezeFDs(0)
	defer release()
	if f, err := d.Open("a", model.ReadOnly, model.FDFile); !errors.Is(err, model.ErrTooManyFiles) || f != nil {
		t.Errorf("open with no fd free = %v, %v, want EMFILE", f, err)
	}
	if names, err := d.List("."); !errors.Is(err, model.ErrTooManyFiles) || names != nil {
		t.Errorf("list with no fd free = %v, %v, want EMFILE", names, err)
	}
}

// List names a directory's own entries, files and directories, not what
// is deeper (a file or a directory inside a subdirectory), in name order
// whatever kind each is.
func TestDiskListNamesDirectEntries(t *testing.T) {
	_, _, d := diskProc(t, DefaultConfig(1), model.ProcessConfig{})
	for _, name := range []string{"d/a", "d/b", "d/sub/c", "d/sub/deeper/f", "d/0dir/g", "e/x"} {
		f, err := d.Open(name, model.Create|model.ReadWrite, model.FDFile)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if got, err := d.List("d"); err != nil || fmt.Sprint(got) != "[0dir a b sub]" {
		t.Errorf("List(d) = %v, %v, want [0dir a b sub]", got, err)
	}
}

// A file's blocks are freed when its last name and its last open file
// are both gone: not when it is closed while named, nor when it is
// unlinked while open; at the unlink of a closed file, or the close of
// an unlinked one.
func TestDiskSpaceFreedWithLastNameAndReference(t *testing.T) {
	_, _, d := diskProc(t, DefaultConfig(1), model.ProcessConfig{})
	f, err := d.Open("a", model.Create|model.ReadWrite, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 1000), 0)
	f.Close()
	if d.used != 1000 {
		t.Fatalf("closed while named: %d bytes used, want 1000", d.used)
	}
	if f, err = d.Open("a", model.ReadOnly, model.FDFile); err != nil {
		t.Fatal(err)
	}
	if err := d.Unlink("a"); err != nil {
		t.Fatal(err)
	}
	if d.used != 1000 {
		t.Errorf("unlinked while open: %d bytes used, want 1000", d.used)
	}
	f.Close()
	if d.used != 0 {
		t.Errorf("unlinked, then closed: %d bytes used, want 0", d.used)
	}
	if f, err = d.Open("b", model.Create|model.ReadWrite, model.FDFile); err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 500), 0)
	f.Close()
	if d.used != 500 {
		t.Fatalf("b written and closed: %d bytes used, want 500", d.used)
	}
	if err := d.Unlink("b"); err != nil {
		t.Fatal(err)
	}
	if d.used != 0 {
		t.Errorf("closed, then unlinked: %d bytes used, want 0", d.used)
	}
}

// A file opened read-only does not write (Linux says EBADF; the model
// names it ErrNotSupported, not ErrClosed, since the file is open), and
// its bytes stay; a closed file reads nothing.
func TestDiskFileAccessModes(t *testing.T) {
	_, _, d := diskProc(t, DefaultConfig(1), model.ProcessConfig{})
	f, err := d.Open("a", model.Create|model.ReadWrite, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("hello"), 0)
	f.Close()
	ro, err := d.Open("a", model.ReadOnly, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ro.WriteAt([]byte("x"), 0); n != 0 || !errors.Is(err, model.ErrNotSupported) {
		t.Errorf("write through a read-only open = %d, %v, want 0 and ErrNotSupported", n, err)
	}
	b := make([]byte, 5)
	if n, err := ro.ReadAt(b, 0); n != 5 || err != nil || string(b) != "hello" {
		t.Errorf("the file reads %q (%d, %v) after the refused write, want \"hello\"", b, n, err)
	}
	ro.Close()
	if n, err := ro.ReadAt(make([]byte, 5), 0); n != 0 || !errors.Is(err, model.ErrClosed) {
		t.Errorf("read of a closed file = %d, %v, want 0 and EBADF", n, err)
	}
}

// A full disk refuses a write that would grow a file (ENOSPC), not one
// that overwrites bytes the file has: as a file system that writes in
// place does (a copy-on-write one may refuse that too), the model
// counting bytes, not blocks.
func TestFullDiskStillOverwrites(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.Disk.Capacity = 4096
	_, _, d := diskProc(t, cfg, model.ProcessConfig{})
	f, err := d.Open("a", model.Create|model.ReadWrite, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.WriteAt(make([]byte, 4096), 0); n != 4096 || err != nil {
		t.Fatalf("filling the disk: %d, %v", n, err)
	}
	if n, err := f.WriteAt([]byte("over"), 100); n != 4 || err != nil {
		t.Errorf("overwrite on a full disk = %d, %v, want it done", n, err)
	}
	if _, err := f.WriteAt([]byte("more"), 4096); !errors.Is(err, model.ErrNoSpace) {
		t.Errorf("growing a file on a full disk: %v, want ENOSPC", err)
	}
}

// A squeeze's release frees its fds once: called again, after the fds
// went to other files, it frees nothing of theirs.
func TestSqueezeFDsReleasesOnce(t *testing.T) {
	_, p, d := diskProc(t, DefaultConfig(1), model.ProcessConfig{FDLimit: 16})
	release := p.SqueezeFDs(0)
	release()
	open := p.FDs().Open
	f, err := d.Open("after", model.Create|model.ReadWrite, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if got := p.FDs().Open; got != open+1 {
		t.Errorf("%d fds open after a second release, want %d: it freed the new file's fd", got, open+1)
	}
	if err := f.Close(); err != nil {
		t.Errorf("closing the new file: %v", err)
	}
}

// A closed file is EBADF to a sendfile and to a write, which writes
// nothing, as Linux's; once its process has crashed, the disk refuses its
// calls.
func TestDiskCallsRefuse(t *testing.T) {
	_, p, d := diskProc(t, DefaultConfig(1), model.ProcessConfig{})
	f, err := d.Open("a", model.Create|model.ReadWrite, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n, err := d.Sendfile(nil, f, 0, 1); n != 0 || !errors.Is(err, model.ErrClosed) {
		t.Errorf("sendfile from a closed file = %d, %v, want EBADF", n, err)
	}
	if n, err := f.WriteAt([]byte("x"), 0); n != 0 || !errors.Is(err, model.ErrClosed) {
		t.Errorf("write to a closed file = %d, %v, want 0, EBADF", n, err)
	}
	p.Crash()
	if err := d.Unlink("a"); !errors.Is(err, model.ErrProcessExited) {
		t.Errorf("unlink by a crashed process: %v, want it refused", err)
	}
	if _, err := d.List("."); !errors.Is(err, model.ErrProcessExited) {
		t.Errorf("list by a crashed process: %v, want it refused", err)
	}
}

// A read costs a syscall even when it reads nothing; it is recorded in
// the trace, and a read fault fails it (EIO, recorded too). A read of one
// whole page brings that page into the cache (read again, it costs no
// device time) and only that page: the next still costs the latency.
func TestDiskReadCostsFaultsAndCaches(t *testing.T) {
	cfg := DefaultConfig(1)
	w := New(cfg)
	var seen []string
	w.Observe(func(e *Event) {
		if e.Kind == "disk" || e.Kind == "diskErr" {
			seen = append(seen, e.S)
		}
	})
	var empty, next, again time.Duration
	var readErr, faultErr error
	_, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		d := p.Disk()
		f, err := d.Open("f", model.Create|model.ReadWrite, model.FDFile)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteAt(make([]byte, 4*pageSize), 0)
		l := p.MainLoop()
		l.AfterFunc(ms, func() {
			p.(*Process).SimDisk().DropCache()
			t0 := l.Now()
			f.ReadAt(nil, 0)
			empty = l.Now() - t0
			_, readErr = f.ReadAt(make([]byte, pageSize), 0)
			t1 := l.Now()
			f.ReadAt(make([]byte, pageSize), 0)
			again = l.Now() - t1
			t2 := l.Now()
			f.ReadAt(make([]byte, pageSize), pageSize)
			next = l.Now() - t2
			p.(*Process).SimDisk().SetFaults(DiskFaults{ReadEIO: 1})
			_, faultErr = f.ReadAt(make([]byte, 8), 0)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(10 * ms); err != nil {
		t.Fatal(err)
	}
	if c := w.cfg.CPU.Syscall; empty != c {
		t.Errorf("a read of nothing cost %v, want a syscall, %v", empty, c)
	}
	if readErr != nil || !slices.Contains(seen, "read") {
		t.Errorf("a read: %v, trace %v; want it recorded as a disk read", readErr, seen)
	}
	if again >= cfg.Disk.Latency {
		t.Errorf("a page read again cost %v, want no device time (latency %v): it was not cached", again, cfg.Disk.Latency)
	}
	if next < cfg.Disk.Latency {
		t.Errorf("the page after one read whole cost %v, want the device's latency %v: it was not read", next, cfg.Disk.Latency)
	}
	if !errors.Is(faultErr, model.ErrIO) || !slices.Contains(seen, "EIO") {
		t.Errorf("a read under a certain read fault: %v, trace %v; want EIO, recorded", faultErr, seen)
	}
}
