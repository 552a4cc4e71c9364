package real

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"xceiver/model"
)

// GoServer is the reference the datanode's reactor is measured against:
// the read server a Go programmer writes without a reactor. A goroutine
// per net.Conn with blocking reads and writes (the runtime's poller
// underneath), every block's data and meta files opened once and read with
// ReadAt by all goroutines, one Write per packet. It speaks the datanode's
// read protocol (token checked, response, packets, the client's status,
// keep-alive), so the same clients measure both.
type GoServer struct {
	// Verify checks each chunk's CRC32C before sending it, work the
	// datanode does not do (it sends the stored checksums unchecked, as
	// HDFS's BlockSender does, so the server without Verify is its like
	// for like); the client verifies either way.
	Verify bool
	// Keepalive closes a connection idle this long between requests
	// (0: the datanode's default).
	Keepalive time.Duration
	// TokenKey checks block tokens (nil: model.DefaultTokenKey).
	TokenKey []byte
}

// Serve is GoServer as a read scenario's model.ReadScenario.Serve: it
// serves the blocks the scenario laid out in dir of p, a real process.
func (g GoServer) Serve(mp model.Process, dir string) (string, func() int, error) {
	p, ok := mp.(*process)
	if !ok {
		return "", nil, fmt.Errorf("go server: %T is not a real-world process", mp)
	}
	if g.Keepalive == 0 {
		g.Keepalive = model.DefaultDatanodeConfig().Keepalive
	}
	if g.TokenKey == nil {
		g.TokenKey = model.DefaultTokenKey
	}
	store := model.NewBlockStore(p.Disk(), dir)
	if err := store.Load(); err != nil {
		return "", nil, fmt.Errorf("go server: %w", err)
	}
	s := &goServer{cfg: g, p: p, files: map[uint64]*model.BlockFiles{}, conns: map[net.Conn]struct{}{}}
	for _, id := range store.Blocks() {
		stamp, _, _ := store.Info(id)
		bf, err := store.OpenForRead(id, stamp)
		if err != nil {
			s.closeFiles()
			return "", nil, fmt.Errorf("go server: %w", err)
		}
		s.files[id] = bf
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.closeFiles()
		return "", nil, fmt.Errorf("go server: %w", err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept()
	return ln.Addr().String(), s.stop, nil
}

type goServer struct {
	cfg   GoServer
	p     *process
	ln    net.Listener
	files map[uint64]*model.BlockFiles // read-only once serving

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	open   atomic.Int64 // sockets: the listener and every connection
	peak   atomic.Int64
}

func (s *goServer) accept() {
	defer s.wg.Done()
	s.opened()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.opened()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *goServer) opened() {
	n := s.open.Add(1)
	for {
		pk := s.peak.Load()
		if n <= pk || s.peak.CompareAndSwap(pk, n) {
			return
		}
	}
}

// stop closes the listener and every connection, waits for their
// goroutines, closes the files and returns the most fds open at once
// (sockets plus the process's files).
func (s *goServer) stop() int {
	s.mu.Lock()
	s.closed = true
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.closeFiles()
	return int(s.peak.Load()) + s.p.FDs().Peak
}

func (s *goServer) closeFiles() {
	for _, bf := range s.files {
		bf.Close()
	}
}

// serve answers the requests of one connection in turn until the client
// closes it, stays idle past the keep-alive, or breaks the protocol.
func (s *goServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
		s.open.Add(-1)
	}()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	in := make([]byte, 0, 4096)
	out := make([]byte, 0, model.PacketHeaderLen+model.MaxPacketLen+1024)
	for {
		c.SetReadDeadline(time.Now().Add(s.cfg.Keepalive))
		req, err := readMsg(c, &in, model.DecodeRequest)
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Time{})
		if out, err = s.read(c, req, out[:0]); err != nil {
			return
		}
		st, err := readMsg(c, &in, model.DecodeStatus)
		if err != nil || st != model.StatusChecksumOK {
			return
		}
	}
}

// read sends the response and packets for one read request, a packet per
// Write; a refused request gets an error response and ends the connection.
func (s *goServer) read(c net.Conn, req model.Request, out []byte) ([]byte, error) {
	refuse := func(st model.Status, msg string) ([]byte, error) {
		out = model.AppendResponse(out, model.Response{Status: st, Message: msg})
		c.Write(out)
		return out, errors.New(msg)
	}
	if req.Op != model.OpReadBlock {
		return refuse(model.StatusErrorUnsupported, "op "+req.Op.String()+" is not served")
	}
	if err := model.CheckToken(s.cfg.TokenKey, req.Token, req.BlockID, req.GenStamp, model.ModeFor(req.Op), s.p.w.Now()); err != nil {
		return refuse(model.StatusOf(err), err.Error())
	}
	bf := s.files[req.BlockID]
	switch {
	case bf == nil:
		return refuse(model.StatusErrorInvalid, fmt.Sprintf("block %d not found", req.BlockID))
	case req.GenStamp > bf.Stamp:
		return refuse(model.StatusErrorInvalid, fmt.Sprintf("block %d has stamp %d < %d", req.BlockID, bf.Stamp, req.GenStamp))
	case req.Offset+req.Length > bf.Length:
		return refuse(model.StatusErrorInvalid, fmt.Sprintf("read past block %d's %d bytes", req.BlockID, bf.Length))
	}
	const bpc = model.BytesPerChecksum
	first := req.Offset / bpc * bpc
	end := req.Offset + req.Length
	if end%bpc != 0 {
		end = min(bf.Length, (end/bpc+1)*bpc)
	}
	out = model.AppendResponse(out, model.Response{
		Status: model.StatusSuccess, ChecksumType: model.ChecksumCRC32C, BytesPerChecksum: bpc,
		FirstChunkOffset: first, GenStamp: bf.Stamp, BlockLength: bf.Length,
	})
	packet := int64(model.DefaultDatanodeConfig().PacketSize)
	seq := int64(0)
	for off := first; ; {
		n := int(min(packet, end-off))
		if n > 0 {
			out = model.AppendPacketHeader(out, model.PacketHeader{Offset: off, Seqno: seq}, n, bpc)
			start := len(out)
			var sums, data []byte
			var err error
			if s.cfg.Verify {
				data, sums, err = bf.ReadChunks(out, off, n)
			} else {
				data, sums, err = bf.ReadChunksUnverified(out, off, n)
			}
			if err != nil {
				return out, err
			}
			out = out[:start+len(sums)+len(data)]
			off += int64(n)
			seq++
		}
		if off >= end {
			out = model.AppendPacketHeader(out, model.PacketHeader{Offset: off, Seqno: seq, Last: true}, 0, bpc)
		}
		if _, err := c.Write(out); err != nil {
			return out, err
		}
		out = out[:0]
		if off >= end {
			return out, nil
		}
	}
}

// readMsg reads from c until decode finds a whole message at the start of
// *in, and consumes it.
func readMsg[T any](c net.Conn, in *[]byte, decode func([]byte) (T, int, error)) (T, error) {
	for {
		m, n, err := decode(*in)
		if err == nil {
			rest := copy(*in, (*in)[n:])
			*in = (*in)[:rest]
			return m, nil
		}
		if !errors.Is(err, model.ErrNeedMore) {
			return m, err
		}
		if len(*in) == cap(*in) {
			if cap(*in) >= model.MaxRequestLen+64 {
				return m, fmt.Errorf("message larger than %d bytes", cap(*in))
			}
			*in = append(*in, 0)[:len(*in)]
		}
		k, err := c.Read((*in)[len(*in):cap(*in)])
		*in = (*in)[:len(*in)+k]
		if err != nil && (k == 0 || err != io.EOF) {
			return m, err
		}
	}
}

// ReadServerVariant is one server of HDFS-918's comparison in the real
// world, as a change to a read scenario.
type ReadServerVariant struct {
	Name  string
	Apply func(*model.ReadScenario)
}

// ReadServerVariants are the servers BenchmarkReadServers and `bench
// hdfs-918 --world real` compare: the datanode's three modes (sending
// each packet's data with sendfile, its default), the reactor copying
// instead (NoTransferTo), and the plain-Go reference, which copies,
// without and with the CRC32C work.
func ReadServerVariants() []ReadServerVariant {
	mode := func(m model.ServerMode, inline bool) func(*model.ReadScenario) {
		return func(s *model.ReadScenario) { s.Server.Mode, s.Server.InlineIO = m, inline }
	}
	copying := func(s *model.ReadScenario) { s.Server.Mode, s.Server.NoTransferTo = model.Reactor, true }
	goServer := func(verify bool) func(*model.ReadScenario) {
		return func(s *model.ReadScenario) {
			s.Serve = GoServer{Verify: verify, Keepalive: s.Server.Keepalive, TokenKey: s.Server.TokenKey}.Serve
		}
	}
	return []ReadServerVariant{
		{"threaded", mode(model.Threaded, false)},
		{"reactor", mode(model.Reactor, false)},
		{"reactor-inline-io", mode(model.Reactor, true)},
		{"reactor-copy", copying},
		{"go-server", goServer(false)},
		{"go-server-crc", goServer(true)},
	}
}
