package shortcircuit

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"xceiver/model"
)

// ServerConfig configures a datanode's domain endpoint.
type ServerConfig struct {
	// Path is the domain socket's address (a socket path in real).
	Path string
	// ReadTimeout bounds waiting for a request (HDFS's socket timeout);
	// a segment's connection is exempt: it stays open while the client
	// keeps the segment.
	ReadTimeout time.Duration
	// Backlog is the domain socket's accept queue (0:
	// model.DefaultBacklog). A client whose connect finds it full waits
	// for room (model.RetryUnixDial).
	Backlog int
	// MaxSegmentsPerUser bounds the segments one user (the peer's
	// SO_PEERCRED) holds at once (0: DefaultMaxSegmentsPerUser); a
	// REQUEST_SHM past it is refused. A segment's connection has no read
	// timeout, so without a bound one local user could hold segments
	// until the datanode's fd table is full, and every client's fd
	// requests, block opens and accepts fail with it.
	MaxSegmentsPerUser int
	// MaxConnsPerUser bounds the connections one user holds open that
	// keep no segment (0: half the datanode's fd table); a connection past it
	// is closed as it is accepted, unanswered, as HDFS's
	// DataXceiverServer closes a peer past maxXceiverCount. Such a
	// connection holds a datanode fd until the read timeout, restarted
	// by every byte: without a bound one local user could open them
	// until the fd table is full, failing everyone's block opens and
	// accepts, as a squatter's segments did before MaxSegmentsPerUser.
	// Every user's connections together count against the datanode's
	// connection cap (model.Datanode.TakePeer), which idle ones are closed
	// to make room under: a bound per user alone lets each local user add
	// its own.
	MaxConnsPerUser int
	Bugs            ServerBugs
}

// DefaultMaxSegmentsPerUser is 8,192 slots a user: a client asks for a
// segment only when its segments are full, one slot a replica it caches
// or reads (HDFS's default cache keeps 256), so none needs near as many;
// and with a 1,024-fd table most fds stay for others.
const DefaultMaxSegmentsPerUser = 128

// ServerBugs switch on historic datanode-side bugs.
type ServerBugs struct {
	// SegmentKeepsPlace keeps a segment's connection counted as a place
	// in the datanode's MaxConns for as long as the segment lives, as
	// this datanode did until a review of HDFS (whose DataXceiver
	// releases the peer once it hands the socket to its
	// DomainSocketWatcher): at MaxConns 2 every reader's fd request waits
	// out its minute, the segment's connection holding one place and the
	// last kept for TCP clients.
	SegmentKeepsPlace bool
	// WaitWhenNoneFit keeps a domain connection waiting for room in a
	// cap that has none for any (MaxConns 1, or a tiny fd table), as
	// when the cap is merely full: room never comes, the connection's fd
	// stays held after its client gave up, and the endpoint accepts
	// nothing more.
	WaitWhenNoneFit bool
	// KeepSlotOnLostReply is HDFS-7915: the datanode registers the slot
	// and counts it handed over once its send returns: it asks for no
	// receipt and frees nothing when the send fails, so a reply the
	// client never gets leaves the slot registered.
	KeepSlotOnLostReply bool
	// LeakDataOnMetaFailure is HDFS-17978: when opening the meta file
	// fails after the data file was opened, the data fd is not closed.
	LeakDataOnMetaFailure bool
	// NoInvalidateOnDelete is HDFS-6750: deleting (unlinking) a replica
	// does not clear its slots' valid bit, so clients keep reading it
	// through their cached fds.
	NoInvalidateOnDelete bool
	// ServeOnSegmentConn reads requests on a connection that stands for
	// a segment, as this datanode did until a rogue client in check
	// found it: a second REQUEST_SHM there is served and the first
	// segment is lost (never freed).
	ServeOnSegmentConn bool
	// NoSegmentBound grants every REQUEST_SHM, whatever the user holds
	// (MaxSegmentsPerUser ignored), as this datanode did until check's
	// squatting rogue filled its fd table with segments' connections.
	NoSegmentBound bool
	// NoConnBound accepts every connection, whatever the user holds open
	// (MaxConnsPerUser ignored), as this datanode did until check's
	// flooding rogue filled its fd table with idle connections.
	NoConnBound bool
	// UncappedConns counts no domain connection against the datanode's
	// connection cap (model.Datanode.TakePeer), as this datanode did until
	// check's rogues flooded as several users, each within its own
	// bounds, and filled the fd table together.
	UncappedConns bool
	// EvictSilentOnly makes room in the datanode's cap only from
	// connections that never sent a byte, as this datanode did until
	// check's dripping rogue kept a request partial on each of its
	// connections, a byte at a time.
	EvictSilentOnly bool
}

// ServerStats counts what a domain endpoint did. MaxFetches is the most
// fd requests for one block on one segment it had under way at once, each
// from its arrival to the client's receipt (or the end of its exchange):
// a client that shares one fetch per block (fetchOrCreate) makes 1.
type ServerStats struct {
	Accepted, DataConns, FDRequests, FDsPassed, Releases, Segments, Errors int
	MaxFetches                                                             int
	// Refused counts connections closed as accepted: their user had
	// MaxConnsPerUser open, or the datanode's cap had no room.
	Refused int
	// Evicted counts connections closed to make room under the
	// datanode's cap: they had sent nothing since their accept, or kept a
	// request partial for model.IdleGrace.
	Evicted int
}

// Server is a datanode's Unix-domain endpoint: data traffic (handed to
// the datanode), short-circuit fds and shared-memory slots. It runs on the
// datanode's acceptor loop; the slot registry is guarded by the
// datanode's lock, under which the block store reports changes.
type Server struct {
	cfg     ServerConfig
	dn      *model.Datanode
	p       model.Process
	loop    model.Loop
	lock    model.Lock
	ln      model.Listener
	stopped bool
	// waiting is an accepted connection kept unread while the
	// datanode's cap is full, nothing more accepted until it gets in
	// (admit): the datanode tells of room (peerSide.Resume).
	waiting model.Conn
	conns   []*srvConn // loop only
	stats   ServerStats
	// fetches counts the fd requests under way by segment and block
	// (loop only): for MaxFetches.
	fetches map[fetchKey]int
	// connsByUser counts the open connections that keep no segment, by
	// user (loop only): for MaxConnsPerUser.
	connsByUser map[string]int
	// buf is what a connection's read lands in before it joins its
	// input (loop only): an array on the stack escaped through Read, a
	// zeroed kilobyte on the heap at every read.
	buf [1024]byte

	// under lock
	segs    map[uint64]*dnShm
	byBlock map[uint64][]slotRef
	byUser  map[string]int // segments held, by user
	slots   int            // registered slots
	passed  int            // fds passed and not yet closed by the datanode (0 at rest)
}

// fetchKey names a client's fetches of a block: its segment and the block.
type fetchKey struct{ shm, block uint64 }

type dnShm struct {
	id    uint64
	seg   model.Segment
	owner *srvConn
	user  string
	used  [SlotsPerSegment]bool
	block [SlotsPerSegment]uint64
}

type slotRef struct {
	shm  *dnShm
	slot int
}

// Start opens the domain endpoint of dn at cfg.Path, after checking that
// the path is safe: every directory on it owned by root or the datanode's
// user and writable by no one else (HDFS's validateSocketPathSecurity).
func Start(dn *model.Datanode, cfg ServerConfig) (*Server, error) {
	if cfg.Path == "" {
		return nil, fmt.Errorf("short-circuit: no domain socket path")
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 60 * time.Second
	}
	p := dn.Process()
	if cfg.MaxSegmentsPerUser == 0 {
		cfg.MaxSegmentsPerUser = DefaultMaxSegmentsPerUser
	}
	if cfg.MaxSegmentsPerUser < 0 {
		return nil, fmt.Errorf("short-circuit: negative segment bound %d", cfg.MaxSegmentsPerUser)
	}
	if cfg.MaxConnsPerUser == 0 {
		// Not a fixed count: one client process with hundreds of reader
		// threads connects them all at once (sc-read's 256 over uds are
		// all accepted before the first request is read), and none may
		// be refused; half the table, with the segments a user may hold,
		// still leaves the rest for other users and block files.
		cfg.MaxConnsPerUser = max(1, p.FDs().Limit/2)
	}
	if cfg.MaxConnsPerUser < 0 {
		return nil, fmt.Errorf("short-circuit: negative connection bound %d", cfg.MaxConnsPerUser)
	}
	if err := p.CheckSocketPath(cfg.Path); err != nil {
		return nil, fmt.Errorf("short-circuit: domain socket %s: %w", cfg.Path, err)
	}
	s := &Server{cfg: cfg, dn: dn, p: p, loop: dn.Main(), lock: dn.Lock(), segs: map[uint64]*dnShm{}, byBlock: map[uint64][]slotRef{}, byUser: map[string]int{}, connsByUser: map[string]int{}, fetches: map[fetchKey]int{}}
	ln, err := p.Listen("unix", cfg.Path, cfg.Backlog, s.loop)
	if err != nil {
		return nil, fmt.Errorf("short-circuit: %w", err)
	}
	s.ln = ln
	dn.SetPeerEndpoint(peerSide{s})
	dn.Store().OnChange(s.changed)
	ln.SetHandler(s.accept)
	return s, nil
}

// Addr is the domain socket's address.
func (s *Server) Addr() string { return s.ln.Addr() }

// Stats returns the counters (call on the datanode's acceptor loop).
func (s *Server) Stats() ServerStats { return s.stats }

// Registry reports, under the lock, the segments and registered slots the
// datanode holds and the passed fds it has not closed yet; done runs on
// loop.
func (s *Server) Registry(loop model.Loop, done func(segments, slots, passing int)) {
	s.lock.Do(loop, func() {
		segs, slots, passing := len(s.segs), s.slots, s.passed
		loop.Post(func() { done(segs, slots, passing) })
	})
}

// Conns is the number of open domain connections (acceptor loop).
func (s *Server) Conns() int { return len(s.conns) }

// Stop closes the endpoint and its connections, freeing every segment.
func (s *Server) Stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	s.ln.Close()
	if s.waiting != nil {
		_ = s.waiting.Close()
		s.waiting = nil
	}
	for _, sc := range slices.Clone(s.conns) {
		sc.close("shutdown")
	}
}

// CloseIdle times out at once every connection idle between requests, as
// their read timeouts would: a client that reuses one it cached meets the
// close (the dead cached socket of HDFS's peer cache). Idle is a read
// timeout armed (no request under way, no segment kept: see watch), a
// request served before, no receipt awaited and no input. Call it on the
// server's loop.
func (s *Server) CloseIdle() {
	for _, sc := range slices.Clone(s.conns) {
		if sc.rt != nil && sc.served > 0 && sc.receipt == nil && len(sc.in) == 0 {
			sc.readTimeout()
		}
	}
}

func (s *Server) accept() {
	model.AcceptAll(s.p, s.loop, s.ln, "sc-accept-error", func() bool { return s.stopped || s.waiting != nil }, s.serve)
}

func (s *Server) serve(c model.Conn) {
	s.stats.Accepted++
	s.admit(c)
}

// admit serves an accepted connection, or closes it (its user's bound),
// or, with the datanode's cap full (model.Datanode.TakePeer) and no idle
// connection to close for room at once, keeps it waiting, unread, and
// accepts nothing more until there is room: the next connections wait in
// the accept queue, as the datanode leaves TCP ones in its backlog when
// full (closing them would drop the requests they carry). Room is made
// by the datanode's one eviction over both kinds of connection
// (MakePeerRoom): the one idle longest, for model.IdleGrace at least (a
// domain one silent or keeping a request partial, or a TCP one silent),
// is closed, now or once it is old enough.
func (s *Server) admit(c model.Conn) {
	user := model.PeerUser(c)
	if n := s.connsByUser[user]; n >= s.cfg.MaxConnsPerUser && !s.cfg.Bugs.NoConnBound {
		// Before any read: nothing of its request is served, and its fd
		// goes back at once.
		s.stats.Refused++
		s.p.Log("sc-conn-refused", "conn", c.ID(), "open", n)
		_ = c.Close()
		return
	}
	// Counted against the datanode's cap, whatever the user: a bound per
	// user alone lets every local user add its own.
	capped := !s.cfg.Bugs.UncappedConns
	if capped && !s.dn.TakePeer() {
		if !s.dn.PeersFit() && !s.cfg.Bugs.WaitWhenNoneFit {
			// No room will ever come (MaxConns or the fd table too
			// small for any peer): refused as past the cap, the client
			// falls back at once instead of waiting out its timeout
			// while the endpoint accepts nothing more.
			s.stats.Refused++
			s.p.Log("sc-conn-no-room", "conn", c.ID())
			_ = c.Close()
			return
		}
		s.dn.MakePeerRoom()
		if !s.dn.TakePeer() {
			s.p.Log("sc-conns-full", "conn", c.ID(), "domain", len(s.conns), "conns", s.dn.Conns())
			s.waiting = c
			s.ln.SetHandler(nil)
			return
		}
	}
	sc := &srvConn{s: s, c: c, user: user, capped: capped, acceptAt: s.loop.Now()}
	sc.count(true)
	s.conns = append(s.conns, sc)
	c.SetHandler(s.loop, sc.onEvent)
	sc.watch()
}

// resume admits the connection kept waiting for room, and accepts again
// if it got in.
func (s *Server) resume() {
	c := s.waiting
	if c == nil || s.stopped {
		return
	}
	s.waiting = nil
	s.admit(c)
	if s.waiting == nil {
		s.ln.SetHandler(s.accept)
	}
}

// peerSide is the endpoint as the datanode's eviction sees it
// (model.PeerEndpoint): the cap is shared, so the datanode closes the
// oldest idle connection of either kind for room, for a TCP client as for
// a domain one; each side closing only its own left the cap full of the
// other's idlers, closed for nobody until their read timeouts.
type peerSide struct{ s *Server }

// oldestIdle is the connection counted against the cap that has been
// idle longest (idleSince; the first in accept order of those idle as
// long): a client sends its request, whole, as it connects, so only one
// that never will, or that keeps it partial, is closed.
func (p peerSide) oldestIdle() (*srvConn, time.Duration) {
	var oldest *srvConn
	var at time.Duration
	for _, sc := range p.s.conns {
		if oldest != nil && sc.acceptAt >= at {
			// In accept order, and idle no earlier than accepted: none
			// after it is older (a flood's walk stops at its first).
			break
		}
		if since, ok := sc.idleSince(); ok && (oldest == nil || since < at) {
			oldest, at = sc, since
		}
	}
	return oldest, at
}

func (p peerSide) OldestIdle() (time.Duration, bool) {
	sc, at := p.oldestIdle()
	return at, sc != nil
}

func (p peerSide) CloseIdle() {
	sc, at := p.oldestIdle()
	if sc == nil {
		return
	}
	// Read what has arrived first: a request under way is no idler (it
	// is served, or handed to the datanode with its room), unless it was
	// partial before (a request that had only begun then has not come in
	// whole since: it is still as old).
	sc.onEvent(model.Readable)
	if since, ok := sc.idleSince(); ok && since == at {
		p.s.stats.Evicted++
		p.s.p.Log("sc-conn-evicted", "conn", sc.c.ID())
		sc.close("idle, datanode full")
	}
}

func (p peerSide) Waiting() bool { return p.s.waiting != nil && !p.s.stopped }

func (p peerSide) Resume() { p.s.resume() }

// idleSince reports whether the connection, counted against the cap, may
// be closed for room once idle for model.IdleGrace, and idle since when:
// silent since its accept, or holding part of a request since its first
// byte came. An honest client writes a request (a few hundred bytes at
// most) in one write, so a request still partial IdleGrace after it began
// is dripped; and each byte restarts the read timeout, so without this a
// few users dripping bytes into connection after connection, each within
// MaxConnsPerUser, held the cap for as long as they liked.
func (sc *srvConn) idleSince() (time.Duration, bool) {
	if !sc.capped || sc.closed || sc.busy || sc.shm != nil || sc.receipt != nil {
		return 0, false // not counted, or doing or holding something
	}
	switch {
	case sc.served == 0 && len(sc.in) == 0:
		return sc.acceptAt, true // nothing ever received
	case len(sc.in) > 0 && !sc.s.cfg.Bugs.EvictSilentOnly:
		return sc.partialAt, true
	}
	return 0, false // kept after its requests, holding nothing
}

// count adds the connection to its user's count of connections that keep
// no segment, or takes it out (once its segment, its close or its hand-over
// to the datanode ends it as one).
func (sc *srvConn) count(in bool) {
	if sc.counted == in {
		return
	}
	sc.counted = in
	m := sc.s.connsByUser
	if in {
		m[sc.user]++
	} else if m[sc.user]--; m[sc.user] <= 0 {
		delete(m, sc.user)
	}
}

// changed runs under the lock when the store appends to, replaces or
// deletes a block: every slot of the block loses its valid bit, so clients
// stop reading their cached fds.
func (s *Server) changed(id, stamp uint64, deleted bool) {
	if deleted && s.cfg.Bugs.NoInvalidateOnDelete {
		return
	}
	for _, ref := range s.byBlock[id] {
		ref.shm.seg.Store(ref.slot*SlotSize+slotFlags, 0)
	}
}

// open opens a replica's data and meta files read-only, as HDFS's
// requestShortCircuitFdsForRead does, to pass them on. Under the lock.
func (s *Server) open(block, stamp uint64) (*model.BlockFiles, error) {
	loc, err := s.dn.Store().Locate(block, stamp)
	if err != nil {
		return nil, err
	}
	disk := s.p.Disk()
	data, err := disk.Open(loc.DataPath, model.ReadOnly, model.FDBlockFile)
	if err != nil {
		return nil, fmt.Errorf("short-circuit: open data of block %d: %w", block, err)
	}
	meta, err := disk.Open(loc.MetaPath, model.ReadOnly, model.FDMetaFile)
	if err != nil {
		if !s.cfg.Bugs.LeakDataOnMetaFailure {
			_ = data.Close()
		}
		return nil, fmt.Errorf("short-circuit: open meta of block %d: %w", block, err)
	}
	return &model.BlockFiles{ID: block, Stamp: loc.Stamp, Length: loc.Length, Data: data, Meta: meta}, nil
}

// register records slot of shm for a replica. Under the lock.
func (s *Server) register(shm *dnShm, slot int, block, stamp uint64) {
	shm.used[slot], shm.block[slot] = true, block
	off := slot * SlotSize
	shm.seg.Store(off+slotBlock, block)
	shm.seg.Store(off+slotStamp, stamp)
	shm.seg.Store(off+slotFlags, flagValid)
	s.byBlock[block] = append(s.byBlock[block], slotRef{shm, slot})
	s.slots++
}

// unregister frees slot of shm. Under the lock.
func (s *Server) unregister(shm *dnShm, slot int) {
	if !shm.used[slot] {
		return
	}
	block := shm.block[slot]
	shm.used[slot], shm.block[slot] = false, 0
	off := slot * SlotSize
	shm.seg.Store(off+slotFlags, 0)
	shm.seg.Store(off+slotBlock, 0)
	shm.seg.Store(off+slotStamp, 0)
	refs := s.byBlock[block]
	for i, r := range refs {
		if r.shm == shm && r.slot == slot {
			refs = append(refs[:i], refs[i+1:]...)
			break
		}
	}
	if len(refs) == 0 {
		delete(s.byBlock, block)
	} else {
		s.byBlock[block] = refs
	}
	s.slots--
}

// freeShm frees a segment whose client went away, with its slots. Under
// the lock.
func (s *Server) freeShm(shm *dnShm) {
	if s.segs[shm.id] != shm {
		return
	}
	for i := range shm.used {
		s.unregister(shm, i)
	}
	_ = shm.seg.Unmap()
	delete(s.segs, shm.id)
	if s.byUser[shm.user]--; s.byUser[shm.user] <= 0 {
		delete(s.byUser, shm.user)
	}
}

// srvConn is one domain connection. Its fields belong to the acceptor
// loop.
type srvConn struct {
	s    *Server
	c    model.Conn
	user string // the peer's, as of the connect ("" unknown: one user)
	in   []byte
	busy bool   // a request is being served
	shm  *dnShm // the segment this connection watches, if any
	// receipt is the slot of fds passed on this connection whose
	// receipt has not come yet; the slot is freed if the connection
	// fails first (HDFS-7915's fix).
	receipt *slotRef
	// fetch is the fd request under way on it, if any (for MaxFetches).
	fetch  *fetchKey
	rt     model.Timer
	closed bool
	served int // requests served on it
	// partialAt is when the first of the bytes in in arrived, or the
	// request before them was taken off (idleSince).
	partialAt time.Duration
	// counted: in its user's connsByUser (from its accept until its
	// segment, close or hand-over).
	counted bool
	// capped: counted against the datanode's cap (TakePeer) until it
	// closes or is handed over; watched: a segment's, whose fd alone
	// counts from its reply on (Datanode.WatchPeer), as its socket is an
	// fd like any other.
	capped, watched bool
	acceptAt        time.Duration
}

// beginFetch and endFetch bracket an fd request, for MaxFetches.
func (sc *srvConn) beginFetch(k fetchKey) {
	sc.endFetch()
	s := sc.s
	s.fetches[k]++
	s.stats.MaxFetches = max(s.stats.MaxFetches, s.fetches[k])
	sc.fetch = &k
}

func (sc *srvConn) endFetch() {
	if k := sc.fetch; k != nil {
		sc.fetch = nil
		if sc.s.fetches[*k]--; sc.s.fetches[*k] <= 0 {
			delete(sc.s.fetches, *k)
		}
	}
}

func (sc *srvConn) onEvent(ev model.Events) {
	if sc.closed {
		return
	}
	if ev&model.Hangup != 0 && sc.c.Err() != nil {
		sc.close("peer reset")
		return
	}
	if ev&model.Readable == 0 {
		return
	}
	for !sc.closed && !sc.busy {
		if len(sc.in) >= MaxRequestLen+64 {
			sc.fail(invalid("short-circuit request larger than %d bytes", MaxRequestLen))
			return
		}
		buf := &sc.s.buf
		room := buf[:min(len(buf), MaxRequestLen+64-len(sc.in))]
		n, err := sc.c.Read(room)
		if n > 0 {
			if len(sc.in) == 0 {
				sc.partialAt = sc.s.loop.Now()
			}
			sc.in = append(sc.in, room[:n]...)
			sc.process()
			continue
		}
		if errors.Is(err, model.ErrWouldBlock) {
			sc.watch()
			return
		}
		if errors.Is(err, io.EOF) {
			sc.close("eof")
			return
		}
		sc.close("read error")
		return
	}
}

// watch (re)starts the read timeout unless the connection is serving a
// request or keeps a segment.
func (sc *srvConn) watch() {
	if sc.rt != nil {
		sc.rt.Stop()
		sc.rt = nil
	}
	if sc.closed || sc.busy || sc.shm != nil {
		return
	}
	sc.rt = sc.s.loop.AfterFunc(sc.s.cfg.ReadTimeout, func() {
		sc.rt = nil
		sc.readTimeout()
	})
}

// readTimeout closes a connection that sent nothing for the read timeout.
func (sc *srvConn) readTimeout() {
	if !sc.closed && !sc.busy {
		sc.s.p.Log("sc-read-timeout", "conn", sc.c.ID())
		sc.close("read timeout")
	}
}

// take drops the first n bytes of in (a receipt, a request served): what
// follows is a request of its own, partial from now (idleSince).
func (sc *srvConn) take(n int) {
	sc.in = sc.in[:copy(sc.in, sc.in[n:])]
	sc.partialAt = sc.s.loop.Now()
}

func (sc *srvConn) process() {
	if sc.shm != nil && len(sc.in) > 0 && !sc.closed && !sc.s.cfg.Bugs.ServeOnSegmentConn {
		// A segment's connection carries nothing after the segment: HDFS
		// hands it to its DomainSocketWatcher, which takes any readiness
		// for the client gone. Bytes on it end it, and the segment with
		// it (served, a second REQUEST_SHM here lost the first segment).
		sc.close("bytes on a segment's connection")
		return
	}
	if r := sc.receipt; r != nil && !sc.closed && !sc.busy && len(sc.in) > 0 {
		if sc.in[0] != ReceiptByte {
			sc.fail(invalid("receipt byte %d, want %d", sc.in[0], ReceiptByte))
			return
		}
		sc.take(1)
		sc.receipt = nil // the client has the fds: the slot is its own now
		sc.endFetch()
	}
	if sc.receipt != nil {
		return // no request is read before the receipt
	}
	for !sc.closed && !sc.busy && len(sc.in) >= 3 {
		op := model.Op(sc.in[2])
		if !IsShortCircuitOp(op) {
			if _, _, err := model.DecodeRequest(sc.in); err != nil && !errors.Is(err, model.ErrNeedMore) {
				sc.fail(err)
				return
			}
			// Data traffic: the datanode serves it from here on.
			sc.handOver()
			return
		}
		req, n, err := DecodeRequest(sc.in)
		if errors.Is(err, model.ErrNeedMore) {
			return
		}
		if err != nil {
			sc.fail(err)
			return
		}
		sc.take(n)
		sc.p().CPU(model.CPUParse, 1)
		sc.serve(req)
	}
}

func (sc *srvConn) p() model.Process { return sc.s.p }

// handOver gives the connection and the bytes read so far to the
// datanode.
func (sc *srvConn) handOver() {
	s := sc.s
	sc.closed = true
	if sc.rt != nil {
		sc.rt.Stop()
		sc.rt = nil
	}
	capped := sc.capped
	sc.capped = false // its room passes to the datanode's connection (Adopt)
	s.forget(sc)
	sc.count(false) // the datanode's connection cap counts it now
	s.stats.DataConns++
	sc.c.SetReadInterest(false)
	sc.c.SetHandler(s.loop, func(model.Events) {})
	s.dn.Adopt(sc.c, sc.in, capped)
	sc.in = nil
}

func (sc *srvConn) serve(req Request) {
	s := sc.s
	sc.busy = true
	// It reads nothing until the answer is out (reply): left reading,
	// a byte or an EOF that came meanwhile would call its handler again
	// at every turn of the loop while the request waits for the lock.
	sc.c.SetReadInterest(false)
	sc.watch()
	switch req.Op {
	case OpRequestShm:
		s.lock.Do(s.loop, func() {
			if n := s.byUser[sc.user]; n >= s.cfg.MaxSegmentsPerUser && !s.cfg.Bugs.NoSegmentBound {
				err := &model.ProtocolError{Status: model.StatusError, Msg: fmt.Sprintf("%d segments held, the most one user may", n)}
				s.loop.Post(func() { sc.sentShm(nil, nil, err) })
				return
			}
			seg, f, err := s.p.NewSegment("shm", SegmentSize)
			var shm *dnShm
			if err == nil {
				id := s.p.Rand().Uint64() | 1
				for s.segs[id] != nil {
					id = s.p.Rand().Uint64() | 1
				}
				shm = &dnShm{id: id, seg: seg, owner: sc, user: sc.user}
				s.segs[id] = shm
				s.byUser[sc.user]++
			}
			s.loop.Post(func() { sc.sentShm(shm, f, err) })
		})
	case OpRequestFDs:
		s.stats.FDRequests++
		sc.beginFetch(fetchKey{req.ShmID, req.BlockID})
		// The token first: a refused client learns nothing and no file
		// is opened.
		if err := model.CheckToken(s.dn.TokenKey(), req.Token, req.BlockID, req.Stamp, model.ModeRead, s.loop.Now()); err != nil {
			sc.fail(err)
			return
		}
		s.lock.Do(s.loop, func() {
			shm := s.segs[req.ShmID]
			var files *model.BlockFiles
			var err error
			switch {
			case shm == nil:
				err = invalid("no segment %#x", req.ShmID)
			case req.Slot >= SlotsPerSegment:
				err = invalid("slot %d out of range [0, %d)", req.Slot, SlotsPerSegment)
			case shm.used[req.Slot]:
				err = invalid("slot %d of segment %#x is in use", req.Slot, req.ShmID)
			default:
				files, err = s.open(req.BlockID, req.Stamp)
			}
			if err == nil {
				s.register(shm, int(req.Slot), req.BlockID, files.Stamp)
				s.passed += 2
			}
			s.loop.Post(func() { sc.sendFDs(shm, int(req.Slot), files, err) })
		})
	case OpReleaseSlot:
		s.stats.Releases++
		s.lock.Do(s.loop, func() {
			shm := s.segs[req.ShmID]
			var err error
			switch {
			case shm == nil:
				err = invalid("no segment %#x", req.ShmID)
			case req.Slot >= SlotsPerSegment:
				err = invalid("slot %d out of range [0, %d)", req.Slot, SlotsPerSegment)
			case !shm.used[req.Slot]:
				err = invalid("slot %d of segment %#x was never allocated", req.Slot, req.ShmID)
			default:
				s.unregister(shm, int(req.Slot))
			}
			s.loop.Post(func() {
				if err != nil {
					sc.fail(err)
					return
				}
				sc.reply(AppendResponse(nil, Response{Status: model.StatusSuccess}), nil)
			})
		})
	}
}

func (sc *srvConn) sentShm(shm *dnShm, f model.File, err error) {
	s := sc.s
	if err != nil {
		sc.fail(err)
		return
	}
	if sc.closed {
		_ = f.Close()
		s.lock.Do(s.loop, func() { s.freeShm(shm) })
		return
	}
	// The connection stands for the segment from its reply on: when it
	// closes (a failed reply too), the client is gone and the segment and
	// its slots are freed.
	sc.shm = shm
	sc.count(false) // MaxSegmentsPerUser bounds it now
	if sc.capped && !s.cfg.Bugs.SegmentKeepsPlace {
		// It takes no place in MaxConns from now on, only an fd: the
		// client's fd requests need the place.
		sc.capped, sc.watched = false, true
		s.dn.WatchPeer()
		if s.waiting != nil && s.dn.PeerRoom() {
			// (Only where MaxConns bound: its fd still counts, so
			// where the fd table does, nothing has changed.)
			s.resume()
		}
	}
	resp := AppendResponse(nil, Response{Status: model.StatusSuccess, ShmID: shm.id, Size: SegmentSize})
	ok := sc.reply(resp, []model.File{f})
	_ = f.Close() // the datanode keeps its mapping, not the fd
	if ok {
		// Counted once sent, as fds are: a client that hung up while
		// it waited to be accepted (a squatter letting go) got none.
		s.stats.Segments++
		sc.watch()
	}
}

func (sc *srvConn) sendFDs(shm *dnShm, slot int, files *model.BlockFiles, err error) {
	s := sc.s
	if err != nil {
		sc.fail(err)
		return
	}
	// With receipts (the fix of HDFS-7915) the slot stays provisional
	// until the client confirms it holds the fds: a reply lost on the
	// way, or fds the client's kernel dropped, free it when the
	// connection fails. Without, the datanode cannot tell.
	verify := !s.cfg.Bugs.KeepSlotOnLostReply
	if sc.closed || !verify {
		// No receipt comes: the fetch ends here, before the reply lets
		// the connection's next request begin (a failed reply closes
		// the connection, which ends it too).
		sc.endFetch()
	}
	ok, pending := false, true
	if !sc.closed {
		if verify {
			sc.receipt, pending = &slotRef{shm, slot}, false // the receipt or the close frees it now
		}
		resp := AppendResponse(nil, Response{Status: model.StatusSuccess, Stamp: files.Stamp, Length: files.Length, Receipt: verify})
		ok = sc.reply(resp, []model.File{files.Data, files.Meta})
	}
	// The datanode keeps no block fd once they are passed (or not).
	_ = files.Close()
	if ok {
		s.stats.FDsPassed += 2
	}
	s.lock.Do(s.loop, func() {
		s.passed -= 2
		if !ok && pending && verify {
			s.unregister(shm, slot)
		}
	})
}

// reply sends a response (with files) and goes back to reading requests;
// it reports whether the response went out. A response is small: it fits
// in the socket buffer whole or the client is not reading, and then the
// connection is dropped.
func (sc *srvConn) reply(b []byte, files []model.File) bool {
	if sc.closed {
		return false
	}
	var err error
	if len(files) > 0 {
		_, err = sc.c.SendFDs(b, files)
	} else {
		_, err = sc.c.Write(b)
	}
	if err != nil {
		sc.s.p.Log("sc-send-error", "conn", sc.c.ID(), "err", err.Error())
		sc.close("send error")
		return false
	}
	sc.busy = false
	sc.c.SetReadInterest(true)
	sc.served++
	sc.watch()
	if len(sc.in) > 0 {
		sc.process()
	}
	return true
}

// fail answers with an error status and closes.
func (sc *srvConn) fail(err error) {
	s := sc.s
	s.stats.Errors++
	s.p.Log("sc-error", "conn", sc.c.ID(), "err", err.Error())
	st := model.StatusOf(err)
	if st == model.StatusSuccess {
		st = model.StatusError
	}
	if !sc.closed {
		_, _ = sc.c.Write(AppendResponse(nil, Response{Status: st, Message: err.Error()}))
	}
	sc.close("after error")
}

func (sc *srvConn) close(why string) {
	if sc.closed {
		return
	}
	sc.closed = true
	if sc.rt != nil {
		sc.rt.Stop()
		sc.rt = nil
	}
	_ = sc.c.Close()
	sc.endFetch()
	s := sc.s
	s.forget(sc)
	sc.count(false)
	if r := sc.receipt; r != nil {
		sc.receipt = nil
		s.lock.Do(s.loop, func() { s.unregister(r.shm, r.slot) })
	}
	if shm := sc.shm; shm != nil {
		sc.shm = nil
		s.lock.Do(s.loop, func() { s.freeShm(shm) })
	}
}

func (s *Server) forget(sc *srvConn) {
	if sc.capped {
		sc.capped = false
		s.dn.ReleasePeer()
		s.resume()
	}
	if sc.watched {
		sc.watched = false
		s.dn.ReleaseWatchedPeer()
		s.resume()
	}
	for i, o := range s.conns {
		if o == sc {
			s.conns = append(s.conns[:i], s.conns[i+1:]...)
			return
		}
	}
}
