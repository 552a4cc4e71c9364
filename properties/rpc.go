package properties

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// The RPC system's properties: a namenode (model/rpc + model/namespace)
// and a datanode, clients calling the namespace and reading and writing
// files end to end, under rpc faults. Checked:
//
//   - linearizability: the namespace calls fit the namespace model (rpclin.go);
//   - exactly-once: every call ends once — an answer or a connection
//     error — and no answer comes for a call that is not waiting;
//   - stream-integrity: every client follows every response stream: no
//     malformed frame and no fatal answer, but one to each garbage
//     request the client sent (TCP delivers the server's bytes exactly);
//   - queue-bound: the call queue never holds more than its bound (every
//     event);
//   - bounded-memory: no namenode connection holds more responses than
//     MaxInFlight (a response is held only for a call in flight; so no
//     more bytes than MaxInFlight of its largest), measured from the
//     queues, whose bytes the server's own count must equal; and no connection's input not yet taken as calls is
//     past InputBound (every event); and the reader takes none of a stuck
//     pipeliner's calls once the answers held for it have stayed past
//     MaxPending for rpcStopLag (checkStuck);
//   - state-timeout: the namenode purges a stuck pipeliner's connection
//     within an idle timeout and a scan of its last move on it, and
//     (availability) not before an idle timeout of silence (checkStuck);
//     and closes a connection whose client's FIN or reset has arrived
//     within rpcGoneBound, read or not (checkGone);
//   - fd-bounds: the namenode's sockets stay within its clients and the
//     faults' extra connections (every event);
//   - availability: a client no fault touches gets every answer in time,
//     however others misbehave, and every client does in the liveness
//     phase after the faults; and the namenode closes on its own only
//     a connection silent for its idle timeout with no call waiting (the
//     client reports each close or reset it reads: OnServerClose), nor
//     one holding a whole call a full queue refuses (sync-stall);
//   - leak-freedom: at quiescence the server holds no connection, queued
//     call, pending response or busy handler, the namenode is back to its
//     fds, and clients hold no connection or call; and in runs without a
//     crash the datanode holds no block of a file removed after the
//     block was written (checkReclaimed);
//   - durability (with the edit log): a namenode that crashed — a drawn
//     crash, or a failed edit-log sync, which is fatal as in HDFS —
//     replays a tree that some order of the changes called before the
//     crash gives, holding every change answered OK; and at quiescence
//     every block of every complete file is on the datanode with the
//     stamp and length the namespace holds.
//
// Linearizability across a namenode crash: HDFS's readers see an edit as
// soon as its writer releases the lock, before logSync, so a read may see
// a change the crash then loses (its writer got no answer); so may a
// change that fails, answered without a sync, as a read. Namespace
// calls are therefore linearizable within each namenode incarnation, from
// the tree it started with; durability links one incarnation to the next.

// RPCCase is one run of the rpc system.
type RPCCase struct {
	Seed uint64 `json:"seed"`
	Bug  string `json:"bug,omitempty"`
	// Ignore lists properties this run does not enforce (check --ignore).
	Ignore []string   `json:"ignore,omitempty"`
	Config RPCConfig  `json:"config"`
	Ops    []RPCOp    `json:"ops"`
	Faults []RPCFault `json:"faults"`
	Live   []RPCOp    `json:"live"`
}

// RPCConfig is a drawn configuration.
type RPCConfig struct {
	Readers     int           `json:"readers"`
	Handlers    int           `json:"handlers"`
	QueueSize   int           `json:"queue"`
	Lock        string        `json:"lock"`
	Clients     int           `json:"clients"`
	Workers     int           `json:"workers"`
	CallTimeout time.Duration `json:"call_timeout"`
	ServerIdle  time.Duration `json:"server_idle"`
	ClientIdle  time.Duration `json:"client_idle"`
	// Pieces[c] > 0: client c writes at most that many bytes per write, a
	// few µs apart, so calls reach the server in pieces.
	Pieces []int `json:"pieces"`
	// BigDir files under /big make list answers large (the slow fault).
	BigDir int `json:"big_dir"`
	// ListLimit is the namenode's list page size (0: 1,000).
	ListLimit int `json:"list_limit,omitempty"`
	// MaxPending is the response bytes past which the namenode takes no
	// more of a connection's calls (0: the server's default).
	MaxPending int `json:"max_pending,omitempty"`
	// MaxInFlight caps a namenode connection's calls in flight (0: the
	// server's default, 100).
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// NNSndBuf is the namenode's socket send buffer (0: the world's):
	// small, an answer that does not fit waits in the server, queued
	// for the responder.
	NNSndBuf int `json:"nn_sndbuf,omitempty"`
	// EditLog logs every change and answers it once the log is synced;
	// HadoopReader reads as Hadoop 0.20's Listener (one call per event).
	EditLog      bool `json:"edit_log,omitempty"`
	HadoopReader bool `json:"hadoop_reader,omitempty"`

	HandlerWaitsForWrite bool `json:"handler_waits_for_write,omitempty"`
	DropPartial          bool `json:"drop_partial,omitempty"`
	ReuseIDs             bool `json:"reuse_ids,omitempty"`
	OrphanOnBadResponse  bool `json:"orphan_on_bad_response,omitempty"`
	UnboundedResponses   bool `json:"unbounded_responses,omitempty"`
	AnswerBeforeSync     bool `json:"answer_before_sync,omitempty"`
	LoseGroupWaiters     bool `json:"lose_group_waiters,omitempty"`
	InvalidateBeforeSync bool `json:"invalidate_before_sync,omitempty"`
	AnswerEIO            bool `json:"answer_eio,omitempty"`
	ReplaySyncOnly       bool `json:"replay_sync_only,omitempty"`
	QueuePastBound       bool `json:"queue_past_bound,omitempty"`
	QueuedReplyShares    bool `json:"queued_reply_shares_frame,omitempty"`
	StopMidCall          bool `json:"stop_mid_call,omitempty"`
	KeepInput            bool `json:"keep_input,omitempty"`
	IdleClosesHeldCall   bool `json:"idle_closes_held_call,omitempty"`
	DeafWhenNotReading   bool `json:"deaf_when_not_reading,omitempty"`
	ServesDeadCalls      bool `json:"serves_dead_calls,omitempty"`
}

// RPCOp is one client op; a worker's ops run one after another.
type RPCOp struct {
	Client int           `json:"c"`
	Worker int           `json:"w,omitempty"`
	Gap    time.Duration `json:"gap"`
	Kind   string        `json:"op"` // mkdir, write, list, stat, read, delete, rename
	Path   string        `json:"path"`
	Dst    string        `json:"dst,omitempty"`
	Blocks int           `json:"blocks,omitempty"`
	Size   int           `json:"size,omitempty"`
	// After: a list's first page starts after this name.
	After string `json:"after,omitempty"`
}

// RPCFault is one fault.
type RPCFault struct {
	At     time.Duration `json:"at"`
	Kind   string        `json:"kind"`
	Client int           `json:"c"`
	Dur    time.Duration `json:"dur,omitempty"`
	N      int           `json:"n,omitempty"`
}

// RPC fault kinds.
const (
	RPCFaultVanish   = "vanish"    // a client resets its connection with calls in flight
	RPCFaultResetMid = "reset-mid" // a client sends half a call on a new connection and resets it
	RPCFaultSlow     = "slow"      // a client with a small window stops reading while asking for large answers
	RPCFaultSlowRead = "slow-read" // a client with a small window asks for a few large answers, and reads them
	RPCFaultBurst    = "burst"     // a client sends many calls at once (fills the queue)
	RPCFaultCrash    = "dn-crash"  // the datanode crashes and restarts
	RPCFaultGarbage  = "garbage"   // a client's connection carries an oversized length prefix
	// The namenode's, drawn only with the edit log:
	RPCFaultNNCrash   = "nn-crash"       // the namenode crashes and restarts Dur later, replaying its log
	RPCFaultNNTorn    = "nn-crash-write" // likewise, at its Nth disk write or fsync from now (a write met is torn)
	RPCFaultNNPower   = "nn-power-loss"  // likewise, and its host loses the writes no fsync made durable
	RPCFaultSyncEIO   = "sync-eio"       // for Dur, a share N‰ of the namenode's fsyncs fail (fatal: it restarts)
	RPCFaultSlowSync  = "slow-sync"      // for Dur, a share N‰ of its fsyncs take 1-20 ms longer
	RPCFaultDiskEIO   = "disk-eio"       // for Dur, a share N‰ of its disk reads, writes and fsyncs fail with EIO
	RPCFaultNNPause   = "nn-pause"       // the namenode stops for Dur (as SIGSTOP): its kernel takes calls, it answers none
	RPCFaultStall     = "stall"          // a client stops reading for Dur with a few large answers coming, then reads on
	RPCFaultBigCalls  = "big-calls"      // a client sends two calls of N KiB at once, of a method the namespace does not have
	RPCFaultSlowOver  = "slow-over"      // a client with a small window asks for more large answers than MaxPending holds at once, and reads them all
	RPCFaultStuck     = "stuck"          // a process of its own pipelines N calls for large answers, more than MaxInFlight, on a connection it never reads again
	RPCFaultSyncStall = "sync-stall"     // the namenode's first fsync within Dur takes Dur longer: the handlers whose changes wait for it hold, the queue fills, readers block
	RPCFaultQuitBurst = "quit-burst"     // a process of its own pipelines N calls, more than the queue holds, and hangs up Dur later, reading no answer
)

// RPCFaultKinds lists them.
var RPCFaultKinds = []string{RPCFaultVanish, RPCFaultResetMid, RPCFaultSlow, RPCFaultBurst, RPCFaultCrash, RPCFaultGarbage,
	RPCFaultNNCrash, RPCFaultNNTorn, RPCFaultNNPower, RPCFaultSyncEIO, RPCFaultSlowSync, RPCFaultSlowRead, RPCFaultDiskEIO, RPCFaultNNPause, RPCFaultStall, RPCFaultBigCalls, RPCFaultSlowOver, RPCFaultStuck, RPCFaultSyncStall, RPCFaultQuitBurst}

// rpcFaultsDrawnLast are drawn each on its own after everything else, so
// that the cases drawn before each came stay as they were; the swarm draw
// of client faults leaves them out.
var rpcFaultsDrawnLast = []string{RPCFaultSlowRead, RPCFaultNNPause, RPCFaultStall, RPCFaultBigCalls, RPCFaultSlowOver, RPCFaultStuck, RPCFaultSyncStall, RPCFaultQuitBurst}

// touchesClient reports whether a fault of kind makes its client faulty:
// excused from availability outside the liveness phase. The namenode's
// faults, a datanode crash, a burst and big calls leave the client whole,
// and so do a stuck pipeliner and a quitting one, processes of their own.
func touchesClient(kind string) bool {
	switch kind {
	case RPCFaultCrash, RPCFaultBurst, RPCFaultNNPause, RPCFaultBigCalls, RPCFaultStuck, RPCFaultSyncStall, RPCFaultQuitBurst:
		return false
	}
	return !nnFault(kind)
}

// readingFault reports whether a fault of kind leaves its client reading
// every answer (through a small window): the namenode must never close
// its connection, however much it asks at once. A client no other fault
// touches is held to that (serverClosed), though its calls may time out.
func readingFault(kind string) bool {
	return kind == RPCFaultSlowRead || kind == RPCFaultSlowOver
}

// opensConn reports whether a fault of kind may open a namenode
// connection besides its client's own (the fd bound allows one each).
func opensConn(kind string) bool {
	switch kind {
	case RPCFaultNNPause, RPCFaultStall, RPCFaultBigCalls, RPCFaultSyncStall:
		return false
	}
	return !nnFault(kind)
}

// nnFault reports whether kind is a namenode fault: one that excuses every
// client from availability outside the liveness phase (h.crashed). A
// stalled sync is not one: like a pause, it excuses only the calls that
// time out across it (pauseTimeout).
func nnFault(kind string) bool {
	return kind == RPCFaultNNCrash || kind == RPCFaultNNTorn || kind == RPCFaultNNPower || kind == RPCFaultSyncEIO || kind == RPCFaultSlowSync ||
		kind == RPCFaultDiskEIO
}

// Property names besides the data path's.
const (
	PropExactlyOnce = "exactly-once"
	PropQueueBound  = "queue-bound"
	PropDurable     = "durability"
)

// RPCBug is a catalogued rpc bug.
type RPCBug struct {
	Name, What, Catches string
	// config adjusts the drawn configuration before the ops are drawn;
	// apply then switches the bug on and adds the fault that shows it.
	config func(d drawer, cfg *RPCConfig)
	apply  func(d drawer, c *RPCCase)
}

// RPCBugs is the rpc catalogue.
var RPCBugs = []RPCBug{
	{
		Name: "responder-blocks-handler", Catches: PropAvailability,
		What:   "a handler whose answer did not fit in one write waits for the responder to finish it, so a client that stops reading holds the handlers",
		config: func(d drawer, cfg *RPCConfig) { growClients(cfg, 2) },
		apply: func(d drawer, c *RPCCase) {
			c.Config.HandlerWaitsForWrite = true
			ensureFault(d, c, RPCFaultSlow)
		},
	},
	{
		Name: "partial-call-lost", Catches: PropStream,
		What: "a reader throws away the part of a call that has arrived when the rest has not: it reads the rest as a call of its own and answers a well-formed stream with a fatal error, or waits for a call that never comes and closes the connection as idle under it",
		apply: func(d drawer, c *RPCCase) {
			c.Config.DropPartial = true
			c.Config.Pieces[d.n(0, c.Config.Clients-1, "bug_pieces")] = pick(d, "bug_piece", 3, 7, 16)
		},
	},
	{
		Name: "call-id-reuse", Catches: PropExactlyOnce,
		What: "the client numbers a call by how many calls are outstanding, reusing an id still waiting on the connection",
		config: func(d drawer, cfg *RPCConfig) {
			cfg.Workers = max(cfg.Workers, 2)
			cfg.Handlers = max(cfg.Handlers, 2)
		},
		apply: func(d drawer, c *RPCCase) { c.Config.ReuseIDs = true },
	},
	{
		Name: "rpc-unbounded-responses", Catches: PropMemory,
		What: "the server queues a connection's responses without bound while its client does not read them",
		apply: func(d drawer, c *RPCCase) {
			c.Config.UnboundedResponses = true
			ensureFault(d, c, RPCFaultSlow)
		},
	},
	{
		Name: "queued-reply-shares-frame", Catches: PropExactlyOnce,
		What: "a handler queues a response that did not fit in one write in the buffer it frames every response in (what reusing that buffer invites): the queued response carries the bytes of the handler's next one, and its client reads another call's answer or garbage",
		apply: func(d drawer, c *RPCCase) {
			c.Config.QueuedReplyShares = true
			if c.Config.NNSndBuf == 0 {
				c.Config.NNSndBuf = 4096
			}
			ensureFault(d, c, RPCFaultSlowRead)
		},
	},
	{
		Name: "HADOOP-6723", Catches: PropAvailability,
		What: "an answer the client cannot match (a fatal error, garbage) kills its receiver without failing the calls waiting on the connection: they hang forever",
		apply: func(d drawer, c *RPCCase) {
			c.Config.OrphanOnBadResponse = true
			ensureFault(d, c, RPCFaultGarbage)
		},
	},
	{
		Name: "reader-stops-mid-call", Catches: PropAvailability,
		What: "a reader stops reading a connection at 64 KiB of input even in the middle of a call (this model's did until check sent calls as long as block reports): a longer call never arrives whole, and it and the calls behind it wait until the idle timeout resets the connection",
		apply: func(d drawer, c *RPCCase) {
			c.Config.StopMidCall = true
			addBigCalls(d, c)
		},
	},
	{
		Name: "rpc-input-kept", Catches: PropMemory,
		What: "a connection's input buffer stays the size its largest call grew it to for as long as the connection lives (up to MaxFrame each, where Hadoop's reader allocates each call's buffer afresh)",
		apply: func(d drawer, c *RPCCase) {
			c.Config.KeepInput = true
			addBigCalls(d, c)
		},
	},
	{
		Name: "queue-past-bound", Catches: PropQueueBound,
		What: "readers queue calls whatever the call queue holds, where Hadoop's put blocks them: a burst grows the queue without bound",
		apply: func(d drawer, c *RPCCase) {
			c.Config.QueuePastBound = true
			ensureFault(d, c, RPCFaultBurst)
		},
	},
	{
		Name: "rpc-idle-closes-held-call", Catches: PropAvailability,
		What: "the idle scan counts a connection's calls from the queue's put on (as Hadoop's rpcCount is counted after callQueue.put): a connection whose one call waits whole in its reader for room in a full queue looks idle once the reader has read nothing more of it for the idle timeout, and is closed under the call",
		apply: func(d drawer, c *RPCCase) {
			c.Config.EditLog, c.Config.IdleClosesHeldCall = true, true
			ensureFault(d, c, RPCFaultSyncStall)
		},
	},
	{
		Name: "rpc-deaf-when-not-reading", Catches: PropTimeout,
		What: "the server hears a client hang up only by reading its connection (this model's did until the sync-stall fault): one that closes while its reader has stopped reading it (throttled, or holding a call a full queue refuses) keeps its fd, input and answers until a handler answers one of its calls",
		apply: func(d drawer, c *RPCCase) {
			c.Config.EditLog, c.Config.DeafWhenNotReading = true, true
			ensureFault(d, c, RPCFaultSyncStall)
		},
	},
	{
		Name: "editlog-answer-before-sync", Catches: PropDurable,
		What: "a change is answered once it is logged, before the sync that makes it durable: a namenode crash loses changes its clients were told were done",
		apply: func(d drawer, c *RPCCase) {
			c.Config.EditLog, c.Config.AnswerBeforeSync = true, true
			ensureFault(d, c, RPCFaultSlowSync)
			ensureFault(d, c, RPCFaultNNCrash)
		},
	},
	{
		Name: "editlog-lost-waiter", Catches: PropAvailability,
		What: "a group commit forgets the handlers whose edits were logged while the sync before it was in flight: their edits are synced, their calls never answered",
		config: func(d drawer, cfg *RPCConfig) {
			cfg.Workers = max(cfg.Workers, 2)
			cfg.Handlers = max(cfg.Handlers, 2)
		},
		apply: func(d drawer, c *RPCCase) { c.Config.EditLog, c.Config.LoseGroupWaiters = true, true },
	},
	{
		Name: "editlog-eio-answer", Catches: PropLinearizable,
		What: "a failed edit-log sync answers its changes EIO and the namenode goes on, though they stay applied and visible (this model's namenode did so until the edit-log draws caught it; HDFS exits instead)",
		apply: func(d drawer, c *RPCCase) {
			c.Config.EditLog, c.Config.AnswerEIO = true, true
			ensureFault(d, c, RPCFaultSyncEIO)
		},
	},
	{
		Name: "editlog-replay-sync-only", Catches: PropDurable,
		What: "a restarted namenode fsyncs the log it replayed without writing it again (this model's did so until the disk kept Linux's rule that a failed fsync leaves its pages clean): edits whose sync failed before the restart are served, then lost to a power loss",
		apply: func(d drawer, c *RPCCase) {
			c.Config.EditLog, c.Config.ReplaySyncOnly = true, true
			// A failed sync (the namenode dies and restarts), then a
			// power loss once it serves again.
			for i := 0; i < 3; i++ {
				at := faultNearOp(d, c)
				c.Faults = append(c.Faults, drawRPCFault(d, &c.Config, RPCFaultSyncEIO, at),
					drawRPCFault(d, &c.Config, RPCFaultNNPower, at+d.dur(5*time.Millisecond, 200*time.Millisecond, "bug_power_after")))
			}
			sortRPCFaults(c.Faults)
		},
	},
	{
		Name: "invalidate-before-sync", Catches: PropDurable,
		What: "a deleted file's blocks are deleted on the datanode before the delete is durable (this model's namenode did so until the edit-log draws caught it): a namenode crash brings the file back without its blocks",
		apply: func(d drawer, c *RPCCase) {
			c.Config.EditLog, c.Config.InvalidateBeforeSync = true, true
			// Deletes of complete files, which the drawn paths seldom
			// make: some writes are followed by deleting what they wrote.
			c.Ops = deleteWritten(d, c, "bug_delete", func() time.Duration { return d.dur(0, 500*time.Microsecond, "bug_gap") })
			// Those come anywhere in a worker's ops: so do the faults.
			for i := 0; i < 3; i++ {
				c.Faults = append(c.Faults, drawRPCFault(d, &c.Config, RPCFaultSlowSync, faultNearOp(d, c)),
					drawRPCFault(d, &c.Config, RPCFaultNNPower, faultNearOp(d, c)))
			}
			sortRPCFaults(c.Faults)
		},
	},
}

// Fixed is c with every bug switched off: the same case on the fixed code.
func (c RPCCase) Fixed() RPCCase {
	c.Bug = ""
	cfg := &c.Config
	cfg.HandlerWaitsForWrite, cfg.DropPartial, cfg.ReuseIDs, cfg.OrphanOnBadResponse, cfg.UnboundedResponses = false, false, false, false, false
	cfg.AnswerBeforeSync, cfg.LoseGroupWaiters, cfg.InvalidateBeforeSync, cfg.AnswerEIO, cfg.ReplaySyncOnly = false, false, false, false, false
	cfg.QueuePastBound, cfg.QueuedReplyShares, cfg.StopMidCall, cfg.KeepInput, cfg.IdleClosesHeldCall = false, false, false, false, false
	cfg.DeafWhenNotReading, cfg.ServesDeadCalls = false, false
	return c
}

// LookupRPCBug finds a catalogued rpc bug; ok is false for other names.
func LookupRPCBug(name string) (RPCBug, bool) {
	for _, b := range RPCBugs {
		if b.Name == name {
			return b, true
		}
	}
	return RPCBug{}, false
}

func growClients(cfg *RPCConfig, n int) {
	for cfg.Clients < n {
		cfg.Clients++
		cfg.Pieces = append(cfg.Pieces, 0)
	}
}

func ensureFault(d drawer, c *RPCCase, kind string) {
	for _, f := range c.Faults {
		if f.Kind == kind {
			return
		}
	}
	at := d.dur(0, 2*time.Millisecond, "bug_at")
	c.Faults = append(c.Faults, drawRPCFault(d, &c.Config, kind, at))
	sortRPCFaults(c.Faults)
}

// addBigCalls adds a big-calls fault near an op of c's workload, on a
// client that writes whole calls (a big call sent in pieces is not one).
func addBigCalls(d drawer, c *RPCCase) {
	f := drawRPCFault(d, &c.Config, RPCFaultBigCalls, faultNearOp(d, c))
	c.Config.Pieces[f.Client] = 0
	c.Faults = append(c.Faults, f)
	sortRPCFaults(c.Faults)
}

// faultNearOp draws a time shortly after some op of c's workload starts.
func faultNearOp(d drawer, c *RPCCase) time.Duration {
	spans := map[[2]int]time.Duration{}
	var starts []time.Duration
	for _, op := range c.Ops {
		k := [2]int{op.Client, op.Worker}
		spans[k] += op.Gap + 300*time.Microsecond
		starts = append(starts, spans[k])
	}
	return starts[d.n(0, len(starts)-1, "bug_near")] + d.dur(0, 2*time.Millisecond, "bug_after")
}

// Names the workload uses: a small universe, so ops collide.
var rpcNames = []string{"a", "b", "c"}

func drawPath(d drawer, label string) string {
	depth := d.n(1, 3, label+"_depth")
	var b strings.Builder
	for i := 0; i < depth; i++ {
		b.WriteString("/")
		b.WriteString(pick(d, label, rpcNames...))
	}
	return b.String()
}

// DrawRPC makes an rpc case from src; bug is "" or an rpc bug's name.
func DrawRPC(src Source, seed uint64, bug string) (RPCCase, error) {
	b, ok := LookupRPCBug(bug)
	if !ok && bug != "" {
		return RPCCase{}, fmt.Errorf("unknown rpc bug %q", bug)
	}
	d := drawer{src}
	c := RPCCase{Seed: seed, Bug: bug}
	cfg := &c.Config
	cfg.Readers = d.n(1, 3, "readers")
	cfg.Handlers = d.n(1, 3, "handlers")
	cfg.QueueSize = pick(d, "queue", 1, 2, 4, 16)
	cfg.Lock = pick(d, "lock", "mutex", "rwlock")
	cfg.Clients = d.n(1, 4, "clients")
	cfg.Workers = d.n(1, 3, "workers")
	cfg.CallTimeout = pick(d, "call_timeout", 300*time.Millisecond, time.Second)
	cfg.ServerIdle = pick(d, "server_idle", 500*time.Millisecond, 2*time.Second)
	cfg.ClientIdle = pick(d, "client_idle", 200*time.Millisecond, time.Second, 4*time.Second)
	cfg.Pieces = make([]int, cfg.Clients)
	cfg.BigDir = 100
	for i := range cfg.Pieces {
		if d.chance(20, "pieces") {
			cfg.Pieces[i] = pick(d, "piece", 1, 5, 64)
		}
	}
	if b.config != nil {
		b.config(d, cfg)
	}
	var starts []time.Duration
	for cl := 0; cl < cfg.Clients; cl++ {
		for wk := 0; wk < cfg.Workers; wk++ {
			var span time.Duration
			for i, n := 0, d.n(1, 12, "ops"); i < n; i++ {
				op := drawRPCOp(d)
				op.Client, op.Worker = cl, wk
				span += op.Gap + 300*time.Microsecond
				starts = append(starts, span)
				c.Ops = append(c.Ops, op)
			}
		}
	}
	if !d.chance(30, "fault_free") {
		var kinds []string
		for _, k := range RPCFaultKinds {
			if !nnFault(k) && !slices.Contains(rpcFaultsDrawnLast, k) && d.chance(40, "fault_"+k) {
				kinds = append(kinds, k)
			}
		}
		for _, k := range kinds {
			for i, n := 0, d.n(1, 2, "fault_count"); i < n; i++ {
				at := nearOp(d, starts)
				c.Faults = append(c.Faults, drawRPCFault(d, cfg, k, at))
			}
		}
		sortRPCFaults(c.Faults)
	}
	for cl := 0; cl < cfg.Clients; cl++ {
		for i, n := 0, d.n(1, 3, "live_ops"); i < n; i++ {
			op := drawRPCOp(d)
			op.Client, op.Gap = cl, d.dur(0, 2*time.Millisecond, "live_gap")
			c.Live = append(c.Live, op)
		}
	}
	// Drawn last, so the draws before it make the cases they made before.
	// Above a few list answers of /big (some 22 KB each), so that handlers
	// held by the responder-blocks-handler bug stay under it.
	cfg.MaxPending = pick(d, "max_pending", 128<<10, 512<<10, 1<<20)
	cfg.HadoopReader = d.chance(30, "hadoop_reader")
	if cfg.EditLog = d.chance(60, "edit_log"); cfg.EditLog && !d.chance(40, "nn_fault_free") {
		for _, k := range []string{RPCFaultNNCrash, RPCFaultNNTorn, RPCFaultNNPower, RPCFaultSyncEIO, RPCFaultSlowSync} {
			if d.chance(45, "fault_"+k) {
				at := nearOp(d, starts)
				c.Faults = append(c.Faults, drawRPCFault(d, cfg, k, at))
			}
		}
		sortRPCFaults(c.Faults)
	}
	if b.apply != nil {
		b.apply(d, &c)
	}
	// Drawn after the rest, a bug's too, so the draws before make the
	// cases they made before these came (a bug's may have set them).
	if sb := pick(d, "nn_sndbuf", 0, 0, 4096, 16384); cfg.NNSndBuf == 0 {
		cfg.NNSndBuf = sb
	}
	if d.chance(20, "fault_"+RPCFaultSlowRead) {
		at := nearOp(d, starts)
		f := drawRPCFault(d, cfg, RPCFaultSlowRead, at)
		// (Drawn even when a bug's brought one: one slow reader keeps
		// its answers under the bound.)
		if !slices.ContainsFunc(c.Faults, func(g RPCFault) bool { return g.Kind == RPCFaultSlowRead }) {
			c.Faults = append(c.Faults, f)
			sortRPCFaults(c.Faults)
		}
	}
	// Drawn last, as above: the namenode's disk failing reads, writes
	// and fsyncs (its edit log's, and at a restart the replay's read and
	// rewrite); the namenode stopped while calls are in flight, which
	// time out and are answered, once it runs again, on connections that
	// may be gone.
	if cfg.EditLog && d.chance(15, "fault_"+RPCFaultDiskEIO) {
		c.Faults = append(c.Faults, drawRPCFault(d, cfg, RPCFaultDiskEIO, nearOp(d, starts)))
	}
	if d.chance(15, "fault_"+RPCFaultNNPause) {
		c.Faults = append(c.Faults, drawRPCFault(d, cfg, RPCFaultNNPause, nearOp(d, starts)))
	}
	// Drawn last: a client that stops reading and, unlike the slow one,
	// whose answers stay under the bound, so that the server keeps its
	// connection and the client must read on from where it stopped.
	if d.chance(20, "fault_"+RPCFaultStall) {
		c.Faults = append(c.Faults, drawRPCFault(d, cfg, RPCFaultStall, nearOp(d, starts)))
	}
	// Drawn last: calls as long as HDFS's block reports, which the
	// reader must take whole (up to the frame bound) and no further;
	// not from a client that writes in pieces (a byte every 3 µs: a
	// megabyte would take 3 s).
	if d.chance(15, "fault_"+RPCFaultBigCalls) {
		if f := drawRPCFault(d, cfg, RPCFaultBigCalls, nearOp(d, starts)); cfg.Pieces[f.Client] == 0 {
			c.Faults = append(c.Faults, f)
		}
	}
	sortRPCFaults(c.Faults)
	// Drawn last (not for a bug's cases): small list pages, some lists
	// starting after a name the directory may not hold ("bb").
	if bug == "" && d.chance(30, "list_limit") {
		cfg.ListLimit = d.n(1, 2, "list_limit_n")
		for i := range c.Ops {
			if c.Ops[i].Kind == "list" && d.chance(30, "list_after") {
				c.Ops[i].After = pick(d, "list_after_name", "a", "b", "bb", "c")
			}
		}
	}
	// Drawn after the rest (not for a bug's cases): some writes followed
	// at once by deleting what they wrote, whose blocks the datanode must
	// then lose (leak-freedom); the drawn paths seldom delete a file
	// written.
	if bug == "" && d.chance(25, "delete_written") {
		c.Ops = deleteWritten(d, &c, "delete_written_op", nil)
	}
	// Drawn last: a client that reads on, slowly, while it asks at once
	// for more than MaxPending holds (the slow fault's client has
	// stopped): the server must throttle it, never close it
	// (serverClosed holds its connection to the idle rule, as an
	// untouched client's), and what it takes must be whole frames
	// (stream-integrity). A server that closed a connection over the
	// bound closed it. Only where the slow listings' bound leaves room
	// for it.
	if d.chance(15, "fault_"+RPCFaultSlowOver) {
		f := drawRPCFault(d, cfg, RPCFaultSlowOver, nearOp(d, starts))
		if (slowListings(c.Faults)+f.N)*cfg.BigDir <= rpcMaxSlowListings && len(c.Faults) < rpcMaxFaults {
			c.Faults = append(c.Faults, f)
			sortRPCFaults(c.Faults)
		}
	}
	// Drawn last: the namenode's cap on a connection's calls in flight.
	// The default (100) throttles only the faults' hundreds of calls; a
	// cap of one makes every connection's calls go one at a time, and a
	// few throttle the workers' own.
	cfg.MaxInFlight = pick(d, "max_in_flight", 0, 0, 1, 4, 16)
	// Drawn last: a client that asks for more than its connection may
	// hold and never reads again (a stopped process). The throttle
	// bounds what the namenode holds for it, and only the purge ends it:
	// the namenode must close it within an idle timeout and a scan of
	// its last reading from or writing to it, and no sooner
	// (checkStuck), while the other clients are served as ever.
	if d.chance(15, "fault_"+RPCFaultStuck) && len(c.Faults) < rpcMaxFaults {
		c.Faults = append(c.Faults, drawRPCFault(d, cfg, RPCFaultStuck, nearOp(d, starts)))
		sortRPCFaults(c.Faults)
	}
	// Drawn last (with the edit log): a sync that stalls for seconds, as
	// a namenode's edits disk may. Every handler whose change waits for
	// it is held, the queue fills and the readers block on it for longer
	// than the idle timeout, with whole calls waiting in connections they
	// hold unqueued, which the idle scan must not close; clients whose
	// calls time out meanwhile hang up idle while the reader is not
	// reading them, and must be heard (checkGone).
	if cfg.EditLog && d.chance(15, "fault_"+RPCFaultSyncStall) && len(c.Faults) < rpcMaxFaults {
		c.Faults = append(c.Faults, drawRPCFault(d, cfg, RPCFaultSyncStall, nearOp(d, starts)))
		sortRPCFaults(c.Faults)
	}
	// Drawn last: a client that pipelines a burst and hangs up without
	// waiting for the answers (one that gave up, about to retry on a new
	// connection). The calls of it still queued when the namenode hears
	// it go are skipped, each freeing a place in the queue.
	if d.chance(15, "fault_"+RPCFaultQuitBurst) && len(c.Faults) < rpcMaxFaults {
		c.Faults = append(c.Faults, drawRPCFault(d, cfg, RPCFaultQuitBurst, nearOp(d, starts)))
		sortRPCFaults(c.Faults)
	}
	return c, c.Validate()
}

// deleteWritten is c's ops with, after some writes of blocks (each drawn
// with label, half the time), a delete by the same worker of what the
// write wrote, gap after it (nil: none), as far as rpcMaxOps allows.
func deleteWritten(d drawer, c *RPCCase, label string, gap func() time.Duration) []RPCOp {
	var ops []RPCOp
	added := 0
	for _, op := range c.Ops {
		ops = append(ops, op)
		if op.Kind == "write" && op.Blocks > 0 && len(c.Ops)+len(c.Live)+added < rpcMaxOps && d.chance(50, label) {
			added++
			del := RPCOp{Client: op.Client, Worker: op.Worker, Kind: "delete", Path: op.Path}
			if gap != nil {
				del.Gap = gap()
			}
			ops = append(ops, del)
		}
	}
	return ops
}

// slowListings is how many listings of /big the slow clients of faults
// ask for, which Validate bounds (rpcMaxSlowListings names in all).
func slowListings(faults []RPCFault) int {
	n := 0
	for _, f := range faults {
		switch f.Kind {
		case RPCFaultSlow, RPCFaultSlowRead, RPCFaultStall, RPCFaultSlowOver:
			n += f.N
		}
	}
	return n
}

// nearOp draws a time shortly after one of starts, the ops' estimated
// starts: faults strike near ops, where they matter.
func nearOp(d drawer, starts []time.Duration) time.Duration {
	return starts[d.n(0, len(starts)-1, "fault_near")] + d.dur(0, 2*time.Millisecond, "fault_after")
}

func drawRPCOp(d drawer) RPCOp {
	op := RPCOp{Path: drawPath(d, "path")}
	switch g := d.n(0, 9, "gap_kind"); {
	case g < 7:
		op.Gap = d.dur(0, 500*time.Microsecond, "gap")
	default:
		op.Gap = d.dur(time.Millisecond, 30*time.Millisecond, "gap")
	}
	switch k := d.n(0, 99, "kind"); {
	case k < 15:
		op.Kind = "mkdir"
	case k < 35:
		op.Kind = "write"
		op.Blocks = d.n(0, 2, "blocks")
		op.Size = d.n(1, 3000, "size")
	case k < 55:
		op.Kind = "list"
	case k < 65:
		op.Kind = "stat"
	case k < 80:
		op.Kind = "read"
	case k < 90:
		op.Kind = "delete"
	default:
		op.Kind = "rename"
		op.Dst = drawPath(d, "dst")
	}
	return op
}

func drawRPCFault(d drawer, cfg *RPCConfig, kind string, at time.Duration) RPCFault {
	f := RPCFault{At: at, Kind: kind, Client: d.n(0, cfg.Clients-1, "fault_client")}
	switch kind {
	case RPCFaultSlow:
		f.Dur = pick(d, "slow_dur", 2*time.Second, 4*time.Second)
		// Twice the default cap on calls in flight (MaxInFlight, 100)
		// or more, so that a server that ignores it holds past it
		// (rpc-unbounded-responses) even when another fault cuts the
		// connection early (at 150, 2 of that bug's first 200 seeds
		// passed). Each answer, some 22 KB, is drained in the end:
		// 300 or 500 calls were a third of the rpc seeds' events.
		f.N = pick(d, "slow_calls", 200, 300)
	case RPCFaultSlowRead:
		f.Dur = pick(d, "slow_dur", 2*time.Second, 4*time.Second)
		f.N = d.n(1, 4, "slow_read_calls")
	case RPCFaultSlowOver:
		f.Dur = pick(d, "slow_dur", 2*time.Second, 4*time.Second)
		// Past MaxPending (1 MiB at most, some 48 answers of /big) by
		// a quarter at least.
		f.N = d.n(60, 180, "slow_over_calls")
	case RPCFaultStall:
		// Under the server's idle timeout, so that the server keeps the
		// connection even when the answers fit in the socket buffers.
		f.Dur = pick(d, "stall_dur", 20*time.Millisecond, cfg.ServerIdle/2)
		f.N = d.n(1, 4, "stall_calls")
	case RPCFaultBigCalls:
		f.N = pick(d, "big_call_kib", 100, 400, rpcMaxBigCallKiB)
	case RPCFaultStuck:
		// Past the default cap; Dur holds the workload phase open past
		// the purge, which comes within 1.5 idle timeouts of the
		// namenode's last move on the connection.
		f.N = d.n(101, 300, "stuck_calls")
		f.Dur = 2 * cfg.ServerIdle
	case RPCFaultBurst:
		// Past the queue (16 at most), and at most twice the default
		// cap on calls in flight (300 caught no catalogued bug more).
		f.N = pick(d, "burst", 20, 100, 200)
	case RPCFaultQuitBurst:
		// More than the queue (16 at most) and the handlers (3) take at
		// once, so that some wait in the queue when the hangup comes;
		// after one handler's call at least (a hangup heard with the
		// calls, in the same read, leaves none queued).
		f.N = d.n(20, 100, "quit_burst_calls")
		f.Dur = pick(d, "quit_burst_after", 50*time.Microsecond, 300*time.Microsecond, time.Millisecond)
	case RPCFaultCrash, RPCFaultNNCrash, RPCFaultNNPower:
		f.Dur = pick(d, "downtime", 5*time.Millisecond, 100*time.Millisecond)
	case RPCFaultNNTorn:
		f.Dur = pick(d, "downtime", 5*time.Millisecond, 100*time.Millisecond)
		f.N = d.n(0, 15, "crash_write")
	case RPCFaultSyncEIO:
		f.Dur = pick(d, "eio_dur", time.Millisecond, 20*time.Millisecond)
		f.N = pick(d, "eio_permille", 100, 500, 1000)
	case RPCFaultDiskEIO:
		f.Dur = pick(d, "disk_eio_dur", time.Millisecond, 20*time.Millisecond)
		f.N = pick(d, "disk_eio_permille", 100, 500, 1000)
	case RPCFaultNNPause:
		// Under the call timeout, or just past it: the calls in flight
		// time out, one each. (Longer, a worker's every call times out
		// in turn, and so many changes of unknown outcome leave the
		// history past what the linearizability checker can decide.)
		f.Dur = pick(d, "pause_dur", 50*time.Millisecond, cfg.CallTimeout+100*time.Millisecond)
	case RPCFaultSyncStall:
		// Past an idle timeout and the scan after it, for a call read
		// once the queue is full.
		f.Dur = pick(d, "sync_stall_dur", 2*cfg.ServerIdle, 3*cfg.ServerIdle)
	case RPCFaultSlowSync:
		f.Dur = pick(d, "slow_sync_dur", 5*time.Millisecond, 50*time.Millisecond)
		f.N = pick(d, "slow_sync_permille", 300, 1000)
	}
	return f
}

func sortRPCFaults(fs []RPCFault) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].At < fs[j-1].At; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// Bounds of an rpc case read from a trace, each well above what DrawRPC
// makes (its largest in parentheses). Together they keep a run to seconds
// and a few hundred MB, and its phases (the workload, its faults, the
// heal's two call timeouts, the liveness phase, the idle timeouts at
// quiescence) to under 3 minutes, inside rpcRunLimit: a hand-edited
// number past them is bad input, not a failure of the code under test.
const (
	// 4 clients × 3 workers × 12 ops, each followed by a delete under
	// invalidate-before-sync (288); 3 liveness calls a client (12).
	rpcMaxOps = 2048
	// A gap (30 ms), a worker's gaps (12 ops and their deletes: 366
	// ms), a client's liveness gaps (3 × 2 ms): these must leave the
	// liveness phase most of its rpcLiveTimeout.
	rpcMaxGap        = 10 * time.Second
	rpcMaxWorkerGaps = 30 * time.Second
	rpcMaxLiveGaps   = time.Second
	// Faults (25), their start (by a worker's last op: 368 ms) and
	// length (a slow client's 4 s).
	rpcMaxFaults   = 256
	rpcMaxFaultAt  = 30 * time.Second
	rpcMaxFaultDur = 30 * time.Second
	// Timeouts (call 1 s, idle 4 s).
	rpcMaxCallTimeout = 10 * time.Second
	rpcMaxIdle        = 30 * time.Second
	// Block data written (288 writes of 2 blocks of 3,000 bytes).
	rpcMaxWriteBytes = 64 << 20
	// /big's files (100), and the listings of it slow faults ask for (2
	// faults of 500 calls: 100,000 file names) and the calls bursts
	// make (2 of 300). Past these, a run's history grows, or its slow
	// clients hold calls open long enough, for the linearizability
	// checker to take seconds and GBs before it gives up.
	rpcMaxBigDir       = 400
	rpcMaxSlowListings = 200_000
	rpcMaxBurstCalls   = 2000
	// A client's write piece (64; the partial-call-lost bug's 16).
	rpcMaxPiece = 1 << 16
	// The namenode's cap on a connection's calls in flight (16; the
	// default 100).
	rpcMaxInFlight = 1 << 16
	// The namenode's least send buffer (the smallest drawn): at 1 KiB
	// the server sends a KiB per delayed ACK, some 23 KB/s, and a slow
	// reader's listings hold its liveness call past its timeout on
	// correct code (seed 329 at 1,024 bytes).
	rpcMinSndBuf = 4096
	// How far apart the namenode's close of a connection and what
	// caused it, or what it crossed, may be seen: a FIN or a call
	// crosses the loopback in microseconds.
	rpcCloseSlack = time.Millisecond
	// The longest of the big-calls fault's calls, in KiB: the most under
	// the frame bound (1 MiB with its 5 bytes of framing).
	rpcMaxBigCallKiB = 1023
	// rpcBigCallMethod is a method the namespace does not have, which
	// the big-calls fault calls: it answers StatusUnknownMethod.
	rpcBigCallMethod = 0xB0
)

// rpcOpKinds are the ops issue runs.
var rpcOpKinds = []string{"mkdir", "write", "list", "stat", "read", "delete", "rename"}

// rpcFaultN is the range of N per fault kind (drawRPCFault): calls of a
// slow client or a burst, a disk op to crash at, a per mille share of
// syncs. The other kinds take none.
var rpcFaultN = map[string][2]int{
	RPCFaultSlow:      {0, 2000}, // (200 or 300)
	RPCFaultSlowRead:  {0, 4},    // (1 to 4: under the bound on what a connection may hold)
	RPCFaultStall:     {0, 4},    // (likewise)
	RPCFaultSlowOver:  {0, 2000}, // (60 to 180: past the bound)
	RPCFaultBigCalls:  {1, rpcMaxBigCallKiB},
	RPCFaultStuck:     {1, 300},  // (101 to 300; each call's answer lists /big)
	RPCFaultBurst:     {0, 2000}, // (20 to 200)
	RPCFaultQuitBurst: {1, 2000}, // (20 to 100)
	RPCFaultNNTorn:    {0, 1000}, // (0 to 15)
	RPCFaultSyncEIO:   {0, 1000},
	RPCFaultSlowSync:  {0, 1000},
	RPCFaultDiskEIO:   {0, 1000},
}

// Validate refuses a case that cannot run.
func (c *RPCCase) Validate() error {
	if c.Bug != "" {
		if _, ok := LookupRPCBug(c.Bug); !ok {
			return fmt.Errorf("rpc case: unknown bug %q", c.Bug)
		}
	}
	cfg := &c.Config
	switch {
	case cfg.Readers < 1 || cfg.Readers > 16 || cfg.Handlers < 1 || cfg.Handlers > 64 || cfg.QueueSize < 1 || cfg.QueueSize > 1<<16:
		return fmt.Errorf("rpc: readers, handlers or queue out of range")
	case cfg.Lock != "mutex" && cfg.Lock != "rwlock":
		return fmt.Errorf("rpc: lock %q", cfg.Lock)
	case cfg.Clients < 1 || cfg.Clients > 16 || cfg.Workers < 1 || cfg.Workers > 16:
		return fmt.Errorf("rpc: clients or workers out of range")
	case len(cfg.Pieces) != cfg.Clients:
		return fmt.Errorf("rpc: %d pieces for %d clients: want one a client", len(cfg.Pieces), cfg.Clients)
	case cfg.CallTimeout <= 0 || cfg.ServerIdle <= 0 || cfg.ClientIdle <= 0:
		return fmt.Errorf("rpc: timeouts must be positive")
	case cfg.CallTimeout > rpcMaxCallTimeout || cfg.ServerIdle > rpcMaxIdle || cfg.ClientIdle > rpcMaxIdle:
		return fmt.Errorf("rpc: call timeout %v, idle timeouts %v and %v: want at most %v and %v", cfg.CallTimeout, cfg.ServerIdle, cfg.ClientIdle, rpcMaxCallTimeout, rpcMaxIdle)
	case cfg.BigDir < 0 || cfg.BigDir > rpcMaxBigDir:
		return fmt.Errorf("rpc: big dir %d outside [0, %d]", cfg.BigDir, rpcMaxBigDir)
	case cfg.ListLimit < 0 || cfg.ListLimit > namespace.ListLimit:
		return fmt.Errorf("rpc: list limit %d outside [0, %d]", cfg.ListLimit, namespace.ListLimit)
	case cfg.MaxPending < 0 || cfg.MaxPending > 1<<30:
		return fmt.Errorf("rpc: max pending out of range")
	case cfg.MaxInFlight < 0 || cfg.MaxInFlight > rpcMaxInFlight:
		return fmt.Errorf("rpc: max in flight %d outside [0, %d] (0: the server's default)", cfg.MaxInFlight, rpcMaxInFlight)
	case cfg.NNSndBuf != 0 && (cfg.NNSndBuf < rpcMinSndBuf || cfg.NNSndBuf > 1<<30):
		return fmt.Errorf("rpc: namenode send buffer %d outside [%d, %d] (0: the world's)", cfg.NNSndBuf, rpcMinSndBuf, 1<<30)
	}
	for i, n := range cfg.Pieces {
		if n < 0 || n > rpcMaxPiece {
			return fmt.Errorf("rpc: client %d writes in pieces of %d bytes: want 0 (whole) to %d", i, n, rpcMaxPiece)
		}
	}
	if err := checkIgnore("rpc", c.Ignore, RPCProperties); err != nil {
		return err
	}
	if n := len(c.Ops) + len(c.Live); n > rpcMaxOps {
		return fmt.Errorf("rpc: %d ops, more than %d", n, rpcMaxOps)
	}
	written := 0
	// A worker's workload ops run one after another, each a gap after
	// the last returned, and so do a client's liveness ops.
	for _, list := range []struct {
		name      string
		ops       []RPCOp
		max       time.Duration // a sequence's gaps, in all
		perWorker bool
	}{{"workload", c.Ops, rpcMaxWorkerGaps, true}, {"liveness", c.Live, rpcMaxLiveGaps, false}} {
		waits := map[[2]int]time.Duration{}
		for _, op := range list.ops {
			if op.Client < 0 || op.Client >= cfg.Clients || op.Worker < 0 || op.Worker >= cfg.Workers {
				return fmt.Errorf("rpc: op names client %d worker %d", op.Client, op.Worker)
			}
			if !slices.Contains(rpcOpKinds, op.Kind) {
				return fmt.Errorf("rpc: unknown op %q (want %s)", op.Kind, strings.Join(rpcOpKinds, ", "))
			}
			if op.Blocks < 0 || op.Blocks > 8 || op.Size < 0 || op.Size > 1<<20 {
				return fmt.Errorf("rpc: op sizes out of range")
			}
			// The namespace refuses a malformed path as the model does;
			// one past its bound would not even fit the call's frame.
			if _, ok := namespace.SplitPath(op.Path); !ok {
				return fmt.Errorf("rpc: %s op: path %.64q: want an absolute path of at most %d bytes, without empty, . or .. components or one over %d bytes", op.Kind, op.Path, namespace.MaxPathLen, namespace.MaxComponentLen)
			}
			if _, ok := namespace.SplitPath(op.Dst); (op.Kind == "rename") != ok {
				return fmt.Errorf("rpc: %s op: destination %.64q: want an absolute path on a rename, none otherwise", op.Kind, op.Dst)
			}
			if op.After != "" && (op.Kind != "list" || len(op.After) > namespace.MaxComponentLen) {
				return fmt.Errorf("rpc: %s op: after %.64q: want a name of at most %d bytes, on a list only", op.Kind, op.After, namespace.MaxComponentLen)
			}
			if op.Gap < 0 || op.Gap > rpcMaxGap {
				return fmt.Errorf("rpc: %s op: gap %v outside [0, %v]", op.Kind, op.Gap, rpcMaxGap)
			}
			k := [2]int{op.Client, op.Worker}
			if !list.perWorker {
				k[1] = 0
			}
			// (At most 10 s each, 2048 of them: no wrap.)
			if waits[k] += op.Gap; waits[k] > list.max {
				return fmt.Errorf("rpc: %s ops of client %d wait more than %v in all", list.name, op.Client, list.max)
			}
			if op.Kind == "write" {
				written += op.Blocks * op.Size
			}
		}
	}
	if written > rpcMaxWriteBytes {
		return fmt.Errorf("rpc: writes of %d bytes, more than %d", written, rpcMaxWriteBytes)
	}
	if len(c.Faults) > rpcMaxFaults {
		return fmt.Errorf("rpc: %d faults, more than %d", len(c.Faults), rpcMaxFaults)
	}
	burst := 0
	for _, f := range c.Faults {
		n := rpcFaultN[f.Kind]
		switch {
		case !slices.Contains(RPCFaultKinds, f.Kind) || f.Client < 0 || f.Client >= cfg.Clients:
			return fmt.Errorf("rpc: bad fault %+v", f)
		case f.N < n[0] || f.N > n[1]:
			return fmt.Errorf("rpc: fault %s: n %d outside [%d, %d]", f.Kind, f.N, n[0], n[1])
		case f.At < 0 || f.At > rpcMaxFaultAt || f.Dur < 0 || f.Dur > rpcMaxFaultDur:
			return fmt.Errorf("rpc: fault %s at %v for %v: want [0, %v], for [0, %v]", f.Kind, f.At, f.Dur, rpcMaxFaultAt, rpcMaxFaultDur)
		}
		if (nnFault(f.Kind) || f.Kind == RPCFaultSyncStall) && !cfg.EditLog {
			return fmt.Errorf("rpc: fault %s needs the edit log", f.Kind)
		}
		if f.Kind == RPCFaultBigCalls && cfg.Pieces[f.Client] > 0 {
			return fmt.Errorf("rpc: fault %s on client %d, which writes in pieces of %d bytes", f.Kind, f.Client, cfg.Pieces[f.Client])
		}
		if f.Kind == RPCFaultBurst {
			burst += f.N
		}
	}
	switch slow := slowListings(c.Faults); {
	case slow*cfg.BigDir > rpcMaxSlowListings:
		return fmt.Errorf("rpc: slow clients list /big (%d files) %d times: more than %d names in all", cfg.BigDir, slow, rpcMaxSlowListings)
	case burst > rpcMaxBurstCalls:
		return fmt.Errorf("rpc: bursts of %d calls in all, more than %d", burst, rpcMaxBurstCalls)
	}
	return nil
}

// --- running a case ---

const (
	rpcNN          = "namenode:8020"
	rpcDN          = "datanode:50010"
	rpcFirstBlock  = 1 << 30
	rpcRunLimit    = 5 * time.Minute
	rpcLiveTimeout = 10 * time.Second
	// rpcIdleSlack covers the trip of a client's last bytes to the
	// server, whose idle clock starts when it reads them.
	rpcIdleSlack = time.Millisecond
)

// RPCResult is a run's outcome.
type RPCResult struct {
	Failure *Failure
	Events  uint64
	// SimEvents are the events the simulator processed
	// (sim.World.Events, what BenchmarkSimEvents counts); Events counts
	// the trace's records.
	SimEvents uint64
	TraceHash string
	Calls     int
	History   []porcupine.Operation
	// Throttled counts the times the namenode stopped taking a
	// connection's calls for what it had in flight or pending (read when
	// the run ended quietly).
	Throttled int
	// Purged counts the connections the namenode purged for answers
	// untaken (read likewise).
	Purged int
	// StuckJudged counts the stuck pipeliners' connections whose close
	// checkStuck judged.
	StuckJudged int
	// Skipped counts the calls the namenode's handlers took and did not
	// serve, their connection closed while they waited (read likewise).
	Skipped int
	// NamenodeCrashes counts the namenode's crashes (drawn, or fatal
	// edit-log syncs).
	NamenodeCrashes int
}

type rpcCall struct {
	input   NSInput
	client  int
	call    int64
	ret     int64
	out     NSOutput
	done    int
	live    bool
	untouch bool // the client was never touched by a fault
	load    bool // a burst's or slow client's listing: checked for its end, not in the history
	epoch   int  // the namenode incarnation the call went to (crashes before its call)
	// down: called while the namenode was down; unsent: it also ended
	// before the namenode came back, so no incarnation saw it.
	down, unsent bool
	idle         idleMark
}

// idleMark, when srv is set: a call went on a connection silent for the
// server's idle timeout, and that server had closed closes connections as
// idle when the client last called (see raced).
type idleMark struct {
	srv    *rpc.Server
	closes int
}

type rpcClient struct {
	i      int
	p      *sim.Process
	rc     *rpc.Client
	nc     *namespace.Client
	dc     *model.Client
	base   int // fds after start
	faulty bool
	// reading: every fault that touches the client leaves it reading
	// (readingFault), so the namenode's closes of its connection are
	// judged as an untouched client's are.
	reading bool
	// slowFrom is when the client's first slow-read or slow-over fault
	// began (0: none yet; faults start after the run's first moment).
	slowFrom time.Duration
	// garbled counts the garbage faults sent on the client's connection:
	// each may earn one fatal answer, the only response stream a correct
	// server sends that the client cannot follow.
	garbled int
	// garbageDials is the client's count of dials when it last sent
	// garbage: while it is still the count, the garbage went on the
	// connection the client has now.
	garbageDials int
	// The namenode's rpc server and its count of idle closes when the
	// client last made a call.
	idleSrv    *rpc.Server
	idleCloses int
}

type rpcHarness struct {
	c        *RPCCase
	hashOnly bool // no history check (RPCTraceHash)
	w        *sim.World
	nn       *namespace.Namenode
	nnProc   *sim.Process
	dnProc   *sim.Process
	nnBase   int
	clients  []*rpcClient
	calls    []*rpcCall
	failure  *Failure
	running  int // workers still running
	phase    string
	dnDown   bool
	crashed  bool
	extraFDs int // connections faults open on their own
	// worldEpoch is the world's epoch when afterEach last checked the
	// namenode and clients (epochSeen: it has).
	worldEpoch uint64
	epochSeen  bool
	// written is each block a client wrote, by id: where and when its
	// write ended OK (checkReclaimed).
	written map[uint64]blockWrite
	// invErrs is the namenode's InvalidateErrors when it is closed at
	// rest (after waiting for its deletions), and invPending its
	// deletions not yet done then.
	invErrs, invPending int
	// The namenode's incarnations: epoch counts its crashes, images[k]
	// is the tree incarnation k started from (replayed from the log).
	epoch   int
	images  []*nsState // nil: that incarnation crashed before it served
	crashes []int64    // when each crash happened, on the history's clock
	nnDown  bool
	nnUps   int // restarts of the namenode
	// pauses are when each namenode pause began and ended.
	pauses spans
	// stalls are when each sync-stall fault began, and when its stall
	// ends at the latest.
	// The workers issue nothing before the last one's end.
	stalls spans
	// heard is when each namenode connection (by id) was first seen to
	// have heard its client's FIN or reset (checkGone).
	heard map[uint64]time.Duration
	// bigFixed is /big as the model keeps it apart (populate).
	bigFixed *nsFixed
	// atRest is the tree the namenode served at rest, which the restart
	// after the power loss at the end must replay (replayAtRest).
	atRest *nsState
	dn     *model.Datanode
	// stuck are the stuck faults' connections (checkStuck), stuckJudged
	// the closes of them it judged.
	stuck       []*stuckConn
	stuckJudged int
	quitters    int // quit-burst faults' processes spawned
}

// stuckConn is a stuck fault's connection, which the namenode must purge
// on time.
type stuckConn struct {
	client int
	dialed time.Duration
	// conn is the stuck process's end: its address is the namenode's
	// connection's remote (ConnHeld), its peer the namenode's end
	// (sim.PeerActivity).
	conn model.Conn
	done bool // closed and judged, or no longer judged
	// over is when the namenode's responses on it last went past
	// MaxPending and have stayed there since (0: they are within it);
	// overCalls, the calls it had taken rpcStopLag after that (-1: not
	// yet looked).
	over      time.Duration
	overCalls int
}

// RunRPC runs an rpc case in sim and checks its properties.
func RunRPC(c RPCCase) *RPCResult {
	return RunRPCTraced(c, nil)
}

// RunRPCTraced is RunRPC writing every event as a JSON line to out (nil:
// nowhere), for replay's HTML view.
func RunRPCTraced(c RPCCase, out io.Writer) *RPCResult {
	return runRPC(c, out, hashed)
}

// RunRPCUnhashed is RunRPC without the trace hash (sim's
// Config.Unhashed; TraceHash says "unhashed"), for check's first run of
// a seed, which it runs again for the hash (RPCTraceHash) to save a
// failure, or in full to compare.
func RunRPCUnhashed(c RPCCase) *RPCResult {
	return runRPC(c, nil, unhashed)
}

// RPCTraceHash runs an rpc case for its trace's hash and events alone,
// without checking its history again (the verdict is the first run's,
// and the check can take seconds): check's run again of a failing seed
// it ran unhashed.
func RPCTraceHash(c RPCCase) (hash string, events uint64) {
	r := runRPC(c, nil, hashOnly)
	return r.TraceHash, r.Events
}

func runRPC(c RPCCase, out io.Writer, hashing hashing) *RPCResult {
	if err := c.Validate(); err != nil {
		return &RPCResult{Failure: &Failure{PropHarness, "invalid case: " + err.Error()}}
	}
	h := newRPCHarness(c, hashing)
	if out != nil {
		h.w.TraceTo(out)
	}
	defer useArena(h.w)()
	return h.run()
}

// newRPCHarness is the harness of a valid case, its world not yet run.
func newRPCHarness(c RPCCase, hashing hashing) *rpcHarness {
	h := &rpcHarness{c: &c, w: sim.New(worldConfig(c.Seed, 20_000_000, hashing)), phase: "work", hashOnly: hashing == hashOnly,
		written: map[uint64]blockWrite{}, heard: map[uint64]time.Duration{}}
	for _, f := range c.Faults {
		if f.Kind == RPCFaultCrash || nnFault(f.Kind) {
			h.crashed = true
		}
	}
	return h
}

// ignored reports whether the case does not enforce prop (check --ignore).
func (h *rpcHarness) ignored(prop string) bool { return slices.Contains(h.c.Ignore, prop) }

// failAfter is fail once the world has stopped (see harness.failAfter).
func (h *rpcHarness) failAfter(prop, msg string) {
	if h.failure == nil && !h.ignored(prop) {
		h.failure = &Failure{prop, msg}
	}
}

func (h *rpcHarness) fail(prop, format string, a ...any) {
	if h.failure != nil || h.ignored(prop) {
		return
	}
	h.failure = &Failure{prop, fmt.Sprintf(format, a...)}
	h.w.Note("violation " + prop + ": " + h.failure.Message)
	h.w.Stop()
}

func (h *rpcHarness) run() *RPCResult {
	w := h.w
	cfg := &h.c.Config
	w.AfterEach(h.afterEach)
	dp, err := w.Spawn("datanode", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		dcfg := model.DefaultDatanodeConfig()
		dcfg.Addr = rpcDN
		dcfg.Keepalive = 300 * time.Millisecond
		dcfg.PoolIdle = 50 * time.Millisecond
		var err error
		if h.dn, err = model.StartDatanode(p, p.MainLoop(), dcfg); err != nil {
			w.Fail(err)
		}
	})
	if err != nil {
		return &RPCResult{Failure: &Failure{PropHarness, err.Error()}}
	}
	h.dnProc = dp.(*sim.Process)
	np, _ := w.Spawn("namenode", model.ProcessConfig{Cores: 2, FDLimit: 256}, func(p model.Process) {
		first := h.nn == nil
		ncfg := namespace.Config{Lock: namespace.LockKind(cfg.Lock), FirstBlock: rpcFirstBlock, ListLimit: cfg.ListLimit,
			Bugs: namespace.Bugs{AnswerBeforeSync: cfg.AnswerBeforeSync, LoseGroupWaiters: cfg.LoseGroupWaiters, InvalidateBeforeSync: cfg.InvalidateBeforeSync, AnswerEIO: cfg.AnswerEIO, ReplaySyncOnly: cfg.ReplaySyncOnly}}
		if cfg.EditLog {
			ncfg.EditLog = "edits"
			p.(*sim.Process).SimDisk().TrackDurability()
			ncfg.Fatal = func(err error) {
				// As HDFS's namenode exits; a supervisor restarts it.
				h.w.Note("namenode fatal: " + err.Error())
				h.w.At(h.w.Now(), func() { h.crashNN(5 * time.Millisecond) })
			}
		}
		var image func(*namespace.Namespace)
		if !first {
			image = func(ns *namespace.Namespace) { h.buildBig(ns, nil) }
		}
		nn, err := namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: ncfg,
			RPC: rpc.ServerConfig{Addr: rpcNN, Readers: cfg.Readers, Handlers: cfg.Handlers, QueueSize: cfg.QueueSize,
				IdleTimeout: cfg.ServerIdle, MaxPending: cfg.MaxPending, MaxInFlight: cfg.MaxInFlight, HadoopReader: cfg.HadoopReader,
				Bugs: rpc.ServerBugs{HandlerWaitsForWrite: cfg.HandlerWaitsForWrite, DropPartial: cfg.DropPartial, UnboundedResponses: cfg.UnboundedResponses,
					QueuePastBound: cfg.QueuePastBound, QueuedReplySharesFrame: cfg.QueuedReplyShares, StopMidCall: cfg.StopMidCall,
					KeepInput: cfg.KeepInput, IdleClosesHeldCall: cfg.IdleClosesHeldCall,
					DeafWhenNotReading: cfg.DeafWhenNotReading, ServesDeadCalls: cfg.ServesDeadCalls}},
			Datanode: model.ClientConfig{Datanode: rpcDN, CacheExpiry: 100 * time.Millisecond, Timeout: time.Second},
			Image:    image,
		})
		switch {
		case err != nil && p.(*sim.Process).Crashed():
			return // a drawn crash met its start
		case err != nil && cfg.EditLog && errors.Is(err, model.ErrIO):
			// Its log cannot be made durable: it exits, and is restarted.
			h.w.At(h.w.Now(), func() { h.crashNN(5 * time.Millisecond) })
			return
		case err != nil:
			w.Fail(err)
			return
		}
		h.nn = nn
		if h.atRest != nil {
			h.checkReplayAtRest()
			return
		}
		h.nnBase = p.FDs().Open
		for len(h.images) <= h.epoch {
			h.images = append(h.images, nil)
		}
		if !first {
			img := snapshotNS(h.nn.NS).withFixed(h.bigFixed)
			h.images[h.epoch] = &img
			h.checkBlocks(fmt.Sprintf("after namenode restart %d", h.epoch))
			return
		}
		img := h.populate(NSModel(rpcDN, rpcFirstBlock).Init().(nsState))
		h.images[0] = &img
		h.nnBase = p.FDs().Open
		h.startClients()
	})
	h.nnProc = np.(*sim.Process)
	h.nnProc.SetSocketBuffers(cfg.NNSndBuf, 0)
	runErr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				h.fail(PropHarness, "panic at %v: %v", w.Now(), r)
			}
		}()
		return w.Run(rpcRunLimit)
	}()
	res := &RPCResult{Events: w.TraceEvents(), SimEvents: w.Events(), Calls: len(h.calls)}
	switch {
	case h.failure != nil:
	case runErr != nil && errors.Is(runErr, sim.ErrLimit):
		h.failAfter(PropLiveness, fmt.Sprintf("no quiescence in the %s phase: %v", h.phase, runErr))
	case runErr != nil:
		h.failAfter(PropHarness, runErr.Error())
	default:
		h.finalChecks()
		st := h.nn.Server.Stats()
		res.Throttled, res.Purged, res.StuckJudged, res.Skipped = st.Throttled, st.Purged, h.stuckJudged, st.Skipped
		if h.failure == nil && cfg.EditLog && !h.ignored(PropDurable) {
			h.replayAtRest()
			res.Events, res.SimEvents = w.TraceEvents(), w.Events()
		}
	}
	res.History = h.history()
	res.NamenodeCrashes = h.epoch
	if h.failure == nil && !h.hashOnly {
		h.failure = h.checkHistory()
	}
	res.Failure = h.failure
	res.TraceHash = w.TraceHashString()
	return res
}

// populate makes /big with BigDir empty files in the namenode before the
// run, and returns init with the same /big: the tree the model starts
// from, /big kept apart (nsFixed), since no call of the workload reaches
// it. Each of buildBig's calls must succeed.
func (h *rpcHarness) populate(init nsState) nsState {
	h.buildBig(h.nn.NS, func(r namespace.Request, resp namespace.Response, code namespace.Code) {
		if code != namespace.OK {
			h.fail(PropHarness, "populating /big: %s %s: %v", namespace.MethodName(r.Method), r.Path, code)
		}
	})
	if h.c.Config.BigDir == 0 {
		return init
	}
	init.put("/big", nsNode{dir: true})
	for _, p := range bigDirPaths[:h.c.Config.BigDir] {
		init.put(p, nsNode{complete: true})
	}
	init = init.splitFixed("/big")
	h.bigFixed = init.fixed
	return init
}

// buildBig makes /big in ns, outside the edit log: it is the image the
// log continues, built again by a restarted namenode before it replays.
func (h *rpcHarness) buildBig(ns *namespace.Namespace, rec func(namespace.Request, namespace.Response, namespace.Code)) {
	do := func(r namespace.Request) {
		resp, code := ns.Apply(r)
		if rec != nil {
			rec(r, resp, code)
		}
	}
	if h.c.Config.BigDir == 0 {
		return
	}
	do(namespace.Request{Method: namespace.MethodMkdir, Path: "/big"})
	for _, p := range bigDirPaths[:h.c.Config.BigDir] {
		do(namespace.Request{Method: namespace.MethodCreate, Path: p})
		do(namespace.Request{Method: namespace.MethodComplete, Path: p})
	}
}

// bigDirPaths are the paths of /big's files, made once: every namenode
// start builds /big again (a fifth of buildBig's time went to them).
// Long names make a listing of /big some 20 KB.
var bigDirPaths = func() []string {
	ps := make([]string, rpcMaxBigDir)
	for i := range ps {
		ps[i] = fmt.Sprintf("/big/%04d-%s", i, strings.Repeat("n", 200))
	}
	return ps
}()

// crashNN kills the namenode and starts it again after down (it replays
// its edit log); the calls made from now on go to the next incarnation.
func (h *rpcHarness) crashNN(down time.Duration) {
	if h.nnDown {
		return
	}
	h.nnProc.Crash()
	h.nnCrashed(down)
}

// nnCrashed notes a crash of the namenode and restarts it after down.
func (h *rpcHarness) nnCrashed(down time.Duration) {
	h.nnProc.DisarmCrash()
	h.nnDown = true
	h.epoch++
	h.crashes = append(h.crashes, int64(h.w.Now())+histOffset)
	h.w.At(h.w.Now()+down, h.restartNN)
}

func (h *rpcHarness) restartNN() {
	if h.nnDown {
		h.nnDown = false
		h.nnUps++
		h.nnProc.Restart()
	}
}

func (h *rpcHarness) startClients() {
	cfg := &h.c.Config
	faulty, unread := make([]bool, cfg.Clients), make([]bool, cfg.Clients)
	for _, f := range h.c.Faults {
		if touchesClient(f.Kind) {
			faulty[f.Client] = true
			unread[f.Client] = unread[f.Client] || !readingFault(f.Kind)
		}
	}
	started := 0
	for i := 0; i < cfg.Clients; i++ {
		ch := &rpcClient{i: i, faulty: faulty[i], reading: faulty[i] && !unread[i]}
		h.clients = append(h.clients, ch)
		p, _ := h.w.Spawn(fmt.Sprintf("client%d", i), model.ProcessConfig{}, func(p model.Process) {
			var err error
			ch.rc, err = rpc.NewClient(p, p.MainLoop(), rpc.ClientConfig{IdleTimeout: cfg.ClientIdle, CallTimeout: cfg.CallTimeout,
				OnServerClose: func(sc rpc.ServerClose) { h.serverClosed(ch, sc) },
				Bugs:          rpc.ClientBugs{ReuseIDs: cfg.ReuseIDs, OrphanOnBadResponse: cfg.OrphanOnBadResponse}})
			if err != nil {
				h.w.Fail(err)
				return
			}
			ch.nc = &namespace.Client{RPC: ch.rc, Loop: p.MainLoop(), Addr: rpcNN}
			// Block tokens come from the namenode, with the locations.
			ch.dc, err = model.NewClient(p, p.MainLoop(), i+1, model.ClientConfig{Datanode: rpcDN, CacheExpiry: 100 * time.Millisecond, Timeout: time.Second, MintToken: ch.nc.MintToken})
			if err != nil {
				h.w.Fail(err)
				return
			}
			ch.base = p.FDs().Open
			if n := cfg.Pieces[i]; n > 0 {
				ch.rc.PieceWrites(rpcNN, n, 3*time.Microsecond)
			}
			if started++; started == cfg.Clients {
				h.startWork()
			}
		})
		ch.p = p.(*sim.Process)
	}
}

func (h *rpcHarness) startWork() {
	cfg := &h.c.Config
	now := h.w.Now()
	for _, f := range h.c.Faults {
		f := f
		if opensConn(f.Kind) {
			h.extraFDs++
		}
		if f.Kind == RPCFaultSyncStall {
			h.extraFDs += 2 // (its waiter and its quitter)
		}
		h.w.At(now+f.At, func() { h.inject(f) })
	}
	byWorker := map[[2]int][]RPCOp{}
	for _, op := range h.c.Ops {
		k := [2]int{op.Client, op.Worker}
		byWorker[k] = append(byWorker[k], op)
	}
	h.running = 1 // held until every worker started
	for cl := 0; cl < cfg.Clients; cl++ {
		for wk := 0; wk < cfg.Workers; wk++ {
			if ops := byWorker[[2]int{cl, wk}]; len(ops) > 0 {
				h.running++
				h.runOps(h.clients[cl], ops, false, h.workerDone)
			}
		}
	}
	// Faults may outlast the ops: the workload phase ends after both.
	var last time.Duration
	for _, f := range h.c.Faults {
		last = max(last, f.At+f.Dur)
	}
	h.running++
	h.w.At(now+last+time.Millisecond, h.workerDone)
	h.workerDone()
}

func (h *rpcHarness) workerDone() {
	if h.running--; h.running == 0 && h.phase == "work" {
		h.heal()
	}
}

func (h *rpcHarness) runOps(ch *rpcClient, ops []RPCOp, live bool, done func()) {
	if len(ops) == 0 {
		done()
		return
	}
	loop := ch.p.MainLoop()
	issue := func() { h.issue(ch, ops[0], live, func() { h.runOps(ch, ops[1:], live, done) }) }
	loop.AfterFunc(ops[0].Gap, func() {
		// A worker makes no call while a sync is stalled: each would
		// time out in turn, a change of unknown outcome every call
		// timeout for seconds, more than the linearizability checker
		// decides (two of 20,000 seeds gave up); the calls in flight
		// when it struck are unknown as across a pause.
		if wait := h.stalls.end() - h.w.Now(); wait > 0 && !live {
			loop.AfterFunc(wait, issue)
			return
		}
		issue()
	})
}

// rpcMaxListPages bounds one list op's pages.
const rpcMaxListPages = rpcMaxBigDir + 8

// do makes one namespace call and records it.
func (h *rpcHarness) do(ch *rpcClient, r namespace.Request, live bool, then func(namespace.Response, error)) {
	h.call(ch, r, live, false, then)
}

// load makes a call of a fault's load (hundreds of reads at once): it must
// end once like any call, but the linearizability history leaves it out —
// hundreds of concurrent reads make porcupine's search explode, and a
// read left out only weakens the check.
func (h *rpcHarness) load(ch *rpcClient, r namespace.Request) {
	h.call(ch, r, false, true, func(namespace.Response, error) {})
}

func (h *rpcHarness) call(ch *rpcClient, r namespace.Request, live, load bool, then func(namespace.Response, error)) {
	c := &rpcCall{input: NSInput{Req: r, Limit: h.c.Config.ListLimit}, client: ch.i, call: int64(h.w.Now()) + histOffset, live: live, untouch: !ch.faulty, load: load, epoch: h.epoch, down: h.nnDown}
	h.calls = append(h.calls, c)
	ups := h.nnUps
	c.idle = h.markIdle(ch)
	ch.nc.Do(r, func(resp namespace.Response, err error) {
		c.done++
		c.unsent = c.down && h.nnDown && ups == h.nnUps
		if c.done > 1 {
			h.fail(PropExactlyOnce, "client %d: %s %s answered twice", ch.i, namespace.MethodName(r.Method), r.Path)
			return
		}
		c.ret = int64(h.w.Now()) + histOffset
		var ne *namespace.Error
		switch {
		case err == nil:
			c.out = NSOutput{Resp: resp}
		case errors.As(err, &ne):
			c.out = NSOutput{Code: ne.Code}
		default:
			c.out = NSOutput{Unknown: true}
			c.ret = math.MaxInt64
			if !h.excused(c.live, c.untouch, time.Duration(c.call-histOffset), c.idle, err) {
				h.fail(PropAvailability, "client %d (%s): %s %s: %v", ch.i, h.why(live), namespace.MethodName(r.Method), r.Path, err)
				return
			}
		}
		then(resp, err)
	})
}

// excused reports whether a call made at start that failed with err is
// excused from availability: outside the liveness phase (live), by a
// client a fault touched or in a case with a crash or a namenode fault;
// in any phase, the race of an idle close with it (idle), or a timeout
// during a namenode pause.
func (h *rpcHarness) excused(live, untouch bool, start time.Duration, idle idleMark, err error) bool {
	return !(live || (untouch && !h.crashed)) || idle.raced(err) || h.pauseTimeout(start, err)
}

// pauseTimeout reports whether a call made at start timed out while in
// flight during a namenode pause, or soon after it (rpcPauseSlack).
// Other calls, and errors a pause cannot cause, are held to availability
// as in a case with no pause.
func (h *rpcHarness) pauseTimeout(start time.Duration, err error) bool {
	if !errors.Is(err, rpc.ErrCallTimeout) {
		return false
	}
	// (A stalled sync holds calls as a pause does.)
	return h.inPause(start, h.w.Now(), rpcPauseSlack) || h.stalls.meet(start, h.w.Now(), rpcPauseSlack)
}

// inPause reports whether the span from..to meets a namenode pause or the
// slack after its end.
func (h *rpcHarness) inPause(from, to, slack time.Duration) bool {
	return h.pauses.meet(from, to, slack)
}

// spans are when each of a kind of namenode outage (pauses, stalled
// syncs) began and ended.
type spans [][2]time.Duration

// meet reports whether the span from..to meets one of s or the slack
// after its end.
func (s spans) meet(from, to, slack time.Duration) bool {
	for _, p := range s {
		if from < p[1]+slack && to >= p[0] {
			return true
		}
	}
	return false
}

// endAfter reports whether one of s ended at or after from (or has yet to).
func (s spans) endAfter(from time.Duration) bool {
	return len(s) > 0 && s.end() >= from
}

// end is when the last of s ends (0 for none).
func (s spans) end() time.Duration {
	var end time.Duration
	for _, p := range s {
		end = max(end, p[1])
	}
	return end
}

// quietPastIdle reports whether a connection silent for d has been silent
// for the server's idle timeout, give or take rpcIdleSlack: one the
// server's idle scan may close.
func (h *rpcHarness) quietPastIdle(d time.Duration) bool {
	return d+rpcIdleSlack >= h.c.Config.ServerIdle
}

// histOffset puts the history's clock (virtual nanoseconds) past the
// times the harness's own entries once took (it recorded /big's 201
// calls at times 0-200). Kept so the checker sees the times it always
// has; an offset of the clock changes no order.
const histOffset = 1 << 20

// outageSince reports whether the namenode crashed, or was paused, at or
// after from.
func (h *rpcHarness) outageSince(from time.Duration) bool {
	n := len(h.crashes)
	return (n > 0 && h.crashes[n-1] >= int64(from)+histOffset) || h.pauses.endAfter(from)
}

// stalledSince reports whether a sync-stall fault struck at or after
// from, or was still in force then.
func (h *rpcHarness) stalledSince(from time.Duration) bool {
	return h.stalls.endAfter(from)
}

// rpcPauseSlack is how long after a pause the namenode may still be
// working off the calls that came during it.
const rpcPauseSlack = 100 * time.Millisecond

// markIdle is the idle mark of a call ch makes now (see raced), and
// notes the server's idle closes as of this call for the next.
func (h *rpcHarness) markIdle(ch *rpcClient) idleMark {
	var m idleMark
	if h.nn != nil {
		srv := h.nn.Server
		if d, ok := ch.rc.Silent(rpcNN); ok && h.quietPastIdle(d) && ch.idleSrv == srv {
			m = idleMark{srv: srv, closes: ch.idleCloses}
		}
		ch.idleSrv, ch.idleCloses = srv, srv.Stats().IdleClosed
	}
	return m
}

// raced reports whether a call's connection error may be the server's idle
// close crossing the call: it went on a connection that had sent nothing
// for the server's idle timeout (ServerIdle is drawn apart from the
// client's, often shorter), and the server has closed a connection as
// idle since the client's call before c. The client cannot see that
// coming: its call is on the wire before the server's FIN reaches it, and
// the server, which read nothing of it, resets it. Hadoop avoids the race by configuration (the
// server's idle timeout is twice the client's, so the client closes
// first), and its client does not retry a call whose connection failed:
// no call can be promised an answer on such a connection. A call on a
// connection that sent something within the server's idle timeout, or
// one that times out, is still held to it.
func (m idleMark) raced(err error) bool {
	return m.srv != nil && errors.Is(err, rpc.ErrConnection) && m.srv.Stats().IdleClosed > m.closes
}

// why says why an error of this client was not excused.
func (h *rpcHarness) why(live bool) string {
	if live {
		return "liveness phase, after the faults"
	}
	return "workload phase, no fault on this client"
}

func (h *rpcHarness) phaseOf(live bool) string {
	if live {
		return "liveness"
	}
	return "workload"
}

func (h *rpcHarness) issue(ch *rpcClient, op RPCOp, live bool, next func()) {
	req := func(m uint8) namespace.Request { return namespace.Request{Method: m, Path: op.Path, Dst: op.Dst} }
	ignore := func(namespace.Response, error) { next() }
	switch op.Kind {
	case "mkdir":
		h.do(ch, req(namespace.MethodMkdir), live, ignore)
	case "list":
		// Page by page (as namespace.Client.List), each page a call.
		pages := 0
		var page func(r namespace.Request)
		page = func(r namespace.Request) {
			h.do(ch, r, live, func(resp namespace.Response, err error) {
				if err != nil || resp.Remaining == 0 || len(resp.Entries) == 0 {
					next()
					return
				}
				pages++
				if last := resp.Entries[len(resp.Entries)-1].Name; last <= r.After || pages > rpcMaxListPages {
					h.fail(PropLinearizable, "client %d: list %s after %q: page %d ends at %q, not past it (%d entries, %d remaining)", ch.i, r.Path, r.After, pages, last, len(resp.Entries), resp.Remaining)
					next()
					return
				}
				r.After = resp.Entries[len(resp.Entries)-1].Name
				page(r)
			})
		}
		r := req(namespace.MethodList)
		r.After = op.After
		page(r)
	case "stat":
		h.do(ch, req(namespace.MethodGetBlockLocations), live, ignore)
	case "delete":
		h.do(ch, req(namespace.MethodDelete), live, ignore)
	case "rename":
		h.do(ch, req(namespace.MethodRename), live, ignore)
	case "write":
		r := req(namespace.MethodCreate)
		r.Blocks = op.Blocks
		start := h.w.Now()
		h.do(ch, r, live, func(resp namespace.Response, err error) {
			if err != nil {
				next()
				return
			}
			h.writeBlocks(ch, op, start, resp.Blocks, resp.Tokens, nil, live, next)
		})
	case "read":
		h.read(ch, op.Path, 0, live, next)
	default:
		h.fail(PropHarness, "unknown op %q", op.Kind)
	}
}

func (h *rpcHarness) dataErr(ch *rpcClient, live bool, what string, err error) {
	if live || (!h.crashed && !ch.faulty) {
		h.fail(PropAvailability, "client %d (%s phase): %s: %v", ch.i, h.phaseOf(live), what, err)
	}
}

func (h *rpcHarness) writeBlocks(ch *rpcClient, op RPCOp, start time.Duration, ids []uint64, toks [][]byte, done []namespace.Location, live bool, next func()) {
	if len(done) == len(ids) {
		r := namespace.Request{Method: namespace.MethodComplete, Path: op.Path, Done: done}
		h.do(ch, r, live, func(namespace.Response, error) { next() })
		return
	}
	id := ids[len(done)]
	var tok []byte
	if len(toks) == len(ids) {
		tok = toks[len(done)]
	}
	ch.nc.Hold(id, tok)
	ch.dc.Write(id, model.BlockContent(id, op.Size), func(r model.Result) {
		ch.nc.Release(id)
		if r.Err != nil {
			h.dataErr(ch, live, fmt.Sprintf("write block %d", id), r.Err)
			next()
			return
		}
		h.written[id] = blockWrite{path: op.Path, start: start, end: h.w.Now()}
		h.writeBlocks(ch, op, start, ids, toks, append(done, namespace.Location{Block: id, Stamp: r.Stamp, Length: r.Length}), live, next)
	})
}

// read resolves path and reads its blocks over the data path; a block
// gone or re-stamped sends it back to resolve.
func (h *rpcHarness) read(ch *rpcClient, path string, attempt int, live bool, next func()) {
	h.do(ch, namespace.Request{Method: namespace.MethodGetBlockLocations, Path: path}, live, func(resp namespace.Response, err error) {
		if err != nil {
			next()
			return
		}
		var each func(i int)
		each = func(i int) {
			if i == len(resp.Locations) {
				next()
				return
			}
			l := resp.Locations[i]
			ch.nc.Hold(l.Block, l.Token)
			ch.dc.Read(l.Block, l.Stamp, 0, l.Length, func(r model.Result) {
				ch.nc.Release(l.Block)
				switch {
				case errors.Is(r.Err, model.ErrRejected) && attempt < namespace.MaxStaleRetries:
					h.read(ch, path, attempt+1, live, next)
				case r.Err != nil:
					h.dataErr(ch, live, fmt.Sprintf("read %s block %d", path, l.Block), r.Err)
					next()
				case !bytes.Equal(r.Data, model.BlockContent(l.Block, int(l.Length))):
					h.fail(PropLinearizable, "client %d: read %s block %d: %d bytes that are not the block's", ch.i, path, l.Block, len(r.Data))
				default:
					each(i + 1)
				}
			})
		}
		each(0)
	})
}

func (h *rpcHarness) inject(f RPCFault) {
	if h.failure != nil {
		return
	}
	ch := h.clients[f.Client]
	h.w.Note(fmt.Sprintf("fault %s client%d", f.Kind, f.Client))
	loop := ch.p.MainLoop()
	switch f.Kind {
	case RPCFaultVanish:
		loop.Post(func() { ch.rc.Abort(rpcNN) })
	case RPCFaultResetMid:
		loop.Post(func() {
			c, err := ch.p.Dial("tcp", rpcNN, loop, func(model.Events) {})
			if err != nil {
				return
			}
			half := append(append([]byte(nil), rpc.Preamble[:]...), rpc.AppendFrame(nil, rpc.Frame{ID: 1, Code: namespace.MethodList, Payload: []byte{0, 1, '/'}})[:7]...)
			loop.AfterFunc(200*time.Microsecond, func() {
				c.Write(half)
				loop.AfterFunc(200*time.Microsecond, func() { c.Abort() })
			})
		})
	case RPCFaultSlow, RPCFaultStall:
		// The slow client also reads through a small window once it
		// reads on.
		slow := f.Kind == RPCFaultSlow
		loop.Post(func() {
			if slow {
				ch.p.SlowReader(4096)
			}
			for i := 0; i < f.N; i++ {
				h.load(ch, namespace.Request{Method: namespace.MethodList, Path: "/big"})
			}
			ch.rc.PauseReading(rpcNN)
			loop.AfterFunc(f.Dur, func() {
				if slow {
					ch.p.SlowReader(0)
				}
				ch.rc.ResumeReading(rpcNN)
			})
		})
	case RPCFaultSlowRead, RPCFaultSlowOver:
		if ch.slowFrom == 0 {
			ch.slowFrom = h.w.Now()
		}
		loop.Post(func() {
			ch.p.SlowReader(4096)
			for i := 0; i < f.N; i++ {
				h.load(ch, namespace.Request{Method: namespace.MethodList, Path: "/big"})
			}
			loop.AfterFunc(f.Dur, func() { ch.p.SlowReader(0) })
		})
	case RPCFaultBigCalls:
		loop.Post(func() {
			payload := make([]byte, f.N<<10)
			// (Both calls go on the connection as the first finds it.)
			start, idle := h.w.Now(), h.markIdle(ch)
			for range 2 {
				ch.rc.Call(rpcNN, rpcBigCallMethod, payload, func(r rpc.Reply) { h.bigCallDone(ch, f.N, start, idle, r) })
			}
		})
	case RPCFaultStuck:
		h.injectStuck(f)
	case RPCFaultQuitBurst:
		h.injectQuitBurst(f)
	case RPCFaultBurst:
		loop.Post(func() {
			for i := 0; i < f.N; i++ {
				h.load(ch, namespace.Request{Method: namespace.MethodList, Path: "/"})
			}
		})
	case RPCFaultCrash:
		h.dnProc.Crash()
		h.dnDown = true
		h.w.At(h.w.Now()+f.Dur, func() {
			h.dnDown = false
			h.dnProc.Restart()
		})
	case RPCFaultGarbage:
		loop.Post(func() {
			if ch.rc.SendRaw(rpcNN, []byte{0xff, 0xff, 0xff, 0xf0}) == nil {
				ch.garbled++
				ch.garbageDials = ch.rc.Stats().Dials
			}
		})
	case RPCFaultNNCrash:
		h.crashNN(f.Dur)
	case RPCFaultNNPause:
		if !h.nnDown {
			h.nnProc.Pause(f.Dur)
			h.pauses = append(h.pauses, [2]time.Duration{h.w.Now(), h.w.Now() + f.Dur})
		}
	case RPCFaultNNPower:
		if !h.nnDown {
			h.nnProc.Crash()
			h.nnProc.SimDisk().PowerLoss()
			h.nnCrashed(f.Dur)
		}
	case RPCFaultNNTorn:
		if !h.nnDown {
			h.nnProc.CrashAtDiskOp(f.N, true, func() { h.nnCrashed(f.Dur) })
		}
	case RPCFaultSyncStall:
		h.injectSyncStall(f)
	case RPCFaultSyncEIO, RPCFaultSlowSync, RPCFaultDiskEIO:
		// 1-20 ms longer: a slow fsync, from the fault's own seed.
		slow := time.Millisecond + time.Duration(f.At%(19*time.Millisecond))
		share := float64(f.N) / 1000
		var df sim.DiskFaults
		switch f.Kind {
		case RPCFaultSyncEIO:
			df.SyncEIO = share
		case RPCFaultSlowSync:
			df.SlowSync, df.SlowDelay = share, slow
		case RPCFaultDiskEIO:
			df.ReadEIO, df.WriteEIO, df.SyncEIO = share, share, share
		}
		// Faults that overlap are in force together (Disk.AddFaults).
		h.w.At(h.w.Now()+f.Dur, h.nnProc.SimDisk().AddFaults(df))
	}
}

// injectStuck starts a stuck fault: a process of its own, whose receive
// buffer is small so that the answers back up into the namenode at once,
// dials the namenode, sends f.N calls listing /big, and never reads.
func (h *rpcHarness) injectStuck(f RPCFault) {
	s := &stuckConn{client: f.Client, dialed: h.w.Now()}
	h.stuck = append(h.stuck, s)
	h.w.Spawn(fmt.Sprintf("stuck%d", len(h.stuck)-1), model.ProcessConfig{}, func(p model.Process) {
		p.(*sim.Process).SetSocketBuffers(0, 4096)
		loop := p.MainLoop()
		out := pipelinedCalls(namespace.MethodList, "/big", f.N)
		// Half of the calls at once, the rest a millisecond apart: the
		// reader must stop taking them once it holds MaxPending of
		// answers, not only at the cap.
		one := (len(out) - len(rpc.Preamble)) / f.N
		upTo, sent := len(out)-(f.N/2)*one, 0
		var d *deafConn
		ticking := false
		var send func()
		send = func() {
			for sent < upTo {
				n, _ := d.c.Write(out[sent:upTo])
				if n == 0 {
					d.c.SetWriteInterest(true)
					return
				}
				sent += n
			}
			d.c.SetWriteInterest(false)
			if upTo < len(out) && !ticking {
				ticking = true
				loop.AfterFunc(time.Millisecond, func() {
					if ticking = false; !d.closed {
						upTo += one
						send()
					}
				})
			}
		}
		d, err := dialDeaf(p, send)
		if err != nil {
			s.done = true
			return
		}
		s.conn = d.c
	})
}

// pipelinedCalls is the preamble and n calls of method on path, ids 1 to
// n, as a client that pipelines them writes them.
func pipelinedCalls(method uint8, path string, n int) []byte {
	out := append([]byte(nil), rpc.Preamble[:]...)
	req := namespace.EncodeRequest(namespace.Request{Method: method, Path: path})
	for i := 1; i <= n; i++ {
		out = rpc.AppendFrame(out, rpc.Frame{ID: uint32(i), Code: method, Payload: req})
	}
	return out
}

// deafConn is a fault process's connection to the namenode that reads
// nothing: it writes when writable (calls to pile up in the namenode)
// and closes when it hears the namenode hang up, or when told.
type deafConn struct {
	c      model.Conn
	closed bool
}

// dialDeaf dials the namenode from p's main loop, with writable called
// while the connection is open and writable.
func dialDeaf(p model.Process, writable func()) (*deafConn, error) {
	d := &deafConn{}
	c, err := p.Dial("tcp", rpcNN, p.MainLoop(), func(ev model.Events) {
		switch {
		case d.closed:
		case ev&model.Hangup != 0:
			d.close()
		case ev&model.Writable != 0:
			writable()
		}
	})
	if err != nil {
		return nil, err
	}
	d.c = c
	c.SetReadInterest(false)
	return d, nil
}

func (d *deafConn) close() {
	if !d.closed {
		d.closed = true
		d.c.Close()
	}
}

// injectQuitBurst starts a quit-burst fault: a process of its own dials
// the namenode, sends f.N calls at once and closes the connection f.Dur
// after they are written, reading no answer. Its calls are mkdirs of the
// root, logged (with the edit log) and so each held for a sync, and
// changing nothing: a dead one served is a handler's time lost, and
// no change the history must place.
func (h *rpcHarness) injectQuitBurst(f RPCFault) {
	h.w.Spawn(fmt.Sprintf("quitter%d", h.quitters), model.ProcessConfig{}, func(p model.Process) {
		out, sent := pipelinedCalls(namespace.MethodMkdir, "/", f.N), 0
		var d *deafConn
		d, _ = dialDeaf(p, func() {
			if sent == len(out) {
				return
			}
			n, _ := d.c.Write(out[sent:])
			if sent += n; sent < len(out) {
				return
			}
			d.c.SetWriteInterest(false)
			p.MainLoop().AfterFunc(f.Dur, d.close)
		})
	})
	h.quitters++
}

// injectSyncStall starts a sync-stall fault: the namenode's first fsync
// within f.Dur takes f.Dur longer (the log's next one, behind it, starts
// past the window). Its client makes changes enough to hold every
// handler on the stalled sync and calls enough behind them to fill the
// queue, so that the readers block; then a process of its own sends one
// call on each of two connections, which the readers hold whole and
// unqueued for the stall: the waiter waits for its answer, and the
// namenode must not close it as idle meanwhile (the call is
// outstanding); the quitter hangs up after half an idle timeout, and the
// namenode must hear it, though it reads the connection no further
// (checkGone).
func (h *rpcHarness) injectSyncStall(f RPCFault) {
	now, cfg := h.w.Now(), &h.c.Config
	h.stalls = append(h.stalls, [2]time.Duration{now, now + 2*f.Dur})
	h.w.At(now+f.Dur, h.nnProc.SimDisk().AddFaults(sim.DiskFaults{SlowSync: 1, SlowDelay: f.Dur}))
	ch := h.clients[f.Client]
	ch.p.MainLoop().Post(func() {
		// (A mkdir of the root is logged, so it waits for the sync, and
		// changes nothing: unknown once it times out, it adds nothing
		// the linearizability checker must place.)
		for k := 0; k < cfg.Handlers; k++ {
			h.do(ch, namespace.Request{Method: namespace.MethodMkdir, Path: "/"}, false, func(namespace.Response, error) {})
		}
		for k := 0; k <= cfg.QueueSize; k++ {
			h.load(ch, namespace.Request{Method: namespace.MethodList, Path: "/"})
		}
	})
	h.w.At(now+5*time.Millisecond, func() {
		h.w.Spawn(fmt.Sprintf("stalled%d", len(h.stalls)-1), model.ProcessConfig{}, func(p model.Process) {
			loop := p.MainLoop()
			call := append(append([]byte(nil), rpc.Preamble[:]...), rpc.AppendFrame(nil, rpc.Frame{ID: 1, Code: namespace.MethodList,
				Payload: namespace.EncodeRequest(namespace.Request{Method: namespace.MethodList, Path: "/"})})...)
			dialed := h.w.Now()
			var waiter, quitter model.Conn
			answered, closed, sent, quitSent, quit := false, false, false, false, false
			waiter, err := p.Dial("tcp", rpcNN, loop, func(ev model.Events) {
				if closed {
					return
				}
				if !sent && ev&model.Writable != 0 {
					sent = true // (one call: a loopback socket takes it whole)
					waiter.Write(call)
				}
				var b [4096]byte
				for {
					n, err := waiter.Read(b[:])
					if n > 0 {
						answered = true
					}
					if errors.Is(err, model.ErrWouldBlock) {
						break
					}
					if err != nil || n == 0 {
						closed = true
						waiter.Close()
						// The namenode closed it under its call (a FIN:
						// a reset or a refused connect is a namenode
						// down), fair only across a crash or pause.
						if !answered && errors.Is(err, io.EOF) && h.phase == "work" && !h.nnDown && !h.outageSince(dialed) {
							h.fail(PropAvailability, "sync-stall: the namenode closed a connection %v after its one call arrived, unanswered (a call it holds whole for room in the queue is outstanding: not idle)", h.w.Now()-dialed)
						}
						return
					}
				}
				if answered {
					closed = true
					waiter.Close()
				}
			})
			if err != nil {
				return
			}
			quitter, err = p.Dial("tcp", rpcNN, loop, func(ev model.Events) {
				switch {
				case quit:
				case ev&model.Hangup != 0:
					quit = true
					quitter.Close()
				case !quitSent && ev&model.Writable != 0:
					quitSent = true
					quitter.Write(call)
				}
			})
			if err != nil {
				return
			}
			quitter.SetReadInterest(false)
			loop.AfterFunc(cfg.ServerIdle/2, func() {
				if !quit {
					quit = true
					quitter.Close()
				}
			})
		})
	})
}

// rpcPurgeSlack is how late past its scan's time the namenode's purge of a
// stuck client may close the connection: the scan's timer and the close
// it posts wait for the reader's loop and a core.
const rpcPurgeSlack = 10 * time.Millisecond

// rpcStopLag is how long after a connection's answers pass MaxPending the
// namenode's reader may still take its calls: the handler that passed it
// tells the reader through the reader's loop, behind what is queued there.
const rpcStopLag = 20 * time.Millisecond

// checkStuck holds the namenode's close of a stuck fault's connection to
// its idle scan (rpc.Server.scanIdle): a connection whose client sent
// nothing it read, and took none of its answers, for the idle timeout is
// purged (answers waiting) or closed as idle (none) by the scan after
// that, and the scan runs every half idle timeout. So the close comes
// within 1.5 idle timeouts (and rpcPurgeSlack) of the namenode's last
// read from the connection or write to it (a write that queued nothing
// included: a response queued behind a full socket starts its clock), and
// never before an idle timeout has passed since its last read or write
// that moved bytes. Those are the socket's, not the server's own
// clocks. And once the answers the namenode holds for it have stayed
// past MaxPending for rpcStopLag, its reader takes no more of its calls
// while they stay there (the pipeliner sends half of them a millisecond
// apart, so there are calls to take). Not judged once the namenode has
// crashed or paused since the connection was made (its scan runs late,
// or its connections die with it), nor once the run is at rest, when
// the namenode closes every connection.
func (h *rpcHarness) checkStuck() {
	idle := h.c.Config.ServerIdle
	for _, s := range h.stuck {
		if s.done || s.conn == nil {
			continue
		}
		// (Nor once a sync has stalled since: its calls may wait in the
		// queue behind the held handlers, with no answer yet to purge.)
		if h.phase == "quiesce" || h.nnDown || h.outageSince(s.dialed) || h.stalledSince(s.dialed) {
			s.done = true
			continue
		}
		a, ok := sim.PeerActivity(s.conn)
		if !ok {
			continue // (not accepted yet)
		}
		now := h.w.Now()
		if !a.Open {
			s.done = true
			h.stuckJudged++
			if from := max(s.dialed, a.Read); now+rpcIdleSlack < from+idle {
				h.fail(PropAvailability, "stuck client of client %d: the namenode closed its connection %v after it last read from it, before its idle timeout (%v)", s.client, now-from, idle)
			}
			continue
		}
		if calls, held, ok := h.nn.Server.ConnHeld(s.conn.LocalAddr()); ok {
			switch {
			case held <= h.nn.Server.Config().MaxPending:
				s.over = 0
			case s.over == 0:
				s.over, s.overCalls = now, -1
			case now-s.over < rpcStopLag:
			case s.overCalls < 0:
				s.overCalls = calls
			case calls > s.overCalls:
				h.fail(PropMemory, "stuck client of client %d: the namenode took %d more of its calls %v after the answers it holds for it passed MaxPending (%d bytes held, bound %d), and they have stayed past it since", s.client, calls-s.overCalls, now-s.over, held, h.nn.Server.Config().MaxPending)
				return
			}
		}
		if a.Read == 0 {
			continue // (not read yet: its clock starts at the first read)
		}
		if from := max(s.dialed, a.Read, a.WriteCall); now > from+idle+idle/2+rpcPurgeSlack {
			h.fail(PropTimeout, "stuck client of client %d: the namenode still holds its connection %v after it last read from or wrote to it (it took none of its answers; the idle timeout is %v, and the scan that purges it runs every %v)", s.client, now-from, idle, idle/2)
		}
	}
}

// heal ends the faults; the liveness phase starts once the system had a
// moment to recover.
func (h *rpcHarness) heal() {
	h.phase = "heal"
	h.w.Note("phase heal")
	if h.dnDown {
		h.dnDown = false
		h.dnProc.Restart()
	}
	h.nnProc.SimDisk().SetFaults(sim.DiskFaults{})
	h.nnProc.DisarmCrash()
	h.restartNN()
	for _, ch := range h.clients {
		ch.p.SlowReader(0)
		ch.p.MainLoop().Post(func() { ch.rc.ResumeReading(rpcNN) })
	}
	// A pause is not cut short: the liveness phase waits for its end.
	// (Likewise a stalled sync.)
	start := max(h.w.Now(), h.pauses.end(), h.stalls.end())
	h.w.At(start+2*h.c.Config.CallTimeout+100*time.Millisecond, h.startLive)
}

func (h *rpcHarness) startLive() {
	h.phase = "live"
	h.w.Note("phase live")
	byClient := map[int][]RPCOp{}
	for _, op := range h.c.Live {
		byClient[op.Client] = append(byClient[op.Client], op)
	}
	left := 1
	done := func() {
		if left--; left == 0 {
			h.quiesce()
		}
	}
	for cl := range h.clients {
		if ops := byClient[cl]; len(ops) > 0 {
			left++
			h.afterGarbage(h.clients[cl], func() { h.runOps(h.clients[cl], ops, true, done) })
		}
	}
	h.w.At(h.w.Now()+rpcLiveTimeout, func() {
		if h.phase == "live" {
			h.fail(PropAvailability, "the liveness phase did not finish in %v", rpcLiveTimeout)
		}
	})
	done()
}

// afterGarbage runs then once ch's connection carries no garbage the
// namenode has not answered. The namenode reads a connection's calls in
// order, and one it throttles behind a client that stopped reading it may
// not read for seconds: a call sent behind the garbage then fails with
// the garbage's fatal close (seed 691207196: a liveness list behind
// garbage behind 500 answers the client took slowly). The client reads
// at full speed again from the heal, so the answer comes; one that never
// does (a connection left throttled for ever) holds the liveness phase
// past its deadline, a failure.
func (h *rpcHarness) afterGarbage(ch *rpcClient, then func()) {
	if st := ch.rc.Stats(); ch.garbled > st.Fatal && st.Dials == ch.garbageDials && ch.rc.Conns() > 0 && h.phase == "live" {
		h.w.At(h.w.Now()+10*time.Millisecond, func() { h.afterGarbage(ch, then) })
		return
	}
	then()
}

// bigCallDone checks the answer to a call of the big-calls fault, made at
// start: the namespace does not know its method, and says so; it may
// fail only where a workload call's failure is excused.
func (h *rpcHarness) bigCallDone(ch *rpcClient, kib int, start time.Duration, idle idleMark, r rpc.Reply) {
	if h.failure != nil {
		return
	}
	if r.Err == nil {
		if r.Status != rpc.StatusUnknownMethod {
			h.fail(PropLinearizable, "client %d: a call of %d KiB of a method the namespace does not have answered status %d, want %d (unknown method)", ch.i, kib, r.Status, rpc.StatusUnknownMethod)
		}
		return
	}
	if !h.excused(false, !ch.faulty, start, idle, r.Err) {
		h.fail(PropAvailability, "client %d: a call of %d KiB (a method the namespace does not have): %v (no fault on the client or the namenode)", ch.i, kib, r.Err)
	}
}

// serverClosed holds the namenode's closes of a client's connection to
// its idle rule: the namenode closes on its own only a connection that has
// sent nothing for its idle timeout and has no call outstanding. Its
// other closes have causes the harness made: a crash or a fatal restart,
// and the purge and fatal closes of a client that stops reading or sends
// garbage (a faulty client, whose closes are not judged). A client whose
// only faults leave it reading (slow-read, slow-over: a small window,
// and hundreds of large answers asked for at once) is judged: however
// far its answers pass MaxPending, the namenode must throttle it, not
// close it (it once closed such a connection over the bound). Nor is a
// close judged that comes within rpcCloseSlack of a crash or of the end
// of a pause (after which the namenode's idle scan and its reads of what
// came during the pause run in no set order); and one is excused that
// crosses calls made within rpcCloseSlack of it on a connection silent
// for the idle timeout until then (the race of an idle close with a call,
// which neither side can see coming).
func (h *rpcHarness) serverClosed(ch *rpcClient, sc rpc.ServerClose) {
	// (A reading client's close is not judged once the namenode has
	// crashed or paused since its slow reading began: it takes its
	// answers through a small window, so it reads the FIN a crash sent,
	// behind the answers sent before it, long after rpcCloseSlack; and a
	// pause stops the responder, so its answers may sit untaken for the
	// idle timeout, and be purged, while the client reads all the kernel
	// holds. An outage before it began excuses nothing: with any crash
	// or pause excusing them, a server that closed slow-over clients
	// over MaxPending passed 13 of the 91 rpc seeds of 1-5,000 that
	// catch it.)
	if h.failure != nil || ch.faulty && (!ch.reading || ch.slowFrom > 0 && h.outageSince(ch.slowFrom)) || h.nnDown {
		return
	}
	now := h.w.Now()
	if n := len(h.crashes); n > 0 && int64(now)+histOffset-h.crashes[n-1] < int64(rpcCloseSlack) {
		return
	}
	if h.inPause(now, now, rpcCloseSlack) {
		return
	}
	idle := h.c.Config.ServerIdle
	if sc.Waiting > 0 && sc.OldestAge < rpcCloseSlack && h.quietPastIdle(sc.OldestQuiet) {
		return
	}
	if sc.Waiting > 0 || sc.Silent < idle {
		how := "closed"
		if sc.Reset {
			how = "reset"
		}
		h.fail(PropAvailability, "client %d: the namenode %s its connection %v after the client last sent on it, with %d of its calls waiting (it closes on its own only a connection silent for its idle timeout, %v, with none)", ch.i, how, sc.Silent, sc.Waiting, idle)
	}
}

// quiesce closes the clients' data-path caches and lets the idle timeouts
// close every rpc connection; the world then runs out of events.
func (h *rpcHarness) quiesce() {
	h.phase = "quiesce"
	h.w.Note("phase quiesce")
	for _, ch := range h.clients {
		ch.p.MainLoop().Post(ch.dc.Close)
	}
	// The namenode is closed once its block deletions are done: a delete
	// answered last may still have them queued, and closing drops them.
	// (Within rpcInvalidateWait: one still pending then has stalled.)
	deadline := h.w.Now() + rpcInvalidateWait
	var closeNN func()
	closeNN = func() {
		if h.nn.Invalidating() > 0 && h.w.Now() < deadline {
			h.w.At(h.w.Now()+time.Millisecond, func() { h.nnProc.MainLoop().Post(closeNN) })
			return
		}
		h.invErrs, h.invPending = h.nn.InvalidateErrors, h.nn.Invalidating()
		// The edit log's file and threads were part of the baseline.
		open := h.nnProc.FDs().Open
		h.nn.NS.Close()
		h.nnBase -= open - h.nnProc.FDs().Open
		h.nn.Close()
	}
	h.nnProc.MainLoop().Post(closeNN)
}

// rpcInvalidateWait bounds how long a run at rest waits for the
// namenode's block deletions (each a round trip to the datanode, four at
// a time) before it closes the namenode.
const rpcInvalidateWait = time.Second

func (h *rpcHarness) afterEach() {
	if h.failure != nil || h.nn == nil || h.atRest != nil {
		return
	}
	if len(h.stuck) > 0 {
		if h.checkStuck(); h.failure != nil {
			return
		}
	}
	if h.checkGone(); h.failure != nil {
		return
	}
	// What is checked below is the namenode's and the clients' state,
	// which changes only with some process's epoch (sim.World.Epoch);
	// the checks above go by the clock and by segments that arrived.
	e := h.w.Epoch()
	if h.epochSeen && e == h.worldEpoch {
		return
	}
	h.worldEpoch, h.epochSeen = e, true
	if q, c := h.nn.Server.QueueLen(), h.nn.Server.QueueCap(); q > c {
		h.fail(PropQueueBound, "call queue holds %d calls, bound %d", q, c)
		return
	}
	// A connection holds a response only for a call in flight, and the
	// reader takes no call past MaxInFlight in flight: so it holds at most
	// MaxInFlight responses, and so at most MaxInFlight of its largest in
	// bytes. (MaxPending, past which the reader takes no more, lowers the
	// usual figure but not that bound: every call in flight when a
	// connection passes it is still answered. Its stop is held by
	// checkStuck, and by model/rpc's
	// TestMaxPendingStopsTheReaderBeforeTheCap.)
	srv := h.nn.Server
	p, scfg := srv.Pending(), srv.Config()
	if p.Most > scfg.MaxInFlight {
		h.fail(PropMemory, "namenode holds %d bytes of responses not yet written on %d connections (%d on one, in %d responses); one holds %d responses, bound %d (MaxInFlight)",
			p.Bytes, p.Conns, p.Worst, p.Responses, p.Most, scfg.MaxInFlight)
		return
	}
	in, inBound := srv.Input(), srv.InputBound()
	if in.Worst > inBound {
		h.fail(PropMemory, "namenode holds %d bytes of input not yet taken as calls on one connection (%d on all), bound %d", in.Worst, in.Bytes, inBound)
		return
	}
	if in.Kept > 0 {
		h.fail(PropMemory, "namenode keeps a connection's input buffer %d bytes larger than its input may need (twice it, or %d kept between calls): the buffer a large call grew, held after it was queued", in.Kept, rpc.InputKeep)
		return
	}
	if p.Counted != p.Bytes {
		// The bound acts on the count: one that drifts from what is
		// held lets memory past it, or drops clients that are within it.
		h.fail(PropMemory, "namenode counts %d bytes of responses not yet written on %d connections, and holds %d", p.Counted, p.Conns, p.Bytes)
		return
	}
	fds := h.nnProc.FDs()
	// Each client holds one rpc connection at a time (two while a
	// reset one is still being closed), faults open one each, and the
	// namenode's datanode client a socket per block deletion in flight:
	// at most namespace.MaxInvalidating (4), however many blocks a
	// delete frees. Written out, so that raising it is noticed here.
	fdBound := h.nnBase + 2*len(h.clients) + h.extraFDs + 4
	if fds.Open > fdBound || fds.Open > fds.Limit {
		h.fail(PropFDBounds, "namenode holds %d fds, bound %d (limit %d)", fds.Open, fdBound, fds.Limit)
		return
	}
	// A client holds one rpc connection (two while a reset one closes),
	// a fault's raw connection, and its data-path sockets: one per worker
	// in flight and the peer cache (16).
	for _, ch := range h.clients {
		if ch.rc == nil {
			continue
		}
		cb := ch.base + 3 + h.c.Config.Workers + 16
		if n := ch.p.FDs().Open; n > cb {
			h.fail(PropFDBounds, "client %d holds %d fds, bound %d", ch.i, n, cb)
			return
		}
	}
}

// rpcGoneBound is how long the namenode may hold a connection after its
// client's FIN or reset arrived: a turn of its reader's loop. Whether
// the reader is reading the connection or not (throttled, or holding a
// call the full queue refuses), it must hear that the client has gone;
// a connection it has stopped reading otherwise holds its fd, input and
// answers until a handler answers one of its calls, which a stalled
// namenode may not do for seconds.
const rpcGoneBound = 50 * time.Millisecond

// checkGone holds the namenode to rpcGoneBound on each connection whose
// client has gone, but across a pause or crash of the namenode.
func (h *rpcHarness) checkGone() {
	if h.nnDown {
		return
	}
	now := h.w.Now()
	h.nn.Server.EachConn(func(c model.Conn, throttled bool) {
		if h.failure != nil || !sim.Heard(c) {
			return
		}
		at, ok := h.heard[c.ID()]
		if !ok {
			h.heard[c.ID()] = now
			return
		}
		// (A crash since: the connection died with the incarnation
		// that held it, which the harness may not have replaced yet.)
		if now-at > rpcGoneBound && !h.inPause(at, now, rpcPauseSlack) && !h.outageSince(at) {
			h.fail(PropTimeout, "namenode connection %d still open %v after its client's FIN or reset arrived (bound %v; throttled: %v)", c.ID(), now-at, rpcGoneBound, throttled)
		}
	})
}

func (h *rpcHarness) finalChecks() {
	for _, c := range h.calls {
		if c.done == 0 {
			h.fail(PropExactlyOnce, "client %d: %s %s never ended (no answer, no error; %s phase)", c.client, namespace.MethodName(c.input.Req.Method), c.input.Req.Path, h.phase)
			return
		}
	}
	if h.phase != "quiesce" {
		h.fail(PropLiveness, "the world ran out of events in the %s phase", h.phase)
		return
	}
	for _, ch := range h.clients {
		st := ch.rc.Stats()
		if st.Unmatched > 0 {
			h.fail(PropExactlyOnce, "client %d: %d answers matched no waiting call", ch.i, st.Unmatched)
			return
		}
		if st.Malformed > 0 || st.Fatal > ch.garbled {
			h.fail(PropStream, "client %d: %d malformed frames and %d fatal answers from the namenode, %d garbled requests of its own", ch.i, st.Malformed, st.Fatal, ch.garbled)
			return
		}
		if n := ch.rc.Conns(); n > 0 {
			h.fail(PropLeakFree, "client %d: %d rpc connections open at the end", ch.i, n)
			return
		}
		if got := ch.p.FDs().Open; got > ch.base {
			h.fail(PropLeakFree, "client %d: %d fds open at the end, %d after start", ch.i, got, ch.base)
			return
		}
	}
	conns, queued, pending, busy, blocked := h.nn.Server.Quiet()
	if conns != 0 || queued != 0 || pending != 0 || busy != 0 || blocked != 0 { // (each: a count gone negative hides no leak)
		h.fail(PropLeakFree, "server not quiet: %d connections, %d queued calls, %d pending responses, %d busy handlers, %d blocked readers", conns, queued, pending, busy, blocked)
		return
	}
	if got := h.nnProc.FDs().Open; got != h.nnBase {
		h.fail(PropLeakFree, "namenode holds %d fds, %d after start", got, h.nnBase)
		return
	}
	// The server's counters at rest: what run and bench report of it
	// must add up (every connection it accepted it closed, every call it
	// queued it answered, dropped or skipped once).
	if st := h.nn.Server.Stats(); st.Closed != st.Accepted {
		h.fail(PropLeakFree, "server stats at rest: %d connections accepted, %d counted closed", st.Accepted, st.Closed)
		return
	} else if st.Responses+st.Dropped+st.Skipped != st.Calls {
		h.fail(PropExactlyOnce, "server stats at rest: %d calls queued, %d responses written, %d dropped and %d skipped", st.Calls, st.Responses, st.Dropped, st.Skipped)
		return
	}
	h.checkBlocks("at quiescence")
	h.checkReclaimed()
}

// blockWrite is a block's write that ended OK: the path of the file it
// was created in, and when it ended.
type blockWrite struct {
	path       string
	start, end time.Duration // the create's call; the block's write's end
}

// checkReclaimed holds the namenode to deleting a removed file's blocks
// on the datanode (HDFS's invalidation): at rest the datanode holds no
// block that no file holds, of those whose write ended before any call
// that could have removed or moved their file did (removedBefore). Such
// a block was on the datanode when its file went (the first call to move
// or remove a file names its path at create or a directory above it:
// create and rename never overwrite), so the deletion found it. A block
// written later may have raced the deletion (it fails, and the block
// arrives after), which HDFS cleans up from block reports this model
// does not have; so may one whose write failed. Nor is it held in runs
// with any fault of either node (h.crashed; slow fsyncs included) or a
// deletion dropped as the namenode closed (a guard: with none pending
// the namenode drops none): both leave blocks in place, by design.
// Without such a fault, the namenode must have done its deletions within
// rpcInvalidateWait of the rest.
func (h *rpcHarness) checkReclaimed() {
	if h.failure != nil || h.crashed || h.dn == nil || h.ignored(PropLeakFree) {
		return
	}
	if h.invPending > 0 {
		h.fail(PropLeakFree, "the namenode still had %d block deletions to do %v after the run came to rest", h.invPending, rpcInvalidateWait)
		return
	}
	if h.nn.InvalidateErrors != h.invErrs {
		return
	}
	held := map[uint64]bool{}
	h.nn.NS.Walk(func(_ string, _, _ bool, blocks []namespace.Location) {
		for _, b := range blocks {
			held[b.Block] = true
		}
	})
	for _, id := range h.dn.Store().Blocks() {
		w, ok := h.written[id]
		if held[id] || !ok || h.removedBefore(w) {
			continue
		}
		h.fail(PropLeakFree, "block %d of %s, written by %v, is still on the datanode at rest, and no file holds it: it was removed after the write (no crash; no deletion dropped at rest)", id, w.path, w.end)
		return
	}
}

// removedBefore reports whether a call that could have removed or moved
// w's file was made before w ended: a delete or rename of its path or of
// a directory above it, answered OK (or never) after its create was
// called. One answered before that ran before the file existed, and one
// that failed changed nothing (namespace calls are never retried).
func (h *rpcHarness) removedBefore(w blockWrite) bool {
	start, end := int64(w.start)+histOffset, int64(w.end)+histOffset
	return slices.ContainsFunc(h.calls, func(c *rpcCall) bool {
		m := c.input.Req.Method
		return (m == namespace.MethodDelete || m == namespace.MethodRename) && c.call < end && c.ret > start &&
			(c.out.Unknown || c.out.Code == namespace.OK) &&
			(c.input.Req.Path == w.path || within(w.path, c.input.Req.Path))
	})
}

// replayAtRest cuts the namenode's power once the run is at rest, and
// starts it again: every change it answered OK was synced before it was
// answered, and a failed change logs nothing, so the tree it replays must
// be the tree it served. A crash during the run is checked against the
// orders of the changes in flight; at rest none are, and nothing short of
// equality will do. It is where a lost edit shows that no drawn crash
// came late enough to see: a failed rewrite or fsync after a replay
// passed over, and the namenode served a log a power loss would cut.
func (h *rpcHarness) replayAtRest() {
	want := snapshotNS(h.nn.NS)
	h.atRest = &want
	h.phase = "replay"
	h.w.Note("phase replay: power loss at rest")
	h.nnProc.Crash()
	h.nnProc.SimDisk().PowerLoss()
	h.nnProc.Restart()
	switch err := h.w.Run(h.w.Now() + time.Second); {
	case h.failure != nil:
	case err != nil:
		h.failAfter(PropHarness, "the namenode's restart at rest: "+err.Error())
	case h.atRest != nil:
		h.fail(PropDurable, "after a power loss at rest, the namenode did not start again")
	}
}

// checkReplayAtRest compares the tree the namenode replayed after the
// power loss at rest with the tree it served, and lets the world end.
func (h *rpcHarness) checkReplayAtRest() {
	want, got := *h.atRest, snapshotNS(h.nn.NS)
	h.atRest = nil
	if !got.equal(want) {
		h.fail(PropDurable, "after a power loss at rest, the namenode replayed a tree other than the one it served: %s", nsDiff(want, got))
	} else {
		h.checkBlocks("after a power loss at rest")
	}
	h.nn.NS.Close()
	h.nn.Close()
}

// checkBlocks checks every block of a complete file on the datanode as
// the namespace says: a namenode that lost a change must not have lost
// the data behind what it kept.
func (h *rpcHarness) checkBlocks(when string) {
	if h.dnDown || h.dn == nil {
		return
	}
	store := h.dn.Store()
	h.nn.NS.Walk(func(path string, dir, complete bool, blocks []namespace.Location) {
		if h.failure != nil || dir || !complete {
			return
		}
		for _, b := range blocks {
			if st, n, ok := store.Info(b.Block); !ok || st != b.Stamp || n != b.Length {
				h.fail(PropDurable, "%s: %s: block %d (stamp %d, %d bytes) is not on the datanode (held: %v, stamp %d, %d bytes)", when, path, b.Block, b.Stamp, b.Length, ok, st, n)
				return
			}
		}
	})
}

func (h *rpcHarness) history() []porcupine.Operation {
	ops, _ := h.epochHistory()
	return slices.Concat(ops...)
}

// epochHistory splits the history by namenode incarnation; epochs[k] are
// the calls made to incarnation k.
func (h *rpcHarness) epochHistory() (epochs [][]porcupine.Operation, changes [][]porcupine.Operation) {
	epochs = make([][]porcupine.Operation, h.epoch+1)
	changes = make([][]porcupine.Operation, h.epoch+1)
	for _, c := range h.calls {
		if c.done == 0 {
			c.out = NSOutput{Unknown: true}
			c.ret = math.MaxInt64
		}
		// A read whose answer never came constrains nothing; leaving it
		// out spares the checker, as leaving out a fault's load does.
		// Nor does one no namenode saw.
		if m := c.input.Req.Method; c.load || c.out.Unknown && (c.unsent || m == namespace.MethodList || m == namespace.MethodGetBlockLocations) {
			continue
		}
		op := porcupine.Operation{ClientId: c.client + 1, Input: c.input, Call: c.call, Output: c.out, Return: c.ret}
		epochs[c.epoch] = append(epochs[c.epoch], op)
		switch c.input.Req.Method {
		case namespace.MethodList, namespace.MethodGetBlockLocations:
			continue
		}
		switch {
		case c.out.Unknown || c.out.Code == namespace.OK:
		case c.out.Code == namespace.EIO:
			// Answered EIO (only with the AnswerEIO bug), the change
			// stays applied and logged: durable or not, as unanswered.
			op.Output, op.Return = NSOutput{Unknown: true}, math.MaxInt64
		default:
			// A change that failed logged nothing and is answered at
			// once, without waiting for a sync (as HDFS's handlers skip
			// logSync on an exception): like a read, it may have seen a
			// change not yet durable, which the crash then loses (its
			// writer got no answer). So it constrains the replayed
			// tree no more than a read does.
			continue
		}
		changes[c.epoch] = append(changes[c.epoch], op)
	}
	return epochs, changes
}

// checkHistory checks each namenode incarnation's calls linearizable from
// the tree it started with, and each crash durable: the next incarnation's
// tree is what the changes made before the crash give, in some order that
// fits their answers, with any subset of the unanswered ones (a change
// that failed is left out, as a read is: see epochHistory).
func (h *rpcHarness) checkHistory() *Failure {
	budget := newLinBudget(DefaultLinBudget) // the run's, over every check
	epochs, changes := h.epochHistory()
	img := func(k int) *nsState {
		if k < len(h.images) {
			return h.images[k]
		}
		return nil
	}
	for k := 0; k < len(epochs); k++ {
		if img(k) == nil {
			continue
		}
		// Incarnations that crashed before serving join the one before
		// them: no call reached them.
		j := k + 1
		for j < len(epochs) && img(j) == nil {
			j++
		}
		ops, ch := slices.Concat(epochs[k:j]...), slices.Concat(changes[k:j]...)
		what := ""
		if h.epoch > 0 {
			what = fmt.Sprintf("namenode incarnation %d: ", k)
		}
		m := nsModelFrom(rpcDN, *img(k))
		if !h.ignored(PropLinearizable) {
			if f := checkNS(m, ops, budget, PropLinearizable, what); f != nil {
				return f
			}
		}
		if next := img(j); next != nil && !h.ignored(PropDurable) {
			at := h.crashes[j-1]
			ch = append(ch, porcupine.Operation{ClientId: 1 << 20, Input: NSInput{image: next}, Call: at, Output: NSOutput{}, Return: at})
			if f := checkNS(m, ch, budget, PropDurable, fmt.Sprintf("namenode restart %d: ", j)); f != nil {
				return f
			}
		}
	}
	return nil
}
