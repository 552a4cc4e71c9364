package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Errors of the block store, besides ErrNotExist (no such block) and
// ErrExist (Write of a block that exists), which it wraps too.
var (
	// ErrStaleReplica means the replica's generation stamp is lower than
	// the one requested: this datanode missed an update of the block.
	ErrStaleReplica = errors.New("replica generation stamp is older than requested")
	// ErrOutOfRange means a read reaches past the end of the replica or
	// is not chunk-aligned.
	ErrOutOfRange = errors.New("read outside the replica or not chunk-aligned")
)

// Layout of a block directory, as on an HDFS datanode:
//
//	blk_<id>                   the data
//	blk_<id>_<stamp>.meta      metaHeaderLen bytes of header (version
//	                           uint16, checksum type uint8, bytes per
//	                           checksum uint32), then a CRC32C per
//	                           BytesPerChecksum chunk of the data
//	<either name>.tmp          a file being written; renamed into place
//
// The stamp lives only in the meta file's name, so bumping it is a rename
// and a crash leaves either the old name or the new one.
const (
	metaVersion   = 1
	metaHeaderLen = 2 + 1 + 4
	tmpSuffix     = ".tmp"
	// FirstGenStamp is the stamp of the first block a fresh store writes.
	FirstGenStamp = 1001
)

var metaHeader = func() []byte {
	h := binary.BigEndian.AppendUint16(nil, metaVersion)
	h = append(h, byte(ChecksumCRC32C))
	return binary.BigEndian.AppendUint32(h, BytesPerChecksum)
}()

// BlockStore keeps replicas — a data file and a meta file of checksums
// each, with a generation stamp — in one directory of a process's Disk.
//
// Its methods make synchronous disk calls and must all be called from one
// loop; a BlockFiles it hands out touches only its own two files and may be
// used on a worker. Every update writes new files under temporary names,
// syncs them and renames them into place, so an fd opened before the update
// keeps reading the old contents (POSIX) and a crash at any point leaves a
// state Load can recover.
type BlockStore struct {
	disk      Disk
	dir       string
	prefix    string // blockPrefix(dir)
	replicas  map[uint64]replicaInfo
	nextStamp uint64
	onChange  []func(id, newStamp uint64, deleted bool)
	// record, if set, names the file that keeps reserved: every stamp
	// handed out is below it (see KeepStampRecord).
	record   string
	reserved uint64
}

// stampBatch is how many stamps one write of the stamp record reserves.
const stampBatch = 1024

// KeepStampRecord makes the store persist a high-water mark of the stamps
// it hands out, in the file name of its directory, reserving stampBatch
// stamps at a time. Load alone continues above the stamps still on disk,
// which forgets the stamp of a deleted block: after a restart a new
// replica of that block could get the same stamp as the old one — the
// same (block, stamp) naming two contents. With the record it cannot.
// Call it before Load.
func (s *BlockStore) KeepStampRecord(name string) {
	s.record = path.Join(s.dir, name)
}

type replicaInfo struct {
	stamp  uint64
	length int64
	// base is the stamp of the Write or Replace whose contents this
	// replica extends by appends alone (its own stamp if none since):
	// every replica of the block with a stamp in [base, stamp] is a
	// prefix of this one, except for its last partial chunk's checksum.
	base uint64
	// lastSum is the stored checksum of the last partial chunk (0 when
	// the length is a whole number of chunks), kept in memory as HDFS
	// keeps a replica being written's last chunk checksum: a read of an
	// older, shorter view of the replica after an append serves it, since
	// the meta file on disk now holds the extended chunk's checksum.
	lastSum uint32
}

// NewBlockStore returns an empty store over dir of disk. Call Load to pick
// up the replicas already there (after a restart).
func NewBlockStore(disk Disk, dir string) *BlockStore {
	return &BlockStore{disk: disk, dir: dir, prefix: blockPrefix(dir), replicas: make(map[uint64]replicaInfo), nextStamp: FirstGenStamp}
}

// blockPrefix is what path.Join(dir, name) puts before a block file's
// name, which is already clean: dir cleaned once, not each name joined
// and cleaned again at every open (two allocations an op).
func blockPrefix(dir string) string {
	switch d := path.Clean(dir); {
	case dir == "" || d == ".":
		return ""
	case d == "/":
		return d
	default:
		return d + "/"
	}
}

func (s *BlockStore) dataPath(id uint64) string {
	var b [64]byte
	return string(strconv.AppendUint(append(append(b[:0], s.prefix...), "blk_"...), id, 10))
}

func (s *BlockStore) metaPath(id, stamp uint64) string {
	var b [64]byte
	p := strconv.AppendUint(append(append(b[:0], s.prefix...), "blk_"...), id, 10)
	p = strconv.AppendUint(append(p, '_'), stamp, 10)
	return string(append(p, ".meta"...))
}

// OnChange registers f to be called, synchronously and in registration
// order, at the end of every Append, Replace and Delete, so holders of open
// BlockFiles (a handle pool, a short-circuit registry) can retire them.
// newStamp is 0 when deleted.
func (s *BlockStore) OnChange(f func(id, newStamp uint64, deleted bool)) {
	s.onChange = append(s.onChange, f)
}

func (s *BlockStore) changed(id, stamp uint64, deleted bool) {
	for _, f := range s.onChange {
		f(id, stamp, deleted)
	}
}

// Info returns a replica's generation stamp and length.
func (s *BlockStore) Info(id uint64) (stamp uint64, length int64, ok bool) {
	r, ok := s.replicas[id]
	return r.stamp, r.length, ok
}

// Blocks returns the ids of all replicas, in increasing order.
func (s *BlockStore) Blocks() []uint64 {
	return slices.Sorted(maps.Keys(s.replicas))
}

// newStamp allocates a generation stamp. Stamps grow across all blocks of
// the store, and Load continues above every stamp on disk (and, with a
// stamp record, above every stamp ever handed out), so a stamp never names
// two different contents.
func (s *BlockStore) newStamp() (uint64, error) {
	if s.record != "" && s.nextStamp >= s.reserved {
		reserve := s.nextStamp + stampBatch
		tmp := s.record + tmpSuffix
		if err := s.writeFile(tmp, FDFile, []byte(strconv.FormatUint(reserve, 10)), false); err != nil {
			return 0, fmt.Errorf("stamp record: %w", err)
		}
		if err := s.disk.Rename(tmp, s.record); err != nil {
			_ = s.disk.Unlink(tmp)
			return 0, fmt.Errorf("stamp record: %w", err)
		}
		s.reserved = reserve
	}
	st := s.nextStamp
	s.nextStamp++
	return st, nil
}

// Write creates block id holding data and returns its generation stamp.
func (s *BlockStore) Write(id uint64, data []byte) (uint64, error) {
	return s.write(id, data, false)
}

// WriteShared is Write of data its caller never changes again, which the
// disk may keep as the block's contents without a copy (WriteAtShared).
func (s *BlockStore) WriteShared(id uint64, data []byte) (uint64, error) {
	return s.write(id, data, true)
}

func (s *BlockStore) write(id uint64, data []byte, shared bool) (uint64, error) {
	if _, ok := s.replicas[id]; ok {
		return 0, fmt.Errorf("model: write block %d: %w", id, ErrExist)
	}
	stamp, err := s.newStamp()
	var last uint32
	if err == nil {
		last, err = s.install(id, stamp, data, shared)
	}
	if err != nil {
		return 0, fmt.Errorf("model: write block %d: %w", id, err)
	}
	s.replicas[id] = replicaInfo{stamp: stamp, length: int64(len(data)), base: stamp, lastSum: last}
	return stamp, nil
}

// Replace gives block id new contents under a new, higher generation
// stamp, which it returns. Readers holding the old files keep reading the
// old contents.
func (s *BlockStore) Replace(id uint64, data []byte) (uint64, error) {
	old, ok := s.replicas[id]
	if !ok {
		return 0, fmt.Errorf("model: replace block %d: %w", id, ErrNotExist)
	}
	stamp, err := s.newStamp()
	var last uint32
	if err == nil {
		last, err = s.install(id, stamp, data, false)
	}
	if err != nil {
		return 0, fmt.Errorf("model: replace block %d: %w", id, err)
	}
	s.replicas[id] = replicaInfo{stamp: stamp, length: int64(len(data)), base: stamp, lastSum: last}
	// The new meta file supersedes the old one; a leftover is harmless.
	_ = s.disk.Unlink(s.metaPath(id, old.stamp))
	s.changed(id, stamp, false)
	return stamp, nil
}

// install writes data and its meta file under temporary names, syncs them,
// then renames the meta file into place before the data file. A crash
// between the renames leaves the old data with two meta files; Load keeps
// the newest one that matches the data, which is the old one. It returns
// the last partial chunk's checksum (see replicaInfo.lastSum).
// shared says the caller never changes data again (WriteShared).
func (s *BlockStore) install(id, stamp uint64, data []byte, shared bool) (uint32, error) {
	dataTmp := s.dataPath(id) + tmpSuffix
	meta := s.metaPath(id, stamp)
	metaTmp := meta + tmpSuffix
	if err := s.writeFile(dataTmp, FDBlockFile, data, shared); err != nil {
		return 0, err
	}
	sums := make([]byte, 0, metaHeaderLen+numChunks(len(data), BytesPerChecksum)*ChecksumSize)
	sums = ChecksumChunks(append(sums, metaHeader...), data, BytesPerChecksum)
	// (sums is this call's own: the file may keep it.)
	if err := s.writeFile(metaTmp, FDMetaFile, sums, true); err != nil {
		_ = s.disk.Unlink(dataTmp)
		return 0, err
	}
	if err := s.disk.Rename(metaTmp, meta); err != nil {
		_ = s.disk.Unlink(metaTmp)
		_ = s.disk.Unlink(dataTmp)
		return 0, err
	}
	if err := s.disk.Rename(dataTmp, s.dataPath(id)); err != nil {
		_ = s.disk.Unlink(meta)
		_ = s.disk.Unlink(dataTmp)
		return 0, err
	}
	return lastPartialSum(int64(len(data)), sums), nil
}

// lastPartialSum is the last checksum of a meta file's contents (or of
// its checksums alone) when length ends in a partial chunk, else 0.
func lastPartialSum(length int64, sums []byte) uint32 {
	if length%BytesPerChecksum == 0 || len(sums) < ChecksumSize {
		return 0
	}
	return binary.BigEndian.Uint32(sums[len(sums)-ChecksumSize:])
}

// writeFile creates (or truncates) name, writes data, syncs and closes it.
// On failure it removes the file. shared: the caller never changes data
// again, so the file may keep it (WriteAtShared).
func (s *BlockStore) writeFile(name string, kind FDKind, data []byte, shared bool) error {
	f, err := s.disk.Open(name, ReadWrite|Create|Truncate, kind)
	if err != nil {
		return err
	}
	err = writeFull(f, data, 0, shared)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = s.disk.Unlink(name)
	}
	return err
}

// writeFull writes all of p at off; shared: through WriteAtShared.
func writeFull(f File, p []byte, off int64, shared bool) error {
	for len(p) > 0 {
		var n int
		var err error
		if shared {
			n, err = WriteAtShared(f, p, off)
		} else {
			n, err = f.WriteAt(p, off)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// readFull preads len(p) bytes at off; a file that ends first is an
// io.ErrUnexpectedEOF.
func readFull(f File, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := f.ReadAt(p, off)
		p, off = p[n:], off+int64(n)
		if len(p) == 0 {
			return nil
		}
		if err == io.EOF || (err == nil && n == 0) {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Append adds data to the end of block id under a new, higher generation
// stamp, which it returns.
//
// The data file is extended in place (as HDFS does) and synced; then a new
// meta file — the old checksums of whole chunks, then fresh ones from the
// old partial chunk on — is written under a temporary name, synced and
// renamed to the new stamp's name, and the old meta file is unlinked. A
// crash before that rename leaves the old meta file and a data file with
// extra bytes at the end, which Load ignores; after it, the new replica is
// complete. Bytes before the old end never change, so a reader holding the
// old files still reads the old replica.
func (s *BlockStore) Append(id uint64, data []byte) (uint64, error) {
	old, ok := s.replicas[id]
	if !ok {
		return 0, fmt.Errorf("model: append to block %d: %w", id, ErrNotExist)
	}
	stamp, err := s.newStamp()
	var length int64
	var last uint32
	if err == nil {
		length, last, err = s.appendFiles(id, old, stamp, data)
	}
	if err != nil {
		return 0, fmt.Errorf("model: append to block %d: %w", id, err)
	}
	s.replicas[id] = replicaInfo{stamp: stamp, length: length, base: old.base, lastSum: last}
	_ = s.disk.Unlink(s.metaPath(id, old.stamp))
	s.changed(id, stamp, false)
	return stamp, nil
}

func (s *BlockStore) appendFiles(id uint64, old replicaInfo, stamp uint64, data []byte) (int64, uint32, error) {
	full := old.length / BytesPerChecksum // whole chunks, whose checksums stay
	tailOff := full * BytesPerChecksum
	tail := make([]byte, old.length-tailOff)

	// The old meta up to the last whole chunk, plus the partial chunk's
	// checksum, which is verified before new checksums extend it.
	mf, err := s.disk.Open(s.metaPath(id, old.stamp), ReadOnly, FDMetaFile)
	if err != nil {
		return 0, 0, err
	}
	keep := metaHeaderLen + int(full)*ChecksumSize
	meta := make([]byte, keep+ChecksumSize, keep+(numChunks(len(tail)+len(data), BytesPerChecksum)+1)*ChecksumSize)
	if len(tail) == 0 {
		meta = meta[:keep]
	}
	err = readFull(mf, meta, 0)
	if cerr := mf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, err
	}
	if !slices.Equal(meta[:metaHeaderLen], metaHeader) {
		return 0, 0, fmt.Errorf("meta file of block %d has header %x, want %x", id, meta[:metaHeaderLen], metaHeader)
	}

	df, err := s.disk.Open(s.dataPath(id), ReadWrite, FDBlockFile)
	if err != nil {
		return 0, 0, err
	}
	err = readFull(df, tail, tailOff)
	if err == nil {
		err = VerifyChunks(id, tailOff, tail, meta[keep:], BytesPerChecksum)
	}
	if err == nil {
		err = writeFull(df, data, old.length, false)
	}
	if err == nil {
		err = df.Sync()
	}
	if cerr := df.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, err
	}

	// New checksums from the start of the old partial chunk: its bytes
	// followed by the first bytes of data, then data's remaining chunks.
	meta = meta[:keep]
	rest := data
	if len(tail) > 0 {
		n := min(len(rest), BytesPerChecksum-len(tail))
		crc := crc32.Update(crc32.Checksum(tail, castagnoli), castagnoli, rest[:n])
		meta = binary.BigEndian.AppendUint32(meta, crc)
		rest = rest[n:]
	}
	meta = ChecksumChunks(meta, rest, BytesPerChecksum)

	newMeta := s.metaPath(id, stamp)
	if err := s.writeFile(newMeta+tmpSuffix, FDMetaFile, meta, false); err != nil {
		return 0, 0, err
	}
	if err := s.disk.Rename(newMeta+tmpSuffix, newMeta); err != nil {
		_ = s.disk.Unlink(newMeta + tmpSuffix)
		return 0, 0, err
	}
	length := old.length + int64(len(data))
	return length, lastPartialSum(length, meta), nil
}

// Delete removes block id. The data file goes first: meta files without a
// data file are not a replica, so a crash in between leaves the block
// deleted, and a stale meta file left by an earlier crash can never again
// describe the data file it outlived.
func (s *BlockStore) Delete(id uint64) error {
	r, ok := s.replicas[id]
	if !ok {
		return fmt.Errorf("model: delete block %d: %w", id, ErrNotExist)
	}
	if err := s.disk.Unlink(s.dataPath(id)); err != nil && !errors.Is(err, ErrNotExist) {
		return fmt.Errorf("model: delete block %d: %w", id, err)
	}
	delete(s.replicas, id)
	s.changed(id, 0, true)
	if err := s.disk.Unlink(s.metaPath(id, r.stamp)); err != nil && !errors.Is(err, ErrNotExist) {
		return fmt.Errorf("model: delete block %d: data removed, meta left: %w", id, err)
	}
	return nil
}

// OpenForRead opens block id's data file (kind FDBlockFile) and meta file
// (FDMetaFile) read-only, for a read that names generation stamp stamp.
//
// As in HDFS's BlockSender, a replica whose stamp is lower than the one
// requested is stale and refused (ErrStaleReplica), while a replica with a
// higher stamp — the block was appended to or replaced since the client
// learned its stamp — is served: BlockFiles.Stamp tells the reader which
// one it got. A missing block is ErrNotExist.
func (s *BlockStore) OpenForRead(id, stamp uint64) (*BlockFiles, error) {
	loc, err := s.Locate(id, stamp)
	if err != nil {
		return nil, err
	}
	data, err := s.disk.Open(loc.DataPath, ReadOnly, FDBlockFile)
	if err != nil {
		return nil, fmt.Errorf("model: read block %d: %w", id, err)
	}
	meta, err := s.disk.Open(loc.MetaPath, ReadOnly, FDMetaFile)
	if err != nil {
		_ = data.Close()
		return nil, fmt.Errorf("model: read block %d: %w", id, err)
	}
	return &BlockFiles{ID: id, Stamp: loc.Stamp, Length: loc.Length, Data: data, Meta: meta, lastSum: s.replicas[id].lastSum}, nil
}

// ReopenForRead opens again, for a read that started on it and must
// finish on it, the replica that b (now closed) was: a read that gave its
// files back mid-stream (a handle pool's parked read). If the block has
// only been appended to since, that replica's bytes are still the prefix
// of the data file, and the files opened are the current ones, read as
// that replica: b's length, and b's checksum of its last partial chunk in
// place of the meta file's, which now covers the appended bytes too. No
// checksum is recomputed from what is on disk, so a byte that rotted
// cannot gain a valid one. If the block was replaced or deleted, that
// replica is gone: ErrStaleReplica.
func (s *BlockStore) ReopenForRead(b *BlockFiles) (*BlockFiles, error) {
	if err := s.reopenable(b); err != nil {
		return nil, err
	}
	r := s.replicas[b.ID]
	data, err := s.disk.Open(s.dataPath(b.ID), ReadOnly, FDBlockFile)
	if err != nil {
		return nil, fmt.Errorf("model: read block %d: %w", b.ID, err)
	}
	meta, err := s.disk.Open(s.metaPath(b.ID, r.stamp), ReadOnly, FDMetaFile)
	if err != nil {
		_ = data.Close()
		return nil, fmt.Errorf("model: read block %d: %w", b.ID, err)
	}
	return &BlockFiles{ID: b.ID, Stamp: b.Stamp, Length: b.Length, Data: data, Meta: meta, lastSum: b.lastSum,
		prefix: b.Stamp != r.stamp && b.Length%BytesPerChecksum != 0}, nil
}

// Location names a replica's files, for a server that opens them itself
// (the short-circuit endpoint, which passes them on).
type Location struct {
	DataPath, MetaPath string
	Stamp              uint64
	Length             int64
}

// Locate finds block id for a read naming stamp, with OpenForRead's rules
// (ErrNotExist, ErrStaleReplica).
func (s *BlockStore) Locate(id, stamp uint64) (Location, error) {
	r, ok := s.replicas[id]
	if !ok {
		return Location{}, fmt.Errorf("model: read block %d: %w", id, ErrNotExist)
	}
	if r.stamp < stamp {
		return Location{}, fmt.Errorf("model: read block %d: replica stamp %d < requested %d: %w", id, r.stamp, stamp, ErrStaleReplica)
	}
	return Location{DataPath: s.dataPath(id), MetaPath: s.metaPath(id, r.stamp), Stamp: r.stamp, Length: r.length}, nil
}

// reopenable reports (ErrStaleReplica) whether b's replica was replaced
// or deleted, as opposed to kept or appended to.
func (s *BlockStore) reopenable(b *BlockFiles) error {
	r, ok := s.replicas[b.ID]
	if !ok || b.Stamp < r.base || b.Stamp > r.stamp || b.Length > r.length {
		return fmt.Errorf("model: read block %d: replica %d was replaced or deleted: %w", b.ID, b.Stamp, ErrStaleReplica)
	}
	return nil
}

// BlockFiles is an open replica: its data and meta files as of the moment
// they were opened. Later updates of the block do not change what it reads.
type BlockFiles struct {
	ID     uint64
	Stamp  uint64
	Length int64 // bytes of data
	Data   File  // kind FDBlockFile
	Meta   File  // kind FDMetaFile

	lastSum uint32 // the replica's replicaInfo.lastSum when opened
	// prefix: the files have grown past this replica by appends
	// (ReopenForRead), so lastSum stands in for the meta file's checksum
	// of the chunk at Length.
	prefix bool
}

// patchLast puts the replica's own checksum of its last partial chunk
// into sums (the checksums of the chunks from off) when the files have
// grown past it.
func (b *BlockFiles) patchLast(sums []byte, off int64) {
	if !b.prefix {
		return
	}
	i := int(b.Length/BytesPerChecksum-off/BytesPerChecksum) * ChecksumSize
	if i >= 0 && i+ChecksumSize <= len(sums) {
		binary.BigEndian.PutUint32(sums[i:], b.lastSum)
	}
}

// ReadChunks reads the n bytes of data at off and their checksums, and
// verifies them. off must be a multiple of BytesPerChecksum and off+n one
// too or the end of the replica; anything else, or a range past the end,
// is ErrOutOfRange. It appends the checksums and then the data to dst
// (growing it as append does) and returns the two parts, which are adjacent
// in wire order, so sums[:len(sums)+len(data)] is a packet's body. On a
// mismatch it returns a *ChecksumError and no bytes.
func (b *BlockFiles) ReadChunks(dst []byte, off int64, n int) (data, sums []byte, err error) {
	return b.readChunks(dst, off, n, true)
}

// ReadChunksUnverified is ReadChunks without checking the checksums: it
// returns what is on disk, data and stored checksums alike. The datanode
// sends this to clients, as HDFS's BlockSender does (the client verifies
// every chunk and reports a mismatch); real's reference server uses it too.
func (b *BlockFiles) ReadChunksUnverified(dst []byte, off int64, n int) (data, sums []byte, err error) {
	return b.readChunks(dst, off, n, false)
}

// ReadSums appends to dst the stored checksums of the n bytes of data at
// off (the range rules of ReadChunks) and returns them: what a datanode
// sending the data itself with sendfile (transferTo) reads.
func (b *BlockFiles) ReadSums(dst []byte, off int64, n int) (sums []byte, err error) {
	if err := b.checkRange(off, n); err != nil {
		return nil, err
	}
	sumsLen := numChunks(n, BytesPerChecksum) * ChecksumSize
	start := len(dst)
	sums = slices.Grow(dst, sumsLen)[start : start+sumsLen]
	if err := readFull(b.Meta, sums, metaHeaderLen+off/BytesPerChecksum*ChecksumSize); err != nil {
		return nil, fmt.Errorf("model: block %d: meta file: %w", b.ID, err)
	}
	b.patchLast(sums, off)
	return sums, nil
}

func (b *BlockFiles) checkRange(off int64, n int) error {
	if off < 0 || n < 0 || off%BytesPerChecksum != 0 || int64(n) > b.Length-off ||
		((off+int64(n))%BytesPerChecksum != 0 && off+int64(n) != b.Length) {
		return fmt.Errorf("model: block %d: read of %d bytes at %d (length %d): %w", b.ID, n, off, b.Length, ErrOutOfRange)
	}
	return nil
}

func (b *BlockFiles) readChunks(dst []byte, off int64, n int, verify bool) (data, sums []byte, err error) {
	if err := b.checkRange(off, n); err != nil {
		return nil, nil, err
	}
	sumsLen := numChunks(n, BytesPerChecksum) * ChecksumSize
	start := len(dst)
	buf := slices.Grow(dst, sumsLen+n)[:start+sumsLen+n]
	sums = buf[start : start+sumsLen]
	data = buf[start+sumsLen:]
	if err := readFull(b.Meta, sums, metaHeaderLen+off/BytesPerChecksum*ChecksumSize); err != nil {
		return nil, nil, fmt.Errorf("model: block %d: meta file: %w", b.ID, err)
	}
	b.patchLast(sums, off)
	if err := readFull(b.Data, data, off); err != nil {
		return nil, nil, fmt.Errorf("model: block %d: data file: %w", b.ID, err)
	}
	if !verify {
		return data, sums, nil
	}
	if err := VerifyChunks(b.ID, off, data, sums, BytesPerChecksum); err != nil {
		return nil, nil, err
	}
	return data, sums, nil
}

// Close closes both files, whatever either reports (close(2) frees the
// fd regardless), and returns the first error: the data file's, else the
// meta file's.
func (b *BlockFiles) Close() error {
	err := b.Data.Close()
	if merr := b.Meta.Close(); err == nil {
		err = merr
	}
	return err
}

// Load rebuilds the index from the directory, as a datanode does after a
// restart, and returns the first disk error it meets. A missing directory
// is an empty store.
//
// A replica is a data file with at least one meta file. Names that are not
// canonical, temporary files and meta files without data are ignored. The
// replica's length is where its meta file's checksums end: the last
// checksum is matched against the end of the data, which finds the length
// even if a crash during Append left extra bytes. With several meta files
// (a crash during Append or Replace), the one with the highest stamp whose
// checksums all match the data wins. A data file no meta file matches is
// not loaded.
func (s *BlockStore) Load() error {
	names, err := s.disk.List(s.dir)
	if err != nil && !errors.Is(err, ErrNotExist) {
		return fmt.Errorf("model: load %s: %w", s.dir, err)
	}
	type found struct {
		data   bool
		stamps []uint64
	}
	byID := make(map[uint64]*found)
	var ids []uint64
	maxStamp := uint64(0)
	for _, name := range names {
		id, stamp, ok := parseBlockName(path.Base(name))
		if !ok {
			continue
		}
		f := byID[id]
		if f == nil {
			f = &found{}
			byID[id] = f
			ids = append(ids, id)
		}
		if stamp == 0 {
			f.data = true
		} else {
			f.stamps = append(f.stamps, stamp)
			maxStamp = max(maxStamp, stamp)
		}
	}
	slices.Sort(ids)

	replicas := make(map[uint64]replicaInfo)
	for _, id := range ids {
		f := byID[id]
		if !f.data || len(f.stamps) == 0 {
			continue
		}
		slices.Sort(f.stamps)
		slices.Reverse(f.stamps)
		r, err := s.recover(id, f.stamps)
		if err != nil {
			return fmt.Errorf("model: load block %d: %w", id, err)
		}
		if r.stamp != 0 {
			// What it was appended from is forgotten: reads of
			// older replicas ended with the process.
			r.base = r.stamp
			replicas[id] = r
		}
	}
	s.replicas = replicas
	s.nextStamp = max(s.nextStamp, maxStamp+1)
	if s.record != "" {
		reserved, err := s.readRecord()
		if err != nil {
			return fmt.Errorf("model: load %s: %w", s.record, err)
		}
		// Stamps below the record may have been handed out before a
		// crash; continue above them.
		s.nextStamp = max(s.nextStamp, reserved)
		s.reserved = reserved
	}
	return nil
}

// readRecord reads the stamp record; a missing one is 0.
func (s *BlockStore) readRecord() (uint64, error) {
	f, err := s.disk.Open(s.record, ReadOnly, FDFile)
	if errors.Is(err, ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, err
	}
	if size > 20 {
		return 0, fmt.Errorf("stamp record of %d bytes", size)
	}
	b := make([]byte, size)
	if err := readFull(f, b, 0); err != nil {
		return 0, err
	}
	v, ok := parseCanonical(string(b))
	if !ok {
		return 0, fmt.Errorf("stamp record %q is not a number", b)
	}
	return v, nil
}

// parseBlockName parses "blk_<id>" (stamp 0) and "blk_<id>_<stamp>.meta".
// Only canonical decimal numbers are accepted, so no two names alias.
func parseBlockName(name string) (id, stamp uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, "blk_")
	if !ok {
		return 0, 0, false
	}
	idStr, stampStr, isMeta := strings.Cut(rest, "_")
	if isMeta {
		if stampStr, ok = strings.CutSuffix(stampStr, ".meta"); !ok {
			return 0, 0, false
		}
		if stamp, ok = parseCanonical(stampStr); !ok || stamp == 0 {
			return 0, 0, false
		}
	}
	id, ok = parseCanonical(idStr)
	return id, stamp, ok
}

func parseCanonical(s string) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && strconv.FormatUint(v, 10) == s
}

// recover picks the replica of block id among the meta files with the
// given stamps (highest first). It returns stamp 0 if none matches.
func (s *BlockStore) recover(id uint64, stamps []uint64) (replicaInfo, error) {
	df, err := s.disk.Open(s.dataPath(id), ReadOnly, FDBlockFile)
	if errors.Is(err, ErrNotExist) {
		return replicaInfo{}, nil
	}
	if err != nil {
		return replicaInfo{}, err
	}
	defer df.Close()
	size, err := df.Size()
	if err != nil {
		return replicaInfo{}, err
	}
	// Of the meta files that fit, the one describing the longest prefix
	// wins, the newest on a tie. Newest alone is wrong: a replace that
	// crashed between its two renames leaves the old data file beside the
	// new meta file, and when the new contents are a prefix of the old
	// (empty, say) that meta file fits too, as a shorter prefix.
	var best replicaInfo
	for _, st := range stamps {
		r, ok, err := s.fit(id, st, df, size, len(stamps) > 1)
		if err != nil {
			return replicaInfo{}, err
		}
		if ok && (best.stamp == 0 || r.length > best.length) {
			best = r
		}
	}
	if best.stamp != 0 {
		return best, nil
	}
	if len(stamps) > 1 {
		// No meta file matches every chunk: a chunk they share rotted.
		// Keep the newest whose last chunk fits, corrupt chunk and all
		// (its reads fail their checksum at the client), rather than
		// lose the block.
		for _, st := range stamps {
			r, ok, err := s.fit(id, st, df, size, false)
			if err != nil {
				return replicaInfo{}, err
			}
			if ok {
				return r, nil
			}
		}
	}
	return replicaInfo{}, nil
}

// lastPrefixEnd is the length of the longest prefix of chunk whose CRC is
// want, or 0. An intact chunk, nearly every one, is its own answer: one CRC
// over it. Otherwise every prefix's CRC, one table step a byte (a
// crc32.Update call a byte cost a datanode start more than its blocks'
// other checksums together).
func lastPrefixEnd(chunk []byte, want uint32) int {
	if crc32.Update(0, castagnoli, chunk) == want {
		return len(chunk)
	}
	end, c := 0, ^uint32(0) // CRC-32C keeps its register inverted
	for i, b := range chunk {
		c = castagnoli[byte(c)^b] ^ c>>8
		if ^c == want {
			end = i + 1
		}
	}
	return end
}

// fit reports whether meta file (id, stamp) describes a prefix of the data
// file df of the given size, and the prefix's length. The last checksum
// covers the replica's last, possibly short, chunk: the length is the
// longest end of that chunk whose CRC matches. With verifyAll it also
// checks every other chunk, to tell which of several meta files is right.
func (s *BlockStore) fit(id, stamp uint64, df File, size int64, verifyAll bool) (replicaInfo, bool, error) {
	mf, err := s.disk.Open(s.metaPath(id, stamp), ReadOnly, FDMetaFile)
	if errors.Is(err, ErrNotExist) {
		return replicaInfo{}, false, nil
	}
	if err != nil {
		return replicaInfo{}, false, err
	}
	defer mf.Close()
	msize, err := mf.Size()
	if err != nil {
		return replicaInfo{}, false, err
	}
	if msize < metaHeaderLen || (msize-metaHeaderLen)%ChecksumSize != 0 {
		return replicaInfo{}, false, nil
	}
	chunks := (msize - metaHeaderLen) / ChecksumSize
	if chunks > (size+BytesPerChecksum-1)/BytesPerChecksum {
		return replicaInfo{}, false, nil // more checksums than data
	}
	var hdr [metaHeaderLen]byte
	if err := readFull(mf, hdr[:], 0); err != nil {
		return replicaInfo{}, false, err
	}
	if !slices.Equal(hdr[:], metaHeader) {
		return replicaInfo{}, false, nil
	}
	if chunks == 0 {
		return replicaInfo{stamp: stamp}, true, nil
	}

	// Find the end of the last chunk: the longest prefix of the chunk's
	// bytes on disk whose CRC equals the stored one.
	var last [ChecksumSize]byte
	if err := readFull(mf, last[:], msize-ChecksumSize); err != nil {
		return replicaInfo{}, false, err
	}
	want := binary.BigEndian.Uint32(last[:])
	lastOff := (chunks - 1) * BytesPerChecksum
	tail := make([]byte, min(size-lastOff, BytesPerChecksum))
	if err := readFull(df, tail, lastOff); err != nil {
		return replicaInfo{}, false, err
	}
	end := lastPrefixEnd(tail, want)
	if end == 0 {
		return replicaInfo{}, false, nil
	}
	length := lastOff + int64(end)
	if verifyAll {
		bf := &BlockFiles{ID: id, Stamp: stamp, Length: length, Data: df, Meta: mf}
		buf := make([]byte, 0, min(lastOff, MaxPacketData)*(BytesPerChecksum+ChecksumSize)/BytesPerChecksum)
		for off := int64(0); off < lastOff; {
			n := int(min(lastOff-off, MaxPacketData))
			if _, _, err := bf.ReadChunks(buf, off, n); err != nil {
				var ce *ChecksumError
				if errors.As(err, &ce) || errors.Is(err, io.ErrUnexpectedEOF) {
					return replicaInfo{}, false, nil
				}
				return replicaInfo{}, false, err
			}
			off += int64(n)
		}
	}
	r := replicaInfo{stamp: stamp, length: length}
	if end < BytesPerChecksum {
		r.lastSum = want
	}
	return r, true, nil
}
