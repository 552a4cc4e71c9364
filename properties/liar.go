package properties

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"xceiver/model"
	"xceiver/sim"
)

// A hostile datanode: a process that speaks the read protocol to a client
// of its own and lies, one drawn lie per read. The client's defences
// (response validation, packet decoding, short streams, early EOF, resets,
// wrong checksums, timeouts) only run when a datanode misbehaves, which
// the model datanode never does. Property "hostile-datanode": the client
// never returns a successful read with wrong bytes, reports each lie as
// the error its kind calls for, at once when the lie is on the wire (a
// malformed response or packet header, not a timeout), times out a silent
// datanode on time, closes what it does not cache, sends the name, token
// and TCP_NODELAY it was configured with, and ends with no fd left once closed. The
// same client also checks the peer cache's expiry: no connection stays
// cached longer than CacheExpiry, and a read within it after a clean one
// goes out on the connection the clean one left.

// PropLiar is the hostile datanode's property.
const PropLiar = "hostile-datanode"

// Lie kinds: what the hostile datanode does with a read.
const (
	LieHonest   = "honest"       // answers correctly
	LieShort    = "short"        // ends the stream before the range is complete
	LieResponse = "bad-response" // a response with a field out of bounds (Arg: which), then silence
	LiePacket   = "bad-packet"   // a packet header out of bounds or out of sequence (Arg: which), then silence
	LieChecksum = "checksum"     // a packet whose data does not match its checksum
	LieFIN      = "fin"          // closes (FIN) after Cut bytes of the answer
	LieReset    = "reset"        // resets after Cut bytes of the answer
	LieSilent   = "silent"       // stops after Cut bytes of the answer and stays connected
	LieReject   = "reject"       // answers with an error status
)

// LieKinds lists every lie.
var LieKinds = []string{LieHonest, LieShort, LieResponse, LiePacket, LieChecksum, LieFIN, LieReset, LieSilent, LieReject}

// lieDraws is LieKinds weighted for the draw: the bad response and the
// bad packet come in many variants each.
var lieDraws = []string{LieHonest, LieShort, LieResponse, LieResponse, LieResponse, LiePacket, LiePacket, LiePacket,
	LieChecksum, LieFIN, LieReset, LieSilent, LieReject}

// Variants of the bad-response and bad-packet lies.
const (
	badResponses = 10
	badPackets   = 12
)

// Liar is the hostile datanode of a case and its client's reads.
type Liar struct {
	Size int    `json:"size"` // the one block it serves (id: the lie's index + 1)
	Key  uint64 `json:"key"`
	// DefaultName leaves the client's name and cache expiry unset:
	// requests must carry the default name, and the cache must keep the
	// default expiry.
	DefaultName bool  `json:"default_name,omitempty"`
	Lies        []Lie `json:"lies"`
}

// Lie is one read of the hostile datanode's client.
type Lie struct {
	Kind   string        `json:"kind"`
	Gap    time.Duration `json:"gap"` // before the read
	Off    int64         `json:"off"`
	Len    int64         `json:"len"`
	Packet int           `json:"packet"`        // data bytes per packet
	Arg    int           `json:"arg,omitempty"` // variant, or the packet corrupted
	Cut    int           `json:"cut,omitempty"` // bytes of the answer sent before FIN, RST, silence or the short end
}

// drawLiar draws the hostile datanode of a run, if any; force names a
// lie it must tell (a catalogued bug that needs it).
func drawLiar(d drawer, cfg *Config, force string) {
	if !d.chance(25, "liar") && force == "" {
		return
	}
	l := &Liar{Size: d.n(1, 70000, "liar_size"), Key: d.key("liar_key"), DefaultName: d.chance(50, "liar_default_name")}
	n := d.n(2, 8, "liar_lies")
	for i := 0; i < n; i++ {
		lie := Lie{Kind: pick(d, "lie", lieDraws...)}
		if force != "" && i == n-1 {
			lie.Kind = force
		}
		if i == 0 && d.chance(50, "lie_first_honest") {
			lie.Kind = LieHonest // so the next read reuses a cached peer
		}
		switch d.n(0, 2, "lie_gap") {
		case 0:
			lie.Gap = d.dur(0, time.Millisecond, "lie_gap_short")
		case 1:
			lie.Gap = d.dur(time.Millisecond, 50*time.Millisecond, "lie_gap_mid")
		default:
			// Just past the cache's expiry: a cached peer must be gone.
			lie.Gap = l.expiry(cfg) + d.dur(time.Millisecond, 5*time.Millisecond, "lie_gap_expiry")
		}
		if !d.chance(30, "lie_off_zero") {
			lie.Off = int64(d.n(0, l.Size-1, "lie_off"))
		}
		if lie.Kind == LieResponse {
			// Near the start, where a negative first chunk offset is
			// within a chunk of the read: only its bound refuses it.
			lie.Off %= model.BytesPerChecksum
		}
		lie.Len = int64(d.n(0, l.Size-int(lie.Off), "lie_len"))
		if lie.Kind == LieShort || lie.Kind == LieChecksum {
			lie.Len = max(lie.Len, 1) // something to leave out or corrupt
		}
		lie.Packet = model.BytesPerChecksum * pick(d, "lie_packet", 1, 3, 8, 128)
		switch lie.Kind {
		case LieResponse:
			lie.Arg = d.n(0, badResponses-1, "lie_arg")
		case LiePacket:
			lie.Arg = d.n(0, badPackets-1, "lie_arg")
		case LieChecksum:
			lie.Arg = d.n(0, 1<<20, "lie_arg")
		case LieReject:
			lie.Arg = pick(d, "lie_status", int(model.StatusError), int(model.StatusErrorInvalid), int(model.StatusErrorAccessToken))
		}
		lie.Cut = d.n(0, 1<<20, "lie_cut")
		l.Lies = append(l.Lies, lie)
	}
	cfg.Liar = l
}

// expiry is the liar client's cache expiry.
func (l *Liar) expiry(cfg *Config) time.Duration {
	if l.DefaultName {
		return model.DefaultClientConfig().CacheExpiry
	}
	return cfg.CacheExpiry
}

func validateLiar(cfg *Config) error {
	l := cfg.Liar
	if l == nil {
		return nil
	}
	if l.Size < 1 || l.Size > 1<<20 || len(l.Lies) == 0 || len(l.Lies) > 16 {
		return fmt.Errorf("liar: block of %d bytes, %d lies", l.Size, len(l.Lies))
	}
	for i, lie := range l.Lies {
		known := false
		for _, k := range LieKinds {
			known = known || k == lie.Kind
		}
		switch {
		case !known:
			return fmt.Errorf("liar: lie %d: unknown kind %q", i, lie.Kind)
		case lie.Gap < 0 || lie.Gap > time.Minute:
			return fmt.Errorf("liar: lie %d: gap %v", i, lie.Gap)
		case lie.Off < 0 || lie.Len < 0 || lie.Off+lie.Len > int64(l.Size) || (lie.Off == int64(l.Size) && lie.Off > 0):
			return fmt.Errorf("liar: lie %d: range %d+%d outside the block of %d bytes", i, lie.Off, lie.Len, l.Size)
		case (lie.Kind == LieShort || lie.Kind == LieChecksum) && lie.Len == 0:
			return fmt.Errorf("liar: lie %d: a %s lie needs a range", i, lie.Kind)
		case lie.Packet < model.BytesPerChecksum || lie.Packet > model.MaxPacketData || lie.Packet%model.BytesPerChecksum != 0:
			return fmt.Errorf("liar: lie %d: packet of %d bytes", i, lie.Packet)
		case lie.Cut < 0 || lie.Arg < 0:
			return fmt.Errorf("liar: lie %d: negative cut or arg", i)
		case lie.Kind == LieResponse && lie.Arg >= badResponses, lie.Kind == LiePacket && lie.Arg >= badPackets:
			return fmt.Errorf("liar: lie %d: variant %d", i, lie.Arg)
		case lie.Kind == LieReject && (lie.Arg == int(model.StatusSuccess) || !model.Status(lie.Arg).Known()):
			return fmt.Errorf("liar: lie %d: status %d", i, lie.Arg)
		}
	}
	return nil
}

const (
	liarAddr  = "liar:50010"
	liarStamp = 7
	liarName  = "liar-client"
	// liarStatusWait: after the last read, how long the client's final
	// statuses have to reach the liar (a delayed ACK at most).
	liarStatusWait = 250 * time.Millisecond
	// liarTimeoutSlack: a silent datanode's read must time out within
	// this of the client's timeout (the last bytes arrive within it).
	liarTimeoutSlack = 250 * time.Millisecond
)

type liarH struct {
	h      *harness
	l      *Liar
	data   []byte
	p      *sim.Process // the client's
	loop   model.Loop
	cl     *model.Client
	base   sim.Resources
	name   string
	status []model.Status // per lie: the final status the liar got (0xffff: none)
	done   bool
	then   func() // checkLeaks, if it came before the liar was done
	// clean is the connection the last read left in the cache (a
	// truthful one), and cleanIdx that read's index (-1: none).
	clean    *liarConn
	cleanIdx int
}

type liarConn struct {
	lh     *liarH
	c      model.Conn
	in     []byte
	out    []byte
	outOff int
	lie    int  // the lie answered (-1: waiting for a request)
	end    bool // the answer is queued: stop, FIN or RST once sent
	closed bool
}

// startLiar spawns the hostile datanode and its client.
func (h *harness) startLiar() {
	l := h.cfg.Liar
	if l == nil {
		return
	}
	lh := &liarH{h: h, l: l, data: model.BlockContent(l.Key, l.Size), status: make([]model.Status, len(l.Lies)), name: liarName, cleanIdx: -1}
	for i := range lh.status {
		lh.status[i] = math.MaxUint16
	}
	if l.DefaultName {
		lh.name = model.DefaultClientConfig().Name
	}
	h.liar = lh
	_, err := h.w.Spawn("liar", model.ProcessConfig{FDLimit: 1 << 12}, func(p model.Process) {
		ln, err := p.Listen("tcp", liarAddr, 128, p.MainLoop())
		if err != nil {
			h.fail(PropHarness, "liar: listen: %v", err)
			return
		}
		ln.SetHandler(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				lc := &liarConn{lh: lh, c: c, lie: -1}
				c.SetHandler(p.MainLoop(), lc.onEvent)
			}
		})
	})
	if err != nil {
		h.fail(PropHarness, "spawn liar: %v", err)
		return
	}
	cp, err := h.w.Spawn("liar-client", model.ProcessConfig{}, func(p model.Process) {
		cfg := model.ClientConfig{Name: liarName, Datanode: liarAddr, NoDelay: h.cfg.NoDelay, CacheCapacity: 1,
			CacheExpiry: h.cfg.CacheExpiry, Timeout: h.cfg.Timeout,
			// (Only the bug the liar is for: the others are the main
			// clients' to show, under the properties they name.)
			Bugs: model.ClientBugs{AcceptShortStream: h.cfg.AcceptShortStream}}
		if l.DefaultName {
			cfg.Name, cfg.CacheExpiry = "", 0
		}
		cl, err := model.NewClient(p, p.MainLoop(), 1000, cfg)
		if err != nil {
			h.fail(PropHarness, "liar client: %v", err)
			return
		}
		lh.cl, lh.loop = cl, p.MainLoop()
		lh.base = lh.p.Resources()
		lh.next(0)
	})
	if err != nil {
		h.fail(PropHarness, "spawn liar client: %v", err)
		return
	}
	lh.p = cp.(*sim.Process)
}

// next runs lie i after its gap.
func (lh *liarH) next(i int) {
	h := lh.h
	if i == len(lh.l.Lies) {
		lh.loop.AfterFunc(liarStatusWait, lh.finish)
		return
	}
	lie := lh.l.Lies[i]
	lh.loop.AfterFunc(lie.Gap, func() {
		if h.failure != nil {
			return
		}
		cl := lh.cl
		now := lh.loop.Now()
		if since, ok := cl.OldestCached(); ok && now-since > lh.l.expiry(h.cfg) {
			h.fail(PropCache, "liar-client: a peer cached at %v is still cached at %v, past the expiry of %v", since, now, lh.l.expiry(h.cfg))
			return
		}
		cached := cl.Cached()
		cl.Read(uint64(i+1), 0, lie.Off, lie.Len, func(r model.Result) {
			lh.check(i, lie, r, now, cached)
			if h.failure == nil {
				lh.next(i + 1)
			}
		})
	})
}

// check judges the result of lie i's read, started at start with cached
// peers in the cache.
func (lh *liarH) check(i int, lie Lie, r model.Result, start time.Duration, cached int) {
	h := lh.h
	took := lh.loop.Now() - start
	bad := func(format string, a ...any) {
		h.fail(PropLiar, "read %d (%s lie, bytes %d+%d of %d, variant %d, cut %d): %s", i, lie.Kind, lie.Off, lie.Len, lh.l.Size, lie.Arg, lie.Cut, fmt.Sprintf(format, a...))
	}
	if r.Err == nil && lie.Kind != LieHonest {
		bad("succeeded with %d bytes", len(r.Data))
		return
	}
	if r.Err != nil && r.Data != nil {
		bad("failed (%v) but returned %d bytes", r.Err, len(r.Data))
		return
	}
	switch lie.Kind {
	case LieHonest:
		want := lh.data[lie.Off : lie.Off+lie.Len]
		switch {
		case r.Err != nil:
			bad("failed: %v", r.Err)
		case !bytes.Equal(r.Data, want):
			bad("returned %d bytes that differ from the %d served", len(r.Data), len(want))
		case r.Stamp != liarStamp || r.Length != int64(lh.l.Size):
			bad("returned stamp %d and length %d, served %d and %d", r.Stamp, r.Length, liarStamp, lh.l.Size)
		}
	case LieShort, LieResponse, LiePacket:
		// The lie is on the wire: it must be seen at once, not time out.
		if !errors.Is(r.Err, model.ErrBadStream) {
			bad("failed with %v, want %v", r.Err, model.ErrBadStream)
		}
	case LieChecksum:
		if _, ok := errors.AsType[*model.ChecksumError](r.Err); !ok {
			bad("failed with %v, want a checksum error", r.Err)
		}
	case LieFIN:
		if !errors.Is(r.Err, io.ErrUnexpectedEOF) || errors.Is(r.Err, io.EOF) {
			bad("failed with %v, want an unexpected EOF (never io.EOF, a clean end)", r.Err)
		}
	case LieReset:
		if !errors.Is(r.Err, model.ErrReset) {
			bad("failed with %v, want %v", r.Err, model.ErrReset)
		}
	case LieSilent:
		to := h.cfg.Timeout
		if !errors.Is(r.Err, model.ErrTimedOut) || took < to || took > to+liarTimeoutSlack {
			bad("failed after %v with %v, want %v after %v to %v", took, r.Err, model.ErrTimedOut, to, to+liarTimeoutSlack)
		}
	case LieReject:
		if !errors.Is(r.Err, model.ErrRejected) || r.Status != model.Status(lie.Arg) || !strings.Contains(r.Err.Error(), rejection(lie)) {
			bad("failed with status %v and %q, want %v and %v with the datanode's message", r.Status, r.Err, model.Status(lie.Arg), model.ErrRejected)
		}
	}
	if h.failure != nil {
		return
	}
	// Only a clean read leaves its connection behind, in the cache.
	sockets := lh.p.FDs().ByKind[model.FDSocket]
	switch {
	case lh.cl.InFlight() != 0:
		bad("%d ops still in flight", lh.cl.InFlight())
	case sockets != lh.cl.Cached():
		bad("the client holds %d sockets and caches %d peers", sockets, lh.cl.Cached())
	case r.Err != nil && lh.cl.Cached() > cached:
		bad("a failed read's connection went into the cache")
	}
}

// finish closes the client once the last read's status had time to
// arrive, and checks what the liar heard and what the client holds.
func (lh *liarH) finish() {
	h := lh.h
	if h.failure != nil {
		return
	}
	for i, lie := range lh.l.Lies {
		if lie.Kind == LieHonest && lh.status[i] != model.StatusChecksumOK {
			h.fail(PropLiar, "read %d (honest) verified its data but the datanode got final status %v, want %v", i, lh.status[i], model.StatusChecksumOK)
			return
		}
	}
	lh.cl.Close()
	if res := lh.p.Resources(); res.FDs != lh.base.FDs || res.Timers != lh.base.Timers {
		h.fail(PropLiar, "liar-client: %d fds and %d timers after close, baseline %d and %d", res.FDs, res.Timers, lh.base.FDs, lh.base.Timers)
		return
	}
	lh.done = true
	if lh.then != nil {
		h.w.At(h.w.Now(), lh.then)
	}
}

func (lc *liarConn) onEvent(ev model.Events) {
	if lc.closed {
		return
	}
	if ev&model.Writable != 0 && lc.outOff < len(lc.out) {
		lc.flush()
		if lc.closed {
			return
		}
	}
	if ev&(model.Readable|model.Hangup) == 0 {
		return
	}
	var buf [4096]byte
	for !lc.closed {
		n, err := lc.c.Read(buf[:])
		if n > 0 {
			lc.in = append(lc.in, buf[:n]...)
			lc.process()
			continue
		}
		if errors.Is(err, model.ErrWouldBlock) {
			return
		}
		lc.close() // the client closed or reset
		return
	}
}

func (lc *liarConn) close() {
	if !lc.closed {
		lc.closed = true
		_ = lc.c.Close()
	}
}

// process handles what the client sent: a request, or the final status
// of the honest read before it.
func (lc *liarConn) process() {
	lh := lc.lh
	h := lh.h
	for !lc.closed && len(lc.in) > 0 {
		if lc.lie >= 0 {
			if lc.end {
				return // a lie in progress: what the client says no longer matters
			}
			st, n, err := model.DecodeStatus(lc.in)
			if errors.Is(err, model.ErrNeedMore) {
				return
			}
			if err != nil {
				h.fail(PropLiar, "read %d: the client sent a malformed final status: %v", lc.lie, err)
				return
			}
			lh.status[lc.lie] = st
			lc.in = lc.in[n:]
			lc.lie = -1
			continue
		}
		req, n, err := model.DecodeRequest(lc.in)
		if errors.Is(err, model.ErrNeedMore) {
			return
		}
		if err != nil {
			h.fail(PropLiar, "the client sent a malformed request: %v", err)
			return
		}
		lc.in = lc.in[n:]
		i := int(req.BlockID) - 1
		if i < 0 || i >= len(lh.l.Lies) {
			h.fail(PropLiar, "the client asked for block %d, which it was never told to read", req.BlockID)
			return
		}
		lie := lh.l.Lies[i]
		switch {
		case req.Op != model.OpReadBlock || req.Offset != lie.Off || req.Length != lie.Len || req.GenStamp != 0:
			h.fail(PropLiar, "read %d of bytes %d+%d went out as %v of block %d stamp %d bytes %d+%d", i, lie.Off, lie.Len, req.Op, req.BlockID, req.GenStamp, req.Offset, req.Length)
			return
		case req.ClientName != lh.name:
			h.fail(PropLiar, "read %d carries client name %q, want %q", i, req.ClientName, lh.name)
			return
		}
		if on, ok := sim.PeerNoDelay(lc.c); ok && on != h.cfg.NoDelay {
			h.fail(PropLiar, "read %d came over a connection with TCP_NODELAY %v; the client was configured with %v", i, on, h.cfg.NoDelay)
			return
		}
		if err := model.CheckToken(model.DefaultTokenKey, req.Token, req.BlockID, 0, model.ModeRead, h.w.Now()); err != nil {
			h.fail(PropLiar, "read %d carries a token the datanode refuses: %v", i, err)
			return
		}
		if lh.cleanIdx == i-1 && i > 0 {
			// The read before was clean: within the expiry this one
			// takes its connection from the cache, after it a new one.
			reuse, want := lc == lh.clean, lie.Gap < lh.l.expiry(h.cfg)
			if reuse != want {
				h.fail(PropCache, "liar-client: read %d, %v after a clean read, went out on the cached connection: %v, want %v (expiry %v)", i, lie.Gap, reuse, want, lh.l.expiry(h.cfg))
				return
			}
		}
		lh.clean, lh.cleanIdx = nil, -1
		if lie.Kind == LieHonest {
			lh.clean, lh.cleanIdx = lc, i
		}
		lc.lie = i
		lc.answer(lie, req.BlockID)
	}
}

// answer queues the answer to lie (of block id) and sends it.
func (lc *liarConn) answer(lie Lie, id uint64) {
	lh := lc.lh
	out := lc.out[:0]
	size := int64(lh.l.Size)
	first := lie.Off - lie.Off%model.BytesPerChecksum
	end := min(size, (lie.Off+lie.Len+model.BytesPerChecksum-1)/model.BytesPerChecksum*model.BytesPerChecksum)
	if lie.Len == 0 {
		end = first
	}
	resp := model.Response{Status: model.StatusSuccess, ChecksumType: model.ChecksumCRC32C, BytesPerChecksum: model.BytesPerChecksum,
		FirstChunkOffset: first, GenStamp: liarStamp, BlockLength: size}
	switch lie.Kind {
	case LieReject:
		resp = model.Response{Status: model.Status(lie.Arg), Message: rejection(lie)}
		lc.out, lc.outOff, lc.end = model.AppendResponse(out, resp), 0, true
		lc.flush()
		return
	case LieResponse:
		lc.out, lc.outOff, lc.end = badResponse(out, resp, lie.Arg, lie.Off), 0, true
		lc.flush()
		return
	case LieShort:
		// The last packet comes early: the chunk holding the range's
		// last byte is never sent.
		end = (lie.Off + lie.Len - 1) / model.BytesPerChecksum * model.BytesPerChecksum
	}
	out = model.AppendResponse(out, resp)
	seq := int64(0)
	pkt := 0
	for off := first; off < end; off += int64(lie.Packet) {
		stop := min(end, off+int64(lie.Packet))
		if lie.Kind == LiePacket && pkt == 0 {
			break
		}
		out = model.AppendPacket(out, model.PacketHeader{Offset: off, Seqno: seq}, lh.data[off:stop], model.BytesPerChecksum)
		if lie.Kind == LieChecksum && pkt == lie.Arg%int(1+(end-first-1)/int64(lie.Packet)) {
			// Flip a bit of the packet's data (its checksums stay).
			dataLen := int(stop - off)
			out[len(out)-dataLen+lie.Arg%dataLen] ^= 1 << (lie.Arg % 8)
		}
		seq++
		pkt++
	}
	if lie.Kind == LiePacket {
		one := lh.data[first:min(first+1, int64(len(lh.data)))]
		if len(one) == 0 {
			one = []byte{1} // (a read of nothing at the block's end)
		}
		out = badPacket(out, first, lie.Arg, lie.Cut, one)
		lc.out, lc.outOff, lc.end = out, 0, true
		lc.flush()
		return
	}
	out = model.AppendPacketHeader(out, model.PacketHeader{Offset: end, Seqno: seq, Last: true}, 0, model.BytesPerChecksum)
	switch lie.Kind {
	case LieFIN, LieReset, LieSilent:
		out = out[:lie.Cut%len(out)]
		lc.end = true
	case LieChecksum:
		lc.end = true // the client stops at the corrupt packet
	}
	lc.out, lc.outOff = out, 0
	lc.flush()
}

// rejection is the message of a reject lie: empty, short, or as long as
// the protocol allows.
func rejection(lie Lie) string {
	n := []int{0, 12, model.MaxMessageLen - 1, model.MaxMessageLen}[lie.Cut%4]
	return strings.Repeat("no ", n)[:n]
}

// badResponse appends a response to a read at off with one field out of
// the protocol's bounds, or one the client must refuse for this read.
func badResponse(out []byte, r model.Response, which int, off int64) []byte {
	field := func(b []byte) []byte {
		// status, message length, checksum type, bytes per checksum,
		// first chunk offset, stamp, length
		b = binary.BigEndian.AppendUint16(b, uint16(r.Status))
		b = binary.BigEndian.AppendUint16(b, 0)
		b = append(b, byte(r.ChecksumType))
		b = binary.BigEndian.AppendUint32(b, uint32(r.BytesPerChecksum))
		b = binary.BigEndian.AppendUint64(b, uint64(r.FirstChunkOffset))
		b = binary.BigEndian.AppendUint64(b, r.GenStamp)
		return binary.BigEndian.AppendUint64(b, uint64(r.BlockLength))
	}
	switch which {
	case 0: // an unknown status: refused on its first two bytes
		return binary.BigEndian.AppendUint16(out, 8+uint16(off%100))
	case 1: // a message longer than allowed: refused on its length
		out = binary.BigEndian.AppendUint16(out, uint16(model.StatusError))
		return binary.BigEndian.AppendUint16(out, model.MaxMessageLen+1+uint16(off%1000))
	case 2:
		r.ChecksumType = 1
	case 3:
		r.BytesPerChecksum = model.MaxBytesPerChecksum + 1 + int(off%1000)
	case 4:
		r.BytesPerChecksum = 0
	case 5: // (within a chunk of a read near the start: only the bound refuses it)
		r.FirstChunkOffset = -1 - off%model.BytesPerChecksum
	case 6:
		r.BlockLength = -1 - off
	case 7: // valid, but not the chunk size the client reads
		r.BytesPerChecksum = 2 * model.BytesPerChecksum
	case 8: // starts past the offset asked for
		r.FirstChunkOffset = off + 1
	case 9: // starts a chunk or more before it
		r.FirstChunkOffset = off - off%model.BytesPerChecksum - model.BytesPerChecksum
		if r.FirstChunkOffset < 0 {
			r.FirstChunkOffset = off + model.BytesPerChecksum
		}
	}
	return field(out)
}

// badPacket appends, at off, a packet header with one field out of
// bounds (or the wrong offset), or a packet out of sequence carrying
// data (a byte of the block at off). A bad length is followed by
// cut%21 bytes of the header at most, so the client must judge it on the
// length alone.
func badPacket(out []byte, off int64, which, cut int, data []byte) []byte {
	hdr := func(total uint32, pOff, seq int64, flags byte, dataLen uint32) []byte {
		b := binary.BigEndian.AppendUint32(out, total)
		b = binary.BigEndian.AppendUint64(b, uint64(pOff))
		b = binary.BigEndian.AppendUint64(b, uint64(seq))
		b = append(b, flags)
		return binary.BigEndian.AppendUint32(b, dataLen)
	}
	ok := uint32(model.PacketHeaderLen + model.ChecksumSize + 1) // one byte of data
	switch which {
	case 0, 1:
		total := uint32(model.PacketHeaderLen - 1 - cut%model.PacketHeaderLen)
		if which == 1 {
			total = model.MaxPacketLen + 1 + uint32(cut%1000)
		}
		b := hdr(total, off, 0, 0, 1)
		return b[:len(out)+4+cut%21]
	case 2:
		return hdr(ok, -1-off, 0, 0, 1)
	case 3:
		return hdr(ok, off, -1, 0, 1)
	case 4:
		return hdr(ok, off, 0, 2, 1)
	case 5:
		return hdr(ok, off, 0, 0, model.MaxPacketData+1)
	case 6:
		return hdr(ok, math.MaxInt64, 0, 0, 1)
	case 7: // a length that does not match the data length
		return hdr(ok+1, off, 0, 0, 1)
	case 9: // the first packet numbered 1, not 0
		return model.AppendPacket(out, model.PacketHeader{Offset: off, Seqno: 1}, data, model.BytesPerChecksum)
	case 10: // an empty packet that is not the last
		return model.AppendPacketHeader(out, model.PacketHeader{Offset: off}, 0, model.BytesPerChecksum)
	case 11: // the last packet, carrying data
		return model.AppendPacket(out, model.PacketHeader{Offset: off, Last: true}, data, model.BytesPerChecksum)
	default: // (8) a valid packet at the wrong offset
		return model.AppendPacket(out, model.PacketHeader{Offset: off + model.BytesPerChecksum}, []byte{1}, model.BytesPerChecksum)
	}
}

func (lc *liarConn) flush() {
	for lc.outOff < len(lc.out) {
		n, err := lc.c.Write(lc.out[lc.outOff:])
		if errors.Is(err, model.ErrWouldBlock) {
			lc.c.SetWriteInterest(true)
			return
		}
		if err != nil {
			lc.close()
			return
		}
		lc.outOff += n
	}
	lc.c.SetWriteInterest(false)
	if !lc.end {
		return
	}
	lie := lc.lh.l.Lies[lc.lie]
	switch lie.Kind {
	case LieFIN:
		_ = lc.c.CloseWrite()
	case LieReset:
		_ = lc.c.Abort()
		lc.closed = true
	}
}

// fewerLies tries the case without its hostile datanode, then without
// each of its lies.
func (s *shrinker) fewerLies() bool {
	if s.best.Config.Liar == nil {
		return false
	}
	cand := s.best
	cand.Config.Liar = nil
	if s.try(cand) {
		return true
	}
	shrunk := false
	for i := len(s.best.Config.Liar.Lies) - 1; i >= 0 && s.runs < s.budget; i-- {
		l := *s.best.Config.Liar // (a copy: the best case keeps its own)
		if len(l.Lies) < 2 || i >= len(l.Lies) {
			continue
		}
		l.Lies = slices.Delete(slices.Clone(l.Lies), i, i+1)
		cand := s.best
		cand.Config.Liar = &l
		shrunk = s.try(cand) || shrunk
	}
	return shrunk
}
