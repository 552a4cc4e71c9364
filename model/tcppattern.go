package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"
)

// TCPPattern is the HDFS-941 micro-benchmark: per op the client makes
// Writes writes of Msg bytes, the server reads them all and answers Reply
// bytes, and the client reads the reply. Two small writes per request with
// Nagle on is what stalled reused HDFS connections for a delayed ACK.
//
// With Reply 0 an op is one-way: the server answers nothing (it never
// enters pingpong), the client makes each write Gap after the server has
// read the one before, and the op's latency runs from its first write to
// the server's reading its last. Whether a Nagle-held write then waits
// 40 ms turns on what the server's reads do to its delayed ACK: Linux
// ACKs a pushed segment when a reader drains it (a small one, or since
// 6.6 a full-sized one with PSH), but not the second of two equal small
// ones, which lowers rcv_mss to their size instead.
type TCPPattern struct {
	Writes int
	Msg    int
	// Sizes, when set, are the op's writes in order, in bytes (Writes
	// and Msg are then unused): a request whose messages differ.
	Sizes   []int
	Reply   int
	Gap     time.Duration // between one-way writes (Reply 0)
	Ops     int
	NoDelay bool
	// Addr is where the server listens ("" picks a default per world).
	Addr string
	Bugs TCPPatternBugs
}

// TCPPatternBugs are bugs the pattern can be run with.
type TCPPatternBugs struct {
	// ReplyReused: the server stamps the next op's number into its reply
	// buffer as soon as a reply is written, though it handed the buffer
	// to WriteShared and the peer may not have read it yet. A copying
	// write hides it; a shared one sends the new bytes.
	ReplyReused bool
}

// Validate reports a configuration that cannot run.
func (c TCPPattern) Validate() error {
	total := 0
	for i, n := range c.Sizes {
		if n < 1 || n > 1<<30 {
			return fmt.Errorf("--sizes: write %d of %d bytes, want 1 to 2^30", i+1, n)
		}
		if total += n; total > 1<<30 || i >= 1<<20 {
			return fmt.Errorf("--sizes: request larger than 1 GiB or than 2^20 writes")
		}
	}
	switch {
	case len(c.Sizes) == 0 && c.Writes < 1:
		return fmt.Errorf("--writes must be at least 1 (got %d)", c.Writes)
	case len(c.Sizes) == 0 && c.Msg < 1:
		return fmt.Errorf("--msg must be at least 1 byte (got %d)", c.Msg)
	case c.Reply < 0:
		return fmt.Errorf("--reply must be at least 0 bytes (got %d)", c.Reply)
	case c.Gap < 0 || c.Gap > time.Minute:
		return fmt.Errorf("--gap %v outside 0 to 1m", c.Gap)
	case c.Gap > 0 && c.Reply > 0:
		return fmt.Errorf("--gap paces one-way writes: it needs --reply 0 (got --reply %d)", c.Reply)
	case c.Ops < 1:
		return fmt.Errorf("--ops must be at least 1 (got %d)", c.Ops)
	case len(c.Sizes) == 0 && (c.Writes > 1<<30 || c.Msg > 1<<30 || c.Writes*c.Msg > 1<<30) || c.Reply > 1<<30:
		// Each bounded first, the product cannot wrap (--msg 2^62 with
		// --writes 4 did, to 0, and the request's buffer then panicked).
		return fmt.Errorf("request or reply larger than 1 GiB")
	}
	return nil
}

// WriteSizes are an op's writes in order, in bytes.
func (c TCPPattern) WriteSizes() []int {
	if len(c.Sizes) > 0 {
		return c.Sizes
	}
	sizes := make([]int, c.Writes)
	for i := range sizes {
		sizes[i] = c.Msg
	}
	return sizes
}

// Latencies is a list of per-op latencies with summary statistics.
type Latencies []time.Duration

// Summary holds the usual latency statistics.
type Summary struct {
	First, P50, P99, Mean, Max time.Duration
}

// Summarize computes the statistics; First is the first op as recorded.
func (l Latencies) Summarize() Summary {
	if len(l) == 0 {
		return Summary{}
	}
	s := Summary{First: l[0]}
	sorted := append(Latencies(nil), l...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	s.Mean = sum / time.Duration(len(sorted))
	s.P50 = sorted[percentileIndex(len(sorted), 50)]
	s.P99 = sorted[percentileIndex(len(sorted), 99)]
	s.Max = sorted[len(sorted)-1]
	return s
}

// percentileIndex is the nearest-rank percentile.
// StallThreshold is the latency from which an op counts as stalled: far
// above any loopback round trip, well below the 40 ms delayed ACK.
const StallThreshold = 10 * time.Millisecond

// StallShare is the share of ops that took StallThreshold or longer.
func (l Latencies) StallShare() float64 {
	if len(l) == 0 {
		return 0
	}
	n := 0
	for _, d := range l {
		if d >= StallThreshold {
			n++
		}
	}
	return float64(n) / float64(len(l))
}

func percentileIndex(n, pct int) int {
	i := (n*pct + 99) / 100
	if i < 1 {
		i = 1
	}
	return i - 1
}

// TCPPatternResult is what one run measured.
type TCPPatternResult struct {
	Latencies LatencyLog // of every op: listed up to a few thousand, then in buckets
	// WriteLatencies, one-way, are for each write of an op (by index)
	// the times from the client's write to the server's reading it whole:
	// which write of an op waited for a delayed ACK.
	WriteLatencies []LatencyLog
	// ServerRcvBuf is the server's receive buffer after the last op, in
	// bytes (0: the world cannot tell), as autotuning left it.
	ServerRcvBuf int
}

// RunTCPPattern sets up a server and a client process in w and runs the
// pattern to completion.
func RunTCPPattern(w World, cfg TCPPattern, limit time.Duration) (*TCPPatternResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	res := &TCPPatternResult{}
	sizes := cfg.WriteSizes()
	if cfg.Reply == 0 {
		res.WriteLatencies = make([]LatencyLog, len(sizes))
	}
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr(w, "server", 7000)
	}
	req := 0
	for _, n := range sizes {
		req += n
	}
	_, err := w.Spawn("server", ProcessConfig{}, func(p Process) {
		srv := &patternServer{cfg: cfg, p: p, sizes: sizes, req: req, buf: make([]byte, 64<<10), reply: make([]byte, cfg.Reply)}
		ln, err := p.Listen("tcp", addr, 128, p.MainLoop())
		if err != nil {
			w.Fail(fmt.Errorf("tcp-pattern server: %w", err))
			return
		}
		srv.ln = ln
		ln.SetHandler(srv.accept)
		cp, err := w.Spawn("client", ProcessConfig{}, func(cp Process) {
			cl := &patternClient{cfg: cfg, p: cp, res: res, srv: srv, sizes: sizes, buf: make([]byte, 64<<10), msg: make([]byte, slices.Max(sizes))}
			if cfg.Reply == 0 {
				cl.wstart = make([]time.Duration, len(sizes))
			}
			// (Set on the client's loop, where the server's notes run.)
			srv.link.read = cl.serverRead
			cl.dial(ln.Addr())
		})
		if err != nil {
			w.Fail(err)
			return
		}
		srv.clientLoop = cp.MainLoop()
	})
	if err != nil {
		return nil, err
	}
	if err := w.Run(limit); err != nil {
		return res, err
	}
	if res.Latencies.Len() != cfg.Ops {
		return res, fmt.Errorf("tcp-pattern: %d of %d ops finished", res.Latencies.Len(), cfg.Ops)
	}
	return res, nil
}

// DefaultAddr is a listening address for a server in world w: a name in
// sim, an ephemeral loopback port in real.
func DefaultAddr(w World, host string, port int) string {
	if w.Kind() == "sim" {
		return fmt.Sprintf("%s:%d", host, port)
	}
	return "127.0.0.1:0"
}

type patternServer struct {
	cfg   TCPPattern
	p     Process
	ln    Listener
	sizes []int
	req   int // bytes of a request
	buf   []byte
	reply []byte
	conns []*patternConn
	// One-way: the server tells the client, on the client's loop, when
	// it has read each write (and when, by the world's clock).
	clientLoop Loop
	link       patternLink
	// How much of buf and reply the process has used (their first use
	// maps their pages).
	bufUsed, replyUsed Touched
}

// patternLink carries the server's notes to the client: read is set on
// the client's loop and called only there.
type patternLink struct {
	read func(write int, at time.Duration)
}

type patternConn struct {
	c        Conn
	got      int // request bytes read in this op
	sent     int // reply bytes written in this op
	replying bool
	ops      int // replies written
	next     int // one-way: the write being read, and where it ends
	nextEnd  int
}

func (s *patternServer) accept() {
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if err != nil {
			s.p.World().Fail(fmt.Errorf("tcp-pattern accept: %w", err))
			return
		}
		pc := &patternConn{c: c}
		s.conns = append(s.conns, pc)
		if err := c.SetNoDelay(s.cfg.NoDelay); err != nil {
			s.p.World().Fail(err)
			return
		}
		c.SetHandler(s.p.MainLoop(), func(ev Events) { s.serve(pc, ev) })
	}
}

func (s *patternServer) serve(pc *patternConn, ev Events) {
	if s.cfg.Reply == 0 {
		s.serveOneWay(pc)
		return
	}
	for !pc.replying {
		if !s.readRequest(pc) {
			return
		}
		if pc.got == s.req {
			pc.replying, pc.got, pc.sent = true, 0, 0
		}
	}
	s.writeReply(pc)
}

// readRequest reads what the connection has of the op's request, up to
// its end; false when there is nothing more now, or the connection is
// over (the client closed, io.EOF, or reset: the pattern is over).
func (s *patternServer) readRequest(pc *patternConn) bool {
	b := s.buf[:min(len(s.buf), s.req-pc.got)]
	s.bufUsed.Use(s.p, len(b))
	n, err := ReadView(pc.c, b, nil)
	if errors.Is(err, ErrWouldBlock) {
		return false
	}
	if err != nil {
		pc.c.Close()
		if !errors.Is(err, io.EOF) {
			s.p.Log("server-conn-error", "err", err.Error())
		}
		return false
	}
	pc.got += n
	return true
}

// serveOneWay reads the op's writes and tells the client of each as it
// is read whole; it answers nothing.
func (s *patternServer) serveOneWay(pc *patternConn) {
	for {
		if pc.nextEnd == 0 {
			pc.nextEnd = s.sizes[0]
		}
		if !s.readRequest(pc) {
			return
		}
		for pc.nextEnd > 0 && pc.got >= pc.nextEnd {
			k, at, link := pc.next, s.p.MainLoop().Now(), &s.link
			s.clientLoop.Post(func() { link.read(k, at) })
			if pc.next++; pc.next == len(s.sizes) {
				pc.got, pc.next, pc.nextEnd = 0, 0, 0
				break
			}
			pc.nextEnd += s.sizes[pc.next]
		}
	}
}

// writeReply sends the reply, shared: it is built once and never changes,
// so a world that can send it without copying it does (the modelled cost
// is a copying write's).
func (s *patternServer) writeReply(pc *patternConn) {
	s.replyUsed.Use(s.p, len(s.reply)) // the reply is written whole
	for pc.sent < len(s.reply) {
		n, err := WriteShared(pc.c, s.reply[pc.sent:])
		if errors.Is(err, ErrWouldBlock) {
			pc.c.SetWriteInterest(true)
			return
		}
		if err != nil {
			pc.c.Close()
			return
		}
		pc.sent += n
	}
	pc.c.SetWriteInterest(false)
	pc.replying = false
	pc.ops++
	if s.cfg.Bugs.ReplyReused && len(s.reply) >= 8 {
		binary.BigEndian.PutUint64(s.reply, uint64(pc.ops))
	}
}

type patternClient struct {
	cfg   TCPPattern
	p     Process
	srv   *patternServer
	res   *TCPPatternResult
	c     Conn
	sizes []int
	buf   []byte
	msg   []byte
	// until is the writes the client may have made so far in the op: all
	// of them, or one-way the ones the server has read and the next.
	until int
	// wstart, one-way: when the client began each write of the op.
	wstart []time.Duration
	// How much of buf and msg the process has used.
	bufUsed, msgUsed Touched
	start            time.Duration
	got              int
	op               int
	inOp             bool
	ready            bool
	// Writing position within the op: write index and offset in it.
	wi, woff int
}

func (cl *patternClient) dial(addr string) {
	c, err := cl.p.Dial("tcp", addr, cl.p.MainLoop(), cl.handle)
	if err != nil {
		cl.p.World().Fail(fmt.Errorf("tcp-pattern dial: %w", err))
		return
	}
	cl.c = c
	if err := c.SetNoDelay(cl.cfg.NoDelay); err != nil {
		cl.p.World().Fail(err)
		return
	}
	c.SetWriteInterest(true) // connect completes as writability
}

func (cl *patternClient) handle(ev Events) {
	if ev&Hangup != 0 && cl.c.Err() != nil && !cl.inOp {
		cl.p.World().Fail(fmt.Errorf("tcp-pattern connect: %w", cl.c.Err()))
		return
	}
	if !cl.ready && ev&Writable != 0 {
		cl.ready = true
		cl.c.SetWriteInterest(false)
		cl.beginOp()
		return
	}
	if !cl.inOp {
		return
	}
	if cl.wi < cl.until {
		cl.writeRequest()
		return
	}
	if cl.cfg.Reply == 0 {
		return // (the server's notes end a one-way op)
	}
	for cl.got < cl.cfg.Reply {
		b := cl.buf[:min(len(cl.buf), cl.cfg.Reply-cl.got)]
		cl.bufUsed.Use(cl.p, len(b))
		n, err := ReadView(cl.c, b, nil)
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if err != nil {
			cl.fail(fmt.Errorf("tcp-pattern op %d: read reply: %w", cl.op, err))
			return
		}
		cl.got += n
	}
	cl.endOp(cl.p.MainLoop().Now())
}

// endOp records an op that ended at end and starts the next, or ends the
// run.
func (cl *patternClient) endOp(end time.Duration) {
	cl.res.Latencies.Add(end - cl.start)
	cl.inOp = false
	cl.op++
	if cl.op == cl.cfg.Ops {
		if len(cl.srv.conns) > 0 {
			// A measurement, read across processes as the scenario's
			// result is written: the last reply is in, so the server's
			// window has done its growing.
			cl.res.ServerRcvBuf = ReceiveBuffer(cl.srv.conns[0].c)
		}
		cl.c.Close()
		cl.p.World().Stop()
		return
	}
	if cl.cfg.Reply == 0 && cl.cfg.Gap > 0 {
		cl.p.MainLoop().AfterFunc(cl.cfg.Gap, cl.beginOp)
		return
	}
	cl.beginOp()
}

func (cl *patternClient) beginOp() {
	cl.inOp, cl.got, cl.wi, cl.woff = true, 0, 0, 0
	cl.until = len(cl.sizes)
	if cl.cfg.Reply == 0 {
		cl.until = 1
	}
	cl.start = cl.p.MainLoop().Now()
	cl.writeRequest()
}

// serverRead is the server's note, one-way, that it read write k whole
// at the given time: the op ends with its last write, and the next write
// goes Gap later.
func (cl *patternClient) serverRead(k int, at time.Duration) {
	if !cl.inOp || k != cl.until-1 {
		cl.fail(fmt.Errorf("tcp-pattern op %d: the server read write %d, the client has made %d", cl.op, k, cl.until))
		return
	}
	cl.res.WriteLatencies[k].Add(at - cl.wstart[k])
	if k == len(cl.sizes)-1 {
		cl.endOp(at)
		return
	}
	cl.until++
	cl.p.MainLoop().AfterFunc(cl.cfg.Gap, cl.writeRequest)
}

// writeRequest issues the op's writes, one Write call per message, and
// waits for writability when the send buffer is full.
func (cl *patternClient) writeRequest() {
	for cl.wi < cl.until {
		if cl.woff == 0 && cl.wstart != nil {
			cl.wstart[cl.wi] = cl.p.MainLoop().Now()
		}
		msg := cl.msg[:cl.sizes[cl.wi]]
		cl.msgUsed.Use(cl.p, len(msg)) // every write sends the whole message
		n, err := cl.c.Write(msg[cl.woff:])
		if errors.Is(err, ErrWouldBlock) {
			cl.c.SetWriteInterest(true)
			return
		}
		if err != nil {
			cl.fail(fmt.Errorf("tcp-pattern op %d: write: %w", cl.op, err))
			return
		}
		cl.woff += n
		if cl.woff == len(msg) {
			cl.wi, cl.woff = cl.wi+1, 0
		}
	}
	cl.c.SetWriteInterest(false)
}

// fail ends the run with err, closing the connection first: a failed run
// leaves no socket behind.
func (cl *patternClient) fail(err error) {
	cl.c.Close()
	cl.p.World().Fail(err)
}
