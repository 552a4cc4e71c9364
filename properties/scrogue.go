package properties

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
)

// Rogue local clients on the datanode's domain socket, which every local
// user can reach (as HDFS's can): each rogue op is one attack. A request
// the wire format or the slot registry forbids is answered with an error
// status and the connection closed, never served (sc-refusal); the honest
// readers go on as if nothing happened (availability and local-reads do
// not count a rogue as a fault); and at rest the datanode holds nothing of
// the rogue's (leak-freedom). A rogue may hold a valid block token: any
// client the namenode lets read a block has one.

// PropSCRefusal: the datanode refuses what a rogue sends, and hangs up.
const PropSCRefusal = "sc-refusal"

// SCRogueKinds are the attacks a rogue op makes.
var SCRogueKinds = []string{
	"version",             // a request of another protocol version
	"op",                  // an op byte that is no op
	"huge-body",           // a body one byte past the bound
	"tiny-body",           // a body one byte short of the fixed fields
	"long-token",          // a token one byte past its bound
	"long-name",           // a client name one byte past its bound
	"trailing",            // bytes after the last field, inside the body
	"bad-token",           // a token signed with another key
	"no-segment",          // fds for a segment that does not exist
	"slot-range",          // fds for slot 64 of its own segment
	"slot-in-use",         // fds twice for one slot of its own segment
	"bad-receipt",         // a receipt byte that is not ReceiptByte
	"release-unallocated", // the release of a slot it never had
	"stall",               // fds asked for, the receipt never sent
	"token-overrun",       // a token length one byte past the body
	"name-cut",            // a token length that eats the name's length
	"second-segment",      // a second segment asked for on a segment's connection
	// Drawn apart, last (scFirstRogueKinds):
	"pipelined", // requests sent before the answers to those before them
	"squat",     // segments asked for on connection after connection, all held
	// Drawn apart, after everything else (the flood's own draw):
	"flood", // connection after connection, each sending nothing, all held
	// Drawn apart, after the rogue users (drawSCTCPFlood):
	"tcp-flood", // the flood on the datanode's TCP port: the cap both kinds share
	// Drawn apart, after the TCP flood (drawSCDrip):
	"drip", // connection after connection, each dripping a REQUEST_SHM a byte at a time, all held
}

// scFirstRogueKinds is how many of SCRogueKinds the first rogue draw picks
// from; the kinds after them have a draw of their own, last, so that a
// seed drawn before them draws the same attacks.
const scFirstRogueKinds = 17

// scLateRogueKinds is how many kinds the late rogue draw picks from
// (pipelined, squat): the flood, after them, has its own draw, last.
const scLateRogueKinds = 2

// scSquatMax bounds a squatting rogue's segments: past a datanode's
// 1,024-fd table (the sc cases' has scDatanodeFDs), which an unbounded
// datanode fills with their connections. scRogueFDs is the rogue's fd
// table, room for them.
const (
	scSquatMax = 1100
	scFloodMax = 1100
	scRogueFDs = 4096
)

// scRogueUsers bounds the local users rogues run as: each user is a
// process of its own, as sim's SO_PEERCRED tells users apart. User 0 runs
// every rogue but those drawSCRogueUsers draws.
const scRogueUsers = 4

// scRogueProcess names user u's rogue process.
func scRogueProcess(u int) string {
	if u == 0 {
		return "rogue"
	}
	return fmt.Sprintf("rogue-%d", u)
}

// drawSCRogueUsers draws, last of all (20% of cases), 2-3 local users
// who flood or squat the domain socket together, each held for 5-30 ms
// and starting within a millisecond of the one before: each stays within
// the per-user bounds, so only a bound on all of them keeps the
// datanode's fd table from filling.
//
// Not where the readers' timeout is within scProbeBound, as the TCP
// flood (drawSCTCPFlood; the draws are made all the same): together the
// users fill the cap faster than its oldest connection ripens, and a
// reader that connects then waits its turn as any newcomer does, which a
// timeout that short does not allow (sweep seed 948842326 at a 512-fd
// table: a 2 ms timeout, two floods filling the cap 0.35 ms after they
// began, the reader's read over TCP).
func drawSCRogueUsers(d drawer, c *SCCase) {
	if !d.chance(20, "sc_rogue_users") {
		return
	}
	at := d.n(0, len(c.Ops), "sc_rogue_users_at")
	short := c.shortTimeout()
	for u := d.n(2, 3, "sc_rogue_users_n"); u > 0; u-- {
		kind := "flood"
		if d.chance(30, "sc_rogue_user_squat") {
			kind = "squat"
		}
		op := SCOp{Op: "rogue", Block: 1, User: u, Rogue: kind,
			Gap:  time.Duration(d.n(0, 999, "sc_rogue_user_gap")) * time.Microsecond,
			Hold: time.Duration(d.n(5, 30, "sc_rogue_user_hold")) * time.Millisecond}
		if !short {
			c.Ops = scInsert(c.Ops, at, op)
		}
	}
}

// drawSCTCPFlood draws, after the rogue users (20% of cases), a rogue that floods
// the datanode's TCP port with connections that send nothing, held for
// 5-30 ms: they count against the connection cap the domain socket's
// share, so at half its hold the probe (a new domain connection) finds
// the cap full of idle TCP connections, and only an eviction that looks
// at both kinds lets it in within scProbeBound.
//
// Not where the readers' timeout is within scProbeBound (the short ones
// drawn with pauses): a reader that falls back to TCP then meets the cap
// full of connections too young to close, and waiting for the oldest to
// ripen is a newcomer's lot, not the datanode's fault (seed 41672, a
// 2 ms timeout: "no progress for 2ms").
func drawSCTCPFlood(d drawer, c *SCCase) {
	if !d.chance(20, "sc_rogue_tcp_flood") {
		return
	}
	op := SCOp{Op: "rogue", Block: 1, Rogue: "tcp-flood", Hold: time.Duration(d.n(5, 30, "sc_rogue_tcp_flood_hold")) * time.Millisecond}
	at := d.n(0, len(c.Ops), "sc_rogue_tcp_flood_at")
	if c.shortTimeout() {
		return
	}
	c.Ops = scInsert(c.Ops, at, op)
}

// drawSCDrip draws, last of all (20% of cases), 2-3 local users who each
// open connection after connection on the domain socket and drip a
// REQUEST_SHM into every one a byte each Every (1-5 ms: under most drawn
// read timeouts), held for 5-30 ms and starting within a millisecond of
// the one before: a connection that has sent a byte is not silent, and
// each byte restarts its read timeout, so only a bound on how long a
// request may stay partial lets the probe, at half each one's hold, into
// a cap they fill together (one user's connections, MaxConnsPerUser,
// cannot fill it). Not faster: at a byte each 100-500 µs 700-odd
// connections keep the datanode's acceptor loop busy with reads alone,
// and the probe waits for its turn with the cap not full, a load no
// bound on connections prevents.
func drawSCDrip(d drawer, c *SCCase) {
	if !d.chance(20, "sc_rogue_drip") {
		return
	}
	at := d.n(0, len(c.Ops), "sc_rogue_drip_at")
	for u := d.n(2, 3, "sc_rogue_drip_users"); u > 0; u-- {
		op := SCOp{Op: "rogue", Block: 1, User: u, Rogue: "drip",
			Gap:   time.Duration(d.n(0, 999, "sc_rogue_drip_gap")) * time.Microsecond,
			Hold:  time.Duration(d.n(5, 30, "sc_rogue_drip_hold")) * time.Millisecond,
			Every: time.Duration(d.n(1000, 5000, "sc_rogue_drip_every")) * time.Microsecond}
		if c.ReadTimeout == 0 {
			// The read timeout is a minute: the first byte alone keeps
			// each connection partial for the hold, and more would only
			// cost events.
			op.Every = op.Hold
		}
		c.Ops = scInsert(c.Ops, at, op)
	}
}

// scRogue runs one attack on its process's main loop and reports to the
// harness: fail for a property broken, received for the fds and segments
// the datanode passed it (the counters' check counts them).
type scRogue struct {
	p     model.Process
	loop  model.Loop
	block uint64
	hold  time.Duration
	every time.Duration // drip: between bytes
	fail  func(format string, a ...any)
	// faulted reports whether a fault (a full fd table, the datanode
	// down) was in force since the attack began: a datanode that cannot
	// accept may leave a rogue unanswered.
	faulted  func() bool
	received func(fds, segs int)
	done     func()
	// tcpQueue is how many connections wait on the datanode's TCP listen
	// queue (tcpFlood).
	tcpQueue func() int

	conns  []model.Conn
	files  []model.File
	checks []func() // run when the rogue lets go
	// buf is what a read lands in: an array on the stack escaped
	// through ReadFDs, half a kilobyte on the heap at every read.
	buf  [512]byte
	over bool // it let go: nothing more is sent or dialled
	// waits are the refusals expected (expectRefusal); graced, whether
	// the let-go already waited for those still unanswered.
	waits  []refusalWait
	graced bool
}

// refusalWait is a refusal expected since the request went out.
type refusalWait struct {
	since    time.Duration
	answered *bool
}

// rogueConn is a rogue's connection: what came back so far.
type rogueConn struct {
	c     model.Conn
	in    []byte
	files []model.File
	eof   bool
	// want is called once a response decodes (or the connection ends
	// first: ok false).
	want func(resp shortcircuit.Response, files []model.File, ok bool)
}

func (r *scRogue) dial(want func(shortcircuit.Response, []model.File, bool)) *rogueConn {
	rc := &rogueConn{want: want}
	c, err := r.p.Dial("unix", "/run/dn_socket", r.loop, func(ev model.Events) {
		if ev&model.Hangup != 0 && rc.c.Err() != nil && !rc.eof {
			// Refused, or reset: nothing more will come.
			r.ended(rc)
			return
		}
		r.onEvent(rc)
	})
	if err != nil {
		return nil
	}
	rc.c = c
	r.conns = append(r.conns, c)
	return rc
}

func (r *scRogue) onEvent(rc *rogueConn) {
	for !rc.eof {
		n, files, err := rc.c.ReadFDs(r.buf[:])
		rc.in = append(rc.in, r.buf[:n]...)
		rc.files = append(rc.files, files...)
		r.files = append(r.files, files...)
		for rc.want != nil && len(rc.in) > 0 {
			resp, used, derr := shortcircuit.DecodeResponse(rc.in)
			if errors.Is(derr, model.ErrNeedMore) {
				break
			}
			if derr != nil {
				r.fail("the datanode answered a rogue with bytes that are no response: %v", derr)
				rc.want = nil
				break
			}
			rc.in = rc.in[used:]
			want, files := rc.want, rc.files
			rc.want, rc.files = nil, nil
			want(resp, files, true)
		}
		if err != nil && !errors.Is(err, model.ErrWouldBlock) {
			r.ended(rc)
			return
		}
		if n == 0 {
			return
		}
	}
}

// ended marks rc over (EOF, reset or refused): a response still wanted
// never came.
func (r *scRogue) ended(rc *rogueConn) {
	rc.eof = true
	rc.c.SetReadInterest(false) // EOF stays readable: no spinning on it
	if rc.want != nil {
		want := rc.want
		rc.want = nil
		want(shortcircuit.Response{}, nil, false)
	}
}

func (r *scRogue) send(rc *rogueConn, b []byte) {
	if _, err := rc.c.Write(b); err != nil && !rc.eof && !errors.Is(err, model.ErrWouldBlock) {
		r.ended(rc)
	}
}

// token is a valid token for the block, or one signed with another key.
func (r *scRogue) token(valid bool) []byte {
	key := model.DefaultTokenKey
	if !valid {
		key = []byte("not the block pool key")
	}
	return model.IssueToken(key, model.BlockToken{BlockID: r.block, Modes: model.ModeRead, Expiry: r.loop.Now() + model.DefaultTokenLifetime})
}

func (r *scRogue) fdRequest(shm uint64, slot uint32, valid bool) shortcircuit.Request {
	return shortcircuit.Request{Op: shortcircuit.OpRequestFDs, BlockID: r.block, ShmID: shm, Slot: slot, Token: r.token(valid), ClientID: "rogue"}
}

// run makes the attack, then closes everything after hold.
func (r *scRogue) run(kind string) {
	r.loop.AfterFunc(r.hold, r.finish)
	switch kind {
	case "version", "op", "huge-body", "tiny-body", "long-token", "long-name", "trailing", "bad-token", "no-segment", "token-overrun", "name-cut":
		req := r.fdRequest(r.p.Rand().Uint64()|1, 0, kind != "bad-token")
		switch kind {
		case "long-token":
			req.Token = make([]byte, model.MaxTokenLen+1)
		case "long-name":
			req.ClientID = string(make([]byte, model.MaxClientNameLen+1))
		case "token-overrun", "name-cut":
			req.ClientID = ""
		}
		b := shortcircuit.AppendRequest(nil, req)
		switch kind {
		case "version":
			binary.BigEndian.PutUint16(b, model.ProtocolVersion+1)
		case "op":
			b[2] = 0xEE
		case "huge-body":
			binary.BigEndian.PutUint32(b[3:], shortcircuit.MaxRequestLen+1)
		case "tiny-body":
			binary.BigEndian.PutUint32(b[3:], uint32(len(b)-7-len(req.Token)-len(req.ClientID)-1))
		case "trailing":
			binary.BigEndian.PutUint32(b[3:], binary.BigEndian.Uint32(b[3:])+3)
			b = append(b, 1, 2, 3)
		case "token-overrun", "name-cut":
			// The token's length field follows the fixed fields; the
			// name's (2 bytes, 0) ends the body.
			at := 7 + 8 + 8 + 8 + 4
			grow := 1 // into the name's length field
			if kind == "token-overrun" {
				grow = 3 // past the name's length field and the body
			}
			binary.BigEndian.PutUint16(b[at:], uint16(len(req.Token)+grow))
		}
		r.refused(kind, b)
	case "squat":
		r.squat()
	case "flood":
		r.flood()
	case "tcp-flood":
		r.tcpFlood()
	case "drip":
		r.drip()
	default:
		// The rest need a segment of the rogue's own.
		var seg *rogueConn
		seg = r.dial(func(resp shortcircuit.Response, files []model.File, ok bool) {
			if !ok || resp.Status != model.StatusSuccess || len(files) != 1 {
				return // a squeezed datanode may refuse it: no attack then
			}
			r.received(0, 1)
			if kind == "second-segment" {
				// A segment's connection stands for the segment; the
				// datanode may refuse another on it or grant one, but
				// must not lose the first (leak-freedom at rest).
				seg.want = func(resp shortcircuit.Response, files []model.File, ok bool) {
					if ok && resp.Status == model.StatusSuccess && len(files) == 1 {
						r.received(0, 1)
					}
				}
				r.send(seg, shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "rogue"}))
				return
			}
			r.withSegment(kind, resp.ShmID)
		})
		if seg != nil {
			r.send(seg, shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "rogue"}))
		}
	}
}

func (r *scRogue) withSegment(kind string, shm uint64) {
	switch kind {
	case "slot-range":
		r.refused(kind, shortcircuit.AppendRequest(nil, r.fdRequest(shm, shortcircuit.SlotsPerSegment, true)))
	case "release-unallocated":
		r.refused(kind, shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpReleaseSlot, ShmID: shm, Slot: 5, ClientID: "rogue"}))
	case "pipelined":
		r.pipelined(shm)
	case "slot-in-use", "bad-receipt", "stall":
		var rc *rogueConn
		rc = r.dial(func(resp shortcircuit.Response, files []model.File, ok bool) {
			if !ok || resp.Status != model.StatusSuccess {
				return // the block gone, or the datanode squeezed
			}
			r.received(len(files), 0)
			switch {
			case kind == "slot-in-use":
				if resp.Receipt {
					r.send(rc, []byte{shortcircuit.ReceiptByte})
				}
				r.expectRefusal(kind, rc)
				r.send(rc, shortcircuit.AppendRequest(nil, r.fdRequest(shm, 0, true)))
			case kind == "bad-receipt" && resp.Receipt:
				// (A datanode that asks no receipt, HDFS-7915's, reads
				// the byte as the start of a request.)
				r.expectRefusal(kind, rc)
				r.send(rc, []byte{shortcircuit.ReceiptByte + 7})
			}
		})
		if rc != nil {
			r.send(rc, shortcircuit.AppendRequest(nil, r.fdRequest(shm, 0, true)))
		}
	}
}

// pipelined asks for two slots' fds on one connection, each answer's
// receipt riding with the next request, then sends both releases in one
// write, so the second arrives while the first is served. A client may
// send its next request before an answer (HDFS's DataXceiver reads its
// ops off one stream in turn): each is answered in order, the fds with
// their two and the releases with none, or the connection is refused
// and hung up; none is left unanswered on a connection kept open.
func (r *scRogue) pipelined(shm uint64) {
	const kind, total = "pipelined", 4
	answered, refused := 0, false
	var rc *rogueConn
	var step func(shortcircuit.Response, []model.File, bool)
	step = func(resp shortcircuit.Response, files []model.File, ok bool) {
		if !ok || r.over {
			return // hung up: refused, or closed idle once answered
		}
		answered++
		if resp.Status != model.StatusSuccess {
			refused = true // the block gone, or the datanode squeezed
			return
		}
		want := 0
		if answered <= 2 {
			want = 2
		}
		if len(files) != want {
			r.fail("rogue %q: answer %d of %d carried %d fds, want %d (answered out of order?)", kind, answered, total, len(files), want)
			return
		}
		r.received(len(files), 0)
		if answered == total {
			return
		}
		rc.want = step
		var b []byte
		if resp.Receipt {
			b = append(b, shortcircuit.ReceiptByte)
		}
		if answered == 1 {
			b = shortcircuit.AppendRequest(b, r.fdRequest(shm, 1, true))
		} else if answered == 2 {
			for slot := uint32(0); slot < 2; slot++ {
				b = shortcircuit.AppendRequest(b, shortcircuit.Request{Op: shortcircuit.OpReleaseSlot, ShmID: shm, Slot: slot, ClientID: "rogue"})
			}
		}
		r.send(rc, b)
	}
	rc = r.dial(step)
	if rc == nil {
		return
	}
	r.checks = append(r.checks, func() {
		if !r.faulted() && !refused && !rc.eof && answered < total {
			r.fail("rogue %q: %d of %d requests answered and the connection open after %v", kind, answered, total, r.hold)
		}
	})
	r.send(rc, shortcircuit.AppendRequest(nil, r.fdRequest(shm, 0, true)))
}

// squat asks for segments on connection after connection, a few at a
// time, and holds every one it is granted until it lets go; it stops at
// the first refusal (or silence: an fd table full no longer accepts) or
// at scSquatMax, and asks nothing in the second half of its hold, so that
// the answers it gets are all in when it lets go (sc-stats counts the
// segments the datanode passed against those received). Nothing is wrong with any one request: the harm, if
// any, is to the honest readers, whose reads local-reads and
// availability judge (a rogue is no fault), and to what the datanode
// holds at rest (leak-freedom).
func (r *scRogue) squat() {
	const inFlight = 8
	asked, stopped := 0, false
	until := r.loop.Now() + r.hold/2
	var ask func()
	ask = func() {
		if r.over || stopped || asked == scSquatMax || r.loop.Now() >= until {
			return
		}
		asked++
		rc := r.dial(func(resp shortcircuit.Response, files []model.File, ok bool) {
			if r.over {
				return
			}
			if !ok || resp.Status != model.StatusSuccess || len(files) != 1 {
				stopped = true
				return
			}
			r.received(0, 1)
			ask()
		})
		if rc == nil {
			stopped = true
			return
		}
		r.send(rc, shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "rogue"}))
	}
	for range inFlight {
		ask()
	}
}

// flood opens domain connections a batch at a time and sends nothing on
// them, holding every one until it lets go: it stops at the first sign
// of refusal (a connection hung up, or a dial that fails: an fd table
// full no longer accepts, and the accept queue fills) or at scFloodMax,
// past a 1,024-fd table (the sc cases' datanode has scDatanodeFDs). An
// idle connection holds no segment, so MaxSegmentsPerUser does not count
// it; only the read timeout (a minute unless the case cuts it) would end
// it. As with the squatter, no one connection is wrong: the harm, if any,
// is to the honest readers (local-reads, availability) and to other
// rogues' answers (sc-refusal).
func (r *scRogue) flood() {
	r.floodBy(func() int { return scFloodBatch }, func(stop func()) bool {
		return r.dial(func(shortcircuit.Response, []model.File, bool) { stop() }) != nil
	})
}

// tcpFlood is flood on the datanode's TCP port. A full listen queue
// drops a SYN without a word (sent again a second later), anyone's: an
// honest reader's connect then waits out TCP's initial RTO, which no
// datanode can prevent (what Linux does under a SYN flood). So the
// flooder keeps the queue under scTCPFloodQueue, as ss -lnt shows any
// local user, and the harm left is the one a datanode can prevent: its
// connection cap, shared with the domain socket, filled with connections
// that send nothing. The cap's idle eviction hangs them up.
func (r *scRogue) tcpFlood() {
	r.floodBy(func() int { return scTCPFloodQueue - r.tcpQueue() }, func(stop func()) bool {
		var c model.Conn
		var err error
		c, err = r.p.Dial("tcp", "dn:50010", r.loop, func(ev model.Events) {
			if ev&(model.Hangup|model.Readable) != 0 {
				// Hung up (or, against the protocol, answered
				// unasked), and EOF stays readable.
				stop()
				c.SetReadInterest(false)
			}
		})
		if err != nil {
			return false
		}
		r.conns = append(r.conns, c)
		return true
	})
}

// drip is flood with a byte sent on each connection as it is dialled and
// one more on each every r.every, of a REQUEST_SHM whose client name is as
// long as the bound lets it (300 bytes: longer than any hold at a byte
// each 100 µs), its last byte never sent: no connection is ever silent,
// none ever asks for anything, and every byte restarts the read timeout.
// It dials as flood does, and drips until it lets go.
func (r *scRogue) drip() {
	req := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: string(make([]byte, model.MaxClientNameLen))})
	type dripConn struct {
		rc   *rogueConn
		sent int
	}
	var conns []*dripConn
	next := func(dc *dripConn) {
		if !dc.rc.eof && dc.sent < len(req)-1 {
			r.send(dc.rc, req[dc.sent:dc.sent+1])
			dc.sent++
		}
	}
	r.floodBy(func() int { return scFloodBatch }, func(stop func()) bool {
		rc := r.dial(func(shortcircuit.Response, []model.File, bool) { stop() })
		if rc == nil {
			return false
		}
		dc := &dripConn{rc: rc}
		conns = append(conns, dc)
		next(dc)
		return true
	})
	var tick func()
	tick = func() {
		if r.over {
			return
		}
		for _, dc := range conns {
			next(dc)
		}
		r.loop.AfterFunc(r.every, tick)
	}
	r.loop.AfterFunc(r.every, tick)
}

// A flood dials up to scFloodBatch connections every scFloodEvery; a TCP
// flood fewer, to keep the listen queue under scTCPFloodQueue.
const (
	scFloodBatch    = 16
	scFloodEvery    = 20 * time.Microsecond
	scTCPFloodQueue = 32
)

// floodBy dials connection after connection, as many as room allows
// every scFloodEvery (at most scFloodBatch), until half the hold,
// scFloodMax, a dial that fails, or the first sign of refusal (a dialled
// connection calls stop).
func (r *scRogue) floodBy(room func() int, dial func(stop func()) bool) {
	dialled, stopped := 0, false
	stop := func() { stopped = true }
	until := r.loop.Now() + r.hold/2
	done := func() bool { return r.over || stopped || dialled == scFloodMax || r.loop.Now() >= until }
	var more func()
	more = func() {
		for n := min(scFloodBatch, room()); n > 0 && !done(); n-- {
			dialled++
			if !dial(stop) {
				stopped = true
			}
		}
		if !done() {
			r.loop.AfterFunc(scFloodEvery, more)
		}
	}
	more()
}

// refused sends b on a new connection and expects a refusal.
func (r *scRogue) refused(kind string, b []byte) {
	rc := r.dial(nil)
	if rc == nil {
		return
	}
	r.expectRefusal(kind, rc)
	r.send(rc, b)
}

// expectRefusal wants rc's next response to be an error without fds,
// and the datanode to have hung up by the time the rogue lets go.
func (r *scRogue) expectRefusal(kind string, rc *rogueConn) {
	answered := false
	since := r.loop.Now()
	r.waits = append(r.waits, refusalWait{since: since, answered: &answered})
	rc.want = func(resp shortcircuit.Response, files []model.File, ok bool) {
		answered = true
		if ok && (resp.Status == model.StatusSuccess || len(files) > 0) {
			r.fail("rogue %q: the datanode served it (%s, %d fds)", kind, resp.Status, len(files))
		}
		// (Not ok: hung up without a word, a refusal too.)
	}
	r.checks = append(r.checks, func() {
		switch {
		case r.faulted():
		case !answered:
			r.fail("rogue %q: no answer and the connection open after %v", kind, r.loop.Now()-since)
		case !rc.eof:
			r.fail("rogue %q: the datanode refused it but kept the connection open for %v", kind, r.hold)
		}
	})
}

// finish checks that refused connections were hung up, then closes the
// rogue's connections and the files passed to it.
func (r *scRogue) finish() {
	if !r.graced && !r.faulted() {
		// A request may wait for room, as any new connection may when
		// other rogues fill the datanode's cap with connections too
		// young to close (the probe's bound): one still unanswered is
		// judged only once it has had that long. (A fault excuses it
		// anyway.)
		r.graced = true
		var until time.Duration
		for _, w := range r.waits {
			if !*w.answered {
				until = max(until, w.since+scProbeBound)
			}
		}
		if now := r.loop.Now(); until > now {
			r.loop.AfterFunc(until-now, r.finish)
			return
		}
	}
	r.over = true
	for _, check := range r.checks {
		check()
	}
	for _, c := range r.conns {
		_ = c.Close()
	}
	for _, f := range r.files {
		_ = f.Close()
	}
	r.done()
}
