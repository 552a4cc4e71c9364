package model

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
)

// bsDisk is an in-memory Disk with POSIX semantics: names point at inodes,
// an open file holds its inode, rename replaces the target's name and
// unlink drops the name only. It counts open fds by kind so tests can check
// for leaks, and fail lets a test inject an error into any call.
type bsDisk struct {
	names map[string]*bsInode
	open  [NumFDKinds]int
	// fail, if set, is asked before every operation; a non-nil result is
	// returned instead of performing it.
	fail func(op, path string) error
	// failClose, if set, is asked at every Close; a non-nil result is
	// returned, and the file is closed all the same (as close(2) frees
	// the fd whatever it reports).
	failClose func(path string) error
}

type bsInode struct{ data []byte }

type bsFile struct {
	d        *bsDisk
	name     string
	ino      *bsInode
	kind     FDKind
	writable bool
	closed   bool
}

func newBSDisk() *bsDisk { return &bsDisk{names: make(map[string]*bsInode)} }

func (d *bsDisk) check(op, path string) error {
	if d.fail != nil {
		return d.fail(op, path)
	}
	return nil
}

func (d *bsDisk) Open(path string, flag OpenFlag, kind FDKind) (File, error) {
	if err := d.check("open", path); err != nil {
		return nil, err
	}
	ino, ok := d.names[path]
	switch {
	case ok && flag&Create != 0 && flag&Excl != 0:
		return nil, ErrExist
	case !ok && flag&Create == 0:
		return nil, ErrNotExist
	case !ok:
		ino = &bsInode{}
		d.names[path] = ino
	}
	if flag&Truncate != 0 {
		ino.data = nil
	}
	d.open[kind]++
	return &bsFile{d: d, name: path, ino: ino, kind: kind, writable: flag&ReadWrite != 0}, nil
}

func (d *bsDisk) Rename(from, to string) error {
	if err := d.check("rename", from); err != nil {
		return err
	}
	ino, ok := d.names[from]
	if !ok {
		return ErrNotExist
	}
	delete(d.names, from)
	d.names[to] = ino
	return nil
}

func (d *bsDisk) Unlink(path string) error {
	if err := d.check("unlink", path); err != nil {
		return err
	}
	if _, ok := d.names[path]; !ok {
		return ErrNotExist
	}
	delete(d.names, path)
	return nil
}

func (d *bsDisk) Stat(path string) (int64, error) {
	ino, ok := d.names[path]
	if !ok {
		return 0, ErrNotExist
	}
	return int64(len(ino.data)), nil
}

func (d *bsDisk) List(dir string) ([]string, error) {
	var out []string
	for name := range d.names {
		if rest, ok := strings.CutPrefix(name, dir+"/"); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	if len(out) == 0 {
		return nil, ErrNotExist
	}
	slices.Sort(out)
	return out, nil
}

func (d *bsDisk) Sendfile(Conn, File, int64, int) (int, error) { return 0, ErrNotSupported }

func (d *bsDisk) openFDs() int {
	n := 0
	for _, c := range d.open {
		n += c
	}
	return n
}

func (f *bsFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, ErrClosed
	}
	if err := f.d.check("read", f.name); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *bsFile) WriteAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, ErrClosed
	}
	if !f.writable {
		return 0, ErrClosed // EBADF: not open for writing
	}
	if err := f.d.check("write", f.name); err != nil {
		return 0, err
	}
	if end := off + int64(len(p)); end > int64(len(f.ino.data)) {
		f.ino.data = append(f.ino.data, make([]byte, end-int64(len(f.ino.data)))...)
	}
	return copy(f.ino.data[off:], p), nil
}

func (f *bsFile) Size() (int64, error) {
	if f.closed {
		return 0, ErrClosed
	}
	return int64(len(f.ino.data)), nil
}

func (f *bsFile) Sync() error {
	if f.closed {
		return ErrClosed
	}
	return f.d.check("sync", f.name)
}

func (f *bsFile) Close() error {
	if f.closed {
		return ErrClosed
	}
	f.closed = true
	f.d.open[f.kind]--
	if f.d.failClose != nil {
		return f.d.failClose(f.name)
	}
	return nil
}

func (f *bsFile) Kind() FDKind { return f.kind }

// bsReadAll reads a whole replica through OpenForRead and ReadChunks, in
// pieces of at most piece bytes.
func bsReadAll(t *testing.T, s *BlockStore, id, stamp uint64, piece int) []byte {
	t.Helper()
	bf, err := s.OpenForRead(id, stamp)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	return bsReadFiles(t, bf, piece)
}

func bsReadFiles(t *testing.T, bf *BlockFiles, piece int) []byte {
	t.Helper()
	var out []byte
	for off := int64(0); off < bf.Length; {
		n := int(min(int64(piece), bf.Length-off))
		data, sums, err := bf.ReadChunks(nil, off, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) != n || len(sums) != numChunks(n, BytesPerChecksum)*ChecksumSize {
			t.Fatalf("ReadChunks(%d, %d) = %d data, %d sum bytes", off, n, len(data), len(sums))
		}
		out = append(out, data...)
		off += int64(n)
	}
	return out
}

func bsNewStore(t *testing.T) (*bsDisk, *BlockStore) {
	d := newBSDisk()
	s := NewBlockStore(d, "/data/current")
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	return d, s
}

func TestBlockStoreWriteRead(t *testing.T) {
	d, s := bsNewStore(t)
	sizes := []int{0, 1, 511, 512, 513, 5000, 70000}
	stamps := map[uint64]uint64{}
	for i, size := range sizes {
		id := uint64(100 + i)
		stamp, err := s.Write(id, protoData(size))
		if err != nil {
			t.Fatal(err)
		}
		if stamp < FirstGenStamp {
			t.Fatalf("stamp %d below %d", stamp, FirstGenStamp)
		}
		stamps[id] = stamp
		if st, length, ok := s.Info(id); !ok || st != stamp || length != int64(size) {
			t.Fatalf("Info(%d) = %d, %d, %v", id, st, length, ok)
		}
	}
	for i, size := range sizes {
		id := uint64(100 + i)
		for _, piece := range []int{512, 4096, MaxPacketData} {
			if got := bsReadAll(t, s, id, stamps[id], piece); !bytes.Equal(got, protoData(size)) {
				t.Fatalf("block %d (%d bytes) read back wrong in pieces of %d", id, size, piece)
			}
		}
	}
	if got, want := s.Blocks(), []uint64{100, 101, 102, 103, 104, 105, 106}; !slices.Equal(got, want) {
		t.Fatalf("Blocks = %v", got)
	}
	// The on-disk layout is HDFS's.
	if _, ok := d.names[fmt.Sprintf("/data/current/blk_100_%d.meta", stamps[100])]; !ok {
		t.Fatalf("no meta file; names: %v", d.names)
	}
	meta := d.names[fmt.Sprintf("/data/current/blk_105_%d.meta", stamps[105])].data
	if want := append([]byte{0, 1, 2, 0, 0, 2, 0}, ChecksumChunks(nil, protoData(5000), 512)...); !bytes.Equal(meta, want) {
		t.Fatalf("meta file %d bytes %x, want %d bytes %x", len(meta), meta[:16], len(want), want[:16])
	}
	if _, err := s.Write(100, []byte("again")); !errors.Is(err, ErrExist) {
		t.Fatalf("second Write: %v", err)
	}
	if d.openFDs() != 0 {
		t.Fatalf("leaked fds: %v", d.open)
	}
	for name := range d.names {
		if strings.HasSuffix(name, ".tmp") {
			t.Fatalf("temporary file left: %s", name)
		}
	}
}

func TestBlockStoreOpenKinds(t *testing.T) {
	d, s := bsNewStore(t)
	stamp, _ := s.Write(1, protoData(10))
	bf, err := s.OpenForRead(1, stamp)
	if err != nil {
		t.Fatal(err)
	}
	if bf.Data.Kind() != FDBlockFile || bf.Meta.Kind() != FDMetaFile || d.open[FDBlockFile] != 1 || d.open[FDMetaFile] != 1 {
		t.Fatalf("kinds %v %v, open %v", bf.Data.Kind(), bf.Meta.Kind(), d.open)
	}
	if _, err := bf.Data.WriteAt([]byte{1}, 0); err == nil {
		t.Fatal("data file opened writable")
	}
	if err := bf.Close(); err != nil {
		t.Fatal(err)
	}
	if d.openFDs() != 0 {
		t.Fatalf("leaked fds: %v", d.open)
	}
}

func TestBlockStoreAppend(t *testing.T) {
	for _, sizes := range [][2]int{{700, 1000}, {512, 100}, {0, 600}, {100, 0}, {1000, 24}, {70000, 70000}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			d, s := bsNewStore(t)
			first, second := protoData(sizes[0]), bytes.Repeat([]byte{0x5a}, sizes[1])
			s1, err := s.Write(7, first)
			if err != nil {
				t.Fatal(err)
			}
			old, err := s.OpenForRead(7, s1)
			if err != nil {
				t.Fatal(err)
			}
			var events []string
			s.OnChange(func(id, st uint64, deleted bool) { events = append(events, fmt.Sprint(id, st, deleted)) })

			s2, err := s.Append(7, second)
			if err != nil {
				t.Fatal(err)
			}
			if s2 <= s1 {
				t.Fatalf("stamp %d after %d", s2, s1)
			}
			if want := []string{fmt.Sprint(7, s2, false)}; !slices.Equal(events, want) {
				t.Fatalf("OnChange events %v, want %v", events, want)
			}
			whole := append(bytes.Clone(first), second...)
			if st, length, _ := s.Info(7); st != s2 || length != int64(len(whole)) {
				t.Fatalf("Info = %d, %d", st, length)
			}
			if got := bsReadAll(t, s, 7, s2, 4096); !bytes.Equal(got, whole) {
				t.Fatal("appended block reads back wrong")
			}
			// Files opened before the append still read the old replica,
			// including its partial last chunk.
			if got := bsReadFiles(t, old, 512); !bytes.Equal(got, first) {
				t.Fatal("old files read wrong bytes after append")
			}
			old.Close()
			if _, ok := d.names[fmt.Sprintf("/data/current/blk_7_%d.meta", s1)]; ok {
				t.Fatal("old meta file still there")
			}
			// An older stamp is tolerated and served the current replica; a
			// newer one means this replica is stale.
			bf, err := s.OpenForRead(7, s1)
			if err != nil || bf.Stamp != s2 {
				t.Fatalf("read with old stamp: %v", err)
			}
			bf.Close()
			if _, err := s.OpenForRead(7, s2+1); !errors.Is(err, ErrStaleReplica) || StatusOf(err) != StatusErrorInvalid {
				t.Fatalf("read with newer stamp: %v", err)
			}
			if d.openFDs() != 0 {
				t.Fatalf("leaked fds: %v", d.open)
			}
		})
	}
}

func TestBlockStoreAppendCorruptTail(t *testing.T) {
	d, s := bsNewStore(t)
	s1, _ := s.Write(7, protoData(700))
	d.names["/data/current/blk_7"].data[600] ^= 1
	var ce *ChecksumError
	if _, err := s.Append(7, []byte("more")); !errors.As(err, &ce) || ce.Offset != 512 {
		t.Fatalf("append onto a corrupt partial chunk: %v", err)
	}
	if st, length, _ := s.Info(7); st != s1 || length != 700 {
		t.Fatalf("failed append changed the replica: %d, %d", st, length)
	}
}

func TestBlockStoreReplaceKeepsOpenReaders(t *testing.T) {
	d, s := bsNewStore(t)
	oldData, newData := protoData(3000), bytes.Repeat([]byte("new!"), 300)
	s1, _ := s.Write(9, oldData)
	old, err := s.OpenForRead(9, s1)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	s.OnChange(func(id, st uint64, deleted bool) { events = append(events, fmt.Sprint(id, st, deleted)) })
	s.OnChange(func(id, st uint64, deleted bool) { events = append(events, "second") })
	s2, err := s.Replace(9, newData)
	if err != nil {
		t.Fatal(err)
	}
	if s2 <= s1 {
		t.Fatalf("stamp %d after %d", s2, s1)
	}
	if want := []string{fmt.Sprint(9, s2, false), "second"}; !slices.Equal(events, want) {
		t.Fatalf("OnChange events %v, want %v", events, want)
	}
	if got := bsReadFiles(t, old, 1024); !bytes.Equal(got, oldData) {
		t.Fatal("an fd opened before Replace reads new bytes")
	}
	if old.Stamp != s1 || old.Length != 3000 {
		t.Fatalf("old handle changed: %+v", old)
	}
	old.Close()
	if got := bsReadAll(t, s, 9, s2, 1024); !bytes.Equal(got, newData) {
		t.Fatal("new contents read back wrong")
	}
	if _, err := s.Replace(10, newData); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Replace of a missing block: %v", err)
	}
	if n := len(d.names); n != 2 {
		t.Fatalf("%d files left, want 2: %v", n, d.names)
	}
}

func TestBlockStoreDelete(t *testing.T) {
	d, s := bsNewStore(t)
	stamp, _ := s.Write(5, protoData(100))
	open, _ := s.OpenForRead(5, stamp)
	var events []string
	s.OnChange(func(id, st uint64, deleted bool) { events = append(events, fmt.Sprint(id, st, deleted)) })
	if err := s.Delete(5); err != nil {
		t.Fatal(err)
	}
	if want := []string{"5 0 true"}; !slices.Equal(events, want) {
		t.Fatalf("OnChange events %v", events)
	}
	if _, _, ok := s.Info(5); ok {
		t.Fatal("deleted block still known")
	}
	if _, err := s.OpenForRead(5, stamp); !errors.Is(err, ErrNotExist) || StatusOf(err) != StatusErrorInvalid {
		t.Fatalf("OpenForRead after delete: %v", err)
	}
	if err := s.Delete(5); !errors.Is(err, ErrNotExist) {
		t.Fatalf("second Delete: %v", err)
	}
	if len(d.names) != 0 {
		t.Fatalf("files left: %v", d.names)
	}
	// Unlinked files stay readable through fds opened before.
	if got := bsReadFiles(t, open, 512); !bytes.Equal(got, protoData(100)) {
		t.Fatal("open fd of a deleted block reads wrong bytes")
	}
	open.Close()
	// The id can be written again, under a new stamp.
	s2, err := s.Write(5, []byte("reborn"))
	if err != nil || s2 <= stamp {
		t.Fatalf("Write after Delete: %d, %v", s2, err)
	}
}

func TestBlockStoreChecksumError(t *testing.T) {
	for _, corruptMeta := range []bool{false, true} {
		d, s := bsNewStore(t)
		stamp, _ := s.Write(3, protoData(5000))
		if corruptMeta {
			d.names[fmt.Sprintf("/data/current/blk_3_%d.meta", stamp)].data[7+4*5+2] ^= 0x80 // sum of chunk 5
		} else {
			d.names["/data/current/blk_3"].data[2600] ^= 0x80 // in chunk 5
		}
		bf, err := s.OpenForRead(3, stamp)
		if err != nil {
			t.Fatal(err)
		}
		data, sums, err := bf.ReadChunks(nil, 0, 5000)
		var ce *ChecksumError
		if !errors.As(err, &ce) || ce.Block != 3 || ce.Offset != 2560 || data != nil || sums != nil {
			t.Fatalf("corrupt meta %v: got %v (%d bytes)", corruptMeta, err, len(data))
		}
		if !strings.Contains(err.Error(), "block 3") || !strings.Contains(err.Error(), "offset 2560") {
			t.Fatalf("error does not name the block and offset: %v", err)
		}
		// Chunks before the corrupt one still read.
		if _, _, err := bf.ReadChunks(nil, 0, 2560); err != nil {
			t.Fatal(err)
		}
		if _, _, err := bf.ReadChunks(nil, 3072, 5000-3072); err != nil {
			t.Fatal(err)
		}
		bf.Close()
	}
}

func TestBlockStoreReadRange(t *testing.T) {
	_, s := bsNewStore(t)
	stamp, _ := s.Write(4, protoData(1300))
	bf, err := s.OpenForRead(4, stamp)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	bad := []struct{ off, n int64 }{
		{0, 1301},    // past the end
		{1024, 277},  // past the end by one
		{1536, 0},    // starts past the end
		{-512, 512},  // negative
		{100, 412},   // unaligned start
		{0, 100},     // unaligned end before the last chunk
		{512, -1},    // negative length
		{1024, 1000}, // past the end
	}
	for _, b := range bad {
		if _, _, err := bf.ReadChunks(nil, b.off, int(b.n)); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("ReadChunks(%d, %d): %v, want ErrOutOfRange", b.off, b.n, err)
		}
	}
	// Aligned reads and the short last chunk are fine; dst is appended to
	// and sums and data are adjacent.
	dst := append(make([]byte, 0, 4096), "hdr"...)
	data, sums, err := bf.ReadChunks(dst, 1024, 276)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, protoData(1300)[1024:]) || len(sums) != 4 || &sums[:5][4] != &data[0] || string(dst[:3]) != "hdr" {
		t.Fatal("ReadChunks layout")
	}
	if data, _, err := bf.ReadChunks(nil, 1024, 0); err != nil || len(data) != 0 {
		t.Fatalf("empty read: %v", err)
	}
}

// A data file shorter than its meta file says is an error, not short data.
func TestBlockStoreTruncatedData(t *testing.T) {
	d, s := bsNewStore(t)
	stamp, _ := s.Write(4, protoData(1300))
	ino := d.names["/data/current/blk_4"]
	ino.data = ino.data[:1000]
	bf, _ := s.OpenForRead(4, stamp)
	defer bf.Close()
	if data, _, err := bf.ReadChunks(nil, 0, 1300); err == nil || data != nil {
		t.Fatalf("read of a truncated block: %v", err)
	}
}

// A file written and synced whose close then fails (NFS reports a failed
// write-back there) is a failed update: the error reaches the caller and
// the replica stays as it was, as for a failed write or sync.
func TestBlockStoreFailedCloseLeavesOldReplica(t *testing.T) {
	d, s := bsNewStore(t)
	s1, _ := s.Write(2, protoData(2000))
	d.failClose = func(path string) error {
		if path == s.dataPath(2) {
			return ErrIO
		}
		return nil
	}
	if _, err := s.Append(2, []byte("new")); !errors.Is(err, ErrIO) {
		t.Fatalf("Append with the data file's close failing = %v, want ErrIO", err)
	}
	d.failClose = nil
	if st, length, _ := s.Info(2); st != s1 || length != 2000 {
		t.Fatalf("a failed close changed the replica: %d, %d", st, length)
	}
	if d.openFDs() != 0 {
		t.Fatalf("leaked fds: %v", d.open)
	}
}

// A reader's BlockFiles.Close closes both files whatever either reports,
// and reports the first failure: the data file's, then the meta file's.
func TestBlockFilesCloseReportsEitherFilesError(t *testing.T) {
	errData, errMeta := errors.New("data close"), errors.New("meta close")
	for _, tt := range []struct {
		name               string
		failData, failMeta bool
		want               error
	}{
		{"neither fails", false, false, nil},
		{"data fails", true, false, errData},
		{"meta fails", false, true, errMeta},
		{"both fail", true, true, errData},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, s := bsNewStore(t)
			st, err := s.Write(1, protoData(700))
			if err != nil {
				t.Fatal(err)
			}
			bf, err := s.OpenForRead(1, st)
			if err != nil {
				t.Fatal(err)
			}
			d.failClose = func(path string) error {
				switch {
				case tt.failData && path == s.dataPath(1):
					return errData
				case tt.failMeta && path == s.metaPath(1, st):
					return errMeta
				}
				return nil
			}
			if err := bf.Close(); err != tt.want {
				t.Errorf("Close = %v, want %v", err, tt.want)
			}
			if d.openFDs() != 0 {
				t.Errorf("fds open after Close: %v", d.open)
			}
		})
	}
}

func TestBlockStoreFailedWriteLeavesOldReplica(t *testing.T) {
	d, s := bsNewStore(t)
	s1, _ := s.Write(2, protoData(2000))
	for _, op := range []string{"write", "sync", "rename"} {
		d.fail = func(o, path string) error {
			if o == op {
				return ErrNoSpace
			}
			return nil
		}
		if _, err := s.Replace(2, []byte("new")); !errors.Is(err, ErrNoSpace) {
			t.Fatalf("%s failure: Replace = %v", op, err)
		}
		if _, err := s.Append(2, []byte("new")); !errors.Is(err, ErrNoSpace) {
			t.Fatalf("%s failure: Append = %v", op, err)
		}
		d.fail = nil
		if st, length, _ := s.Info(2); st != s1 || length != 2000 {
			t.Fatalf("%s failure changed the replica: %d, %d", op, st, length)
		}
		if got := bsReadAll(t, s, 2, s1, 4096); !bytes.Equal(got, protoData(2000)) {
			t.Fatalf("%s failure: old replica damaged", op)
		}
		if d.openFDs() != 0 {
			t.Fatalf("leaked fds: %v", d.open)
		}
	}
	// A restart agrees.
	s2 := NewBlockStore(d, "/data/current")
	if err := s2.Load(); err != nil {
		t.Fatal(err)
	}
	if st, length, _ := s2.Info(2); st != s1 || length != 2000 {
		t.Fatalf("after restart: %d, %d", st, length)
	}
}

func TestBlockStoreLoad(t *testing.T) {
	d, s := bsNewStore(t)
	content := map[uint64][]byte{}
	put := func(id uint64, b []byte) { content[id] = b }
	s.Write(1, protoData(1000))
	put(1, protoData(1000))
	s.Write(2, protoData(50))
	s.Append(2, protoData(600))
	put(2, append(protoData(50), protoData(600)...))
	s.Write(3, protoData(10))
	s.Replace(3, []byte("replaced"))
	put(3, []byte("replaced"))
	s.Write(4, protoData(10))
	s.Delete(4)
	s.Write(5, nil)
	put(5, nil)
	maxStamp := uint64(0)
	for id := range content {
		st, _, _ := s.Info(id)
		maxStamp = max(maxStamp, st)
	}
	// Junk the store must ignore.
	for _, name := range []string{"blk_01", "blk_1_0900.meta", "blk_x", "blk_9_1.meta.tmp", "blk_9.tmp", "VERSION", "blk_8_5000.meta"} {
		d.names["/data/current/"+name] = &bsInode{data: []byte("junk")}
	}

	r := NewBlockStore(d, "/data/current")
	if err := r.Load(); err != nil {
		t.Fatal(err)
	}
	if got := r.Blocks(); !slices.Equal(got, []uint64{1, 2, 3, 5}) {
		t.Fatalf("Blocks after Load = %v", got)
	}
	for id, want := range content {
		st, length, ok := r.Info(id)
		wst, wlength, _ := s.Info(id)
		if !ok || st != wst || length != wlength {
			t.Fatalf("block %d: Info = %d, %d, %v; want %d, %d", id, st, length, ok, wst, wlength)
		}
		if got := bsReadAll(t, r, id, st, 4096); !bytes.Equal(got, want) {
			t.Fatalf("block %d reads back wrong after Load", id)
		}
	}
	// New stamps continue above every stamp on disk, orphans included.
	st, err := r.Write(6, []byte("x"))
	if err != nil || st <= 5000 || st <= maxStamp {
		t.Fatalf("stamp after Load: %d, %v", st, err)
	}
	if d.openFDs() != 0 {
		t.Fatalf("leaked fds: %v", d.open)
	}
}

// Load must recover a sane replica from the state each update leaves if
// the process crashes between its steps.
func TestBlockStoreLoadAfterCrash(t *testing.T) {
	const dir = "/data/current"
	old := protoData(700)
	tests := []struct {
		name  string
		crash func(d *bsDisk, s *BlockStore) // leaves a mid-update state
		want  []byte
		newer bool // the recovered stamp is the update's
	}{
		{"append: data written, meta not renamed", func(d *bsDisk, s *BlockStore) {
			d.names[dir+"/blk_1"].data = append(d.names[dir+"/blk_1"].data, bytes.Repeat([]byte{7}, 900)...)
			d.names[dir+"/blk_1_1002.meta.tmp"] = &bsInode{data: []byte("half a meta")}
		}, old, false},
		{"append: torn data write", func(d *bsDisk, s *BlockStore) {
			d.names[dir+"/blk_1"].data = append(d.names[dir+"/blk_1"].data, 7, 7, 7)
		}, old, false},
		{"append: meta renamed, old meta not unlinked", func(d *bsDisk, s *BlockStore) {
			meta := bytes.Clone(d.names[dir+"/blk_1_1001.meta"].data)
			s.Append(1, []byte("tail"))
			d.names[dir+"/blk_1_1001.meta"] = &bsInode{data: meta}
		}, append(bytes.Clone(old), "tail"...), true},
		{"replace: meta renamed, data not", func(d *bsDisk, s *BlockStore) {
			newMeta := append(bytes.Clone(metaHeader), ChecksumChunks(nil, []byte("brand new"), 512)...)
			d.names[dir+"/blk_1_1002.meta"] = &bsInode{data: newMeta}
			d.names[dir+"/blk_1.tmp"] = &bsInode{data: []byte("brand new")}
		}, old, false},
		{"replace: same chunk count, meta renamed, data not", func(d *bsDisk, s *BlockStore) {
			other := protoData(1000)[300:1000]
			newMeta := append(bytes.Clone(metaHeader), ChecksumChunks(nil, other, 512)...)
			d.names[dir+"/blk_1_1002.meta"] = &bsInode{data: newMeta}
		}, old, false},
		{"replace: same last chunk, meta renamed, data not", func(d *bsDisk, s *BlockStore) {
			// Only the full verification tells this meta file from the
			// right one: its last checksum matches the old data.
			other := bytes.Clone(old)
			other[0] ^= 1
			newMeta := append(bytes.Clone(metaHeader), ChecksumChunks(nil, other, 512)...)
			d.names[dir+"/blk_1_1002.meta"] = &bsInode{data: newMeta}
		}, old, false},
		{"replace: both renamed, old meta not unlinked", func(d *bsDisk, s *BlockStore) {
			meta := bytes.Clone(d.names[dir+"/blk_1_1001.meta"].data)
			s.Replace(1, []byte("brand new"))
			d.names[dir+"/blk_1_1001.meta"] = &bsInode{data: meta}
		}, []byte("brand new"), true},
		{"replace with a prefix of the old contents: meta renamed, data not", func(d *bsDisk, s *BlockStore) {
			// The new meta file fits the old data file too, as a shorter
			// prefix; only the longest fit describes the file on disk.
			newMeta := append(bytes.Clone(metaHeader), ChecksumChunks(nil, old[:300], 512)...)
			d.names[dir+"/blk_1_1002.meta"] = &bsInode{data: newMeta}
			d.names[dir+"/blk_1.tmp"] = &bsInode{data: bytes.Clone(old[:300])}
		}, old, false},
		{"replace with nothing: meta renamed, data not", func(d *bsDisk, s *BlockStore) {
			d.names[dir+"/blk_1_1002.meta"] = &bsInode{data: bytes.Clone(metaHeader)}
			d.names[dir+"/blk_1.tmp"] = &bsInode{}
		}, old, false},
		{"write: only the meta renamed", func(d *bsDisk, s *BlockStore) {
			d.names[dir+"/blk_2_1002.meta"] = &bsInode{data: bytes.Clone(metaHeader)}
		}, old, false},
		{"delete: meta unlinked, data not", func(d *bsDisk, s *BlockStore) {
			s.Write(2, []byte("doomed"))
			delete(d.names, dir+"/blk_2_1002.meta")
		}, old, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newBSDisk()
			s := NewBlockStore(d, dir)
			if st, err := s.Write(1, old); err != nil || st != 1001 {
				t.Fatalf("Write: %d, %v", st, err)
			}
			tt.crash(d, s)

			r := NewBlockStore(d, dir)
			if err := r.Load(); err != nil {
				t.Fatal(err)
			}
			if got := r.Blocks(); !slices.Equal(got, []uint64{1}) {
				t.Fatalf("blocks after Load: %v", got)
			}
			st, length, _ := r.Info(1)
			if (st > 1001) != tt.newer || length != int64(len(tt.want)) {
				t.Fatalf("Info = %d, %d; want length %d, newer stamp %v", st, length, len(tt.want), tt.newer)
			}
			if got := bsReadAll(t, r, 1, st, 4096); !bytes.Equal(got, tt.want) {
				t.Fatal("recovered replica reads wrong bytes")
			}
			// The recovered replica takes further updates.
			st2, err := r.Append(1, []byte("+more"))
			if err != nil || st2 <= st {
				t.Fatalf("Append after recovery: %d, %v", st2, err)
			}
			if got := bsReadAll(t, r, 1, st2, 4096); !bytes.Equal(got, append(bytes.Clone(tt.want), "+more"...)) {
				t.Fatal("append after recovery reads wrong bytes")
			}
			// And a second restart sees the same.
			r2 := NewBlockStore(d, dir)
			if err := r2.Load(); err != nil {
				t.Fatal(err)
			}
			if st3, length3, _ := r2.Info(1); st3 != st2 || length3 != int64(len(tt.want)+5) {
				t.Fatalf("second restart: %d, %d", st3, length3)
			}
			if d.openFDs() != 0 {
				t.Fatalf("leaked fds: %v", d.open)
			}
		})
	}
}

// A delete cut short by a crash never brings back an older replica: not
// through a meta file that an earlier replace failed to unlink and that
// still fits a prefix of the data file (rapid's block store machine found
// this: write, replace, delete, crashing in the last two).
func TestBlockStoreDeleteCrashNeverResurrects(t *testing.T) {
	const dir = "/data/current"
	old := protoData(700)
	d := newBSDisk()
	s := NewBlockStore(d, dir)
	if _, err := s.Write(1, old); err != nil {
		t.Fatal(err)
	}
	d.fail = func(op, path string) error {
		if op == "unlink" && strings.HasSuffix(path, "blk_1_1001.meta") {
			return ErrIO
		}
		return nil
	}
	if _, err := s.Replace(1, append(bytes.Clone(old), "and more"...)); err != nil {
		t.Fatal(err)
	}
	ops := 0
	d.fail = func(op, path string) error {
		if ops++; ops > 1 {
			return ErrIO // the crash: the first unlink happens, nothing after it
		}
		return nil
	}
	s.Delete(1)
	d.fail = nil

	r := NewBlockStore(d, dir)
	if err := r.Load(); err != nil {
		t.Fatal(err)
	}
	if got := r.Blocks(); len(got) != 0 {
		st, length, _ := r.Info(1)
		t.Fatalf("after a crashed delete, Load found blocks %v (block 1: stamp %d, %d bytes)", got, st, length)
	}
}

// A meta file with more checksums than its data file has chunks is
// refused by its size alone, unread: at a chunk boundary too (1,024 bytes
// of data, a meta file of three checksums), where a bound rounded up one
// chunk more let it through to reads of its header and last checksum
// (mutant b0a392de3b), and a read error there failed the whole Load
// instead of dropping the replica.
func TestBlockStoreLoadRefusesAnOverlongMetaUnread(t *testing.T) {
	d, s := bsNewStore(t)
	st, err := s.Write(1, protoData(1024))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(2, protoData(700)); err != nil {
		t.Fatal(err)
	}
	meta := d.names[s.metaPath(1, st)]
	meta.data = append(meta.data, 0, 0, 0, 0)
	reads := 0
	d.fail = func(op, path string) error {
		if op == "read" && path == s.metaPath(1, st) {
			reads++
			return ErrIO
		}
		return nil
	}
	r := NewBlockStore(d, "/data/current")
	if err := r.Load(); err != nil || reads != 0 {
		t.Fatalf("Load = %v after %d reads of the overlong meta file; want nil, none", err, reads)
	}
	if got := r.Blocks(); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("Blocks = %v, want [2]: block 1's only meta file does not fit it", got)
	}
}

func TestBlockStoreLoadDropsUnmatchedReplica(t *testing.T) {
	d, s := bsNewStore(t)
	s.Write(1, protoData(700))
	s.Write(2, protoData(700))
	d.names["/data/current/blk_1"].data[650] ^= 1 // the last chunk no longer matches
	r := NewBlockStore(d, "/data/current")
	if err := r.Load(); err != nil {
		t.Fatal(err)
	}
	if got := r.Blocks(); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("Blocks = %v", got)
	}
}

func TestBlockStoreLoadDiskError(t *testing.T) {
	d, s := bsNewStore(t)
	s.Write(1, protoData(700))
	d.fail = func(op, path string) error {
		if op == "read" {
			return ErrIO
		}
		return nil
	}
	r := NewBlockStore(d, "/data/current")
	if err := r.Load(); !errors.Is(err, ErrIO) {
		t.Fatalf("Load = %v, want ErrIO", err)
	}
	d.fail = nil
	if d.openFDs() != 0 {
		t.Fatalf("leaked fds: %v", d.open)
	}
}

// Load recovers replicas in block id order, whatever order the directory
// lists them in (blk_10 sorts before blk_2 by name), so the disk error it
// returns is the lowest failing block's.
func TestBlockStoreLoadGoesByBlockID(t *testing.T) {
	d, s := bsNewStore(t)
	for _, id := range []uint64{10, 2, 9} {
		if _, err := s.Write(id, protoData(700)); err != nil {
			t.Fatal(err)
		}
	}
	d.fail = func(op, path string) error {
		if op == "read" {
			return ErrIO
		}
		return nil
	}
	r := NewBlockStore(d, "/data/current")
	err := r.Load()
	if !errors.Is(err, ErrIO) || !strings.HasPrefix(err.Error(), "model: load block 2: ") {
		t.Fatalf("Load = %v, want block 2's ErrIO", err)
	}
}

// A read that gave its files back mid-stream reopens its replica after
// appends, served as it was (its length, the checksum its partial last
// chunk had, from memory or, after a restart, from its meta file), and
// not after a replace or delete.
func TestBlockStoreReopenForRead(t *testing.T) {
	for _, sizes := range [][2]int{{700, 1000}, {512, 100}, {100, 0}, {1000, 24}, {0, 600}} {
		for _, restart := range []bool{false, true} {
			t.Run(fmt.Sprint(sizes, restart), func(t *testing.T) {
				d, s := bsNewStore(t)
				first := protoData(sizes[0])
				s1, err := s.Write(7, first)
				if err != nil {
					t.Fatal(err)
				}
				if restart {
					s = NewBlockStore(d, "/data/current")
					if err := s.Load(); err != nil {
						t.Fatal(err)
					}
				}
				old, err := s.OpenForRead(7, s1)
				if err != nil {
					t.Fatal(err)
				}
				old.Close()
				for i := range 2 { // two appends: the view stays the first replica
					if _, err := s.Append(7, bytes.Repeat([]byte{byte(0x5a + i)}, sizes[1])); err != nil {
						t.Fatal(err)
					}
				}
				bf, err := s.ReopenForRead(old)
				if err != nil {
					t.Fatal(err)
				}
				if bf.Stamp != s1 || bf.Length != int64(len(first)) {
					t.Fatalf("reopened as stamp %d, length %d; want %d, %d", bf.Stamp, bf.Length, s1, len(first))
				}
				if got := bsReadFiles(t, bf, 512); !bytes.Equal(got, first) {
					t.Fatal("reopened replica reads wrong bytes")
				}
				sums, err := bf.ReadSums(nil, 0, len(first))
				if want := ChecksumChunks(nil, first, BytesPerChecksum); err != nil || !bytes.Equal(sums, want) {
					t.Fatalf("reopened replica's checksums %x, %v; want %x", sums, err, want)
				}
				// Reopened again from the view: the same replica.
				bf.Close()
				again, err := s.ReopenForRead(bf)
				if err != nil {
					t.Fatal(err)
				}
				if got := bsReadFiles(t, again, 512); !bytes.Equal(got, first) {
					t.Fatal("replica reopened twice reads wrong bytes")
				}
				again.Close()
				if _, err := s.Replace(7, first); err != nil {
					t.Fatal(err)
				}
				if _, err := s.ReopenForRead(old); !errors.Is(err, ErrStaleReplica) {
					t.Fatalf("reopen after a replace: %v, want ErrStaleReplica", err)
				}
				if err := s.Delete(7); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Write(7, first); err != nil {
					t.Fatal(err)
				}
				if _, err := s.ReopenForRead(old); !errors.Is(err, ErrStaleReplica) {
					t.Fatalf("reopen after delete and write: %v, want ErrStaleReplica", err)
				}
				if d.openFDs() != 0 {
					t.Fatalf("leaked fds: %v", d.open)
				}
			})
		}
	}
}

// A replica that cannot be opened again is an error, never files that
// are not there: the data file's open failing, or the meta file's (the
// data file then closed again). And ReadSums, like ReadChunks, refuses a
// range it cannot serve.
func TestBlockStoreReopenAndReadSumsErrors(t *testing.T) {
	d, s := bsNewStore(t)
	stamp, err := s.Write(7, protoData(1500))
	if err != nil {
		t.Fatal(err)
	}
	old, err := s.OpenForRead(7, stamp)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{s.dataPath(7), s.metaPath(7, stamp)} {
		d.fail = func(op, p string) error {
			if op == "open" && p == path {
				return errors.New("disk gone")
			}
			return nil
		}
		bf, err := s.ReopenForRead(old)
		if err == nil || !strings.Contains(err.Error(), "disk gone") || bf != nil {
			t.Fatalf("reopen with %s failing to open: %v, files %v; want the error and none", path, err, bf)
		}
		if d.openFDs() != 2 { // old's own, still open
			t.Fatalf("reopen with %s failing to open: %v fds open, want old's 2", path, d.open)
		}
	}
	d.fail = nil
	for _, r := range [][2]int{{1, 512}, {0, 1501}, {1024, 477}, {-512, 512}} {
		if sums, err := old.ReadSums(nil, int64(r[0]), r[1]); !errors.Is(err, ErrOutOfRange) || sums != nil {
			t.Errorf("ReadSums(%d, %d) = %x, %v; want ErrOutOfRange", r[0], r[1], sums, err)
		}
	}
	old.Close()
}

// lastPrefixEnd finds the longest prefix of a chunk with a given CRC, as
// a CRC a byte over every prefix does: the whole chunk, a prefix with the
// rest torn off, and none.
func TestLastPrefixEnd(t *testing.T) {
	slow := func(chunk []byte, want uint32) int {
		end, crc := 0, uint32(0)
		for i := range chunk {
			crc = crc32.Update(crc, castagnoli, chunk[i:i+1])
			if crc == want {
				end = i + 1
			}
		}
		return end
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range BytesPerChecksum + 1 {
		chunk := make([]byte, n)
		for i := range chunk {
			chunk[i] = byte(r.Uint32())
		}
		wants := []uint32{crc32.Checksum(chunk, castagnoli), r.Uint32(), 0}
		if n > 0 {
			wants = append(wants, crc32.Checksum(chunk[:r.IntN(n)+1], castagnoli))
		}
		for _, want := range wants {
			if got, exp := lastPrefixEnd(chunk, want), slow(chunk, want); got != exp {
				t.Fatalf("%d bytes, want CRC %#x: end %d, byte by byte %d", n, want, got, exp)
			}
		}
	}
}

// Block file names are what path.Join made of the store's directory and
// the name, whatever shape the directory is given in.
func TestBlockPaths(t *testing.T) {
	for _, dir := range []string{"", ".", "/", "data", "data/", "/a/b/", "./x", "a//b", "../x", "a/./b/..", "//"} {
		s := NewBlockStore(nil, dir)
		for _, id := range []uint64{0, 7, 1 << 63} {
			if got, want := s.dataPath(id), path.Join(dir, fmt.Sprintf("blk_%d", id)); got != want {
				t.Errorf("dir %q: data path %q, want %q", dir, got, want)
			}
			if got, want := s.metaPath(id, 1001), path.Join(dir, fmt.Sprintf("blk_%d_1001.meta", id)); got != want {
				t.Errorf("dir %q: meta path %q, want %q", dir, got, want)
			}
		}
	}
}
