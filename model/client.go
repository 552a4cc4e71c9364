package model

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// ClientConfig configures a datanode client. Zero values take HDFS's
// defaults (DefaultClientConfig).
type ClientConfig struct {
	Name     string
	Datanode string // address
	// Network is "tcp" (the default) or "unix": data traffic over the
	// datanode's domain socket (HDFS-347's
	// dfs.client.domain.socket.data.traffic).
	Network string
	NoDelay bool
	// CacheCapacity and CacheExpiry shape the peer cache (HDFS-941):
	// connections kept after a clean read for the next one. Expiry must be
	// shorter than the datanode's keep-alive.
	CacheCapacity int
	CacheExpiry   time.Duration
	// Timeout fails an op that makes no progress for this long.
	Timeout    time.Duration
	PacketSize int
	// TokenKey signs the block token of every request (the client plays
	// the namenode's part); nil means DefaultTokenKey. Tokens last
	// TokenLifetime.
	TokenKey      []byte
	TokenLifetime time.Duration
	// MintToken, if set, makes each request's token instead (tests hand
	// out missing, forged or expired ones).
	MintToken func(req Request, now time.Duration) []byte
	Bugs      ClientBugs
}

// ClientBugs switch on historic client bugs, for tests and `check --bug`.
type ClientBugs struct {
	// CloseLeaksCache is HDFS-3359: Close forgets cached peers without
	// closing them.
	CloseLeaksCache bool
	// ReturnUnclean returns a connection to the cache after an op that did
	// not end cleanly (a timeout or a checksum error).
	ReturnUnclean bool
	// VerifyFirstChunk checks only the first checksum chunk of each
	// packet, so corruption elsewhere in a packet reaches the caller.
	VerifyFirstChunk bool
	// AcceptShortStream takes the last packet as the end of a read
	// without checking the stream carried the whole range: a datanode
	// that ends early hands the caller a short read as a success.
	AcceptShortStream bool
}

// DefaultClientConfig returns HDFS's client defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		Name:          "client",
		NoDelay:       true,
		CacheCapacity: 16,
		CacheExpiry:   3 * time.Second,
		Timeout:       60 * time.Second,
		PacketSize:    64 << 10,
		TokenLifetime: DefaultTokenLifetime,
	}
}

// Client errors besides those of the world.
var (
	// ErrRejected: the datanode answered with an error status (missing
	// block, stale stamp, out of range, exists). The op had no effect.
	ErrRejected = errors.New("rejected by datanode")
	// ErrClientClosed: the client was closed.
	ErrClientClosed = errors.New("client closed")
	// ErrBadStream: the datanode sent something malformed.
	ErrBadStream = errors.New("malformed stream from datanode")
)

// Result is what an op returned.
type Result struct {
	Status Status // the datanode's status (StatusSuccess, or why rejected)
	Stamp  uint64 // the replica's generation stamp (read) or the new one
	Length int64  // the replica's length
	Data   []byte // bytes read
	Err    error
	// Unknown is set when the op failed in a way that leaves its effect
	// unknown (the request was sent, no answer came).
	Unknown bool
}

// ClientStats counts what a client did.
type ClientStats struct {
	Ops, Errors, Dials, Reused, DeadPeers, Retries, Expired int
	// ChecksumErrors counts reads failed on a corrupt chunk (HDFS reports
	// the replica to the namenode).
	ChecksumErrors int
	// DialRetries counts connects to a Unix socket whose full accept
	// queue refused them, tried again (RetryUnixDial).
	DialRetries int
	BytesRead   int64
}

// Client reads and writes blocks on one datanode. All its methods run on
// its loop.
type Client struct {
	cfg     ClientConfig
	p       Process
	loop    Loop
	cache   []cachedPeer // oldest first
	reaper  Timer
	closed  bool
	ops     int // ops in flight
	stats   ClientStats
	History *History
	id      int
	bufs    []inBuf  // input buffers of finished ops, for the next ones
	outs    [][]byte // output buffers likewise (writes copy them to the socket)
	mac     TokenMAC
}

// inBuf is an input buffer and how much of it reads have filled so far:
// a fresh one's pages cost their first read a page fault each (Touched),
// the 66 KiB or so a client's first 64 KiB read fills about 160 µs here.
type inBuf struct {
	b    []byte
	used Touched
}

// takeBuf lends an input buffer; ops in flight each hold one, and finished
// ops give theirs back, so a client does not allocate one per op.
func (cl *Client) takeBuf() inBuf {
	if b, ok := popFree(&cl.bufs); ok {
		b.b = b.b[:0]
		return b
	}
	return inBuf{b: newBuffer(cl.p, MaxPacketLen+16<<10)}
}

// putBuf takes back a buffer whose first filled bytes its op's reads
// wrote: those are what a use after the return would find, so only they
// are declared freed (poisoned, in a sim run that poisons). The rest are
// as the last return or the allocation left them; declaring the whole
// 80 KiB after every op, a write's few bytes of answer included, was 4%
// of check.
func (cl *Client) putBuf(b inBuf, filled int) {
	freed(cl.p, b.b[:filled])
	if len(cl.bufs) < 4 {
		b.b = b.b[:0]
		cl.bufs = append(cl.bufs, b)
	}
}

// takeOut lends an output buffer to encode an op's request (and a
// write's packets) into: a write of 100 KB grew a fresh one of its size
// for every op, zeroed (2% of check).
func (cl *Client) takeOut() []byte {
	b, _ := popFree(&cl.outs)
	return b[:0]
}

// putOut takes back a finished op's output buffer. Writes copied its
// bytes to the socket, so nothing else holds it.
func (cl *Client) putOut(b []byte) {
	if len(cl.outs) < 4 && cap(b) <= 1<<20 {
		cl.outs = append(cl.outs, b[:0])
	}
}

type cachedPeer struct {
	c     Conn
	since time.Duration
}

// NewClient makes a client on loop of p.
func NewClient(p Process, loop Loop, id int, cfg ClientConfig) (*Client, error) {
	d := DefaultClientConfig()
	orDefault(&cfg.Name, d.Name)
	orDefault(&cfg.Network, "tcp")
	orDefault(&cfg.CacheExpiry, d.CacheExpiry)
	orDefault(&cfg.Timeout, d.Timeout)
	orDefault(&cfg.PacketSize, d.PacketSize)
	orDefault(&cfg.TokenLifetime, d.TokenLifetime)
	if cfg.TokenKey == nil {
		cfg.TokenKey = DefaultTokenKey
	}
	switch {
	case cfg.Datanode == "":
		return nil, fmt.Errorf("client: no datanode address")
	case cfg.Network != "tcp" && cfg.Network != "unix":
		return nil, fmt.Errorf("client: network %q: want tcp or unix", cfg.Network)
	case cfg.CacheCapacity < 0:
		return nil, fmt.Errorf("client: negative cache capacity %d", cfg.CacheCapacity)
	case cfg.CacheExpiry < 0 || cfg.Timeout < 0:
		return nil, fmt.Errorf("client: negative expiry or timeout")
	case cfg.PacketSize < BytesPerChecksum || cfg.PacketSize > MaxPacketData:
		return nil, fmt.Errorf("client: packet size %d outside [%d, %d]", cfg.PacketSize, BytesPerChecksum, MaxPacketData)
	}
	return &Client{cfg: cfg, p: p, loop: loop, id: id}, nil
}

// Stats returns the client's counters.
func (cl *Client) Stats() ClientStats { return cl.stats }

// Cached is the number of connections in the peer cache.
func (cl *Client) Cached() int { return len(cl.cache) }

// OldestCached is when the longest-idle connection in the peer cache was
// put there (ok false: the cache is empty). The reaper closes it once it
// has been idle CacheExpiry.
func (cl *Client) OldestCached() (since time.Duration, ok bool) {
	if len(cl.cache) == 0 {
		return 0, false
	}
	return cl.cache[0].since, true
}

// InFlight is the number of ops not yet finished.
func (cl *Client) InFlight() int { return cl.ops }

// Read reads n bytes at off of block (stamp 0: any), then calls done.
func (cl *Client) Read(block uint64, stamp uint64, off, n int64, done func(Result)) {
	cl.start(&clientOp{kind: OpReadBlock, block: block, stamp: stamp, off: off, n: n, done: done})
}

// ReadInto is Read into the caller's buffer: done's Result.Data is
// buf[:n] when buf can hold n bytes (else a buffer of its own, as Read's).
// A caller that reads over and over (HDFS's TestParallelRead, a pread
// into its buffer) spares a buffer of the read's size each time. buf is
// the client's until done is called.
func (cl *Client) ReadInto(block uint64, stamp uint64, off, n int64, buf []byte, done func(Result)) {
	cl.start(&clientOp{kind: OpReadBlock, block: block, stamp: stamp, off: off, n: n, done: done, into: buf})
}

// ReadStream is Read for a caller that checks data as it arrives: sink
// gets each packet's bytes within the range (at their offset in the
// block; valid only during the call) and done's Result has no Data. A
// client verifying an 8 MiB read then holds one packet, not 8 MiB. sink
// may have seen part of the range when done reports an error.
func (cl *Client) ReadStream(block uint64, stamp uint64, off, n int64, sink func(off int64, p []byte), done func(Result)) {
	cl.start(&clientOp{kind: OpReadBlock, block: block, stamp: stamp, off: off, n: n, done: done, sink: sink})
}

// ReadHead asks for n bytes at off of block but takes only the first
// want, then closes the connection with the rest unread, as a reader that
// opens a stream, reads a few bytes and closes it (DFSInputStream.read of
// a small buffer, then close): the connection cannot be cached, and
// closing with unread data resets it.
func (cl *Client) ReadHead(block uint64, stamp uint64, off, n, want int64, done func(Result)) {
	cl.start(&clientOp{kind: OpReadBlock, block: block, stamp: stamp, off: off, n: n, head: min(want, n), done: done})
}

// Write creates block with data.
func (cl *Client) Write(block uint64, data []byte, done func(Result)) {
	cl.start(&clientOp{kind: OpWriteBlock, block: block, data: data, n: int64(len(data)), done: done})
}

// Append appends data to block (bumping its stamp).
func (cl *Client) Append(block uint64, data []byte, done func(Result)) {
	cl.start(&clientOp{kind: OpAppendBlock, block: block, data: data, n: int64(len(data)), done: done})
}

// Replace gives block new contents (and a new stamp).
func (cl *Client) Replace(block uint64, data []byte, done func(Result)) {
	cl.start(&clientOp{kind: OpReplaceBlock, block: block, data: data, n: int64(len(data)), done: done})
}

// Delete removes block.
func (cl *Client) Delete(block uint64, done func(Result)) {
	cl.start(&clientOp{kind: OpDeleteBlock, block: block, done: done})
}

// Close closes the client's cached connections. Ops in flight finish on
// their own connections, which are then closed rather than cached.
func (cl *Client) Close() {
	if cl.closed {
		return
	}
	cl.closed = true
	if cl.reaper != nil {
		cl.reaper.Stop()
		cl.reaper = nil
	}
	if cl.cfg.Bugs.CloseLeaksCache {
		cl.cache = nil // HDFS-3359: forgotten, never closed
		return
	}
	for _, cp := range cl.cache {
		_ = cp.c.Close()
	}
	cl.cache = nil
}

type opPhase uint8

const (
	opSending opPhase = iota
	opResponse
	opPackets
	opStatus
	opDone
)

type clientOp struct {
	cl    *Client
	kind  Op
	block uint64
	stamp uint64
	off   int64
	n     int64
	data  []byte
	sink  func(off int64, p []byte) // ReadStream's: data goes here, not into Result.Data
	into  []byte                    // ReadInto's: Result.Data goes here if it fits
	got   int64                     // bytes of the range read so far
	head  int64                     // ReadHead's: done once this many bytes arrived
	// dialWait is how long the op has waited for room in a Unix
	// socket's accept queue (RetryUnixDial).
	dialWait time.Duration
	done     func(Result)
	rec      int // index in History, or -1

	conn     Conn
	reused   bool
	retried  bool
	phase    opPhase
	out      []byte
	outOff   int
	sentAll  bool
	in       []byte
	inBuf    []byte  // in's buffer: in is its bytes not yet taken (compactInput)
	inFilled int     // how far into in's buffer this op's reads have written
	inUsed   Touched // how much of in's buffer reads have filled (inBuf)
	gotAny   bool
	resp     Response
	next     int64 // expected offset of the next packet
	seq      int64 // the last packet's seqno (-1 before the first)
	result   Result
	timer    Deadline
	timeoutF func() // op.timedOut, bound once: armTimer runs at every progress
	finished bool
}

func (cl *Client) start(op *clientOp) {
	op.cl = cl
	op.rec = -1
	cl.ops++
	cl.stats.Ops++
	if cl.History != nil {
		op.rec = cl.History.call(cl.id, op, cl.loop.Now())
	}
	if cl.closed {
		op.finish(Result{Err: ErrClientClosed})
		return
	}
	if op.kind == OpReadBlock && (op.off < 0 || op.n < 0) {
		op.finish(Result{Err: fmt.Errorf("read of %d bytes at %d: %w", op.n, op.off, ErrOutOfRange)})
		return
	}
	op.begin()
}

// begin runs the op on a cached connection if there is one (reads only,
// as HDFS caches only reader peers), else on a fresh one.
func (op *clientOp) begin() {
	cl := op.cl
	op.phase, op.in, op.gotAny, op.sentAll, op.outOff = opSending, op.inBuf[:0], false, false, 0
	op.conn, op.reused = nil, false
	if op.kind == OpReadBlock && !op.retried {
		op.conn = cl.takeCached()
		op.reused = op.conn != nil
	}
	if op.conn == nil {
		c, err := cl.p.Dial(cl.cfg.Network, cl.cfg.Datanode, cl.loop, op.onEvent)
		if err != nil {
			if RetryUnixDial(cl.cfg.Network, err, &op.dialWait, cl.cfg.Timeout) {
				cl.stats.DialRetries++
				if !op.timer.Armed() {
					// Waiting is no progress: the op's timeout bounds
					// it (timedOut finishes the op; redial then stops).
					op.armTimer()
				}
				cl.loop.AfterFunc(UnixDialRetry, op.redial)
				return
			}
			op.finish(Result{Err: fmt.Errorf("dial %s: %w", cl.cfg.Datanode, err)})
			return
		}
		cl.stats.Dials++
		if cl.cfg.Network == "tcp" { // a Unix socket has no Nagle
			if err := c.SetNoDelay(cl.cfg.NoDelay); err != nil {
				_ = c.Close()
				op.finish(Result{Err: err})
				return
			}
		}
		op.conn = c
	} else {
		cl.stats.Reused++
		op.conn.SetHandler(cl.loop, op.onEvent)
		op.conn.SetReadInterest(true)
	}
	if op.out == nil {
		op.out = cl.takeOut()
	}
	op.out = op.encode(op.out[:0])
	op.armTimer()
	op.flush()
}

// redial begins the op again after a domain-socket connect the
// datanode's full accept queue refused.
func (op *clientOp) redial() {
	if op.finished {
		return // timed out while it waited
	}
	if op.cl.closed {
		op.finish(Result{Err: ErrClientClosed})
		return
	}
	op.begin()
}

// UnixDialRetry is how soon a client tries again a domain-socket connect
// that the listener's full accept queue refused. HDFS's DomainSocket
// connects blocking, and a blocking connect on a Unix socket waits for
// room in the queue; a non-blocking one fails at once with EAGAIN (and
// nothing signals the room), so the client waits by retrying.
const UnixDialRetry = time.Millisecond

// RetryUnixDial reports whether a dial that failed with err should be
// tried again after UnixDialRetry: a Unix socket's accept queue was full
// and the dial has waited less than patience (a minute if 0) in all,
// which *waited counts.
func RetryUnixDial(network string, err error, waited *time.Duration, patience time.Duration) bool {
	if network != "unix" || !errors.Is(err, ErrWouldBlock) {
		return false
	}
	if patience <= 0 {
		patience = time.Minute
	}
	if *waited >= patience {
		return false
	}
	*waited += UnixDialRetry
	return true
}

func (op *clientOp) encode(b []byte) []byte {
	req := Request{Op: op.kind, BlockID: op.block, GenStamp: op.stamp, Offset: op.off, Length: op.n, ClientName: op.cl.cfg.Name}
	req.Token = op.cl.token(req)
	b = AppendRequest(b, req)
	switch op.kind {
	case OpWriteBlock, OpAppendBlock, OpReplaceBlock:
		ps := op.cl.cfg.PacketSize
		// Room for every packet at once, rather than growing by
		// doubling (each step a copy of all the data so far).
		packets := (len(op.data)+ps-1)/ps + 1
		if need := packets*PacketHeaderLen + numChunks(len(op.data), BytesPerChecksum)*ChecksumSize + len(op.data); cap(b)-len(b) < need {
			// From the world's recycled buffers where it has them
			// (check's thousands of short worlds): zeroing a fresh
			// one that every byte is then written over was a
			// fiftieth of a datanode seed's CPU.
			b = append(newBuffer(op.cl.p, len(b)+need), b...)
		}
		var seq int64
		for off := 0; off < len(op.data); off += ps {
			end := min(off+ps, len(op.data))
			b = AppendPacket(b, PacketHeader{Offset: int64(off), Seqno: seq}, op.data[off:end], BytesPerChecksum)
			inFlight(op.cl.p, b[len(b)-(end-off):])
			seq++
		}
		b = AppendPacketHeader(b, PacketHeader{Offset: int64(len(op.data)), Seqno: seq, Last: true}, 0, BytesPerChecksum)
	}
	return b
}

// token is req's block token.
func (cl *Client) token(req Request) []byte {
	now := cl.loop.Now()
	if cl.cfg.MintToken != nil {
		return cl.cfg.MintToken(req, now)
	}
	return cl.mac.Issue(cl.cfg.TokenKey, BlockToken{
		BlockID: req.BlockID, GenStamp: req.GenStamp, Modes: ModeFor(req.Op), Expiry: now + cl.cfg.TokenLifetime,
	})
}

func (op *clientOp) armTimer() {
	if op.cl.cfg.Timeout <= 0 {
		op.timer.Stop()
		return
	}
	if op.timeoutF == nil {
		op.timeoutF = op.timedOut
	}
	op.timer.Arm(op.cl.loop, op.cl.cfg.Timeout, op.timeoutF)
}

func (op *clientOp) timedOut() {
	if !op.finished {
		op.cl.p.Log("client-timeout", "client", op.cl.id, "block", op.block)
		// The connection is stuck, not known dead: only the
		// ReturnUnclean bug would keep it.
		op.fail(fmt.Errorf("no progress for %v: %w", op.cl.cfg.Timeout, ErrTimedOut), false)
	}
}

func (op *clientOp) flush() {
	before := op.outOff
	done, err := writeOut(op.conn, op.out, &op.outOff)
	if err != nil {
		op.connFailed(err)
		return
	}
	if op.outOff > before && op.timer.Armed() {
		// Sending is progress too: a large write through a small send
		// buffer must not time out while the datanode takes it.
		op.armTimer()
	}
	if !done {
		return
	}
	switch op.phase {
	case opSending:
		op.sentAll = true
		op.phase = opResponse
	case opStatus:
		op.succeed()
	}
}

func (op *clientOp) onEvent(ev Events) {
	if op.finished {
		return
	}
	if ev&Writable != 0 && op.outOff < len(op.out) {
		op.flush()
		if op.finished {
			return
		}
	}
	if ev&(Readable|Hangup) != 0 {
		op.readInput()
	}
}

func (op *clientOp) readInput() {
	for !op.finished && (op.phase == opResponse || op.phase == opPackets || op.phase == opSending) {
		if op.in == nil {
			b := op.cl.takeBuf()
			op.in, op.inBuf, op.inUsed = b.b, b.b, b.used
		}
		op.in = compactInput(op.inBuf, op.in)
		if cap(op.in)-len(op.in) < 16<<10 {
			grown := newBuffer(op.cl.p, max(2*cap(op.in), len(op.in)+MaxPacketLen))[:len(op.in)]
			op.inUsed = 0
			op.inUsed.Use(op.cl.p, len(op.in))
			copy(grown, op.in)
			op.in, op.inBuf = grown, grown
		}
		n, err := op.conn.Read(op.in[len(op.in):cap(op.in)])
		if n > 0 {
			op.gotAny = true
			op.in = op.in[:len(op.in)+n]
			op.inFilled = max(op.inFilled, len(op.in))
			op.inUsed.Use(op.cl.p, len(op.in))
			op.armTimer()
			op.process()
			continue
		}
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("datanode closed the connection: %w", io.ErrUnexpectedEOF)
		}
		op.connFailed(err)
		return
	}
}

func (op *clientOp) process() {
	for !op.finished && len(op.in) > 0 {
		switch op.phase {
		case opResponse:
			resp, n, err := DecodeResponse(op.in)
			if errors.Is(err, ErrNeedMore) {
				return
			}
			if err != nil {
				op.fail(fmt.Errorf("%w: %v", ErrBadStream, err), false)
				return
			}
			op.consume(n)
			op.resp = resp
			if resp.Status != StatusSuccess {
				// Rejected: no effect; the datanode closes the connection.
				op.closeConn()
				op.finish(Result{Status: resp.Status, Err: fmt.Errorf("%s: %w", resp.Message, ErrRejected)})
				return
			}
			if op.kind != OpReadBlock {
				op.result = Result{Status: StatusSuccess, Stamp: resp.GenStamp, Length: resp.BlockLength}
				op.succeed()
				return
			}
			if resp.ChecksumType != ChecksumCRC32C || resp.BytesPerChecksum != BytesPerChecksum ||
				resp.FirstChunkOffset > op.off || op.off-resp.FirstChunkOffset >= BytesPerChecksum {
				op.fail(fmt.Errorf("%w: response %+v for a read at %d", ErrBadStream, resp, op.off), false)
				return
			}
			op.next, op.seq = resp.FirstChunkOffset, -1
			var data []byte
			switch {
			case op.sink != nil:
			case op.into != nil && int64(cap(op.into)) >= op.n:
				data = op.into[:0]
			default:
				data = make([]byte, 0, op.n)
			}
			op.got = 0
			op.result = Result{Status: StatusSuccess, Stamp: resp.GenStamp, Length: resp.BlockLength, Data: data}
			op.phase = opPackets
		case opPackets:
			pkt, n, err := DecodePacket(op.in, BytesPerChecksum)
			if errors.Is(err, ErrNeedMore) {
				return
			}
			if err != nil {
				op.fail(fmt.Errorf("%w: %v", ErrBadStream, err), false)
				return
			}
			if err := pkt.InSequence(op.seq); err != nil {
				op.fail(fmt.Errorf("%w: %v", ErrBadStream, err), false)
				return
			}
			op.seq = pkt.Seqno
			if pkt.Offset != op.next {
				op.fail(fmt.Errorf("%w: packet at %d, want %d", ErrBadStream, pkt.Offset, op.next), false)
				return
			}
			if err := op.verify(pkt); err != nil {
				op.cl.stats.ChecksumErrors++
				op.cl.p.Log("client-checksum", "block", op.block, "err", err.Error())
				op.sendStatusAndFail(StatusErrorChecksum, err)
				return
			}
			op.cl.p.CPU(CPUChecksum, len(pkt.Data))
			op.collect(pkt)
			op.next += int64(len(pkt.Data))
			last := pkt.Last
			op.consume(n)
			if op.head > 0 && op.got >= op.head {
				op.result.Data = op.result.Data[:op.head]
				op.cl.stats.BytesRead += op.head
				op.closeConn()
				op.finish(op.result)
				return
			}
			if last {
				if op.got != op.n && !op.cl.cfg.Bugs.AcceptShortStream {
					op.fail(fmt.Errorf("%w: stream ended with %d of %d bytes", ErrBadStream, op.got, op.n), false)
					return
				}
				op.cl.stats.BytesRead += op.n
				op.phase = opStatus
				op.out = AppendStatus(op.out[:0], StatusChecksumOK)
				op.outOff = 0
				op.flush()
				return
			}
		default:
			return
		}
	}
}

// verify checks a packet's data against its checksums.
func (op *clientOp) verify(pkt Packet) error {
	if op.cl.cfg.Bugs.VerifyFirstChunk && len(pkt.Data) > BytesPerChecksum {
		return VerifyChunks(op.block, pkt.Offset, pkt.Data[:BytesPerChecksum], pkt.Sums[:ChecksumSize], BytesPerChecksum)
	}
	return pkt.Verify(op.block, BytesPerChecksum)
}

// collect keeps the part of a packet inside the requested range.
func (op *clientOp) collect(pkt Packet) {
	start, end := pkt.Offset, pkt.Offset+int64(len(pkt.Data))
	lo, hi := max(start, op.off), min(end, op.off+op.n)
	if lo >= hi {
		return
	}
	op.got += hi - lo
	if op.sink != nil {
		op.sink(lo, pkt.Data[lo-start:hi-start])
		return
	}
	op.result.Data = append(op.result.Data, pkt.Data[lo-start:hi-start]...)
}

// consume takes n bytes of the input; what is left moves to the
// buffer's front before the next read (compactInput).
func (op *clientOp) consume(n int) { op.in = op.in[n:] }

// connFailed handles a dead connection. A cached peer that fails before
// any answer arrived was closed by the datanode while idle: retry once on
// a fresh connection without surfacing an error.
func (op *clientOp) connFailed(err error) {
	if op.reused && !op.gotAny && !op.retried {
		op.cl.stats.DeadPeers++
		op.cl.stats.Retries++
		op.cl.p.Log("client-dead-peer", "client", op.cl.id, "err", err.Error())
		op.closeConn()
		op.retried = true
		op.begin()
		return
	}
	op.fail(err, true)
}

// fail ends the op with err. deadConn says the connection is known dead;
// either way it is closed, not reused — unless the ReturnUnclean bug
// keeps one that is not known dead.
func (op *clientOp) fail(err error, deadConn bool) {
	unknown := op.kind != OpReadBlock && op.sentAll
	if op.cl.cfg.Bugs.ReturnUnclean && !deadConn && op.conn != nil && op.conn.Err() == nil {
		c := op.conn
		op.conn = nil
		op.cl.putCached(c)
	} else {
		op.closeConn()
	}
	op.finish(Result{Err: err, Unknown: unknown})
}

// sendStatusAndFail tells the datanode why the read stopped, then fails.
func (op *clientOp) sendStatusAndFail(st Status, err error) {
	if op.conn != nil {
		_, _ = op.conn.Write(AppendStatus(nil, st))
	}
	op.fail(err, op.cl.cfg.Bugs.ReturnUnclean == false)
}

func (op *clientOp) succeed() {
	c := op.conn
	op.conn = nil
	if op.kind == OpReadBlock {
		op.cl.putCached(c)
	} else {
		_ = c.Close()
	}
	op.finish(op.result)
}

func (op *clientOp) closeConn() {
	if op.conn != nil {
		_ = op.conn.Close()
		op.conn = nil
	}
}

func (op *clientOp) finish(r Result) {
	if op.finished {
		return
	}
	op.finished = true
	op.phase = opDone
	op.timer.Stop()
	cl := op.cl
	cl.ops--
	if op.inBuf != nil {
		cl.putBuf(inBuf{op.inBuf, op.inUsed}, op.inFilled)
		op.in, op.inBuf, op.inFilled, op.inUsed = nil, nil, 0, 0
	}
	if op.out != nil {
		cl.putOut(op.out)
		op.out, op.outOff = nil, 0
	}
	if r.Err != nil {
		cl.stats.Errors++
	}
	if cl.History != nil && op.rec >= 0 {
		cl.History.ret(op.rec, r, cl.loop.Now())
	}
	if op.done != nil {
		op.done(r)
	}
}

// takeCached returns the most recently cached live peer, closing expired
// ones on the way.
func (cl *Client) takeCached() Conn {
	now := cl.loop.Now()
	for len(cl.cache) > 0 {
		cp := cl.cache[len(cl.cache)-1]
		cl.cache = cl.cache[:len(cl.cache)-1]
		if now-cp.since >= cl.cfg.CacheExpiry {
			cl.stats.Expired++
			_ = cp.c.Close()
			continue
		}
		return cp.c
	}
	return nil
}

// putCached keeps a connection for the next read.
func (cl *Client) putCached(c Conn) {
	if c == nil {
		return
	}
	if cl.closed || cl.cfg.CacheCapacity == 0 {
		_ = c.Close()
		return
	}
	if len(cl.cache) >= cl.cfg.CacheCapacity {
		_ = cl.cache[0].c.Close()
		cl.cache = cl.cache[1:]
	}
	// While cached nobody reads the socket; only a reset is noticed (a
	// level-triggered hangup must not spin).
	c.SetReadInterest(false)
	c.SetWriteInterest(false)
	c.SetHandler(cl.loop, func(ev Events) {
		if ev&Hangup != 0 {
			cl.evict(c)
		}
	})
	cl.cache = append(cl.cache, cachedPeer{c: c, since: cl.loop.Now()})
	cl.armReaper()
}

func (cl *Client) evict(c Conn) {
	for i, cp := range cl.cache {
		if cp.c == c {
			cl.cache = append(cl.cache[:i], cl.cache[i+1:]...)
			_ = c.Close()
			return
		}
	}
}

// armReaper closes expired peers in the background, as HDFS's PeerCache
// daemon does, so idle sockets do not outlive the expiry.
func (cl *Client) armReaper() {
	if cl.reaper != nil || len(cl.cache) == 0 {
		return
	}
	due := cl.cache[0].since + cl.cfg.CacheExpiry - cl.loop.Now()
	cl.reaper = cl.loop.AfterFunc(max(due, 0), func() {
		cl.reaper = nil
		now := cl.loop.Now()
		for len(cl.cache) > 0 && now-cl.cache[0].since >= cl.cfg.CacheExpiry {
			cl.stats.Expired++
			_ = cl.cache[0].c.Close()
			cl.cache = cl.cache[1:]
		}
		cl.armReaper()
	})
}
