package real

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"xceiver/model"
)

// disk is a process's directory under the world's root. It implements
// model.Disk. Paths are relative and slash-separated; "" and "." name the
// directory itself (for List). A path may not leave the directory.
//
// The interface has no Mkdir, so creating a file (Open with Create) or
// renaming onto a path creates the missing parent directories.
type disk struct {
	p *process
}

var _ model.Disk = (*disk)(nil)

// resolve maps a model path to a real one under the process's directory.
func (d *disk) resolve(op, name string, allowRoot bool) (string, error) {
	if name == "" || name == "." {
		if allowRoot {
			return d.p.dir, nil
		}
		return "", badArg(op, strconv.Quote(name), "empty path")
	}
	clean := path.Clean(name)
	if path.IsAbs(name) || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", badArg(op, strconv.Quote(name), "path must be relative and stay inside the process's disk")
	}
	return filepath.Join(d.p.dir, filepath.FromSlash(clean)), nil
}

// Open opens name. kind (FDFile, FDBlockFile or FDMetaFile) tags the fd in
// the process's table.
func (d *disk) Open(name string, flag model.OpenFlag, kind model.FDKind) (model.File, error) {
	const op = "open"
	if !kind.IsFile() {
		return nil, badArg(op, strconv.Quote(name), fmt.Sprintf("fd kind %v is not a file kind", kind))
	}
	if !flag.Valid() {
		return nil, badArg(op, strconv.Quote(name), fmt.Sprintf("unknown open flags %#x", int(flag)))
	}
	full, err := d.resolve(op, name, false)
	if err != nil {
		return nil, err
	}
	mode := unix.O_RDONLY
	if flag&model.ReadWrite != 0 {
		mode = unix.O_RDWR
	}
	if flag&model.Create != 0 {
		mode |= unix.O_CREAT
	}
	if flag&model.Excl != 0 {
		mode |= unix.O_EXCL
	}
	if flag&model.Truncate != 0 {
		mode |= unix.O_TRUNC
	}
	fd, err := d.p.fds.create(op, name, kind, func() (int, error) {
		made := false
		for {
			fd, err := unix.Open(full, mode|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
			if err == unix.ENOENT && mode&unix.O_CREAT != 0 && !made {
				// The model's disk has no directories to make:
				// they come with the first file in them, and
				// only once the open has its fd (at the limit
				// nothing is left behind), as the sim has it.
				if err := mkdirBelow(d.p.dir, filepath.Dir(full)); err != nil {
					return -1, err
				}
				made = true
				continue
			}
			if err != unix.EINTR {
				return fd, err
			}
		}
	})
	if err != nil {
		return nil, err
	}
	f := newFile(d.p, fd, name, kind)
	d.p.fds.own(fd, f)
	return f, nil
}

// Rename renames from to to, replacing to atomically (rename(2)); open
// files keep their inode.
func (d *disk) Rename(from, to string) error {
	rf, err := d.resolve("rename", from, false)
	if err != nil {
		return err
	}
	rt, err := d.resolve("rename", to, false)
	if err != nil {
		return err
	}
	err = unix.Rename(rf, rt)
	if err == unix.ENOENT {
		// A missing target directory is made, but only for a source
		// that exists: a failed rename leaves nothing behind.
		if _, serr := os.Lstat(rf); serr == nil {
			if err := mkdirBelow(d.p.dir, filepath.Dir(rt)); err != nil {
				return fmt.Errorf("real: rename %s %s: %w", from, to, err)
			}
			err = unix.Rename(rf, rt)
		}
	}
	if err != nil {
		return wrapErr("rename", from+" → "+to, err)
	}
	return nil
}

// Unlink removes name (an empty directory too); open files keep their
// inode until closed.
func (d *disk) Unlink(name string) error {
	full, err := d.resolve("unlink", name, false)
	if err != nil {
		return err
	}
	err = unix.Unlink(full)
	if err == unix.EISDIR {
		err = unix.Rmdir(full)
	}
	if err != nil {
		return wrapErr("unlink", name, err)
	}
	return nil
}

// Stat reports name's size.
func (d *disk) Stat(name string) (int64, error) {
	full, err := d.resolve("stat", name, true)
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(full, &st); err != nil {
		return 0, wrapErr("stat", name, err)
	}
	return st.Size, nil
}

// List returns the names in dir, sorted. Reading a directory takes an fd
// for a moment, so it counts against the fd limit like any open.
func (d *disk) List(dir string) ([]string, error) {
	full, err := d.resolve("list", dir, true)
	if err != nil {
		return nil, err
	}
	t := &d.p.fds
	t.mu.Lock() // the directory's fd is open only while the table is locked
	if err := t.room("list", dir, 1); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	entries, err := os.ReadDir(full)
	t.mu.Unlock()
	if err != nil {
		var errno unix.Errno
		if pe, ok := err.(*os.PathError); ok {
			if e, ok := pe.Err.(unix.Errno); ok {
				errno = e
			}
		}
		if errno != 0 {
			return nil, wrapErr("list", dir, errno)
		}
		return nil, fmt.Errorf("real: list %s: %w", dir, err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	slices.Sort(names)
	return names, nil
}

// Sendfile sends up to n bytes of f at off to c with sendfile(2), without
// a copy through user space. It returns the count sent, ErrWouldBlock when
// the socket buffer is full, or io.EOF when off is at the end of f. It may
// run on a worker.
func (d *disk) Sendfile(mc model.Conn, mf model.File, off int64, n int) (int, error) {
	const op = "sendfile"
	c, ok := mc.(*conn)
	if !ok || c == nil {
		return 0, badArg(op, "", fmt.Sprintf("%T is not a conn of the real world", mc))
	}
	f, ok := mf.(*file)
	if !ok || f == nil {
		return 0, badArg(op, c.desc, fmt.Sprintf("%T is not a file of the real world", mf))
	}
	if off < 0 || n < 0 {
		return 0, badArg(op, c.desc, fmt.Sprintf("offset %d, count %d", off, n))
	}
	if n == 0 {
		return 0, nil
	}
	var sent int
	err := c.use(op, func(cfd int) error {
		return f.use(op, func(ffd int) error {
			if err := c.deadWriteErr(); err != nil {
				return err
			}
			for {
				m, err := unix.Sendfile(cfd, ffd, &off, n)
				if err == unix.EINTR {
					continue
				}
				if m > 0 {
					sent = m
					return nil
				}
				if err != nil {
					return c.failWrite(op, err)
				}
				return io.EOF
			}
		})
	})
	return sent, err
}

// file is an open file. It implements model.File. It may be used from any
// one goroutine at a time (a loop or a worker it was handed to); Close
// waits for a ReadAt or WriteAt in flight.
type file struct {
	p     *process
	name  string
	kind  model.FDKind
	sysfd int

	fdmu     sync.RWMutex
	fdClosed bool
}

var _ model.File = (*file)(nil)

func newFile(p *process, fd int, name string, kind model.FDKind) *file {
	return &file{p: p, name: name, kind: kind, sysfd: fd}
}

func (f *file) Kind() model.FDKind { return f.kind }

func (f *file) use(op string, fn func(fd int) error) error {
	f.fdmu.RLock()
	defer f.fdmu.RUnlock()
	if f.fdClosed {
		return newErr(op, f.name, model.ErrClosed)
	}
	return fn(f.sysfd)
}

// ReadAt reads len(p) bytes at off with pread, or fewer and io.EOF at the
// end of the file.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, badArg("pread", f.name, "negative offset")
	}
	n := 0
	err := f.use("pread", func(fd int) error {
		for n < len(p) {
			m, err := unix.Pread(fd, p[n:], off+int64(n))
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return wrapErr("pread", f.name, err)
			}
			if m == 0 {
				return io.EOF
			}
			n += m
		}
		return nil
	})
	return n, err
}

// WriteAt writes all of p at off with pwrite.
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, badArg("pwrite", f.name, "negative offset")
	}
	n := 0
	err := f.use("pwrite", func(fd int) error {
		for n < len(p) {
			m, err := unix.Pwrite(fd, p[n:], off+int64(n))
			if err == unix.EINTR {
				continue
			}
			if err == unix.EBADF {
				// The fd is open (we hold it), so it was opened
				// read-only.
				return &sysError{op: "pwrite", obj: f.name + " (opened read-only)", kind: model.ErrNotSupported, errno: unix.EBADF}
			}
			if err != nil {
				return wrapErr("pwrite", f.name, err)
			}
			if m == 0 {
				return fmt.Errorf("real: pwrite %s: %w", f.name, io.ErrShortWrite)
			}
			n += m
		}
		return nil
	})
	return n, err
}

// Size reports the file's size (fstat).
func (f *file) Size() (int64, error) {
	var size int64
	err := f.use("fstat", func(fd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return wrapErr("fstat", f.name, err)
		}
		size = st.Size
		return nil
	})
	return size, err
}

// Sync flushes the file to stable storage (fsync).
func (f *file) Sync() error {
	return f.use("fsync", func(fd int) error {
		for {
			err := unix.Fsync(fd)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return wrapErr("fsync", f.name, err)
			}
			return nil
		}
	})
}

// Close closes the fd.
func (f *file) Close() error {
	f.fdmu.Lock()
	if f.fdClosed {
		f.fdmu.Unlock()
		return newErr("close", f.name, model.ErrClosed)
	}
	f.fdClosed = true
	f.fdmu.Unlock()
	return f.p.fds.close(f.sysfd)
}

func (f *file) forceClose() { f.Close() }

// mkdirBelow makes dir and the directories between base and it. Unlike
// os.MkdirAll it never makes base or anything above it, which must
// exist: the directory of a world removed under its running processes
// (RemoveScratch) is not grown back by their next open. (os.Root opens
// base, so a removed base fails ENOENT, and keeps dir inside it.)
func mkdirBelow(base, dir string) error {
	rel, err := filepath.Rel(base, dir)
	if err != nil || rel == "." {
		return err
	}
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("real: %s is not below %s", dir, base)
	}
	r, err := os.OpenRoot(base)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.MkdirAll(rel, 0o700)
}
