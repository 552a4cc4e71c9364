// Package namespace is a namenode's namespace served over model/rpc: a tree
// of directories and files whose blocks live on a datanode, behind one
// namespace lock that is a plain mutex or a read-write lock (HADOOP-6713's
// second change), and the client side: calls by name, and end-to-end file
// reads and writes over the datanode's data path.
package namespace

import (
	"fmt"
	"slices"
	"time"

	"xceiver/model"
	"xceiver/model/rpc"
)

// LockKind selects the namespace lock.
type LockKind string

const (
	Mutex  LockKind = "mutex"  // every op excludes every other (before HADOOP-6713)
	RWLock LockKind = "rwlock" // list and getBlockLocations share the lock
)

// ParseLockKind accepts "mutex" or "rwlock".
func ParseLockKind(s string) (LockKind, error) {
	switch LockKind(s) {
	case Mutex, RWLock:
		return LockKind(s), nil
	}
	return "", fmt.Errorf("namespace: lock %q is neither mutex nor rwlock", s)
}

// Config configures a namespace.
type Config struct {
	Lock LockKind
	// Datanode is the address every location names (one datanode holds
	// every block).
	Datanode string
	// FirstBlock is the first block id handed out; ids are never reused.
	FirstBlock uint64
	// TokenKey signs the block tokens handed out with locations (read)
	// and with created blocks (write); nil means model.DefaultTokenKey,
	// the datanode's default. Tokens last TokenLifetime.
	TokenKey      []byte
	TokenLifetime time.Duration
	// ListLimit is the page size of a list (0: ListLimit).
	ListLimit int
	// EditLog is the path, on the process's disk, of the log that makes
	// every change durable before it is answered (Hadoop's edits file);
	// "" keeps changes in memory only. A log left by an earlier run is
	// replayed by Replay.
	EditLog string
	// Fatal is told when the edit log cannot make changes durable; the
	// namenode must stop (HDFS exits). nil: the world fails with it.
	Fatal func(error)
	Bugs  Bugs
}

// Bugs are catalogued namespace bugs (check --bug), all off by default.
type Bugs struct {
	// AnswerBeforeSync answers a change once it is logged, before the
	// sync that makes it durable.
	AnswerBeforeSync bool
	// LoseGroupWaiters forgets the handlers whose edits were logged while
	// a sync was in flight: their edits go out in the next group commit,
	// their calls are never answered.
	LoseGroupWaiters bool
	// InvalidateBeforeSync tells the datanode to delete a deleted file's
	// blocks before the delete is durable (under the lock), so a namenode
	// that dies before the sync comes back with a file whose blocks are
	// gone. HDFS removes the blocks only after logSync.
	InvalidateBeforeSync bool
	// AnswerEIO answers the changes of a failed sync with EIO and goes
	// on, though they stay applied in memory, visible to every reader
	// (this model's namenode did so until the edit-log draws caught it).
	AnswerEIO bool
	// ReplaySyncOnly fsyncs the replayed log without writing it again:
	// pages a failed sync left clean before the restart never reach the
	// device, and a power loss takes back edits the namenode served.
	ReplaySyncOnly bool
}

// Namespace is the tree and its lock. It implements rpc.Service.
type Namespace struct {
	cfg       Config
	p         model.Process
	mu        model.Lock
	rw        model.RWLock
	root      *inode
	nextBlock uint64
	log       *editLog
	logClosed bool     // Close closed the log: no change can be made durable
	txid      uint64   // last change logged; under the lock held exclusively
	gone      []uint64 // blocks of files the op under the lock deleted
	// Invalidate is told the blocks of deleted files once the delete is
	// durable; it must only hand them on (post to another loop), as a
	// namenode queues invalidations for the datanode's next heartbeat.
	Invalidate func(blocks []uint64)
}

type inode struct {
	dir      bool
	children map[string]*inode
	// names are the children's names in order, kept as they come and go
	// (as HDFS's INodeDirectory keeps its children sorted): a listing
	// reads them instead of sorting the map's keys on every call.
	names    []string
	blocks   []Location
	complete bool
}

// New makes an empty namespace on p.
func New(p model.Process, cfg Config) (*Namespace, error) {
	if cfg.Lock == "" {
		cfg.Lock = RWLock
	}
	if _, err := ParseLockKind(string(cfg.Lock)); err != nil {
		return nil, err
	}
	if cfg.FirstBlock == 0 {
		cfg.FirstBlock = 1 << 30
	}
	if cfg.TokenKey == nil {
		cfg.TokenKey = model.DefaultTokenKey
	}
	if cfg.TokenLifetime == 0 {
		cfg.TokenLifetime = model.DefaultTokenLifetime
	}
	if cfg.ListLimit <= 0 {
		cfg.ListLimit = ListLimit
	}
	ns := &Namespace{cfg: cfg, p: p, root: newDir(), nextBlock: cfg.FirstBlock}
	if cfg.EditLog != "" {
		var err error
		fatal := cfg.Fatal
		if fatal == nil {
			fatal = p.World().Fail
		}
		if ns.log, err = openEditLog(p, cfg.EditLog, fatal, cfg.Bugs); err != nil {
			return nil, fmt.Errorf("namespace: %w", err)
		}
	}
	if cfg.Lock == RWLock {
		ns.rw = p.NewRWLock("namespace")
		ns.mu = ns.rw
	} else {
		ns.mu = p.NewLock("namespace")
	}
	return ns, nil
}

func newDir() *inode { return &inode{dir: true, children: map[string]*inode{}} }

// add makes c the child name of directory n (which has none by that name).
func (n *inode) add(name string, c *inode) {
	i, _ := slices.BinarySearch(n.names, name)
	n.names = slices.Insert(n.names, i, name)
	n.children[name] = c
}

// remove drops directory n's child name.
func (n *inode) remove(name string) {
	if i, ok := slices.BinarySearch(n.names, name); ok {
		n.names = slices.Delete(n.names, i, i+1)
	}
	delete(n.children, name)
}

// Serve implements rpc.Service.
func (ns *Namespace) Serve(loop model.Loop, method uint8, payload []byte, done func(rpc.Status, []byte)) {
	ns.ServeDecoded(loop, method, ns.Decode(method, payload), done)
}

// call is a decoded call, or why it does not decode.
type call struct {
	req    Request
	status rpc.Status // StatusOK when req decoded
}

// Decode implements rpc.Decoder: it deserialises a call's request.
func (ns *Namespace) Decode(method uint8, payload []byte) any {
	ns.p.CPU(model.CPUParse, 1)
	if method < MethodMkdir || method > MethodRename {
		return call{status: rpc.StatusUnknownMethod}
	}
	req, ok := DecodeRequest(method, payload)
	if !ok {
		return call{status: rpc.StatusBadRequest}
	}
	return call{req: req, status: rpc.StatusOK}
}

// ServeDecoded implements rpc.Decoder: it runs a decoded call under the
// namespace lock, shared for the ops that only read.
func (ns *Namespace) ServeDecoded(loop model.Loop, method uint8, arg any, done func(rpc.Status, []byte)) {
	ns.ServeEncoded(loop, method, arg, nil, done)
}

// ServeEncoded implements rpc.FrameEncoder: ServeDecoded with its answer
// encoded in the buffer buf lends (the handler's frame), or in one of its
// own when buf is nil. (A listing of /big is tens of KB: encoded apart,
// answers were a quarter of the bytes an rpc check allocated, and each
// was copied again into its frame.)
func (ns *Namespace) ServeEncoded(loop model.Loop, method uint8, arg any, buf func(int) []byte, done func(rpc.Status, []byte)) {
	c, ok := arg.(call)
	if !ok {
		done(rpc.StatusBadRequest, nil)
		return
	}
	if c.status != rpc.StatusOK {
		done(c.status, nil)
		return
	}
	req := c.req
	apply := func() {
		if ns.logClosed && changes(method) {
			// Closed: a change made now would be answered and never
			// logged, and a power loss would take it back. Refused,
			// unmade, as HDFS's closed FSEditLog refuses edits.
			done(rpc.StatusError, []byte{byte(EIO)})
			return
		}
		resp, code := ns.Apply(req)
		var gone []uint64
		if changes(method) { // held exclusively: readers must not write
			gone, ns.gone = ns.gone, nil
		}
		if code != OK {
			done(rpc.StatusError, []byte{byte(code)})
			return
		}
		ns.p.CPU(model.CPUParse, 1)
		body := encodeResponse(method, resp, buf)
		if ns.log == nil || !changes(method) {
			ns.invalidate(gone)
			done(rpc.StatusOK, body)
			return
		}
		// The change is logged under the lock and answered once the log
		// is synced, the lock released meanwhile (FSEditLog's logEdit,
		// then logSync); a deleted file's blocks go to the datanode only
		// then, as FSNamesystem.delete removes them after logSync.
		ns.txid++
		ns.p.CPU(model.CPUParse, 1)
		bugs := ns.cfg.Bugs
		if bugs.InvalidateBeforeSync {
			ns.invalidate(gone)
			gone = nil
		}
		ns.log.log(loop, editRecord(ns.txid, req), func(err error) {
			if err != nil { // only with the AnswerEIO bug
				done(rpc.StatusError, []byte{byte(EIO)})
				return
			}
			ns.invalidate(gone)
			if !bugs.AnswerBeforeSync {
				done(rpc.StatusOK, body)
			}
		})
		if bugs.AnswerBeforeSync {
			done(rpc.StatusOK, body)
		}
	}
	if ns.rw != nil && (method == MethodList || method == MethodGetBlockLocations) {
		ns.rw.RDo(loop, apply)
		return
	}
	ns.mu.Do(loop, apply)
}

func (ns *Namespace) invalidate(blocks []uint64) {
	if len(blocks) > 0 && ns.Invalidate != nil {
		ns.Invalidate(blocks)
	}
}

// Replay applies the changes the edit log holds (from an earlier run of
// the namenode, which this one restarts) and returns how many; call it
// once, before serving, after loading the image the log continues.
func (ns *Namespace) Replay() (int, error) {
	if ns.log == nil {
		return 0, nil
	}
	n := 0
	last, err := ns.log.replay(func(r Request) {
		n++
		if _, code := ns.Apply(r); code != OK {
			// Logged changes were applied once; a refusal now means the
			// image is not the one the log continues.
			ns.p.Log("editlog-replay-refused", "method", MethodName(r.Method), "path", r.Path, "code", code.String())
		}
		ns.gone = nil // invalidated by the run that logged the delete
	})
	ns.txid = last
	return n, err
}

// Walk calls fn for every file and directory below the root, parents
// before children, in name order (the model-based checks compare trees).
func (ns *Namespace) Walk(fn func(path string, dir, complete bool, blocks []Location)) {
	var walk func(prefix string, n *inode)
	walk = func(prefix string, n *inode) {
		for _, name := range n.names {
			c := n.children[name]
			p := prefix + "/" + name
			fn(p, c.dir, c.complete, c.blocks)
			walk(p, c)
		}
	}
	walk("", ns.root)
}

// NextBlock is the id the next created block gets.
func (ns *Namespace) NextBlock() uint64 { return ns.nextBlock }

// changes reports whether method changes the tree (and so is logged).
func changes(method uint8) bool {
	switch method {
	case MethodMkdir, MethodCreate, MethodComplete, MethodDelete, MethodRename:
		return true
	}
	return false
}

// EditLogStats is what the edit log did: group commits, the edits they
// carried, and syncs that failed. Read it only when the world is quiet.
type EditLogStats struct{ Syncs, Edits, Failed int }

// EditLogStats reports the edit log's counts (zero without one).
func (ns *Namespace) EditLogStats() EditLogStats {
	if ns.log == nil {
		return EditLogStats{}
	}
	return EditLogStats{ns.log.Syncs, ns.log.Edits, ns.log.Failed}
}

// Close releases the edit log's file and threads.
func (ns *Namespace) Close() {
	if ns.log != nil {
		ns.log.close()
		ns.log = nil
		ns.logClosed = true
	}
}

// Apply runs one op on the tree; the caller holds the lock (shared is
// enough for list and getBlockLocations, which only read: they must not
// write anything, not even a counter).
func (ns *Namespace) Apply(r Request) (Response, Code) {
	parts, ok := SplitPath(r.Path)
	if !ok {
		return Response{}, EINVAL
	}
	switch r.Method {
	case MethodMkdir:
		_, code := ns.walk(parts, true)
		return Response{}, code
	case MethodCreate:
		if len(parts) == 0 {
			return Response{}, EEXIST
		}
		parent, code := ns.walk(parts[:len(parts)-1], true)
		if code == EEXIST {
			code = ENOTDIR // the parent is a file
		}
		if code != OK {
			return Response{}, code
		}
		name := parts[len(parts)-1]
		if parent.children[name] != nil {
			return Response{}, EEXIST
		}
		f := &inode{}
		var resp Response
		for i := 0; i < r.Blocks; i++ {
			f.blocks = append(f.blocks, Location{Block: ns.nextBlock})
			resp.Blocks = append(resp.Blocks, ns.nextBlock)
			resp.Tokens = append(resp.Tokens, ns.token(ns.nextBlock, 0, model.OpWriteBlock))
			ns.nextBlock++
		}
		parent.add(name, f)
		return resp, OK
	case MethodComplete:
		n, code := ns.lookup(parts)
		switch {
		case code != OK:
			return Response{}, code
		case n.dir:
			return Response{}, EISDIR
		case n.complete || len(r.Done) != len(n.blocks):
			return Response{}, EINVAL
		}
		for i, l := range r.Done {
			if l.Block != n.blocks[i].Block || l.Length < 0 {
				return Response{}, EINVAL
			}
		}
		for i, l := range r.Done {
			n.blocks[i].Stamp, n.blocks[i].Length = l.Stamp, l.Length
		}
		n.complete = true
		return Response{}, OK
	case MethodList:
		n, code := ns.lookup(parts)
		if code != OK {
			return Response{}, code
		}
		if !n.dir {
			return Response{Entries: []Entry{{Name: parts[len(parts)-1], Length: n.length()}}}, OK
		}
		var resp Response
		from := 0
		if r.After != "" {
			i, found := slices.BinarySearch(n.names, r.After)
			if found {
				i++
			}
			from = i
		}
		to := min(len(n.names), from+ns.cfg.ListLimit)
		resp.Remaining = len(n.names) - to
		if to > from {
			resp.Entries = make([]Entry, 0, to-from)
		}
		for _, name := range n.names[from:to] {
			c := n.children[name]
			ns.p.CPU(model.CPUInode, 1)
			resp.Entries = append(resp.Entries, Entry{Name: name, Dir: c.dir, Length: c.length()})
		}
		return resp, OK
	case MethodGetBlockLocations:
		n, code := ns.lookup(parts)
		switch {
		case code != OK:
			return Response{}, code
		case n.dir:
			return Response{}, EISDIR
		case !n.complete:
			return Response{}, EINCOMPLETE
		}
		resp := Response{Locations: make([]Location, len(n.blocks))}
		for i, b := range n.blocks {
			b.Datanode = ns.cfg.Datanode
			b.Token = ns.token(b.Block, b.Stamp, model.OpReadBlock)
			resp.Locations[i] = b
		}
		return resp, OK
	case MethodDelete:
		if len(parts) == 0 {
			return Response{}, EINVAL
		}
		parent, code := ns.lookup(parts[:len(parts)-1])
		if code != OK {
			return Response{}, code
		}
		if !parent.dir {
			return Response{}, ENOTDIR
		}
		name := parts[len(parts)-1]
		n := parent.children[name]
		if n == nil {
			return Response{}, ENOENT
		}
		parent.remove(name)
		n.collect(&ns.gone)
		return Response{}, OK
	case MethodRename:
		dst, ok := SplitPath(r.Dst)
		if !ok || len(parts) == 0 || len(dst) == 0 {
			return Response{}, EINVAL
		}
		if len(dst) >= len(parts) && slices.Equal(dst[:len(parts)], parts) {
			return Response{}, EINVAL // into itself (or onto itself)
		}
		sp, code := ns.lookup(parts[:len(parts)-1])
		if code != OK {
			return Response{}, code
		}
		if !sp.dir {
			return Response{}, ENOTDIR
		}
		n := sp.children[parts[len(parts)-1]]
		if n == nil {
			return Response{}, ENOENT
		}
		dp, code := ns.lookup(dst[:len(dst)-1])
		if code != OK {
			return Response{}, code
		}
		if !dp.dir {
			return Response{}, ENOTDIR
		}
		if dp.children[dst[len(dst)-1]] != nil {
			return Response{}, EEXIST
		}
		sp.remove(parts[len(parts)-1])
		dp.add(dst[len(dst)-1], n)
		return Response{}, OK
	}
	return Response{}, EINVAL
}

// token grants op on block (at stamp; 0: any) until the lifetime ends.
func (ns *Namespace) token(block, stamp uint64, op model.Op) []byte {
	ns.p.CPU(model.CPUToken, 1)
	return model.IssueToken(ns.cfg.TokenKey, model.BlockToken{BlockID: block, GenStamp: stamp, Modes: model.ModeFor(op),
		Expiry: ns.p.World().Now() + ns.cfg.TokenLifetime})
}

// lookup finds the inode at parts, charging a visit per component.
func (ns *Namespace) lookup(parts []string) (*inode, Code) {
	n := ns.root
	ns.p.CPU(model.CPUInode, 1)
	for _, c := range parts {
		if !n.dir {
			return nil, ENOTDIR
		}
		ns.p.CPU(model.CPUInode, 1)
		if n = n.children[c]; n == nil {
			return nil, ENOENT
		}
	}
	return n, OK
}

// walk is lookup for a directory, creating missing ones when mk is set
// (mkdirs, and create's parents).
func (ns *Namespace) walk(parts []string, mk bool) (*inode, Code) {
	n := ns.root
	ns.p.CPU(model.CPUInode, 1)
	for i, c := range parts {
		ns.p.CPU(model.CPUInode, 1)
		next := n.children[c]
		if next == nil {
			if !mk {
				return nil, ENOENT
			}
			next = newDir()
			n.add(c, next)
		}
		if !next.dir {
			if i == len(parts)-1 {
				return nil, EEXIST
			}
			return nil, ENOTDIR
		}
		n = next
	}
	return n, OK
}

func (n *inode) length() int64 {
	var l int64
	for _, b := range n.blocks {
		l += b.Length
	}
	return l
}

// collect appends the blocks of every file under n, in name order.
func (n *inode) collect(out *[]uint64) {
	for _, b := range n.blocks {
		*out = append(*out, b.Block)
	}
	for _, name := range n.names {
		n.children[name].collect(out)
	}
}
