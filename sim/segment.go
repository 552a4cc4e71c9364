package sim

import (
	"fmt"
	"path"
	"slices"

	"xceiver/model"
)

// A simulated shared-memory segment is an inode that no name links to
// (memfd_create), holding words instead of bytes. Its fd is a File like
// any other, so it is passed, dup'd and closed like one; each mapping
// holds a reference of its own, so the segment lives while a process maps
// it, as with mmap.

type shmMap struct {
	p    *Process
	ino  *inode
	gen  int
	size int
	gone bool
}

// NewSegment implements model.Process.
func (p *Process) NewSegment(name string, size int) (model.Segment, model.File, error) {
	if size <= 0 || size%8 != 0 {
		return nil, nil, fmt.Errorf("memfd_create %s: size %d is not a positive multiple of 8: %w", name, size, model.ErrNotSupported)
	}
	fd, err := p.allocFD(model.FDSegment, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("memfd_create %s: %w", name, err)
	}
	p.w.charge(p.w.cfg.CPU.Syscall)
	p.w.nextID++
	ino := &inode{ino: p.w.nextID, refs: 1, words: make([]uint64, size/8)}
	f := &File{d: p.disk, p: p, ino: ino, fd: fd, kind: model.FDSegment, writable: true, gen: p.gen}
	p.setFDObject(fd, f)
	return p.mapInode(ino, size), f, nil
}

// MapSegment implements model.Process.
func (p *Process) MapSegment(mf model.File, size int) (model.Segment, error) {
	f, ok := mf.(*File)
	switch {
	case !ok || f.closed:
		return nil, fmt.Errorf("mmap: %w", model.ErrClosed)
	case f.ino.words == nil:
		return nil, fmt.Errorf("mmap: not a shared-memory segment: %w", model.ErrNotSupported)
	case size <= 0 || size%8 != 0 || size/8 > len(f.ino.words):
		return nil, fmt.Errorf("mmap: %d bytes of a %d-byte segment: %w", size, 8*len(f.ino.words), model.ErrNotSupported)
	}
	p.w.charge(p.w.cfg.CPU.Syscall)
	return p.mapInode(f.ino, size), nil
}

func (p *Process) mapInode(ino *inode, size int) *shmMap {
	ino.refs++
	s := &shmMap{p: p, ino: ino, gen: p.gen, size: size}
	p.segments = append(p.segments, s)
	p.w.record(Event{Proc: p.name, Kind: "mmap", Conn: ino.ino, A: int64(size), B: int64(len(p.segments))})
	return s
}

func (s *shmMap) Size() int { return s.size }

func (s *shmMap) word(off int) (int, bool) {
	if s.gone || s.gen != s.p.gen {
		return 0, false
	}
	if off < 0 || off%8 != 0 || off >= s.size {
		s.p.w.Fail(fmt.Errorf("process %s: segment access at offset %d of %d bytes", s.p.name, off, s.size))
		return 0, false
	}
	return off / 8, true
}

func (s *shmMap) Load(off int) uint64 {
	i, ok := s.word(off)
	if !ok {
		return 0
	}
	return s.ino.words[i]
}

func (s *shmMap) Store(off int, v uint64) {
	if i, ok := s.word(off); ok {
		s.ino.words[i] = v
	}
}

func (s *shmMap) Unmap() error {
	if s.gone || s.gen != s.p.gen {
		return fmt.Errorf("munmap: %w", model.ErrClosed)
	}
	s.release()
	for i, o := range s.p.segments {
		if o == s {
			s.p.segments = append(s.p.segments[:i], s.p.segments[i+1:]...)
			break
		}
	}
	s.p.w.record(Event{Proc: s.p.name, Kind: "munmap", Conn: s.ino.ino, A: int64(s.size), B: int64(len(s.p.segments))})
	return nil
}

func (s *shmMap) release() {
	s.gone = true
	s.ino.refs--
}

// SetInsecureDir makes CheckSocketPath refuse Unix addresses under dir, as
// if it were writable by others (the simulated file system has no owners
// or modes otherwise).
func (w *World) SetInsecureDir(dir string) {
	w.insecureDirs = append(w.insecureDirs, path.Clean(dir))
}

// CheckSocketPath implements model.Process.
func (p *Process) CheckSocketPath(addr string) error {
	for d := path.Dir(path.Clean(addr)); ; d = path.Dir(d) {
		if slices.Contains(p.w.insecureDirs, d) {
			return fmt.Errorf("directory %s is writable by others: %w", d, model.ErrInsecurePath)
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}
