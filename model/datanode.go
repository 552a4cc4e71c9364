package model

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// ServerMode selects how a datanode serves connections.
type ServerMode string

const (
	// Reactor is HDFS-918: an acceptor, a few selector loops and a worker
	// pool; one fd per connection; block files shared through the pool.
	Reactor ServerMode = "reactor"
	// Threaded is the DataXceiver HDFS ships: a thread per connection that
	// opens the block and meta files for each request, with its own
	// buffers.
	Threaded ServerMode = "threaded"
)

// DatanodeConfig configures a datanode. Zero values take the defaults in
// DefaultDatanodeConfig.
type DatanodeConfig struct {
	Addr      string
	Mode      ServerMode
	Selectors int // reactor selector loops
	Workers   int // reactor worker threads
	// InlineIO has each selector build packets itself (read their data or
	// stored checksums), with no worker pool: HDFS-918's later design, one selector per worker
	// thread handling writable connections inline.
	InlineIO  bool
	PoolMax   int           // open block-file fds in the handle pool
	PoolMin   int           // idle handles kept
	PoolIdle  time.Duration // idle handles above PoolMin close after this
	Keepalive time.Duration // wait for the next op after a clean end
	// ReadTimeout bounds every other wait for the client — its first
	// request, the rest of a request or a write, the final status — so
	// a client that vanished without a FIN does not hold a connection
	// forever (HDFS's socket timeout, 60 s). Within a write it counts
	// from the write's last step of progress (a packet's worth of data),
	// not its last byte.
	ReadTimeout time.Duration
	NoDelay     bool
	PacketSize  int // data bytes per packet
	Dir         string
	// MaxWrite bounds the data of one write op.
	MaxWrite int
	// TokenKey checks the block token of every request; nil means
	// DefaultTokenKey.
	TokenKey []byte
	// MaxBuffered bounds the write data all connections buffer together.
	// A write's buffer grows with the data that arrives, so announcing a
	// large write costs nothing; a write whose buffer cannot grow waits
	// for room, and fails busy if it finds none once HandleWait has
	// passed, while the writes holding room that have made no step of
	// progress (a packet's worth of data) for StallTimeout are cut off.
	MaxBuffered int
	// RequestTimeout bounds how long a message (a request, a write
	// packet, the final status) may take to arrive once its first byte
	// has: the read timeout restarts on every byte, so a request
	// dripped a byte at a time would otherwise hold a connection for
	// hours (slowloris).
	RequestTimeout time.Duration
	// SendTimeout closes a connection whose client took none of what it
	// is being sent for this long: HDFS's dfs.datanode.socket.write.timeout,
	// 8 minutes by default (a blocked write of the DataXceiver's socket
	// output stream times out then).
	SendTimeout time.Duration
	// HandleWait bounds a read's wait for a pool handle, and a write's
	// for buffer room (MaxBuffered); it then fails, busy. StallTimeout: a
	// read holding a handle whose client took nothing for this long
	// closes while other reads wait for one, and a write holding room
	// whose client sent no packet's worth of data for this long while
	// other writes wait for room.
	HandleWait, StallTimeout time.Duration
	// MaxConns caps the connections served (HDFS's
	// dfs.datanode.max.transfer.threads); the cap is lowered further so
	// that fds stay in reserve for block files. When it is reached the
	// oldest idle connection is closed to make room, or the new one is
	// refused.
	MaxConns int
	// NoTransferTo sends a TCP read's data through a buffer, as with
	// HDFS's dfs.datanode.transferTo.allowed=false. By default (false)
	// the data part of each packet goes from the block file to the
	// socket with sendfile, as BlockSender.sendPacket does with
	// transferTo; the packet header and checksums are written from a
	// buffer. Domain-socket data traffic (Adopt) always copies: HDFS's
	// DomainSocket stream is not a SocketOutputStream, so BlockSender
	// takes its copying path there.
	NoTransferTo bool
	Bugs         DatanodeBugs
}

// DatanodeBugs switch on historic bugs, for tests and `check --bug`.
type DatanodeBugs struct {
	// KeepaliveForever is HDFS-3357: the keep-alive wait has no timeout.
	KeepaliveForever bool
	// PoolKeyIgnoresStamp keys handles without the generation stamp.
	PoolKeyIgnoresStamp bool
	// PoolClosesInUse lets eviction close handles a read still uses.
	PoolClosesInUse bool
	// PoolSharersSleep leaves reads queued for a block asleep when a
	// handle of it is opened for another read (HandlePoolConfig).
	PoolSharersSleep bool
	// PoolRetakeAppendedFails fails a parked read whose handle was
	// evicted once its block is appended to (HandlePoolConfig).
	PoolRetakeAppendedFails bool
	// PoolRetakeWakeLost: a parked read's retake that fails (its block
	// replaced or deleted) does not pass on the wake-up it was given
	// (HandlePoolConfig.RetakeWakeLost; check seed 440179954).
	PoolRetakeWakeLost bool
	// PoolRetireIdle retires a handle a stalled read parked before the
	// retire ran (HandlePoolConfig.RetireIdle).
	PoolRetireIdle bool
	// PressDelayAgain: a read that has waited the press delay, was woken
	// and was beaten to the handle by a new read queues again behind a
	// fresh press delay instead of pressing at once (check's seed 24768,
	// a read that waited two press delays).
	PressDelayAgain bool
	// ParkedWakeLost drops a parked read woken from the pool's queue as if
	// it were gone: its client waits until it times out.
	ParkedWakeLost bool
	// ParkedWaiterDeaf: a parked read waiting to take its handle again
	// listens for nothing (it reads nothing and has nothing it can
	// send), so its client's FIN goes unseen until a handle frees or
	// HandleWait has passed.
	ParkedWaiterDeaf bool
	// ClosedGrowKept keeps the reservation of a write buffer's growth
	// whose answer finds the connection closed: MaxBuffered shrinks for
	// good.
	ClosedGrowKept bool
	// ReturnBufferEarly returns a packet buffer to its selector's free
	// list after a partial write, while the rest of it is still to send.
	ReturnBufferEarly bool
	// WriteUnverified stores a write's packets without checking their
	// checksums (the store computes fresh ones from the bytes it got).
	WriteUnverified bool
	// EmptyReadPanics indexes the last entry of a per-chunk table of the
	// read's range, which an empty read does not have: index out of range.
	EmptyReadPanics bool
	// ClosedConnsReachable is issue 9 item 1: a closed connection keeps
	// its buffers and its slot in the connection list stays set, so it
	// stays reachable until a new connection reuses the slot.
	ClosedConnsReachable bool
	// PacketsUnchecked takes a write's packets at their word: each one's
	// data goes on wherever the write has got to, whatever offset its
	// header names, and the packet marked last completes the write,
	// however short of the length its request announced. Only their
	// checksums are verified. A peer's misfit write is stored.
	PacketsUnchecked bool
	// WritePrealloc is issue 9 item 2: a write's whole announced length
	// is allocated when its header arrives, and nothing bounds what all
	// connections buffer.
	WritePrealloc bool
	// NoSendTimeout is issue 9 item 3: nothing times out while sending.
	NoSendTimeout bool
	// PoolWaitForever is issue 9 item 4: a read waits for a pool handle
	// without bound, and a holder that makes no progress keeps it.
	PoolWaitForever bool
	// HoldWhileStalled is issue 9 item 4's first fix: a read keeps its
	// pool handle while its client takes nothing, and holders that stall
	// while others wait are cut off one StallTimeout after another, so a
	// waiter queued behind several clients that stopped reading waits
	// for all of them.
	HoldWhileStalled bool
	// WriteAnyByte counts any byte a write's client sends as progress:
	// the read timeout restarts and a writer's stall clock resets on
	// every read, so a client that sends a packet of one byte just
	// under each stall timeout holds its connection and its buffer room
	// for good (minWriteStep).
	WriteAnyByte bool
	// WaiterDeaf is issue 9 item 5: while a read waits for a handle its
	// connection reads nothing, so its client's FIN goes unseen.
	WaiterDeaf bool
	// SpinOnUnread leaves reading on for a connection not expecting
	// input (a pipelined status while it sends, a client's junk): its
	// loop is woken for the unread bytes at every turn, a spin.
	SpinOnUnread bool
	// WaiterDeafWhenFull is item 5's fix without PeerClosed: a read
	// waiting for a handle reads on only until it has buffered all it
	// may of its client's pipelined input (MaxRequestLen+64 bytes),
	// then hears nothing, so a FIN behind more than that goes unseen
	// until a handle frees or HandleWait has passed.
	WaiterDeafWhenFull bool
	// FullWaiterSpins is PeerClosed's fix with one line missing: a read
	// waiting for a handle that has buffered all it may listens for the
	// FIN but leaves reading on, so the unread rest of its client's
	// pipelined input wakes its loop at every turn until a handle frees
	// or the client leaves: a spin.
	FullWaiterSpins bool
	// WriteWaiterDeaf is item 5 for writes: while a write waits for
	// buffer room its input stays in the socket, unread, and nothing
	// listens for its client's FIN behind it, so a client that has gone
	// holds its connection and its place in the queue for room until
	// room comes or HandleWait has passed.
	WriteWaiterDeaf bool
	// HoldersWaitForRoom lets a write that holds room wait for more as
	// long as one holding none, HandleWait: writes that each hold part of
	// the room and all wait for more hold it all until then, and every
	// write behind them waits as long (yieldRoom).
	HoldersWaitForRoom bool
	// NoConnCap is issue 9 item 6: connections are accepted until the
	// fd table is full, with no reserve for block files.
	NoConnCap bool
	// ResetWhenFull is issue 9 item 6's first cap: when full with no
	// connection idle, the newest is closed, reset if its request had
	// arrived, though it may be a well-behaved client's.
	ResetWhenFull bool
	// Slowloris is issue 9 item 7: no deadline for a whole request.
	Slowloris bool
	// BusyWhenFull refuses a write whose buffer cannot grow within
	// MaxBuffered at once (busy), as the datanode did before writes
	// waited for room: writers that send most of a largest write and
	// stop then lock well-behaved writes out until their read timeout.
	BusyWhenFull bool
	// KeepsCutWrite stores a write, append or replace whose connection
	// closes before its last packet with the data that arrived, as if a
	// replica being written were finalized at its length when its
	// writer went away, with no recovery: a client that gives up mid-write
	// (or one the datanode cuts off) leaves a block nobody wrote.
	KeepsCutWrite bool
	// SendfileOffsetStuck mishandles a partial sendfile: the count left
	// shrinks but the file offset is not advanced, so the rest of the
	// packet's data is sent again from where the packet's data began.
	SendfileOffsetStuck bool
	// RequestInOneRead assumes a request arrives whole, as a small write
	// does on loopback: one left incomplete by a read is refused as
	// truncated, though the rest of it is still on its way.
	RequestInOneRead bool
	// ReleaseOnThread gives a write's buffer reservation back through
	// its own thread's loop, which closes with the connection: a release
	// still waiting for the lock then never runs, and MaxBuffered shrinks
	// for good (threaded mode).
	ReleaseOnThread bool
	// AcceptSpin retries an accept that failed for want of an fd at
	// once (the queued connection keeps the listener readable) instead
	// of pausing: the acceptor spins while the fd table is full.
	AcceptSpin bool
	// EvictFresh lets a full datanode close a connection accepted
	// moments ago as idle because none of its request has arrived yet,
	// though the request may be on its way: it then meets a closed
	// socket and the client an EOF (no IdleGrace).
	EvictFresh bool
	// FirstOpReused counts a connection's first op as a keep-alive
	// reuse: the count (run read's keepalive_reuses, which validate
	// holds against real sockets) says every op found a kept-alive
	// connection.
	FirstOpReused bool
	// EvictOwnKind makes room for a connection from the idle ones of its
	// own kind only: a peer's (the domain socket's) from the peer
	// endpoint's, a TCP client's from the datanode's, as each side
	// evicted its own before one eviction served both. Idle connections
	// of one kind then hold the shared cap against newcomers of the
	// other until their read timeouts.
	EvictOwnKind bool
	// TCPDrip counts a TCP connection idle only while nothing has
	// arrived on it: one whose request stays partial is busy however
	// long, so a flood dripping requests holds the cap until each
	// connection's RequestTimeout (TCPPartialGrace).
	TCPDrip bool
}

// DefaultDatanodeConfig returns HDFS's defaults.
func DefaultDatanodeConfig() DatanodeConfig {
	return DatanodeConfig{
		Mode:        Reactor,
		Selectors:   1,
		Workers:     4,
		PoolMax:     64,
		PoolMin:     0,
		PoolIdle:    2 * time.Second,
		Keepalive:   4 * time.Second,
		NoDelay:     true,
		ReadTimeout: 60 * time.Second,
		PacketSize:  64 << 10,
		Dir:         "data",
		MaxWrite:    16 << 20,
		MaxBuffered: 64 << 20,

		RequestTimeout: 60 * time.Second,
		SendTimeout:    8 * time.Minute,
		HandleWait:     10 * time.Second,
		StallTimeout:   time.Second,
		MaxConns:       4096,
	}
}

func (c *DatanodeConfig) fill() error {
	d := DefaultDatanodeConfig()
	orDefault(&c.Mode, d.Mode)
	if c.Mode != Reactor && c.Mode != Threaded {
		return fmt.Errorf("server mode %q: want reactor or threaded", c.Mode)
	}
	orDefault(&c.Selectors, d.Selectors)
	orDefault(&c.Workers, d.Workers)
	orDefault(&c.PoolMax, d.PoolMax)
	orDefault(&c.PoolIdle, d.PoolIdle)
	orDefault(&c.Keepalive, d.Keepalive)
	orDefault(&c.ReadTimeout, d.ReadTimeout)
	orDefault(&c.PacketSize, d.PacketSize)
	orDefault(&c.Dir, d.Dir)
	orDefault(&c.MaxWrite, d.MaxWrite)
	if c.TokenKey == nil {
		c.TokenKey = DefaultTokenKey
	}
	orDefault(&c.MaxBuffered, d.MaxBuffered)
	orDefault(&c.RequestTimeout, d.RequestTimeout)
	orDefault(&c.SendTimeout, d.SendTimeout)
	orDefault(&c.HandleWait, d.HandleWait)
	orDefault(&c.StallTimeout, d.StallTimeout)
	orDefault(&c.MaxConns, d.MaxConns)
	switch {
	case c.Selectors < 1 || c.Selectors > 256:
		return fmt.Errorf("selectors %d outside [1, 256]", c.Selectors)
	case c.Workers < 1 || c.Workers > 1024:
		return fmt.Errorf("workers %d outside [1, 1024]", c.Workers)
	case c.PacketSize < BytesPerChecksum || c.PacketSize > MaxPacketData || c.PacketSize%BytesPerChecksum != 0:
		return fmt.Errorf("packet size %d: want a multiple of %d in [%d, %d]", c.PacketSize, BytesPerChecksum, BytesPerChecksum, MaxPacketData)
	case c.Keepalive < 0:
		return fmt.Errorf("negative keep-alive %v", c.Keepalive)
	case c.ReadTimeout < 0:
		return fmt.Errorf("negative read timeout %v", c.ReadTimeout)
	case c.RequestTimeout < 0 || c.SendTimeout < 0 || c.HandleWait < 0 || c.StallTimeout < 0:
		return fmt.Errorf("negative timeout (request %v, send %v, handle wait %v, stall %v)", c.RequestTimeout, c.SendTimeout, c.HandleWait, c.StallTimeout)
	case c.MaxConns < 0:
		return fmt.Errorf("negative connection cap %d", c.MaxConns)
	case c.MaxWrite < 0 || c.MaxBuffered < 0:
		return fmt.Errorf("negative write bound (max write %d, max buffered %d)", c.MaxWrite, c.MaxBuffered)
	}
	return nil
}

// StampRecord is the file in a datanode's directory that keeps the
// high-water mark of generation stamps (BlockStore.KeepStampRecord).
const StampRecord = "stamps"

// writeOut writes out[*off:] to c as far as the send buffer takes it.
// It reports done once everything is written; until then write interest
// is on, so the handler hears when room frees (and off again after, so the
// loop never busy-waits).
func writeOut(c Conn, out []byte, off *int) (done bool, err error) {
	return writeOutMore(c, out, off, false)
}

// writeOutMore is writeOut, with MSG_MORE if more: more bytes follow at
// once, so a partial segment waits for them.
func writeOutMore(c Conn, out []byte, off *int, more bool) (done bool, err error) {
	for *off < len(out) {
		var n int
		var err error
		if more {
			n, err = c.WriteMore(out[*off:])
		} else {
			n, err = c.Write(out[*off:])
		}
		if errors.Is(err, ErrWouldBlock) {
			c.SetWriteInterest(true)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		*off += n
	}
	c.SetWriteInterest(false)
	return true, nil
}

// orDefault sets *v to d when it holds its zero value: configurations
// leave a field zero to mean "the default".
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Datanode serves block reads and writes from a BlockStore.
type Datanode struct {
	cfg   DatanodeConfig
	p     Process
	main  Loop
	store *BlockStore
	pool  *HandlePool
	// lock guards the store, the pool and the fields marked "under lock":
	// they are shared by every selector (and, in threaded mode, thread).
	lock Lock

	ln        Listener
	selectors []*selector
	next      int
	workers   WorkerPool
	conns     []*dnConn // main loop only
	stopped   bool
	// main loop only: what StopThen runs once the datanode is gone, and
	// whether it is (released: the loops, workers and handles are).
	onReleased []func()
	released   bool

	// main loop only: the connection cap (accept, evictIdle)
	accepted uint64
	// byAccept is the conns evictIdle has not asked yet, in accept
	// order (acceptSeq ascending): one it asked is closed if idle, and
	// one busy then is busy for good (it has received a byte), so each
	// walk starts at the front. Asking every busy connection again, at
	// every accept over the cap, was quadratic in the cap (check's seed
	// 1265 ran 27,000 such asks for 4,900 connections, 58% of its tasks).
	byAccept []*dnConn
	// dripping are the connections an ask found holding a request still
	// partial, by since when (oldest first): each is asked again once
	// that request has been partial for TCPPartialGrace.
	dripping []dripping
	// asking is how many of evictIdle's asks are on their way to a
	// connection's loop or back: each may yet close one, so a walk going
	// on after an idle close counts them as closed. (One whose victim
	// is closed and forgotten already counts twice until its answer,
	// which then sees the true count and goes on itself if need be.)
	asking       int
	acceptPaused bool // full: accepting again once a connection closes
	// peers are the connections another endpoint on the acceptor loop
	// holds open (the short-circuit domain socket's: TakePeer), and
	// watched those of them it has handed to a watcher (WatchPeer): an
	// fd each, but no place in MaxConns.
	peers        int
	watched      int
	peerEnd      PeerEndpoint  // that endpoint, if it has registered (SetPeerEndpoint)
	evictT       Timer         // full, with the idle connections too young to close yet
	evictAt      time.Duration // when evictT fires
	acceptErrs   int
	acceptLogged time.Duration

	stats DatanodeStats // main loop only

	// memory accounting for check (sim only, see VisitMemoryChanges)
	memTrack bool
	memDirty []*dnConn // connections whose buffers may have changed
	memWrite int       // write data of the connections it accounts

	// under lock
	peakBlockFiles int
	pressed        bool // a read has waited HandleWait/2: holders park (contend)
	// maxHandleWait is the longest a new read waited for a pool handle
	// it then got (under the lock).
	maxHandleWait time.Duration
	parkedLost    int // see ParkedLost
	// The pool's idle trimming (armTrim): one timer, its callbacks bound
	// once.
	trimArmed       bool
	trimLoop        Loop
	trimT           Deadline
	trimDueF, trimF func()
	buffered        int // write buffer capacity reserved by all connections
	// writers hold reservations of buffered; roomWaiters wait for room
	// to grow their buffers, in the order they asked (both under lock).
	writers, roomWaiters []*dnConn
}

// dripping is a connection whose request has been partial since since
// (evictIdle).
type dripping struct {
	dc    *dnConn
	since time.Duration
}

// DatanodeStats counts what a datanode did.
type DatanodeStats struct {
	Accepted, Ops, Reads, Writes, Errors, KeepaliveReuses, KeepaliveTimeouts int
	BytesSent                                                                int64
	// IdleAsks counts the connections a full datanode asked whether they
	// were idle (evictIdle): at most one ask per connection accepted. (One
	// found holding a partial request is asked again once that request
	// has been partial TCPPartialGrace, at most once a request: not
	// counted.)
	IdleAsks int
}

// selector is one reactor loop and what belongs to it alone: packet
// buffers, which its connections borrow for a packet and give back.
type selector struct {
	loop Loop
	free spares // packet buffers given back
	out  int    // packet buffers lent out
	size int
	// trimSpare drops, every spareTrimEvery, the spares that went unused
	// all that while (trim).
	trimSpare Deadline
	// in holds input buffers no connection uses (and write data
	// buffers, of the same sizes) by size: in[k] those of inputFirst<<k
	// bytes. At their first size (in[0]) a flood of short connections
	// reuses a few instead of allocating one each; grown (8 to 128 KiB),
	// the next write's connection grows into them (putIn).
	in [inClasses]spares
	// holders are its connections that hold a pool handle, so that a
	// read queueing for one can have them told (see contend).
	holders []*dnConn
	mac     TokenMAC
	served  int // connections given to it (main loop only)
	// live counts its connections started and not yet closed (its loop
	// only): the spares are dropped at once only when none is left.
	live int
}

// inputFirst is the capacity of a connection's first input buffer.
const inputFirst = 4096

// inClasses is how many sizes a selector keeps input buffers of: the
// first, and those it grows to, doubling, up to 128 KiB, which holds a
// packet of MaxPacketLen.
const inClasses = 6

// inClass is the index in selector.in of an input buffer of n bytes, or
// false if the selector keeps none of its size.
func inClass(n int) (int, bool) {
	for k := 0; k < inClasses; k++ {
		if n == inputFirst<<k {
			return k, true
		}
	}
	return 0, false
}

// spares is a free list of buffers of one size, which the spare trim
// thins: low is the fewest it held since the trim last looked (mark), so
// that many went unused all along.
type spares struct {
	bufs [][]byte
	low  int
}

func (l *spares) get() ([]byte, bool) {
	b, ok := popFree(&l.bufs)
	if ok {
		l.low = min(l.low, len(l.bufs))
	}
	return b[:0], ok
}

func (l *spares) put(b []byte) { l.bufs = append(l.bufs, b) }

// mark starts a trim's period: what stays free from now on went unused.
func (l *spares) mark() { l.low = len(l.bufs) }

// drop lets go the buffers that went unused since mark, keeping at least
// keep, and marks again.
func (l *spares) drop(keep int) {
	for n := min(l.low, len(l.bufs)-keep); n > 0; n-- {
		popFree(&l.bufs)
	}
	l.mark()
}

// getIn gives an input buffer of n bytes: a spare of that size if the
// selector has one, else a new one.
func (s *selector) getIn(n int) []byte {
	if k, ok := inClass(n); ok {
		if b, ok := s.in[k].get(); ok {
			return b
		}
	}
	return newBuffer(s.loop.Process(), n)
}

// putIn takes back an input buffer no connection uses any more (closed,
// or grown out of), or a write's data buffer (spareWriteData). Grown ones
// are kept for the next connection to grow into: dropped at close, a steady load of writes (a connection each)
// allocated the whole doubling, 4 to 128 KiB, again for every write
// (run rpc --mix 1:1 --file-size 65536: a fifth of the datanode's CPU).
// What stays unused the trim drops (trimSpare), and at rest all of them.
func (s *selector) putIn(b []byte) {
	// Poisoned whole (when a fault asks): a slice still held into a
	// buffer given back would read another connection's bytes once
	// reused. (Its length says little: reads lengthen the input, not
	// inBuf.)
	freed(s.loop.Process(), b[:cap(b)])
	// Each size capped at 64: a burst of writes leaves no more for the
	// trim to drop. The first size is never trimmed, only capped.
	if k, ok := inClass(cap(b)); ok && len(s.in[k].bufs) < maxSpareBufs {
		s.in[k].put(b[:0])
		if k > 0 && !s.atRest() && !s.trimSpare.Armed() {
			s.armTrim()
		}
	}
}

// grownSpares is the number of grown input buffers kept.
func (s *selector) grownSpares() int {
	n := 0
	for _, l := range s.in[1:] {
		n += len(l.bufs)
	}
	return n
}

func (s *selector) getBuf() []byte {
	s.out++
	if b, ok := s.free.get(); ok {
		return b
	}
	return newBuffer(s.loop.Process(), s.size)
}

func (s *selector) putBuf(b []byte) {
	freed(s.loop.Process(), b)
	s.out--
	s.free.put(b)
	if s.atRest() {
		return
	}
	if len(s.free.bufs) > maxSpareBufs && !s.trimSpare.Armed() {
		s.armTrim()
	}
}

// armTrim starts the spare trim's second: what stays free from now until
// it runs goes.
func (s *selector) armTrim() {
	s.markSpares()
	s.trimSpare.Arm(s.loop, spareTrimEvery, s.trim)
}

func (s *selector) markSpares() {
	s.free.mark()
	for k := range s.in {
		s.in[k].mark()
	}
}

// excessSpares reports whether the selector keeps spares the trim would
// drop were they unused: packet buffers past maxSpareBufs, or grown
// input buffers.
func (s *selector) excessSpares() bool {
	return len(s.free.bufs) > maxSpareBufs || s.grownSpares() > 0
}

// A selector keeps the packet buffers its connections give back for the
// next to borrow, as many as were ever lent at once: after 150 readers
// that stopped reading had each taken one, 150 buffers of 66 KB (9.9 MB)
// stayed for the datanode's life, and at the default connection cap
// (4,096) some 270 MB could. Past maxSpareBufs, every spareTrimEvery it
// drops those that went unused all the while, so what it keeps follows
// what its connections use. (A plain cap made busy runs allocate
// buffers again and again: run read with 512 clients lends hundreds at
// once, and took 1.5 times the CPU.)
const (
	maxSpareBufs   = 64
	spareTrimEvery = time.Second
)

// atRest drops the spares past maxSpareBufs at once when the selector
// has no connection and no buffer lent: nothing will use them, and the
// trim's timer must not outlive the connections. Only then: a busy
// selector's lent count falls to zero between bursts, and dropping the
// spares there made every burst allocate its buffers again (bench
// hdfs-918 in sim, 128 clients: the reactor's 775 MB/s fell to 693).
func (s *selector) atRest() bool {
	if s.out > 0 || s.live > 0 || !s.excessSpares() {
		return false
	}
	s.markSpares()
	s.trim()
	return true
}

// trim drops the buffers that stayed free since the last trim, packet
// buffers down to maxSpareBufs and grown input buffers all, and looks
// again in spareTrimEvery while there are more.
func (s *selector) trim() {
	s.free.drop(maxSpareBufs)
	for k := 1; k < inClasses; k++ {
		s.in[k].drop(0)
	}
	if s.excessSpares() {
		s.trimSpare.Arm(s.loop, spareTrimEvery, s.trim)
	} else {
		s.trimSpare.Stop()
	}
}

// StartDatanode starts a datanode in process p (on the calling loop, which
// becomes its acceptor) over the blocks already in cfg.Dir.
func StartDatanode(p Process, loop Loop, cfg DatanodeConfig) (*Datanode, error) {
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("datanode: %w", err)
	}
	dn := &Datanode{cfg: cfg, p: p, main: loop, lock: p.NewLock("datanode")}
	dn.store = NewBlockStore(p.Disk(), cfg.Dir)
	dn.store.KeepStampRecord(StampRecord)
	if err := dn.store.Load(); err != nil {
		return nil, fmt.Errorf("datanode: %w", err)
	}
	if cfg.Mode == Reactor {
		pool, err := NewHandlePool(dn.store, HandlePoolConfig{
			Max: cfg.PoolMax, Min: cfg.PoolMin, IdleTimeout: cfg.PoolIdle,
			KeyIgnoresStamp: cfg.Bugs.PoolKeyIgnoresStamp, CloseInUse: cfg.Bugs.PoolClosesInUse,
			SharersSleep: cfg.Bugs.PoolSharersSleep, RetakeAppendedFails: cfg.Bugs.PoolRetakeAppendedFails, RetireIdle: cfg.Bugs.PoolRetireIdle,
			RetakeWakeLost: cfg.Bugs.PoolRetakeWakeLost,
		})
		if err != nil {
			return nil, fmt.Errorf("datanode: %w", err)
		}
		dn.pool = pool
		for i := 0; i < cfg.Selectors; i++ {
			l, err := p.NewLoop(fmt.Sprintf("selector-%d", i))
			if err != nil {
				dn.closeLoops()
				return nil, fmt.Errorf("datanode: selector: %w", err)
			}
			dn.selectors = append(dn.selectors, &selector{loop: l, size: PacketHeaderLen + MaxPacketLen + 64})
		}
		if !cfg.InlineIO {
			dn.workers = p.NewWorkerPool("worker", cfg.Workers)
		}
	}
	ln, err := p.Listen("tcp", cfg.Addr, 128, loop)
	if err != nil {
		dn.closeLoops()
		return nil, fmt.Errorf("datanode: %w", err)
	}
	dn.ln = ln
	ln.SetHandler(dn.accept)
	return dn, nil
}

func (dn *Datanode) closeLoops() {
	for _, s := range dn.selectors {
		s.loop.Close()
	}
	dn.selectors = nil
	if dn.workers != nil {
		dn.workers.Close()
		dn.workers = nil
	}
}

// Addr is where the datanode listens.
func (dn *Datanode) Addr() string { return dn.ln.Addr() }

// Store is the datanode's block store. Use it only from the acceptor loop
// while no client is connected (setting up a run), or under the lock.
func (dn *Datanode) Store() *BlockStore { return dn.store }

// Lock is the lock that guards the store (and what else shares it, as
// the short-circuit registry does).
func (dn *Datanode) Lock() Lock { return dn.lock }

// TokenKey is the key the datanode checks block tokens with.
func (dn *Datanode) TokenKey() []byte { return dn.cfg.TokenKey }

// Main is the datanode's acceptor loop.
func (dn *Datanode) Main() Loop { return dn.main }

// Process is the datanode's process.
func (dn *Datanode) Process() Process { return dn.p }

// Pool is the handle pool (nil in threaded mode).
func (dn *Datanode) Pool() *HandlePool { return dn.pool }

// Stats returns the datanode's counters, including those of connections
// closed so far (call it on the acceptor loop).
func (dn *Datanode) Stats() DatanodeStats { return dn.stats }

func (s *DatanodeStats) add(o DatanodeStats) {
	s.Accepted += o.Accepted
	s.Ops += o.Ops
	s.Reads += o.Reads
	s.Writes += o.Writes
	s.Errors += o.Errors
	s.KeepaliveReuses += o.KeepaliveReuses
	s.KeepaliveTimeouts += o.KeepaliveTimeouts
	s.BytesSent += o.BytesSent
	s.IdleAsks += o.IdleAsks
}

// OpenBlockFiles is the number of block and meta fds open for reads.
func (dn *Datanode) OpenBlockFiles() int {
	if dn.pool != nil {
		return dn.pool.Open()
	}
	byKind := dn.p.FDs().ByKind
	return byKind[FDBlockFile] + byKind[FDMetaFile]
}

// ParkedLost is how many reads parked under handle contention were lost
// because their handle was closed and then their block replaced or
// deleted: their replica's bytes were gone, so their clients got a short
// stream. (A block only appended to keeps them: see Retake.) It is the
// price of bounding fds while clients stall; check accepts such a loss
// only where a replace or delete of the block overlapped the read.
// Like PeakBlockFiles it is read without the lock: for sim, or a
// datanode at rest.
func (dn *Datanode) ParkedLost() int { return dn.parkedLost }

// MaxHandleWait is the longest a new read (not one resuming after it
// parked) waited for a pool handle it then got. Read without the lock,
// like ParkedLost.
func (dn *Datanode) MaxHandleWait() time.Duration { return dn.maxHandleWait }

// PeakBlockFiles is the most block and meta fds ever open for reads.
func (dn *Datanode) PeakBlockFiles() int {
	if dn.pool != nil {
		return dn.pool.PeakOpen
	}
	return dn.peakBlockFiles
}

// BuffersOut is the number of packet buffers lent to connections.
func (dn *Datanode) BuffersOut() int {
	n := 0
	for _, s := range dn.selectors {
		n += s.out
	}
	return n
}

// SelectorsLive is the number of connections the selectors count as
// theirs (started on a selector's loop, not closed): at rest it must be
// zero, or a selector keeps its spares for connections that are gone.
// Only a single-threaded world (sim) may call it.
func (dn *Datanode) SelectorsLive() int {
	n := 0
	for _, s := range dn.selectors {
		n += s.live
	}
	return n
}

// SpareBuffers is the number of packet buffers the selectors keep for
// reuse, lent to no connection. It reads every selector's state, so only
// a single-threaded world (sim) may call it.
func (dn *Datanode) SpareBuffers() int {
	n := 0
	for _, s := range dn.selectors {
		n += len(s.free.bufs)
	}
	return n
}

// SpareInputBuffers is the number of input buffers the selectors keep for
// the next connections: at their first size, and grown (a write's).
func (dn *Datanode) SpareInputBuffers() (first, grown int) {
	for _, s := range dn.selectors {
		first += len(s.in[0].bufs)
		grown += s.grownSpares()
	}
	return first, grown
}

// Holders is the number of connections the selectors list as holding a
// pool handle (those contend tells to give it back).
func (dn *Datanode) Holders() int {
	n := 0
	for _, s := range dn.selectors {
		n += len(s.holders)
	}
	return n
}

// Conns is the number of open connections.
func (dn *Datanode) Conns() int { return len(dn.conns) }

// SelectorConns is how many connections each selector has been given
// (none in threaded mode): round robin, so they differ by at most one.
func (dn *Datanode) SelectorConns() []int {
	n := make([]int, len(dn.selectors))
	for i, s := range dn.selectors {
		n[i] = s.served
	}
	return n
}

// ReservedWriteBytes is the write buffer capacity reserved against
// MaxBuffered (sim only, like VisitMemory: it reads a field under the
// lock).
func (dn *Datanode) ReservedWriteBytes() int { return dn.buffered }

// WriteRoomLists is how many connections the datanode lists as holding
// write room and as waiting for some (both guarded by Lock, so in the
// real world it is called under it): both are 0 once no write is in
// progress.
func (dn *Datanode) WriteRoomLists() (writers, waiters int) {
	return len(dn.writers), len(dn.roomWaiters)
}

// Stop closes the listener and every connection, and releases the loops,
// workers and idle handles: the datanode is gone, its process remains.
// It returns at once; the connections close on their own loops and the
// rest goes after them.
func (dn *Datanode) Stop() { dn.StopThen(nil) }

// StopThen is Stop, calling released on the loop the datanode was
// started with (Main) once the loops, workers and idle handles are gone:
// a caller that counts the process's fds or threads waits for it, not
// for a time (a real loop running late had not yet released them).
// Called on that loop, as Stop is.
func (dn *Datanode) StopThen(released func()) {
	if released != nil {
		if dn.released {
			dn.main.Post(released)
		} else {
			dn.onReleased = append(dn.onReleased, released)
		}
	}
	if dn.stopped {
		return
	}
	dn.stopped = true
	dn.ln.Close()
	if dn.evictT != nil {
		dn.evictT.Stop()
		dn.evictT = nil
	}
	// Each connection is closed on its own loop; the loops and the pool go
	// once every connection has closed and given back its handle (the
	// lock keeps that order: a connection's release is queued first).
	pending := len(dn.conns) + 1
	done := func() {
		pending--
		if pending > 0 {
			return
		}
		dn.lock.Do(dn.main, func() {
			if dn.pool != nil {
				dn.pool.CloseAll()
			}
			dn.main.Post(func() {
				dn.closeLoops()
				dn.released = true
				for _, f := range dn.onReleased {
					f()
				}
				dn.onReleased = nil
			})
		})
	}
	for _, dc := range append([]*dnConn(nil), dn.conns...) {
		dc.loop.Post(func() {
			dc.close("shutdown")
			dn.lock.Do(dc.loop, func() { dn.main.Post(done) })
		})
	}
	done()
}

// accept runs on the acceptor loop while connections wait.
func (dn *Datanode) accept() {
	for !dn.stopped {
		if dn.connsFull() {
			dn.ln.SetHandler(nil)
			dn.acceptPaused = true
			return
		}
		c, err := dn.ln.Accept()
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if err != nil {
			// EMFILE leaves the connection queued; a level-triggered
			// listener would spin, so pause accepting for a moment,
			// and log at most once a second.
			dn.acceptErrs++
			if now := dn.main.Now(); dn.cfg.Bugs.NoConnCap || dn.acceptLogged == 0 || now-dn.acceptLogged >= time.Second {
				dn.p.Log("accept-error", "err", err.Error(), "failures", dn.acceptErrs)
				dn.acceptLogged, dn.acceptErrs = now, 0
			}
			if dn.cfg.Bugs.AcceptSpin {
				return // the listener stays readable: accept runs again at once
			}
			dn.ln.SetHandler(nil)
			dn.main.AfterFunc(10*time.Millisecond, func() {
				if !dn.stopped {
					dn.ln.SetHandler(dn.accept)
				}
			})
			return
		}
		dn.stats.Accepted++
		if err := c.SetNoDelay(dn.cfg.NoDelay); err != nil {
			c.Close()
			continue
		}
		dn.serve(c, nil, true)
		if !dn.cfg.Bugs.NoConnCap && len(dn.conns) > dn.connCap() {
			// Over the cap: close an idle connection to make room.
			dn.evictIdle(dn.conns[len(dn.conns)-1], false)
		} else if !dn.cfg.Bugs.NoConnCap && dn.needsRoom(false) {
			// A peer waits for room: this one too may turn out the
			// idler to close once it is old enough (no newest: nothing
			// is reset for a peer, ResetWhenFull or not).
			dn.evictIdle(nil, false)
		}
	}
}

// connsFull reports whether the datanode serves as many connections as
// it may, with the room it keeps for making room (connections served
// over the cap while idle ones are closed) used up. It then leaves new
// connections in the listen backlog, unread, until one closes: closing
// them would reset those that already sent their request.
func (dn *Datanode) connsFull() bool {
	return !dn.cfg.Bugs.NoConnCap && !dn.cfg.Bugs.ResetWhenFull && len(dn.conns) >= dn.connCap()+dn.overCap()
}

// overCap is how many connections the datanode serves past its cap while
// it closes idle ones: within the fds it keeps in reserve.
func (dn *Datanode) overCap() int {
	if dn.pool == nil {
		return 6 // 5 fds each, of the 64 kept for writes
	}
	return 16
}

// connCap is the most connections the datanode serves at once: MaxConns,
// lowered so that fds stay in reserve for the listener, the loops and
// block files (a thread per connection also needs its loop's fds and its
// own block files); another endpoint's peers (TakePeer) take their share
// of both.
func (dn *Datanode) connCap() int { return max(1, dn.capWith(dn.peers, dn.watched)) }

// capWith is the cap on connections with peers taking places and watched
// peers holding fds beside them.
func (dn *Datanode) capWith(peers, watched int) int {
	// Writes open their files outside the pool: keep room for them too.
	reserve, perConn := 64, 1
	if dn.pool != nil {
		reserve += dn.cfg.PoolMax + 2*len(dn.selectors)
	} else {
		perConn = 5 // socket, the thread's epoll and eventfd, data and meta
	}
	return min(dn.cfg.MaxConns-peers, (dn.p.FDs().Limit-reserve-peers-watched)/perConn)
}

// TakePeer counts a connection another endpoint accepted (the
// short-circuit domain socket's) against the datanode's cap, as HDFS's
// DataXceiverServer counts every peer, domain or TCP, against
// dfs.datanode.max.transfer.threads; it reports false, counting nothing,
// when the cap leaves no room for it beside the datanode's own: the
// endpoint then makes room (MakePeerRoom) or keeps it waiting for room,
// and closes it, as HDFS closes a peer past maxXceiverCount, only when
// no peer fits at all (PeersFit).
// A peer holds an fd as a TCP connection does, so without this every
// local user, each within the endpoint's own bounds, adds to a count
// that nothing bounds, until block opens and accepts fail with EMFILE.
// A peer takes one place, as a reactor's connection does; a threaded
// datanode's adopted peer costs its thread's fds too, which the cap
// counts only once Adopt has made it a connection (no driver runs the
// domain endpoint beside a threaded datanode). Acceptor loop only;
// ReleasePeer gives the room back.
func (dn *Datanode) TakePeer() bool {
	if !dn.PeerRoom() {
		return false
	}
	dn.peers++
	return true
}

// PeerRoom reports whether TakePeer would find room: the cap less the
// peers, this one included, must exceed the datanode's connections, so
// that peers never take the last place from TCP clients. Acceptor loop
// only.
func (dn *Datanode) PeerRoom() bool {
	return dn.cfg.Bugs.NoConnCap || len(dn.conns) < dn.capWith(dn.peers+1, dn.watched)
}

// PeersFit reports whether the cap has room for a peer at all, with no
// connection or peer open: false when MaxConns, or an fd table too small
// for the fds kept in reserve, the peer's own and one TCP connection's,
// leaves none beside the last place kept for TCP clients. Then no peer
// ever gets in (TakePeer fails whatever is open), and one kept waiting
// for room would wait for good, its fd held after its client gave up.
// (True means one fits. Where MaxConns binds that is enough for a
// short-circuit read, whose segment's connection gives its place back
// once the segment is granted (WatchPeer) before its fd request needs
// one; where the fd table binds, the segment's fd still counts, so a
// read needs room for two, which this does not ask: with room for one,
// the fd request waits out its timeout and the read goes over TCP.)
func (dn *Datanode) PeersFit() bool {
	return dn.cfg.Bugs.NoConnCap || dn.capWith(1, 0) > 0
}

// ReleasePeer gives back a closed peer's room (an adopted one's passes to
// its connection: Adopt). Acceptor loop only.
func (dn *Datanode) ReleasePeer() {
	dn.peers--
	dn.acceptIfRoom()
}

// WatchPeer gives back a peer's place in MaxConns while its fd stays
// counted: the endpoint keeps the connection only to learn when its
// client goes (a short-circuit segment's, as HDFS's DataXceiver hands a
// REQUEST_SHORT_CIRCUIT_SHM socket to its DomainSocketWatcher and
// releases the peer, so that dfs.datanode.max.transfer.threads counts
// it no longer). Counted as a place, every client's segment would hold
// one for good: at MaxConns 2 a reader's fd request found none (the
// segment's connection held one place, and PeerRoom keeps the last for
// TCP clients) and waited out its minute. The fd still counts, so peers
// handed over cannot fill the fd table (local users squatting segments
// together, each within its per-user bound). ReleaseWatchedPeer gives
// the fd's room back when the connection closes. Acceptor loop only.
func (dn *Datanode) WatchPeer() {
	dn.peers--
	dn.watched++
	dn.acceptIfRoom()
}

// ReleaseWatchedPeer gives back a closed watched peer's fd (WatchPeer).
// Acceptor loop only.
func (dn *Datanode) ReleaseWatchedPeer() {
	dn.watched--
	dn.acceptIfRoom()
}

// acceptIfRoom accepts again, if it had stopped at the cap and a
// connection or a peer has given back room.
func (dn *Datanode) acceptIfRoom() {
	if dn.acceptPaused && !dn.connsFull() && !dn.stopped {
		dn.acceptPaused = false
		dn.ln.SetHandler(dn.accept)
	}
}

// IdleGrace is how long a connection must have been open, with nothing
// received, before a full datanode counts it idle and may close it. A
// client sends its request as soon as it connects, but the request can
// arrive well after the accept (the handshake's last ACK completes it
// first, and a busy host works through its input queue in order): a
// connection accepted a moment ago that has not yet sent a byte is not
// known to be idle, and closing it would drop a request on its way.
//
// It is short because while nothing is old enough a full datanode stops
// accepting: a flood of idle connections (check's arrive 50 µs apart)
// then fills the listen backlog at 20 a millisecond, and a client's SYN
// dropped from a full backlog is sent again only after TCP's 1 s initial
// RTO. With 10 ms rapid's seed 2054220441202865832 overflowed the backlog
// of 128 so (a read took 1.006 s); 2 ms queues about 40. The longest gap
// from accept to a client's first byte seen in check's cases is about
// 100 µs (a datanode working through requests sent a byte a segment).
const IdleGrace = 2 * time.Millisecond

// TCPPartialGrace is how long a TCP connection's request must have stayed
// partial before a full datanode counts the connection idle since its
// first byte and may close it. Each byte restarts the read timeout and
// only RequestTimeout (up to a minute) bounds a whole request, so without
// it connections dripping requests (check's drip flood) held the cap
// that long each time they came. IdleGrace's 2 ms, which the domain
// socket uses for the same test, is too short here: an honest client
// writes its request whole, but TCP may deliver it in pieces — check's
// fragmentation 100 µs apart (a request in 10 to 30 ms at a byte a
// piece), a client with Nagle on holding a second write for the first's
// ACK, which Linux's delayed ACK holds 40 ms at first. It stays under a
// delayed ACK grown to 200 ms and the 200 ms minimum RTO: a request late
// so is closed if the datanode is full and it is the oldest partial one,
// as one whose only segment was lost already is under IdleGrace. A longer
// grace holds a flood's clients longer: a client waits behind the
// drippers ahead of it in the listen backlog a grace per cap's worth of
// them, and a flood arriving faster than the cap's room per grace
// overflows the backlog (check's drip floods arrived 50 µs apart; at
// 100 ms 12 of 1,000 forced ones failed hostile-availability, at 200 ms
// 29, mostly clients' 150 and 500 ms timeouts and SYNs dropped).
const TCPPartialGrace = 100 * time.Millisecond

// PeerEndpoint is the other endpoint whose connections count against the
// datanode's cap (TakePeer: the short-circuit domain socket's), as seen
// by the datanode's eviction: with the cap shared, room must come from
// the oldest idle connection of either kind, or idle connections of one
// kind hold the cap against clients of the other until their read
// timeouts. Its methods run on the acceptor loop.
type PeerEndpoint interface {
	// OldestIdle is since when the longest idle of its connections
	// counted by TakePeer has been idle (ok false: none): silent since
	// its accept, or holding a request still partial since its first
	// byte (an honest client writes one whole).
	OldestIdle() (since time.Duration, ok bool)
	// CloseIdle reads what has arrived on that connection and closes it
	// if it is still as idle (giving its room back, ReleasePeer); one
	// that turns out busy is idle no more.
	CloseIdle()
	// Waiting reports whether it keeps a connection waiting for room
	// (MakePeerRoom found none at once).
	Waiting() bool
	// Resume lets the waiting connection try again: there may be room.
	Resume()
}

// SetPeerEndpoint registers the endpoint whose peers (TakePeer) evictIdle
// may close for room, and tells of room (Resume). Acceptor loop only.
func (dn *Datanode) SetPeerEndpoint(e PeerEndpoint) { dn.peerEnd = e }

// MakePeerRoom closes, for a peer TakePeer found no room for, the oldest
// idle connections of either kind (evictIdle) until it has room: a peer's
// at once, one of the datanode's on its loop; if none is old enough yet,
// once it is. The endpoint then keeps its connection waiting
// (PeerEndpoint.Waiting) until Resume. Acceptor loop only.
func (dn *Datanode) MakePeerRoom() {
	if !dn.cfg.Bugs.NoConnCap {
		dn.evictIdle(nil, true)
	}
}

// needsRoom reports whether the datanode serves past its cap, or a peer
// (asking now, or kept waiting) finds no room.
func (dn *Datanode) needsRoom(peerAsks bool) bool {
	if len(dn.conns) > dn.connCap() {
		return true
	}
	return dn.peerShort() || peerAsks && dn.peerEnd != nil && !dn.PeerRoom()
}

// peerShort reports whether the peer endpoint keeps a connection waiting
// for room that is not there yet.
func (dn *Datanode) peerShort() bool {
	return dn.peerEnd != nil && dn.peerEnd.Waiting() && !dn.PeerRoom()
}

// evictIdle closes the oldest idle connection other than newest — one
// that never sent a byte in the IdleGrace since it was accepted — of the
// datanode's, asking each connection's loop in accept order, or of the
// peer endpoint's (PeerEndpoint.OldestIdle, a request kept partial
// counting as idle there), whichever has been idle longer.
// Connections kept alive between ops are left to their keep-alive timeout:
// a client's cached peer is worth keeping, and closing it would send the
// client to the back of a flooded listen queue. If none is idle, nothing
// is closed: a connection that has sent a request is never reset to make
// room (connsFull stops accepting instead); if some are only too young to
// tell, evictIdle runs again once the oldest of them is old enough. Runs
// on the acceptor loop; peerAsks: for a peer that TakePeer just refused.
//
// A connection leaves byAccept when it is asked, so each pick is the
// oldest not yet asked, and none is asked twice: an idle one is closed,
// and a busy one stays busy.
func (dn *Datanode) evictIdle(newest *dnConn, peerAsks bool) {
	// (A connection whose thread could not start has no loop; it is
	// closing already.)
	j := slices.IndexFunc(dn.byAccept, func(dc *dnConn) bool { return dc != newest && dc.loop != nil })
	var oldest *dnConn
	if j >= 0 {
		oldest = dn.byAccept[j]
	}
	if oldest == nil && dn.cfg.Bugs.ResetWhenFull && newest != nil && !dn.stopped {
		// (A walk the evict timer started has no newest to reset.)
		dn.p.Log("dn-full-evict", "conn", newest.id, "newest", true)
		newest.loop.Post(func() { newest.close("datanode full") })
		return
	}
	if dn.stopped || !dn.needsRoom(peerAsks) {
		return
	}
	// (The catalogued EvictOwnKind bug: a peer's room from peers only, a
	// TCP client's from the datanode's only.)
	ownKind := dn.cfg.Bugs.EvictOwnKind
	forPeer := ownKind && (peerAsks || dn.peerShort())
	if forPeer {
		oldest = nil
	}
	// The datanode's candidate: the oldest not yet asked, or the one
	// whose request has been partial longest, whichever may be closed
	// first.
	var tcpRipe time.Duration
	if oldest != nil {
		tcpRipe = oldest.acceptAt + IdleGrace
	}
	drip := false
	if len(dn.dripping) > 0 && !forPeer {
		if r := dn.dripping[0].since + TCPPartialGrace; oldest == nil || r < tcpRipe {
			drip, tcpRipe = true, r
		}
	}
	tcp := oldest != nil || drip
	var peerAt time.Duration
	peer := false
	if dn.peerEnd != nil && (!ownKind || forPeer) {
		// (A walk over the endpoint's connections: only when room is
		// short.)
		peerAt, peer = dn.peerEnd.OldestIdle()
		// (Accepted at the same instant: the datanode's goes first.)
		peer = peer && (!tcp || peerAt+IdleGrace < tcpRipe)
	}
	if !tcp && !peer {
		return
	}
	ripe := tcpRipe
	if peer {
		ripe = peerAt + IdleGrace
	}
	if (drip && !peer || !dn.cfg.Bugs.EvictFresh) && dn.main.Now() < ripe {
		// Accepted in order, and partial since in order, so every
		// other candidate is younger still: look again when this one
		// is old enough (sooner, if one came since that will be).
		if dn.evictT == nil || ripe < dn.evictAt {
			if dn.evictT != nil {
				dn.evictT.Stop()
			}
			dn.evictAt = ripe
			dn.evictT = dn.main.AfterFunc(ripe-dn.main.Now(), func() {
				dn.evictT = nil
				dn.evictIdle(nil, false)
			})
		}
		return
	}
	if peer {
		// Closed on this loop, or busy and a candidate no more: look
		// again while room is still short.
		dn.peerEnd.CloseIdle()
		dn.evictIdle(newest, peerAsks)
		return
	}
	// Asked once: a concurrent walk (the next accept's) picks the next
	// one, and whatever the answer this one is no candidate after it,
	// unless it holds a partial request (dripping).
	victim := oldest
	if drip {
		victim = dn.dripping[0].dc
		dn.dripping = slices.Delete(dn.dripping, 0, 1)
	} else {
		dn.byAccept = slices.Delete(dn.byAccept, j, j+1)
		dn.stats.IdleAsks++
	}
	dn.asking++
	victim.loop.Post(func() {
		// Read what has arrived first: a request in the socket makes
		// it busy, and closing it unread would reset it; so would
		// closing one whose partial request has just come whole.
		open := !victim.closed
		if open && victim.phase == phaseRequest && (len(victim.in) == 0 || victim.dripRipe()) {
			victim.readInput()
		}
		// Busy for good: it has received a byte (a request under way,
		// or a connection kept alive after its ops), unless that
		// request stays partial (TCPPartialGrace).
		idle := !victim.closed && victim.phase == phaseRequest && len(victim.in) == 0 && victim.opsOnConn == 0
		partial := !victim.closed && victim.partial && !dn.cfg.Bugs.TCPDrip
		since := victim.partialAt
		if victim.closed {
			// Its client had gone, found by this read or before the
			// ask (its forget still queued): room made either way.
			// Going on would close another idler for nobody once a
			// concurrent walk (the next accept's) closes its own.
			idle = true
		} else if idle {
			dn.p.Log("dn-full-evict", "conn", victim.id, "ops", victim.opsOnConn)
			victim.close("datanode full")
		} else if victim.dripRipe() {
			dn.p.Log("dn-full-evict", "conn", victim.id, "ops", victim.opsOnConn, "partial", len(victim.in))
			victim.close("datanode full")
			idle, partial = true, false
		}
		dn.main.Post(func() {
			dn.asking--
			if partial && victim.index >= 0 && !dn.stopped {
				// Asked again once partial long enough: a flood
				// dripping its requests holds the cap no longer.
				i, _ := slices.BinarySearchFunc(dn.dripping, since, func(d dripping, t time.Duration) int {
					return cmp.Compare(d.since, t+1) // (after those partial as long)
				})
				dn.dripping = slices.Insert(dn.dripping, i, dripping{victim, since})
			}
			// A peer kept waiting may need more than one closed: it
			// leaves TCP's last place free. So may the walk the evict
			// timer started, the one walk for every connection that
			// came too young to close (idlers dialed at once): it goes
			// on while the datanode serves past its cap less the asks
			// still on their way (a concurrent walk's), which may close
			// as many; without them counted it would close one more
			// than the cap needs.
			if (!idle || dn.peerShort() || len(dn.conns)-dn.asking > dn.connCap()) && !dn.stopped {
				dn.evictIdle(newest, false)
			}
		})
	})
}

// dripRipe reports whether dc's request has stayed partial for
// TCPPartialGrace: a full datanode may close it as idle.
func (dc *dnConn) dripRipe() bool {
	return dc.partial && dc.loop.Now()-dc.partialAt >= TCPPartialGrace && !dc.dn.cfg.Bugs.TCPDrip
}

// acceptIndex is where the connection accepted as seq is, or would be, in
// byAccept.
func (dn *Datanode) acceptIndex(seq uint64) (int, bool) {
	return slices.BinarySearchFunc(dn.byAccept, seq, func(dc *dnConn, seq uint64) int {
		return cmp.Compare(dc.acceptSeq, seq)
	})
}

// Adopt serves c, a connection accepted elsewhere (the short-circuit
// domain socket's data traffic), as if the datanode had accepted it; in
// holds the bytes already read from it. With peer, c was counted by
// TakePeer, and its room passes to the connection in the same step: in
// between, counted by neither, it would leave room the cap does not have
// for the next peer or accept (a burst of hand-overs took the datanode
// past its cap to a full fd table).
func (dn *Datanode) Adopt(c Conn, in []byte, peer bool) {
	dn.main.Post(func() {
		if peer {
			dn.peers--
		}
		if dn.stopped {
			_ = c.Close()
			return
		}
		dn.stats.Accepted++
		dn.serve(c, in, false)
	})
}

// serve starts a connection on a selector (or its own thread). Runs on the
// acceptor loop. A TCP connection's reads use sendfile unless
// NoTransferTo.
func (dn *Datanode) serve(c Conn, in []byte, tcp bool) {
	dn.accepted++
	dc := &dnConn{dn: dn, c: c, id: c.ID(), index: len(dn.conns), acceptSeq: dn.accepted, acceptAt: dn.main.Now(),
		transferTo: tcp && !dn.cfg.NoTransferTo}
	dn.conns = append(dn.conns, dc)
	dn.byAccept = append(dn.byAccept, dc)
	dc.memChanged()
	if dn.cfg.Mode == Threaded {
		l, err := dn.p.NewLoop("xceiver")
		if err != nil {
			dn.p.Log("thread-error", "err", err.Error())
			dc.close("no thread")
			return
		}
		dc.loop, dc.thread = l, true
	} else {
		dc.sel = dn.selectors[dn.next%len(dn.selectors)]
		dn.next++
		dc.sel.served++
		dc.loop = dc.sel.loop
	}
	loop := dc.loop
	loop.Post(func() {
		if dc.closed {
			return
		}
		if dc.sel != nil {
			dc.sel.live++
			dc.live = true
		}
		c.SetHandler(loop, dc.onEvent)
		c.SetReadInterest(true) // an adopted connection may have had it off
		if len(in) > 0 {
			dc.in = compactInput(dc.inBuf, dc.in)
			dc.in = append(dc.in, in...)
			dc.inBuf = dc.in
			dc.memChanged()
			dc.process()
		}
		dc.watchInput()
	})
}

// forget removes a closed connection from the datanode's list; it runs on
// the acceptor loop, which owns the list.
func (dn *Datanode) forget(dc *dnConn) {
	i := dc.index
	if i < 0 || i >= len(dn.conns) || dn.conns[i] != dc {
		return
	}
	last := dn.conns[len(dn.conns)-1]
	dn.conns[i] = last
	last.index = i
	if !dn.cfg.Bugs.ClosedConnsReachable {
		// The freed slot would keep the last connection reachable.
		dn.conns[len(dn.conns)-1] = nil
	}
	dn.conns = dn.conns[:len(dn.conns)-1]
	if j, ok := dn.acceptIndex(dc.acceptSeq); ok { // (not if evictIdle asked it)
		// (Delete clears the freed slot: a forgotten connection stays
		// reachable from neither list.)
		dn.byAccept = slices.Delete(dn.byAccept, j, j+1)
	}
	if len(dn.dripping) > 0 {
		if k := slices.IndexFunc(dn.dripping, func(d dripping) bool { return d.dc == dc }); k >= 0 {
			dn.dripping = slices.Delete(dn.dripping, k, k+1)
		}
	}
	dc.index = -1
	dc.memChanged()
	dn.acceptIfRoom()
	if dn.peerEnd != nil && !dn.stopped && dn.PeerRoom() {
		// A peer kept waiting for room (evictIdle closed an idle
		// connection of ours for it) gets in now.
		dn.peerEnd.Resume()
	}
}

type connPhase uint8

const (
	phaseRequest   connPhase = iota // waiting for (the rest of) a request
	phaseOpening                    // acquiring the block
	phaseSending                    // streaming packets
	phaseStatus                     // waiting for the client's final status
	phaseReceiving                  // receiving a write's packets
	phaseApplying                   // applying a write
	phaseFlushing                   // writing the last bytes before closing
	phaseReserving                  // reserving room for a write's data
)

// dnConn is one client connection on a datanode. All its fields belong to
// its loop.
type dnConn struct {
	dn     *Datanode
	c      Conn
	id     uint64 // c.ID(), kept here: the per-event memory and phase checks read it for every connection
	loop   Loop
	sel    *selector
	thread bool
	live   bool // counted in sel.live (started on its loop, not closed)
	index  int  // in dn.conns (acceptor loop)

	phase   connPhase
	in      []byte // input not yet taken: the end of inBuf's bytes
	inBuf   []byte // the input buffer; in moves to its front before a read (compactInput)
	req     Request
	handle  *Handle     // reactor: the pooled replica
	files   *BlockFiles // threaded: this request's own files
	replica *BlockFiles // whichever of the two is in use
	resp    Response
	next    int64 // block offset of the next packet
	end     int64 // end of the range to send
	seq     int64
	first   bool

	out    []byte // bytes to write; from the selector's buffers or buf
	outOff int
	// With transferTo, a packet's data goes from the replica's data file
	// (sfLeft bytes at sfOff) between out[:split] (response, header and
	// checksums) and out[split:] (the last packet's header).
	transferTo bool
	split      int
	sfOff      int64
	sfLeft     int
	// unparking: a parked read asked for its replica back to send the
	// rest of a packet's data (flush).
	unparking bool
	// lost: contended while its handle's block was replaced or deleted,
	// the read is being closed (park), counted once in ParkedLost.
	lost     bool
	lent     bool // out is a selector buffer
	buf      []byte
	working  bool
	afterOut func() // what to do once out is written
	outLast  bool   // out is a read's last packet (packetSent)

	job                         packetJob // the packet being built (sendNext)
	buildF, builtF, packetSentF func()    // method values, bound once
	readTimeoutF                func()    // dc.readTimedOut, bound once: watchInput re-arms at every read

	st        DatanodeStats // this connection's share, added to dn.stats at close
	wdata     []byte        // a write op's data
	reserved  int           // of dn.buffered, for wdata
	ka        Timer
	rt        Deadline // read timeout (see watchInput)
	closed    bool
	opsOnConn int
	received  int64         // bytes read from the socket
	acceptSeq uint64        // accept order (acceptor loop)
	acceptAt  time.Duration // when it was accepted (acceptor loop)
	memDirty  bool          // in dn.memDirty
	memSeen   memSeen       // as last accounted (its write data counted in dn.memWrite)

	msgT     Timer         // the whole-message deadline (RequestTimeout)
	sendT    Timer         // send progress (SendTimeout, StallTimeout)
	lastSend time.Duration // when the client last took bytes
	waitT    Timer         // the wait for a pool handle (HandleWait)
	waiter   *Waiter       // in the pool's queue while waiting
	ticket   *Waiter       // woken from the queue: its place, should it wait again
	// parked is the handle a read gave back while its client took
	// nothing and other reads waited (see park); it takes the same
	// replica again before its next packet.
	parked *Handle
	// contended: a read has waited long for a handle, so this one gives
	// its handle back whenever its client's window closes.
	contended bool
	pressT    Timer // a share of HandleWait into the wait: contend
	// queuedAt: when a new read first queued for a pool handle, while
	// queued says it waits (for Datanode.MaxHandleWait).
	queuedAt time.Duration
	queued   bool
	mac      *TokenMAC // threaded: this thread's (a reactor's selector has one)
	// A write whose buffer found no room within MaxBuffered waits for
	// some (roomWaiting, roomNeed) until roomBy, HandleWait on (roomT).
	roomWaiting bool          // listed, no ask of its own on its way
	roomBy      time.Duration // while it waits: when HandleWait has passed
	roomNeed    int
	// roomHeld is the room the write holds as the lock sees it: set and
	// read under the lock (reserved is its loop's count).
	roomHeld int
	roomT    Timer
	// yieldT: a write that holds room and waits for more looks, a stall
	// timeout into its wait and at each stall timeout after, whether it
	// must give its room up (yieldRoom).
	yieldT Timer
	// lastIn is when the write last made progress (acceptPacket): since
	// then its data grew by less than minWriteStep, or it began or was
	// granted room then, with inMark bytes of data. Its read timeout
	// counts from lastIn, and stallT looks again at a writer without
	// progress for less than a stall timeout while writes wait for room.
	lastIn time.Duration
	inMark int
	stallT Timer
	// finWatched: peer-closed interest is on (watchFIN).
	finWatched bool
	// partial: a request has been partial since partialAt (watchMessage),
	// as a full datanode's eviction sees it (TCPPartialGrace).
	partial   bool
	partialAt time.Duration
}

// watchFIN sets the connection's peer-closed interest, which a wait that
// hears nothing else turns on. Every read that gets its handle turns it
// off; the flag spares those that never had it on a call (in the real
// world, a lock and an epoll registration's check).
func (dc *dnConn) watchFIN(on bool) {
	if on != dc.finWatched {
		dc.finWatched = on
		dc.c.SetPeerClosedInterest(on)
	}
}

// tokenMAC is the token checker of dc's loop.
func (dc *dnConn) tokenMAC() *TokenMAC {
	if dc.sel != nil {
		return &dc.sel.mac
	}
	if dc.mac == nil {
		dc.mac = new(TokenMAC)
	}
	return dc.mac
}

func (dc *dnConn) onEvent(ev Events) {
	if dc.closed {
		return
	}
	if ev&Hangup != 0 && dc.c.Err() != nil {
		dc.close("peer reset")
		return
	}
	if ev&PeerClosed != 0 {
		// Its client has gone while its write waited for room or its
		// read for a handle (an HDFS client never half-closes): what it
		// sent is still unread in the socket, or what it asked for
		// still to come, and will never be answered.
		switch {
		case dc.phase == phaseReserving:
			dc.close("client closed while its write waited for room")
			return
		case dc.phase == phaseOpening:
			dc.close("client closed while its read waited for a handle")
			return
		case dc.parked != nil && dc.waiter != nil:
			dc.close("client closed while its parked read waited for a handle")
			return
		}
		// Level-triggered, it would come again at once: the write or
		// read that asked for it is no longer waiting (it failed: busy
		// after HandleWait, or a block it could not open, its answer
		// still on its way out; or a parked read was woken and asks
		// for its handle, which a reset from its next send or its
		// next wait will tell of).
		dc.watchFIN(false)
	}
	if ev&Writable != 0 && dc.pending() {
		dc.flush()
		if dc.closed {
			return
		}
	}
	if ev&Readable != 0 {
		dc.readInput()
	}
}

// readInput reads what arrived and advances the connection's protocol.
func (dc *dnConn) readInput() {
	for !dc.closed {
		switch dc.phase {
		case phaseRequest, phaseStatus, phaseReceiving:
		case phaseOpening:
			// Waiting for a handle: keep reading (a pipelined status
			// stays buffered) so a FIN or a reset is seen; once all it
			// may buffer is in, listen for the FIN alone.
			if bugs := &dc.dn.cfg.Bugs; bugs.WaiterDeaf || len(dc.in) >= MaxRequestLen+64 {
				if !bugs.FullWaiterSpins {
					dc.c.SetReadInterest(false)
				}
				dc.watchFIN(!bugs.WaiterDeaf && !bugs.WaiterDeafWhenFull)
				return
			}
		default:
			// Not expecting input: leave it in the socket (turning a
			// close with unread data into a reset, as it should be).
			if !dc.dn.cfg.Bugs.SpinOnUnread {
				dc.c.SetReadInterest(false)
			}
			return
		}
		limit := MaxRequestLen + 64
		if dc.phase == phaseReceiving {
			limit = MaxPacketLen
		}
		if len(dc.in) >= limit {
			dc.fail(invalid("message larger than %d bytes", limit))
			return
		}
		dc.in = compactInput(dc.inBuf, dc.in)
		if cap(dc.in)-len(dc.in) < inputFirst {
			grown := dc.newBuf(max(2*cap(dc.in), len(dc.in)+inputFirst))[:len(dc.in)]
			copy(grown, dc.in)
			dc.spare(dc.inBuf) // grown out of
			dc.in = grown
			dc.inBuf = dc.in
			dc.memChanged()
		}
		room := dc.in[len(dc.in):cap(dc.in)]
		if len(room) > limit-len(dc.in) {
			room = room[:limit-len(dc.in)]
		}
		n, err := dc.c.Read(room)
		if n > 0 {
			dc.received += int64(n)
			if dc.dn.cfg.Bugs.WriteAnyByte {
				dc.lastIn = dc.loop.Now()
			}
			dc.in = dc.in[:len(dc.in)+n]
			dc.process()
			dc.watchInput()
			dc.watchMessage()
			continue
		}
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if errors.Is(err, io.EOF) {
			if len(dc.in) > 0 && dc.phase != phaseStatus {
				dc.dn.p.Log("dn-truncated", "conn", dc.id, "bytes", len(dc.in))
			}
			dc.close("eof")
			return
		}
		dc.close("read error")
		return
	}
}

// process consumes complete messages from dc.in.
func (dc *dnConn) process() {
	for !dc.closed && len(dc.in) > 0 {
		switch dc.phase {
		case phaseRequest:
			req, n, err := DecodeRequest(dc.in)
			if errors.Is(err, ErrNeedMore) && dc.dn.cfg.Bugs.RequestInOneRead {
				err = invalid("truncated request of %d bytes", len(dc.in))
			}
			if errors.Is(err, ErrNeedMore) {
				return
			}
			if err != nil {
				dc.fail(err)
				return
			}
			dc.consume(n)
			dc.dn.p.CPU(CPUParse, 1)
			dc.startOp(req)
		case phaseStatus:
			st, n, err := DecodeStatus(dc.in)
			if errors.Is(err, ErrNeedMore) {
				return
			}
			dc.consume(n)
			if err != nil || (st != StatusChecksumOK && st != StatusSuccess) {
				dc.close("client status " + st.String())
				return
			}
			dc.endOp()
		case phaseReceiving:
			pkt, n, err := DecodePacket(dc.in, BytesPerChecksum)
			if errors.Is(err, ErrNeedMore) {
				return
			}
			if need := len(dc.wdata) + len(pkt.Data); err == nil && need > cap(dc.wdata) && int64(need) <= dc.req.Length &&
				!dc.dn.cfg.Bugs.WritePrealloc {
				dc.grow(need)
				return
			}
			if err == nil {
				err = dc.acceptPacket(pkt)
			}
			if err != nil {
				dc.fail(err)
				return
			}
			dc.consume(n)
		default:
			return
		}
	}
}

// consume takes n bytes of input. What is left stays where it is until
// the next read or append (compactInput): a read that brought several
// packets of a write moved the rest after each one.
func (dc *dnConn) consume(n int) {
	dc.in = dc.in[n:]
	rest := len(dc.in)
	if rest == 0 {
		dc.in = dc.inBuf[:0]
	}
	if rest == 0 && dc.msgT != nil {
		dc.msgT.Stop()
		dc.msgT = nil
	}
}

func (dc *dnConn) startOp(req Request) {
	if dc.ka != nil {
		dc.ka.Stop()
		dc.ka = nil
	}
	if dc.opsOnConn > 0 || dc.dn.cfg.Bugs.FirstOpReused {
		dc.st.KeepaliveReuses++
	}
	dc.opsOnConn++
	dc.st.Ops++
	dc.req = req
	// HDFS checks access before anything else: a refused request learns
	// nothing about the block, and nothing is opened or changed.
	if err := dc.tokenMAC().Check(dc.dn.cfg.TokenKey, req.Token, req.BlockID, req.GenStamp, ModeFor(req.Op), dc.loop.Now()); err != nil {
		dc.fail(err)
		return
	}
	switch req.Op {
	case OpReadBlock:
		dc.st.Reads++
		dc.phase = phaseOpening
		dc.open(false)
	case OpWriteBlock, OpAppendBlock, OpReplaceBlock:
		dc.st.Writes++
		if req.Length > int64(dc.dn.cfg.MaxWrite) {
			dc.fail(invalid("write of %d bytes exceeds %d", req.Length, dc.dn.cfg.MaxWrite))
			return
		}
		dc.phase = phaseReceiving
		dc.lastIn, dc.inMark = dc.loop.Now(), 0
		if dc.dn.cfg.Bugs.WritePrealloc {
			dc.wdata = make([]byte, 0, req.Length)
			dc.memChanged()
		}
	case OpDeleteBlock:
		dc.st.Writes++
		dc.phase = phaseApplying
		dc.apply()
	default:
		dc.fail(&ProtocolError{Status: StatusErrorUnsupported, Msg: "op " + req.Op.String() + " is not served"})
	}
}

// closedWhileWaiting reports, under the lock, whether the connection
// closed while it waited for it; a closed connection that was woken for a
// free handle passes the wake-up on, or the next waiter would sleep.
func (dc *dnConn) closedWhileWaiting(woken bool) bool {
	if !dc.closed {
		return false
	}
	if woken {
		dc.dn.pool.WakeWaiter()
	}
	return true
}

// open acquires the replica under the lock: from the pool (reactor) or by
// opening its files (threaded).
func (dc *dnConn) open(woken bool) {
	dn := dc.dn
	dn.lock.Do(dc.loop, func() {
		if dc.closedWhileWaiting(woken) {
			return
		}
		if dn.pool != nil {
			dc.takeHandle()
			return
		}
		files, err := dn.store.OpenForRead(dc.req.BlockID, dc.req.GenStamp)
		if err == nil {
			dc.files, dc.replica = files, files
			// Peaks follow opens, so sampling here finds the true peak.
			byKind := dn.p.FDs().ByKind
			dn.peakBlockFiles = max(dn.peakBlockFiles, byKind[FDBlockFile]+byKind[FDMetaFile])
		}
		dc.opened(err)
	})
}

// unpark takes back the replica a parked read was sending, under the
// lock, before its next packet.
func (dc *dnConn) unpark(woken bool) {
	dc.dn.lock.Do(dc.loop, func() {
		dc.unparking = false
		if !dc.closedWhileWaiting(woken) {
			dc.takeHandle()
		}
	})
}

// takeHandle gets the read a pool handle, under the lock: for a new read
// its block's current replica, for a parked one the replica it was
// sending. When the pool is full the read queues, for HandleWait at most.
func (dc *dnConn) takeHandle() {
	dn := dc.dn
	now := dc.loop.Now()
	wake := func() {
		dc.loop.Post(func() {
			dc.ticket, dc.waiter = dc.waiter, nil
			switch {
			case dc.closed:
			case dc.phase == phaseOpening:
				dc.open(true)
				return
			case dc.parked != nil && !dn.cfg.Bugs.ParkedWakeLost:
				dc.unpark(true)
				return
			}
			// This read is gone: pass the wake-up on, or the next
			// waiter sleeps while a handle is free.
			dn.lock.Do(dc.loop, dn.pool.WakeWaiter)
		})
	}
	parked, prev := dc.parked, dc.ticket
	dc.ticket = nil
	var h *Handle
	var w *Waiter
	var err error
	if parked != nil {
		h, w, err = dn.pool.Retake(parked, now, wake, prev)
	} else {
		h, w, err = dn.pool.AcquireOrWait(dc.req.BlockID, dc.req.GenStamp, now, wake, prev)
	}
	if errors.Is(err, ErrPoolFull) {
		// Woken when a handle frees, or given up.
		dc.waiter = w
		if parked != nil {
			// Parked mid-stream, it reads nothing and has nothing it
			// can send while it waits: it listens for its client's
			// FIN alone (a client that took all it was sent and left
			// resets nothing).
			dc.watchFIN(!dn.cfg.Bugs.ParkedWaiterDeaf)
		}
		if parked == nil && !dc.queued {
			dc.queued, dc.queuedAt = true, now
		}
		if !dn.cfg.Bugs.PoolWaitForever {
			if dc.waitT == nil {
				dc.waitT = dc.loop.AfterFunc(dn.cfg.HandleWait, dc.giveUpWaiting)
			}
			if delay := min(dn.cfg.HandleWait/2, dn.cfg.StallTimeout); dc.pressT == nil && !dn.cfg.Bugs.HoldWhileStalled {
				if dc.queued && now-dc.queuedAt >= delay && !dn.cfg.Bugs.PressDelayAgain {
					// Woken, and beaten to the handle by a new read
					// (barging) that found the queue empty, so took it
					// uncontended: this read has waited the press delay
					// already. Press again now, or it waits a second
					// delay behind a holder only the stall cut-off ends.
					dn.pressed = true
					dn.contend()
				} else {
					dc.pressT = dc.loop.AfterFunc(delay, dc.press)
				}
			}
		}
		return
	}
	stopTimers(&dc.waitT, &dc.pressT)
	dn.pressed = dn.pressed && dn.pool.Waiting() > 0
	if dc.queued {
		dc.queued = false
		if err == nil {
			dn.maxHandleWait = max(dn.maxHandleWait, now-dc.queuedAt)
		}
	}
	if err == nil {
		dc.handle, dc.replica = h, h.Files
		dc.contended = dn.pressed
		dc.sel.holders = append(dc.sel.holders, dc)
	}
	if parked == nil {
		dc.opened(err)
		return
	}
	dc.parked = nil
	dc.watchFIN(false)
	if err != nil {
		// Its replica was replaced or deleted while it waited: the
		// client sees a short stream, as after a disk error.
		if errors.Is(err, ErrStaleReplica) {
			dn.parkedLost++
		}
		dc.readFailed(err.Error(), "replica changed while parked")
		return
	}
	if dc.pending() {
		// Parked mid-packet with its data still to send from the
		// replica (transferTo).
		dc.lastSend = dc.loop.Now()
		dc.flush()
		return
	}
	dc.sendNext()
}

// press: the read has waited a stall timeout (or half its HandleWait, if
// shorter) for a handle. Holders that stall are cut off one StallTimeout
// after another, and clients that stopped reading may be queued ahead of
// it, each to be given a handle and found stalled in turn; so from now
// on every holder gives its handle back while its client's window is
// closed (contend), and the wait stays near one stall timeout. Parking
// at once would cost well-behaved readers more: a parked read's handle
// may be evicted, and if its block is then replaced or deleted the read
// is lost (after an append it reopens its replica: Retake).
func (dc *dnConn) press() {
	dc.pressT = nil
	if dc.closed || (dc.phase != phaseOpening && dc.parked == nil) {
		return
	}
	dn := dc.dn
	dn.lock.Do(dc.loop, func() {
		if dn.pool.Waiting() > 0 {
			dn.pressed = true
			dn.contend()
		}
	})
}

// contend tells every connection holding a handle that a read has waited
// long for one, so each gives its handle back as soon as its client's
// window closes (at once if it is closed now). Called under the lock.
func (dn *Datanode) contend() {
	for _, s := range dn.selectors {
		s.loop.Post(func() {
			for _, dc := range slices.Clone(s.holders) {
				dc.contended = true
				if dc.pending() {
					dc.park()
				}
			}
		})
	}
}

// park gives a read's handle back while its client takes nothing and
// other reads wait for one. A read needs its handle only to read its next
// packet from disk; held while the client's window is closed, it would
// let clients that stop reading hold every handle, and cutting them off
// one stall timeout after another keeps a waiter behind all of them. The
// read takes its replica again once the client has taken the packet.
func (dc *dnConn) park() {
	dn := dc.dn
	dn.lock.Do(dc.loop, func() {
		h := dc.handle
		switch {
		case dc.closed || h == nil || dc.working || !dc.pending():
			return
		case dn.pool.Waiting() == 0:
			dc.contended, dn.pressed = false, false
			return
		case !dn.pool.Parkable(h):
			// Its block was replaced or deleted during the read: given
			// back, the handle closes and the read cannot have its
			// replica again. Kept, it holds its room for as long as
			// its client takes data, however slowly (a client with a
			// small window that acks late takes 2 KB per delayed ack),
			// and the waiters that pressed wait out their HandleWait.
			// The read is lost instead, as a parked read is whose
			// block is replaced or deleted after its handle was
			// evicted (ParkedLost): the price of bounding the wait.
			// (A retired handle whose replica can be opened again
			// parks: see HandlePool.Park.)
			if dc.lost {
				return
			}
			dc.lost = true
			dn.parkedLost++
			dc.loop.Post(func() {
				if dc.closed {
					return
				}
				dc.readFailed("replica replaced or deleted while reads wait for a handle", "replica changed while reads wait for a handle")
			})
			return
		}
		dc.dropHolder()
		dc.handle, dc.replica, dc.parked = nil, nil, h
		dn.pool.Park(h, dc.loop.Now())
		dn.armTrim(dc.loop)
	})
}

// dropHolder takes the connection off its selector's list of holders.
func (dc *dnConn) dropHolder() {
	if s := dc.sel; s != nil {
		if i := slices.Index(s.holders, dc); i >= 0 {
			s.holders = slices.Delete(s.holders, i, i+1)
		}
	}
}

// giveUpWaiting fails a read that waited HandleWait for a pool handle.
func (dc *dnConn) giveUpWaiting() {
	dc.waitT = nil
	if dc.closed || (dc.phase != phaseOpening && dc.parked == nil) {
		return
	}
	dc.withdraw()
	if dc.parked != nil {
		// Mid-stream: no status can be sent, only a short stream.
		dc.st.Errors++
		dc.dn.p.Log("dn-resume-timeout", "conn", dc.id, "wait", dc.dn.cfg.HandleWait.String())
		dc.close("no handle to resume within the handle wait")
		return
	}
	dc.fail(&ProtocolError{Status: StatusError, Msg: fmt.Sprintf("busy: no block handle free within %v", dc.dn.cfg.HandleWait)})
}

// withdraw takes the connection's read out of the pool's queue.
func (dc *dnConn) withdraw() {
	if w := dc.waiter; w != nil {
		dc.waiter = nil
		dn := dc.dn
		// Until the Withdraw gets the lock the read stays queued; gone
		// tells the checks whose it is (a shared counter here would race
		// between the real world's selectors).
		w.gone = true
		dn.lock.Do(dc.loop, func() { dn.pool.Withdraw(w) })
	}
}

// armTrim sets the pool's idle trimming timer, unless it is set, for
// when the pool's least recently used idle handle above Min has been idle
// PoolIdle (HandlePool.NextTrim); with none, it is set when a handle is
// next released. (A timer every PoolIdle while any handle was open fired
// a hundred times in an average checked case, most of them with nothing
// to close.) Called under the lock.
func (dn *Datanode) armTrim(loop Loop) {
	if dn.trimArmed || dn.pool == nil {
		return
	}
	at, ok := dn.pool.NextTrim()
	if !ok {
		return
	}
	dn.trimArmed = true
	if dn.trimDueF == nil {
		dn.trimDueF, dn.trimF = dn.trimDue, dn.trim
	}
	dn.trimLoop = loop
	dn.trimT.Arm(loop, max(at-loop.Now(), 0), dn.trimDueF)
}

func (dn *Datanode) trimDue() { dn.lock.Do(dn.trimLoop, dn.trimF) }

// trim runs under the lock; trimLoop stays until it has run (armTrim does
// nothing while trimArmed).
func (dn *Datanode) trim() {
	dn.trimArmed = false
	dn.pool.Trim(dn.trimLoop.Now())
	dn.armTrim(dn.trimLoop)
}

// opened answers the request once the replica is open (or not).
func (dc *dnConn) opened(err error) {
	if err == nil {
		length := dc.replica.Length
		if dc.req.Offset > length || dc.req.Length > length-dc.req.Offset {
			err = fmt.Errorf("read of %d bytes at %d past the end of block %d (%d bytes): %w",
				dc.req.Length, dc.req.Offset, dc.req.BlockID, length, ErrOutOfRange)
		}
	}
	if err != nil {
		dc.releaseReplica()
		dc.fail(err)
		return
	}
	first := dc.req.Offset / BytesPerChecksum * BytesPerChecksum
	end := dc.req.Offset + dc.req.Length
	if end%BytesPerChecksum != 0 {
		end = min(dc.replica.Length, (end/BytesPerChecksum+1)*BytesPerChecksum)
	}
	dc.resp = Response{
		Status: StatusSuccess, ChecksumType: ChecksumCRC32C, BytesPerChecksum: BytesPerChecksum,
		FirstChunkOffset: first, GenStamp: dc.replica.Stamp, BlockLength: dc.replica.Length,
	}
	if dc.dn.cfg.Bugs.EmptyReadPanics {
		chunks := make([]int64, numChunks(int(end-first), BytesPerChecksum))
		_ = chunks[(end-1)/BytesPerChecksum-first/BytesPerChecksum]
	}
	dc.next, dc.end, dc.seq, dc.first = first, end, 0, true
	dc.phase = phaseSending
	dc.watchFIN(false) // (on if its wait for a handle filled its input)
	if dc.thread {
		// DataXceiver's BlockSender allocates its buffers per request;
		// avoiding that (per-worker buffers) is part of what HDFS-918
		// measured.
		dc.buf = newBuffer(dc.dn.p, PacketHeaderLen+MaxPacketLen+64)
		dc.memChanged()
	}
	dc.sendNext()
}

// packetJob is one packet to build: what sendNext decided, handed to the
// worker that builds it, and what the worker made. While dc.working it
// belongs to the worker; the loop reads it again only in packetBuilt.
type packetJob struct {
	n           int
	off, seq    int64
	first, last bool
	// transferTo: build only the header and checksums; the data goes
	// with sendfile at out[split].
	transferTo bool
	split      int
	resp       Response
	replica    *BlockFiles
	buf, out   []byte
	err        error
}

// build appends the job's packet (the response first, if it is the first;
// the empty last packet after the data, if it is the last) to buf.
func (j *packetJob) build(p Process, buf []byte) ([]byte, error) {
	if j.first {
		buf = AppendResponse(buf, j.resp)
	}
	seq := j.seq
	if j.n > 0 {
		buf = AppendPacketHeader(buf, PacketHeader{Offset: j.off, Seqno: seq}, j.n, BytesPerChecksum)
		var err error
		if j.transferTo {
			buf, err = appendSums(p, buf, j.replica, j.off, j.n)
			j.split = len(buf)
		} else {
			buf, err = appendChunks(p, buf, j.replica, j.off, j.n)
		}
		if err != nil {
			return buf, err
		}
		seq++
	}
	if j.last {
		buf = AppendPacketHeader(buf, PacketHeader{Offset: j.off + int64(j.n), Seqno: seq, Last: true}, 0, BytesPerChecksum)
	}
	return buf, nil
}

// sendNext produces the next packet: on a worker (reactor) or inline on
// the connection's own thread (threaded).
func (dc *dnConn) sendNext() {
	if dc.closed {
		return
	}
	if dc.parked != nil {
		dc.unpark(false)
		return
	}
	n := int(min(int64(dc.dn.cfg.PacketSize), dc.end-dc.next))
	j := &dc.job
	*j = packetJob{n: n, off: dc.next, seq: dc.seq, first: dc.first, last: dc.next+int64(n) >= dc.end,
		transferTo: dc.transferTo && n > 0, resp: dc.resp, replica: dc.replica}
	dc.next += int64(n)
	dc.seq = j.seq + 1
	if n == 0 {
		dc.seq = j.seq
	}
	dc.first = false
	p := dc.dn.p
	if dc.thread {
		out, err := j.build(p, dc.buf[:0])
		dc.buf = out[:0]
		dc.memChanged()
		j.replica = nil
		dc.packetReady(out, false, j.last, err)
		return
	}
	if dc.dn.workers == nil {
		out, err := j.build(p, dc.sel.getBuf())
		j.replica = nil
		dc.packetReady(out, true, j.last, err)
		return
	}
	j.buf = dc.sel.getBuf()
	dc.working = true
	if dc.buildF == nil {
		// Bound once per connection, not per packet.
		dc.buildF, dc.builtF = dc.buildPacket, dc.packetBuilt
	}
	dc.dn.workers.Submit(dc.loop, dc.buildF, dc.builtF)
}

// buildPacket runs on a worker: it touches only dc.job.
func (dc *dnConn) buildPacket() {
	j := &dc.job
	j.out, j.err = j.build(dc.dn.p, j.buf)
}

// packetBuilt is the worker's completion, back on the loop.
func (dc *dnConn) packetBuilt() {
	dc.working = false
	j := &dc.job
	out, last, err := j.out, j.last, j.err
	j.buf, j.out, j.err, j.replica = nil, nil, nil, nil // the rest of j stays for packetReady
	if dc.closed {
		dc.sel.putBuf(out)
		return
	}
	dc.packetReady(out, true, last, err)
}

// appendChunks appends n bytes at off of the replica with their stored
// checksums, unverified: the client verifies (HDFS's BlockSender does not
// checksum what it sends to a client).
func appendChunks(p Process, buf []byte, r *BlockFiles, off int64, n int) ([]byte, error) {
	start := len(buf)
	data, sums, err := r.ReadChunksUnverified(buf, off, n)
	if err != nil {
		return buf[:start], err
	}
	inFlight(p, data)
	return buf[:start+len(sums)+n], nil
}

// appendSums appends the stored checksums of n bytes at off of the
// replica: a packet whose data goes with sendfile.
func appendSums(p Process, buf []byte, r *BlockFiles, off int64, n int) ([]byte, error) {
	start := len(buf)
	sums, err := r.ReadSums(buf, off, n)
	if err != nil {
		return buf[:start], err
	}
	// A bit flipped in flight can only hit the checksums here: the data
	// never passes through a buffer.
	inFlight(p, sums)
	return buf[:start+len(sums)], nil
}

// packetReady sends the packet dc.job describes, built into out.
// readFailed ends a read the datanode cannot finish (a disk error, a
// replica gone): HDFS closes the connection, the client sees a short
// stream, and the error is counted and logged.
func (dc *dnConn) readFailed(err, why string) {
	dc.st.Errors++
	dc.dn.p.Log("dn-read-error", "block", dc.req.BlockID, "err", err)
	dc.close(why)
}

func (dc *dnConn) packetReady(out []byte, lent, last bool, err error) {
	if err != nil {
		// A disk or checksum error mid-stream: HDFS closes the
		// connection; the client sees a short stream.
		if lent {
			dc.sel.putBuf(out)
		}
		dc.readFailed(err.Error(), "read error")
		return
	}
	dc.sfLeft = 0
	if j := &dc.job; j.transferTo {
		dc.split, dc.sfOff, dc.sfLeft = j.split, j.off, j.n
	}
	dc.st.BytesSent += int64(len(out) + dc.sfLeft)
	dc.outLast = last
	if dc.packetSentF == nil {
		dc.packetSentF = dc.packetSent
	}
	dc.setOut(out, lent, dc.packetSentF)
}

// packetSent runs once a packet is all in the socket: the next packet, or
// after the last one the wait for the client's status.
func (dc *dnConn) packetSent() {
	if dc.outLast {
		if !dc.thread {
			// The pool's handle goes back as soon as the data is
			// out; a thread keeps its files until the client's
			// status arrives, as DataXceiver does.
			dc.releaseReplica()
		}
		dc.phase = phaseStatus
		dc.c.SetReadInterest(true)
		dc.watchInput()
		if len(dc.in) > 0 {
			// The status came with the request (pipelined).
			dc.process()
		}
		return
	}
	if dc.thread {
		// One packet per callback, so a thread shares its loop fairly.
		dc.loop.Post(dc.sendNext)
		return
	}
	dc.sendNext()
}

// setOut writes out, and once all of it is in the socket runs then.
func (dc *dnConn) setOut(out []byte, lent bool, then func()) {
	dc.out, dc.outOff, dc.lent, dc.afterOut = out, 0, lent, then
	dc.memChanged()
	dc.lastSend = dc.loop.Now()
	dc.flush()
}

// pending reports whether output is left to send.
func (dc *dnConn) pending() bool { return dc.outOff < len(dc.out) || dc.sfLeft > 0 }

func (dc *dnConn) flush() {
	before, beforeLeft := dc.outOff, dc.sfLeft
	done, err := dc.writePending()
	if errors.Is(err, errParked) {
		// The data is in the replica a parked read gave back: take it
		// again first. Waiting for it is not the client's stall, and
		// the handle wait bounds it.
		dc.c.SetWriteInterest(false)
		if dc.sendT != nil {
			dc.sendT.Stop()
			dc.sendT = nil
		}
		if !dc.unparking && dc.waiter == nil {
			dc.unparking = true
			dc.unpark(false)
		}
		return
	}
	if err != nil {
		if errors.Is(err, ErrIO) || errors.Is(err, io.EOF) {
			// sendfile met a disk error (or a file shorter than its
			// replica): as for a packet's read, HDFS closes the
			// connection and the client sees a short stream.
			dc.readFailed(err.Error(), "read error")
			return
		}
		dc.close("write error")
		return
	}
	if dc.outOff > before || dc.sfLeft < beforeLeft {
		dc.lastSend = dc.loop.Now()
	}
	if !done {
		if dc.dn.cfg.Bugs.ReturnBufferEarly && dc.lent && dc.outOff > 0 {
			// The bug: the packet "went out", so its buffer goes back,
			// while the socket has taken only part of it.
			dc.sel.putBuf(dc.out)
			dc.lent = false
			dc.memChanged()
		}
		if dc.contended && dc.handle != nil {
			dc.park()
		}
		dc.watchSend()
		return
	}
	if dc.sendT != nil {
		dc.sendT.Stop()
		dc.sendT = nil
	}
	if dc.lent {
		dc.sel.putBuf(dc.out)
	}
	dc.out, dc.outOff, dc.lent = nil, 0, false
	dc.memChanged()
	if then := dc.afterOut; then != nil {
		dc.afterOut = nil
		then()
	}
}

// errParked: the rest of a packet's data is in a replica the read parked.
var errParked = errors.New("model: packet data in a parked replica")

// writePending writes what is left of the output: with a packet's data
// to send from its replica, the bytes before it (MSG_MORE: the data
// follows), the data with sendfile, then the rest.
func (dc *dnConn) writePending() (done bool, err error) {
	if dc.sfLeft > 0 {
		if dc.outOff < dc.split {
			if done, err := writeOutMore(dc.c, dc.out[:dc.split], &dc.outOff, true); !done || err != nil {
				return false, err
			}
		}
		disk := dc.dn.p.Disk()
		for dc.sfLeft > 0 {
			if dc.replica == nil {
				return false, errParked
			}
			n, err := disk.Sendfile(dc.c, dc.replica.Data, dc.sfOff, dc.sfLeft)
			if errors.Is(err, ErrWouldBlock) {
				dc.c.SetWriteInterest(true)
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("sendfile %d bytes at %d of block %d: %w", dc.sfLeft, dc.sfOff, dc.req.BlockID, err)
			}
			if n <= 0 || n > dc.sfLeft {
				return false, fmt.Errorf("sendfile %d bytes at %d of block %d sent %d: %w", dc.sfLeft, dc.sfOff, dc.req.BlockID, n, io.ErrUnexpectedEOF)
			}
			if !dc.dn.cfg.Bugs.SendfileOffsetStuck {
				dc.sfOff += int64(n)
			}
			dc.sfLeft -= n
		}
	}
	return writeOut(dc.c, dc.out, &dc.outOff)
}

// watchSend arms the send-progress timer while output is pending: no
// progress for SendTimeout closes the connection, and a read that holds
// a pool handle closes after StallTimeout without progress if other
// reads wait for a handle.
func (dc *dnConn) watchSend() {
	dn := dc.dn
	if dc.sendT != nil || dc.closed || dn.cfg.Bugs.NoSendTimeout {
		return
	}
	step := dn.cfg.SendTimeout
	if (dc.handle != nil || dc.parked != nil) && !dn.cfg.Bugs.PoolWaitForever {
		step = min(step, dn.cfg.StallTimeout)
	}
	at := dc.lastSend + step - dc.loop.Now()
	if at <= 0 {
		// Stalled past the first step: look again a step later.
		at = max(min(step, dc.lastSend+dn.cfg.SendTimeout-dc.loop.Now()), time.Millisecond)
	}
	dc.sendT = dc.loop.AfterFunc(at, func() {
		dc.sendT = nil
		if dc.closed || !dc.pending() {
			return
		}
		idle := dc.loop.Now() - dc.lastSend
		switch {
		case idle >= dn.cfg.SendTimeout:
			dc.st.Errors++
			dn.p.Log("dn-send-timeout", "conn", dc.id, "idle", idle.String())
			dc.close("send timeout")
		case (dc.handle != nil || dc.parked != nil) && idle >= dn.cfg.StallTimeout && !dn.cfg.Bugs.PoolWaitForever:
			h, parked := dc.handle, dc.parked
			dn.lock.Do(dc.loop, func() {
				// A parked read holds room only if its block changed
				// (its handle is pinned for it).
				waiting := dn.pool.Waiting() > 0 && (h != nil || dn.pool.Pinned(parked))
				if waiting && h != nil {
					// Its other users may be stalled too, and new ones
					// would keep it open: no one else gets it now.
					dn.pool.Retire(h)
				}
				dc.loop.Post(func() {
					switch {
					case dc.closed:
					case waiting && dc.loop.Now()-dc.lastSend >= dn.cfg.StallTimeout:
						dc.st.Errors++
						dn.p.Log("dn-stalled", "conn", dc.id, "idle", (dc.loop.Now() - dc.lastSend).String())
						dc.close("stalled while reads wait for a handle")
					default:
						dc.watchSend()
					}
				})
			})
		default:
			dc.watchSend()
		}
	})
}

func (dc *dnConn) releaseReplica() {
	dn := dc.dn
	if h := dc.parked; h != nil {
		dc.parked = nil
		loop := dc.loop
		dn.lock.Do(loop, func() { dn.pool.Unpark(h) })
	}
	if h := dc.handle; h != nil {
		dc.dropHolder()
		dc.handle, dc.replica = nil, nil
		loop := dc.loop
		dn.lock.Do(loop, func() {
			dn.pool.Release(h, loop.Now())
			dn.armTrim(loop)
		})
	}
	if f := dc.files; f != nil {
		dc.files, dc.replica = nil, nil
		_ = f.Close()
	}
}

// acceptPacket takes one packet of a write.
func (dc *dnConn) acceptPacket(pkt Packet) error {
	if err := pkt.Verify(dc.req.BlockID, BytesPerChecksum); err != nil && !dc.dn.cfg.Bugs.WriteUnverified {
		return err
	}
	if pkt.Offset != int64(len(dc.wdata)) && !dc.dn.cfg.Bugs.PacketsUnchecked {
		return invalid("write packet at offset %d, want %d", pkt.Offset, len(dc.wdata))
	}
	if int64(len(dc.wdata)+len(pkt.Data)) > dc.req.Length {
		return invalid("write packets exceed the announced %d bytes", dc.req.Length)
	}
	dc.dn.p.CPU(CPUChecksum, len(pkt.Data))
	dc.wdata = append(dc.wdata, pkt.Data...)
	dc.memChanged()
	// (Only data is progress: once a write has all its data, the empty
	// packets a client may still send before the last one are none.)
	if len(dc.wdata) > dc.inMark && len(dc.wdata)-dc.inMark >= min(minWriteStep, int(dc.req.Length)-dc.inMark) {
		dc.lastIn, dc.inMark = dc.loop.Now(), len(dc.wdata)
	}
	if pkt.Last {
		if int64(len(dc.wdata)) != dc.req.Length && !dc.dn.cfg.Bugs.PacketsUnchecked {
			return invalid("write ended after %d of %d bytes", len(dc.wdata), dc.req.Length)
		}
		dc.phase = phaseApplying
		dc.apply()
	}
	return nil
}

// minWriteBuf is the first buffer of a write: most writes need one
// reservation.
const minWriteBuf = 64 << 10

// minWriteStep is the progress a write must make, in data, per read
// timeout (and per stall timeout while writes wait for room), or all
// that is left of it if less: a packet of HDFS's default size. Any byte
// counted once (WriteAnyByte), and a client sending a packet of one byte
// (or, its data all sent, an empty packet that is not the last) just
// under each stall timeout held its connection and its room for good: no
// message stayed incomplete for RequestTimeout, no silence lasted a stall
// timeout. Now such a write ends a read timeout after its last step, and
// with writes waiting, a stall timeout after it; a client at
// minWriteStep per timeout finishes its write within MaxWrite /
// minWriteStep of them.
const minWriteStep = MaxPacketData

// grow makes room in the write buffer for need bytes: it reserves the
// growth from the datanode's MaxBuffered under the lock, then goes on
// with the packet that needed it. Without room it waits for some, while
// the writers holding room that have made no step of progress for a
// stall timeout are cut off (pressWriters), and fails busy once
// HandleWait has passed.
func (dc *dnConn) grow(need int) {
	dn := dc.dn
	newCap, more := dc.growth(need)
	dc.phase = phaseReserving
	dc.watchInput()
	dn.lock.Do(dc.loop, func() {
		if dc.closed {
			// Closed while this waited for the lock: reserve nothing.
			// A thread's loop may close before the answer below runs,
			// and a reservation made now would go with it for good
			// (check seed 40772524: 344 bytes a reset left reserved).
			return
		}
		held := dn.buffered
		ok := held+more <= dn.cfg.MaxBuffered
		wait := !ok && !dn.cfg.Bugs.BusyWhenFull
		switch {
		case ok:
			dn.buffered += more
			dc.roomHeld += more
			if !slices.Contains(dn.writers, dc) {
				dn.writers = append(dn.writers, dc)
			}
			dn.dropRoomWaiter(dc) // (listed still if an ask found room after a wake it missed)
		case wait:
			if !slices.Contains(dn.roomWaiters, dc) {
				dn.roomWaiters = append(dn.roomWaiters, dc)
			}
			dn.pressWriters(dc)
		}
		dc.loop.Post(func() {
			now := dc.loop.Now()
			if dc.closed {
				if ok && !dn.cfg.Bugs.ClosedGrowKept {
					dn.lock.Do(dc.releaseLoop(), func() { dn.giveBackRoom(dc, more) })
				}
				if wait {
					dc.unlistWaiter()
				}
				return
			}
			if wait && dc.roomBy > 0 && now >= dc.roomBy {
				// Still no room once HandleWait has passed: this ask
				// was the last (giveUpRoom, or one pending when its
				// timer fired).
				dc.endRoomWait()
				dc.unlistWaiter()
				dc.fail(&ProtocolError{Status: StatusError, Msg: fmt.Sprintf("busy: no room for write data within %v (%d bytes buffered at most)", dn.cfg.HandleWait, dn.cfg.MaxBuffered)})
				return
			}
			if wait {
				dc.roomWaiting, dc.roomNeed = true, need
				if dc.roomBy == 0 {
					dc.roomBy = now + dn.cfg.HandleWait
					dc.roomT = dc.loop.AfterFunc(dn.cfg.HandleWait, dc.giveUpRoom)
					if dc.reserved > 0 && dn.cfg.StallTimeout < dn.cfg.HandleWait && !dn.cfg.Bugs.HoldersWaitForRoom {
						dc.yieldT = dc.loop.AfterFunc(dn.cfg.StallTimeout, dc.yieldRoom)
					}
					// Its input stays in the socket until it has
					// room (readInput), so it listens for its
					// client's FIN alone: a client that has gone
					// must not keep its place for HandleWait. (A
					// FIN can arrive only if what the client still
					// had to send fits in the socket buffers; if
					// not, HandleWait bounds the wait.)
					dc.watchFIN(!dn.cfg.Bugs.WriteWaiterDeaf)
				}
				return
			}
			if !ok {
				dc.fail(&ProtocolError{Status: StatusError, Msg: fmt.Sprintf("busy: %d bytes of write data buffered, %d more would pass %d", held, more, dn.cfg.MaxBuffered)})
				return
			}
			if dc.roomBy > 0 {
				// Its wait is over. The client's data went unread
				// meanwhile: its steps of progress count from now.
				dc.endRoomWait()
				dc.lastIn, dc.inMark = now, len(dc.wdata)
			}
			dc.reserved += more
			grown := dc.newBuf(newCap)[:len(dc.wdata)]
			copy(grown, dc.wdata)
			dc.spareWriteData(dc.wdata) // grown out of
			dc.wdata = grown
			dc.memChanged()
			dc.phase = phaseReceiving
			dc.watchFIN(false) // reading again hears the FIN
			dc.c.SetReadInterest(true)
			dc.process()
			dc.watchInput()
		})
	})
}

// endRoomWait ends a write's wait for room, however it ends (room came,
// it gave up or was given up, its connection closed): its deadline and
// its look at yielding go with it.
func (dc *dnConn) endRoomWait() {
	dc.roomBy, dc.roomWaiting = 0, false
	stopTimers(&dc.roomT, &dc.yieldT)
}

// stopTimers stops the timers that are set and clears them.
func stopTimers(ts ...*Timer) {
	for _, t := range ts {
		if *t != nil {
			(*t).Stop()
			*t = nil
		}
	}
}

// dropWriteData lets a write's data go (applied, or the write refused)
// and gives its room back.
func (dc *dnConn) dropWriteData() {
	dc.spareWriteData(dc.wdata)
	dc.wdata = nil
	dc.memChanged()
	dc.unreserve()
}

// spareWriteData gives a write's data buffer that nothing holds any more
// (applied and copied by the store, refused, grown out of, yielded or
// closed) to the selector, which keeps it by size with the grown input
// buffers (putIn: same sizes, cap, trim and poisoning): a steady load of
// 64 KiB writes allocated one for every write (run rpc --mix 1:1
// --file-size 65536). Its room goes back as before (unreserve); a spare
// is no write's data. (WritePrealloc's are not the selector's.)
func (dc *dnConn) spareWriteData(b []byte) {
	if !dc.dn.cfg.Bugs.WritePrealloc {
		dc.spare(b)
	}
}

// newBuf gives an input or write data buffer of n bytes: its selector's
// spare of that size if it has one (a thread of its own has none).
func (dc *dnConn) newBuf(n int) []byte {
	if dc.sel != nil {
		return dc.sel.getIn(n)
	}
	return newBuffer(dc.dn.p, n)
}

// spare gives an input or write data buffer nothing holds any more to
// its selector (putIn).
func (dc *dnConn) spare(b []byte) {
	if b != nil && dc.sel != nil {
		dc.sel.putIn(b)
	}
}

// growth is the capacity the write buffer grows to for need bytes, and
// the room that takes beyond what it holds.
func (dc *dnConn) growth(need int) (newCap, more int) {
	newCap = int(min(int64(max(2*cap(dc.wdata), need, minWriteBuf)), dc.req.Length))
	return newCap, newCap - cap(dc.wdata)
}

// yieldRoom: a write that holds room has waited a stall timeout for more.
// If another write that holds room waits for more too, and there is still
// too little for this one, the waiting holder that holds the most (this
// one, if none holds more) gives up, busy, and gives its room back at
// once: one refusal frees the most, and a write that took little is not
// refused for one that took much (giving up whoever looked first refused
// the write that had waited longest: check seed 240024651, a replace
// holding 64 KiB among 13 grabbers holding 128 KiB each). A write
// holding room while it waits makes no progress and lets
// none use that room: when the writes holding room all wait so (each a
// packet short of what it needs), none gives any back before HandleWait,
// and neither the stall cut-off, which judges writes still receiving, nor
// a write finishing frees it, so every write behind them waits as long (1
// to 10 s). A holder waiting with no other holder waiting keeps waiting:
// the room is the receiving writes', which finish or are cut off. Given
// back under the lock, the room is there for the next ask, so of holders
// that waited alike the later ones may find enough. Looked at again a
// stall timeout later if it stays.
func (dc *dnConn) yieldRoom() {
	dc.yieldT = nil
	dc.lookToYield(true)
}

// yieldAsLargest: another write holding room that waits for more found
// them all stuck, and dc the one holding the most; dc gives it up if that
// still holds.
func (dc *dnConn) yieldAsLargest() { dc.lookToYield(false) }

// lookToYield looks, under the lock, whether dc must give its room up
// (yieldRoom); timer: its own look, which comes again a stall timeout
// later unless it gave up. (Holders' room is compared as the lock counts
// it, roomHeld: reserved is each connection's loop's.)
func (dc *dnConn) lookToYield(timer bool) {
	dn := dc.dn
	if dc.closed || dc.roomBy == 0 {
		return
	}
	dn.lock.Do(dc.loop, func() {
		if dc.closed || dc.roomBy == 0 || dc.reserved == 0 {
			return
		}
		_, more := dc.growth(dc.roomNeed)
		others, largest := false, dc
		for _, w := range dn.roomWaiters {
			if w != dc && slices.Contains(dn.writers, w) {
				others = true
				if w.roomHeld > largest.roomHeld {
					largest = w
				}
			}
		}
		// Stuck unless an ask of its own is on its way to the lock
		// (room was given back, and it asks again: it must not give up
		// what that ask may be granted), or no other holder waits, or
		// room has come and its ask will find it.
		stuck := dc.roomWaiting && others && dn.buffered+more > dn.cfg.MaxBuffered
		if !stuck || largest != dc {
			if stuck {
				// Another holds more, and is asked to look: on its own
				// loop, under the lock, it gives up only if it is stuck
				// and holds the most.
				largest.loop.Post(largest.yieldAsLargest)
			}
			if timer {
				dc.yieldT = dc.loop.AfterFunc(dn.cfg.StallTimeout, dc.yieldRoom)
			}
			return
		}
		held := dc.reserved
		dc.spareWriteData(dc.wdata) // (f runs on dc.loop)
		dc.reserved, dc.wdata = 0, nil
		dc.memChanged()
		dn.dropRoomWaiter(dc)
		dn.giveBackRoom(dc, held)
		dc.endRoomWait() // (no ask of its own may follow)
		dn.p.Log("dn-write-yielded", "conn", dc.id, "held", held)
		dc.loop.Post(func() {
			if !dc.closed {
				dc.fail(&ProtocolError{Status: StatusError, Msg: fmt.Sprintf("busy: holding %d bytes of write room, no more within %v while other writes holding room waited for more (%d bytes buffered at most)", held, dn.cfg.StallTimeout, dn.cfg.MaxBuffered)})
			}
		})
	})
}

// pressWriters asks every connection holding write room but dc whether
// its client has stopped making progress mid-write (checkStall): a write
// waits for room. Called under the lock.
func (dn *Datanode) pressWriters(dc *dnConn) {
	for _, w := range dn.writers {
		if w != dc {
			w.loop.Post(w.checkStall)
		}
	}
}

// checkStall cuts off a write whose client has made no progress
// (minWriteStep) for a stall timeout while other writes wait for room: it
// holds room it may never use (a client that sends half of a write and
// stops, or then trickles a byte at a time, would otherwise hold it until
// its read timeout, and enough of them every write's). A write still
// receiving is looked at again when a stall timeout has passed since its
// last step. (A writer itself waiting to grow is not cut: its client may
// be sending; HandleWait bounds it.)
func (dc *dnConn) checkStall() {
	if dc.closed || dc.phase != phaseReceiving || dc.stallT != nil {
		return
	}
	if silent := dc.loop.Now() - dc.lastIn; silent < dc.dn.cfg.StallTimeout {
		dc.stallT = dc.loop.AfterFunc(dc.dn.cfg.StallTimeout-silent, func() {
			dc.stallT = nil
			dn := dc.dn
			dn.lock.Do(dc.loop, func() {
				if len(dn.roomWaiters) > 0 {
					dc.loop.Post(dc.checkStall)
				}
			})
		})
		return
	}
	dc.st.Errors++
	dc.dn.p.Log("dn-write-stalled", "conn", dc.id, "idle", (dc.loop.Now() - dc.lastIn).String())
	dc.close("write stalled while writes wait for room")
}

// retryRoom: room was given back, or the wait ran out; the waiting write
// asks again (a last time once its HandleWait has passed).
func (dc *dnConn) retryRoom() {
	if dc.closed || !dc.roomWaiting {
		return // (an ask of its own is on its way to the lock)
	}
	dc.roomWaiting = false
	dc.grow(dc.roomNeed)
}

// giveUpRoom: the write has waited HandleWait for room. It asks once
// more under the lock, and fails busy only if there is still none
// (grow): after a stall (a slow disk under inline I/O, a paused
// process) its wait runs out at the moment the timeouts that free room
// come due, and room they gave back before that ask counts. An ask
// already on its way is the last one.
func (dc *dnConn) giveUpRoom() {
	dc.roomT = nil
	dc.retryRoom()
}

// unlistWaiter takes a write that waited for room off the queue, under
// the lock (a closed connection's, one that failed).
func (dc *dnConn) unlistWaiter() {
	dn := dc.dn
	dn.lock.Do(dc.releaseLoop(), func() { dn.dropRoomWaiter(dc) })
}

// dropWriter and dropRoomWaiter take dc off the datanode's lists (under
// the lock).
func (dn *Datanode) dropWriter(dc *dnConn) {
	if i := slices.Index(dn.writers, dc); i >= 0 {
		dn.writers = slices.Delete(dn.writers, i, i+1)
	}
}

func (dn *Datanode) dropRoomWaiter(dc *dnConn) {
	if i := slices.Index(dn.roomWaiters, dc); i >= 0 {
		dn.roomWaiters = slices.Delete(dn.roomWaiters, i, i+1)
	}
}

// giveBackRoom returns n bytes of dc's room to MaxBuffered and asks every
// write waiting for room to ask again, in the order they asked (under
// the lock).
func (dn *Datanode) giveBackRoom(dc *dnConn, n int) {
	dn.buffered -= n
	dc.roomHeld -= n
	dn.dropWriter(dc)
	for _, w := range dn.roomWaiters {
		w.loop.Post(w.retryRoom)
	}
	dn.roomWaiters = dn.roomWaiters[:0]
}

// unreserve gives back the room reserved for the write buffer.
func (dc *dnConn) unreserve() {
	if r := dc.reserved; r > 0 {
		dc.reserved = 0
		dn := dc.dn
		dn.lock.Do(dc.releaseLoop(), func() { dn.giveBackRoom(dc, r) })
	}
}

// releaseLoop is the loop that gives back dc's reservation under the
// lock. A thread's loop closes with its connection, and a lock callback
// still waiting for the lock then would never run (the reservation
// lost for good: ReleaseOnThread); the acceptor loop
// lives as long as the datanode.
func (dc *dnConn) releaseLoop() Loop {
	if dc.thread && !dc.dn.cfg.Bugs.ReleaseOnThread {
		return dc.dn.main
	}
	return dc.loop
}

// apply performs a write, append, replace or delete under the lock and
// answers with the new generation stamp.
func (dc *dnConn) apply() {
	dn := dc.dn
	req, data := dc.req, dc.wdata
	dc.wdata = nil // the store's until it has copied it (below)
	dc.dropWriteData()
	dn.lock.Do(dc.loop, func() {
		stamp, err := dn.change(req, data)
		// The store copied the data (Write, Append and Replace write
		// through WriteAt, never WriteAtShared): the buffer is free.
		dc.spareWriteData(data)
		var length int64
		if err == nil && req.Op != OpDeleteBlock {
			_, length, _ = dn.store.Info(req.BlockID)
		}
		dc.loop.Post(func() { dc.applied(stamp, length, err) })
	})
}

// change makes req's change to its block in the store (under the lock).
func (dn *Datanode) change(req Request, data []byte) (stamp uint64, err error) {
	switch req.Op {
	case OpWriteBlock:
		return dn.store.Write(req.BlockID, data)
	case OpAppendBlock:
		return dn.store.Append(req.BlockID, data)
	case OpReplaceBlock:
		return dn.store.Replace(req.BlockID, data)
	case OpDeleteBlock:
		return 0, dn.store.Delete(req.BlockID)
	}
	return 0, nil
}

// keepCutWrite is the KeepsCutWrite bug: what a write cut short received
// is stored as the write (its errors ignored, no one to answer).
func (dc *dnConn) keepCutWrite() {
	dn, req, data := dc.dn, dc.req, slices.Clone(dc.wdata)
	dn.lock.Do(dn.main, func() { _, _ = dn.change(req, data) })
}

func (dc *dnConn) applied(stamp uint64, length int64, err error) {
	if dc.closed {
		return
	}
	if err != nil {
		dc.fail(err)
		return
	}
	resp := Response{Status: StatusSuccess, GenStamp: stamp, BlockLength: length}
	out := AppendResponse(dc.buf[:0], resp)
	dc.setOut(out, false, dc.endOp)
}

// endOp finishes an op that ended cleanly: the connection waits for the
// next op up to the keep-alive timeout. (An op that ends otherwise
// closes its connection where it fails.)
func (dc *dnConn) endOp() {
	dc.releaseReplica()
	dc.phase = phaseRequest
	dc.c.SetReadInterest(true)
	if !dc.dn.cfg.Bugs.KeepaliveForever {
		dc.ka = dc.loop.AfterFunc(dc.dn.cfg.Keepalive, func() {
			dc.ka = nil
			if !dc.closed && dc.phase == phaseRequest && len(dc.in) == 0 {
				dc.st.KeepaliveTimeouts++
				dc.close("keep-alive timeout")
			}
		})
	}
	if len(dc.in) > 0 {
		dc.process()
	}
	dc.watchInput()
	// A next request's first bytes may have come with the status: its
	// whole-message deadline starts now, not at the next read.
	dc.watchMessage()
}

// watchMessage runs the whole-message deadline: armed when the first
// bytes of a message are buffered, stopped once none are.
func (dc *dnConn) watchMessage() {
	if req := len(dc.in) > 0 && dc.phase == phaseRequest; req != dc.partial {
		dc.partial, dc.partialAt = req, dc.loop.Now()
	}
	partial := len(dc.in) > 0 && (dc.phase == phaseRequest || dc.phase == phaseReceiving || dc.phase == phaseStatus)
	switch {
	case dc.closed || !partial || dc.dn.cfg.Bugs.Slowloris:
		if dc.msgT != nil {
			dc.msgT.Stop()
			dc.msgT = nil
		}
	case dc.msgT == nil:
		dc.msgT = dc.loop.AfterFunc(dc.dn.cfg.RequestTimeout, func() {
			dc.msgT = nil
			if !dc.closed && len(dc.in) > 0 {
				dc.st.Errors++
				dc.dn.p.Log("dn-request-timeout", "conn", dc.id, "phase", int(dc.phase), "bytes", len(dc.in))
				dc.close("request timeout")
			}
		})
	}
}

// watchInput (re)starts the read timeout while the connection waits for
// the client outside a keep-alive wait (which has its own timeout), and
// stops it otherwise. Every read restarts it, but within a write only a
// step of progress (acceptPacket) does.
func (dc *dnConn) watchInput() {
	waiting := dc.phase == phaseReceiving || dc.phase == phaseStatus ||
		(dc.phase == phaseRequest && (dc.opsOnConn == 0 || len(dc.in) > 0))
	if dc.closed || !waiting || dc.dn.cfg.ReadTimeout <= 0 {
		dc.rt.Stop()
		return
	}
	if dc.readTimeoutF == nil {
		dc.readTimeoutF = dc.readTimedOut
	}
	after := dc.dn.cfg.ReadTimeout
	if dc.phase == phaseReceiving && !dc.dn.cfg.Bugs.WriteAnyByte {
		// Bytes that are no step of progress do not put it back.
		after -= dc.loop.Now() - dc.lastIn
	}
	dc.rt.Arm(dc.loop, after, dc.readTimeoutF)
}

func (dc *dnConn) readTimedOut() {
	if !dc.closed {
		dc.st.Errors++
		dc.dn.p.Log("dn-read-timeout", "conn", dc.id, "phase", int(dc.phase))
		dc.close("read timeout")
	}
}

// fail answers an op with an error status, then closes.
func (dc *dnConn) fail(err error) {
	dc.st.Errors++
	dc.dn.p.Log("dn-op-error", "conn", dc.id, "err", err.Error())
	resp := Response{Status: StatusOf(err), Message: err.Error()}
	if resp.Status == StatusSuccess {
		resp.Status = StatusError
	}
	dc.phase = phaseFlushing
	if dc.wdata != nil || dc.reserved > 0 {
		// A refused write's data and room are of no more use: give
		// them back now, not once the answer is out, which a client
		// that reads nothing holds off for SendTimeout while other
		// writes wait for the room.
		dc.dropWriteData()
	}
	if dc.pending() {
		dc.close("error mid-write")
		return
	}
	dc.buf = AppendResponse(dc.buf[:0], resp)
	dc.memChanged()
	dc.setOut(dc.buf, false, func() { dc.close("after error") })
}

// close tears the connection down from any state without leaking: its
// timer, buffer, replica, socket and (threaded) thread.
func (dc *dnConn) close(why string) {
	if dc.closed {
		return
	}
	dc.closed = true
	dc.memChanged() // and whatever close does to its buffers below
	if dc.ka != nil {
		dc.ka.Stop()
		dc.ka = nil
	}
	dc.rt.Stop()
	stopTimers(&dc.msgT, &dc.sendT, &dc.waitT, &dc.pressT, &dc.stallT)
	dc.withdraw()
	if dc.roomBy > 0 {
		// Listed as waiting for room, or an ask of its own on its way.
		dc.unlistWaiter()
	}
	dc.endRoomWait()
	counted := dc.live
	if counted {
		// (Before the buffer goes back: putBuf then sees the selector as
		// it is once this connection is gone.)
		dc.live = false
		dc.sel.live--
	}
	if dc.lent {
		dc.sel.putBuf(dc.out)
		dc.out, dc.lent = nil, false
	} else if counted {
		dc.sel.atRest()
	}
	if dc.dn.cfg.Bugs.KeepsCutWrite && (dc.phase == phaseReceiving || dc.phase == phaseReserving) && len(dc.wdata) > 0 {
		dc.keepCutWrite()
	}
	dc.releaseReplica()
	dc.unreserve()
	if !dc.dn.cfg.Bugs.ClosedConnsReachable {
		// A closed connection may stay reachable a while (callbacks
		// queued for it); its buffers must not.
		dc.spare(dc.inBuf)
		dc.spareWriteData(dc.wdata)
		dc.in, dc.inBuf, dc.wdata, dc.buf, dc.out = nil, nil, nil, nil, nil
	}
	_ = dc.c.Close()
	dn := dc.dn
	if dc.thread {
		l := dc.loop
		// Close the thread after the lock callbacks queued on it ran.
		l.Post(func() { l.Post(l.Close) })
	}
	st := dc.st
	dn.main.Post(func() {
		dn.stats.add(st)
		dn.forget(dc)
	})
}

// ConnMemory is what one connection's buffers hold.
type ConnMemory struct {
	Conn   uint64
	Closed bool
	Phase  string
	// Unaccounted, set by VisitMemory alone, says that the connection's
	// buffers or closed state differ from what VisitMemoryChanges last
	// reported, though no change is noted for it: one changed without
	// memChanged, which the running accounting cannot see.
	Unaccounted bool
	// Buffered is the capacity of the connection's buffers — what it
	// holds, whether or not it is in use — including a packet buffer it
	// borrowed; WriteData is the part that holds a write's data.
	Buffered, WriteData int
	// Reserved is what the connection holds reserved against
	// MaxBuffered. It should be its write data's capacity (reserved
	// before the buffer grows, given back when the data is applied or
	// dropped); check's bounded-memory holds it to that.
	Reserved int
	Received int64 // bytes it has read from its socket
}

var phaseNames = [...]string{"request", "opening", "sending", "status", "receiving", "applying", "flushing", "reserving"}

func (p connPhase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase?"
}

// VisitMemory calls f for every connection the datanode can still reach,
// closed ones it has not let go of included (a freed slot past the end of
// its list keeps its connection reachable). It reads every loop's state,
// so only a single-threaded world (sim) may call it.
func (dn *Datanode) VisitMemory(f func(ConnMemory)) {
	dn.visitReachable(func(dc *dnConn) {
		m := dc.memory()
		m.Unaccounted = dn.memTrack && !dc.memDirty && dc.memSeen != m.seen()
		f(m)
	})
}

func (dn *Datanode) visitReachable(f func(dc *dnConn)) {
	all := dn.conns[:cap(dn.conns)]
	for i, dc := range all {
		if dc == nil {
			continue
		}
		if i >= len(dn.conns) && dc.index >= 0 && dc.index < len(dn.conns) && dn.conns[dc.index] == dc {
			continue // also in the list: visited there
		}
		f(dc)
	}
}

// memSeen is what the running accounting last saw of a connection: the
// fields of ConnMemory that check's bounds read, but for the received
// count (see memChanged) and the phase (only named in its messages).
type memSeen struct {
	closed                        bool
	buffered, writeData, reserved int
}

func (m ConnMemory) seen() memSeen {
	return memSeen{closed: m.Closed, buffered: m.Buffered, writeData: m.WriteData, reserved: m.Reserved}
}

func (dc *dnConn) memory() ConnMemory {
	m := ConnMemory{Conn: dc.id, Closed: dc.closed, Phase: dc.phase.String(), Received: dc.received,
		Buffered: cap(dc.inBuf) + cap(dc.wdata) + cap(dc.buf), WriteData: cap(dc.wdata), Reserved: dc.reserved}
	if dc.lent {
		m.Buffered += cap(dc.out)
	}
	return m
}

// memChanged notes that dc's buffers, closed state or place in the list
// may have changed in this event, for the next VisitMemoryChanges. Every
// such change calls it (check scans every connection now and then, and
// fails on one that differs from what was last accounted: ConnMemory's
// Unaccounted). The received count needs none: it only loosens a bound,
// and is read afresh whenever the write data changes.
func (dc *dnConn) memChanged() {
	dn := dc.dn
	if dn.memTrack && !dc.memDirty {
		dc.memDirty = true
		dn.memDirty = append(dn.memDirty, dc)
	}
}

// VisitMemoryChanges is VisitMemory for a check after every event, at
// the cost of what changed rather than of every connection: it calls f for
// each reachable connection whose buffers may have changed since the last
// call (every one, the first time) and returns the write data all
// reachable connections hold, a running total. Only a single-threaded
// world (sim) may call it.
//
// With the ClosedConnsReachable bug a forgotten connection can stay
// reachable through a stale slot of the list, which only a scan sees: that
// configuration scans every time.
func (dn *Datanode) VisitMemoryChanges(f func(ConnMemory)) (writeData int) {
	if !dn.memTrack || dn.cfg.Bugs.ClosedConnsReachable {
		for _, dc := range dn.memDirty {
			dc.memDirty = false
		}
		dn.memDirty = dn.memDirty[:0]
		dn.memWrite = 0
		dn.visitReachable(func(dc *dnConn) {
			m := dc.memory()
			dn.memWrite += m.WriteData
			dc.memSeen = m.seen()
			f(m)
		})
		dn.memTrack = true
		return dn.memWrite
	}
	for i, dc := range dn.memDirty {
		dn.memDirty[i] = nil
		dc.memDirty = false
		if dc.index < 0 {
			// Forgotten: unreachable, since the list's freed slot is
			// cleared (see forget).
			dn.memWrite -= dc.memSeen.writeData
			dc.memSeen = memSeen{}
			continue
		}
		m := dc.memory()
		dn.memWrite += m.WriteData - dc.memSeen.writeData
		dc.memSeen = m.seen()
		f(m)
	}
	dn.memDirty = dn.memDirty[:0]
	return dn.memWrite
}

// ReadsWaiting is the number of reads queued for a pool handle that are
// still some connection's: those whose connection waits (in the pool's
// queue, or woken from it with the retry still to run) and those whose
// connection gave up while the Withdraw waits for the lock. So it is
// never below the pool's Waiting (sim only, like VisitMemory: a walk of
// every connection).
func (dn *Datanode) ReadsWaiting() int {
	n := 0
	for _, dc := range dn.conns {
		if dc.waiter != nil {
			n++
		}
	}
	if dn.pool != nil {
		n += dn.pool.Abandoned()
	}
	return n
}

// ConnWaiting reports whether the connection with socket id has a read
// queued for a pool handle or a write waiting for buffer room (sim only,
// like VisitMemory).
func (dn *Datanode) ConnWaiting(id uint64) bool {
	for _, dc := range dn.conns {
		if dc.id == id {
			return dc.waiter != nil || dc.roomBy > 0
		}
	}
	return false
}

// ConnPhase is the phase of the connection with socket id, or "" if the
// datanode holds none (sim only, like VisitMemory).
func (dn *Datanode) ConnPhase(id uint64) string {
	for _, dc := range dn.conns {
		if dc.id == id {
			return dc.phase.String()
		}
	}
	return ""
}
