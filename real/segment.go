package real

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"xceiver/model"
)

// Shared-memory segments are memfds mapped MAP_SHARED: the datanode
// creates one, passes its fd over the domain socket, and the client maps
// the fd it received, so both see the same pages. Words are read and
// written with atomic operations, as HDFS's slots are.

type segment struct {
	p    *process
	name string
	mu   sync.RWMutex // Unmap waits for a Load or Store in progress
	mem  []byte       // nil once unmapped
}

// NewSegment implements model.Process.
func (p *process) NewSegment(name string, size int) (model.Segment, model.File, error) {
	const op = "memfd_create"
	if size <= 0 || size%8 != 0 {
		return nil, nil, badArg(op, name, fmt.Sprintf("size %d is not a positive multiple of 8", size))
	}
	fd, err := p.fds.create(op, name, model.FDSegment, func() (int, error) {
		return unix.MemfdCreate("xceiver-"+name, unix.MFD_CLOEXEC)
	})
	if err != nil {
		return nil, nil, err
	}
	f := newFile(p, fd, "memfd "+name, model.FDSegment)
	p.fds.own(fd, f)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		f.Close()
		return nil, nil, wrapErr("ftruncate", f.name, err)
	}
	s, err := p.mapFD(fd, name, size)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return s, f, nil
}

// MapSegment implements model.Process.
func (p *process) MapSegment(mf model.File, size int) (model.Segment, error) {
	f, ok := mf.(*file)
	if !ok || f == nil {
		return nil, badArg("mmap", "segment", fmt.Sprintf("%T is not a file of the real world", mf))
	}
	if size <= 0 || size%8 != 0 {
		return nil, badArg("mmap", f.name, fmt.Sprintf("size %d is not a positive multiple of 8", size))
	}
	var s *segment
	err := f.use("mmap", func(fd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return wrapErr("fstat", f.name, err)
		}
		if st.Size < int64(size) {
			return newErr("mmap", fmt.Sprintf("%s (%d bytes, %d wanted)", f.name, st.Size, size), model.ErrNotSupported)
		}
		var err error
		s, err = p.mapFD(fd, f.name, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (p *process) mapFD(fd int, name string, size int) (*segment, error) {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, wrapErr("mmap", name, err)
	}
	p.segments.Add(1)
	return &segment{p: p, name: name, mem: mem}, nil
}

func (s *segment) Size() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.mem)
}

// word returns the word at off, or nil (after failing the world for a bad
// offset). Called with mu held.
func (s *segment) word(off int) *uint64 {
	if s.mem == nil {
		return nil
	}
	if off < 0 || off%8 != 0 || off >= len(s.mem) {
		s.p.w.Fail(fmt.Errorf("real: segment %s: access at offset %d of %d bytes", s.name, off, len(s.mem)))
		return nil
	}
	return (*uint64)(unsafe.Pointer(&s.mem[off]))
}

func (s *segment) Load(off int) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w := s.word(off); w != nil {
		return atomic.LoadUint64(w)
	}
	return 0
}

func (s *segment) Store(off int, v uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w := s.word(off); w != nil {
		atomic.StoreUint64(w, v)
	}
}

func (s *segment) Unmap() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem == nil {
		return newErr("munmap", s.name, model.ErrClosed)
	}
	err := unix.Munmap(s.mem)
	s.mem = nil
	s.p.segments.Add(-1)
	return wrapErr("munmap", s.name, err)
}

// CheckSocketPath implements model.Process: the rule of HDFS's
// DomainSocket.validateSocketPathSecurity0, on the resolved path.
func (p *process) CheckSocketPath(addr string) error {
	ra, err := p.w.resolve("unix", addr)
	if err != nil {
		return err
	}
	return checkDirs(filepath.Dir(ra.path), os.Geteuid())
}

// checkDirs checks every existing directory from / down to dir.
func checkDirs(dir string, euid int) error {
	dir = filepath.Clean(dir)
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == "/" || d == "." {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		d := chain[i]
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			if err == unix.ENOENT {
				return nil // made private by Listen
			}
			return wrapErr("stat", d, err)
		}
		if st.Uid != 0 && int(st.Uid) != euid {
			return fmt.Errorf("directory %s is owned by uid %d, not root or uid %d: %w", d, st.Uid, euid, model.ErrInsecurePath)
		}
		if st.Mode&unix.S_IWOTH != 0 && (st.Mode&unix.S_ISVTX == 0 || d == dir) {
			return fmt.Errorf("directory %s is writable by others (mode %o): %w", d, st.Mode&0o7777, model.ErrInsecurePath)
		}
	}
	return nil
}

// AccessMode reports how f's open file description was opened
// (fcntl(F_GETFL) & O_ACCMODE: unix.O_RDONLY, O_WRONLY or O_RDWR), so
// tests can check that passed fds are read-only.
func AccessMode(mf model.File) (int, error) {
	f, ok := mf.(*file)
	if !ok || f == nil {
		return 0, badArg("fcntl", "file", fmt.Sprintf("%T is not a file of the real world", mf))
	}
	var mode int
	err := f.use("fcntl", func(fd int) error {
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return wrapErr("fcntl", f.name, err)
		}
		mode = fl & unix.O_ACCMODE
		return nil
	})
	return mode, err
}
