package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"xceiver/model"
)

// DiskConfig is a simulated disk: an SSD behind a page cache.
type DiskConfig struct {
	Latency   time.Duration // per uncached read or sync
	Bandwidth int64         // bytes per second
	Capacity  int64         // bytes; writes past it fail with ENOSPC
	PageCache bool          // reads of cached pages cost only a copy
}

// DefaultDiskConfig returns a datacenter SSD with a warm page cache.
func DefaultDiskConfig() DiskConfig {
	return DiskConfig{
		Latency:   80 * time.Microsecond,
		Bandwidth: 1 << 30,
		Capacity:  1 << 40,
		PageCache: true,
	}
}

// DiskFaults are the disk faults a run may switch on.
type DiskFaults struct {
	ReadEIO   float64       // probability that a read fails with EIO
	WriteEIO  float64       // probability that a write fails with EIO
	SlowIO    float64       // probability that an I/O is slow
	SlowDelay time.Duration // extra latency of a slow I/O (or fsync)
	// SyncEIO and SlowSync are the probabilities that an fsync fails with
	// EIO or takes SlowDelay longer. A failed fsync's data stays in the
	// page cache (a process crash keeps it, reads see it) but, as on
	// Linux since 4.13, its pages are marked clean: no later fsync
	// writes them, and a power loss loses them unless they are written
	// again. They are separate
	// from the read and write faults so that runs drawing only those see
	// the same fsyncs.
	SyncEIO, SlowSync float64
}

// pageSize is the page cache's page: the kernel's, as model code sees it.
const pageSize = model.PageSize

type inode struct {
	ino    uint64
	data   []byte
	nlink  int
	refs   int
	cached []bool   // per page
	words  []uint64 // a shared-memory segment's contents (segment.go)
	// durable is what the device holds, and dirty says the contents may
	// differ from it (only on a disk that tracks durability). dirtyPages
	// are the pages written since writeback last took them (Linux's
	// dirty pages): a successful fsync copies them into durable, a failed
	// one drops them, so the bytes they held stay only in the cache.
	durable    []byte
	dirty      bool
	dirtyPages []bool
	// cut: an O_TRUNC emptied the file since writeback last ran, so the
	// next one writes the whole file (its holes are zeros on the device,
	// not what the blocks held before).
	cut bool
	// borrowed: data's array is a caller's, kept without a copy
	// (WriteAtShared), which no one may change; own copies it before a
	// write or a fault changes the contents. Config.CheckShared does not
	// copy these bytes aside as it does a shared socket write's: the
	// checks share block contents, whose bytes changed after the write
	// would fail their checksums at the next read (model.Client verifies
	// every chunk), and the copy would give back what sharing saves.
	borrowed bool
	// wbErrs counts the fsyncs of the inode that failed: Linux's
	// errseq_t (mapping->wb_err), which each open file samples.
	wbErrs int
	// lent: sendfile queued bytes of data's array on a socket by
	// reference, as the kernel queues page-cache pages, and they must
	// stay as they were sent: a change to bytes already there copies
	// the array first (own), so the simulator's copy semantics hold. An
	// append goes past them and needs no copy.
	lent bool
}

// own makes the inode's contents its own array, to change them.
func (ino *inode) own() {
	if ino.borrowed || ino.lent {
		ino.data, ino.borrowed, ino.lent = slices.Clone(ino.data), false, false
	}
}

// ownFrom is own before a write at off: an append past the end leaves
// lent bytes as they are, and needs no copy.
func (ino *inode) ownFrom(off int64) {
	if ino.borrowed || ino.lent && off < int64(len(ino.data)) {
		ino.own()
	}
}

// Disk is a process's simulated file system. Names map to inodes; an open
// File holds its inode, so rename and unlink behave as POSIX says.
type Disk struct {
	w     *World
	p     *Process
	names map[string]*inode
	// dirs are the directories there are besides the disk's own: made
	// with the first file created or renamed into them, as the real
	// world makes them (the interface has no Mkdir), and kept until an
	// Unlink removes them empty.
	dirs   map[string]bool
	used   int64
	faults DiskFaults // in force: base and every added fault together
	base   DiskFaults // SetFaults'
	added  []*DiskFaults
	// crashAt, if set, crashes the process at a coming operation.
	crashAt *crashPoint
	// Reads and Writes count operations, for experiments and tests;
	// Sendfiles counts sendfile calls with bytes to send (whether the
	// data path honours its configured send method).
	Reads, Writes, Sendfiles int
	// SendfileErrs counts sendfile calls that failed reading the file:
	// an injected EIO, or an offset at or past its end.
	SendfileErrs int
	// track: writes are durable only once fsynced (PowerLoss).
	track bool
}

// TrackDurability makes the disk remember what each file held at its
// last fsync, so that PowerLoss can take back the writes no fsync made
// durable. What the files hold now counts as durable.
func (d *Disk) TrackDurability() {
	if d.track {
		return
	}
	d.track = true
	for _, name := range d.sortedNames() {
		ino := d.names[name]
		ino.durable, ino.dirty, ino.dirtyPages, ino.cut = slices.Clone(ino.data), false, nil, false
	}
}

// PowerLoss takes back every write no fsync made durable, as a host that
// loses power does (the page cache is gone); the files keep their names.
// Crash the process first: its threads must not see the change.
func (d *Disk) PowerLoss() {
	if !d.track {
		return
	}
	d.w.fault(d.p.name, 0, "power loss: unsynced writes lost")
	for _, name := range d.sortedNames() {
		ino := d.names[name]
		if !ino.dirty {
			continue
		}
		d.used += int64(len(ino.durable)) - int64(len(ino.data))
		ino.data, ino.dirty, ino.cached, ino.borrowed, ino.lent = slices.Clone(ino.durable), false, nil, false, false
		ino.dirtyPages, ino.cut = nil, false
	}
}

func newDisk(w *World, p *Process) *Disk {
	return &Disk{w: w, p: p, names: make(map[string]*inode), dirs: make(map[string]bool)}
}

// SetFaults switches disk faults on (or off with the zero value),
// replacing every fault in force, added ones too.
func (d *Disk) SetFaults(f DiskFaults) {
	d.base, d.added = f, nil
	d.faults = f
}

// AddFaults puts f in force beside the faults in force already until the
// returned func takes it away: faults that overlap in time apply together,
// each probability and delay the highest any of them sets, and one's end
// takes away only its own (setting each outright, the first to end
// cleared the others, and a run did not have the faults its case drew).
func (d *Disk) AddFaults(f DiskFaults) (remove func()) {
	p := &f
	d.added = append(d.added, p)
	d.union()
	return func() {
		if i := slices.Index(d.added, p); i >= 0 {
			d.added = slices.Delete(d.added, i, i+1)
			d.union()
		}
	}
}

func (d *Disk) union() {
	u := d.base
	for _, f := range d.added {
		u.ReadEIO, u.WriteEIO, u.SlowIO = max(u.ReadEIO, f.ReadEIO), max(u.WriteEIO, f.WriteEIO), max(u.SlowIO, f.SlowIO)
		u.SyncEIO, u.SlowSync, u.SlowDelay = max(u.SyncEIO, f.SyncEIO), max(u.SlowSync, f.SlowSync), max(u.SlowDelay, f.SlowDelay)
	}
	d.faults = u
}

// DropCache empties the page cache (echo 3 > drop_caches).
func (d *Disk) DropCache() {
	for _, name := range d.sortedNames() {
		ino := d.names[name]
		for i := range ino.cached {
			ino.cached[i] = false
		}
	}
}

func (d *Disk) sortedNames() []string {
	return slices.Sorted(maps.Keys(d.names))
}

// cleanPath is the name a model path gives on the disk, as the real world
// resolves it: relative, cleaned, and inside the disk ("a/../b" is "b",
// "a..b" a name like any other). Anything else is a bad argument
// (fs.ErrInvalid), as in the real world, not a missing file.
func cleanPath(p string) (string, error) {
	if isCleanRel(p) {
		return p, nil // what nearly every open names: nothing to build
	}
	c := path.Clean(p)
	if p == "" || path.IsAbs(p) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q: must be relative and stay inside the process's disk: %w", p, fs.ErrInvalid)
	}
	return c, nil
}

// isCleanRel reports whether p is relative and as path.Clean leaves it:
// not empty, and no empty, "." or ".." element (no double, leading or
// trailing slash).
func isCleanRel(p string) bool {
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		if e := p[start:i]; e == "" || e == "." || e == ".." {
			return false
		}
		start = i + 1
	}
	return true
}

// Open implements model.Disk.
func (d *Disk) Open(name string, flag model.OpenFlag, kind model.FDKind) (model.File, error) {
	if !kind.IsFile() {
		return nil, fmt.Errorf("open %q: fd kind %v is not a file kind: %w", name, kind, fs.ErrInvalid)
	}
	if !flag.Valid() {
		return nil, fmt.Errorf("open %q: unknown open flags %#x: %w", name, int(flag), fs.ErrInvalid)
	}
	p, err := cleanPath(name)
	if err != nil {
		return nil, err
	}
	if err := d.step(flag&(model.Create|model.Truncate) != 0, nil); err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	d.w.charge(d.w.cfg.CPU.Syscall)
	// The fd comes first, as open(2) reserves it before it looks the
	// name up: at the limit a missing or existing name fails EMFILE too.
	if err := d.p.fdRoom(); err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	if d.dirs[p] && flag&model.Create != 0 && flag&model.Excl != 0 {
		return nil, fmt.Errorf("open %s: %w", p, model.ErrExist) // (O_EXCL before EISDIR, as Linux)
	}
	if err := d.pathErr(p); err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	ino := d.names[p]
	if ino == nil && flag&model.Create == 0 {
		return nil, fmt.Errorf("open %s: %w", p, model.ErrNotExist)
	}
	if ino != nil && flag&model.Create != 0 && flag&model.Excl != 0 {
		return nil, fmt.Errorf("open %s: %w", p, model.ErrExist)
	}
	fd, err := d.p.allocFD(kind, nil)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	if ino == nil {
		d.w.nextID++
		ino = &inode{ino: d.w.nextID, nlink: 1}
		d.names[p] = ino
		d.makeParents(p)
	} else if flag&model.Truncate != 0 {
		// (Read-only too: Linux truncates a file opened O_RDONLY|O_TRUNC
		// that it may write.)
		d.used -= int64(len(ino.data))
		ino.data, ino.borrowed, ino.lent = ino.data[:0:0], false, false
		ino.cached, ino.dirtyPages = nil, nil
		ino.dirty, ino.cut = true, true
	}
	ino.refs++
	// The file and its wbSeen in one allocation (the fds passed from it
	// point into it, as the kernel's share one struct file).
	of := &openFile{File: File{d: d, p: d.p, ino: ino, fd: fd, kind: kind, writable: flag&model.ReadWrite != 0, gen: d.p.gen}, seen: ino.wbErrs}
	f := &of.File
	f.wbSeen = &of.seen
	d.p.setFDObject(fd, f)
	return f, nil
}

// SqueezeFDs opens new empty files on p's disk until at most left of its
// fds are free or an open fails, and returns what closes them: a harness
// squeezing p's fd table. Each open is what Open of a fresh name with
// Create is (the disk step a crash point counts, the syscall's CPU, the fd
// and its trace event, an inode number), so a run goes as it did with
// files the harness named, trace and all. But they have no names, as
// O_TMPFILE's: a squeeze fills up to a thousand fds, and named files cost
// a formatted name, an inode and a directory entry each, kept by the disk
// ever after (a tenth or more of check's CPU for the sc system).
func (p *Process) SqueezeFDs(left int) (release func()) {
	d, gen := p.disk, p.gen
	var fds []int
	for p.fds.open < p.fds.limit-left {
		if d.step(true, nil) != nil {
			break
		}
		d.w.charge(d.w.cfg.CPU.Syscall)
		fd, err := p.allocFD(model.FDFile, nil)
		if err != nil {
			break
		}
		d.w.nextID++ // the inode's number
		fds = append(fds, fd)
	}
	return func() {
		// A crash closed them; the fds may be others' since.
		if p.gen != gen {
			return
		}
		for _, fd := range fds {
			p.freeFD(fd)
		}
		fds = nil
	}
}

// Rename implements model.Disk.
func (d *Disk) Rename(from, to string) error {
	f, err := cleanPath(from)
	if err != nil {
		return err
	}
	t, err := cleanPath(to)
	if err != nil {
		return err
	}
	if err := d.step(true, nil); err != nil {
		return fmt.Errorf("rename %s: %w", f, err)
	}
	d.w.charge(d.w.cfg.CPU.Syscall)
	ino := d.names[f]
	if ino == nil {
		return fmt.Errorf("rename %s: %w", f, model.ErrNotExist)
	}
	if f == t {
		return nil
	}
	if err := d.pathErr(t); err != nil {
		return fmt.Errorf("rename %s %s: %w", f, t, err)
	}
	d.makeParents(t)
	if old := d.names[t]; old != nil {
		d.drop(old)
	}
	d.names[t] = ino
	delete(d.names, f)
	d.w.record(Event{Proc: d.p.name, Kind: "disk", Conn: ino.ino, S: "rename " + f + " " + t})
	return nil
}

// Unlink implements model.Disk.
func (d *Disk) Unlink(name string) error {
	p, err := cleanPath(name)
	if err != nil {
		return err
	}
	if err := d.step(true, nil); err != nil {
		return fmt.Errorf("unlink %s: %w", p, err)
	}
	d.w.charge(d.w.cfg.CPU.Syscall)
	ino := d.names[p]
	if ino == nil && d.dirs[p] {
		// (The real world's Unlink removes an empty directory too.)
		if d.hasEntries(p) {
			return fmt.Errorf("unlink %s: directory not empty: %w", p, model.ErrExist)
		}
		delete(d.dirs, p)
		return nil
	}
	if ino == nil {
		return fmt.Errorf("unlink %s: %w", p, d.missing(p))
	}
	delete(d.names, p)
	d.drop(ino)
	d.w.record(Event{Proc: d.p.name, Kind: "disk", Conn: ino.ino, S: "unlink " + p})
	return nil
}

var (
	errIsDir  = errors.New("is a directory")  // EISDIR
	errNotDir = errors.New("not a directory") // ENOTDIR
)

// pathErr is why p cannot name a file: it names a directory, or one of
// the directories on it is a file.
func (d *Disk) pathErr(p string) error {
	if d.dirs[p] {
		return errIsDir
	}
	for i := range len(p) {
		if p[i] == '/' && d.names[p[:i]] != nil {
			return errNotDir
		}
	}
	return nil
}

// makeParents makes the directories on p.
func (d *Disk) makeParents(p string) {
	for i := range len(p) {
		if p[i] == '/' {
			d.dirs[p[:i]] = true
		}
	}
}

// missing is why p names nothing: ENOTDIR when a directory on its path
// is a file, as Linux says, else ENOENT.
func (d *Disk) missing(p string) error {
	if err := d.pathErr(p); errors.Is(err, errNotDir) {
		return err
	}
	return model.ErrNotExist
}

// hasEntries reports whether directory dir holds a file or a directory.
// (It sorts every name, as the package ranges over no map unsorted; only
// an Unlink of a directory asks.)
func (d *Disk) hasEntries(dir string) bool {
	prefix := dir + "/"
	has := func(n string) bool { return strings.HasPrefix(n, prefix) }
	return slices.ContainsFunc(d.sortedNames(), has) || slices.ContainsFunc(slices.Sorted(maps.Keys(d.dirs)), has)
}

// drop removes a name's link; the inode's space is freed once no name and
// no open fd refers to it.
func (d *Disk) drop(ino *inode) {
	ino.nlink--
	if ino.nlink <= 0 && ino.refs <= 0 {
		d.used -= int64(len(ino.data))
	}
}

// Stat implements model.Disk.
func (d *Disk) Stat(name string) (int64, error) {
	p := "."
	if name != "" && name != "." { // (the disk itself, as in List)
		var err error
		if p, err = cleanPath(name); err != nil {
			return 0, err
		}
	}
	if err := d.step(false, nil); err != nil {
		return 0, fmt.Errorf("stat %s: %w", p, err)
	}
	ino := d.names[p]
	if ino == nil && (p == "." || d.dirs[p]) {
		// A directory: its size is its file system's (the real world
		// reports it); the sim's are 0.
		return 0, nil
	}
	if ino == nil {
		return 0, fmt.Errorf("stat %s: %w", p, d.missing(p))
	}
	return int64(len(ino.data)), nil
}

// List implements model.Disk.
func (d *Disk) List(dir string) ([]string, error) {
	prefix := ""
	if dir != "" && dir != "." {
		p, err := cleanPath(dir)
		if err != nil {
			return nil, err
		}
		prefix = p + "/"
	}
	if err := d.step(false, nil); err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	// opendir takes an fd for as long as the listing.
	if err := d.p.fdRoom(); err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	if dir := strings.TrimSuffix(prefix, "/"); dir != "" && !d.dirs[dir] {
		if d.names[dir] != nil {
			return nil, fmt.Errorf("list %s: %w", dir, errNotDir)
		}
		return nil, fmt.Errorf("list %s: %w", dir, model.ErrNotExist)
	}
	var out []string
	for _, n := range d.sortedNames() {
		if rest, ok := strings.CutPrefix(n, prefix); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(d.dirs)) {
		if rest, ok := strings.CutPrefix(n, prefix); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Sendfile implements model.Disk. To a TCP socket the bytes go from the
// page cache into the send buffer with no user-space copy (tcpConn.sendfile
// charges the calibrated sendfile cost), and only what the send buffer has
// room for is read from disk. Other sockets (AF_UNIX) are charged as a
// read and a write: the model credits no splicing there.
func (d *Disk) Sendfile(c model.Conn, f model.File, off int64, n int) (int, error) {
	sf, ok := f.(*File)
	if !ok || sf.closed {
		return 0, fmt.Errorf("sendfile: %w", model.ErrClosed)
	}
	if off < 0 || n < 0 || c == nil {
		return 0, fmt.Errorf("sendfile: offset %d, count %d, conn %v: %w", off, n, c, fs.ErrInvalid)
	}
	if n == 0 {
		return 0, nil
	}
	d.Sendfiles++
	if err := d.step(false, nil); err != nil {
		return 0, fmt.Errorf("sendfile: %w", err)
	}
	size := int64(len(sf.ino.data))
	if off >= size {
		d.SendfileErrs++
		d.w.charge(d.w.cfg.CPU.Syscall)
		return 0, io.EOF
	}
	n = int(min(int64(n), size-off))
	tc, isTCP := c.(*tcpConn)
	if !isTCP {
		if err := d.ioCost(sf.ino, off, n, false); err != nil {
			d.SendfileErrs++
			return 0, fmt.Errorf("sendfile: %w", err)
		}
		return c.Write(sf.ino.data[off : off+int64(n)])
	}
	if room := tc.sendRoom(); room > 0 {
		n = min(n, room)
		if err := d.readCost(sf.ino, off, n, false); err != nil {
			d.SendfileErrs++
			return 0, fmt.Errorf("sendfile: %w", err)
		}
		d.w.record(Event{Proc: d.p.name, Kind: "disk", Conn: sf.ino.ino, A: off, B: int64(n), S: "sendfile"})
	}
	// A full (or closed) socket: the write fails as a write would,
	// before any page is read. The send buffer may keep the pages
	// themselves (tcpConn.sendfile marks the inode lent).
	return tc.sendfile(sf.ino, sf.ino.data[off:off+int64(n)])
}

// ioCost charges the time an I/O takes and draws its faults.
func (d *Disk) ioCost(ino *inode, off int64, n int, write bool) error {
	if !write {
		return d.readCost(ino, off, n, true)
	}
	w := d.w
	d.Writes++
	if d.faults.WriteEIO > 0 && w.diskRand.Float64() < d.faults.WriteEIO {
		w.record(Event{Proc: d.p.name, Kind: "diskErr", Conn: ino.ino, A: off, B: int64(n), S: "EIO"})
		return model.ErrIO
	}
	w.charge(time.Duration(int64(w.cfg.CPU.CopyPerKB) * int64(n) / 1024))
	d.markCached(ino, off, n)
	return nil
}

// readCost charges a read of n bytes at off: a copy out of the page cache
// when cached and copied (a pread; sendfile copies nothing), else a wait
// for the disk's latency and bandwidth; and draws the read faults.
func (d *Disk) readCost(ino *inode, off int64, n int, copied bool) error {
	cfg := &d.w.cfg.Disk
	w := d.w
	d.Reads++
	if d.faults.ReadEIO > 0 && w.diskRand.Float64() < d.faults.ReadEIO {
		w.record(Event{Proc: d.p.name, Kind: "diskErr", Conn: ino.ino, A: off, B: int64(n), S: "EIO"})
		return model.ErrIO
	}
	if cfg.PageCache && d.isCached(ino, off, n) {
		if copied {
			w.charge(time.Duration(int64(w.cfg.CPU.CopyPerKB) * int64(n) / 1024))
		}
	} else {
		// The thread sleeps on the device (D state): its loop is
		// blocked, but its core is free for other threads, as with an
		// fsync.
		w.wait(cfg.Latency + time.Duration(int64(n)*int64(time.Second)/cfg.Bandwidth))
		d.markCached(ino, off, n)
	}
	if d.faults.SlowIO > 0 && w.diskRand.Float64() < d.faults.SlowIO {
		w.wait(d.faults.SlowDelay)
	}
	return nil
}

func (d *Disk) isCached(ino *inode, off int64, n int) bool {
	for pg := off / pageSize; pg*pageSize < off+int64(n); pg++ {
		if int(pg) >= len(ino.cached) || !ino.cached[pg] {
			return false
		}
	}
	return true
}

func (d *Disk) markCached(ino *inode, off int64, n int) {
	if !d.w.cfg.Disk.PageCache {
		return
	}
	markPages(&ino.cached, off, off+int64(n))
}

// markPages sets the flags of the pages [off, end) touches, growing the
// per-page list as needed (the page cache's and the dirty pages').
func markPages(pages *[]bool, off, end int64) {
	last := (end + pageSize - 1) / pageSize
	for int64(len(*pages)) < last {
		*pages = append(*pages, false)
	}
	for pg := off / pageSize; pg < last; pg++ {
		(*pages)[pg] = true
	}
}

// File is an open simulated file. It implements model.File.
type File struct {
	d        *Disk
	p        *Process // the process whose fd this is
	ino      *inode
	fd       int
	kind     model.FDKind
	writable bool
	closed   bool
	gen      int
	// wbSeen is the inode's wbErrs this open file description has
	// reported (Linux's file->f_wb_err): shared by the fds passed from
	// it, as the kernel shares the struct file. nil: none (a segment).
	wbSeen *int
}

// openFile is a File opened by Open, with the count its wbSeen points to.
type openFile struct {
	File
	seen int
}

// Kind implements model.File.
func (f *File) Kind() model.FDKind { return f.kind }

// step is the disk's step for an operation through f. A file passed to
// another process (SCM_RIGHTS) is that process's open file: it keeps
// working when the process that opened it crashes, and that process's
// crash point is not the receiver's to fire. (Before, a short-circuit
// client's pread of a passed block failed once the datanode crashed,
// where Linux returns the data: a stale read could hide behind the error.)
func (f *File) step(write bool, tear func(keep int)) error {
	if f.p != f.d.p {
		if f.p.crashed {
			return model.ErrProcessExited
		}
		return nil
	}
	return f.d.step(write, tear)
}

// ReadAt implements model.File.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	if f.closed {
		return 0, model.ErrClosed
	}
	if err := f.step(false, nil); err != nil {
		return 0, fmt.Errorf("pread: %w", err)
	}
	w := f.d.w
	w.charge(w.cfg.CPU.Syscall)
	if off < 0 {
		return 0, fmt.Errorf("pread: negative offset %d: %w", off, fs.ErrInvalid)
	}
	if len(b) == 0 {
		return 0, nil // pread of nothing reads nothing, even past the end
	}
	size := int64(len(f.ino.data))
	if off >= size {
		return 0, io.EOF
	}
	n := len(b)
	if int64(n) > size-off {
		n = int(size - off)
	}
	if err := f.d.ioCost(f.ino, off, n, false); err != nil {
		return 0, fmt.Errorf("pread: %w", err)
	}
	copy(b, f.ino.data[off:off+int64(n)])
	w.record(Event{Proc: f.p.name, Kind: "disk", Conn: f.ino.ino, A: off, B: int64(n), S: "read"})
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt implements model.File.
func (f *File) WriteAt(b []byte, off int64) (int, error) { return f.writeAt(b, off, false) }

// WriteAtShared implements model.SharedFileWriter: a write that fills an
// empty file keeps b as its contents, without a copy; it costs and
// records what WriteAt does.
func (f *File) WriteAtShared(b []byte, off int64) (int, error) { return f.writeAt(b, off, true) }

func (f *File) writeAt(b []byte, off int64, shared bool) (int, error) {
	if f.closed {
		return 0, model.ErrClosed
	}
	if !f.writable {
		// EBADF, as the real world names it: not "closed", which it is not.
		return 0, fmt.Errorf("pwrite: file opened read-only: %w", model.ErrNotSupported)
	}
	if off < 0 {
		return 0, fmt.Errorf("pwrite: negative offset %d: %w", off, fs.ErrInvalid)
	}
	if len(b) == 0 {
		return 0, nil // pwrite of nothing changes nothing, not even the size
	}
	if err := f.step(true, func(keep int) {
		// Torn: whole sectors of the write persist, the rest never
		// reached the disk.
		if keep = keep % (len(b)/512 + 1) * 512; keep > 0 {
			f.apply(b[:keep], off, false)
		}
	}); err != nil {
		return 0, fmt.Errorf("pwrite: %w", err)
	}
	w := f.d.w
	w.charge(w.cfg.CPU.Syscall)
	end := off + int64(len(b))
	var full error
	if grow := end - int64(len(f.ino.data)); grow > 0 && f.d.used+grow > w.cfg.Disk.Capacity {
		// write(2) writes what fits and the next one fails ENOSPC; the
		// real world's WriteAt, which loops, returns both.
		w.record(Event{Proc: f.p.name, Kind: "diskErr", Conn: f.ino.ino, A: off, B: int64(len(b)), S: "ENOSPC"})
		full = fmt.Errorf("pwrite: %w", model.ErrNoSpace)
		fits := int64(len(f.ino.data)) + w.cfg.Disk.Capacity - f.d.used - off
		if fits <= 0 {
			return 0, full
		}
		b, shared = b[:fits], false
	}
	if err := f.d.ioCost(f.ino, off, len(b), true); err != nil {
		return 0, fmt.Errorf("pwrite: %w", err)
	}
	f.apply(b, off, shared)
	return len(b), full
}

// apply puts b at off into the file's inode; shared: the inode may keep b
// itself, which its caller never changes.
func (f *File) apply(b []byte, off int64, shared bool) {
	end := off + int64(len(b))
	f.ino.ownFrom(off)
	if shared && off == 0 && len(f.ino.data) == 0 && len(b) > 0 {
		// (Capped at its length, so an append never writes past it
		// into the caller's array.)
		f.ino.data, f.ino.borrowed = b[:len(b):len(b)], true
		f.d.used += int64(len(b))
	} else if off == int64(len(f.ino.data)) {
		// Appending (a block's first write, a write op's data): no gap
		// to zero first.
		f.ino.data = append(f.ino.data, b...)
		f.d.used += int64(len(b))
	} else {
		if grow := end - int64(len(f.ino.data)); grow > 0 {
			f.ino.data = append(f.ino.data, make([]byte, grow)...)
			f.d.used += grow
		}
		copy(f.ino.data[off:], b)
	}
	f.ino.dirty = true
	if f.d.track {
		markPages(&f.ino.dirtyPages, off, end)
	}
	f.d.w.record(Event{Proc: f.p.name, Kind: "disk", Conn: f.ino.ino, A: off, B: int64(len(b)), S: "write"})
}

// Size implements model.File.
func (f *File) Size() (int64, error) {
	if f.closed {
		return 0, model.ErrClosed
	}
	return int64(len(f.ino.data)), nil
}

// Sync implements model.File.
func (f *File) Sync() error {
	if f.closed {
		return model.ErrClosed
	}
	if err := f.step(true, nil); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	d, w := f.d, f.d.w
	if d.faults.SyncEIO > 0 && w.diskRand.Float64() < d.faults.SyncEIO {
		w.record(Event{Proc: f.p.name, Kind: "diskErr", Conn: f.ino.ino, S: "fsync EIO"})
		// Writeback failed: the pages are marked clean anyway, so
		// their bytes never reach the device unless written again.
		f.ino.dirtyPages = f.ino.dirtyPages[:0]
		f.ino.wbErrs++
		if f.wbSeen != nil {
			*f.wbSeen = f.ino.wbErrs
		}
		return fmt.Errorf("fsync: %w", model.ErrIO)
	}
	lat := w.cfg.Disk.Latency
	if d.faults.SlowSync > 0 && w.diskRand.Float64() < d.faults.SlowSync {
		lat += d.faults.SlowDelay
	}
	w.wait(lat)
	if d.track && f.ino.dirty {
		f.ino.writeback()
	}
	// A failure through another open file is reported here too, once
	// (file_check_and_advance_wb_err, Linux since 4.13).
	if f.wbSeen != nil && *f.wbSeen != f.ino.wbErrs {
		*f.wbSeen = f.ino.wbErrs
		w.record(Event{Proc: f.p.name, Kind: "diskErr", Conn: f.ino.ino, S: "fsync EIO (seen)"})
		return fmt.Errorf("fsync: an earlier writeback failed: %w", model.ErrIO)
	}
	return nil
}

// writeback is a successful fsync: the file's size and its dirty pages
// reach the device. Pages a failed fsync dropped do not, so the device
// keeps what it held there (zeros past its old end); the file stays
// dirty while any byte differs, for PowerLoss to take back.
func (ino *inode) writeback() {
	n := int64(len(ino.data))
	if ino.cut {
		// The truncate reaches the device too: nothing of what it held
		// before remains, failed pages or not.
		ino.durable, ino.cut = ino.durable[:0], false
	}
	if int64(len(ino.durable)) > n {
		ino.durable = ino.durable[:n]
	} else {
		ino.durable = append(ino.durable, make([]byte, n-int64(len(ino.durable)))...)
	}
	for pg, d := range ino.dirtyPages {
		from := int64(pg) * pageSize
		if from >= n {
			break
		}
		if d {
			copy(ino.durable[from:min(from+pageSize, n)], ino.data[from:min(from+pageSize, n)])
		}
	}
	ino.dirtyPages = ino.dirtyPages[:0]
	ino.dirty = !bytes.Equal(ino.durable, ino.data)
}

// Close implements model.File.
func (f *File) Close() error {
	if f.closed {
		return model.ErrClosed
	}
	f.kill()
	return nil
}

func (f *File) kill() {
	if f.closed {
		return
	}
	f.closed = true
	f.ino.refs--
	if f.ino.refs <= 0 && f.ino.nlink <= 0 {
		f.d.used -= int64(len(f.ino.data))
	}
	if f.gen == f.p.gen {
		f.p.freeFD(f.fd)
	}
}

// dup makes a new fd in process p for the same open file (fd passing):
// the same open file description, so its access mode too.
func (f *File) dup(p *Process, kind model.FDKind) (*File, error) {
	fd, err := p.allocFD(kind, nil)
	if err != nil {
		return nil, err
	}
	f.ino.refs++
	nf := &File{d: f.d, p: p, ino: f.ino, fd: fd, kind: kind, writable: f.writable, gen: p.gen, wbSeen: f.wbSeen}
	p.setFDObject(fd, nf)
	return nf, nil
}
