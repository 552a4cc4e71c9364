package properties

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// Short-circuit reads, drawn per seed: a few reader threads sharing one
// short-circuit cache (shards and capacity drawn) read blocks while a
// writer replaces, appends to, deletes and re-creates them. Checked:
//
//   - no stale read (linearizability): a read returns the contents of the
//     last change that returned before it started, or of a change
//     concurrent with it, never older data (through a cached fd or
//     otherwise), nor bytes rotted on disk (scrot.go);
//   - fd bound: the client's passed fds never exceed 2 × cache capacity +
//     2 × reads in flight, and at rest the cache holds at most one
//     replica per block;
//   - availability: a read fails only when the block may be missing or too
//     short (a delete concurrent with it or before it), or when a fault
//     was in force while it ran (a full fd table, the datanode down): a
//     failed short-circuit attempt falls back to TCP, never fails the read;
//     a checksum error fails it only where rot may be (and a read that
//     may meet rot is excused from local-reads, it alone: rot is no
//     fault, and its checksum error leaves short-circuit on);
//   - local-reads: until the first fault of the case, a read of a block
//     that is there is served from the replica's passed fds, never over
//     TCP (a short-circuit failure with nothing wrong turns short-circuit
//     off for the path: every read after it pays for TCP); and so again
//     once every fault has ended, model.AcceptBackoff has passed, no read
//     is in flight that began before or that a fault or reset has
//     overlapped since, no reset is armed and DisableFor has passed since
//     the last failure (short-circuit comes back);
//   - sc-off: after a failed fd request that is not a refusal, no fetch
//     asks the datanode for DisableFor: not the failed reader's next,
//     nor, once the path is off, any reader's; and once DisableFor has
//     passed since the last failure, every fetch asks (a refusal, a
//     fetch that found the path off, or a replica that failed its read
//     through the passed fds, turns nothing off);
//   - sc-refusal: a rogue local client's malformed or forbidden request
//     (scrogue.go) is answered with an error and hung up, never served;
//   - hostile-availability: while a flooding (domain or TCP), dripping or
//     squatting rogue holds all it got, a new local client's REQUEST_SHM
//     on a new domain connection is answered with a segment within
//     scProbeBound, model.IdleGrace and a little (scprobe.go), unless a
//     fault was in force;
//   - sc-stats: the counters agree with what the harness saw and with
//     each other (reads, hits and misses, local and TCP reads, inserts,
//     misses served by another reader's fetch, never two fetches of one
//     block at once; without faults, fds and segments passed and
//     received);
//   - leak-freedom: after closing, the client holds no passed fd, segment
//     or extra fd, and the datanode no segment, slot or extra fd.

// The short-circuit system's own properties: no read leaves the
// short-circuit path with nothing wrong; the counters run sc-read reports
// agree with what happened.
const (
	PropLocalReads = "local-reads"
	PropSCStats    = "sc-stats"
	PropSCOff      = "sc-off"
)

// scBlocks is how many blocks a short-circuit case reads and changes.
const scBlocks = 3

// scDatanodeFDs is the fd table of the datanode the readers and rogues
// use: half Linux's usual 1,024, and its bounds with it (MaxConnsPerUser
// is half the table, the connection cap what the table leaves after its
// reserve, and scSegmentsPerUser half DefaultMaxSegmentsPerUser, so that
// a user's segments and their connections take the same share of it).
// The rogues' floods, squats and drips go on until those bounds refuse
// them, so their connections, some 80% of an sc seed's events at 1,024,
// halve (check's seeds 1-1,000: 36% fewer events at c99495f), and what
// they test (a bound reached, the cap full, an eviction) is what it was:
// every catalogued bug is caught in seeds 1-200 as often (a seed less
// at most) or more.
const (
	scDatanodeFDs     = 512
	scSegmentsPerUser = shortcircuit.DefaultMaxSegmentsPerUser / 2
)

// SCCase is one drawn short-circuit case: everything a run depends on.
type SCCase struct {
	Seed uint64 `json:"seed"`
	Bug  string `json:"bug,omitempty"`
	// Ignore lists properties this run does not enforce (check --ignore).
	Ignore   []string `json:"ignore,omitempty"`
	Shards   int      `json:"shards"`
	Capacity int      `json:"capacity"`
	// Expiry is how long an unused replica stays cached (0: HDFS's five
	// minutes, which no case outlives).
	Expiry time.Duration `json:"expiry,omitempty"`
	// ReadTimeout is how long the datanode keeps an idle domain
	// connection (0: a minute, which no case outlives): a short one
	// closes connections the client has cached.
	ReadTimeout time.Duration `json:"read_timeout,omitempty"`
	// Timeout is the readers' timeout for a domain-socket exchange and
	// for a TCP read that makes no progress (0: a minute): drawn short
	// with pauses, so that a paused datanode's late answers find the
	// readers gone.
	Timeout time.Duration `json:"timeout,omitempty"`
	// DisableFor is how long a reader keeps short-circuit off after a
	// failed attempt (0: HDFS's ten minutes, which no case outlives):
	// drawn short with pauses, whose timeouts would otherwise leave the
	// rest of the case to TCP, so short-circuit comes back within it.
	DisableFor time.Duration `json:"disable_for,omitempty"`
	// Backlog is the datanode's domain socket accept queue (0:
	// model.DefaultBacklog): at 1 (which holds two) readers connecting at
	// once find it full and must wait for room.
	Backlog int `json:"backlog,omitempty"`
	// MaxConns is the datanode's connection cap (0: the default, 4,096,
	// lowered to its fd table's room), which domain connections share
	// with TCP ones (Datanode.TakePeer): drawn as 1, whose one place is
	// kept for TCP clients, so that no domain connection fits and each
	// is refused.
	MaxConns int    `json:"max_conns,omitempty"`
	Readers  int    `json:"readers"`
	Ops      []SCOp `json:"ops"`
}

// SCOp is one op, Gap after the one before. A change to a block still
// being changed runs as a read; an append to or a delete of a deleted
// block re-creates it. An idle-read is a read of Block at Off by every
// reader at once, each meeting the domain connection it cached closed by
// the datanode in the same instant (Server.CloseIdle), which the client
// must retry on a fresh one (and, with a Backlog of 1, wait for room in
// the accept queue): not a fault. The rest are faults, drawn swarm-style
// (each kind on in some cases, off in others):
//
//   - squeeze: the datanode's fd table fills until Left fds are free, for
//     Hold, so opening a block's files fails part way (EMFILE);
//   - client-squeeze: the same in the client, so passed fds arrive at a
//     full table: the kernel drops them (MSG_CTRUNC), or a domain
//     connection cannot be made;
//   - reset: the datanode's next fd pass resets its domain connection,
//     before the send or (After) with the message and fds lost in flight;
//   - crash: the datanode crashes while the client caches its fds (they
//     stay readable, the segment is gone) and restarts after Hold;
//   - pause: the datanode stops for Hold (sim.Process.Pause), its kernel
//     still taking requests: readers whose Timeout passes give up, and
//     the datanode answers them once it runs again, to connections that
//     are gone;
//   - rot: a bit of Block's data file (Meta: of its meta file) flips on
//     the datanode's disk (scrot.go).
type SCOp struct {
	Gap    time.Duration `json:"gap"`
	Op     string        `json:"op"` // read, idle-read, replace, append, delete, squeeze
	Block  uint64        `json:"block"`
	Reader int           `json:"reader,omitempty"`
	Off    int64         `json:"off,omitempty"`
	Data   uint64        `json:"data,omitempty"`  // seeds the new contents
	Left   int           `json:"left,omitempty"`  // squeeze: fds left free
	Hold   time.Duration `json:"hold,omitempty"`  // squeeze: for how long; crash: down for how long; pause: stopped for how long
	After  bool          `json:"after,omitempty"` // reset: after the fds are sent
	Rogue  string        `json:"rogue,omitempty"` // rogue: the attack (SCRogueKinds)
	// User is the rogue's local user (a process of its own each: sim's
	// SO_PEERCRED), 0 to scRogueUsers-1; 0 is the process every rogue
	// op drawn before users existed runs in.
	User int  `json:"user,omitempty"`
	Meta bool `json:"meta,omitempty"` // rot: the chunk's checksum, not its data
	// Every is a dripping rogue's time between bytes.
	Every time.Duration `json:"every,omitempty"`
}

// SCBug is a catalogued short-circuit bug.
type SCBug struct {
	Name, What, Catches string
	server              shortcircuit.ServerBugs
	cache               shortcircuit.CacheBugs
	client              shortcircuit.ClientBugs
	tcp                 model.ClientBugs // the readers' TCP fallback's
	datanode            model.DatanodeBugs
}

// SCBugs is the short-circuit catalogue: the bugs the drawn cases find.
var SCBugs = []SCBug{
	{
		Name: "HDFS-7915", Catches: PropLeakFree,
		What:   "the datanode counts a slot handed over once its send returns (no receipt from the client), so when the reply with the fds is lost the client frees the slot and the datanode keeps it",
		server: shortcircuit.ServerBugs{KeepSlotOnLostReply: true},
	},
	{
		Name: "HDFS-17978", Catches: PropLeakFree,
		What:   "when opening the meta file fails after the data file was opened, the datanode never closes the data fd",
		server: shortcircuit.ServerBugs{LeakDataOnMetaFailure: true},
	},
	{
		Name: "HDFS-16535", Catches: PropLocalReads,
		What:   "with two datanodes on the host, a slot's release goes to the other datanode's domain socket, so the one that registered it keeps it: the client, told no such slot, frees it and hands it to the next replica, whose fd request the datanode refuses (slot in use), and the read goes over TCP",
		client: shortcircuit.ClientBugs{ReleaseToWrongPath: "/run/dn2_socket"},
	},
	{
		Name: "sc-shard-mismatch", Catches: PropFDBounds,
		What:  "the cache picks an insert's shard by block+stamp and a lookup's by block, so after a bump a replica lands where lookups never look and its fds stay cached beside the new one",
		cache: shortcircuit.CacheBugs{InsertShardByStamp: true},
	},
	{
		Name: "sc-second-segment", Catches: PropLeakFree,
		What:   "the datanode reads requests on a segment's connection, so a rogue's second REQUEST_SHM there is served and the first segment is never freed (found by check's rogue clients)",
		server: shortcircuit.ServerBugs{ServeOnSegmentConn: true},
	},
	{
		Name: "sc-fetch-per-reader", Catches: PropSCStats,
		What:  "every reader that misses fetches its own replica, as the client did before HDFS's ShortCircuitCache shared one fetch per block (fetchOrCreate): readers that miss a block together each take a slot and two fds (caught mostly by the cache's own count of fetches under way; what the datanode sees alone, two fd requests for a block from one segment before the first's receipt, catches 4 of the first 100 seeds)",
		cache: shortcircuit.CacheBugs{FetchPerReader: true},
	},
	{
		Name: "sc-segment-squat", Catches: PropSCRefusal,
		What:   "the datanode grants every REQUEST_SHM, whatever the user already holds, and a segment's connection never times out: a local user who asks for segment after segment fills the datanode's connection cap (before the cap counted domain connections, its fd table), so no one else's connection is accepted (another rogue's request goes unanswered: sc-refusal, seeds 5, 20 and 131) and the honest readers' connects wait, their reads going over TCP (local-reads, seed 44) or, before the cap, failing to open the block (availability), and a new local client gets no segment in time (hostile-availability)",
		server: shortcircuit.ServerBugs{NoSegmentBound: true},
	},
	{
		Name: "sc-conn-unbounded", Catches: PropAvailability,
		What:   "the datanode accepts every domain connection, however many its user holds open, and counts none against its connection cap (sc-conns-uncapped too, as before either bound): a connection that sends nothing keeps its fd until the read timeout (a minute), so a local user who opens connection after connection fills the datanode's fd table, and the honest readers' fd requests fail to open the block, their reads going over TCP (local-reads) or failing (availability), and another rogue's request goes unanswered (sc-refusal), or a new local client gets no segment in time (hostile-availability) (found by check's flooding rogue; with the cap, which closes connections silent for model.IdleGrace to make room, one user's flood does no harm, and the per-user bound alone is not caught)",
		server: shortcircuit.ServerBugs{NoConnBound: true, UncappedConns: true},
	},
	{
		Name: "sc-conns-uncapped", Catches: PropAvailability,
		What:   "the datanode counts no domain connection against its connection cap (dfs.datanode.max.transfer.threads, lowered to keep fds spare), only each user's against per-user bounds: local users who flood or squat together, each within its bounds, fill the datanode's fd table, and the honest readers' block opens fail, their reads going over TCP (local-reads) and failing there too (availability), and a new local client gets no segment in time (hostile-availability) (found by check's rogues drawn as several users; availability first since the datanode's table is scDatanodeFDs, which two users' connections fill)",
		server: shortcircuit.ServerBugs{UncappedConns: true},
	},
	{
		Name: "sc-evict-own-kind", Catches: PropHostileAvail,
		What:     "the datanode makes room in its shared connection cap from idle connections of the newcomer's kind only (each endpoint evicting its own, as before one eviction served both): a rogue's idle TCP connections fill the cap, and a domain connection waits for the flood to end, so a new local client gets no segment in time (hostile-availability) and a reader's read goes over TCP (local-reads) (found by check's TCP-flooding rogue; without it, 0 of seeds 1-1,000)",
		datanode: model.DatanodeBugs{EvictOwnKind: true},
	},
	{
		Name: "sc-drip", Catches: PropHostileAvail,
		What:   "the datanode makes room in its connection cap only from domain connections that never sent a byte: local users who each open connection after connection, within MaxConnsPerUser, and drip a REQUEST_SHM into every one a byte at a time, each byte restarting the read timeout, fill the cap together with connections nothing closes until they let go, and a new local client gets no segment in time (hostile-availability) (found by check's dripping rogue)",
		server: shortcircuit.ServerBugs{EvictSilentOnly: true},
	},
	{
		Name: "sc-never-off", Catches: PropSCOff,
		What:   "a failed short-circuit attempt turns the path off for no time (the window computed as now − DisableFor), so every miss after a failure asks the datanode again, waiting out a timeout each time it is down or paused",
		client: shortcircuit.ClientBugs{NeverDisable: true},
	},
	{
		Name: "sc-off-extended", Catches: PropSCOff,
		What:   "a fetch that finds short-circuit off is taken for a failure and turns it off again from then, so with misses coming more often than DisableFor the path stays off for good once it failed: a fetch finds it off after the last failure's DisableFor (sc-off), and reads of blocks that are there go over TCP with every fault long over (local-reads, which alone catches 11 of the first 200 seeds)",
		client: shortcircuit.ClientBugs{OffExtendedByTCP: true},
	},
	{
		Name: "sc-off-on-checksum", Catches: PropSCOff,
		What:   "a checksum error reading a replica through its passed fds (rot on the datanode's disk) turns short-circuit to the path off for DisableFor, as a failed fd request does, though the domain socket is fine (HDFS's DFSInputStream reports the block corrupt and tries the next replica; only BlockReaderFactory's fd request disables the path): a fetch finds the path off with no real failure's DisableFor in force (sc-off), and reads of other blocks, or of the block's sound chunks, go over TCP (local-reads) (found by the rot fault)",
		client: shortcircuit.ClientBugs{OffOnLocalError: true},
	},
	{
		Name: "sc-local-unverified", Catches: PropLinearizable,
		What:   "the client reads a replica through its passed fds without verifying its checksums, though skip.checksum is off: a chunk rotted on the datanode's disk comes back as good data (found by the rot fault)",
		client: shortcircuit.ClientBugs{LocalUnverified: true},
	},
	{
		Name: "sc-fallback-first-chunk", Catches: PropLinearizable,
		What: "the readers' TCP fallback verifies only the first chunk of each packet: a read that fails short-circuit on a rotted chunk and falls back gets the rot from the datanode as good data when it is not the packet's first (found by the rot fault)",
		tcp:  model.ClientBugs{VerifyFirstChunk: true},
	},
	{
		Name: "sc-wait-no-room", Catches: PropLeakFree,
		What:   "a domain connection the datanode's cap has no room for at all (MaxConns 1: its one place is kept for TCP clients) is kept waiting, unread, for room, as when the cap is merely full: room never comes, so the client waits out its timeout before it reads over TCP, the endpoint accepts nothing more, and the waiting connection's fd stays held after its client gave up (leak-freedom at rest; found by a read-scenario test with a 16-fd table, then by check's tight cap)",
		server: shortcircuit.ServerBugs{WaitWhenNoneFit: true},
	},
	{
		Name: "HDFS-6750", Catches: PropLinearizable,
		What:   "deleting a replica does not clear its slots' valid bit, so clients keep reading the unlinked replica through cached fds",
		server: shortcircuit.ServerBugs{NoInvalidateOnDelete: true},
	},
}

// LookupSCBug finds a catalogued short-circuit bug.
func LookupSCBug(name string) (SCBug, bool) {
	for _, b := range SCBugs {
		if b.Name == name {
			return b, true
		}
	}
	return SCBug{}, false
}

// DrawSC draws seed's short-circuit case.
func DrawSC(src Source, seed uint64, bug string) (SCCase, error) {
	if bug != "" {
		if _, ok := LookupSCBug(bug); !ok {
			return SCCase{}, fmt.Errorf("unknown short-circuit bug %q", bug)
		}
	}
	d := drawer{src}
	c := SCCase{Seed: seed, Bug: bug}
	c.Shards = d.n(1, 3, "sc_shards")
	c.Capacity = c.Shards + d.n(0, 3, "sc_capacity")
	c.Readers = d.n(1, 3, "sc_readers")
	ops := d.n(20, 39, "sc_ops")
	for i := 0; i < ops; i++ {
		op := SCOp{
			Gap:   time.Duration(d.n(0, 2999, "sc_gap")) * time.Microsecond,
			Block: uint64(d.n(1, scBlocks, "sc_block")),
		}
		switch k := d.n(0, 9, "sc_kind"); {
		case k < 6:
			op.Op = "read"
			op.Reader = d.n(0, c.Readers-1, "sc_reader")
			op.Off = int64(d.n(0, 2047, "sc_off"))
		case k < 8:
			op.Op = "replace"
		case k == 8:
			op.Op = "append"
		default:
			op.Op = "delete"
		}
		if op.Op != "read" {
			op.Data = seed<<16 | uint64(i)
		}
		c.Ops = append(c.Ops, op)
	}
	// Squeezes are drawn after the ops, so a case without one draws the
	// same ops as before squeezes existed.
	if d.chance(30, "sc_squeeze") {
		at := d.n(0, len(c.Ops), "sc_squeeze_at")
		sq := SCOp{Op: "squeeze", Block: 1, Left: d.n(1, 3, "sc_squeeze_left"), Hold: time.Duration(d.n(1, 20, "sc_squeeze_hold")) * time.Millisecond}
		c.Ops = append(c.Ops[:at], append([]SCOp{sq}, c.Ops[at:]...)...)
	}
	// Later fault kinds are drawn after, for the same reason.
	if d.chance(30, "sc_reset") {
		for k := d.n(1, 3, "sc_resets"); k > 0; k-- {
			op := SCOp{Op: "reset", Block: 1, After: d.chance(50, "sc_reset_after")}
			c.Ops = scInsert(c.Ops, d.n(0, len(c.Ops), "sc_reset_at"), op)
		}
	}
	if d.chance(30, "sc_client_squeeze") {
		for k := d.n(1, 2, "sc_client_squeezes"); k > 0; k-- {
			op := SCOp{Op: "client-squeeze", Block: 1, Left: d.n(0, 2, "sc_client_left"), Hold: time.Duration(d.n(1, 20, "sc_client_hold")) * time.Millisecond}
			c.Ops = scInsert(c.Ops, d.n(0, len(c.Ops), "sc_client_squeeze_at"), op)
		}
	}
	if d.chance(20, "sc_crash") {
		op := SCOp{Op: "crash", Block: 1, Hold: time.Duration(d.n(1, 20, "sc_crash_down")) * time.Millisecond}
		c.Ops = scInsert(c.Ops, d.n(0, len(c.Ops), "sc_crash_at"), op)
	}
	// A short expiry, so the cache cleaner runs within the case.
	if d.chance(30, "sc_expiry") {
		c.Expiry = time.Duration(d.n(1, 30, "sc_expiry_ms")) * time.Millisecond
	}
	if d.chance(30, "sc_read_timeout") {
		c.ReadTimeout = time.Duration(d.n(1, 20, "sc_read_timeout_ms")) * time.Millisecond
	}
	if d.chance(30, "sc_rogue") {
		for k := d.n(1, 3, "sc_rogues"); k > 0; k-- {
			op := SCOp{Op: "rogue", Block: uint64(d.n(1, scBlocks, "sc_rogue_block")), Rogue: SCRogueKinds[d.n(0, scFirstRogueKinds-1, "sc_rogue_kind")],
				Hold: time.Duration(d.n(1, 10, "sc_rogue_hold")) * time.Millisecond}
			c.Ops = scInsert(c.Ops, d.n(0, len(c.Ops), "sc_rogue_at"), op)
		}
	}
	if d.chance(25, "sc_pause") {
		for k := d.n(1, 2, "sc_pauses"); k > 0; k-- {
			op := SCOp{Op: "pause", Block: 1, Hold: time.Duration(d.n(1, 30, "sc_pause_ms")) * time.Millisecond}
			from := 0
			if d.chance(30, "sc_hang") {
				// A hang: the datanode says nothing for longer than
				// any read may wait (scReadBound). Every op after it
				// meets it, so it comes in the last quarter.
				op.Hold = time.Duration(d.n(1, 3, "sc_hang_s")) * time.Second
				from = len(c.Ops) * 3 / 4
			}
			c.Ops = scInsert(c.Ops, d.n(from, len(c.Ops), "sc_pause_at"), op)
		}
		c.Timeout = time.Duration(d.n(2, 10, "sc_timeout_ms")) * time.Millisecond
		c.DisableFor = time.Duration(d.n(1, 20, "sc_disable_ms")) * time.Millisecond
	}
	// Drawn last: every reader reads at once, meeting the domain
	// connection it cached closed by the datanode in the same instant, as
	// an idle close crosses a reuse; and, with them, an accept queue that
	// holds two, so readers connecting at once must wait for room.
	if d.chance(30, "sc_idle_read") {
		for k := d.n(1, 3, "sc_idle_reads"); k > 0; k-- {
			op := SCOp{Op: "idle-read", Block: uint64(d.n(1, scBlocks, "sc_idle_block")), Off: int64(d.n(0, 2047, "sc_idle_off"))}
			c.Ops = scInsert(c.Ops, d.n(0, len(c.Ops), "sc_idle_at"), op)
		}
		if d.chance(50, "sc_backlog") {
			c.Backlog = 1
		}
	}
	// Drawn last: reads at a block's end (4,096 bytes plus 0-2 appends).
	if d.chance(30, "sc_edge_reads") {
		for i := range c.Ops {
			if c.Ops[i].Op == "read" && d.chance(30, "sc_edge_read") {
				end := 4096 + 100*d.n(0, 2, "sc_edge_len")
				c.Ops[i].Off = int64(end + []int{-513, -512, -511, -1, 0, 1}[d.n(0, 5, "sc_edge_at")])
			}
		}
	}
	// Drawn last: the rogue kinds after the first draw's (a client that
	// pipelines its requests; a squatter holding segments), held longer,
	// so that the readers read while a squatter holds its segments.
	if d.chance(25, "sc_rogue_late") {
		for k := d.n(1, 2, "sc_rogues_late"); k > 0; k-- {
			op := SCOp{Op: "rogue", Block: uint64(d.n(1, scBlocks, "sc_rogue_late_block")),
				Rogue: SCRogueKinds[scFirstRogueKinds+d.n(0, scLateRogueKinds-1, "sc_rogue_late_kind")],
				Hold:  time.Duration(d.n(5, 30, "sc_rogue_late_hold")) * time.Millisecond}
			c.Ops = scInsert(c.Ops, d.n(0, len(c.Ops), "sc_rogue_late_at"), op)
		}
	}
	// Drawn last: short-circuit off for 1-20 ms after a failure in a case
	// without pauses too (their timeouts stay a minute), so that it
	// comes back within the case after the other faults (local-reads).
	if c.DisableFor == 0 && d.chance(30, "sc_disable_short") {
		c.DisableFor = time.Duration(d.n(1, 20, "sc_disable_short_ms")) * time.Millisecond
	}
	// Drawn last: a rogue that floods the domain socket with connections
	// that send nothing, held while the readers read.
	if d.chance(20, "sc_rogue_flood") {
		op := SCOp{Op: "rogue", Block: 1, Rogue: "flood", Hold: time.Duration(d.n(5, 30, "sc_rogue_flood_hold")) * time.Millisecond}
		c.Ops = scInsert(c.Ops, d.n(0, len(c.Ops), "sc_rogue_flood_at"), op)
	}
	drawSCRot(d, &c)
	drawSCRogueUsers(d, &c)
	drawSCTCPFlood(d, &c)
	drawSCDrip(d, &c)
	// Drawn after everything: a cap with no room for a domain connection.
	if d.chance(10, "sc_max_conns") {
		c.MaxConns = 1
	}
	return c, c.Validate()
}

// scReadBound bounds a read, in the readers' timeouts (SCCase.Timeout),
// whatever the faults: each step of a read (a segment's exchange, an fd
// exchange, the TCP fallback's connect and reads) gives up after one
// timeout without progress, and a read may wait its turn behind another
// reader's exchange. A read that waits on a hung datanode until it runs
// again takes seconds.
const scReadBound = 50

func scInsert(ops []SCOp, at int, op SCOp) []SCOp {
	return append(ops[:at], append([]SCOp{op}, ops[at:]...)...)
}

// scMaxStart bounds when a case's last op starts (the sum of the gaps):
// well inside the hour RunSC runs the world for, with room for the holds
// and the checks at rest. (DrawSC's come to 117 ms at most: 39 ops' gaps
// under 3 ms.) Past the hour, the run's limit was reported as a harness
// failure.
const scMaxStart = 10 * time.Minute

// Validate checks a case read from a file.
func (c *SCCase) Validate() error {
	if c.Bug != "" {
		if _, ok := LookupSCBug(c.Bug); !ok {
			return fmt.Errorf("sc case: unknown bug %q", c.Bug)
		}
	}
	switch {
	case c.Shards < 1 || c.Shards > 1024:
		return fmt.Errorf("sc case: shards %d, want 1..1024", c.Shards)
	case c.Capacity < c.Shards || c.Capacity > 1<<16:
		return fmt.Errorf("sc case: capacity %d, want shards..65536", c.Capacity)
	case c.Readers < 1 || c.Readers > 64:
		return fmt.Errorf("sc case: readers %d, want 1..64", c.Readers)
	case c.Expiry < 0 || c.Expiry > time.Hour:
		return fmt.Errorf("sc case: expiry %v, want 0..1h", c.Expiry)
	case c.ReadTimeout < 0 || c.ReadTimeout > time.Hour:
		return fmt.Errorf("sc case: read timeout %v, want 0..1h", c.ReadTimeout)
	case c.Timeout < 0 || c.Timeout > time.Hour:
		return fmt.Errorf("sc case: timeout %v, want 0..1h", c.Timeout)
	case c.DisableFor < 0 || c.DisableFor > time.Hour:
		return fmt.Errorf("sc case: disable-for %v, want 0..1h", c.DisableFor)
	case c.Backlog < 0 || c.Backlog > 1024:
		return fmt.Errorf("sc case: backlog %d, want 0..1024", c.Backlog)
	case c.MaxConns < 0 || c.MaxConns > 1<<16:
		return fmt.Errorf("sc case: max conns %d, want 0..65536", c.MaxConns)
	case len(c.Ops) > 10000:
		return fmt.Errorf("sc case: %d ops, want at most 10000", len(c.Ops))
	}
	if err := checkIgnore("sc case", c.Ignore, SCProperties); err != nil {
		return err
	}
	var t time.Duration
	for i, op := range c.Ops {
		switch {
		case op.Gap < 0 || op.Gap > time.Minute:
			return fmt.Errorf("sc case: op %d: gap %v, want 0..1m", i, op.Gap)
		case op.Block < 1 || op.Block > scBlocks:
			return fmt.Errorf("sc case: op %d: block %d, want 1..%d", i, op.Block, scBlocks)
		case op.Reader < 0 || op.Reader >= c.Readers:
			return fmt.Errorf("sc case: op %d: reader %d, want 0..%d", i, op.Reader, c.Readers-1)
		case op.Off < 0 || op.Off > 8192:
			return fmt.Errorf("sc case: op %d: offset %d, want 0..8192", i, op.Off)
		case op.Left < 0 || op.Left > 64:
			return fmt.Errorf("sc case: op %d: left %d, want 0..64", i, op.Left)
		case op.Hold < 0 || op.Hold > time.Minute:
			return fmt.Errorf("sc case: op %d: hold %v, want 0..1m", i, op.Hold)
		}
		if t += op.Gap; t > scMaxStart {
			return fmt.Errorf("sc case: op %d starts at %v, want at most %v", i, t, scMaxStart)
		}
		switch op.Op {
		case "read", "idle-read", "replace", "append", "delete", "squeeze", "client-squeeze", "reset", "crash", "pause", "rogue", "rot":
		default:
			return fmt.Errorf("sc case: op %d: op %q, want read, idle-read, replace, append, delete, squeeze, client-squeeze, reset, crash, pause, rogue or rot", i, op.Op)
		}
		if op.Op == "rot" && op.Off >= scRotSpan {
			return fmt.Errorf("sc case: op %d: rot at %d, want 0..%d (never a block's last chunk)", i, op.Off, scRotSpan-1)
		}
		if (op.Op == "rogue") != (op.Rogue != "") || op.Rogue != "" && !slices.Contains(SCRogueKinds, op.Rogue) {
			return fmt.Errorf("sc case: op %d: %s with rogue %q, want a rogue op to have one of %s", i, op.Op, op.Rogue, strings.Join(SCRogueKinds, ", "))
		}
		if (op.Rogue == "drip") != (op.Every > 0) || op.Every < 0 || op.Every > time.Second {
			return fmt.Errorf("sc case: op %d: %s %q every %v, want 1ns..1s on a drip, none on any other op", i, op.Op, op.Rogue, op.Every)
		}
		if op.User < 0 || op.User >= scRogueUsers || op.User > 0 && op.Op != "rogue" {
			return fmt.Errorf("sc case: op %d: %s by user %d, want 0, or 0..%d on a rogue op", i, op.Op, op.User, scRogueUsers-1)
		}
		// What drawSCRogueUsers and drawSCTCPFlood never draw: rogues
		// that fill the cap faster than its oldest connection ripens,
		// beside readers whose timeout a newcomer's wait may outlast.
		fills := op.Rogue == "tcp-flood" || op.User > 0 && (op.Rogue == "flood" || op.Rogue == "squat")
		if fills && c.shortTimeout() {
			return fmt.Errorf("sc case: op %d: rogue %q by user %d with the readers' timeout %v, want none within scProbeBound (%v): a reader may rightly wait that long", i, op.Rogue, op.User, c.Timeout, scProbeBound)
		}
	}
	return nil
}

// SCResult is what a short-circuit run gave.
type SCResult struct {
	Property, Message string // empty when every property held
	Events            uint64
	TraceHash         string
	// SimEvents are the events the simulator processed
	// (sim.World.Events, what BenchmarkSimEvents counts); Events counts
	// the trace's records.
	SimEvents uint64
	// Readers are the readers' counters summed, as the checks at rest
	// found them (zero if the run ended before).
	Readers shortcircuit.ClientStats
}

type scVersion struct {
	start, end time.Duration
	data       []byte // nil: deleted
	// also holds the other contents the change may have left. An append
	// grows whatever the block holds when it applies, and after a change
	// whose effect is unknown (sent, then the datanode crashed) that is
	// either the contents before that change or after it: data is the
	// append to the last change's contents (the base the next op is
	// chosen by), also the append to each other possible base.
	also [][]byte
}

type scRun struct {
	prop, msg string
	finished  bool // the checks at rest ran
	ignore    []string
	readers   shortcircuit.ClientStats
}

func (r *scRun) fail(prop, format string, a ...any) {
	if r.prop == "" && !slices.Contains(r.ignore, prop) {
		r.prop, r.msg = prop, fmt.Sprintf(format, a...)
	}
}

// RunSC runs a short-circuit case in the simulator and checks it.
func RunSC(c SCCase) *SCResult { return RunSCTraced(c, nil) }

// RunSCTraced is RunSC writing every event as a JSON line to out (nil:
// nowhere), for replay's HTML view.
func RunSCTraced(c SCCase, out io.Writer) *SCResult { return runSC(c, out, hashed) }

// RunSCUnhashed is RunSC without the trace hash (sim's Config.Unhashed;
// TraceHash says "unhashed"), for check's first run of a seed, which it
// runs again, hashed, to compare or to save.
func RunSCUnhashed(c SCCase) *SCResult { return runSC(c, nil, unhashed) }

func runSC(c SCCase, out io.Writer, hashing hashing) *SCResult {
	var bug SCBug
	if c.Bug != "" {
		bug, _ = LookupSCBug(c.Bug)
	}
	w := sim.New(worldConfig(c.Seed, 20_000_000, hashing))
	if out != nil {
		w.TraceTo(out)
	}
	defer useArena(w)()
	run := &scRun{ignore: c.Ignore}
	versions := map[uint64][]scVersion{}
	for b := uint64(1); b <= scBlocks; b++ {
		versions[b] = []scVersion{{data: model.BlockContent(b, 4096)}}
	}
	var dnProc model.Process
	var dn *model.Datanode
	var srv *shortcircuit.Server
	var dnBase int
	// peersFit: the datanode's cap has room for a domain connection at
	// all (Datanode.PeersFit). At MaxConns 1 it has none, and refuses
	// each: every read goes over TCP, and no newcomer gets a segment.
	peersFit := true
	var dn2Proc model.Process
	var dn2 *model.Datanode
	var srv2 *shortcircuit.Server
	// starts counts the datanode's incarnations; up, if set, runs on the
	// client's loop once a restarted datanode serves again.
	starts := 0
	var up func()
	_, err := w.Spawn("datanode", model.ProcessConfig{FDLimit: scDatanodeFDs}, func(p model.Process) {
		dnProc = p
		starts++
		if starts == 1 {
			store := model.NewBlockStore(p.Disk(), "data")
			for b := uint64(1); b <= scBlocks; b++ {
				if _, err := store.Write(b, versions[b][0].data); err != nil {
					w.Fail(err)
					return
				}
			}
		}
		var err error
		if dn, err = model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010", Keepalive: 100 * time.Millisecond, PoolIdle: 50 * time.Millisecond, MaxConns: c.MaxConns, Bugs: bug.datanode}); err != nil {
			w.Fail(err)
			return
		}
		if srv, err = shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/dn_socket", MaxSegmentsPerUser: scSegmentsPerUser, ReadTimeout: c.ReadTimeout, Backlog: c.Backlog, Bugs: bug.server}); err != nil {
			w.Fail(err)
			return
		}
		dnBase = p.FDs().Open
		peersFit = dn.PeersFit()
		if starts > 1 {
			if up != nil {
				up()
			}
			return
		}
		// A second datanode shares the host (and /run): the readers use
		// only the first, so the second must never see a request of theirs.
		w.Spawn("datanode2", model.ProcessConfig{}, func(p2 model.Process) {
			dn2Proc = p2
			var err error
			if dn2, err = model.StartDatanode(p2, p2.MainLoop(), model.DatanodeConfig{Addr: "dn2:50010", Dir: "data2"}); err != nil {
				w.Fail(err)
				return
			}
			if srv2, err = shortcircuit.Start(dn2, shortcircuit.ServerConfig{Path: "/run/dn2_socket"}); err != nil {
				w.Fail(err)
			}
		})
		w.Spawn("client", model.ProcessConfig{Cores: 2}, func(cp model.Process) {
			// The path's state as the client's hooks show it, in the
			// order they run (sc-off): a failure that is not a refusal
			// keeps the failed reader's later fetches from the datanode
			// for DisableFor (its loop runs its lock's tasks in order, so
			// the path is off before they look), and once the path is off
			// (Off) every fetch that looks after.
			disableFor := c.DisableFor
			if disableFor == 0 {
				disableFor = shortcircuit.DefaultDisableFor
			}
			offLoop := map[model.Loop]time.Duration{}
			pendingOff := map[model.Loop][]time.Duration{}
			var offAll time.Duration
			// failUntil: when the last failure's DisableFor ends, after
			// which local-reads wants short-circuit back.
			var failUntil time.Duration
			watch := &shortcircuit.PathWatch{
				Failed: func(l model.Loop, err error) {
					// Only a failed fd request is a failure of the path:
					// a replica that fails its read (rot) is not.
					if errors.Is(err, model.ErrRejected) || shortcircuit.IsPathDisabled(err) || shortcircuit.IsLocalReadError(err) {
						return
					}
					until := l.Now() + disableFor
					offLoop[l] = max(offLoop[l], until)
					pendingOff[l] = append(pendingOff[l], until)
					failUntil = max(failUntil, until)
				},
				Off: func(l model.Loop) {
					if q := pendingOff[l]; len(q) > 0 {
						offAll = max(offAll, q[0])
						pendingOff[l] = q[1:]
					}
				},
				Asking: func(l model.Loop) func(bool) {
					from, until := l.Now(), max(offLoop[l], offAll)
					return func(ask bool) {
						now := l.Now()
						if ask && now < until {
							run.fail(PropSCOff, "a fetch that looked at the path at %v asked the datanode at %v, short-circuit off until %v after a failure (DisableFor %v)", from, now, until, disableFor)
						}
						// failUntil counts every failure heard, whether
						// or not it has turned the path off yet.
						if !ask && now >= failUntil {
							run.fail(PropSCOff, "a fetch found short-circuit off at %v, the last failure's DisableFor of %v over at %v", now, disableFor, failUntil)
						}
					}
				},
			}
			sh, err := shortcircuit.NewShared(cp, shortcircuit.SharedConfig{Cache: shortcircuit.CacheConfig{Shards: c.Shards, Capacity: c.Capacity, Expiry: c.Expiry, Bugs: bug.cache},
				Timeout: c.Timeout, Bugs: bug.client, Watch: watch})
			if err != nil {
				w.Fail(err)
				return
			}
			main := cp.MainLoop()
			base := cp.FDs().Open
			var readers []*shortcircuit.Client
			var loops []model.Loop
			for i := 0; i < c.Readers; i++ {
				l, _ := cp.NewLoop(fmt.Sprintf("reader-%d", i))
				cl, err := shortcircuit.NewClient(cp, l, i, sh, shortcircuit.ClientConfig{Path: "/run/dn_socket", DisableFor: c.DisableFor,
					TCP: model.ClientConfig{Datanode: "dn:50010", NoDelay: true, Timeout: c.Timeout, Bugs: bug.tcp}})
				if err != nil {
					w.Fail(err)
					return
				}
				readers, loops = append(readers, cl), append(loops, l)
			}
			writer, err := model.NewClient(cp, main, 99, model.ClientConfig{Datanode: "dn:50010", NoDelay: true})
			if err != nil {
				w.Fail(err)
				return
			}
			base += 2 * len(loops)
			inflight, pending := 0, 0
			// What the harness sees of the reads, for the counters'
			// check at rest.
			reads := make([]int, len(readers))
			local, overTCP, changes := 0, 0, 0
			// overlapped: reads during which their block was being changed
			// (only they can fetch a replica already stale on insert).
			overlapped, chg := 0, map[uint64]int{}
			// The rogues' processes, one a user (each spawned at its first
			// rogue op), and the fds and segments the datanode passed them.
			var rogueProc [scRogueUsers]*lazyProc
			for u := range rogueProc {
				rogueProc[u] = &lazyProc{w: w, name: scRogueProcess(u), cfg: model.ProcessConfig{FDLimit: scRogueFDs}}
			}
			rogueFDs, rogueSegs := 0, 0
			// The probes' process, and the segments the datanode passed
			// them (scprobe.go).
			probes := &lazyProc{w: w, name: scProbeProcess}
			probeSegs := 0
			// anyFault: a fault (a reset's too) was injected. Rot is none:
			// it fails the reads that meet it, and only them, leaving fd
			// passing and the path alone.
			anyFault := false
			end := func() {
				(&scEnd{w: w, run: run, cp: cp, main: main, sh: sh, readers: readers, loops: loops, writer: writer, base: base,
					dnProc: dnProc, dn: dn, srv: srv, dnBase: dnBase, dn2Proc: dn2Proc, dn2: dn2, srv2: srv2, expiry: c.Expiry,
					reads: reads, local: local, overTCP: overTCP, changes: changes, overlapped: overlapped, anyFault: anyFault,
					rogueFDs: rogueFDs, rogueSegs: rogueSegs, probeSegs: probeSegs}).finish()
			}
			if len(c.Ops) == 0 {
				main.Post(end)
				return
			}
			// One change at a time per block, so each change's result is
			// known from the one before.
			writing := map[uint64]bool{}
			// The reads of a block that ended while a change to it was
			// in flight: that change may be concurrent with them, and
			// what it left is known only once it returns, so they are
			// checked then.
			waiting := map[uint64][]func(){}
			checkFDs := func() {
				if passed := cp.FDs().ByKind[model.FDPassed]; passed > 2*c.Capacity+2*inflight {
					run.fail(PropFDBounds, "client holds %d passed fds, bound 2×%d + 2×%d in flight", passed, c.Capacity, inflight)
				}
			}
			// faults is how many faults are in force (a squeeze's table
			// full, the datanode down); faultsBegun counts every one that
			// began, so a read knows whether one overlapped it.
			faults, faultsBegun := 0, 0
			// resets counts the resets armed (a reset has no end: it is in
			// force until the datanode's next fd pass). lingering counts
			// the reads in flight that may yet fail or hold a fetch
			// another shares: begun before short-circuit was due back, or
			// overlapped since by a fault or a reset armed (fenced); clean,
			// the rest.
			resets, lingering, clean := 0, 0, 0
			fence := func() { lingering += clean; clean = 0 }
			// rots: the rot injected, by block (scrot.go). A read that
			// may meet rot is excused from local-reads, and only it: its
			// checksum error leaves short-circuit on for every other.
			rots := scRots{}
			beginFault := func() { faults++; faultsBegun++; fence() }
			// lastFaultEnd: when the last fault ended; a datanode whose
			// accept failed stops accepting for model.AcceptBackoff.
			lastFaultEnd := -time.Hour
			endFault := func(now time.Duration) { faults--; lastFaultEnd = now }
			// probe runs the honest newcomer (scprobe.go), excused if a
			// fault, or a reset armed, was in force while it ran (a
			// datanode whose accept failed accepts nothing for
			// model.AcceptBackoff).
			probe := func(n int, done func()) {
				dnSim := w.Process("datanode")
				if dnSim.Crashed() {
					done()
					return
				}
				faultedAt := faults > 0 || main.Now()-lastFaultEnd < model.AcceptBackoff || dnSim.FDPassResetArmed()
				begunAt, resetsAt := faultsBegun, resets
				err := probes.run(func(p model.Process) {
					scProbe(p, scProbePatience, func(wait time.Duration, err error) {
						main.Post(func() {
							if err == nil {
								probeSegs++
							}
							excused := faultedAt || faults > 0 || faultsBegun != begunAt || resets != resetsAt
							switch {
							case excused || !peersFit:
							case err != nil:
								run.fail(PropHostileAvail, "a new local client asked for a segment on a new domain connection at half rogue op %d's hold and got none after %v: %v", n, wait, err)
							case wait > scProbeBound:
								run.fail(PropHostileAvail, "a new local client asked for a segment on a new domain connection at half rogue op %d's hold and had it after %v, over %v (model.IdleGrace %v: the rogues kept it out)", n, wait, scProbeBound, model.IdleGrace)
							}
							done()
						})
					})
				})
				if err != nil {
					w.Fail(err)
				}
			}
			var t time.Duration
			for i, op := range c.Ops {
				t += op.Gap
				pending++
				n, op := i, op
				block := op.Block
				main.AfterFunc(t, func() {
					start := main.Now()
					done := func() {
						pending--
						if pending == 0 {
							end()
						}
					}
					kind := op.Op
					dnSim := w.Process("datanode")
					if kind != "read" && kind != "idle-read" && kind != "replace" && kind != "append" && kind != "delete" && kind != "rogue" && kind != "rot" {
						anyFault = true
					}
					idxs := []int{op.Reader}
					if kind == "idle-read" {
						// Not a fault: a cached connection the datanode
						// closed is the client's to retry on a fresh one,
						// and a full accept queue the client's to wait
						// out.
						if s := srv; s != nil && !dnSim.Crashed() {
							dnSim.MainLoop().Post(s.CloseIdle)
						}
						kind, idxs = "read", nil
						for i := range readers {
							idxs = append(idxs, i)
						}
						pending += len(idxs) - 1 // one done a read
					}
					switch kind {
					case "squeeze", "client-squeeze":
						p, l, gen := cp, main, 0
						if kind == "squeeze" {
							if dnSim.Crashed() {
								done()
								return
							}
							p, l, gen = dnProc, dnProc.MainLoop(), starts
						}
						release := func() {}
						beginFault()
						l.Post(func() {
							sp, ok := p.(*sim.Process)
							if !ok {
								w.Fail(fmt.Errorf("sc case: op %d: squeeze of a process not the simulator's", n))
								return
							}
							release = sp.SqueezeFDs(op.Left)
						})
						// The release is timed on the client's loop, which
						// never crashes; a crash closed the datanode's hog.
						main.AfterFunc(op.Hold, func() {
							if p == cp || !dnSim.Crashed() && gen == starts {
								l.Post(func() {
									release()
									endFault(l.Now())
								})
							} else {
								endFault(main.Now()) // the crash closed the hog
							}
							done()
						})
						return
					case "rogue":
						if dnSim.Crashed() {
							done()
							return
						}
						faultedAt, begunAt := faults > 0 || main.Now()-lastFaultEnd < model.AcceptBackoff, faultsBegun
						attack := func(p model.Process) {
							r := &scRogue{p: p, loop: p.MainLoop(), block: op.Block, hold: op.Hold, every: op.Every,
								faulted: func() bool { return faultedAt || faults > 0 || faultsBegun != begunAt },
								fail: func(format string, a ...any) {
									msg := fmt.Sprintf(format, a...)
									main.Post(func() { run.fail(PropSCRefusal, "%s", msg) })
								},
								received: func(fds, segs int) { main.Post(func() { rogueFDs += fds; rogueSegs += segs }) },
								done:     func() { main.Post(done) },
								tcpQueue: func() int { q, _, _ := w.ListenQueue("tcp", "dn:50010"); return q }}
							r.run(op.Rogue)
						}
						if op.Rogue == "flood" || op.Rogue == "squat" || op.Rogue == "tcp-flood" || op.Rogue == "drip" {
							// Once it asks no more and holds what it got.
							pending++
							main.AfterFunc(op.Hold/2, func() { probe(n, done) })
						}
						// A user's process starts at its first rogue op.
						if err := rogueProc[op.User].run(attack); err != nil {
							w.Fail(err)
						}
						return
					case "reset":
						if !dnSim.Crashed() {
							dnSim.ResetNextFDPass(op.After)
							resets++
							fence()
						}
						done()
						return
					case "pause":
						if dnSim.Crashed() {
							done()
							return
						}
						dnSim.Pause(op.Hold)
						beginFault()
						main.AfterFunc(op.Hold, func() {
							endFault(main.Now())
							done()
						})
						return
					case "rot":
						// Not while the block changes: which files the
						// flip lands in would be unknown.
						if !writing[block] && scRotInject(dnSim, op) {
							rots.add(block, op.Off, main.Now())
						}
						done()
						return
					case "crash":
						if dnSim.Crashed() {
							done()
							return
						}
						dnSim.Crash()
						beginFault()
						main.AfterFunc(op.Hold, func() {
							up = func() {
								up = nil
								endFault(main.Now())
								main.Post(done)
							}
							dnSim.Restart()
						})
						return
					}
					if kind != "read" && writing[block] {
						kind = "read"
					}
					if kind == "read" {
						for _, idx := range idxs {
							off := op.Off
							// A datanode whose accept failed during a fault
							// accepts nothing for model.AcceptBackoff: a read
							// whose timeout is shorter may fail in it. (With
							// the minute's timeout the read only waits.)
							backoff := c.Timeout > 0 && main.Now()-lastFaultEnd < model.AcceptBackoff
							faultedAt, begunAt := faults > 0 || backoff, faultsBegun
							// Short-circuit is due back (local-reads) once
							// faults were and all have ended, the accept
							// backoff has passed, the last failure's
							// DisableFor has passed, no reset is armed, and
							// no read from before is in flight.
							now := main.Now()
							back := anyFault && faults == 0 && now >= lastFaultEnd+model.AcceptBackoff && now >= failUntil && lingering == 0 && !dnSim.FDPassResetArmed()
							resetsAt, faultEndAt, failUntilAt := resets, lastFaultEnd, failUntil
							if back {
								clean++
							} else {
								lingering++
							}
							inflight++
							reads[idx]++
							l := loops[idx]
							epoch, w0 := chg[block], writing[block]
							// Every other read of a reader lands in a
							// buffer of the harness's, fresh for it, as
							// its data is checked later; the others in
							// their own (a nil buffer: ReadVia's).
							var buf []byte
							if reads[idx]%2 == 0 {
								buf = make([]byte, shortcircuit.ReadRoom(512))
							}
							l.Post(func() {
								readers[idx].ReadInto(block, 0, off, 512, buf, func(r model.Result, viaFDs bool) {
									end := l.Now()
									main.Post(func() {
										inflight--
										// ...and stays back while no fault
										// began nor reset was armed during
										// the read.
										backAll := back && faultsBegun == begunAt && resets == resetsAt
										if backAll {
											clean--
										} else {
											lingering--
										}
										if w0 || writing[block] || chg[block] != epoch {
											overlapped++
										}
										if viaFDs {
											// (not a read past the end refused)
											if r.Err == nil {
												local++
											}
										} else {
											overTCP++
										}
										checkFDs()
										beforeFaults := !anyFault
										check := func() {
											allowed := scAllowed(versions[block], start, end)
											there := !slices.ContainsFunc(allowed, func(v []byte) bool { return int64(len(v)) < off+512 })
											faulted := faultedAt || faults > 0 || faultsBegun != begunAt
											// Rot explains a checksum error, and nothing else does.
											rotAt, rotted := rots.may(block, off, 512, start, end)
											switch csum := isChecksumErr(r.Err); {
											case csum && !rotted:
												run.fail(PropAvailability, "read %d of block %d at %v–%v failed with a checksum error, no rot in its chunks: %v", n, block, start, end, r.Err)
											case r.Err != nil && !csum && !faulted && there:
												run.fail(PropAvailability, "read %d of block %d at %v–%v failed with no fault in force and the block there: %v", n, block, start, end, r.Err)
											}
											if c.Timeout > 0 && end-start > scReadBound*c.Timeout {
												run.fail(PropAvailability, "read %d of block %d at %v–%v took %v, over %d× the readers' timeout of %v: it waited on a datanode that did not answer", n, block, start, end, end-start, scReadBound, c.Timeout)
											}
											if !viaFDs && beforeFaults && there && !rotted && peersFit {
												run.fail(PropLocalReads, "read %d of block %d at %v–%v went over TCP before any fault, the block there", n, block, start, end)
											}
											if !viaFDs && backAll && there && !rotted && peersFit {
												run.fail(PropLocalReads, "read %d of block %d at %v–%v went over TCP, the block there, with every fault over (the last at %v), no reset armed, and the last failure's DisableFor of %v over by %v: short-circuit did not come back", n, block, start, end, faultEndAt, disableFor, failUntilAt)
											}
											if r.Err == nil {
												if !slices.ContainsFunc(allowed, func(v []byte) bool {
													return v != nil && int64(len(v)) >= off+512 && bytes.Equal(v[off:off+512], r.Data)
												}) {
													if rotted {
														run.fail(PropLinearizable, "read %d of block %d at %v–%v returned data no version allowed: bytes rotted on disk at %v returned as good", n, block, start, end, rotAt)
													} else {
														run.fail(PropLinearizable, "read %d of block %d at %v–%v returned data no version allowed (stale read)", n, block, start, end)
													}
												}
											}
											done()
										}
										if writing[block] {
											waiting[block] = append(waiting[block], check)
											return
										}
										check()
									})
								})
							})
						}
						return
					}
					data := model.BlockContent(op.Data, 4096)
					writing[block] = true
					changes++
					chg[block]++
					// All but an append write new files, without the rot
					// of the old (scrot.go).
					rewrites := kind != "append" || versions[block][len(versions[block])-1].data == nil
					record := func(r model.Result, newData []byte, also [][]byte) {
						writing[block] = false
						if rewrites && r.Err == nil && !r.Unknown {
							rots.clear(block, main.Now())
						}
						if r.Err == nil || r.Unknown {
							v := scVersion{start: start, end: main.Now(), data: newData, also: also}
							if r.Unknown {
								v.end = 1 << 62 // may or may not have happened
							}
							versions[block] = append(versions[block], v)
						}
						checks := waiting[block]
						delete(waiting, block)
						for _, check := range checks {
							check()
						}
						done()
					}
					last := versions[block][len(versions[block])-1].data
					switch {
					case kind == "replace":
						writer.Replace(block, data, func(r model.Result) { record(r, data, nil) })
					case kind == "append" && last != nil:
						grown, also := scAppended(versions[block], start, data[:100])
						writer.Append(block, data[:100], func(r model.Result) { record(r, grown, also) })
					case last == nil:
						writer.Write(block, data, func(r model.Result) { record(r, data, nil) })
					default:
						writer.Delete(block, func(r model.Result) { record(r, nil, nil) })
					}
				})
			}
		})
	})
	res := &SCResult{}
	if err == nil {
		err = w.Run(time.Hour)
	}
	if err != nil {
		run.fail(PropHarness, "%v", err)
	}
	if !run.finished {
		run.fail(PropHarness, "the case did not finish: the world went idle before the checks at rest")
	}
	res.Property, res.Message, res.Readers = run.prop, run.msg, run.readers
	res.Events, res.SimEvents, res.TraceHash = w.TraceEvents(), w.Events(), w.TraceHashString()
	return res
}

// scAllowed is what a read during [start, end] may return: the last
// version that ended before start, and every version concurrent with the
// read.
func scAllowed(vs []scVersion, start, end time.Duration) [][]byte {
	var out [][]byte
	lastBefore := -1
	for i, v := range vs {
		if v.end < start && (lastBefore < 0 || v.end >= vs[lastBefore].end) {
			lastBefore = i
		}
	}
	for i, v := range vs {
		if i == lastBefore || (v.start <= end && v.end >= start) {
			out = append(out, v.data)
			out = append(out, v.also...)
		}
	}
	return out
}

// scAppended is what an append of tail starting at start may leave, given
// the block's versions vs (the last one non-nil): tail after the last
// version's contents, and also tail after every other contents the block
// may hold at start (scAllowed's, which counts each change whose effect
// is unknown as possibly applied or not). The datanode appends to what it
// holds, not to what the writer last asked for, so after a replace lost
// in a crash an append grows the old contents.
func scAppended(vs []scVersion, start time.Duration, tail []byte) (grown []byte, also [][]byte) {
	grow := func(base []byte) []byte { return append(append([]byte(nil), base...), tail...) }
	last := vs[len(vs)-1].data
	bases := [][]byte{last}
	for _, b := range scAllowed(vs, start, start) {
		// A deleted block takes no append (the datanode rejects it),
		// and a base seen already adds no contents.
		if b != nil && !slices.ContainsFunc(bases, func(o []byte) bool { return bytes.Equal(o, b) }) {
			bases = append(bases, b)
			also = append(also, grow(b))
		}
	}
	return grow(last), also
}

// scEnd is what the checks at rest look at: the processes, and what the
// harness saw of the reads.
type scEnd struct {
	w          *sim.World
	run        *scRun
	cp         model.Process
	main       model.Loop
	sh         *shortcircuit.Shared
	readers    []*shortcircuit.Client
	loops      []model.Loop
	writer     *model.Client
	base       int
	dnProc     model.Process
	dn         *model.Datanode
	srv        *shortcircuit.Server
	dnBase     int
	dn2Proc    model.Process
	dn2        *model.Datanode
	srv2       *shortcircuit.Server
	expiry     time.Duration
	reads      []int // given to each reader
	local      int   // reads served from passed fds
	overTCP    int   // reads served over TCP
	changes    int   // blocks replaced, appended to, deleted or written
	overlapped int   // reads that overlapped a change to their block
	anyFault   bool  // a fault that may disturb fd passing was injected (not rot)
	// rogueFDs and rogueSegs: what the datanode passed rogues;
	// probeSegs, the probes (scprobe.go).
	rogueFDs, rogueSegs, probeSegs int
}

// finish runs the checks at rest. Each runs in the callback of the one
// before, so a callback that never comes stops the case short of
// finishing (a harness failure) rather than skipping the checks after it.
func (e *scEnd) finish() {
	run, main, sh := e.run, e.main, e.sh
	sh.Cache().Stats(main, func(cs shortcircuit.CacheStats, cached, _ int) {
		if cached > scBlocks {
			run.fail(PropFDBounds, "client caches %d replicas of %d blocks at rest", cached, scBlocks)
		}
		sh.Stats(main, func(ss shortcircuit.SharedStats) {
			e.checkStats(cs, ss)
			if e.expiry == 0 {
				e.purge()
				return
			}
			// No replica has been used since the last read ended: the
			// cleaner, passing every expiry while the cache holds any,
			// expires each within two.
			wait := 2*e.expiry + 5*time.Millisecond
			main.AfterFunc(wait, func() {
				sh.Cache().Stats(main, func(_ shortcircuit.CacheStats, cached, _ int) {
					if passed := e.cp.FDs().ByKind[model.FDPassed]; cached != 0 || passed != 0 {
						run.fail(PropFDBounds, "client caches %d replicas (%d passed fds) %v after the last read, expiry %v", cached, passed, wait, e.expiry)
					}
					e.purge()
				})
			})
		})
	})
}

// checkStats holds the counters that run sc-read reports to what the
// harness saw and to each other: every read is a cache hit or a miss,
// served locally or over TCP, and every miss inserts a replica, shares
// the one another reader's fetch of the block brought (never two
// fetches of a block at once), or ends over TCP. Without faults, the fds and segments the datanode counts
// passing are those the client counts receiving, and only a change to a
// block purges a replica as invalid: at most one cached replica each.
func (e *scEnd) checkStats(cs shortcircuit.CacheStats, ss shortcircuit.SharedStats) {
	var sum shortcircuit.ClientStats
	for i, r := range e.readers {
		st := r.Stats()
		if st.Reads != e.reads[i] {
			e.run.fail(PropSCStats, "reader %d counts %d reads, was given %d", i, st.Reads, e.reads[i])
		}
		sum.Reads += st.Reads
		sum.Hits += st.Hits
		sum.Misses += st.Misses
		sum.LocalReads += st.LocalReads
		sum.TCPReads += st.TCPReads
		sum.LocalErrors += st.LocalErrors
		sum.FDsReceived += st.FDsReceived
		sum.Redials += st.Redials
		sum.Fallbacks += st.Fallbacks
		sum.Shared += st.Shared
	}
	e.run.readers = sum
	switch {
	case sum.Hits+sum.Misses != sum.Reads:
		e.run.fail(PropSCStats, "readers count %d hits and %d misses in %d reads", sum.Hits, sum.Misses, sum.Reads)
	case sum.LocalReads != e.local || sum.TCPReads != e.overTCP:
		e.run.fail(PropSCStats, "readers count %d local and %d TCP reads, %d and %d were served", sum.LocalReads, sum.TCPReads, e.local, e.overTCP)
	case cs.Hits != sum.Hits || cs.Misses != sum.Misses:
		e.run.fail(PropSCStats, "cache counts %d hits and %d misses, readers %d and %d", cs.Hits, cs.Misses, sum.Hits, sum.Misses)
	case cs.Inserts+cs.Shared+cs.Failed != sum.Misses:
		e.run.fail(PropSCStats, "cache counts %d inserts, %d misses served by another's fetch and %d whose fetch failed; readers %d misses", cs.Inserts, cs.Shared, cs.Failed, sum.Misses)
	case cs.Failed != sum.TCPReads-sum.LocalErrors:
		e.run.fail(PropSCStats, "cache counts %d misses whose fetch failed; readers %d TCP reads less %d after a local error", cs.Failed, sum.TCPReads, sum.LocalErrors)
	case cs.MaxFetches > 1:
		e.run.fail(PropSCStats, "the cache had %d fetches of one block under way at once: readers that miss a block together share one fetch", cs.MaxFetches)
	}
	if e.anyFault {
		return
	}
	if srv := e.srv.Stats(); srv.FDsPassed != sum.FDsReceived+e.rogueFDs || srv.Segments != ss.Segments+e.rogueSegs+e.probeSegs {
		e.run.fail(PropSCStats, "with no fault the datanode counts %d fds and %d segments passed, the client %d and %d received, rogues %d and %d, probes 0 and %d", srv.FDsPassed, srv.Segments, sum.FDsReceived, ss.Segments, e.rogueFDs, e.rogueSegs, e.probeSegs)
	}
	if srv := e.srv.Stats(); srv.MaxFetches > 1 {
		// What the datanode sees, apart from what the cache counts of
		// itself: one client segment asking for one block's fds twice
		// before its first receipt (with a fault a reader may give up
		// on a fetch the datanode still serves, so only without).
		e.run.fail(PropSCStats, "with no fault the datanode had %d fd requests for one block from one client under way at once: readers that miss a block together share one fetch", srv.MaxFetches)
	}
	if cs.Stale > e.overlapped {
		e.run.fail(PropSCStats, "with no fault the cache refused %d replicas as stale; %d reads overlapped a change to their block", cs.Stale, e.overlapped)
	}
	if cs.Purged > e.changes {
		e.run.fail(PropSCStats, "with no fault the cache purged %d invalid replicas after %d changes", cs.Purged, e.changes)
	}
}

// purge empties the cache: with nothing cached, the datanode must hold no
// slot for the client: each dropped replica's slot was released to it
// (HDFS-16535 sent the release elsewhere; closing the segment would hide
// that).
func (e *scEnd) purge() {
	e.sh.Cache().PurgeAll(e.main, func() {
		e.main.AfterFunc(50*time.Millisecond, func() {
			e.srv.Registry(e.main, func(_, slots, _ int) {
				if slots != 0 {
					e.run.fail(PropLeakFree, "datanode holds %d slots after the client's cache was purged", slots)
				}
				e.close()
			})
		})
	})
}

func (e *scEnd) close() {
	run, main := e.run, e.main
	for _, r := range e.readers {
		r.Close()
	}
	e.writer.Close()
	e.sh.Close(main, func() {
		main.AfterFunc(500*time.Millisecond, func() {
			st := e.cp.FDs()
			if st.ByKind[model.FDPassed] != 0 || st.Segments != 0 || st.Open != e.base {
				run.fail(PropLeakFree, "client at rest: %d fds (baseline %d), %d passed, %d segments", st.Open, e.base, st.ByKind[model.FDPassed], st.Segments)
			}
			dl := e.dnProc.MainLoop()
			dl.Post(func() {
				e.srv.Registry(dl, func(segs, slots, passing int) {
					if segs != 0 || slots != 0 || passing != 0 || e.dnProc.FDs().Open != e.dnBase {
						run.fail(PropLeakFree, "datanode at rest: %d segments, %d slots, %d fds being passed, %d fds (baseline %d)", segs, slots, passing, e.dnProc.FDs().Open, e.dnBase)
					}
					run.finished = true
					for _, l := range e.loops {
						l.Close()
					}
					e.srv.Stop()
					e.dn.Stop()
					e.dn2Proc.MainLoop().Post(func() {
						e.srv2.Stop()
						e.dn2.Stop()
					})
					dl.AfterFunc(10*time.Millisecond, e.w.Stop)
				})
			})
		})
	})
}

// ShrinkSC removes ops from a failing case while the same property still
// fails, within budget runs.
func ShrinkSC(c SCCase, r *SCResult, budget int) (SCCase, *SCResult) {
	runs := 0
	for changed := true; changed && runs < budget; {
		changed = false
		for size := len(c.Ops) / 2; size >= 1; size /= 2 {
			for i := 0; i+size <= len(c.Ops) && runs < budget; {
				cand := c
				cand.Ops = append(append([]SCOp(nil), c.Ops[:i]...), c.Ops[i+size:]...)
				runs++
				if cr := RunSC(cand); cr.Property == r.Property {
					c, r, changed = cand, cr, true
					continue
				}
				i += size
			}
		}
	}
	return c, r
}

// CheckSCSeed draws and runs one short-circuit seed, shrinking a failure.
func CheckSCSeed(seed uint64, bug string, budget int) (SCCase, *SCResult, error) {
	c, err := DrawSC(SeedSource(seed), seed, bug)
	if err != nil {
		return c, nil, err
	}
	r := RunSC(c)
	if r.Property == "" || r.Property == PropHarness {
		return c, r, nil
	}
	c, r = ShrinkSC(c, r, budget)
	return c, r, nil
}

// SCTrace is a recorded short-circuit failure: the case, and what its
// run gave.
type SCTrace struct {
	TraceHead        // Format: SCTraceFormat
	Case      SCCase `json:"sc_case"`
}

// SCTraceFormat names the file layout (and the code version: a change
// that alters a short-circuit run's events bumps it and re-records the
// corpus).
const SCTraceFormat = "xceiver-sc-trace/31"

// RecordSC runs c and returns its trace.
func RecordSC(c SCCase) (SCTrace, *SCResult) {
	r := RunSC(c)
	return SCTraceOf(c, r), r
}

// SCTraceOf is the trace of c, whose run gave r.
func SCTraceOf(c SCCase, r *SCResult) SCTrace {
	return SCTrace{TraceHead{SCTraceFormat, r.Property, r.Message, r.Events, r.TraceHash}, c}
}

// ReadSCTrace reads a trace file; a file that is not one is an error
// naming why.
func ReadSCTrace(path string) (SCTrace, error) {
	var t SCTrace
	if err := readJSONTrace(path, "a short-circuit", &t); err != nil {
		return SCTrace{}, err
	}
	if err := t.check(path, SCTraceFormat, "sc", t.Case.Seed, t.Case.Bug, t.Case.Validate); err != nil {
		return SCTrace{}, err
	}
	return t, nil
}

// WriteSCTrace writes t to path.
func WriteSCTrace(path string, t SCTrace) error {
	return writeJSONTrace(path, t)
}

// ReplaySC re-runs a trace: nil when it fails the same property with the
// same event hash.
func ReplaySC(t SCTrace) (*SCResult, error) {
	r := RunSC(t.Case)
	return r, ReplayMismatch(r.Property, r.Message, r.Events, r.TraceHash, t.TraceHead)
}
