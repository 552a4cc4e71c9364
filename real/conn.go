package real

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"xceiver/model"
)

// conn is a non-blocking stream socket. It implements model.Conn.
//
// # Ownership and loops
//
// A conn belongs to at most one loop at a time, the one its handler runs
// on. SetHandler(loop, h) registers the fd on loop's epoll (removing it
// from the previous loop's epoll first), so from the moment it returns,
// events are delivered on loop only. The rule this implements: call
// SetHandler from the goroutine that owns the conn — a callback of the
// loop it is registered on (to move it away), or, for a conn that has no
// loop yet (fresh from Accept), any callback or code running before
// World.Run — and do not touch the conn from the old loop afterwards. A
// reactor's acceptor may therefore hand an accepted conn to a selector
// loop either directly (c.SetHandler(sel, h)) or by posting the call to
// sel. The wrapper's own state is locked, so breaking the rule cannot
// corrupt epoll registrations; it only races in model code.
//
// Read, Write and the other data operations may be called from any one
// goroutine at a time that owns the conn, including a worker it was handed
// to (Sendfile from a worker while the loop keeps its handler). Close
// waits for such an operation in flight, so it never closes an fd number
// that a concurrent call could then hit after the kernel reused it.
//
// Close removes the fd from its loop's epoll before closing it, so a loop
// never sees events for a closed conn; events already fetched in the same
// epoll_wait batch are dropped because the conn is no longer registered.
type conn struct {
	p       *process
	id      uint64
	network string // "tcp" or "unix"
	local   string
	remote  string
	desc    string // for error messages
	sysfd   int    // the fd; valid until fdClosed

	// fdmu guards the fd's life: data operations hold it shared, Close
	// exclusively.
	fdmu     sync.RWMutex
	fdClosed bool

	dead atomic.Bool           // reset or failed connect: reads and writes fail with err
	err  atomic.Pointer[error] // the error that ended the connection
	// told: a read (or, on TCP, a write) of a dead conn has returned its
	// error. Linux returns sk_err once, to whichever comes first; after
	// it the socket is shut, so reads see EOF and writes EPIPE (the
	// kernel says so itself, the dispatch having read SO_ERROR). A Unix
	// write never returns sk_err (unix_stream_sendmsg looks only at the
	// shutdown), so it goes to the kernel and leaves the error to a read.
	told atomic.Bool
	// shutWr: CloseWrite shut the write side, so EPIPE is ours, not a
	// reset's.
	shutWr atomic.Bool

	mu         sync.Mutex
	closed     bool
	loop       *loop // where the handler runs
	handler    model.Handler
	readOn     bool
	writeOn    bool
	closedOn   bool // peer-closed interest: EPOLLRDHUP without EPOLLIN
	connecting bool
	regLoop    *loop  // the loop whose epoll holds the fd, if any
	regMask    uint32 // the events registered there
	// hupSent: the handler set last has been told Hangup; the fd then
	// leaves epoll, so a model that does not close at once does not
	// spin. SetHandler clears it: epoll reports a dead socket's
	// EPOLLHUP to a fresh registration, and a new owner must learn it.
	hupSent bool
	// handlers counts SetHandler calls (a failed dial's posted Hangup is
	// for the handler the dial set, and only while it is still set).
	handlers int
	// hupQuiet: both directions were shut without an error while no
	// event was wanted; EPOLLHUP would fire for ever, and the handler has
	// nothing to hear, so the fd stays out of epoll until it wants one.
	hupQuiet bool
}

var _ model.Conn = (*conn)(nil)

func newConn(p *process, fd int, network, local, remote string) *conn {
	c := &conn{
		p:       p,
		id:      p.w.nextID(),
		network: network,
		local:   local,
		remote:  remote,
		sysfd:   fd,
		readOn:  true,
	}
	c.desc = fmt.Sprintf("conn %d (%s %s→%s)", c.id, network, local, remote)
	return c
}

func (c *conn) ID() uint64         { return c.id }
func (c *conn) LocalAddr() string  { return c.local }
func (c *conn) RemoteAddr() string { return c.remote }
func (c *conn) String() string     { return c.desc }

// Err is the error that ended the connection (a reset, a failed connect,
// a broken pipe), or nil.
func (c *conn) Err() error {
	if e := c.err.Load(); e != nil {
		return *e
	}
	return nil
}

// fail wraps err from op. Errors that end the connection are remembered
// for Err; a reset or failed connect also makes later reads and writes
// return it, as the model's sim does.
func (c *conn) fail(op string, err error) error {
	e := wrapErr(op, c.desc, err)
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return e
	}
	switch errno {
	case unix.ECONNRESET, unix.ECONNABORTED, unix.ETIMEDOUT, unix.ECONNREFUSED,
		unix.EHOSTUNREACH, unix.ENETUNREACH:
		c.err.CompareAndSwap(nil, &e)
		c.dead.Store(true)
	case unix.EPIPE:
		c.err.CompareAndSwap(nil, &e)
		if c.network == "tcp" && !c.shutWr.Load() {
			// Not our own shutdown: the peer reset the connection
			// after its FIN (tcp_reset says EPIPE in CLOSE_WAIT), and
			// this call took sk_err before epoll could report it; a
			// Hangup must still come.
			c.dead.Store(true)
		}
	}
	return e
}

// use runs f with the fd, unless the conn is closed.
func (c *conn) use(op string, f func(fd int) error) error {
	c.fdmu.RLock()
	defer c.fdmu.RUnlock()
	if c.fdClosed {
		return newErr(op, c.desc, model.ErrClosed)
	}
	return f(c.sysfd)
}

// PeerUser implements model.PeerUserConn for a Unix connection: the uid
// SO_PEERCRED reports.
func (c *conn) PeerUser() string {
	if c.network != "unix" {
		return ""
	}
	var uid string
	_ = c.use("getsockopt", func(fd int) error {
		cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err == nil {
			uid = fmt.Sprintf("uid %d", cred.Uid)
		}
		return err
	})
	return uid
}

// SetHandler registers the conn on loop with handler h (see the type's
// doc for the ownership rule). Misuse — a loop of another process or
// world, a closed loop — fails the world, as SetHandler has no error.
func (c *conn) SetHandler(ml model.Loop, h model.Handler) {
	l, err := c.p.loopOf(ml)
	if err != nil {
		c.p.w.Fail(fmt.Errorf("real: %s: SetHandler: %w", c.desc, err))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.loop, c.handler = l, h
	c.hupSent = false
	c.handlers++
	c.update()
}

// SetWriteInterest asks for Writable events; EPOLLOUT is in the epoll set
// only while it is on.
func (c *conn) SetWriteInterest(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeOn = on
	c.update()
}

// SetReadInterest asks for Readable events. With both interests off the
// fd stays in epoll for what epoll always reports (EPOLLERR, EPOLLHUP), so
// a reset still reaches the handler as Hangup, as on Linux and in sim.
func (c *conn) SetReadInterest(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readOn = on
	c.update()
}

// SetPeerClosedInterest asks for PeerClosed events: EPOLLRDHUP is in the
// epoll set while it is on, and with read interest off it comes without
// EPOLLIN, so unread data does not wake the loop.
func (c *conn) SetPeerClosedInterest(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closedOn = on
	c.update()
}

// mask is the epoll interest the conn's state calls for. Called with mu
// held.
func (c *conn) mask() uint32 {
	if c.closed || c.loop == nil || c.handler == nil || c.dead.Load() && c.hupSent {
		return 0
	}
	var m uint32
	if c.readOn {
		m |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if c.closedOn {
		m |= unix.EPOLLRDHUP
	}
	if c.writeOn || c.connecting {
		m |= unix.EPOLLOUT
	}
	if m == 0 && !c.hupQuiet {
		// Registered for nothing but what epoll adds to every
		// registration (0 here would mean not registered).
		m = unix.EPOLLERR
	}
	return m
}

// update brings the epoll registration in line with the conn's state,
// moving it between loops if needed. Called with mu held; the fd is open
// while closed is false under mu, because Close sets closed first.
func (c *conn) update() {
	m := c.mask()
	if c.regLoop != nil && (c.regLoop != c.loop || m == 0) {
		if err := c.regLoop.setInterest(c, c.id, c.sysfd, c.regMask, 0); err != nil {
			c.p.w.Fail(fmt.Errorf("real: %s: %w", c.desc, err))
		}
		c.regLoop, c.regMask = nil, 0
	}
	if m == 0 || c.closed {
		return
	}
	if err := c.loop.setInterest(c, c.id, c.sysfd, c.regMask, m); err != nil {
		c.p.w.Fail(fmt.Errorf("real: %s: %w", c.desc, err))
		return
	}
	c.regLoop, c.regMask = c.loop, m
}

// dispatch turns epoll events into the handler's Events.
//
//   - EPOLLIN, EPOLLRDHUP (peer's FIN) → Readable: a read returns data or
//     io.EOF.
//   - EPOLLOUT → Writable, if write interest is on, or once when a connect
//     completes.
//   - EPOLLERR → the socket error (SO_ERROR) becomes Err; a reset or
//     failed connect is delivered as Hangup (with Readable if read
//     interest is on, so the model reads the error) and the fd leaves
//     epoll, so a model that does not close at once does not spin.
//   - EPOLLHUP (both directions shut) → Readable and Writable as far as
//     interest goes: reads return EOF, writes EPIPE.
//   - EPOLLRDHUP or EPOLLHUP → PeerClosed, if peer-closed interest is on.
func (c *conn) dispatch(l *loop, events uint32) {
	c.mu.Lock()
	if c.closed || c.regLoop != l || c.handler == nil {
		c.mu.Unlock()
		return
	}
	h := c.handler
	var ev model.Events
	if c.connecting {
		if events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			c.mu.Unlock()
			return
		}
		c.connecting = false
		soErr := c.soError()
		if soErr == nil && events&unix.EPOLLOUT == 0 {
			soErr = unix.ECONNREFUSED // hung up without saying why
		}
		if soErr != nil {
			c.fail("connect", soErr)
			ev = model.Hangup
			if c.closedOn {
				ev |= model.PeerClosed // (tcp_done shuts both ways: EPOLLRDHUP too)
			}
		} else {
			ev = model.Writable
			if c.readOn && events&unix.EPOLLIN != 0 {
				ev |= model.Readable
			}
		}
	} else {
		if events&unix.EPOLLERR != 0 {
			if soErr := c.soError(); soErr != nil {
				c.fail("socket", soErr)
				if soErr == unix.EPIPE && c.network == "tcp" {
					// A reset after the peer's FIN (fail marks it
					// dead, so Hangup, as the sim has it): reads go
					// on to the kernel's EOF (the FIN came first)
					// and writes to its EPIPE.
					c.told.Store(true)
				}
			}
		}
		if c.readOn && events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			ev |= model.Readable
		}
		if c.writeOn && events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			ev |= model.Writable
		}
		if c.closedOn && events&(unix.EPOLLRDHUP|unix.EPOLLHUP) != 0 {
			ev |= model.PeerClosed
		}
		if c.dead.Load() {
			ev |= model.Hangup
		} else if ev == 0 && events&unix.EPOLLHUP != 0 {
			c.hupQuiet = true
		}
	}
	if ev&model.Hangup != 0 {
		c.hupSent = true
	}
	c.update()
	c.mu.Unlock()
	if ev != 0 {
		h(ev)
	}
}

// soError fetches and clears the socket's pending error. Called with mu
// held (so the fd is open).
func (c *conn) soError() error {
	v, err := unix.GetsockoptInt(c.sysfd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if v != 0 {
		return unix.Errno(v)
	}
	return nil
}

// Read reads what is queued: (0, io.EOF) after the peer's FIN,
// model.ErrWouldBlock when nothing is, the reset error after a reset
// (once, then io.EOF, as Linux).
func (c *conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	err := c.use("read", func(fd int) error {
		for {
			m, err := unix.Read(fd, b)
			if err == unix.EINTR {
				continue
			}
			if m > 0 {
				n = m
				return nil
			}
			return c.noData("read", err)
		}
	})
	return n, err
}

// Write sends what fits in the send buffer.
func (c *conn) Write(b []byte) (int, error) { return c.send("write", b, nil, 0) }

// WriteMore is Write with MSG_MORE. Unix sockets ignore the flag.
func (c *conn) WriteMore(b []byte) (int, error) { return c.send("write", b, nil, unix.MSG_MORE) }

func (c *conn) send(op string, b, oob []byte, flags int) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	err := c.use(op, func(fd int) error {
		if err := c.deadWriteErr(); err != nil {
			return err
		}
		// (A Unix socket's write goes to the kernel even once the
		// conn is dead: unix_stream_sendmsg fails with EPIPE for a
		// closed peer whatever its error, which the read returns.)
		for {
			m, err := unix.SendmsgN(fd, b, oob, nil, flags|unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return c.failWrite(op, err)
			}
			n = m
			return nil
		}
	})
	return n, err
}

// noData is what a read that got no bytes returns. Linux gives the data
// still queued before a reset's error (the read above took it), then the
// error once, then EOF: the dispatch may have taken sk_err already
// (SO_ERROR), so a dead conn's error is given here, once (see told).
func (c *conn) noData(op string, err error) error {
	if c.dead.Load() {
		if !c.told.Swap(true) {
			return c.Err()
		}
		return io.EOF
	}
	if err != nil {
		return c.failTold(op, err, true)
	}
	return io.EOF
}

// deadWriteErr is what a write to a dead conn returns without the kernel:
// a TCP conn's error, once, as tcp_sendmsg returns sk_err; nil to go on
// to the kernel, which says EPIPE, as a Unix write always does
// (unix_stream_sendmsg looks only at the shutdown and leaves sk_err to a
// read).
func (c *conn) deadWriteErr() error {
	if c.dead.Load() && c.network == "tcp" && !c.told.Swap(true) {
		return c.Err()
	}
	return nil
}

// failWrite is fail for a write's error; on TCP the error is then told.
func (c *conn) failWrite(op string, err error) error {
	return c.failTold(op, err, c.network == "tcp")
}

// failTold is fail for an error a read or write returns; with tells, an
// error that ended the conn counts as told (see told). A would-block
// tells nothing, even if the dispatch has just seen the conn die.
func (c *conn) failTold(op string, err error, tells bool) error {
	e := c.fail(op, err)
	if tells && err != unix.EAGAIN {
		c.told.Store(c.dead.Load())
	}
	return e
}

// setTCP sets a TCP option; on Unix sockets, which have no Nagle, delayed
// ACK or corking, it does nothing.
func (c *conn) setTCP(op string, opt int, v int) error {
	if c.network != "tcp" {
		return nil
	}
	return c.use(op, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, opt, v); err != nil {
			return wrapErr(op, c.desc, err)
		}
		return nil
	})
}

func boolInt(on bool) int {
	if on {
		return 1
	}
	return 0
}

// ReceiveBuffer implements model.ReceiveBufferer: SO_RCVBUF, which the
// kernel's autotuning grows on a socket nobody sized.
func (c *conn) ReceiveBuffer() (int, error) {
	var n int
	err := c.use("get SO_RCVBUF", func(fd int) error {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		if err != nil {
			return wrapErr("get SO_RCVBUF", c.desc, err)
		}
		n = v
		return nil
	})
	return n, err
}

// SetNoDelay sets TCP_NODELAY (off on a new socket, as in the kernel).
func (c *conn) SetNoDelay(on bool) error {
	return c.setTCP("set TCP_NODELAY", unix.TCP_NODELAY, boolInt(on))
}

// SetCork sets TCP_CORK.
func (c *conn) SetCork(on bool) error { return c.setTCP("set TCP_CORK", unix.TCP_CORK, boolInt(on)) }

// QuickAck sets TCP_QUICKACK, which the kernel clears again by itself.
func (c *conn) QuickAck() error { return c.setTCP("set TCP_QUICKACK", unix.TCP_QUICKACK, 1) }

// maxPassFDs is the kernel's limit on fds in one SCM_RIGHTS message
// (SCM_MAX_FD).
const maxPassFDs = 253

// SendFDs sends b with files attached (SCM_RIGHTS); Unix sockets only. The
// kernel sends a message that fits in the socket buffer whole or not at
// all; a b larger than about half the send buffer could go out in part
// (the fds ride with the first part), so keep the message small.
func (c *conn) SendFDs(b []byte, files []model.File) (int, error) {
	const op = "sendfds"
	if c.network != "unix" {
		return 0, newErr(op, c.desc, model.ErrNotSupported)
	}
	if len(files) == 0 {
		return c.Write(b)
	}
	if len(b) == 0 {
		return 0, badArg(op, c.desc, "fds must travel with at least one byte")
	}
	if len(files) > maxPassFDs {
		return 0, badArg(op, c.desc, fmt.Sprintf("%d fds, at most %d per message", len(files), maxPassFDs))
	}
	fds := make([]int, 0, len(files))
	seen := make(map[*file]bool, len(files))
	defer func() {
		for f := range seen {
			f.fdmu.RUnlock()
		}
	}()
	for _, mf := range files {
		f, ok := mf.(*file)
		if !ok || f == nil {
			return 0, badArg(op, c.desc, fmt.Sprintf("%T is not a file of the real world", mf))
		}
		if !seen[f] {
			f.fdmu.RLock() // keeps the fd open until the kernel has taken its reference
			seen[f] = true
		}
		if f.fdClosed {
			return 0, newErr(op, f.name, model.ErrClosed)
		}
		fds = append(fds, f.sysfd)
	}
	return c.send(op, b, unix.UnixRights(fds...), 0)
}

// ReadFDs reads like Read and also receives the fds sent with those bytes
// (SCM_RIGHTS, close-on-exec); each becomes a File of kind FDPassed in the
// reader's fd table. Fds beyond the reader's fd limit are closed, as the
// kernel does when RLIMIT_NOFILE is reached; then the bytes and the files
// that fit are returned along with an error wrapping ErrTooManyFiles.
func (c *conn) ReadFDs(b []byte) (int, []model.File, error) {
	const op = "readfds"
	if c.network != "unix" {
		return 0, nil, newErr(op, c.desc, model.ErrNotSupported)
	}
	if len(b) == 0 {
		return 0, nil, nil
	}
	var (
		n       int
		files   []model.File
		dropped int
	)
	err := c.use(op, func(fd int) error {
		oob := make([]byte, unix.CmsgSpace(maxPassFDs*4))
		t := &c.p.fds
		// Receive with the table locked, so the new fds are never open
		// without being accounted.
		t.mu.Lock()
		defer t.mu.Unlock()
		var (
			m, oobn, rflags int
			err             error
		)
		for {
			m, oobn, rflags, _, err = unix.Recvmsg(fd, b, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil || m <= 0 && oobn == 0 {
			return c.noData(op, err)
		}
		got, perr := parseRights(oob[:oobn])
		for _, nfd := range got {
			if len(t.fds) >= t.limit {
				unix.Close(nfd)
				dropped++
				continue
			}
			f := newFile(c.p, nfd, fmt.Sprintf("fd passed over %s", c.desc), model.FDPassed)
			t.add(nfd, model.FDPassed, f)
			files = append(files, f)
		}
		if rflags&unix.MSG_CTRUNC != 0 {
			dropped++
		}
		n = m
		if perr != nil {
			return fmt.Errorf("real: %s %s: %w", op, c.desc, perr)
		}
		if m == 0 && len(got) == 0 {
			return io.EOF
		}
		return nil
	})
	if err == nil && dropped > 0 {
		err = newErr(op, c.desc, model.ErrTooManyFiles)
	}
	return n, files, err
}

// parseRights extracts the fds of SCM_RIGHTS messages. It returns every fd
// it could parse even when it also reports an error, so none leaks.
func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse control message: %w", err)
	}
	var fds []int
	var errs []error
	for i := range msgs {
		if msgs[i].Header.Level != unix.SOL_SOCKET || msgs[i].Header.Type != unix.SCM_RIGHTS {
			continue
		}
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fds = append(fds, got...)
	}
	return fds, errors.Join(errs...)
}

// CloseWrite shuts down the sending side (FIN after queued data).
func (c *conn) CloseWrite() error {
	return c.use("shutdown", func(fd int) error {
		c.shutWr.Store(true)
		if err := unix.Shutdown(fd, unix.SHUT_WR); err != nil {
			return c.fail("shutdown", err)
		}
		return nil
	})
}

// Close removes the conn from its loop's epoll and closes the fd.
func (c *conn) Close() error { return c.close("close") }

// Abort closes with SO_LINGER {1, 0}, so a TCP peer gets RST.
func (c *conn) Abort() error {
	err := c.use("abort", func(fd int) error {
		return unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	})
	if errors.Is(err, model.ErrClosed) {
		return err
	}
	cerr := c.close("abort")
	if err != nil {
		return wrapErr("abort", c.desc, err)
	}
	return cerr
}

func (c *conn) close(op string) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return newErr(op, c.desc, model.ErrClosed)
	}
	c.closed = true
	c.update() // leaves epoll
	c.mu.Unlock()
	c.fdmu.Lock() // waits for a Read, Write or Sendfile in flight
	c.fdClosed = true
	c.fdmu.Unlock()
	return c.p.fds.close(c.sysfd)
}

func (c *conn) forceClose() { c.close("close") }

// listener is a listening socket. It implements model.Listener.
type listener struct {
	p       *process
	l       *loop
	id      uint64
	network string
	addr    string // as reported by Addr
	path    string // a Unix socket's file, removed on Close
	sysfd   int

	fdmu     sync.RWMutex
	fdClosed bool

	mu      sync.Mutex
	closed  bool
	handler func()
	regMask uint32
}

var _ model.Listener = (*listener)(nil)

func listen(p *process, l *loop, network, addr string, backlog int) (*listener, error) {
	obj := network + " " + addr
	ra, err := p.w.resolve(network, addr)
	if err != nil {
		return nil, fmt.Errorf("real: listen %s: %w", obj, err)
	}
	if ra.path != "" {
		// Under the world's directory, which is never made again (a
		// signal's RemoveScratch may have removed it); elsewhere, as
		// the caller asked.
		var err error
		if rel, rerr := filepath.Rel(p.w.root, ra.path); rerr == nil && filepath.IsLocal(rel) {
			err = mkdirBelow(p.w.root, filepath.Dir(ra.path))
		} else {
			err = os.MkdirAll(filepath.Dir(ra.path), 0o700)
		}
		if err != nil {
			return nil, fmt.Errorf("real: listen %s: %w", obj, err)
		}
	}
	fd, err := p.fds.create("listen", obj, model.FDListener, func() (int, error) {
		return unix.Socket(ra.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*listener, error) {
		p.fds.close(fd)
		return nil, wrapErr("listen", obj, err)
	}
	if ra.family != unix.AF_UNIX {
		// Let a new world reuse a port whose old connections are in
		// TIME_WAIT; a port someone listens on still fails EADDRINUSE.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fail(err)
		}
	}
	if err := unix.Bind(fd, ra.sa); err != nil {
		return fail(err)
	}
	if backlog <= 0 {
		backlog = model.DefaultBacklog
	}
	if err := unix.Listen(fd, backlog); err != nil {
		if ra.path != "" {
			unix.Unlink(ra.path)
		}
		return fail(err)
	}
	ln := &listener{p: p, l: l, id: p.w.nextID(), network: network, addr: addr, path: ra.path, sysfd: fd}
	if ra.path == "" {
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return fail(err)
		}
		ln.addr = sockaddrString(sa)
	}
	p.fds.own(fd, ln)
	return ln, nil
}

func (ln *listener) Addr() string { return ln.addr }

// SetHandler sets the function called on the listener's loop while
// connections wait to be accepted; nil stops the calls.
func (ln *listener) SetHandler(h func()) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.closed {
		return
	}
	ln.handler = h
	var m uint32
	if h != nil {
		m = unix.EPOLLIN
	}
	if err := ln.l.setInterest(ln, ln.id, ln.sysfd, ln.regMask, m); err != nil {
		ln.p.w.Fail(fmt.Errorf("real: listener %s: %w", ln.addr, err))
		return
	}
	ln.regMask = m
}

func (ln *listener) dispatch(l *loop, events uint32) {
	ln.mu.Lock()
	h := ln.handler
	ok := !ln.closed && ln.regMask != 0
	ln.mu.Unlock()
	if ok && h != nil {
		h()
	}
}

// Accept returns a pending connection, non-blocking and close-on-exec,
// with no loop yet. At the process's fd limit it returns ErrTooManyFiles
// and leaves the connection queued, as accept(2) does at EMFILE.
func (ln *listener) Accept() (model.Conn, error) {
	const op = "accept"
	var c *conn
	err := func() error {
		ln.fdmu.RLock()
		defer ln.fdmu.RUnlock()
		if ln.fdClosed {
			return newErr(op, ln.addr, model.ErrClosed)
		}
		t := &ln.p.fds
		t.mu.Lock()
		defer t.mu.Unlock()
		if err := t.room(op, ln.addr, 1); err != nil {
			return err
		}
		for {
			nfd, sa, err := unix.Accept4(ln.sysfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			switch err {
			case nil:
			case unix.EINTR, unix.ECONNABORTED:
				continue
			default:
				return wrapErr(op, ln.addr, err)
			}
			local, remote := ln.addr, sockaddrString(sa)
			if ln.path == "" {
				if lsa, err := unix.Getsockname(nfd); err == nil {
					local = sockaddrString(lsa)
				}
			}
			c = newConn(ln.p, nfd, ln.network, local, remote)
			t.add(nfd, model.FDSocket, c)
			return nil
		}
	}()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Close stops listening; a Unix listener also removes its socket file.
func (ln *listener) Close() error {
	ln.mu.Lock()
	if ln.closed {
		ln.mu.Unlock()
		return newErr("close", ln.addr, model.ErrClosed)
	}
	ln.closed = true
	ln.l.setInterest(ln, ln.id, ln.sysfd, ln.regMask, 0)
	ln.regMask = 0
	ln.mu.Unlock()
	ln.fdmu.Lock()
	ln.fdClosed = true
	ln.fdmu.Unlock()
	err := ln.p.fds.close(ln.sysfd)
	if ln.path != "" {
		unix.Unlink(ln.path)
	}
	return err
}

func (ln *listener) forceClose() { ln.Close() }

// dial starts a non-blocking connect.
func dial(p *process, l *loop, network, addr string, h model.Handler) (*conn, error) {
	obj := network + " " + addr
	ra, err := p.w.resolve(network, addr)
	if err != nil {
		return nil, fmt.Errorf("real: dial %s: %w", obj, err)
	}
	fd, err := p.fds.create("dial", obj, model.FDSocket, func() (int, error) {
		return unix.Socket(ra.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	})
	if err != nil {
		return nil, err
	}
	var cerr error
	for {
		cerr = unix.Connect(fd, ra.sa)
		if cerr != unix.EINTR {
			break
		}
	}
	if cerr == unix.EAGAIN {
		// A Unix listener's backlog is full: Linux fails the
		// non-blocking connect at once with EAGAIN.
		p.fds.close(fd)
		return nil, &sysError{op: "dial", obj: obj, kind: model.ErrWouldBlock, errno: unix.EAGAIN}
	}
	local := ""
	if sa, err := unix.Getsockname(fd); err == nil {
		local = sockaddrString(sa)
	}
	c := newConn(p, fd, ra.network, local, ra.display)
	p.fds.own(fd, c)
	c.mu.Lock()
	c.loop, c.handler = l, h
	switch cerr {
	case nil, unix.EINPROGRESS:
		// Either way the loop learns of the outcome from EPOLLOUT.
		c.connecting = true
	default:
		if cerr == unix.ENOENT {
			// No socket file: nobody listens there.
			e := error(&sysError{op: "connect", obj: c.desc, kind: model.ErrRefused, errno: unix.ENOENT})
			c.err.Store(&e)
			c.dead.Store(true)
		} else {
			c.fail("connect", cerr)
		}
		// Report the failure like an asynchronous one: Hangup on the
		// loop, with Err set (this post tells it, not epoll).
		c.hupSent = true
		set := c.handlers
		l.Post(func() {
			c.mu.Lock()
			// (A SetHandler since registered the conn: epoll tells
			// the new handler, and this must not tell it twice.)
			ok := !c.closed && c.loop == l && c.handler != nil && c.handlers == set
			h := c.handler
			c.mu.Unlock()
			if ok {
				h(model.Hangup)
			}
		})
	}
	c.update()
	c.mu.Unlock()
	return c, nil
}

// resolved is an address ready for bind or connect.
type resolved struct {
	network string // "tcp" or "unix"
	family  int
	sa      unix.Sockaddr
	path    string // Unix socket file
	display string // the address as the model names it
}

// resolve parses a model address. TCP: "ip:port", with "localhost" or an
// empty host meaning 127.0.0.1. Unix: a path; a relative one is under the
// world's sock directory, so every process finds it by the same name.
// CheckAddr reports why addr could not be listened on or dialled in w:
// an unknown network, or a Unix socket path too long for sockaddr_un (an
// absolute one, or a relative one too long even seen through the socket
// directory's fd, sockAlias), which a run would otherwise meet half-way,
// at its first listen.
func (w *World) CheckAddr(network, addr string) error {
	_, err := w.resolve(network, addr)
	return err
}

func (w *World) resolve(network, addr string) (resolved, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return resolved{}, fmt.Errorf("address %q: missing port: %w", addr, errBadAddr)
		}
		host, port := strings.Trim(addr[:i], "[]"), addr[i+1:]
		if host == "" || host == "localhost" {
			host = "127.0.0.1"
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return resolved{}, fmt.Errorf("address %q: %w", addr, errBadAddr)
		}
		pn, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return resolved{}, fmt.Errorf("address %q: bad port: %w", addr, errBadAddr)
		}
		r := resolved{network: "tcp", display: netip.AddrPortFrom(ip, uint16(pn)).String()}
		if ip.Is4() || ip.Is4In6() {
			r.family = unix.AF_INET
			r.sa = &unix.SockaddrInet4{Port: int(pn), Addr: ip.Unmap().As4()}
		} else {
			r.family = unix.AF_INET6
			r.sa = &unix.SockaddrInet6{Port: int(pn), Addr: ip.As16()}
		}
		return r, nil
	case "unix":
		if addr == "" {
			return resolved{}, fmt.Errorf("empty Unix address: %w", errBadAddr)
		}
		path, name := addr, addr
		limit := len(unix.RawSockaddrUnix{}.Path) // with the NUL
		if !filepath.IsAbs(addr) {
			if !filepath.IsLocal(addr) {
				return resolved{}, fmt.Errorf("Unix address %q escapes the world's directory: %w", addr, errBadAddr)
			}
			path = filepath.Join(w.root, "sock", addr)
			name = path
			if len(path) >= limit {
				alias, err := w.sockAlias(filepath.Clean(addr))
				if err != nil {
					return resolved{}, err
				}
				name = alias
			}
		}
		if len(name) >= limit {
			if name != path {
				return resolved{}, fmt.Errorf("Unix address %q is too long: seen from the world's socket directory (%s) it is %d bytes, over %d: %w", addr, name, len(name), limit-1, errBadAddr)
			}
			return resolved{}, fmt.Errorf("Unix socket path %q is longer than %d bytes: %w", name, limit-1, errBadAddr)
		}
		return resolved{network: "unix", family: unix.AF_UNIX, sa: &unix.SockaddrUnix{Name: name}, path: path, display: addr}, nil
	default:
		return resolved{}, fmt.Errorf("network %q: %w", network, model.ErrNotSupported)
	}
}

var errBadAddr = errors.New("bad address")

func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrUnix:
		if a.Name == "@" {
			return "" // an unnamed socket (x/sys shows it as an empty abstract name)
		}
		return a.Name
	default:
		return ""
	}
}
