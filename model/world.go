// Package model holds the data path under test — wire protocol, block store,
// servers, handle pool, keep-alive, client — written once against the world
// interface defined in this file.
//
// Model code never touches time, the network, the disk, threads or
// randomness directly: it reaches them only through World, Process, Loop,
// Conn, File and WorkerPool. The simulated world (package sim) implements
// them deterministically on virtual time; the real world (package real)
// implements them with epoll, sockets, files and goroutines. Like etcd's
// raft, the state machines here know nothing of I/O: the world drives them
// by calling back into them.
//
// Rules (enforced by imports_test.go): no goroutines, no sync, no wall
// clock, no global randomness, no os/net/syscall, and no behaviour that
// depends on map iteration order.
package model

import (
	"errors"
	"strings"
	"time"
)

// Errors returned by world operations. Implementations map their native
// errors (errnos in the real world) onto these so model code can branch on
// them with errors.Is.
var (
	ErrWouldBlock    = errors.New("operation would block")     // EAGAIN
	ErrReset         = errors.New("connection reset by peer")  // ECONNRESET
	ErrRefused       = errors.New("connection refused")        // ECONNREFUSED
	ErrTimedOut      = errors.New("connection timed out")      // ETIMEDOUT
	ErrPipe          = errors.New("broken pipe")               // EPIPE: write after shutdown or peer close
	ErrClosed        = errors.New("use of closed descriptor")  // EBADF
	ErrTooManyFiles  = errors.New("too many open files")       // EMFILE
	ErrIO            = errors.New("input/output error")        // EIO
	ErrNoSpace       = errors.New("no space left on device")   // ENOSPC
	ErrNotExist      = errors.New("no such file or directory") // ENOENT
	ErrExist         = errors.New("file exists")               // EEXIST
	ErrAddrInUse     = errors.New("address already in use")    // EADDRINUSE
	ErrNotSupported  = errors.New("operation not supported")   // EOPNOTSUPP
	ErrProcessExited = errors.New("process exited")            // the owning process crashed or stopped
	ErrInsecurePath  = errors.New("insecure path")             // CheckSocketPath: others could replace the socket
)

// World is a set of processes that can reach each other by address.
type World interface {
	// Kind is "sim" or "real".
	Kind() string
	// Spawn starts a process. main runs as the first callback on the
	// process's main loop. In the simulated world a crashed process can be
	// restarted, and main runs again on a fresh process state (same disk).
	Spawn(name string, cfg ProcessConfig, main func(p Process)) (Process, error)
	// Now is the world's clock: virtual time in sim, time since the world
	// was created in real.
	Now() time.Duration
	// Stop asks Run to return once the current callback finishes.
	Stop()
	// Run drives the world until Stop is called, nothing is left to do
	// (sim), or the limit of world time passes. It returns an error if the
	// limit was reached or a process failed an assertion.
	Run(limit time.Duration) error
	// Fail records a broken invariant or assertion in model code and stops
	// the world; Run returns it.
	Fail(err error)
}

// ProcessConfig sets a process's resources.
type ProcessConfig struct {
	FDLimit int // RLIMIT_NOFILE; 0 means the world's default
	Cores   int // CPU cores for the CPU model (sim); 0 means 1
}

// Process is one OS process: an fd table with a limit, event loops, worker
// pools, a view of the disk and a seeded random source.
type Process interface {
	Name() string
	World() World
	// MainLoop is the loop on which main runs; created with the process.
	MainLoop() Loop
	// NewLoop starts another event loop: a selector thread with its own
	// epoll fd. A thread-per-connection server creates one per connection.
	NewLoop(name string) (Loop, error)
	// NewWorkerPool starts n worker threads.
	NewWorkerPool(name string, n int) WorkerPool
	// NewLock makes a lock shared by the process's loops.
	NewLock(name string) Lock
	// NewRWLock makes a read-write lock shared by the process's loops.
	NewRWLock(name string) RWLock

	// Listen opens a listening TCP (or Unix, for network "unix") socket.
	// In sim, addresses are "host:port" names local to the world; in real,
	// TCP addresses are loopback "127.0.0.1:port" (port 0 picks one) and
	// Unix addresses are socket paths. A backlog ≤ 0 means
	// DefaultBacklog in both worlds.
	Listen(network, addr string, backlog int, loop Loop) (Listener, error)
	// CheckSocketPath refuses a Unix socket path that others could tamper
	// with: a directory on it owned by someone other than root or the
	// process's user, or writable by others (a sticky directory such as
	// /tmp is allowed above the socket's own directory). Directories not
	// yet made are not checked (Listen makes them, private).
	CheckSocketPath(addr string) error
	// Dial starts a non-blocking connect. The connection reports Writable
	// once established, or Hangup with Err set if it failed.
	Dial(network, addr string, loop Loop, h Handler) (Conn, error)

	Disk() Disk
	Rand() Rand
	// CPU charges modelled CPU work to the thread now running (sim); the
	// real world spends real CPU instead and ignores it.
	CPU(kind CPUWork, n int)
	// Log appends a model-level event (an op's call or return, a state
	// change) to the world's trace.
	Log(kind string, kv ...any)

	// NewSegment creates a zeroed shared-memory segment of size bytes (a
	// positive multiple of 8), maps it and returns the mapping and its fd
	// (kind FDSegment): memfd_create, ftruncate and mmap in real. The fd
	// can be passed with SendFDs and closed; the mapping outlives it.
	NewSegment(name string, size int) (Segment, File, error)
	// MapSegment maps size bytes of a segment received as f (mmap of a
	// passed memfd). f stays the caller's to close.
	MapSegment(f File, size int) (Segment, error)

	// FDs reports the process's fd table.
	FDs() FDStats
	// Threads reports loops plus workers alive now and at peak.
	Threads() (now, peak int)
}

// CPUWork names a kind of modelled CPU work.
type CPUWork int

const (
	CPUChecksum CPUWork = iota // per byte checksummed
	CPUCopy                    // per byte copied in user space
	CPUParse                   // per message decoded or encoded
	CPUInode                   // per namespace inode visited (a lookup and its checks)
	CPUFrame                   // per rpc call a reader takes off the wire: its frame decoded, copied into a call, allocated
	CPUToken                   // per block token issued (an HMAC-SHA256)
	CPUCompare                 // per byte compared with what it should be (the read scenario's check of what a client read)
	// CPUFirstTouch is per page of the n bytes of a buffer a process
	// uses for the first time (see Touched; n counts whole pages): Go's
	// large allocations come from the OS untouched, so the kernel maps
	// each page at its first use, a page fault that on a virtual
	// machine costs microseconds.
	CPUFirstTouch
)

// FDKind tags each fd with what it is, so resource properties can count
// block files separately from sockets.
type FDKind int

const (
	FDSocket FDKind = iota
	FDListener
	FDFile
	FDBlockFile
	FDMetaFile
	FDEpoll
	FDEventfd
	FDPassed
	FDSegment // a shared-memory segment's fd (memfd)
	numFDKinds
)

// NumFDKinds is the number of fd kinds.
const NumFDKinds = int(numFDKinds)

var fdKindNames = [...]string{"socket", "listener", "file", "block", "meta", "epoll", "eventfd", "passed", "segment"}

func (k FDKind) String() string {
	if k >= 0 && int(k) < len(fdKindNames) {
		return fdKindNames[k]
	}
	return "fd?"
}

// IsFile reports whether k is a kind Disk.Open may give (a file, a block
// or a meta file); both worlds refuse the others.
func (k FDKind) IsFile() bool { return k == FDFile || k == FDBlockFile || k == FDMetaFile }

// FDStats is a snapshot of a process's fd table.
type FDStats struct {
	Open   int
	Peak   int
	Limit  int
	ByKind [NumFDKinds]int
	// Segments is the number of shared-memory mappings (not fds: a
	// mapping outlives its fd, and leak checks count both).
	Segments int
}

// Segment is a mapped shared-memory segment: the short-circuit slots a
// datanode and its local clients share. Words are accessed atomically, as
// HDFS's slots are (one process writes, another polls). An offset must be
// a multiple of 8 inside the segment; anything else fails the world.
type Segment interface {
	Size() int
	Load(off int) uint64
	Store(off int, v uint64)
	// Unmap releases the mapping; Load then reads 0 and Store does
	// nothing.
	Unmap() error
}

// Rand is a process's seeded random source (a *math/rand/v2.Rand fits).
type Rand interface {
	Uint64() uint64
	IntN(n int) int
	Float64() float64
}

// Loop is an event loop: it runs callbacks one at a time, so model code on
// one loop needs no locks.
type Loop interface {
	Name() string
	Process() Process
	// Now is the loop's clock (virtual time in sim).
	Now() time.Duration
	// AfterFunc runs f on this loop after d; a d below 0 is 0 (timers
	// due at the same time run in the order they were armed).
	AfterFunc(d time.Duration, f func()) Timer
	// Post runs f on this loop as soon as it is free. Its order against a
	// timer that comes due meanwhile is not specified: a callback that
	// posts g after arming (or running past) a timer may see g run
	// first (sim) or the timer's f (real), so code that needs one before
	// the other must chain them.
	Post(f func())
	// Close stops the loop (and releases its epoll fd). Callbacks pending
	// on it are dropped; connections registered on it must be closed first.
	Close()
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop cancels the timer; it reports whether f had not yet run.
	Stop() bool
	// Reset arms the timer to run its f d from now, as Stop and a new
	// AfterFunc would, and reports what Stop would have: a deadline put
	// back at every message (a read timeout) need not allocate a timer
	// each time.
	Reset(d time.Duration) bool
}

// DefaultBacklog is the accept queue of a listener asked for a backlog
// ≤ 0: Linux's own default before 5.4 (SOMAXCONN 128), the same in both
// worlds rather than each its own (the real one took the machine's
// SOMAXCONN, 4096 here).
const DefaultBacklog = 128

// Events is a set of readiness conditions.
type Events uint8

const (
	Readable Events = 1 << iota // data, EOF or an error to read
	Writable                    // send buffer has room (or connect finished)
	Hangup                      // peer reset, or connect failed
	// PeerClosed: the peer has shut its sending side (its FIN arrived,
	// or a reset), whatever is still unread before it: EPOLLRDHUP.
	// Reported only with peer-closed interest on (SetPeerClosedInterest).
	PeerClosed
)

// String names the events, joined by "|" ("" for none): for traces and
// failures, and for tests that compare what the two worlds report.
func (ev Events) String() string {
	var names []string
	for _, e := range []struct {
		bit  Events
		name string
	}{{Readable, "Readable"}, {Writable, "Writable"}, {Hangup, "Hangup"}, {PeerClosed, "PeerClosed"}} {
		if ev&e.bit != 0 {
			names = append(names, e.name)
		}
	}
	return strings.Join(names, "|")
}

// Handler receives a connection's readiness on its loop. Readiness is
// level-triggered: while data stays unread (or room stays free with write
// interest on), the handler is called again. Hangup is the exception: it
// comes whatever the interests (epoll reports errors to every
// registration), once to each handler SetHandler sets, so a handler
// that does not close at once does not spin, and a new owner of a dead
// connection still hears of it.
type Handler func(ev Events)

// Conn is a non-blocking stream socket (TCP or Unix).
type Conn interface {
	ID() uint64
	LocalAddr() string
	RemoteAddr() string
	// SetHandler moves the connection to loop and sets its handler.
	SetHandler(loop Loop, h Handler)
	// SetWriteInterest asks for Writable events; keep it on only while
	// output is pending, so a loop never busy-waits.
	SetWriteInterest(on bool)
	// SetReadInterest asks for Readable events (on by default).
	SetReadInterest(on bool)
	// SetPeerClosedInterest asks for PeerClosed events (off by default),
	// level-triggered like Readable: a connection that leaves its input
	// in the socket (read interest off) still hears that its peer has
	// gone, where Readable would fire for the unread data before the FIN.
	SetPeerClosedInterest(on bool)

	// Read copies received bytes into p; it returns (0, io.EOF) after the
	// peer's FIN, ErrWouldBlock when nothing is queued, ErrReset after RST.
	Read(p []byte) (int, error)
	// Write copies what fits in the send buffer and returns that count;
	// ErrWouldBlock only when nothing fit.
	Write(p []byte) (int, error)
	// WriteMore is Write with MSG_MORE: the tail is held for what follows.
	WriteMore(p []byte) (int, error)

	SetNoDelay(on bool) error // TCP_NODELAY
	SetCork(on bool) error    // TCP_CORK
	QuickAck() error          // TCP_QUICKACK(1), one-shot

	// SendFDs sends p with files attached (SCM_RIGHTS); Unix sockets only.
	// All of p is sent or nothing (would-block).
	SendFDs(p []byte, files []File) (int, error)
	// ReadFDs reads like Read and also returns files passed with the bytes
	// read; each becomes a new fd (kind FDPassed) in the reader's process.
	// Unix sockets only. A read stops after the bytes of a message that
	// carried files (it may begin with bytes sent before it), so one read
	// returns one message's files at most; Read drops them unseen.
	ReadFDs(p []byte) (int, []File, error)

	// CloseWrite sends FIN after queued data (shutdown(SHUT_WR)).
	CloseWrite() error
	// Close releases the fd. Unread received data turns the close into a
	// reset, as in Linux.
	Close() error
	// Abort closes with RST (SO_LINGER 0).
	Abort() error
	// Err is the error that ended the connection, if any.
	Err() error
}

// Listener accepts connections.
type Listener interface {
	Addr() string
	// SetHandler is called on the listener's loop while connections wait.
	SetHandler(h func())
	// Accept returns a pending connection or ErrWouldBlock. The new
	// connection has no loop until SetHandler is called on it.
	Accept() (Conn, error)
	Close() error
}

// OpenFlag selects how a file is opened.
type OpenFlag int

const (
	ReadOnly  OpenFlag = 0
	ReadWrite OpenFlag = 1 << iota
	Create             // create if missing
	Excl               // with Create: fail if it exists
	Truncate
)

// Valid reports whether f has only the flags above; both worlds' Open
// refuse others.
func (f OpenFlag) Valid() bool { return f&^(ReadWrite|Create|Excl|Truncate) == 0 }

// Disk is a process's view of its file system. Rename and Unlink have POSIX
// meaning: an open File keeps reading the inode it opened.
type Disk interface {
	Open(path string, flag OpenFlag, kind FDKind) (File, error)
	Rename(from, to string) error
	Unlink(path string) error
	Stat(path string) (size int64, err error)
	// List returns the names under dir, sorted.
	List(dir string) ([]string, error)
	// Sendfile copies n bytes of f at off to c without a user-space copy
	// (transferTo). It sends what fits and returns the count, or
	// ErrWouldBlock.
	Sendfile(c Conn, f File, off int64, n int) (int, error)
}

// File is an open file descriptor.
type File interface {
	ReadAt(p []byte, off int64) (int, error) // pread; io.EOF at the end
	WriteAt(p []byte, off int64) (int, error)
	Size() (int64, error)
	Sync() error
	Close() error
	// Kind is the fd's tag in the process's fd table.
	Kind() FDKind
}

// SharedFileWriter is to a File what SharedWriter is to a Conn: it can
// take bytes as its contents without copying them (sim's files).
// WriteAtShared is WriteAt, at WriteAt's modelled cost, except that the
// file may keep p itself: the caller must never change those bytes again.
// A check writes every seed's blocks anew, and copying them into the
// simulated files was a twentieth of its CPU.
type SharedFileWriter interface {
	WriteAtShared(p []byte, off int64) (int, error)
}

// WorkerPool runs blocking work (disk reads, checksums) off the loops.
type WorkerPool interface {
	// Submit runs work on a free worker, then posts done to loop. Work
	// must touch only what it was handed; done runs on loop with whatever
	// work produced.
	Submit(loop Loop, work func(), done func())
	// Size is the number of workers.
	Size() int
	Close()
}

// Lock is a lock shared by several loops of one process (the short-circuit
// cache). In sim it is a modelled queue with hold time, so contention shows.
type Lock interface {
	// Do runs f on loop once the lock is held and releases it after.
	// While it waits for the lock, other callbacks of loop may run first
	// (sim gives the loop back; real blocks it), so what is posted to
	// loop after Do may run before f; two Do calls on one loop keep their
	// order in both worlds.
	Do(loop Loop, f func())
}

// RWLock is a read-write lock shared by several loops of one process (the
// namenode's namespace lock, HADOOP-6713). Do takes it exclusively, RDo
// shared: readers run together, a writer alone. Waiters are served in
// arrival order, so a stream of readers cannot starve a writer. In sim it
// is modelled like Lock, with readers overlapping in virtual time.
type RWLock interface {
	Lock
	// RDo runs f on loop once the lock is held shared, and releases it.
	RDo(loop Loop, f func())
}

// BufferFaults is implemented by a Process whose world tests buffer
// discipline (sim): the data path declares the buffers it has checksummed
// and is about to send, and the buffers it returns to a free list. A real
// process does not implement it.
type BufferFaults interface {
	// InFlight may flip a bit of b: corruption after the checksum was
	// computed, which only the reader's verification can catch.
	InFlight(b []byte)
	// Freed may overwrite b (its length: the bytes it held) with a
	// pattern, so a buffer used after its return sends the pattern.
	Freed(b []byte)
}

// BufferSource is implemented by a Process whose world recycles buffers
// from one run to the next (sim with an Arena: check runs thousands of
// short worlds). NewBuffer returns a buffer of length 0 and capacity
// exactly n whose bytes are unspecified: model code appends or writes
// before it reads, as it does with a fresh buffer. The buffer stays valid
// while the world does; model code keeps it no longer.
type BufferSource interface {
	NewBuffer(n int) []byte
}

// SharedWriter is implemented by a Conn that can send bytes without
// copying them (sim's TCP). WriteShared is Write, at Write's modelled cost,
// except that the connection may keep p[:n] itself: the caller must never
// change those bytes again (a reply built once, a constant). A buffer that
// is reused or returned to a free list must go through Write.
type SharedWriter interface {
	WriteShared(p []byte) (int, error)
}

// ReceiveBufferer is implemented by a Conn whose receive buffer can be
// read (TCP in both worlds). Linux grows a TCP receive buffer as the
// application reads (autotuning, from tcp_rmem[1]), and the sim grows its
// own the same way (sim/rcvwin.go). How far it grows decides how long a
// request of several writes under Nagle keeps stalling: every op stalls
// while the window climbs to it.
type ReceiveBufferer interface {
	ReceiveBuffer() (int, error)
}

// ReceiveBuffer is c's receive buffer in bytes now (SO_RCVBUF), or 0 if c
// cannot tell.
func ReceiveBuffer(c Conn) int {
	if rb, ok := c.(ReceiveBufferer); ok {
		if n, err := rb.ReceiveBuffer(); err == nil {
			return n
		}
	}
	return 0
}

// ViewReader is implemented by a Conn that can hand received bytes over
// without copying them (sim's TCP). ReadView consumes what Read into a
// buffer of max bytes would, at Read's modelled cost, and passes the bytes
// to f (nil: the caller only counts them) as one or more read-only slices,
// valid only during the call.
type ViewReader interface {
	ReadView(max int, f func([]byte)) (int, error)
}

// WriteShared writes p to c as c.Write does, without a copy where c can
// keep p (SharedWriter); the caller must never change p[:n] again.
func WriteShared(c Conn, p []byte) (int, error) {
	if sw, ok := c.(SharedWriter); ok {
		return sw.WriteShared(p)
	}
	return c.Write(p)
}

// WriteAtShared writes p to f at off as f.WriteAt does, without a copy
// where f can keep p (SharedFileWriter); the caller must never change p
// again.
func WriteAtShared(f File, p []byte, off int64) (int, error) {
	if sw, ok := f.(SharedFileWriter); ok {
		return sw.WriteAtShared(p, off)
	}
	return f.WriteAt(p, off)
}

// ReadView reads from c what c.Read(buf) would and hands the bytes to f
// (nil: they are dropped); where c can (ViewReader), without copying them
// into buf.
func ReadView(c Conn, buf []byte, f func([]byte)) (int, error) {
	if vr, ok := c.(ViewReader); ok {
		return vr.ReadView(len(buf), f)
	}
	n, err := c.Read(buf)
	if n > 0 && f != nil {
		f(buf[:n])
	}
	return n, err
}

// newBuffer is make([]byte, 0, n), from p's world's recycled buffers if it
// has them.
func newBuffer(p Process, n int) []byte {
	if bs, ok := p.(BufferSource); ok {
		return bs.NewBuffer(n)
	}
	return make([]byte, 0, n)
}

// popFree takes the last entry of a free list, clearing its slot so that
// the list's array does not keep it; ok is false if the list is empty.
func popFree[T any](list *[]T) (x T, ok bool) {
	n := len(*list)
	if n == 0 {
		return x, false
	}
	x = (*list)[n-1]
	var zero T
	(*list)[n-1] = zero
	*list = (*list)[:n-1]
	return x, true
}

// compactInput moves in, the bytes of buf not yet taken (the end of what
// reads put there: a consumer takes from in's front by reslicing), to
// buf's front, and returns them there. A reader compacts once, before
// its next read, not after every message it takes: a read that brought
// several packets moved the rest after each (7% of run read --clients
// 512). The read then asks for the room it always did, all after what
// is left, so the trace does not change.
func compactInput(buf, in []byte) []byte {
	if cap(in) == cap(buf) {
		return in // at the front already
	}
	return buf[:copy(buf[:cap(buf)], in)]
}

// inFlight declares b checksummed and on its way out.
func inFlight(p Process, b []byte) {
	if bf, ok := p.(BufferFaults); ok {
		bf.InFlight(b)
	}
}

// freed declares b returned to a free list.
func freed(p Process, b []byte) {
	if bf, ok := p.(BufferFaults); ok {
		bf.Freed(b)
	}
}

// ThreadCPU is the CPU one kind of thread spent in callbacks (a loop's) or
// work items (a worker pool's) over a run: every process and thread of the
// kind together, named "process/thread" with numbered suffixes dropped
// ("client-7" and "client-12" are "client", "worker-3" is "worker"), so
// the two worlds' figures line up. What a world spends outside them (a
// thread's wake-up, the scheduler, the poller) is not in any kind.
type ThreadCPU struct {
	Thread    string
	Callbacks int64
	CPU       time.Duration
}

// ThreadKind is the kind a thread of a process belongs to (ThreadCPU).
func ThreadKind(process, thread string) string {
	return dropNumber(process) + "/" + dropNumber(thread)
}

// IsThreadKind reports whether kind is ThreadKind(process, thread),
// without building that string: a world looks its kind records up this
// way whenever it starts a thread.
func IsThreadKind(kind, process, thread string) bool {
	p, t := dropNumber(process), dropNumber(thread)
	return len(kind) == len(p)+1+len(t) && kind[:len(p)] == p && kind[len(p)] == '/' && kind[len(p)+1:] == t
}

// dropNumber drops the trailing "-N" parts of name ("reader-3-7" is
// "reader").
func dropNumber(name string) string {
	for {
		i := len(name)
		for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
			i--
		}
		if i == len(name) || i < 2 || name[i-1] != '-' {
			return name
		}
		name = name[:i-1]
	}
}

// PeerUserConn is implemented by the Unix connections of a world that can
// tell who is at the other end, as SO_PEERCRED tells a listener who
// connected.
type PeerUserConn interface {
	// PeerUser names the user at the other end as of the connect (a uid
	// in real; in sim, whose processes have no users, the peer's
	// process stands for one), or "" when it cannot be told.
	PeerUser() string
}

// PeerUser names the user at the other end of c, or "" when c cannot tell
// (a TCP connection, a world without SO_PEERCRED).
func PeerUser(c Conn) string {
	if pc, ok := c.(PeerUserConn); ok {
		return pc.PeerUser()
	}
	return ""
}
