package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// TCPPattern is the HDFS-941 micro-benchmark: per op the client makes
// Writes writes of Msg bytes, the server reads them all and answers Reply
// bytes, and the client reads the reply. Two small writes per request with
// Nagle on is what stalled reused HDFS connections for a delayed ACK.
type TCPPattern struct {
	Writes  int
	Msg     int
	Reply   int
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
	switch {
	case c.Writes < 1:
		return fmt.Errorf("--writes must be at least 1 (got %d)", c.Writes)
	case c.Msg < 1:
		return fmt.Errorf("--msg must be at least 1 byte (got %d)", c.Msg)
	case c.Reply < 1:
		return fmt.Errorf("--reply must be at least 1 byte (got %d)", c.Reply)
	case c.Ops < 1:
		return fmt.Errorf("--ops must be at least 1 (got %d)", c.Ops)
	case c.Writes > 1<<30 || c.Msg > 1<<30 || c.Writes*c.Msg > 1<<30 || c.Reply > 1<<30:
		// Each bounded first, the product cannot wrap (--msg 2^62 with
		// --writes 4 did, to 0, and the request's buffer then panicked).
		return fmt.Errorf("request or reply larger than 1 GiB")
	}
	return nil
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
	Latencies Latencies
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
	res := &TCPPatternResult{Latencies: make(Latencies, 0, cfg.Ops)}
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr(w, "server", 7000)
	}
	_, err := w.Spawn("server", ProcessConfig{}, func(p Process) {
		srv := &patternServer{cfg: cfg, p: p, buf: make([]byte, 64<<10), reply: make([]byte, cfg.Reply)}
		ln, err := p.Listen("tcp", addr, 128, p.MainLoop())
		if err != nil {
			w.Fail(fmt.Errorf("tcp-pattern server: %w", err))
			return
		}
		srv.ln = ln
		ln.SetHandler(srv.accept)
		if _, err := w.Spawn("client", ProcessConfig{}, func(cp Process) {
			cl := &patternClient{cfg: cfg, p: cp, res: res, srv: srv, buf: make([]byte, 64<<10), msg: make([]byte, cfg.Msg)}
			cl.dial(ln.Addr())
		}); err != nil {
			w.Fail(err)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := w.Run(limit); err != nil {
		return res, err
	}
	if len(res.Latencies) != cfg.Ops {
		return res, fmt.Errorf("tcp-pattern: %d of %d ops finished", len(res.Latencies), cfg.Ops)
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
	buf   []byte
	reply []byte
	conns []*patternConn
	// How much of buf and reply the process has used (their first use
	// maps their pages).
	bufUsed, replyUsed Touched
}

type patternConn struct {
	c        Conn
	got      int // request bytes read in this op
	sent     int // reply bytes written in this op
	replying bool
	ops      int // replies written
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
	want := s.cfg.Writes * s.cfg.Msg
	for !pc.replying {
		b := s.buf[:min(len(s.buf), want-pc.got)]
		s.bufUsed.Use(s.p, len(b))
		n, err := ReadView(pc.c, b, nil)
		if errors.Is(err, ErrWouldBlock) {
			return
		}
		if err != nil {
			// The client closed (io.EOF) or reset: the pattern is over.
			pc.c.Close()
			if !errors.Is(err, io.EOF) {
				s.p.Log("server-conn-error", "err", err.Error())
			}
			return
		}
		pc.got += n
		if pc.got == want {
			pc.replying, pc.got, pc.sent = true, 0, 0
		}
	}
	s.writeReply(pc)
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
	cfg TCPPattern
	p   Process
	srv *patternServer
	res *TCPPatternResult
	c   Conn
	buf []byte
	msg []byte
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
	if cl.wi < cl.cfg.Writes {
		cl.writeRequest()
		return
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
	cl.res.Latencies = append(cl.res.Latencies, cl.p.MainLoop().Now()-cl.start)
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
	cl.beginOp()
}

func (cl *patternClient) beginOp() {
	cl.inOp, cl.got, cl.wi, cl.woff = true, 0, 0, 0
	cl.start = cl.p.MainLoop().Now()
	cl.writeRequest()
}

// writeRequest issues the op's writes, one Write call per message, and
// waits for writability when the send buffer is full.
func (cl *patternClient) writeRequest() {
	cl.msgUsed.Use(cl.p, len(cl.msg)) // every write sends the whole message
	for cl.wi < cl.cfg.Writes {
		n, err := cl.c.Write(cl.msg[cl.woff:])
		if errors.Is(err, ErrWouldBlock) {
			cl.c.SetWriteInterest(true)
			return
		}
		if err != nil {
			cl.fail(fmt.Errorf("tcp-pattern op %d: write: %w", cl.op, err))
			return
		}
		cl.woff += n
		if cl.woff == len(cl.msg) {
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
