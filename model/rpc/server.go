package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"xceiver/model"
)

// Service answers calls. Serve runs on a handler's loop and must call done
// exactly once, on that same loop (a namespace lock's Do does). The
// handler takes no other call until done is called, as a Hadoop handler
// thread is busy until its method returns. payload is the handler's own.
type Service interface {
	Serve(loop model.Loop, method uint8, payload []byte, done func(Status, []byte))
}

// Decoder is a Service that decodes a call apart from serving it, so that
// a reader can deserialise calls before queueing them, as Hadoop 0.20's
// did (ServerConfig.HadoopReader). Serve must equal Decode then
// ServeDecoded.
type Decoder interface {
	Service
	// Decode decodes a call's payload; it runs on a reader's loop.
	Decode(method uint8, payload []byte) any
	// ServeDecoded serves a call Decode decoded, as Serve does.
	ServeDecoded(loop model.Loop, method uint8, arg any, done func(Status, []byte))
}

// FrameEncoder is a Decoder that can encode an answer's payload straight
// into the frame the handler sends it in, rather than into a buffer of
// its own that the handler then copies. ServeEncoded is ServeDecoded given
// buf, which returns an empty buffer with room for n bytes: a payload
// appended to it within that room and passed to done goes out where it
// lies; any other payload is copied, as ServeDecoded's are. The buffer is
// the handler's: it may be written until done is called, not after. The
// handler calls Decode and ServeEncoded in Serve's place, so Serve must
// be Decode then ServeDecoded.
type FrameEncoder interface {
	Decoder
	ServeEncoded(loop model.Loop, method uint8, arg any, buf func(n int) []byte, done func(Status, []byte))
}

// ServerConfig configures a server. Zero values take the defaults
// (DefaultServerConfig).
type ServerConfig struct {
	Addr    string
	Backlog int
	// Readers is the number of reader loops; connections are dealt to them
	// round robin. With 1, the acceptor loop reads too: the server before
	// HADOOP-6713, whose single Listener thread accepted and read.
	Readers int
	// Handlers is the number of handler loops (dfs.namenode.handler.count).
	Handlers int
	// QueueSize bounds the call queue; a reader that finds it full stops
	// reading until a handler takes a call (Hadoop's put blocks). Zero:
	// QueuePerHandler for each handler, as Hadoop sizes it.
	QueueSize int
	// MaxFrame bounds a call's length prefix.
	MaxFrame int
	// IdleTimeout closes a connection with no call outstanding that has
	// sent nothing for this long (Hadoop's server uses twice the client's
	// ipc.client.connection.maxidletime).
	IdleTimeout time.Duration
	// MaxInFlight caps a connection's calls in flight: calls its reader
	// took whose responses are not yet fully written (or dropped). At the
	// cap the reader takes no more of that connection's calls and stops
	// reading it, leaving its input in the socket so that TCP pushes back
	// on the client, and goes on when one of its responses is written.
	// 100 by default: Hadoop's client allows as many outstanding calls
	// (ipc.client.async.calls.max, HADOOP-12957), and its server queues
	// as many per handler (ipc.server.handler.queue.size). A connection
	// holds a response only for a call in flight, so it never holds more
	// than MaxInFlight of them, whether or not its client reads.
	MaxInFlight int
	// MaxPending bounds the response bytes past which a reader takes no
	// more of a connection's calls (until the responder has written it
	// back to MaxPending or less): the calls already in flight are still
	// answered, so a connection holds at most MaxPending plus MaxInFlight
	// answers in responses (and, by the cap alone, at most MaxInFlight of
	// its largest). Nothing closes a connection for what it holds: a
	// client that pipelines many calls whose answers together pass the
	// bound and reads them all (a Hadoop client process shares one
	// connection among all its threads) is slowed, never dropped. One
	// that asks and never reads holds that much, at most, until the
	// idle scan purges it (its answers untaken for IdleTimeout), as
	// Hadoop's Responder.doPurge closes a connection whose oldest response
	// has waited ipc.server.purge.interval (15 minutes).
	MaxPending int
	// HadoopReader reads as Hadoop 0.20's Connection.readAndProcess did:
	// one call per readable event, its 4-byte length in one read and its
	// body in a second, and the call's parameters deserialised by the
	// reader (Decoder.Decode, when the service is a Decoder) before it is
	// queued. Without it a reader takes all a connection has buffered, up
	// to 16 KiB per read, and the handler decodes.
	HadoopReader bool
	Bugs         ServerBugs
}

// ServerBugs switch on catalogued bugs, for tests and `check --bug`.
type ServerBugs struct {
	// KeepInput keeps a connection's input buffer at the size its
	// largest call grew it to, for as long as the connection lives.
	KeepInput bool
	// HandlerWaitsForWrite makes a handler whose response did not fit in
	// one write wait until the responder has written all of it, so a client
	// that stops reading holds the handler (the responder's whole point is
	// that it must not).
	HandlerWaitsForWrite bool
	// DropPartial makes a reader throw away the tail of its input that is
	// not yet a whole call, so a call that arrives in pieces is lost.
	DropPartial bool
	// QueuedReplySharesFrame queues a response that did not fit in one
	// write as the handler framed it, in the handler's own buffer, which
	// frames its next response: the queued one then carries the next
	// one's bytes.
	QueuedReplySharesFrame bool
	// UnboundedResponses ignores MaxInFlight and MaxPending: a reader
	// takes every call a connection sends, and its responses queue
	// without limit while its client does not read.
	UnboundedResponses bool
	// QueuePastBound makes readers queue calls whatever the queue holds:
	// the call queue is unbounded and a burst grows it (and the memory
	// behind it) without limit, where Hadoop's put blocks the reader.
	QueuePastBound bool
	// StopMidCall stops reading a connection at inHigh of input even in
	// the middle of a call (this model's reader did until check sent
	// calls as long as block reports): a call longer than some 80 KiB
	// never arrives whole, and it and the calls behind it wait until the
	// idle timeout resets the connection.
	StopMidCall bool
	// IdleClosesHeldCall has the idle scan judge a connection by its
	// calls queued alone, as Hadoop counts rpcCount from the put on: a
	// connection whose call waits whole in its input for room in a full
	// queue looks idle once the reader has read nothing more of it for
	// the idle timeout, and is closed under its call.
	IdleClosesHeldCall bool
	// DeafWhenNotReading listens for a connection's hangup only by
	// reading it (this model's server did until check held its handlers
	// long enough): a client that closes while its reader has stopped
	// reading it (throttled, or holding a call a full queue refuses) is
	// not heard until a response to it draws a reset or the idle scan
	// purges it, and what the server holds for it stays until then.
	DeafWhenNotReading bool
	// ServesDeadCalls has a handler serve a call whose connection closed
	// while the call waited in the queue (this model's server did until
	// the quit-burst fault): its answer is dropped, and the handler's time
	// on it (a change's sync, under the edit log) is taken from the calls
	// of clients still there, where Hadoop's Handler.run skips a call
	// whose channel is no longer open.
	ServesDeadCalls bool
}

// QueuePerHandler is Hadoop's ipc.server.handler.queue.size: the call
// queue holds this many calls for each handler.
const QueuePerHandler = 100

// DefaultServerConfig returns Hadoop's defaults where it has them.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		Backlog:     128,
		Readers:     1,
		Handlers:    10,
		QueueSize:   10 * QueuePerHandler,
		MaxFrame:    DefaultMaxFrame,
		IdleTimeout: 20 * time.Second,
		MaxInFlight: 100,
		MaxPending:  1 << 20,
	}
}

func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// ServerStats counts what a server did. It is summed from per-loop counters,
// so read it only when the world is quiet.
type ServerStats struct {
	Accepted, Closed, IdleClosed, Fatal int
	Calls, Responses, Dropped           int // calls queued; responses fully written; responses dropped on closed conns
	// Skipped counts calls a handler took from the queue and did not
	// serve, their connection closed while they waited; DeadServed, those
	// it served all the same (ServerBugs.ServesDeadCalls).
	Skipped, DeadServed int
	Deferred            int // responses the responder finished
	ReaderBlocks        int // times a reader found the queue full
	// Throttled counts the times a reader stopped taking a connection's
	// calls until one of its responses was written: its calls in flight
	// at MaxInFlight, or its responses past MaxPending.
	Throttled int
	Purged    int // connections closed for responses untaken for IdleTimeout
	PeakQueue int
}

// Server is an RPC server. Its acceptor runs on the loop it was started
// on; readers, handlers and the responder have loops of their own.
type Server struct {
	cfg      ServerConfig
	p        model.Process
	svc      Service
	main     model.Loop
	ln       model.Listener
	readers  []*reader
	handlers []*handler
	resp     model.Loop
	q        *callQueue
	next     int
	stopped  bool
	accepted int
	connSeq  uint64
}

// callQueue is the bounded queue between readers and handlers, guarded by
// its own lock like Hadoop's LinkedBlockingQueue.
type callQueue struct {
	lk      model.Lock
	cap     int
	calls   []*call
	head    int
	idle    []*handler // handlers waiting for a call
	blocked []*reader  // readers waiting for room, in order
	peak    int
}

func (q *callQueue) len() int { return len(q.calls) - q.head }

// wakeReader resumes the first reader blocked for room, if any. Under the
// queue's lock.
func (q *callQueue) wakeReader() {
	if len(q.blocked) == 0 {
		return
	}
	r := q.blocked[0]
	q.blocked = q.blocked[1:]
	r.loop.Post(r.resume)
}

func (q *callQueue) push(c *call) {
	q.calls = append(q.calls, c)
	q.peak = max(q.peak, q.len())
}

func (q *callQueue) pop() *call {
	if q.len() == 0 {
		return nil
	}
	c := q.calls[q.head]
	q.calls[q.head] = nil
	q.head++
	if q.head == len(q.calls) {
		q.calls, q.head = q.calls[:0], 0
	}
	return c
}

type call struct {
	sc      *serverConn
	id      uint32
	method  uint8
	payload []byte
	arg     any // decoded by the reader (HadoopReader); nil: the handler decodes
	decoded bool
}

// StartServer listens on cfg.Addr with loop as the acceptor and starts the
// reader, handler and responder loops.
func StartServer(p model.Process, loop model.Loop, svc Service, cfg ServerConfig) (*Server, error) {
	d := DefaultServerConfig()
	orDefault(&cfg.Backlog, d.Backlog)
	orDefault(&cfg.Readers, d.Readers)
	orDefault(&cfg.Handlers, d.Handlers)
	if cfg.QueueSize == 0 && cfg.Handlers > 0 {
		// (Bounded before the product: a count of handlers that large
		// fails to start them anyway.)
		cfg.QueueSize = QueuePerHandler * min(cfg.Handlers, 1<<20)
	}
	orDefault(&cfg.MaxFrame, d.MaxFrame)
	orDefault(&cfg.IdleTimeout, d.IdleTimeout)
	orDefault(&cfg.MaxPending, d.MaxPending)
	orDefault(&cfg.MaxInFlight, d.MaxInFlight)
	switch {
	case cfg.Addr == "":
		return nil, errors.New("rpc server: no address")
	case cfg.Readers < 0 || cfg.Handlers < 0 || cfg.QueueSize < 0 || cfg.MaxFrame < 0 || cfg.IdleTimeout < 0 || cfg.MaxPending < 0 || cfg.MaxInFlight < 0:
		return nil, errors.New("rpc server: negative size or timeout")
	case svc == nil:
		return nil, errors.New("rpc server: no service")
	}
	s := &Server{cfg: cfg, p: p, svc: svc, main: loop}
	s.q = &callQueue{lk: p.NewLock("rpc-callqueue"), cap: cfg.QueueSize}
	ln, err := p.Listen("tcp", cfg.Addr, cfg.Backlog, loop)
	if err != nil {
		return nil, fmt.Errorf("rpc server: %w", err)
	}
	s.ln = ln
	var made []model.Loop
	newLoop := func(name string) (model.Loop, error) {
		l, err := p.NewLoop(name)
		if err != nil {
			ln.Close()
			for _, m := range made {
				m.Close()
			}
			return nil, fmt.Errorf("rpc server: %w", err)
		}
		made = append(made, l)
		return l, nil
	}
	if cfg.Readers == 1 {
		s.readers = []*reader{{s: s, loop: loop}}
	} else {
		for i := 0; i < cfg.Readers; i++ {
			l, err := newLoop(fmt.Sprintf("rpc-reader-%d", i))
			if err != nil {
				return nil, err
			}
			s.readers = append(s.readers, &reader{s: s, loop: l})
		}
	}
	for i := 0; i < cfg.Handlers; i++ {
		l, err := newLoop(fmt.Sprintf("rpc-handler-%d", i))
		if err != nil {
			return nil, err
		}
		h := &handler{s: s, loop: l}
		h.nextF, h.takeF, h.bufF = h.next, h.take, h.buf
		s.handlers = append(s.handlers, h)
	}
	if s.resp, err = newLoop("rpc-responder"); err != nil {
		return nil, err
	}
	for _, h := range s.handlers {
		h.loop.Post(h.nextF)
	}
	ln.SetHandler(s.accept)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr() }

// Config is the server's configuration with defaults filled in.
func (s *Server) Config() ServerConfig { return s.cfg }

func (s *Server) accept() {
	model.AcceptAll(s.p, s.main, s.ln, "rpc-accept-error", func() bool { return s.stopped }, s.serve)
}

// serve deals a new connection to a reader, round robin.
func (s *Server) serve(c model.Conn) {
	s.accepted++
	if err := c.SetNoDelay(true); err != nil {
		c.Close()
		return
	}
	r := s.readers[s.next%len(s.readers)]
	s.next++
	s.connSeq++
	sc := &serverConn{s: s, r: r, c: c, seq: s.connSeq, lk: s.p.NewLock("rpc-conn")}
	if r.loop == s.main {
		r.add(sc)
		return
	}
	r.loop.Post(func() { r.add(sc) })
}

// Stop closes the listener and every connection; their queued calls are
// skipped. Loops stay up (their threads are the server's baseline). Call
// it on the acceptor loop.
func (s *Server) Stop() {
	s.stopped = true
	s.ln.Close()
	for _, r := range s.readers {
		r.loop.Post(func() {
			r.stopped = true
			for len(r.conns) > 0 {
				r.close(r.conns[0], "server stopped")
			}
		})
	}
}

// Stats sums the per-loop counters; call it only when the world is quiet.
func (s *Server) Stats() ServerStats {
	st := ServerStats{Accepted: s.accepted, PeakQueue: s.q.peak}
	for _, r := range s.readers {
		st.Closed += r.closed
		st.IdleClosed += r.idleClosed
		st.Fatal += r.fatal
		st.Calls += r.calls
		st.ReaderBlocks += r.blocks
		st.Throttled += r.throttled
		st.Purged += r.purged
		for _, sc := range r.conns {
			st.Responses += sc.answered - sc.dropped
			st.Dropped += sc.dropped
			st.Deferred += sc.deferred
		}
		st.Responses += r.doneResponses
		st.Dropped += r.doneDropped
		st.Deferred += r.doneDeferred
	}
	for _, h := range s.handlers {
		st.Dropped += h.late
		st.Skipped += h.skipped
		st.DeadServed += h.deadServed
	}
	return st
}

// Quiet reports what the server still holds, for leak checks: open
// connections, queued calls, responses waiting in the responder, handlers
// busy with a call, readers blocked on a full queue. Call it only when
// the world is quiet.
func (s *Server) Quiet() (conns, queued, pending, busy, blocked int) {
	for _, r := range s.readers {
		conns += len(r.conns)
		for _, sc := range r.conns {
			pending += len(sc.out)
		}
	}
	for _, h := range s.handlers {
		if h.busy {
			busy++
		}
	}
	return conns, s.q.len(), pending, busy, len(s.q.blocked)
}

// EachConn calls f with each connection the server holds open, and
// whether its reader has stopped taking its calls (throttled); for
// per-event checks in sim (in real it would race).
func (s *Server) EachConn(f func(c model.Conn, throttled bool)) {
	for _, r := range s.readers {
		for _, sc := range r.conns {
			f(sc.c, sc.throttled)
		}
	}
}

// Pending is what a server's connections hold in responses not yet
// written: Bytes in all, over Conns open connections; Worst, the most one
// connection holds, in Responses responses; Most, the most responses one
// connection holds (MaxInFlight bounds it: a response is held only for a
// call in flight, so what a connection holds is at most MaxInFlight of
// its largest). These are measured from the queues themselves; Counted is
// the server's running count of the same bytes, which its throttle acts
// on, so a check can hold the count to what is held. A connection being
// closed by its reader drops out of the figures a moment before its
// responses are freed.
type Pending struct {
	Bytes, Conns, Worst, Responses int
	Most                           int
	Counted                        int
}

// Pending sums the connections' response queues; for per-event bound
// checks in sim (in real it would race).
func (s *Server) Pending() Pending {
	var p Pending
	for _, r := range s.readers {
		p.Conns += len(r.conns)
		for _, sc := range r.conns {
			held := sc.held()
			p.Bytes += held
			p.Counted += sc.pending
			if held > p.Worst {
				p.Worst, p.Responses = held, len(sc.out)
			}
			p.Most = max(p.Most, len(sc.out))
		}
	}
	return p
}

// ConnHeld is what the server holds for the connection from remote (its
// client's address): the calls its reader has taken from it, and the
// bytes of responses not yet written, measured from its queue; ok is
// false when it holds no such connection. For per-event checks in sim
// (in real it would race).
func (s *Server) ConnHeld(remote string) (calls, pending int, ok bool) {
	for _, r := range s.readers {
		for _, sc := range r.conns {
			if sc.c.RemoteAddr() == remote {
				return sc.queued, sc.held(), true
			}
		}
	}
	return 0, 0, false
}

// held is the bytes of the connection's responses not yet written,
// measured from its queue (pending is the running count of them).
func (sc *serverConn) held() int {
	n := -sc.outOff
	for _, b := range sc.out {
		n += len(b)
	}
	return n
}

// Input is what a server's connections hold in input not yet queued as
// calls: Bytes in all, Worst on one connection.
type Input struct {
	Bytes, Worst int
	// Kept is the most capacity one connection's input buffer holds
	// beyond what its input may need (serverConn.inputAllowance).
	Kept int
}

// Input sums the connections' input buffers; for per-event bound checks
// in sim (in real it would race).
func (s *Server) Input() Input {
	var in Input
	for _, r := range s.readers {
		for _, sc := range r.conns {
			in.Bytes += len(sc.in)
			in.Worst = max(in.Worst, len(sc.in))
			in.Kept = max(in.Kept, cap(sc.in)-sc.inputAllowance())
		}
	}
	return in
}

// InputKeep is the input buffer a connection keeps between calls: a
// buffer grown for a large call (up to MaxFrame) goes once the call is
// queued, as Hadoop's reader allocates each call's buffer afresh, or every
// connection that ever sent one would hold its size until it closed.
const InputKeep = inHigh + readChunk

// InputBound is the most input one connection may hold: a reader reads
// on while a connection holds less than inHigh, or less than the whole
// call it is reading (up to MaxFrame and its length prefix), and one
// event's reads take less than inHigh and a read's chunk more.
func (s *Server) InputBound() int {
	return max(inHigh, s.cfg.MaxFrame+4) + inHigh + readChunk
}

// QueueLen is the call queue's length now; for per-event bound checks in
// sim (in real it would race).
func (s *Server) QueueLen() int { return s.q.len() }

// QueueCap is the call queue's bound.
func (s *Server) QueueCap() int { return s.q.cap }

// reader is a reader loop and the connections dealt to it.
type reader struct {
	s       *Server
	loop    model.Loop
	conns   []*serverConn
	blocked *serverConn // the connection whose call found the queue full
	idle    model.Timer
	stopped bool // the server stopped: connections handed over now are closed
	// counters, owned by the loop
	calls, closed, idleClosed, fatal, blocks, throttled, purged int
	// counts of connections closed and forgotten
	doneResponses, doneDropped, doneDeferred int
	// turn is refill's order of its connections, kept from one refill
	// to the next (refills run per call taken while the reader is
	// blocked).
	turn []*serverConn
	// scratch is what the loop reads into before appending to a
	// connection's input, one for all its connections (a local array
	// escapes through Conn.Read: 16 KiB allocated and zeroed per read).
	scratch []byte
}

// serverConn is one client connection. The reader loop owns its input and
// its place in the reader's list; lk guards its output, which handlers
// and the responder write, and closed.
type serverConn struct {
	s   *Server
	r   *reader
	c   model.Conn
	seq uint64

	// owned by the reader loop
	in         []byte
	arg        any  // the decoded first call of in (HadoopReader)
	decoded    bool // arg is set
	greeted    bool
	closing    bool
	fillQueued bool
	// gone: its reader has closed it (under the queue's lock), so handlers
	// skip its queued calls.
	gone     bool
	lastRead time.Duration
	queued   int // calls put into the queue
	// credit is how many more calls the reader may take from the
	// connection before it looks again, under lk, at what the connection
	// has in flight and pending (throttle): MaxInFlight less the calls in
	// flight when it last looked, less those taken since (or 0, set by
	// the handler whose response took it past MaxPending). A stale count
	// errs low, as responses only complete; so a connection never has
	// more than MaxInFlight calls in flight, without a lock per call.
	credit int
	// throttled: the reader holds a whole call of the connection it may
	// not take, and reads it no further until a response completes.
	throttled bool
	// logged: its first throttle was logged (one a connection: a
	// pipeliner at the cap is throttled at every call).
	logged bool

	// guarded by lk
	lk      model.Lock
	closed  bool
	out     [][]byte
	outOff  int
	pending int // bytes of out not yet written
	// waiting: the reader, throttled on the connection, waits for a
	// response to complete; waitQueued is its count of calls queued then
	// (which stays put while it takes none), so that the handler or
	// responder that completes one can tell the calls in flight.
	waiting    bool
	waitQueued int
	// outMoved is when out last moved: its first response queued, or
	// bytes of it taken by the client.
	outMoved time.Duration
	answered int // responses written or dropped
	dropped  int
	deferred int
	waiters  []*handler // handlers waiting for out to drain (HandlerWaitsForWrite)
	// spare is a frame of out the responder has written whole, which
	// the next handler to queue a response here takes to frame its
	// next answer in: fresh frames for queued responses were a
	// seventh of the bytes an rpc check allocated, half of them since.
	spare []byte
}

// inHigh is how much unparsed input a connection may hold before its
// reader stops reading it until the queue takes some: unless the first
// call in it is not whole yet, which must arrive whole before any of it
// can be queued (a call may be as long as MaxFrame; see readMore).
const inHigh = 64 << 10

// readChunk is the most a connection's read asks for at once (its
// reader's scratch, and a client's).
const readChunk = 16 << 10

func (r *reader) add(sc *serverConn) {
	if r.stopped {
		sc.c.Close()
		return
	}
	sc.lastRead = r.loop.Now()
	sc.credit = r.s.cfg.MaxInFlight
	r.conns = append(r.conns, sc)
	sc.c.SetHandler(r.loop, sc.onEvent)
	// Its client's FIN is heard even while the reader leaves its input
	// in the socket (throttled, or behind a full queue), where a read
	// would reach it only once the input before it is taken.
	if !r.s.cfg.Bugs.DeafWhenNotReading {
		sc.c.SetPeerClosedInterest(true)
	}
	if r.blocked != nil {
		sc.c.SetReadInterest(r.readsWhileBlocked(sc))
	}
	r.armIdle()
}

func (r *reader) armIdle() {
	if r.idle != nil || len(r.conns) == 0 {
		return
	}
	r.idle = r.loop.AfterFunc(r.s.cfg.IdleTimeout/2, func() {
		r.idle = nil
		r.scanIdle()
	})
}

// scanIdle closes connections that have sent nothing for the idle timeout
// and have no call outstanding, as Hadoop's Listener cleanupConnections
// does. Whether a call is outstanding is known under the connection's lock.
//
// A connection is read before it is judged: Hadoop's listener reads what
// select reports before it cleans up, but here the scan is a timer of its
// own, and a call may wait unread in the socket while the connection
// looks quiet. It does while the reader is blocked on a full queue (it
// reads only connections that hold no whole call then, and Hadoop's
// reader none), and when the reader's loop was
// stopped past the idle timeout: check's seed 70424311 (--system rpc)
// reset a client whose calls had waited in the socket through a namenode
// pause, behind a full queue.
func (r *reader) scanIdle() {
	now := r.loop.Now()
	var quiet []*serverConn
	for _, sc := range r.conns {
		// Half a call counts as nothing: a client that sends part of one
		// and falls silent is idle, or it would hold a reader's
		// connection forever. A throttled connection holds a whole call,
		// but is judged too: it has stopped sending because the reader
		// stopped reading it, and if its client takes none of its
		// answers it must be purged, or it holds them for ever.
		if !sc.closing && now-sc.lastRead >= r.s.cfg.IdleTimeout && (sc.throttled || !sc.holdsCall() || r.s.cfg.Bugs.IdleClosesHeldCall) {
			quiet = append(quiet, sc)
		}
	}
	for _, sc := range quiet {
		if sc.closing {
			continue
		}
		// Read only as far as the reader itself would: input bounded by
		// readMore, as a prefix the queue has not yet refused (the reader
		// is blocked) must not grow without end.
		if sc.readMore() {
			sc.read() // (it takes sc out of r.conns if it closes it)
		}
		if sc.closing || now-sc.lastRead < r.s.cfg.IdleTimeout {
			continue
		}
		sc.lk.Do(r.loop, func() {
			now := r.loop.Now()
			// Answers its client has taken nothing of for the idle
			// timeout: it has stopped reading (a stopped process, a
			// frozen JVM) and may never read again. MaxInFlight and
			// MaxPending bound what it holds, not for how long; Hadoop's
			// Responder purges answers waiting 15 minutes and closes
			// their connection. (A throttled connection whose answers
			// move is never closed here: it has calls in flight.)
			untaken := len(sc.out) > 0 && now-sc.outMoved >= r.s.cfg.IdleTimeout
			switch {
			case sc.closed || now-sc.lastRead < r.s.cfg.IdleTimeout:
			case untaken:
				r.purged++
				r.s.p.Log("rpc-purge", "conn", sc.seq, "waiting", len(sc.out))
				r.loop.Post(func() { r.close(sc, "answers untaken") })
			case sc.answered < sc.queued || len(sc.out) > 0:
			case sc.holdsCall() && !r.s.cfg.Bugs.IdleClosesHeldCall:
				// A whole call waits in its input: the connection is
				// throttled, its last call in flight answered just now
				// and the unthrottle that takes the next one posted. Its
				// client has a call outstanding.
			default:
				r.idleClosed++
				r.loop.Post(func() { r.close(sc, "idle") })
			}
		})
	}
	r.armIdle()
}

// holdsCall reports whether sc has a whole call buffered, waiting for
// room in the queue: a call outstanding, as Hadoop counts it before its
// put blocks. (A connection holding one is not read on: its input is
// bounded.)
func (sc *serverConn) holdsCall() bool {
	in := sc.in
	if !sc.greeted {
		// (The preamble, read as a length prefix, is no call.)
		if CheckPreamble(in) != nil {
			return false
		}
		in = in[len(Preamble):]
	}
	_, _, err := DecodeFrame(in, sc.s.cfg.MaxFrame)
	return err == nil
}

func (sc *serverConn) onEvent(ev model.Events) {
	if sc.closing {
		return
	}
	if ev&model.Hangup != 0 {
		// Dead (a reset: a FIN alone is reported readable), and told
		// once: what it holds is a vanished client's, which no event
		// will bring up again. Closed at once, as a read would on
		// reaching the error, rather than read and thrown away, or left
		// past one read's worth for the idle scan to run late.
		err := sc.c.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		sc.r.close(sc, "read: "+errString(err))
		return
	}
	if ev&model.PeerClosed != 0 && ev&model.Readable == 0 {
		// Its client has gone while the reader is not reading it (a
		// read reaches the FIN itself): the calls it left unread will
		// never be answered, the answers it has coming never taken (a
		// Hadoop client never half-closes), and its throttle lifts, or
		// the queue takes its call, only when some handler has served
		// calls of its own, which may be long in coming.
		sc.r.close(sc, "peer closed")
		return
	}
	if ev&model.Writable != 0 {
		// The responder has no selector of its own (a connection has one
		// loop in this world): the reader hands it the writability.
		sc.c.SetWriteInterest(false)
		s := sc.s
		s.resp.Post(func() { sc.respond(s.resp) })
	}
	if ev&model.Readable != 0 {
		sc.read()
	}
}

func (sc *serverConn) read() {
	r := sc.r
	if sc.throttled {
		// (A readable event queued before the throttle turned reading
		// off: what it would read waits in the socket.)
		sc.c.SetReadInterest(false)
		return
	}
	if r.s.cfg.HadoopReader {
		if !sc.readOne() {
			return
		}
	} else if !sc.readAll() {
		return
	}
	if !sc.greeted {
		switch err := CheckPreamble(sc.in); {
		case errors.Is(err, ErrShort):
			return
		case err != nil:
			r.fatal++
			r.close(sc, "bad preamble")
			return
		}
		sc.greeted = true
		sc.in = sc.in[:copy(sc.in, sc.in[len(Preamble):])]
		if r.s.cfg.HadoopReader && sc.need() > 0 {
			return
		}
	}
	if r.s.cfg.HadoopReader {
		sc.decode()
	}
	if !sc.readMore() || r.blocked != nil && !r.readsWhileBlocked(sc) {
		sc.c.SetReadInterest(false)
	}
	if !sc.fillQueued && len(sc.in) >= 4 {
		sc.fillQueued = true
		r.s.q.lk.Do(r.loop, func() {
			sc.fillQueued = false
			r.fill(sc)
		})
	}
}

// readMore reports whether the reader should go on reading sc: it holds
// less than inHigh, or the first call it holds is not whole. Stopping in
// the middle of a call longer than inHigh left the call, and every call
// behind it, unread until the idle timeout closed the connection.
func (sc *serverConn) readMore() bool {
	if sc.throttled {
		return false // (it holds a whole call it may not take)
	}
	if sc.s.cfg.Bugs.StopMidCall {
		return len(sc.in) < inHigh
	}
	return len(sc.in) < inHigh || sc.need() > 0
}

// readAll reads what the connection has, until it has read inHigh or more
// in this event (less than inHigh and a read's chunk); false if it closed
// the connection.
func (sc *serverConn) readAll() bool {
	r := sc.r
	if r.scratch == nil {
		r.scratch = make([]byte, readChunk)
	}
	buf := r.scratch
	for n := 0; n < inHigh; {
		k, err := sc.c.Read(buf)
		if k > 0 {
			if need := sc.need(); need > cap(sc.in)-len(sc.in) {
				// Room for the whole of the call being read at once (its
				// length is known, and within MaxFrame), not a doubling
				// and a copy per chunk of a long one.
				sc.in = slices.Grow(sc.in, need)
			}
			sc.in = append(sc.in, buf[:k]...)
			sc.lastRead = r.loop.Now()
			n += k
			if r.blocked != nil && sc.holdsCall() {
				break // (readsWhileBlocked: one call, then its turn)
			}
		}
		if errors.Is(err, model.ErrWouldBlock) {
			break
		}
		if err != nil {
			r.close(sc, "read: "+errString(err))
			return false
		}
	}
	return true
}

// need is how many bytes sc.in lacks for its next whole unit: the
// preamble, a length prefix, or the call it announces; 0 or less when it
// holds one, or a prefix the decoder will refuse.
// inputNeeds is the input buffer sc's input needs: what it holds and the
// rest of the call it is reading. inputAllowance is the most buffer it
// may keep (fill trims to it, Input reports what is kept past it): twice
// that (a growing buffer doubles), or InputKeep between calls, whichever
// is more.
func (sc *serverConn) inputNeeds() int     { return len(sc.in) + max(sc.need(), 0) }
func (sc *serverConn) inputAllowance() int { return max(2*sc.inputNeeds(), InputKeep) }

func (sc *serverConn) need() int {
	switch {
	case !sc.greeted:
		return len(Preamble) - len(sc.in)
	case len(sc.in) < 4:
		return 4 - len(sc.in)
	}
	n := binary.BigEndian.Uint32(sc.in)
	if uint64(n) > uint64(sc.s.cfg.MaxFrame) || n < 5 {
		return 0
	}
	return 4 + int(n) - len(sc.in)
}

// readOne reads as Hadoop's readAndProcess: what the next unit lacks, the
// length prefix and then the call's body, at most one call; false if it
// closed the connection. With a whole call buffered it reads nothing
// until the call is queued.
func (sc *serverConn) readOne() bool {
	r := sc.r
	for reads := 0; reads < 3; reads++ {
		k := sc.need()
		if k <= 0 {
			break
		}
		sc.in = slices.Grow(sc.in, k)
		got, err := sc.c.Read(sc.in[len(sc.in) : len(sc.in)+k])
		if got > 0 {
			sc.in = sc.in[:len(sc.in)+got]
			sc.lastRead = r.loop.Now()
		}
		if errors.Is(err, model.ErrWouldBlock) {
			break
		}
		if err != nil {
			r.close(sc, "read: "+errString(err))
			return false
		}
		if got < k {
			break
		}
	}
	return true
}

// decode deserialises sc's buffered call on the reader, as Hadoop's
// processData did before queueing it, and stops reading sc until fill
// has queued it.
func (sc *serverConn) decode() {
	if sc.decoded || sc.need() > 0 {
		return
	}
	f, _, err := DecodeFrame(sc.in, sc.s.cfg.MaxFrame)
	if err != nil {
		return // fill answers it
	}
	sc.s.p.CPU(model.CPUFrame, 1)
	sc.s.p.CPU(model.CPUCopy, len(f.Payload))
	sc.arg, sc.decoded = nil, true
	if d, ok := sc.s.svc.(Decoder); ok {
		sc.arg = d.Decode(f.Code, f.Payload)
	}
	sc.c.SetReadInterest(false)
}

// fill moves the whole calls buffered on sc into the queue, under the
// queue's lock. A full queue blocks the reader: it stops reading its
// connections, but for those that hold no whole call
// (readsWhileBlocked), until a handler makes room.
func (r *reader) fill(sc *serverConn) { r.fillUpTo(sc, -1) }

// fillUpTo is fill that queues at most limit calls (all, if negative),
// and reports how many it queued.
func (r *reader) fillUpTo(sc *serverConn, limit int) (queued int) {
	// A connection still in its preamble has no calls yet: resume reaches
	// every connection with input, and a half preamble read as a length
	// prefix would close it as garbage.
	if sc.closing || !sc.greeted || r.blocked != nil || sc.throttled {
		return 0
	}
	q := r.s.q
	off := 0
	defer func() {
		sc.in = sc.in[:copy(sc.in, sc.in[off:])]
		if cap(sc.in) > sc.inputAllowance() && !r.s.cfg.Bugs.KeepInput {
			sc.in = append(make([]byte, 0, max(sc.inputNeeds(), readChunk)), sc.in...)
		}
		if !sc.closing && r.blocked == nil && sc.readMore() {
			sc.c.SetReadInterest(true)
		}
	}()
	for ; queued != limit; queued++ {
		f, n, err := DecodeFrame(sc.in[off:], r.s.cfg.MaxFrame)
		if errors.Is(err, ErrShort) {
			if r.s.cfg.Bugs.DropPartial {
				off = len(sc.in)
			}
			return
		}
		if err != nil {
			r.fatal++
			r.s.p.Log("rpc-bad-frame", "conn", sc.seq, "err", err.Error())
			sc.sendFatal(err.Error())
			off = len(sc.in)
			return
		}
		// A connection out of credit is throttled before the queue is
		// looked at: a reader blocked on a call it may not take would
		// keep every other connection's calls out until one of this
		// one's responses completed.
		if sc.credit <= 0 && !r.s.cfg.Bugs.UnboundedResponses {
			r.throttle(sc)
			return
		}
		if q.len() >= q.cap && !r.s.cfg.Bugs.QueuePastBound {
			r.blocked = sc
			r.blocks++
			q.blocked = append(q.blocked, r)
			for _, o := range r.conns {
				o.c.SetReadInterest(r.readsWhileBlocked(o))
			}
			return
		}
		c := &call{sc: sc, id: f.ID, method: f.Code, payload: append([]byte(nil), f.Payload...)}
		if off == 0 && sc.decoded {
			c.arg, c.decoded = sc.arg, true
			sc.arg, sc.decoded = nil, false
		} else {
			r.s.p.CPU(model.CPUFrame, 1)
			r.s.p.CPU(model.CPUCopy, len(f.Payload))
		}
		off += n
		sc.queued++
		sc.credit--
		r.calls++
		q.push(c)
		if k := len(q.idle); k > 0 {
			h := q.idle[k-1]
			q.idle = q.idle[:k-1]
			h.loop.Post(h.nextF)
		}
	}
	return queued
}

// throttle stops the reader taking sc's calls, out of credit, and looks
// under sc's lock at what sc has in flight and pending: if it may take
// more, it goes on at once; if not, the handler or responder that
// completes the response that makes room resumes it (wake). Meanwhile sc
// is not read: its client's further calls wait in the socket, and TCP
// pushes back on it, as on a Hadoop client whose server reads slowly.
func (r *reader) throttle(sc *serverConn) {
	sc.throttled = true
	sc.c.SetReadInterest(false)
	sc.lk.Do(r.loop, func() {
		if sc.closed || sc.closing {
			return
		}
		if grant := sc.grant(sc.queued); grant > 0 {
			r.unthrottle(sc, grant)
			return
		}
		sc.waiting, sc.waitQueued = true, sc.queued
		r.throttled++
		if !sc.logged {
			sc.logged = true
			r.s.p.Log("rpc-throttled", "conn", sc.seq, "calls", sc.queued-sc.answered, "pending", sc.pending)
		}
	})
}

// grant is how many more calls a connection that has queued queued calls
// may have taken now: none while MaxInFlight are in flight (queued, being
// served, or with a response not yet written whole) or its responses
// pass MaxPending. Under sc.lk.
func (sc *serverConn) grant(queued int) int {
	cfg := &sc.s.cfg
	inFlight := queued - sc.answered
	if inFlight >= cfg.MaxInFlight || sc.pending > cfg.MaxPending {
		return 0
	}
	return cfg.MaxInFlight - inFlight
}

// wake resumes the reader throttled on sc once a completed response (or
// bytes written) has made room. Under sc.lk, by the handler or responder
// that completed it.
func (sc *serverConn) wake() {
	if !sc.waiting || sc.closed {
		return
	}
	if grant := sc.grant(sc.waitQueued); grant > 0 {
		sc.waiting = false
		r := sc.r
		r.loop.Post(func() { r.unthrottle(sc, grant) })
	}
}

// unthrottle lets the reader take grant more of sc's calls, and takes
// those it holds. Reading resumes once they are queued (fill), or when
// room comes if the reader is blocked on a full queue (refill).
func (r *reader) unthrottle(sc *serverConn, grant int) {
	if sc.closing || !sc.throttled {
		return
	}
	sc.throttled, sc.credit = false, grant
	r.s.q.lk.Do(r.loop, func() { r.fill(sc) })
}

// readsWhileBlocked reports whether the reader, blocked on a full queue,
// reads o on: a batch reader reads a connection that holds no whole call
// up to its next one, so that the call takes its turn when room comes
// (refill), rather than wait unread behind a connection that buffered
// thousands (a reader that read none while blocked kept a call sent
// after them out for as long as they lasted). It stops once it holds a
// whole call, so it reads at most a call and a read's chunk. Hadoop's
// reader, blocked in its put, reads nothing, and holds one call a
// connection anyway.
func (r *reader) readsWhileBlocked(o *serverConn) bool {
	return !r.s.cfg.HadoopReader && !o.closing && !o.holdsCall() && o.readMore()
}

// resume runs when a handler has made room for the reader's blocked call.
func (r *reader) resume() {
	r.s.q.lk.Do(r.loop, func() {
		sc := r.blocked
		r.blocked = nil
		r.refill(sc)
	})
}

// refill, under the queue's lock, puts into the queue the calls its
// connections buffered while the reader was blocked, and reads again
// unless the queue is full once more. The other connections' input is
// read already, so no readable event will come to move it. It takes one
// call a connection in turn, first's (the call that found the queue full)
// before the rest: filling each connection's calls in one go let one
// that pipelined thousands keep every other connection's call out of the
// queue, since each handler's take made room for one more of its calls
// and the reader blocked on it again (a victim's one call waited 984 ms
// behind 1,000 pipelined ones; a review found it). The connection whose
// call then finds the queue full is the next to go first.
func (r *reader) refill(first *serverConn) {
	if first != nil {
		r.fillUpTo(first, 1)
	}
	// In turn from the connection after first, over the connections as
	// they were: a fatal frame closes its connection, which leaves
	// r.conns, and a round must still reach every other one.
	start := slices.Index(r.conns, first) + 1 // (0 if first is gone)
	if r.s.cfg.HadoopReader {
		start = 0 // (its order as Hadoop's listener took them)
	}
	turn := append(append(r.turn[:0], r.conns[start:]...), r.conns[:start]...)
	r.turn = turn
	defer clear(turn) // (it keeps no connection alive)
	for r.blocked == nil {
		queued := false
		for _, o := range turn {
			if r.blocked != nil {
				return
			}
			if !o.closing && len(o.in) >= 4 && r.fillUpTo(o, 1) > 0 {
				queued = true
			}
		}
		if !queued {
			break
		}
	}
	if r.blocked == nil {
		for _, o := range r.conns {
			if o.readMore() {
				o.c.SetReadInterest(true)
			}
		}
		// Room left: the next blocked reader is woken, as Java's
		// LinkedBlockingQueue.put signals the next putter while the
		// queue has room. A handler wakes one reader per call it
		// takes; one that does not use the room (the connection it
		// blocked on closed before its resume ran) would otherwise
		// leave the others blocked on a queue that may stay empty.
		if q := r.s.q; q.len() < q.cap {
			q.wakeReader()
		}
	}
}

// sendFatal answers a connection-level error with call id FatalID and
// closes the connection; the answer is best effort (one write, and only if
// no response is half written).
func (sc *serverConn) sendFatal(why string) {
	sc.r.closeWith(sc, why, AppendFrame(nil, Frame{ID: FatalID, Code: uint8(StatusFatal), Payload: []byte(why)}))
}

// close takes sc out of the reader's list and closes it under its lock, so
// no handler or responder writes to it after. Runs on the reader loop.
func (r *reader) close(sc *serverConn, why string) { r.closeWith(sc, why, nil) }

func (r *reader) closeWith(sc *serverConn, why string, last []byte) {
	if sc.closing {
		return
	}
	sc.closing = true
	sc.c.SetReadInterest(false)
	sc.c.SetWriteInterest(false)
	sc.c.SetPeerClosedInterest(false) // (a closing conn heard again would spin)
	for i, o := range r.conns {
		if o == sc {
			r.conns = append(r.conns[:i], r.conns[i+1:]...)
			break
		}
	}
	// Marked under the queue's lock, where handlers take its calls: those
	// still queued are skipped. If its reader is blocked on it, its call
	// never made it into the queue. The reader leaves the queue's blocked
	// list and goes on with its other connections, whose buffered calls
	// must be put in the queue here: with the reader out of the list no
	// handler will resume it. Checked under the queue's lock, where a
	// handler's resume may have got there first.
	r.s.q.lk.Do(r.loop, func() {
		sc.gone = true
		if r.blocked != sc {
			return
		}
		r.blocked = nil
		q := r.s.q
		for i, b := range q.blocked {
			if b == r {
				q.blocked = append(q.blocked[:i], q.blocked[i+1:]...)
				break
			}
		}
		r.refill(nil)
	})
	r.closed++
	r.s.p.Log("rpc-close", "conn", sc.seq, "why", why)
	sc.lk.Do(r.loop, func() {
		if last != nil && len(sc.out) == 0 && !sc.closed {
			sc.c.Write(last)
		}
		sc.closed = true
		sc.dropOut()
		sc.c.Close()
		sc.in, sc.arg, sc.decoded = nil, nil, false
		for _, h := range sc.waiters {
			h.loop.Post(h.nextF)
		}
		sc.waiters = nil
		r.doneResponses += sc.answered - sc.dropped
		r.doneDropped += sc.dropped
		r.doneDeferred += sc.deferred
		sc.answered, sc.dropped, sc.deferred = 0, 0, 0
	})
}

func errString(err error) string {
	if err == io.EOF {
		return "eof"
	}
	return err.Error()
}

// handler is a handler loop.
type handler struct {
	s    *Server
	loop model.Loop
	busy bool
	// late counts answers dropped because their connection had closed
	// and been forgotten by its reader (whose counts it had taken).
	late int
	// skipped and deadServed count calls taken whose connection had
	// closed (Stats).
	skipped, deadServed int
	// next and take, bound once: a handler posts them at every call
	// (and hands buf to a FrameEncoder at every call).
	nextF, takeF func()
	bufF         func(int) []byte
	// frame is the buffer a reply is framed in, the handler's for its
	// next call once the reply is written whole (one reply must queue
	// it hands over, and the handler makes another): a fresh frame a
	// call was a twentieth of an rpc check's CPU.
	frame []byte
}

// next takes a call from the queue, or waits for one.
func (h *handler) next() {
	h.busy = false
	h.s.q.lk.Do(h.loop, h.takeF)
}

// take is next under the queue's lock.
func (h *handler) take() {
	q := h.s.q
	for {
		c := q.pop()
		if c == nil {
			q.idle = append(q.idle, h)
			return
		}
		q.wakeReader()
		if c.sc.gone {
			// Its client has gone: nobody will read the answer, and a
			// change made for it now is one it may have given up on
			// and made again on a new connection. Skipped, as Hadoop's
			// Handler.run skips a call whose channel is closed; a call
			// already being served when its connection closes runs to
			// its end.
			if !h.s.cfg.Bugs.ServesDeadCalls {
				h.skipped++
				continue
			}
			h.deadServed++
		}
		h.busy = true
		h.loop.Post(func() { h.serve(c) })
		return
	}
}

func (h *handler) serve(c *call) {
	done := func(st Status, resp []byte) {
		h.s.p.CPU(model.CPUParse, 1)
		// (Charged as the copy into a response buffer Hadoop's server
		// makes, whether or not this one copies: the modelled CPU is
		// the server's, and runs keep their events.)
		h.s.p.CPU(model.CPUCopy, len(resp))
		h.frame = h.frameAnswer(Frame{ID: c.id, Code: uint8(st), Payload: resp})
		h.reply(c, h.frame)
	}
	// (The catalogued bug that shares the frame frames a copy, as it
	// always has: an answer encoded in the frame would take over the
	// queued one's bytes sooner, at encoding, and fail other seeds.)
	if e, ok := h.s.svc.(FrameEncoder); ok && !h.s.cfg.Bugs.QueuedReplySharesFrame {
		arg := c.arg
		if !c.decoded {
			arg = e.Decode(c.method, c.payload) // (Serve is Decode then ServeDecoded)
		}
		e.ServeEncoded(h.loop, c.method, arg, h.bufF, done)
		return
	}
	if d, ok := h.s.svc.(Decoder); ok && c.decoded {
		d.ServeDecoded(h.loop, c.method, c.arg, done)
		return
	}
	h.s.svc.Serve(h.loop, c.method, c.payload, done)
}

// buf is a FrameEncoder's buf: room for an n-byte payload in h.frame,
// after the frame's header.
func (h *handler) buf(n int) []byte {
	if cap(h.frame) < FrameLen(n) {
		h.frame = make([]byte, 0, FrameLen(n))
	}
	return h.frame[frameHeader:frameHeader]
}

// frameAnswer frames f in h.frame: where its payload lies, if it is the
// one buf made room for; else by copying it in.
func (h *handler) frameAnswer(f Frame) []byte {
	if p := f.Payload; len(p) > 0 && cap(h.frame) >= FrameLen(len(p)) && &h.frame[frameHeader : frameHeader+1][0] == &p[0] {
		frame := h.frame[:FrameLen(len(p))]
		putHeader(frame, f)
		return frame
	}
	return AppendFrame(slices.Grow(h.frame[:0], FrameLen(len(f.Payload))), f)
}

// reply writes the response if the connection has nothing queued ahead of
// it; what does not fit goes to the responder, and the handler moves on.
func (h *handler) reply(c *call, frame []byte) {
	sc := c.sc
	sc.lk.Do(h.loop, func() {
		if sc.closed {
			// The reader has already summed sc's counts: this answer is
			// the handler's to count.
			h.late++
			h.loop.Post(h.nextF)
			return
		}
		written := 0
		if len(sc.out) == 0 {
			n, err := sc.c.Write(frame)
			if err != nil && !errors.Is(err, model.ErrWouldBlock) {
				sc.answered++
				sc.dropped++
				r := sc.r
				r.loop.Post(func() { r.close(sc, "write: "+err.Error()) })
				h.loop.Post(h.nextF)
				return
			}
			if n == len(frame) {
				sc.answered++
				sc.wake()
				h.loop.Post(h.nextF)
				return
			}
			sc.outOff, written = n, n
		}
		if !h.s.cfg.Bugs.QueuedReplySharesFrame {
			// The frame goes with the response, not a copy of it (a
			// listing of /big is tens of KB): the handler frames its
			// next answer in a buffer of its own, one the responder
			// has done with if the connection has one.
			h.frame, sc.spare = sc.spare, nil
		}
		if len(sc.out) == 0 {
			sc.outMoved = h.loop.Now()
		}
		sc.out = append(sc.out, frame)
		before := sc.pending
		sc.pending += len(frame) - written
		sc.deferred++
		if bound := h.s.cfg.MaxPending; before <= bound && sc.pending > bound && !h.s.cfg.Bugs.UnboundedResponses {
			// Past the bound: the reader takes no more of sc's calls,
			// from its next one on (an answer pending here is one of
			// the calls in flight, which are answered all the same).
			r := sc.r
			r.loop.Post(func() { sc.credit = 0 })
		}
		if len(sc.out) == 1 {
			sc.c.SetWriteInterest(true)
		}
		if h.s.cfg.Bugs.HandlerWaitsForWrite {
			sc.waiters = append(sc.waiters, h)
			return
		}
		h.loop.Post(h.nextF)
	})
}

// respond writes what the connection's queued responses can, on the
// responder loop; it re-arms writability while some remain.
func (sc *serverConn) respond(loop model.Loop) {
	sc.lk.Do(loop, func() {
		if sc.closed {
			return
		}
		for len(sc.out) > 0 {
			b := sc.out[0]
			n, err := sc.c.Write(b[sc.outOff:])
			if errors.Is(err, model.ErrWouldBlock) {
				sc.c.SetWriteInterest(true)
				sc.wake()
				return
			}
			if err != nil {
				r := sc.r
				r.loop.Post(func() { r.close(sc, "write: "+err.Error()) })
				return
			}
			sc.outOff += n
			sc.pending -= n
			if n > 0 {
				sc.outMoved = loop.Now()
			}
			if sc.outOff < len(b) {
				continue
			}
			sc.out[0] = nil
			if cap(b) > cap(sc.spare) {
				sc.spare = b[:0]
			}
			sc.out = sc.out[1:]
			sc.outOff = 0
			sc.answered++
		}
		sc.out = nil
		sc.wake()
		for _, h := range sc.waiters {
			h.loop.Post(h.nextF)
		}
		sc.waiters = nil
	})
}

// dropOut forgets the responses not yet written, each answered by being
// dropped. Call it under sc.lk.
func (sc *serverConn) dropOut() {
	for range sc.out {
		sc.answered++
		sc.dropped++
	}
	sc.out, sc.outOff, sc.pending, sc.spare = nil, 0, 0, nil
}
