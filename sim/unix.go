package sim

import (
	"fmt"
	"io"
	"io/fs"
	"time"

	"xceiver/model"
)

// UnixConfig shapes simulated Unix stream sockets: no Nagle, no ACKs,
// bytes land in the peer's queue after a small delay.
//
// Flow control is Linux's (unix_stream_sendmsg): a send is cut into
// skbs of at most min(sndbuf/2 - 64, unixSkbMax) bytes; each skb's
// truesize (its bytes and its sk_buff and skb_shared_info) is charged to
// the sender's sk_wmem_alloc until the reader has consumed the whole skb;
// a send finds no room while wmem_alloc ≥ sndbuf, and the socket turns
// writable again only once wmem_alloc × 4 ≤ sndbuf (unix_writable). There
// is no autotuning, unlike TCP's buffers. Each skb costs the sender
// CPUConfig.Softirq for its allocation, queueing and the reader's wake-up
// (sk_data_ready), as a loopback segment does.
type UnixConfig struct {
	Delay   time.Duration
	BufSize int // the sender's sk_sndbuf (net.core.wmem_default)
}

const (
	// unixSkbMax bounds an skb's bytes: SKB_MAX_HEAD(0) (a 4 KiB page
	// less the skb_shared_info) plus UNIX_SKB_FRAGS_SZ (32 KiB of page
	// fragments), x86-64 with 4 KiB pages.
	unixSkbMax = 3776 + 32768
	// unixSkbOverhead is what an skb's truesize adds to its bytes: the
	// sk_buff and the skb_shared_info, each cache-aligned.
	unixSkbOverhead = 256 + 320
)

// unixChunk is one skb: bytes and the files it carried. Files ride with
// the first skb of their message. A read takes bytes across skbs, into
// one that carries files too, but stops after that one, as
// unix_stream_read_generic does (it glues skbs of different senders only
// without SO_PASSCRED, which no model code sets).
type unixChunk struct {
	data     []byte
	off      int
	files    []*File
	from     *unixConn // the sender, whose wmem the skb holds
	truesize int
}

type unixConn struct {
	w      *World
	p      *Process
	id     uint64
	fd     int
	local  string
	remote string
	peer   *unixConn
	// peerProc is the process at the other end as of the connect
	// (SO_PEERCRED's, which outlives the peer).
	peerProc string

	socketEvents

	rq      []unixChunk
	rqBytes int
	// wmem is this end's sk_wmem_alloc: the truesize of the skbs it sent
	// that the peer has not consumed yet (in flight or queued).
	wmem int
	// transit is the bytes the peer sent that have not reached this end
	// yet. Linux has no such state (unix_stream_sendmsg queues on the
	// receiver at once), so they count as this end's unread data.
	transit   int
	eof       bool
	wrShut    bool
	fdClosed  bool
	err       error
	errReturn bool // a read has returned err (later reads see EOF, as Linux's)
	// reset: a fault reset the connection; bytes and fds still in
	// flight to this end are lost.
	reset bool
}

func (w *World) dialUnix(p *Process, addr string, l *Loop, h model.Handler) (model.Conn, error) {
	ln := w.listen["unix/"+addr]
	refused := ln == nil || ln.closed || ln.p.crashed
	// unix_recvq_full is "queue length > backlog": Linux holds backlog+1.
	if !refused && len(ln.pending) > ln.backlog {
		return nil, fmt.Errorf("dial unix %s: accept queue full: %w", addr, model.ErrWouldBlock)
	}
	fd, err := p.allocFD(model.FDSocket, nil)
	if err != nil {
		return nil, fmt.Errorf("dial unix %s: %w", addr, err)
	}
	w.charge(w.cfg.CPU.Syscall)
	w.nextID++
	c := &unixConn{w: w, p: p, id: w.nextID, fd: fd, local: p.name + ":unix", remote: addr}
	c.socketEvents = socketEvents{src: c, readInterest: true, loop: l, handler: h}
	if refused {
		// connect fails at once (ENOENT, ECONNREFUSED), yet Dial
		// returns the socket and its handler hears of the failure
		// as of an asynchronous one, Hangup with Err set, as the
		// real world's does and as a refused TCP dial does.
		p.setFDObject(fd, c)
		c.err = fmt.Errorf("connect unix %s: %w", addr, model.ErrRefused)
		w.record(Event{Proc: p.name, Kind: "connect", Conn: c.id, S: "unix " + addr + " refused"})
		c.notify()
		return c, nil
	}
	w.nextID++
	s := &unixConn{w: w, p: ln.p, id: w.nextID, fd: -1, local: addr, remote: c.local}
	s.socketEvents = socketEvents{src: s, readInterest: true}
	c.peer, s.peer = s, c
	c.peerProc, s.peerProc = ln.p.name, p.name
	// The connect completes at once, and is reported as Writable once
	// whatever the write interest, as a TCP dial's is (model.Process.Dial).
	c.connected = true
	p.setFDObject(fd, c)
	w.record(Event{Proc: p.name, Kind: "connect", Conn: c.id, S: "unix " + addr})
	ln.pending = append(ln.pending, s)
	ln.notify()
	c.notify()
	return c, nil
}

func (c *unixConn) ID() uint64         { return c.id }
func (c *unixConn) LocalAddr() string  { return c.local }
func (c *unixConn) RemoteAddr() string { return c.remote }

// PeerUser implements model.PeerUserConn: sim's processes have no users,
// so each stands for one of its own.
func (c *unixConn) PeerUser() string {
	if c.peerProc == "" {
		return ""
	}
	return "process " + c.peerProc
}

func (c *unixConn) Err() error { return c.err }

// room reports whether a send may allocate an skb now.
func (c *unixConn) room() bool {
	return c.peer != nil && c.wmem < c.w.cfg.Unix.BufSize
}

// writable is unix_writable: a quarter of the send buffer or less in use.
func (c *unixConn) writable() bool {
	return c.peer != nil && c.wmem*4 <= c.w.cfg.Unix.BufSize
}

// freeSkb returns a consumed or dropped skb's truesize to its sender and
// wakes the sender when it turns writable (unix_write_space).
func (ch *unixChunk) freeSkb() {
	s := ch.from
	if s == nil {
		return
	}
	ch.from = nil
	was := s.writable()
	s.wmem -= ch.truesize
	if !was && s.writable() {
		s.notify()
	}
}

func (c *unixConn) readiness() model.Events {
	var ev model.Events
	if c.rqBytes > 0 || c.eof || c.err != nil {
		ev |= model.Readable
	}
	if c.eof || c.err != nil {
		ev |= model.PeerClosed // (unix_poll: EPOLLRDHUP on RCV_SHUTDOWN)
	}
	if c.err != nil {
		ev |= model.Hangup | model.Writable
	} else if c.peer != nil && c.writable() {
		// unix_poll reports EPOLLOUT by the send buffer alone
		// (unix_writable), after a shutdown or the peer's close too:
		// the write then fails with EPIPE, which is how a writer
		// waiting for room learns that its reader is gone.
		ev |= model.Writable
	}
	return ev
}

func (c *unixConn) fdOpen() bool   { return !c.fdClosed }
func (c *unixConn) dispatchReady() { c.dispatch() }

// Read is read(2): it stops where recvmsg would, and the files a message
// carried are dropped without ever taking an fd (no control buffer: the
// kernel's MSG_CTRUNC, which read cannot report).
func (c *unixConn) Read(p []byte) (int, error) {
	n, _, err := c.read(p, false)
	return n, err
}

func (c *unixConn) ReadFDs(p []byte) (int, []model.File, error) {
	return c.read(p, true)
}

func (c *unixConn) read(p []byte, takeFiles bool) (int, []model.File, error) {
	c.calls++
	if c.fdClosed {
		return 0, nil, model.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil, nil
	}
	c.w.charge(c.w.cfg.CPU.Syscall)
	if c.rqBytes == 0 {
		if c.err != nil && !c.errReturn {
			// sock_error returns sk_err once; the receive side is
			// shut (the peer's close, or the reset), so EOF after.
			c.errReturn = true
			return 0, nil, c.err
		}
		if c.err != nil {
			return 0, nil, io.EOF
		}
		if c.eof {
			return 0, nil, io.EOF
		}
		return 0, nil, model.ErrWouldBlock
	}
	n := 0
	var files []model.File
	var ferr error
	for n < len(p) && len(c.rq) > 0 {
		ch := &c.rq[0]
		carried := ch.files != nil
		for _, f := range ch.files {
			if takeFiles {
				nf, err := f.dup(c.p, model.FDPassed)
				if err != nil {
					ferr = err // MSG_CTRUNC: the rest are dropped
				} else {
					files = append(files, nf)
				}
			}
			f.kill()
		}
		ch.files = nil
		k := copy(p[n:], ch.data[ch.off:])
		n += k
		ch.off += k
		if ch.off == len(ch.data) {
			ch.freeSkb()
			c.rq[0] = unixChunk{}
			c.rq = c.rq[1:]
		}
		if carried {
			break // one message's files a read
		}
	}
	c.rqBytes -= n
	c.w.charge(time.Duration(int64(c.w.cfg.CPU.CopyPerKB) * int64(n) / 1024))
	if ferr != nil {
		return n, files, fmt.Errorf("recvmsg: passed fds dropped: %w", ferr)
	}
	return n, files, nil
}

func (c *unixConn) Write(p []byte) (int, error)     { return c.send(p, nil) }
func (c *unixConn) WriteMore(p []byte) (int, error) { return c.send(p, nil) }

// maxPassFDs is SCM_MAX_FD, the most files one message may carry.
const maxPassFDs = 253

func (c *unixConn) SendFDs(p []byte, files []model.File) (int, error) {
	if len(files) == 0 {
		return c.Write(p)
	}
	if len(p) == 0 {
		return 0, fmt.Errorf("sendmsg: SCM_RIGHTS needs at least one byte: %w", fs.ErrInvalid)
	}
	if len(files) > maxPassFDs {
		return 0, fmt.Errorf("sendmsg: %d fds, at most %d per message: %w", len(files), maxPassFDs, fs.ErrInvalid)
	}
	var held []*File
	for _, f := range files {
		sf, ok := f.(*File)
		if !ok || sf.closed {
			return 0, fmt.Errorf("sendmsg: %w", model.ErrClosed)
		}
		held = append(held, sf)
	}
	if !c.room() && c.err == nil && !c.fdClosed && !c.wrShut && c.peer != nil && !c.peer.fdClosed {
		return 0, model.ErrWouldBlock
	}
	if arm := c.p.netFaults.resetFDPass; arm != 0 && c.err == nil && !c.fdClosed {
		c.p.netFaults.resetFDPass = 0
		if arm == resetBeforePass {
			c.w.resetUnix(c, "reset before fd pass")
			return c.send(p, held)
		}
		n, err := c.send(p, held)
		c.w.resetUnix(c, "reset during fd pass")
		return n, err
	}
	return c.send(p, held)
}

func (c *unixConn) send(p []byte, files []*File) (int, error) {
	if c.fdClosed {
		return 0, model.ErrClosed
	}
	c.calls++
	c.w.charge(c.w.cfg.CPU.Syscall)
	// unix_stream_sendmsg looks at the shutdown state, never at sk_err:
	// once the peer closed, even with data unread, a write is EPIPE
	// (the ECONNRESET is for the next read).
	if c.wrShut || c.peer == nil || c.peer.fdClosed {
		return 0, model.ErrPipe
	}
	if c.err != nil {
		return 0, c.err // a reset fault, the peer still open
	}
	if !c.room() {
		return 0, model.ErrWouldBlock
	}
	// In flight, passed files hold their inodes (the kernel's in-flight
	// SCM_RIGHTS references) but no fd in either process.
	var inflight []*File
	for _, f := range files {
		f.ino.refs++
		inflight = append(inflight, &File{d: f.d, p: f.p, ino: f.ino, fd: -1, kind: model.FDPassed, writable: f.writable, gen: -1, wbSeen: f.wbSeen})
	}
	sndbuf := c.w.cfg.Unix.BufSize
	skbMax := min(sndbuf/2-64, unixSkbMax)
	n := 0
	for n < len(p) && c.room() {
		k := min(len(p)-n, skbMax)
		data := make([]byte, k)
		copy(data, p[n:n+k])
		ch := unixChunk{data: data, files: inflight, from: c, truesize: k + unixSkbOverhead}
		inflight = nil // the first skb carries the files
		n += k
		c.wmem += ch.truesize
		c.w.charge(c.w.cfg.CPU.Softirq + time.Duration(int64(c.w.cfg.CPU.CopyPerKB)*int64(k)/1024))
		c.w.record(Event{Proc: c.p.name, Kind: "uds", Conn: c.id, A: int64(k), B: int64(len(ch.files))})
		peer := c.peer
		peer.transit += k
		c.w.after(c.w.cfg.Unix.Delay, func() {
			peer.transit -= k
			if peer.fdClosed || peer.reset || peer.p.crashed && peer.fd >= 0 {
				for _, f := range ch.files {
					f.kill()
				}
				ch.freeSkb()
				return
			}
			peer.rq = append(peer.rq, ch)
			peer.rqBytes += k
			peer.notify()
		})
	}
	return n, nil
}

func (c *unixConn) SetNoDelay(bool) error { return nil }
func (c *unixConn) SetCork(bool) error    { return nil }
func (c *unixConn) QuickAck() error       { return nil }

func (c *unixConn) CloseWrite() error {
	if c.fdClosed {
		return model.ErrClosed
	}
	if !c.wrShut {
		c.wrShut = true
		c.deliverEOF()
	}
	return nil
}

func (c *unixConn) deliverEOF() {
	peer := c.peer
	// An end already closed has no handler and its reads fail before
	// they look at eof: the delivery would be an event that changes and
	// records nothing, 7% of the sc system's events (both ends of most
	// connections close, and the second close finds the first end gone).
	if peer == nil || peer.fdClosed {
		return
	}
	c.w.after(c.w.cfg.Unix.Delay, func() {
		peer.eof = true
		peer.notify()
	})
}

func (c *unixConn) Close() error {
	if c.fdClosed {
		return model.ErrClosed
	}
	c.kill()
	return nil
}

func (c *unixConn) Abort() error { return c.Close() }

// kill releases the socket. Unread data, counting what is still on its
// way here, makes the peer see ECONNRESET (unix_release_sock); otherwise
// it sees EOF.
func (c *unixConn) kill() {
	if c.fdClosed {
		return
	}
	c.fdClosed = true
	c.handler = nil
	unread := c.rqBytes + c.transit
	c.w.record(Event{Proc: c.p.name, Kind: "close", Conn: c.id, A: int64(unread), S: "unix"})
	c.p.freeFD(c.fd)
	c.dropQueue()
	peer := c.peer
	if peer == nil {
		return
	}
	if unread > 0 {
		c.w.after(c.w.cfg.Unix.Delay, func() {
			if peer.err == nil {
				peer.err = model.ErrReset
			}
			peer.notify()
		})
	} else if !c.wrShut {
		c.wrShut = true
		c.deliverEOF()
	}
	peer.notify()
}

func (c *unixConn) dropQueue() {
	for i := range c.rq {
		ch := &c.rq[i]
		for _, f := range ch.files {
			f.kill()
		}
		ch.freeSkb()
	}
	c.rq, c.rqBytes = nil, 0
}

// abortUnaccepted resets a connection whose listener closed before
// accepting it.
func (c *unixConn) abortUnaccepted() {
	c.fdClosed = true
	c.dropQueue()
	if peer := c.peer; peer != nil {
		if peer.err == nil {
			peer.err = model.ErrReset
		}
		peer.notify()
	}
}

// resetUnix breaks connection c as a fault: both ends fail with
// ECONNRESET at once, their unread bytes and fds are dropped and
// whatever is in flight between them is lost (its fds closed). Linux has
// no RST for AF_UNIX; this is what an end sees when its peer dies with
// unread data, applied to both ends at the same instant.
func (w *World) resetUnix(c *unixConn, what string) {
	w.fault(c.p.name, c.id, what)
	for _, e := range []*unixConn{c, c.peer} {
		if e == nil || e.reset {
			continue
		}
		e.reset = true
		if e.err == nil {
			e.err = model.ErrReset
		}
		e.dropQueue()
		e.notify()
	}
}

// ResetUnix resets Unix connection id (either end's id): both ends fail
// with ECONNRESET now and data and fds in flight are lost. It reports
// whether an open end was found.
func (w *World) ResetUnix(id uint64) bool {
	for _, p := range w.procs {
		for _, o := range p.fds.objs {
			if c, ok := o.(*unixConn); ok && !c.fdClosed && (c.id == id || c.peer != nil && c.peer.id == id) {
				if c.reset {
					return false
				}
				w.resetUnix(c, "reset")
				return true
			}
		}
	}
	return false
}

// UnixConns lists the ids of p's open Unix connections, in fd order.
func (p *Process) UnixConns() []uint64 {
	var ids []uint64
	for _, o := range p.fds.objs {
		if c, ok := o.(*unixConn); ok && !c.fdClosed {
			ids = append(ids, c.id)
		}
	}
	return ids
}

// ResetNextFDPass arms a fault on p: its next sendmsg with SCM_RIGHTS
// resets the connection, before the message goes (the send fails with
// ECONNRESET) or, with after, once it is queued (the message and its fds
// are lost in flight while the sender believes them sent).
func (p *Process) ResetNextFDPass(after bool) {
	arm := resetBeforePass
	if after {
		arm = resetAfterPass
	}
	p.w.fault(p.name, 0, fmt.Sprintf("reset next fd pass (after %v)", after))
	p.netFaults.resetFDPass = arm
}

// FDPassResetArmed reports whether a ResetNextFDPass has not fired yet:
// such a fault has no end time, it is in force until the next fd pass.
func (p *Process) FDPassResetArmed() bool { return p.netFaults.resetFDPass != 0 }
