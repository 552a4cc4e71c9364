package properties

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"xceiver/model"
	"xceiver/model/abuse"
	"xceiver/sim"
)

// Hostile peers: connections that a well-behaved client never makes. They
// send garbage or broken requests, drip a request a byte at a time,
// announce writes and send nothing (or half), stop reading, or stop at some protocol
// state and stay connected. Each but a write hoarder keeps coming back:
// when the datanode closes its connection it reconnects after a gap,
// until the run quiesces, so during the liveness phase the peers still hold their share
// of the datanode. Three properties watch the datanode under them
// (memory.go, and checkHostile below):
//
//   - bounded memory: at every event, what each connection and the whole
//     datanode buffer stays under the configured bounds;
//   - every state has a timeout: no datanode connection stays open on a
//     stuck peer longer than the sum of the timeouts that could apply,
//     nor on a peer that has closed its end;
//   - availability under hostile peers: well-behaved clients' ops
//     succeed within the usual bound while the peers hold their share.

// Hostile peer kinds.
const (
	HostileIdle      = "idle"      // connects and sends nothing
	HostileGarbage   = "garbage"   // sends random bytes
	HostileOversized = "oversized" // a request with fields past the protocol's bounds
	HostileTruncated = "truncated" // the first part of a request, then nothing
	HostileDrip      = "drip"      // a request (or a write's packet) one byte at a time, each just before the read timeout (slowloris)
	HostileAnnounce  = "announce"  // announces the largest write allowed and sends no data
	HostileNonReader = "nonreader" // asks for a large block and never reads the answer
	HostileMute      = "mute"      // reads a block and never sends the final status
	HostileQuitter   = "quitter"   // asks for a block and closes at once (when its key is odd, after pipelining its status and 4 KiB of junk, 8 KiB on a key of 3 mod 4, and on a key of 7 mod 8 half a stall timeout later)
	HostileHoarder   = "hoarder"   // announces a largest write, sends a little over half of it (the datanode's buffer for it grows to the whole) and holds
	HostileTrickler  = "trickler"  // a hoarder that then sends a packet of one byte just under each stall timeout (for HandleWait and two stall timeouts; then just under each read timeout): never silent, never progressing
	// HostileWriteQuitter: hoarders whose last two close half a stall
	// timeout after connecting, while their writes wait for the room
	// the others hold.
	HostileWriteQuitter = "write-quitter"
	// HostileDrainer: a non-reader that, a stall timeout and a half
	// after asking, takes all it was sent and closes: a FIN with
	// nothing unread, which its read, parked and waiting to take its
	// handle again, must hear.
	HostileDrainer = "drainer"
	// HostileGrabber: a writer that announces a largest write, sends
	// two 64 KiB packets (its buffer grows to 128 KiB) and, a little
	// later, a third, for which its buffer must double: enough of them
	// to take all of MaxBuffered that way, so that every write holding
	// room then waits for more, which none gives back.
	HostileGrabber = "grabber"
	HostileMisfit  = "misfit" // a request that parses but does not fit: a write whose packets come at a wrong offset, pass the announced length or end short of it, or an op the data port does not serve
)

// drawnLast are the kinds drawn after every other part of a case
// (drawMisfits, drawHoarders, drawDrainers), so that the draws before
// them stayed as they were when each came.
var drawnLast = []string{HostileMisfit, HostileHoarder, HostileTrickler, HostileWriteQuitter, HostileDrainer, HostileGrabber}

// comeOnce are the kinds that do not come back once closed (hostileGone).
var comeOnce = []string{HostileHoarder, HostileTrickler, HostileWriteQuitter, HostileDrainer, HostileGrabber}

// HostileKinds lists every hostile peer kind.
var HostileKinds = []string{HostileIdle, HostileGarbage, HostileOversized, HostileTruncated, HostileDrip,
	HostileAnnounce, HostileNonReader, HostileMute, HostileQuitter, HostileMisfit, HostileHoarder, HostileTrickler,
	HostileWriteQuitter, HostileDrainer, HostileGrabber}

// HostilePeer is Count peers of one kind.
type HostilePeer struct {
	Kind  string        `json:"kind"`
	Count int           `json:"n"`
	At    time.Duration `json:"at"`  // first connection, after the datanode serves
	Gap   time.Duration `json:"gap"` // before reconnecting once the datanode closed it (the first time: returnGap)
	Key   uint64        `json:"key"` // content of garbage, where a truncation stops
}

// Bounds of the hostile-peer properties.
const (
	// PeerGoneBound: a datanode connection whose peer closed its end
	// must close within this of hearing so (unless it only sends, and
	// its path has gone dark: see scanHostile).
	PeerGoneBound = time.Second
	// WaiterGoneBound: within this if it heard while its read waited
	// for a pool handle (new or parked), or its write for buffer room. A waiting read
	// has nothing in flight and no reason to leave its client's FIN
	// unread past a turn of its loop, nor a waiting write to miss it
	// behind the input it leaves in the socket; the general bound would
	// let one that hears nothing while it waits (waiter-deaf,
	// waiter-deaf-when-full, parked-waiter-deaf, write-waiter-deaf)
	// through, since a handle or room comes within a
	// stall timeout or so.
	WaiterGoneBound = 50 * time.Millisecond
	// quitterTail is what a quitter with an odd key pipelines after its
	// request: a little under MaxRequestLen+64, the most a read waiting
	// for a pool handle buffers, so the datanode reads all of it and
	// then its FIN; on a key of 3 mod 4, twice as much, so the datanode
	// must hear the FIN behind the part it leaves unread. On a key of 7
	// mod 8 the quitter holds its connection open with that part unread
	// for half a stall timeout before closing: a waiting read that left
	// reading on would be woken for it at every turn of its loop (the
	// spin check; full-waiter-spins).
	quitterTail = model.MaxRequestLen + 32
	// hostileScan is how often the harness looks at the hostile peers'
	// connections (reconnects, timeouts).
	hostileScan = time.Millisecond
	// hostileBlockSize is the block a non-reader asks for: more than the
	// datanode's send buffer (at most nonReaderSndBuf in its runs) and
	// the peer's receive window hold, and larger than any drawn block.
	hostileBlockSize = 2 * nonReaderSndBuf
	// returnGapMax bounds a returning peer's backoff (returnGap). At 2 s
	// datanode seeds had some 4% fewer events, but six catalogued bugs
	// failed fewer of their first 200 seeds (tcp-drip 59 to 54,
	// pool-wait-forever 103 to 99, no-conn-cap 45 to 42, and three by one).
	returnGapMax = 1000 * time.Millisecond
	// floodReturnGapMax bounds the backoff of a flood's peer that the
	// datanode evicted (returnGap).
	floodReturnGapMax = 8 * time.Second
	// hostileBlocks is where the blocks hostile peers write begin (every
	// write they make names one): no client's block is numbered so high,
	// and none of their writes may ever be stored (leaks).
	hostileBlocks = 1 << 40
	// hostileRcvBuf is the hostile process's receive buffer.
	hostileRcvBuf = 4096
	// hoardPacket is the data of a write hoarder's packets.
	hoardPacket = 64 << 10
	// nonReaderSndBuf is the datanode's send buffer in a run with
	// non-readers, unless small ones were drawn: HDFS's
	// dfs.datanode.transfer.socket.send.buffer.size before autotuning
	// became its default (128 KiB), which holds two loopback segments
	// (2 × 65,483 bytes), so a well-behaved read is not held to one
	// segment a delayed ACK (liveBound). Each non-reader's connection
	// fills the send buffer before it is stuck, and comes back after
	// every send timeout; at the default 1 MiB in packets down to 512
	// bytes that was 4,000 disk events a return, 38% of check's time
	// over 2,000 seeds, to test nothing a quarter of it does not. At
	// 256 KiB (that default doubled) non-readers were still 14% of the
	// events of datanode seeds 1-3,000 (3,660 a seed that had them, three
	// quarters of it with 512-byte packets); at 128 KiB 9%, and every
	// catalogued bug that needs non-readers fails the same of its first
	// 200 seeds: a stuck state is the same however much filled it.
	nonReaderSndBuf = 128 << 10
	// floodApart is how far apart the peers of a flood arrive. A flood
	// tests the connection cap, not the listener: at 10 µs apart (100,000 SYNs/s) it outran a
	// threaded datanode's acceptor (about 15 µs an accept, eviction
	// included: rapid's seed 117), filled the backlog of 128, and a
	// client's SYN dropped then is sent again only after TCP's initial
	// RTO of 1 s, past the availability bound: what Linux does under a
	// SYN flood, which no datanode can prevent.
	floodApart = 50 * time.Microsecond
)

// Properties of hostile peers.
const (
	PropMemory         = "bounded-memory"       // buffers per connection and per process under their bounds
	PropTimeout        = "state-timeout"        // no connection waits forever on a peer that will not act
	PropHostileAvail   = "hostile-availability" // availability while hostile peers hold their share
	PropRefusal        = "refusal"              // a request the data port must refuse is refused: a body past the bound or a write whose packets do not fit it ERROR_INVALID, an op it does not serve ERROR_UNSUPPORTED; no hostile write is stored
	hostileProcessName = "hostile"
)

// drawMisfits adds misfit peers to some runs that have hostile peers
// (to every run if force lists them: a catalogued bug needs them). It
// runs last, so the rest of a case is drawn as it was before misfits
// were.
func drawMisfits(d drawer, cfg *Config, force []string) {
	drawn := d.chance(40, "hostile_misfit")
	if !slices.Contains(force, HostileMisfit) && (!drawn || len(cfg.Hostile) == 0) {
		return
	}
	cfg.Hostile = append(cfg.Hostile, drawPeer(d, HostileMisfit))
}

// drawHoarders adds write hoarders to some runs that have hostile peers
// (to every run if force lists them), drawn after misfits: enough of
// them to take all of MaxBuffered and more. Each sends more than half a
// largest write, so a run with them takes small bounds (no draw
// consumed: 256 KiB writes, 1.5 MiB buffered, room for the well-behaved
// writers' 1.2 MB), and they come once. In a third of those runs they
// trickle on (HostileTrickler); in a quarter of the rest, unless a bug
// needs plain hoarders, the last two leave while their writes wait for
// room (HostileWriteQuitter), drawn last but for drainers.
func drawHoarders(d drawer, cfg *Config, force []string) {
	drawn := d.chance(10, "hostile_hoarder")
	trickle := slices.Contains(force, HostileTrickler)
	quit := slices.Contains(force, HostileWriteQuitter)
	grab := slices.Contains(force, HostileGrabber) // (drawGrabbers makes them grabbers)
	if !slices.Contains(force, HostileHoarder) && !trickle && !quit && !grab && (!drawn || len(cfg.Hostile) == 0) {
		return
	}
	cfg.MaxWrite, cfg.MaxBuffered = hoardMaxWrite, hoardMaxBuffered
	p := drawPeer(d, HostileHoarder)
	p.Count = cfg.MaxBuffered/cfg.MaxWrite + 2
	if tr := d.chance(33, "hostile_trickler") || trickle; tr && !quit {
		p.Kind = HostileTrickler
	} else if quit || !slices.Contains(force, HostileHoarder) && d.chance(25, "hostile_write_quitter") {
		p.Kind = HostileWriteQuitter
	}
	cfg.Hostile = append(cfg.Hostile, p)
	// A write waits for room until the hoarders holding it have gone a
	// stall timeout without a step of progress: its client gives it
	// that long.
	cfg.Timeout = max(cfg.Timeout, time.Second)
}

// hoardPackets are a write hoarder's packets, the same in every run (a
// run with hoarders has their MaxWrite): a little over half of a largest
// write, made once per process, since their checksums cost more than the
// rest of a run's setup. Their data is a window of the content pool.
var hoardPackets = sync.OnceValue(func() []byte {
	return abuse.AppendPackets(nil, blockData(1, hoardMaxWrite/2+hoardPacket), hoardPacket)
})

// grabPrefix is how many bytes of hoardPackets its first two packets
// take; grabLast is its third packet, which a grabber sends grabDelay
// after them.
var (
	grabPrefix = sync.OnceValue(func() int {
		return len(abuse.AppendPackets(nil, blockData(1, grabHeld), hoardPacket))
	})
	grabLast = sync.OnceValue(func() []byte { return hoardPackets()[grabPrefix():] })
)

// drawDrainers adds drainers to a quarter of the runs with non-readers
// (to every run if force lists them, with non-readers), drawn after
// hoarders, last of all. They read the non-readers' blocks.
func drawDrainers(d drawer, cfg *Config, force []string) {
	if !cfg.hostileKind(HostileNonReader) || !slices.Contains(force, HostileDrainer) && !d.chance(25, "hostile_drainer") {
		return
	}
	cfg.Hostile = append(cfg.Hostile, drawPeer(d, HostileDrainer))
}

// drawGrabbers makes the plain hoarders of a quarter of the runs that
// have them grabbers (every run's hoarders, of whatever kind, if force
// lists grabbers), drawn last of all: as many as hold all of MaxBuffered
// at 128 KiB each, and one more, which then holds none.
func drawGrabbers(d drawer, cfg *Config, force []string) {
	forced := slices.Contains(force, HostileGrabber)
	for i, p := range cfg.Hostile {
		switch p.Kind {
		case HostileHoarder, HostileTrickler, HostileWriteQuitter:
		default:
			continue
		}
		if forced || p.Kind == HostileHoarder && !slices.Contains(force, HostileHoarder) && d.chance(25, "hostile_grabber") {
			cfg.Hostile[i].Kind = HostileGrabber
			cfg.Hostile[i].Count = cfg.MaxBuffered/grabHeld + 1
		}
		return
	}
}

// grabHeld is the room each grabber takes before it asks for more (two
// packets, its buffer doubled once), and grabDelay how long after those
// it sends the third.
const (
	grabHeld  = 2 * hoardPacket
	grabDelay = 20 * time.Millisecond
)

// The bounds of a run with write hoarders (drawHoarders).
const (
	hoardMaxWrite    = 256 << 10
	hoardMaxBuffered = 3 << 19 // 1.5 MiB
)

// drawPeer draws a few peers of kind k: how many, when the first
// connects, the gap before each return and the key their messages come
// from.
func drawPeer(d drawer, k string) HostilePeer {
	return HostilePeer{Kind: k, Count: d.n(1, fewPeers, "hostile_count"), At: d.dur(0, 20*time.Millisecond, "hostile_at"),
		Gap: d.dur(time.Millisecond, 100*time.Millisecond, "hostile_gap"), Key: d.key("hostile_key")}
}

// fewPeers is the most peers of a kind drawPeer draws; more are a flood
// (an idle or drip flood up to the capacity, or the hoarders, tricklers
// and grabbers drawn to fill a bound).
const fewPeers = 4

// flood reports whether p is more peers than drawPeer's few.
func (p HostilePeer) flood() bool { return p.Count > fewPeers }

// drawDatanodeLimits draws the datanode's defences: its timeouts and
// buffer bounds. It runs after everything else is drawn, so the cases of
// earlier seeds keep their other fields.
func drawDatanodeLimits(d drawer, cfg *Config) {
	cfg.MaxWrite = pick(d, "max_write", 256<<10, 1<<20, 4<<20)
	// Room for the well-behaved writers (12 at most, 100 KB each).
	cfg.MaxBuffered = max(4<<20, cfg.MaxWrite*pick(d, "max_buffered", 2, 4, 16))
	cfg.RequestTimeout = pick(d, "request_timeout", time.Second, 5*time.Second, 30*time.Second)
	cfg.SendTimeout = pick(d, "send_timeout", time.Second, 5*time.Second, 30*time.Second)
	cfg.HandleWait = pick(d, "handle_wait", time.Second, 2*time.Second, 10*time.Second)
	// Above the longest a well-behaved reader's progress may pause (a
	// delayed ACK, up to 200 ms), or the datanode would cut it off.
	cfg.StallTimeout = pick(d, "stall_timeout", 250*time.Millisecond, 300*time.Millisecond)
	cfg.MaxConns = pick(d, "max_conns", 0, 64, 256)
	if cfg.Mode == "reactor" && (cfg.PoolMax < 4 || cfg.PoolMax/2 < cfg.Clients*cfg.ClientWorkers) {
		// One handle: reads of other blocks queue behind each read in
		// service, which may take a few delayed ACKs (40 to 200 ms
		// each: Nagle, a small send buffer) though its client reads
		// everything. Holders give a handle back to waiters only once
		// one waited the press delay (min(HandleWait/2, StallTimeout),
		// up to 300 ms), so a client that gives up after 150 ms without
		// a byte asks for what this datanode does not promise; rapid,
		// which favours the first choices of each draw, found it in 2
		// of its first 8 seeds once the sharing fix let seed 11 pass.
		// So with any pool the clients' ops at once can fill: check's
		// seeds 100092083 and 100141000, two handles (PoolMax 4) held
		// by reads sent 2 KiB a delayed ACK (a 2 KiB send buffer,
		// Nagle), and a third read of another block given up at 150 ms.
		// The clients get the next drawn timeout (no draw consumed).
		cfg.Timeout = max(cfg.Timeout, 500*time.Millisecond)
	}
}

// hostileCapacity is how many connections the datanode can hold: the
// peers drawn go up to it.
func hostileCapacity(cfg *Config) int {
	n := cfg.FDLimit
	if cfg.Mode == "threaded" {
		n /= 2 // a thread's epoll fd beside each socket
	}
	if cfg.MaxConns > 0 {
		n = min(n, cfg.MaxConns)
	}
	return n
}

// drawHostile draws the hostile peers of a run: a swarm of kinds, a few
// of each, or a flood of idle ones up to the datanode's capacity. force
// lists kinds that must be there (a catalogued bug that needs them).
func drawHostile(d drawer, cfg *Config, force []string) {
	if len(force) == 0 && !d.chance(40, "hostile") {
		return
	}
	capacity := hostileCapacity(cfg)
	for _, k := range HostileKinds {
		if slices.Contains(drawnLast, k) {
			continue
		}
		forced, flood, spread := false, false, false
		for _, f := range force {
			forced = forced || f == k || f == k+":flood" || f == k+":spread"
			flood = flood || f == k+":flood"
			spread = spread || f == k+":spread"
		}
		if !d.chance(40, "hostile_"+k) && !forced {
			continue
		}
		p := drawPeer(d, k)
		// A flood of idle connections, up to past the capacity: the
		// cap must close them to keep well-behaved clients in.
		if k == HostileIdle && (flood || d.chance(25, "hostile_flood")) {
			// (Coming back slower: each return costs the datanode an
			// accept and an eviction, and the run its events.)
			p.Count = d.n(capacity/2, capacity+capacity/4, "hostile_flood_count")
			p.Gap = d.dur(200*time.Millisecond, time.Second, "hostile_flood_gap")
		}
		if spread {
			p.Count, p.Key = max(p.Count, 2), p.Key|1
		}
		cfg.Hostile = append(cfg.Hostile, p)
	}
	if cfg.hostileKind(HostileNonReader) {
		// A read may wait for non-readers to be cut off (StallTimeout):
		// the clients give it that long.
		cfg.Timeout = max(cfg.Timeout, 2*time.Second)
		// Non-readers share one large block, or, when their key is odd,
		// each reads its own (up to 4): then they hold as many handles
		// and a read of another block may queue behind all of them
		// (handle-held-stalled). The choice costs no draw, so the rest
		// of the case is drawn as before.
		n := 1
		for _, p := range cfg.Hostile {
			if p.Kind == HostileNonReader && p.Key%2 == 1 {
				n = max(n, min(p.Count, 4))
			}
		}
		if cfg.SndBuf == 0 {
			cfg.SndBuf = nonReaderSndBuf // (no draw)
		}
		key := d.key("hostile_block")
		for i := 0; i < n; i++ {
			cfg.MaxBlock++
			cfg.Blocks = append(cfg.Blocks, InitBlock{ID: cfg.MaxBlock, Size: hostileBlockSize, Key: key + uint64(i)})
		}
	}
}

func (c *Config) hostileKind(kind string) bool {
	for _, p := range c.Hostile {
		if p.Kind == kind && p.Count > 0 {
			return true
		}
	}
	return false
}

// handleWaitBound is the longest a new read may wait for a pool handle in
// a run with hostile peers and no faults (part of hostile-availability). Once it has waited the press delay
// (min(HandleWait/2, StallTimeout)) every holder gives its handle back as
// soon as its client's window closes, and one whose client takes nothing
// for a stall timeout while reads wait is cut off; so the wait stays
// within a stall timeout more, however many clients that stopped reading
// hold handles ahead of it (handle-held-stalled is that bug). A slow disk
// may keep a holder busy longer: not judged with faults.
func (c *Config) handleWaitBound() time.Duration {
	return min(c.HandleWait/2, c.StallTimeout) + c.StallTimeout
}

// stuckBound is the longest a datanode may keep a connection to a stuck
// peer: the sum of every timeout that could apply to one exchange.
func (c *Config) stuckBound() time.Duration {
	return c.ReadTimeout + c.RequestTimeout + c.HandleWait + c.SendTimeout + c.Keepalive + 2*time.Second
}

func validateHostile(cfg *Config) error {
	total := 0
	for _, p := range cfg.Hostile {
		known := false
		for _, k := range HostileKinds {
			known = known || k == p.Kind
		}
		if !known {
			return fmt.Errorf("unknown hostile peer kind %q", p.Kind)
		}
		if p.Count < 0 || p.At < 0 || p.Gap < 0 {
			return fmt.Errorf("hostile %s: negative field", p.Kind)
		}
		total += p.Count
	}
	if total > 8192 {
		return fmt.Errorf("%d hostile peers, more than 8192", total)
	}
	switch {
	case cfg.MaxWrite < 0 || cfg.MaxBuffered < 0 || cfg.MaxConns < 0:
		return fmt.Errorf("negative buffer or connection bound")
	case cfg.RequestTimeout < 0 || cfg.SendTimeout < 0 || cfg.HandleWait < 0 || cfg.StallTimeout < 0:
		return fmt.Errorf("negative datanode timeout")
	}
	return nil
}

// hostileConn is one hostile peer's connection.
type hostileConn struct {
	peer    HostilePeer
	idx     int
	at      int // its place in hostileH.conns, the order scans go in
	dirty   bool
	changed func() // marks it dirty (sim.WatchPeerEnd)
	c       model.Conn
	started bool
	openAt  time.Duration // when the datanode accepted it; -1 before
	quitAt  time.Duration // when the peer closed its end; -1 if it did not
	heardAt time.Duration // when the datanode's end heard of it; -1 before
	// heardWaiting: the datanode's read waited for a pool handle then,
	// or its write for buffer room.
	heardWaiting bool
	gone         bool          // the datanode closed it: a reconnect is due
	returns      int           // how many times it came back (returnGap)
	dialAt       time.Duration // when it last connected
	msg          []byte
	sent         int
	whole        int // a drip peer sends msg[:whole] at once (a write's request), then drips the rest
	drip         model.Timer
	tail         []byte // a trickler's packets (trickle)
	// first is what it sends on connecting, the same on every reconnect:
	// built once (a token's HMAC, a name), not per reconnect.
	first   []byte
	answer  []byte             // the start of the datanode's answer, for a peer that reads it
	onEvent func(model.Events) // bound once: a peer reconnects often
	dial    func()
}

type hostileH struct {
	p        *sim.Process
	loop     model.Loop
	conns    []*hostileConn
	stopped  bool // quiescence: no more reconnects
	nextScan time.Duration
	// dirty lists the peers whose connection may have changed since the
	// last scan (sim.WatchPeerEnd, a quit); due is the earliest
	// moment one of the others may break its bound, and key what the
	// bounds were worked out under. A scan looks at every peer only past
	// due or when key changed, and otherwise at the dirty ones alone:
	// a look at every peer each millisecond was a tenth of a datanode
	// seed's instructions, and found a change in about one in a hundred.
	dirty []*hostileConn
	due   time.Duration
	key   hostileScanKey
	sink  []byte // what peers read (buf; an array on the stack would escape, one per event)
	hoard []byte // what every write hoarder of the run sends: its request (the run's block id) and hoardPackets (a grabber, their first two)
}

// startHostile spawns the hostile peers' process; each peer connects at
// its drawn moment.
func (h *harness) startHostile() {
	if len(h.cfg.Hostile) == 0 {
		return
	}
	hs := &hostileH{}
	h.hostile = hs
	p, err := h.w.Spawn(hostileProcessName, model.ProcessConfig{FDLimit: 1 << 16}, func(p model.Process) {
		hs.loop = p.MainLoop()
		if h.cfg.hostileKind(HostileNonReader) {
			hs.p.SlowReader(hostileRcvBuf)
		}
		for _, peer := range h.cfg.Hostile {
			apart := 10 * time.Microsecond
			if peer.flood() {
				apart = floodApart
				if peer.Kind == HostileDrip {
					apart = dripFloodApart(peer.Count)
				}
			}
			for i := 0; i < peer.Count; i++ {
				hc := &hostileConn{peer: peer, idx: i, at: len(hs.conns), openAt: -1, quitAt: -1, heardAt: -1}
				hc.onEvent = func(ev model.Events) { h.hostileEvent(hc, ev) }
				hc.dial = func() { h.hostileDial(hc) }
				hc.changed = func() { hs.markDirty(hc) }
				hs.conns = append(hs.conns, hc)
				// Peers of a kind arrive 10 µs apart; a flood's slower.
				hs.loop.AfterFunc(peer.At+time.Duration(i)*apart, hc.dial)
			}
		}
	})
	if err != nil {
		h.fail(PropHarness, "spawn hostile peers: %v", err)
		return
	}
	hs.p = p.(*sim.Process)
}

// hostileDial (re)connects a peer; it runs on the hostile loop.
func (h *harness) hostileDial(hc *hostileConn) {
	hs := h.hostile
	if hs.stopped || h.failure != nil {
		return
	}
	hc.dialAt = hs.loop.Now()
	hc.started, hc.openAt, hc.quitAt, hc.heardAt, hc.heardWaiting, hc.gone, hc.sent, hc.msg = false, -1, -1, -1, false, false, 0, nil
	c, err := hs.p.Dial("tcp", dnAddr, hs.loop, hc.onEvent)
	if err != nil {
		hs.loop.AfterFunc(hc.peer.Gap+time.Millisecond, hc.dial)
		return
	}
	hc.c = c
	sim.WatchPeerEnd(c, hc.changed)
	c.SetWriteInterest(true)
	hc.answer = hc.answer[:0]
	if hc.peer.Kind != HostileMute && !hc.readsAnswer() {
		// Peers that never read would otherwise be told of unread data
		// forever (level-triggered).
		c.SetReadInterest(false)
	}
}

// hostileEvent runs a peer's side of its connection.
func (h *harness) hostileEvent(hc *hostileConn, ev model.Events) {
	c := hc.c
	if ev&model.Hangup != 0 && c.Err() != nil {
		h.hostileGone(hc)
		return
	}
	if ev&model.Writable != 0 {
		if !hc.started {
			hc.started = true
			h.hostileStart(hc)
		} else {
			h.hostileWrite(hc)
		}
	}
	if ev&model.Readable != 0 && hc.readsAnswer() {
		h.hostileAnswer(hc)
		return
	}
	if ev&model.Readable != 0 && hc.peer.Kind == HostileMute {
		if err := h.hostile.discard(c); err != nil && err != model.ErrWouldBlock {
			h.hostileGone(hc)
		}
	}
}

// discard reads all that c holds and drops it (a mute peer's answer, a
// drainer's before it closes); it returns what the read that found
// nothing more said.
func (hs *hostileH) discard(c model.Conn) error {
	for {
		n, err := c.Read(hs.buf())
		if n == 0 {
			return err
		}
	}
}

// buf is the hostile loop's read buffer, made at its first use.
func (hs *hostileH) buf() []byte {
	if hs.sink == nil {
		hs.sink = make([]byte, 4096)
	}
	return hs.sink
}

// quit closes a peer's connection from its side, as its kind does.
func (h *harness) quit(hc *hostileConn) {
	_ = hc.c.Close()
	hc.quitAt = h.hostile.loop.Now()
	// Heard by the datanode's end before (its error, a reset) is noted
	// as its peer's close from now on: the FIN this close sends may never
	// change what the end has heard.
	h.hostile.markDirty(hc)
}

// later runs f after d on the hostile loop, if hc is still on the same
// connection then and the datanode has not closed it.
func (h *harness) later(hc *hostileConn, d time.Duration, f func()) model.Timer {
	c := hc.c
	return h.hostile.loop.AfterFunc(d, func() {
		if hc.c == c && !hc.gone {
			f()
		}
	})
}

// hostileStart sends what the peer's kind sends once connected.
func (h *harness) hostileStart(hc *hostileConn) {
	switch hc.peer.Kind {
	case HostileIdle:
		hc.c.SetWriteInterest(false)
		return
	}
	if hc.first == nil {
		hc.first = h.hostileMessage(hc)
	}
	hc.msg = hc.first
	if hc.peer.Kind == HostileDrip {
		hc.c.SetWriteInterest(false)
		if hc.whole > 0 {
			if n, err := hc.c.Write(hc.msg[:hc.whole]); err == nil {
				hc.sent = n
			}
		}
		h.hostileDrip(hc)
		return
	}
	h.hostileWrite(hc)
	switch {
	case hc.peer.Kind == HostileGrabber:
		// By then every grabber holds 128 KiB: each asks for 128 KiB
		// more, which only another's giving up can free.
		// (Sent as any message is, when the socket says it can take
		// it: hostileEvent's hostileWrite.)
		h.later(hc, grabDelay, func() {
			hc.msg, hc.sent = grabLast(), 0
			hc.c.SetWriteInterest(true)
		})
	case hc.peer.Kind == HostileDrainer:
		// Its read stalled by then and, with reads waiting, parked:
		// it takes all it was sent and closes, and the read must hear
		// the FIN.
		h.later(hc, h.cfg.StallTimeout*3/2, func() {
			_ = h.hostile.discard(hc.c)
			h.quit(hc)
		})
	case hc.peer.Kind == HostileQuitter && hc.sent == len(hc.msg):
		if hc.key()%8 == 7 {
			h.later(hc, h.cfg.StallTimeout/2, func() { h.quit(hc) })
			break
		}
		h.quit(hc)
	case hc.peer.Kind == HostileWriteQuitter && hc.idx >= hc.peer.Count-2:
		// The others hold all the room by then (MaxBuffered is
		// Count-2 largest writes), so these two wait for it: the
		// datanode reads nothing of theirs meanwhile, and must hear
		// their FIN behind the unread data (WaiterGoneBound).
		h.later(hc, h.cfg.StallTimeout/2, func() { h.quit(hc) })
	}
}

// hostileMessage is what a peer sends on connecting: it depends on the
// peer and the case only.
func (h *harness) hostileMessage(hc *hostileConn) []byte {
	cfg := h.cfg
	key := hc.key()
	read := func(block uint64, length int64) []byte {
		return model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: block, Length: length,
			ClientName: fmt.Sprintf("hostile-%s-%d", hc.peer.Kind, hc.idx), Token: abuse.Token(block)})
	}
	small := uint64(1)
	if len(cfg.Blocks) > 0 {
		small = cfg.Blocks[int(key%uint64(len(cfg.Blocks)))].ID
	}
	switch hc.peer.Kind {
	case HostileGarbage:
		return model.BlockContent(key, 1+int(key%300))
	case HostileOversized:
		switch key % 3 {
		case 0: // a body longer than any request
			msg := binary.BigEndian.AppendUint16(nil, model.ProtocolVersion)
			msg = append(msg, byte(model.OpReadBlock))
			return binary.BigEndian.AppendUint32(msg, model.MaxRequestLen+1+uint32(key%1000))
		case 1: // a write longer than the datanode takes
			return model.AppendRequest(nil, model.Request{Op: model.OpWriteBlock, BlockID: hostileBlocks, Length: int64(max(cfg.MaxWrite, 1)) + 1 + int64(key%(1<<30)), Token: abuse.Token(hostileBlocks)})
		default: // a read of more than the block holds
			return read(small, 1<<40)
		}
	case HostileTruncated:
		full := read(small, 100)
		return full[:int(key%uint64(len(full)-1))+1]
	case HostileDrip:
		if key%2 == 1 && !hc.peer.flood() { // (a flood drips reads: drawDripFlood)
			// A whole write request, then its packet a byte at a time:
			// the datanode receives a message with no end in sight.
			id := hostileBlocks + key
			data := model.BlockContent(key, 100)
			req := model.AppendRequest(nil, model.Request{Op: model.OpWriteBlock, BlockID: id, Length: int64(len(data)), Token: abuse.Token(id)})
			hc.whole = len(req)
			return model.AppendPacket(req, model.PacketHeader{Last: true}, data, model.BytesPerChecksum)
		}
		return model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: small, Length: 100,
			ClientName: string(model.BlockContent(key, model.MaxClientNameLen)), Token: abuse.Token(small)})
	case HostileAnnounce:
		length := int64(cfg.MaxWrite)
		if length <= 0 {
			length = int64(model.DefaultDatanodeConfig().MaxWrite)
		}
		return model.AppendRequest(nil, model.Request{Op: model.OpWriteBlock, BlockID: hostileBlocks + key, Length: length, Token: abuse.Token(hostileBlocks + key)})
	case HostileNonReader, HostileDrainer:
		// The large blocks drawn for non-readers: the i-th peer reads
		// the (i mod n)-th.
		var large []InitBlock
		for _, x := range cfg.Blocks {
			if x.Size >= hostileBlockSize {
				large = append(large, x)
			}
		}
		b := InitBlock{ID: cfg.MaxBlock, Size: hostileBlockSize}
		if len(large) > 0 {
			b = large[hc.idx%len(large)]
		}
		return read(b.ID, int64(b.Size))
	case HostileMute:
		return read(small, 0)
	case HostileHoarder, HostileTrickler, HostileWriteQuitter, HostileGrabber:
		// A write of a largest block, then packets of a little over
		// half of it: the datanode's buffer for it doubles to the whole
		// write. Every hoarder of a run sends the same (one block id).
		// A grabber sends the first two packets (grabLast is the third;
		// a run has hoarders of one kind).
		if hs := h.hostile; hs.hoard != nil {
			return hs.hoard
		}
		id := hostileBlocks + hc.peer.Key
		msg := model.AppendRequest(nil, model.Request{Op: model.OpWriteBlock, BlockID: id, Length: hoardMaxWrite, Token: abuse.Token(id)})
		packets := hoardPackets()
		if hc.peer.Kind == HostileGrabber {
			packets = packets[:grabPrefix()]
		}
		msg = append(msg, packets...)
		h.hostile.hoard = msg
		return msg
	case HostileMisfit:
		// A well-formed write request of a block no client uses, then
		// packets that do not fit it (checksums valid): the datanode
		// must refuse the write as invalid and store nothing. Or a
		// short-circuit fd request, which goes to the domain socket:
		// the data port must answer that it does not serve it.
		id := hostileBlocks + key
		if hc.misfitUnserved() {
			return model.AppendRequest(nil, model.Request{Op: model.OpRequestShortCircuitFDs, BlockID: small, Length: 1,
				ClientName: "hostile-misfit", Token: abuse.Token(small)})
		}
		data := model.BlockContent(key, 1000)
		var announced int64
		var hdr model.PacketHeader
		// Each fits every other test, so that one alone must catch it.
		switch key % 4 {
		case 0: // the first packet at a wrong offset
			announced, hdr = 1000, model.PacketHeader{Offset: 512, Last: true}
		case 1: // more bytes than announced, in a packet that is not the last
			announced = 500
		case 2: // the last packet short of the announced length
			announced, hdr = 2000, model.PacketHeader{Last: true}
		}
		req := model.AppendRequest(nil, model.Request{Op: model.OpWriteBlock, BlockID: id, Length: announced, Token: abuse.Token(id)})
		return model.AppendPacket(req, hdr, data, model.BytesPerChecksum)
	case HostileQuitter:
		msg := read(small, 0)
		if key%2 == 1 {
			// Before closing, it pipelines the read's status and a tail
			// of junk, up to just under what a read waiting for a pool
			// handle buffers (MaxRequestLen+64 bytes): the datanode must
			// read that far to hear its FIN (WaiterGoneBound). On a
			// key of 3 mod 4, twice that: it must hear the FIN behind
			// what it leaves unread (PeerClosed).
			tail := quitterTail
			if key%4 == 3 {
				tail *= 2
			}
			msg = model.AppendStatus(msg, model.StatusSuccess)
			msg = append(msg, model.BlockContent(key, tail-2)...)
		}
		return msg
	}
	return nil
}

func (h *harness) hostileWrite(hc *hostileConn) {
	for hc.sent < len(hc.msg) {
		n, err := hc.c.Write(hc.msg[hc.sent:])
		if err != nil {
			if err != model.ErrWouldBlock {
				h.hostileGone(hc)
			}
			return
		}
		hc.sent += n
	}
	hc.c.SetWriteInterest(false)
	if hc.peer.Kind == HostileTrickler && hc.drip == nil {
		h.armTrickle(hc, 0)
	}
}

// trickle sends a trickler's next packet, one byte of data going on from
// its write's first part, or on an odd key the rest of the write's data
// and then empty packets (or what is left of the last packet, if the
// socket took only part of it), just under a stall timeout after the
// last: a write never silent for a stall timeout and never making
// progress. Once HandleWait and two stall timeouts have passed (a
// waiting write would have failed busy by then) it slows to just under a
// read timeout, which still holds a datanode that counts any byte as
// progress (write-trickle) and costs a run a few events a peer rather
// than hundreds.
func (h *harness) trickle(hc *hostileConn, ticks int) {
	c := hc.c
	hc.drip = nil
	if hc.gone || c == nil {
		return
	}
	if hc.sent == len(hc.msg) {
		// hc.msg was the hoard, which every peer of the run shares: the
		// next packet goes into a buffer of its own. A connection with
		// an odd key sends the rest of its data first, then empty
		// packets that are not the last (data it no longer has to send
		// is no progress either).
		hoarded := hoardMaxWrite/2 + hoardPacket
		off, n := hoarded+ticks, 1
		if hc.key()%2 == 1 {
			off, n = hoardMaxWrite, 0
			if ticks == 0 {
				off, n = hoarded, hoardMaxWrite-hoarded
			}
		}
		hc.msg = model.AppendPacket(hc.tail[:0], model.PacketHeader{Offset: int64(off), Seqno: int64(hoarded/hoardPacket + ticks)},
			blockData(hc.peer.Key+uint64(off), n), model.BytesPerChecksum)
		hc.tail, hc.sent = hc.msg, 0
		ticks++
	}
	if n, err := c.Write(hc.msg[hc.sent:]); err == nil {
		hc.sent += n
	}
	h.armTrickle(hc, ticks)
}

// armTrickle sets the timer of a trickler's next packet (trickle), its
// ticks-th.
func (h *harness) armTrickle(hc *hostileConn, ticks int) {
	period := h.cfg.StallTimeout * 9 / 10
	if time.Duration(ticks)*period > h.cfg.HandleWait+2*h.cfg.StallTimeout {
		period = h.cfg.ReadTimeout * 9 / 10
	}
	hc.drip = h.later(hc, period, func() { h.trickle(hc, ticks) })
}

// hostileDrip sends the next byte of the request just before the read
// timeout would fire, forever.
func (h *harness) hostileDrip(hc *hostileConn) {
	if hc.gone || hc.sent >= len(hc.msg)-1 {
		return // the last byte is never sent: the request never completes
	}
	if n, err := hc.c.Write(hc.msg[hc.sent : hc.sent+1]); err == nil {
		hc.sent += n
	}
	period := h.cfg.ReadTimeout * 9 / 10
	c := hc.c
	hc.drip = h.hostile.loop.AfterFunc(period, func() {
		if hc.c == c {
			h.hostileDrip(hc)
		}
	})
}

// readsAnswer: the peer reads the datanode's answer (an oversized peer
// whose request declares a body past the protocol's bound, a misfit).
func (hc *hostileConn) readsAnswer() bool {
	return hc.peer.Kind == HostileOversized && hc.key()%3 == 0 || hc.peer.Kind == HostileMisfit
}

// oversizedRequest names an oversized peer's request in a failure.
var oversizedRequest = fmt.Sprintf("a request declaring a body of more than %d bytes", model.MaxRequestLen)

// key is what this connection of its peer draws its message from.
func (hc *hostileConn) key() uint64 { return hc.peer.Key + uint64(hc.idx) }

// misfitUnserved: a misfit peer whose request is one the data port does
// not serve (one in four), not a write whose packets do not fit.
func (hc *hostileConn) misfitUnserved() bool {
	return hc.peer.Kind == HostileMisfit && hc.key()%4 == 3
}

// refusal is what the peer's request is, for a failure's message, and
// the status the datanode must refuse it with. (Every answer is judged:
// the texts are constants, not formatted each time.)
func (hc *hostileConn) refusal() (string, model.Status) {
	switch {
	case hc.peer.Kind != HostileMisfit:
		return oversizedRequest, model.StatusErrorInvalid
	case hc.misfitUnserved():
		return "a short-circuit fd request on the data port", model.StatusErrorUnsupported
	}
	return "a write whose packets do not fit its request", model.StatusErrorInvalid
}

// hostileAnswer reads the answer to a request the datanode must refuse
// (refusal), not take for some other request.
func (h *harness) hostileAnswer(hc *hostileConn) {
	hs := h.hostile
	for {
		n, err := hc.c.Read(hs.buf())
		if n > 0 {
			if len(hc.answer) < 2 {
				hc.answer = append(hc.answer, hs.sink[:min(n, 2-len(hc.answer))]...)
			}
			if len(hc.answer) == 2 {
				got := model.Status(binary.BigEndian.Uint16(hc.answer))
				// A misfit's write waits for buffer room like any
				// other; a fault (a disk that stalls the loop past
				// HandleWait) may run that wait out before its packets
				// are judged, and then busy is the answer.
				busy := got == model.StatusError && !h.faultFree && hc.peer.Kind == HostileMisfit && !hc.misfitUnserved()
				if what, want := hc.refusal(); got != want && !busy {
					h.fail(PropRefusal, "%s was answered %v, want %v", what, got, want)
					h.failPeer(hc.peer.Kind)
					return
				}
			}
			continue
		}
		if err != nil && err != model.ErrWouldBlock {
			if hc.peer.Kind == HostileMisfit && len(hc.answer) < 2 && hc.openAt >= 0 && h.faultFree && h.failure == nil {
				// Without faults nothing but the datanode's answer
				// ends a misfit write it accepted (one still in the
				// listen backlog when the datanode stops is reset): a
				// datanode that let the write wait for packets that
				// will not come (ignoring the one that does not fit)
				// closes it on a timeout.
				what, _ := hc.refusal()
				h.fail(PropRefusal, "%s was not answered: its connection ended (%v)", what, err)
				h.failPeer(hc.peer.Kind)
				return
			}
			h.hostileGone(hc)
		}
		return
	}
}

// hostileGone: the peer's connection ended; it comes back after its gap.
func (h *harness) hostileGone(hc *hostileConn) {
	hs := h.hostile
	if hc.drip != nil {
		hc.drip.Stop()
		hc.drip = nil
	}
	if hc.c != nil {
		_ = hc.c.Abort()
	}
	hc.c, hc.gone = nil, true
	if slices.Contains(comeOnce, hc.peer.Kind) {
		// A hoarder does not come back: each return would send its
		// data again, and more rounds of the same wait and cut-off
		// cost a run's time without testing more (returning all the
		// workload long, hoarder seeds took 7 ms each, four times
		// other hostile seeds, and slowed the mix by a fifth); nor does
		// a drainer (returning, they made datanode seeds a third
		// heavier in events).
		return
	}
	// Evicted: closed sooner after it connected than its read or request
	// timeout could have (counted from the dial, which is before the
	// accept, so a timeout is never taken for an eviction). Faults close
	// connections too (a crash, a reset): closed while one may be in
	// force, a peer comes back as usual.
	evicted := hc.openAt >= 0 && hs.loop.Now()-hc.dialAt < min(h.cfg.ReadTimeout, h.cfg.RequestTimeout) &&
		(h.faultFree || h.phase >= phaseRecover)
	hs.loop.AfterFunc(hc.returnGap(evicted), hc.dial)
}

// returnGap is how long a peer stays away once the datanode closed it:
// its drawn gap the first time, doubling with each return up to
// returnGapMax (or the drawn gap, if longer). A peer the datanode closes
// at once (garbage, oversized) came back every millisecond or so for the
// whole run, tens of thousands of times over a long one: repetition that
// was a third of the events of the costliest seeds, and tests nothing
// ten returns a second do not. At ten a second (a 100 ms cap) hostile
// seeds, 38% of the datanode's, still took 63% of its check time; a
// return a second cut their time by a quarter, and every catalogued bug
// is still caught within the seeds it was.
//
// A flood's peer that the datanode evicted stays away up to
// floodReturnGapMax: while the flood overfills the cap, a return only
// makes the datanode evict another idle peer, the same eviction again,
// and the cap stays full with the peer away as with it back. Idle and
// drip floods (5% of datanode seeds) made a fifth of the events of seeds
// 1-3,000 (2.69 M of 12.38 M; the costliest seeds 70,000 to 190,000
// events, most of them peers going round a datanode at its cap); so,
// 2.28 M. One closed by its timeout still comes back within a second,
// so a flood keeps its share of a datanode whose clock, not its cap,
// empties it, and no-conn-cap and tcp-drip fail the seeds they did
// (evict-fresh, with the smaller non-reader buffer, 17 of its first 600
// before and after, seed 39 out and 459 in). Only idle and drip floods
// reach here in drawn cases (the other kinds that come in numbers come
// once). (Slowing every return of a flood, 1.06 M fewer events, lost
// 6 of tcp-drip's 59 seeds of its first 200; timing from the accept as
// the scan saw it took read timeouts for evictions and lost 3 of
// no-conn-cap's 45; taking a fault's close for one lost 2 of
// slowloris's 170.)
func (hc *hostileConn) returnGap(evicted bool) time.Duration {
	g := hc.peer.Gap << min(hc.returns, 16)
	hc.returns++
	most := returnGapMax
	if hc.peer.flood() && evicted {
		most = floodReturnGapMax
	}
	return min(g, max(hc.peer.Gap, most))
}

// scanHostile runs after events, at most once per hostileScan of virtual
// time (and at quiescence): it notices connections the datanode closed
// (their peers reconnect) and checks that none stays open too long.
func (h *harness) scanHostile(force bool) {
	hs := h.hostile
	if hs == nil || hs.loop == nil {
		return
	}
	now := h.w.Now()
	if !force && now < hs.nextScan {
		return
	}
	hs.nextScan = now + hostileScan
	h.sampleWaits()
	bound := h.cfg.stuckBound()
	// Timeouts are judged once no fault is in force: a slow disk or a
	// stalled network may rightly delay them. (In a run with faults,
	// from the moment they stopped.)
	judged := h.faultFree || h.phase >= phaseRecover
	key := hostileScanKey{judged: judged, healedAt: h.healedAt}
	// Past due, or with new terms, every peer is looked at. Otherwise
	// the peers not listed are as the last scan left them, and none is
	// due: looking at them would change nothing. (A peer dialled again
	// has nothing to note until the datanode accepts it, which tells.)
	// The listed ones go in the order a look at every peer takes, so the
	// reconnects they post and the failure they find are the same.
	list := hs.conns
	if force || now > hs.due || key != hs.key || h.opt.scanAllHostile {
		hs.key, hs.due = key, noHostileDue
	} else {
		list = hs.dirty
		slices.SortFunc(list, func(a, b *hostileConn) int { return a.at - b.at })
	}
	for _, hc := range hs.dirty {
		hc.dirty = false
	}
	for _, hc := range list {
		if !h.scanPeer(hc, now, bound, judged) {
			break
		}
	}
	// (Nothing a scan does changes a connection, so none was marked
	// meanwhile.)
	hs.dirty = hs.dirty[:0]
}

// hostileScanKey is what the peers' bounds are worked out under: a
// change of it makes the next scan look at every peer.
type hostileScanKey struct {
	judged   bool
	healedAt time.Duration
}

// noHostileDue is hostileH.due when no open peer is judged.
const noHostileDue = time.Duration(1<<63 - 1)

// markDirty lists hc for the next scan.
func (hs *hostileH) markDirty(hc *hostileConn) {
	if !hc.dirty {
		hc.dirty = true
		hs.dirty = append(hs.dirty, hc)
	}
}

// scanPeer notes what became of hc's connection since the last look (the
// datanode accepted it, heard it close, or closed it) and checks that the
// datanode keeps it no longer than its bounds allow; it reports false
// once a check failed. It lowers hostileH.due to when hc may next break
// a bound.
func (h *harness) scanPeer(hc *hostileConn, now, bound time.Duration, judged bool) bool {
	hs := h.hostile
	if v := h.opt.hostileVisits; v != nil {
		*v++
	}
	if hc.c == nil || hc.gone {
		return true
	}
	id, open, heard := sim.PeerEnd(hc.c)
	if open && heard && hc.quitAt >= 0 && hc.heardAt < 0 {
		// (Counted from the accept: a connection still queued is
		// the listener's business, which availability watches.)
		hc.heardAt = now
		hc.heardWaiting = h.dn != nil && h.dn.ConnWaiting(id)
	}
	switch {
	case open && hc.openAt < 0:
		hc.openAt = now
	case !open && hc.openAt >= 0:
		// The datanode closed it.
		hc.gone = true
		hs.loop.Post(func() {
			if hc.gone && hc.c != nil {
				h.hostileGone(hc)
			}
		})
		return true
	}
	if !open || !judged {
		return true
	}
	since := hc.openAt
	if !h.faultFree {
		since = max(since, h.healedAt)
	}
	gone := PeerGoneBound
	if hc.heardWaiting {
		gone = WaiterGoneBound
	}
	due := since + bound
	if hc.heardAt >= 0 {
		due = min(due, max(hc.heardAt, since)+gone)
	}
	hs.due = min(hs.due, due)
	if now <= due {
		return true
	}
	switch {
	case hc.heardAt >= 0 && now-max(hc.heardAt, since) > gone && !h.onlySendsInTheDark(hc, id):
		waiting := ""
		if hc.heardWaiting {
			waiting = " while its read waited for a pool handle"
			switch hc.peer.Kind {
			case HostileWriteQuitter:
				waiting = " while its write waited for buffer room"
			case HostileDrainer:
				if h.connPhase(id) == "sending" {
					waiting = " while its parked read waited for a pool handle"
				}
			}
		}
		h.fail(PropTimeout, "datanode connection %d still open %v after the FIN of its %s peer arrived%s (bound %v), in phase %s",
			id, now-hc.heardAt, hc.peer.Kind, waiting, gone, h.connPhase(id))
		h.failPeer(hc.peer.Kind)
		return false
	case now-since > bound:
		h.fail(PropTimeout, "datanode connection %d to a stuck %s peer open for %v (bound %v: the sum of its timeouts), in phase %s",
			id, hc.peer.Kind, now-hc.openAt, bound, h.connPhase(id))
		h.failPeer(hc.peer.Kind)
		return false
	}
	return true
}

// onlySendsInTheDark reports whether the datanode's connection id, which
// heard its peer's FIN while not waiting, reads nothing in its phase
// (sending, or flushing an answer) and its path has gone dark (a vanish
// fault). Such a connection learns of the close only from the reset its
// next send draws, which a dark path never brings: it has its timeouts,
// as a stuck peer's connection does. (A connection that reads sees EOF
// itself, and a waiting one hears the FIN: both stay held to their
// bounds.)
func (h *harness) onlySendsInTheDark(hc *hostileConn, id uint64) bool {
	if hc.heardWaiting || !sim.Dark(hc.c) {
		return false
	}
	phase := h.connPhase(id)
	return phase == "sending" || phase == "flushing"
}

// connPhase names the phase of the datanode's connection id, for a
// failure message (a search of the list: not for every scan).
func (h *harness) connPhase(id uint64) string {
	if h.dn == nil {
		return "?"
	}
	return h.dn.ConnPhase(id)
}

// stopHostile ends reconnects at quiescence, including those still under
// way: a peer whose connect has not completed gives it up. A SYN that a
// full accept queue dropped is sent again on TCP's backoff (1, 3, 7, 15
// and 31 s after the first), so a return begun before quiescence could
// otherwise be accepted long after it began, and the datanode rightly
// keeps such a connection for its read timeout, past the leak check
// (check's seeds 36609 and 46409: a datanode restarting for seconds on a
// slow disk left its accept queue full; 61 and 40 idle peers' SYNs
// connected at their sixth try, 10 and 13 s into quiescence).
func (h *harness) stopHostile() {
	hs := h.hostile
	if hs == nil {
		return
	}
	hs.stopped = true
	if hs.loop == nil {
		return
	}
	// On the peers' loop, so no connect is seen complete between this
	// look and the abort: a peer has started once its loop told it the
	// connection is writable, and not before.
	hs.loop.Post(func() {
		for _, hc := range hs.conns {
			if hc.c != nil && !hc.gone && !hc.started {
				_ = hc.c.Abort()
				hc.c, hc.gone = nil, true
			}
		}
	})
}

// hostileContext describes the datanode's load, for availability failures
// under hostile peers (none without them). It is built only for a failure:
// every op of a run with hostile peers would otherwise format it.
func (h *harness) hostileContext() string {
	if len(h.cfg.Hostile) == 0 || h.dn == nil || h.dnProc.Crashed() {
		return ""
	}
	fds := h.dnProc.FDs()
	s := fmt.Sprintf(" (datanode: %d connections, %d/%d fds", h.dn.Conns(), fds.Open, fds.Limit)
	if pool := h.dn.Pool(); pool != nil {
		s += fmt.Sprintf(", %d/%d handles in use, %d reads waiting for one", pool.InUse(), h.cfg.PoolMax/2, pool.Waiting())
	}
	return s + ")"
}

// fewerHostile tries halving the number of peers of each hostile kind.
func (s *shrinker) fewerHostile() bool {
	shrunk := false
	for i := range s.best.Config.Hostile {
		for s.best.Config.Hostile[i].Count > 1 && s.runs < s.budget {
			cand := s.best
			cand.Config.Hostile = append([]HostilePeer(nil), s.best.Config.Hostile...)
			cand.Config.Hostile[i].Count /= 2
			if !s.try(cand) {
				break
			}
			shrunk = true
		}
	}
	return shrunk
}

// failPeer tags the failure just recorded with the hostile peer kind it
// is about.
func (h *harness) failPeer(kind string) {
	if h.failure != nil && h.failurePeer == "" {
		h.failurePeer = kind
	}
}

// hostileLoad names what hostile peers exhaust now: "pool" (reads wait for
// a handle), "fds" (the datanode's fd table is full), or "".
func (h *harness) hostileLoad() string {
	if h.dn == nil || h.dnProc.Crashed() {
		return ""
	}
	if pool := h.dn.Pool(); pool != nil && pool.Waiting() > 0 {
		return "pool"
	}
	if fds := h.dnProc.FDs(); fds.Open >= fds.Limit {
		return "fds"
	}
	return ""
}
