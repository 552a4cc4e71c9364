package rpc

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"xceiver/model"
)

// ClientConfig configures a client. Zero values take the defaults.
type ClientConfig struct {
	MaxFrame int
	// IdleTimeout closes a connection that has had no call outstanding for
	// this long (ipc.client.connection.maxidletime, 10 s).
	IdleTimeout time.Duration
	// CallTimeout fails a call that has had no answer for this long; 0
	// waits as long as the connection lives (Hadoop's default, with pings).
	CallTimeout time.Duration
	// OnServerClose, if set, observes each close by the server of a
	// connection the client still held, seen by a read: an end of
	// stream, or a reset. A server closes a connection as idle only when
	// it has been silent for the server's idle timeout with no call
	// outstanding, so a checker can hold it to that.
	OnServerClose func(ServerClose)
	Bugs          ClientBugs
}

// ServerClose is a close by the server as the client saw it, once the
// answers that came with it were taken.
type ServerClose struct {
	// Silent is how long the client had sent nothing on the connection.
	Silent time.Duration
	// Waiting counts the calls still waiting for an answer. Of the
	// oldest: OldestAge is how long ago it was made, and OldestQuiet how
	// long the connection had been silent when it was (a call made just
	// as the server closed an idle connection crosses the close).
	Waiting                int
	OldestAge, OldestQuiet time.Duration
	// Reset: the connection was reset (a server closing with input it
	// had not read resets it), not ended.
	Reset bool
}

// ClientBugs switch on catalogued client bugs.
type ClientBugs struct {
	// ReuseIDs numbers a call by how many calls are outstanding, so a
	// call id is reused on one connection while an earlier call with it
	// is still waiting: the answers get crossed.
	ReuseIDs bool
	// OrphanOnBadResponse is HADOOP-6723: a response with an unexpected
	// call id (a fatal answer, or garbage) kills the connection's
	// receiver without failing its calls or closing it, so every call
	// outstanding on it waits forever.
	OrphanOnBadResponse bool
}

// DefaultClientConfig returns Hadoop's client defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{MaxFrame: DefaultMaxFrame, IdleTimeout: 10 * time.Second}
}

// ErrConnection wraps every error that ended a call because its connection
// failed (refused, reset, closed by the server, a fatal answer); the call
// may or may not have run.
var ErrConnection = errors.New("rpc: connection failed")

// ErrCallTimeout ends a call that got no answer within CallTimeout.
var ErrCallTimeout = errors.New("rpc: call timed out")

// Reply is a call's outcome: Err is nil when a response came.
type Reply struct {
	Status  Status
	Payload []byte
	Err     error
}

// ClientStats counts what a client did.
type ClientStats struct {
	Calls, Replies, ConnErrors, Timeouts int
	Dials, IdleCloses                    int
	// Unmatched counts responses whose call id matched no call waiting
	// and no call that had timed out: a server answering twice, or ids
	// crossed.
	Unmatched int
	Late      int // answers to calls that had already timed out
	// Fatal counts fatal answers (the server's answer to a request it
	// cannot follow), and Malformed frames the client could not decode;
	// either ends the connection. TCP delivers the server's bytes
	// exactly, so a correct server sends no malformed frame, and a fatal
	// answer only to a request the client garbled.
	Fatal, Malformed int
}

// Client multiplexes calls over one connection per server address, as
// Hadoop's IPC Client does. All its methods run on its loop.
type Client struct {
	cfg    ClientConfig
	p      model.Process
	loop   model.Loop
	conns  map[string]*clientConn
	stats  ClientStats
	closed bool
	seq    uint64
	// scratch is what a connection's read reads into before appending
	// to its input, one for all of the client's connections (see
	// reader.scratch).
	scratch []byte
}

type clientConn struct {
	cl     *Client
	addr   string
	seq    uint64
	c      model.Conn
	up     bool // connected
	dead   bool // closed, or orphaned by the HADOOP-6723 bug
	out    []byte
	in     []byte
	nextID uint32
	calls  map[uint32]*pending
	late   map[uint32]bool // ids of calls that timed out, whose answer may still come
	idle   model.Timer
	// lastSend is when the connection last wrote bytes (or was dialled).
	lastSend time.Duration
	// Fault knobs: write at most piece bytes per write, pieceGap apart;
	// paused stops reading responses.
	piece     int
	pieceGap  time.Duration
	pieceWait model.Timer
	paused    bool
}

type pending struct {
	id    uint32
	done  func(Reply)
	view  bool // CallView's: its reply's payload is not copied
	timer model.Timer
	// made is when the call was made, and quiet how long its connection
	// had been silent then (ServerClose).
	made, quiet time.Duration
}

// NewClient makes a client on loop of p.
func NewClient(p model.Process, loop model.Loop, cfg ClientConfig) (*Client, error) {
	d := DefaultClientConfig()
	orDefault(&cfg.MaxFrame, d.MaxFrame)
	orDefault(&cfg.IdleTimeout, d.IdleTimeout)
	if cfg.MaxFrame < 0 || cfg.IdleTimeout < 0 || cfg.CallTimeout < 0 {
		return nil, errors.New("rpc client: negative size or timeout")
	}
	return &Client{cfg: cfg, p: p, loop: loop, conns: make(map[string]*clientConn)}, nil
}

// Stats returns the client's counters.
func (cl *Client) Stats() ClientStats { return cl.stats }

// Conns is the number of connections the client holds open.
func (cl *Client) Conns() int { return len(cl.conns) }

// Silent reports how long the connection to addr has sent nothing; ok is
// false when the client holds none (a call would dial a new one). A call
// sent on a connection silent for the server's idle timeout may cross the
// server's idle close: neither side can see that race coming, which is why
// Hadoop's server waits twice the client's idle timeout, so that the
// client closes first.
func (cl *Client) Silent(addr string) (d time.Duration, ok bool) {
	cc := cl.conns[addr]
	if cc == nil || cc.dead {
		return 0, false
	}
	return cl.loop.Now() - cc.lastSend, true
}

// Outstanding is the number of calls waiting for an answer.
func (cl *Client) Outstanding() int {
	n := 0
	for _, a := range slices.Sorted(maps.Keys(cl.conns)) {
		n += len(cl.conns[a].calls)
	}
	return n
}

// Call sends a call to the server at addr and calls done once with its
// outcome.
func (cl *Client) Call(addr string, method uint8, payload []byte, done func(Reply)) {
	cl.call(addr, method, payload, false, done)
}

// CallView is Call for a caller that is done with the reply's payload
// when done returns (it decodes it there): the payload is the client's
// input buffer, not a copy of it, valid only until then.
func (cl *Client) CallView(addr string, method uint8, payload []byte, done func(Reply)) {
	cl.call(addr, method, payload, true, done)
}

func (cl *Client) call(addr string, method uint8, payload []byte, view bool, done func(Reply)) {
	if cl.closed {
		done(Reply{Err: fmt.Errorf("%w: client closed", ErrConnection)})
		return
	}
	if len(payload)+5 > cl.cfg.MaxFrame {
		done(Reply{Err: fmt.Errorf("rpc call: payload of %d bytes over the frame bound", len(payload))})
		return
	}
	cc, err := cl.conn(addr)
	if err != nil {
		done(Reply{Err: fmt.Errorf("%w: %w", ErrConnection, err)})
		return
	}
	cl.stats.Calls++
	id := cc.nextID
	if cl.cfg.Bugs.ReuseIDs {
		id = uint32(len(cc.calls))
	} else {
		cc.nextID++
		if cc.nextID == FatalID {
			cc.nextID = 0
		}
	}
	now := cl.loop.Now()
	pc := &pending{id: id, done: done, view: view, made: now, quiet: now - cc.lastSend}
	cc.calls[id] = pc
	if cc.idle != nil {
		cc.idle.Stop()
		cc.idle = nil
	}
	if cl.cfg.CallTimeout > 0 {
		pc.timer = cl.loop.AfterFunc(cl.cfg.CallTimeout, func() { cc.timeout(pc) })
	}
	cl.p.CPU(model.CPUParse, 1)
	cc.out = AppendFrame(cc.out, Frame{ID: id, Code: method, Payload: payload})
	if cc.up {
		cc.flush()
	}
}

// SendRaw queues raw bytes on the connection to addr, for bad-input tests
// and faults (a garbage or truncated call). It makes the connection if
// needed.
func (cl *Client) SendRaw(addr string, b []byte) error {
	cc, err := cl.conn(addr)
	if err != nil {
		return err
	}
	cc.out = append(cc.out, b...)
	if cc.up {
		cc.flush()
	}
	return nil
}

// Abort resets the connection to addr with its calls in flight (a client
// that vanishes); its calls fail with ErrConnection.
func (cl *Client) Abort(addr string) {
	if cc := cl.conns[addr]; cc != nil {
		cc.c.Abort()
		cc.fail(errors.New("aborted"))
	}
}

// Close closes every connection; outstanding calls fail.
func (cl *Client) Close() {
	cl.closed = true
	for _, a := range slices.Sorted(maps.Keys(cl.conns)) {
		cc := cl.conns[a]
		cc.c.Close()
		cc.fail(errors.New("client closed"))
	}
}

func (cl *Client) dial(addr string) (*clientConn, error) {
	cl.seq++
	cc := &clientConn{cl: cl, addr: addr, seq: cl.seq, calls: make(map[uint32]*pending), late: make(map[uint32]bool)}
	c, err := cl.p.Dial("tcp", addr, cl.loop, cc.onEvent)
	if err != nil {
		return nil, err
	}
	cl.stats.Dials++
	cc.c = c
	cc.lastSend = cl.loop.Now()
	c.SetNoDelay(true)
	c.SetWriteInterest(true) // to hear when the connect completes
	cc.out = append(cc.out, Preamble[:]...)
	cl.conns[addr] = cc
	return cc, nil
}

func (cc *clientConn) onEvent(ev model.Events) {
	if cc.dead {
		return
	}
	if ev&model.Hangup != 0 && !cc.up {
		err := cc.c.Err()
		if err == nil {
			err = model.ErrRefused
		}
		cc.c.Close()
		cc.fail(err)
		return
	}
	if ev&model.Writable != 0 {
		cc.up = true
		cc.flush()
		if cc.dead {
			return
		}
	}
	if ev&(model.Readable|model.Hangup) != 0 {
		cc.read()
	}
}

func (cc *clientConn) flush() {
	for len(cc.out) > 0 {
		if cc.pieceWait != nil {
			return
		}
		b := cc.out
		if cc.piece > 0 && len(b) > cc.piece {
			b = b[:cc.piece]
		}
		n, err := cc.c.Write(b)
		if errors.Is(err, model.ErrWouldBlock) {
			cc.c.SetWriteInterest(true)
			return
		}
		if err != nil {
			cc.c.Close()
			cc.fail(err)
			return
		}
		if n > 0 {
			cc.lastSend = cc.cl.loop.Now()
		}
		cc.out = cc.out[:copy(cc.out, cc.out[n:])]
		if cc.piece > 0 && len(cc.out) > 0 {
			cc.c.SetWriteInterest(false)
			cc.pieceWait = cc.cl.loop.AfterFunc(cc.pieceGap, func() {
				cc.pieceWait = nil
				if !cc.dead {
					cc.flush()
				}
			})
			return
		}
	}
	cc.c.SetWriteInterest(false)
}

// PieceWrites makes the connection to addr send at most n bytes per write,
// gap apart (a fault: a call arrives at the server in pieces). It makes the
// connection if needed.
func (cl *Client) PieceWrites(addr string, n int, gap time.Duration) error {
	cc, err := cl.conn(addr)
	if err != nil {
		return err
	}
	cc.piece, cc.pieceGap = n, gap
	return nil
}

// PauseReading stops reading responses on the connection to addr (a
// fault: a slow client); ResumeReading starts again.
func (cl *Client) PauseReading(addr string) {
	if cc := cl.conns[addr]; cc != nil && !cc.dead {
		cc.paused = true
		cc.c.SetReadInterest(false)
	}
}

// ResumeReading undoes PauseReading.
func (cl *Client) ResumeReading(addr string) {
	if cc := cl.conns[addr]; cc != nil && cc.paused && !cc.dead {
		cc.paused = false
		cc.c.SetReadInterest(true)
	}
}

func (cl *Client) conn(addr string) (*clientConn, error) {
	if cc := cl.conns[addr]; cc != nil {
		return cc, nil
	}
	if cl.closed {
		return nil, fmt.Errorf("%w: client closed", ErrConnection)
	}
	return cl.dial(addr)
}

func (cc *clientConn) read() {
	if cc.cl.scratch == nil {
		cc.cl.scratch = make([]byte, readChunk)
	}
	buf := cc.cl.scratch
	var readErr error
	closed, reset := false, false
	// Answers that arrived with the close are handled first: on loopback
	// a server's last answer and its FIN or RST often land together.
	defer func() {
		if readErr != nil && !cc.dead {
			if f := cc.cl.cfg.OnServerClose; closed && f != nil {
				f(cc.serverClose(reset))
			}
			cc.c.Close()
			cc.fail(readErr)
		}
	}()
	for !cc.dead {
		n, err := cc.c.Read(buf)
		if n > 0 {
			cc.in = append(cc.in, buf[:n]...)
			// The answers read so far are taken at each read, not once
			// the socket is drained: a client that had let megabytes
			// of answers pile up in its socket grew its buffer to all
			// of them at once, a third of an rpc check's CPU (its
			// slow clients, once the server no longer closed them).
			cc.take()
		}
		if errors.Is(err, model.ErrWouldBlock) {
			break
		}
		if err != nil {
			reset = errors.Is(err, model.ErrReset)
			closed = err == io.EOF || reset
			if err == io.EOF {
				err = errors.New("closed by server")
			}
			readErr = err
			break
		}
	}
}

// take answers the whole frames cc.in holds and keeps the rest.
func (cc *clientConn) take() {
	off := 0
	for !cc.dead {
		f, n, err := DecodeFrame(cc.in[off:], cc.cl.cfg.MaxFrame)
		if errors.Is(err, ErrShort) {
			break
		}
		if err != nil {
			cc.cl.stats.Malformed++
			cc.bad(err)
			return
		}
		off += n
		cc.answer(f)
	}
	if !cc.dead && off > 0 {
		cc.in = cc.in[:copy(cc.in, cc.in[off:])]
	}
}

// serverClose describes the server's close of cc as the client sees it.
func (cc *clientConn) serverClose(reset bool) ServerClose {
	now := cc.cl.loop.Now()
	sc := ServerClose{Silent: now - cc.lastSend, Waiting: len(cc.calls), Reset: reset}
	var oldest *pending
	for _, id := range slices.Sorted(maps.Keys(cc.calls)) {
		if pc := cc.calls[id]; oldest == nil || pc.made < oldest.made {
			oldest = pc
		}
	}
	if oldest != nil {
		sc.OldestAge, sc.OldestQuiet = now-oldest.made, oldest.quiet
	}
	return sc
}

// bad handles a response stream the client cannot follow: the connection
// is dropped and its calls fail, unless the HADOOP-6723 bug orphans them.
func (cc *clientConn) bad(err error) {
	cl := cc.cl
	cl.p.Log("rpc-bad-response", "conn", cc.seq, "err", err.Error())
	if cl.cfg.Bugs.OrphanOnBadResponse {
		// The receiver thread died; nobody reads or fails the calls, and
		// the connection stays in the table, so later calls wait too.
		cc.dead = true
		cc.c.SetReadInterest(false)
		cc.c.SetWriteInterest(false)
		return
	}
	cc.c.Close()
	cc.fail(err)
}

func (cc *clientConn) answer(f Frame) {
	cl := cc.cl
	cl.p.CPU(model.CPUParse, 1)
	if f.ID == FatalID {
		cl.stats.Fatal++
		cc.bad(fmt.Errorf("fatal from server: %s", f.Payload))
		return
	}
	pc := cc.calls[f.ID]
	if pc == nil {
		if cc.late[f.ID] {
			delete(cc.late, f.ID)
			cl.stats.Late++
			return
		}
		cl.stats.Unmatched++
		cc.bad(fmt.Errorf("response for call %d, which is not waiting", f.ID))
		return
	}
	delete(cc.calls, f.ID)
	if pc.timer != nil {
		pc.timer.Stop()
	}
	cl.stats.Replies++
	cc.armIdle()
	if !pc.view {
		f.Payload = append([]byte(nil), f.Payload...)
	}
	pc.done(Reply{Status: Status(f.Code), Payload: f.Payload})
}

func (cc *clientConn) timeout(pc *pending) {
	if cc.calls[pc.id] != pc {
		return
	}
	delete(cc.calls, pc.id)
	cc.late[pc.id] = true
	cc.cl.stats.Timeouts++
	cc.armIdle()
	pc.done(Reply{Err: ErrCallTimeout})
}

func (cc *clientConn) armIdle() {
	if len(cc.calls) > 0 || cc.idle != nil || cc.dead {
		return
	}
	cc.idle = cc.cl.loop.AfterFunc(cc.cl.cfg.IdleTimeout, func() {
		cc.idle = nil
		if len(cc.calls) == 0 && !cc.dead {
			cc.cl.stats.IdleCloses++
			cc.c.Close()
			cc.fail(errors.New("idle"))
		}
	})
}

// fail ends the connection: it leaves the table and its calls fail, in
// call id order.
func (cc *clientConn) fail(err error) {
	if cc.dead && cc.cl.conns[cc.addr] != cc {
		return
	}
	cl := cc.cl
	cc.dead = true
	if cl.conns[cc.addr] == cc {
		delete(cl.conns, cc.addr)
	}
	if cc.idle != nil {
		cc.idle.Stop()
		cc.idle = nil
	}
	if cc.pieceWait != nil {
		cc.pieceWait.Stop()
		cc.pieceWait = nil
	}
	ids := slices.Sorted(maps.Keys(cc.calls))
	calls := cc.calls
	cc.calls = map[uint32]*pending{}
	for _, id := range ids {
		pc := calls[id]
		if pc.timer != nil {
			pc.timer.Stop()
		}
		cl.stats.ConnErrors++
		pc.done(Reply{Err: fmt.Errorf("%w: %s: %w", ErrConnection, cc.addr, err)})
	}
}
