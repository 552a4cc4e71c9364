package properties

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"xceiver/model"
)

// The Validate functions stand between a trace file and a run: a case
// edited past what the Draw functions make is refused (replay's bad
// input, exit 2), where it panicked in the harness, ran out of memory,
// or hit the simulation's limit and was reported as a property failure.
// Their bounds must still admit every case the Draw functions can make,
// or a seed would stop drawing the case it drew before.

// edgeSource draws each number at one end of its range, at random: the
// largest sizes, gaps and counts together, which a seeded PCG seldom
// draws.
type edgeSource struct{ r *rand.Rand }

func (s edgeSource) IntRange(lo, hi int, _ string) int {
	if hi > lo && s.r.IntN(2) == 1 {
		return hi
	}
	return lo
}

// Every system's Draw validates what it drew; at the ends of its ranges,
// for every catalogued bug, it must still pass.
func TestDrawExtremesValidate(t *testing.T) {
	seeds := uint64(1000)
	if testing.Short() {
		seeds = 100
	}
	src := func(seed uint64) Source { return edgeSource{rand.New(rand.NewPCG(seed, 99))} }
	names := func(n int, name func(int) string) []string {
		out := []string{""}
		for i := range n {
			out = append(out, name(i))
		}
		return out
	}
	systems := []struct {
		name string
		bugs []string
		draw func(Source, uint64, string) error
	}{
		{"data path", names(len(Bugs), func(i int) string { return Bugs[i].Name }), func(s Source, seed uint64, bug string) error { _, err := Draw(s, seed, bug); return err }},
		{"rpc", names(len(RPCBugs), func(i int) string { return RPCBugs[i].Name }), func(s Source, seed uint64, bug string) error { _, err := DrawRPC(s, seed, bug); return err }},
		{"sc", names(len(SCBugs), func(i int) string { return SCBugs[i].Name }), func(s Source, seed uint64, bug string) error { _, err := DrawSC(s, seed, bug); return err }},
		{"scenario", names(len(ScenarioBugs), func(i int) string { return ScenarioBugs[i].Name }), func(s Source, seed uint64, bug string) error {
			_, err := DrawScenario(s, seed, bug)
			return err
		}},
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		for _, sys := range systems {
			for _, bug := range sys.bugs {
				if err := sys.draw(src(seed), seed, bug); err != nil {
					t.Fatalf("%s, seed %d, bug %q: %v", sys.name, seed, bug, err)
				}
			}
		}
	}
}

// wantRefused checks that Validate refused a hand-edited case (err) and,
// when run is given, that running the case anyway stops as a harness
// failure, "invalid case", before any property is judged.
func wantRefused(t *testing.T, name string, err error, run func() (property, message string)) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: validated", name)
		return
	}
	t.Logf("%s: %v", name, err)
	if run == nil {
		return
	}
	if prop, msg := run(); prop != PropHarness || !strings.HasPrefix(msg, "invalid case") {
		t.Errorf("%s: ran: %s: %s", name, prop, msg)
	}
}

// failureOf is a failure's property and message, empty for none.
func failureOf(f *Failure) (property, message string) {
	if f == nil {
		return "", ""
	}
	return f.Property, f.Message
}

func TestCaseValidateRefusesEdits(t *testing.T) {
	base, err := Draw(SeedSource(5), 5, "")
	if err != nil {
		t.Fatal(err)
	}
	const h = time.Hour
	fault := func(f Fault) func(*Case) {
		return func(c *Case) { c.Schedule.Faults = []Fault{f} }
	}
	ops := func(n int, op Op) []Op {
		var out []Op
		for range n {
			out = append(out, op)
		}
		return out
	}
	read := Op{Kind: OpRead, Block: 1, Len: 100}
	for _, e := range []struct {
		name string
		edit func(*Case)
	}{
		{"blocks of more than 16 MiB in all", func(c *Case) {
			c.Config.MaxBlock = 1000
			c.Config.Blocks = nil
			for i := range 1000 {
				c.Config.Blocks = append(c.Config.Blocks, InitBlock{ID: uint64(i + 1), Size: 16 << 20})
			}
		}},
		{"slow reader -1", fault(Fault{Kind: FaultSlowReader, Arg: -1, Size: 2048, Dur: time.Millisecond})},
		{"slow reader past the clients", fault(Fault{Kind: FaultSlowReader, Arg: 64, Size: 2048, Dur: time.Millisecond})},
		{"slow reader's window of 1 byte", fault(Fault{Kind: FaultSlowReader, Size: 1, Dur: time.Millisecond})},
		{"reset -7", fault(Fault{Kind: FaultReset, Arg: -7})},
		{"vanish -3", fault(Fault{Kind: FaultVanish, Arg: -3})},
		{"fd pressure leaving -2^40 fds", fault(Fault{Kind: FaultFDPressure, Arg: -1 << 40, Dur: time.Millisecond})},
		{"bit rot -1", fault(Fault{Kind: FaultBitRot, Arg: -1})},
		{"eio 2000‰", fault(Fault{Kind: FaultEIO, Arg: 2000, Dur: time.Millisecond})},
		{"slow disk of an hour an I/O", fault(Fault{Kind: FaultSlowDisk, Arg: 1000, Size: 3_600_000, Dur: time.Millisecond})},
		{"fault at an hour", fault(Fault{Kind: FaultCrash, At: h})},
		{"fault for an hour", fault(Fault{Kind: FaultSpike, Dur: h})},
		{"2000 faults", func(c *Case) { c.Schedule.Faults = slices.Repeat([]Fault{{Kind: FaultReset}}, 2000) }},
		{"dn_packet 1", func(c *Case) { c.Config.DNPacket = 1 }},
		{"dn_packet 513", func(c *Case) { c.Config.DNPacket = 513 }},
		{"dn_packet 16 MiB", func(c *Case) { c.Config.DNPacket = 16 << 20 }},
		{"packet 1", func(c *Case) { c.Config.Packet = 1 }},
		{"packet 16 MiB", func(c *Case) { c.Config.Packet = 16 << 20 }},
		{"pool_max 1", func(c *Case) { c.Config.PoolMax, c.Config.PoolMin = 1, 0 }},
		{"pool_min past half of pool_max", func(c *Case) { c.Config.PoolMax, c.Config.PoolMin = 4, 3 }},
		{"gap 2^62", func(c *Case) { c.Schedule.Ops = []Op{{Kind: OpRead, Block: 1, Gap: 1 << 62}} }},
		{"a worker's gaps of 9 minutes", func(c *Case) { c.Schedule.Ops = ops(9, Op{Kind: OpRead, Block: 1, Gap: time.Minute}) }},
		{"a client's liveness gaps of 5 minutes", func(c *Case) { c.Schedule.Live = ops(5, Op{Kind: OpRead, Block: 1, Gap: time.Minute}) }},
		{"rogue gaps of 6 minutes", func(c *Case) {
			c.Schedule.Rogue = ops(6, Op{Kind: OpRead, Block: 1, Gap: time.Minute, Token: BadTokens[0]})
		}},
		{"a client's probe gaps of 2 minutes", func(c *Case) { c.Schedule.Probe = ops(2, Op{Kind: OpRead, Block: 1, Gap: time.Minute}) }},
		{"5000 ops", func(c *Case) { c.Schedule.Ops = ops(5000, read) }},
		{"a read of 1 GiB", func(c *Case) { c.Schedule.Ops = []Op{{Kind: OpRead, Block: 1, Len: 1 << 30}} }},
		{"reads of 144 MiB", func(c *Case) { c.Schedule.Ops = ops(9, Op{Kind: OpRead, Block: 1, Len: 16 << 20}) }},
		{"writes of 144 MiB", func(c *Case) { c.Schedule.Ops = ops(9, Op{Kind: OpAppend, Block: 1, Size: 16 << 20}) }},
		{"keep-alive of an hour", func(c *Case) { c.Config.Keepalive = h }},
		{"client timeout of a minute", func(c *Case) { c.Config.Timeout = time.Minute }},
		{"timeouts adding up to 6 minutes", func(c *Case) {
			c.Config.ReadTimeout, c.Config.RequestTimeout, c.Config.SendTimeout = 2*time.Minute, 2*time.Minute, 2*time.Minute
		}},
		{"hostile peer returning after an hour", func(c *Case) {
			c.Config.Hostile = []HostilePeer{{Kind: HostileIdle, Count: 1, Gap: h}}
		}},
		{"max_write of 1 GiB", func(c *Case) { c.Config.MaxWrite = 1 << 30 }},
		{"two floods of 5000 idle peers", func(c *Case) {
			c.Config.Hostile = []HostilePeer{{Kind: HostileIdle, Count: 5000}, {Kind: HostileIdle, Count: 5000}}
		}},
	} {
		c := base
		c.Config.Blocks = slices.Clone(base.Config.Blocks)
		c.Schedule = cloneSchedule(base.Schedule)
		e.edit(&c)
		wantRefused(t, e.name, c.Validate(), func() (string, string) { return failureOf(Run(c, Options{}).Failure) })
	}
}

// A fault's arg or size out of its kind's range is refused naming the
// range, low end first.
func TestCaseValidateNamesFaultRanges(t *testing.T) {
	base, err := Draw(SeedSource(5), 5, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		f    Fault
		says string
	}{
		{Fault{Kind: FaultSlowReader, Size: 1, Dur: time.Millisecond}, fmt.Sprintf("fault %s: size 1 outside [1024, 1048576]", FaultSlowReader)},
		{Fault{Kind: FaultEIO, Arg: 2000, Dur: time.Millisecond}, fmt.Sprintf("fault %s: arg 2000 outside [0, 1000]", FaultEIO)},
	} {
		c := base
		c.Schedule = cloneSchedule(base.Schedule)
		c.Schedule.Faults = []Fault{e.f}
		if err := c.Validate(); err == nil || err.Error() != e.says {
			t.Errorf("%s: %v, want %q", e.f.Kind, err, e.says)
		}
	}
}

// A bound of Validate admits its edge and refuses one past it, and an
// unknown fault kind is refused by name, with the kinds there are.
func TestCaseValidateBoundsAtTheirEdges(t *testing.T) {
	base, err := Draw(SeedSource(5), 5, "")
	if err != nil {
		t.Fatal(err)
	}
	liar := func(size int) func(*Case) {
		return func(c *Case) {
			c.Config.Liar = &Liar{Size: size, Key: 1, Lies: []Lie{{Kind: LieHonest, Len: int64(min(size, 1)), Packet: model.BytesPerChecksum}}}
		}
	}
	for _, e := range []struct {
		name string
		edit func(*Case)
		says string // the error, "" for none
	}{
		{"one client worker", func(c *Case) { c.Config.ClientWorkers = 1 }, ""},
		{"64 client workers", func(c *Case) { c.Config.ClientWorkers = 64 }, ""},
		{"no client worker", func(c *Case) { c.Config.ClientWorkers = 0 }, "client workers 0 outside [1, 64]"},
		{"65 client workers", func(c *Case) { c.Config.ClientWorkers = 65 }, "client workers 65 outside [1, 64]"},
		{"a liar's block of 1 byte", liar(1), ""},
		{"a liar's block of 1 MiB", liar(1 << 20), ""},
		{"a liar's empty block", liar(0), "liar: block of 0 bytes, 1 lies"},
		{"a liar's block of 1 MiB + 1", liar(1<<20 + 1), "liar: block of 1048577 bytes, 1 lies"},
		{"an unknown fault kind", func(c *Case) { c.Config.Faults = []string{FaultReset, "bogus"} },
			fmt.Sprintf("unknown fault kind %q in faults (want %s)", "bogus", strings.Join(FaultKinds, ", "))},
	} {
		c := base
		c.Config.Blocks = slices.Clone(base.Config.Blocks)
		c.Schedule = cloneSchedule(base.Schedule)
		e.edit(&c)
		err := c.Validate()
		switch {
		case e.says == "" && err != nil:
			t.Errorf("%s: %v, want none", e.name, err)
		case e.says != "" && (err == nil || err.Error() != e.says):
			t.Errorf("%s: %v, want %q", e.name, err, e.says)
		}
	}
}

func TestRPCCaseValidateRefusesEdits(t *testing.T) {
	base, err := DrawRPC(SeedSource(2), 2, "")
	if err != nil {
		t.Fatal(err)
	}
	op := func(o RPCOp) func(*RPCCase) {
		return func(c *RPCCase) { c.Ops = []RPCOp{o} }
	}
	fault := func(f RPCFault) func(*RPCCase) {
		return func(c *RPCCase) { c.Faults = []RPCFault{f} }
	}
	for _, e := range []struct {
		name string
		edit func(*RPCCase)
	}{
		{"op bogus", op(RPCOp{Kind: "bogus", Path: "/a"})},
		{"a relative path", op(RPCOp{Kind: "mkdir", Path: "a"})},
		{"a path of 1 MiB", op(RPCOp{Kind: "mkdir", Path: "/" + strings.Repeat("a", 1<<20)})},
		{"a rename with no destination", op(RPCOp{Kind: "rename", Path: "/a"})},
		{"a gap of an hour", op(RPCOp{Kind: "list", Path: "/a", Gap: time.Hour})},
		{"a worker's gaps of 40 s", func(c *RPCCase) {
			c.Ops = slices.Repeat([]RPCOp{{Kind: "list", Path: "/a", Gap: 10 * time.Second}}, 4)
		}},
		{"liveness gaps of 2 s", func(c *RPCCase) {
			c.Live = slices.Repeat([]RPCOp{{Kind: "list", Path: "/a", Gap: time.Second}}, 2)
		}},
		{"3000 ops", func(c *RPCCase) { c.Ops = slices.Repeat([]RPCOp{{Kind: "list", Path: "/a"}}, 3000) }},
		{"writes of 128 MiB", func(c *RPCCase) {
			c.Ops = slices.Repeat([]RPCOp{{Kind: "write", Path: "/a", Blocks: 8, Size: 1 << 20}}, 16)
		}},
		{"a fault at -1 ns", fault(RPCFault{Kind: RPCFaultVanish, At: -1})},
		{"a fault at an hour", fault(RPCFault{Kind: RPCFaultVanish, At: time.Hour})},
		{"a slow client for an hour", fault(RPCFault{Kind: RPCFaultSlow, Dur: time.Hour, N: 300})},
		{"a slow client's 5000 listings", fault(RPCFault{Kind: RPCFaultSlow, Dur: time.Second, N: 5000})},
		{"bursts of 3000 calls", func(c *RPCCase) {
			c.Faults = slices.Repeat([]RPCFault{{Kind: RPCFaultBurst, N: 1500}}, 2)
		}},
		{"a burst of -1 calls", fault(RPCFault{Kind: RPCFaultBurst, N: -1})},
		{"a vanish with an N", fault(RPCFault{Kind: RPCFaultVanish, N: 7})},
		{"300 faults", func(c *RPCCase) { c.Faults = slices.Repeat([]RPCFault{{Kind: RPCFaultVanish}}, 300) }},
		{"big dir of 10000", func(c *RPCCase) { c.Config.BigDir = 10000 }},
		{"pieces of -1", func(c *RPCCase) { c.Config.Pieces = slices.Repeat([]int{-1}, c.Config.Clients) }},
		{"call timeout of an hour", func(c *RPCCase) { c.Config.CallTimeout = time.Hour }},
		{"ignore a misspelt property", func(c *RPCCase) { c.Ignore = []string{"linearisability"} }},
	} {
		c := base
		c.Config.Pieces = slices.Clone(base.Config.Pieces)
		e.edit(&c)
		wantRefused(t, e.name, c.Validate(), func() (string, string) { return failureOf(RunRPC(c).Failure) })
	}
}

// A worker's gaps may add up to 30 s and a client's liveness gaps to 1 s
// (rpcMaxWorkerGaps, rpcMaxLiveGaps), and not a nanosecond more.
func TestRPCCaseValidateGapsAtTheirBounds(t *testing.T) {
	base, err := DrawRPC(SeedSource(2), 2, "")
	if err != nil {
		t.Fatal(err)
	}
	gaps := func(total time.Duration) []RPCOp {
		ops := slices.Repeat([]RPCOp{{Kind: "list", Path: "/a", Gap: rpcMaxGap}}, int(total/rpcMaxGap))
		return append(ops, RPCOp{Kind: "list", Path: "/a", Gap: total % rpcMaxGap})
	}
	for _, e := range []struct {
		name string
		edit func(*RPCCase)
		ok   bool
	}{
		{"a worker's gaps of 30 s", func(c *RPCCase) { c.Ops = gaps(30 * time.Second) }, true},
		{"a worker's gaps of 30 s + 1 ns", func(c *RPCCase) { c.Ops = gaps(30*time.Second + 1) }, false},
		{"liveness gaps of 1 s", func(c *RPCCase) { c.Live = gaps(time.Second) }, true},
		{"liveness gaps of 1 s + 1 ns", func(c *RPCCase) { c.Live = gaps(time.Second + 1) }, false},
	} {
		c := base
		c.Config.Pieces = slices.Clone(base.Config.Pieces)
		e.edit(&c)
		if err := c.Validate(); (err == nil) != e.ok {
			t.Errorf("%s: %v, want it admitted: %v", e.name, err, e.ok)
		}
	}
}

func TestSCCaseValidateRefusesEdits(t *testing.T) {
	base, err := DrawSC(SeedSource(3), 3, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		name string
		edit func(*SCCase)
	}{
		// Each gap within a minute, but the last op an hour in: the
		// world's limit, reported as a harness failure.
		{"61 reads a minute apart", func(c *SCCase) {
			c.Ops = slices.Repeat([]SCOp{{Op: "read", Block: 1, Gap: time.Minute}}, 61)
		}},
		{"ignore a misspelt property", func(c *SCCase) { c.Ignore = []string{"leak-free"} }},
	} {
		c := base
		c.Ops = slices.Clone(base.Ops)
		e.edit(&c)
		wantRefused(t, e.name, c.Validate(), nil)
	}
}

func TestScenarioCaseValidateRefusesEdits(t *testing.T) {
	for _, e := range []struct {
		name string
		c    ScenarioCase
	}{
		{"tcp-pattern of 10 TB", ScenarioCase{Scenario: ScenarioTCPPattern, Ops: 10000, Writes: 1000, Msg: 1 << 20, Reply: 16 << 20}},
		{"tcp-pattern's 100 ops of 16 writes of 100,000 bytes", ScenarioCase{Scenario: ScenarioTCPPattern, Ops: 100, Writes: 16, Msg: 100_000, Reply: 1}},
		{"tcp-pattern's 100 replies of 1 MiB", ScenarioCase{Scenario: ScenarioTCPPattern, Ops: 100, Writes: 1, Msg: 1, Reply: 1 << 20}},
		{"parallel-read's 64 readers of 64 files of 16 MiB", ScenarioCase{Scenario: ScenarioParallelRead, Clients: 64, Blocks: 64, Ops: 1, BlockSize: 16 << 20}},
		{"parallel-read's 16 readers of 8 files of 64 KiB", ScenarioCase{Scenario: ScenarioParallelRead, Clients: 16, Blocks: 8, Ops: 1, BlockSize: 64 << 10}},
		{"sc-read's 64 blocks of 16 MiB", ScenarioCase{Scenario: ScenarioSCRead, Path: "sc", Clients: 1, Ops: 1, ReadSize: 1, Blocks: 64, BlockSize: 16 << 20, Pattern: "random", Shards: 1, CacheCapacity: 1}},
		{"sc-read's 16 readers of 100 reads of 64 KiB", ScenarioCase{Scenario: ScenarioSCRead, Path: "sc", Clients: 16, Ops: 100, ReadSize: 64 << 10, Blocks: 1, BlockSize: 64 << 10, Pattern: "random", Shards: 1, CacheCapacity: 1}},
		// (A block size of 0 is refused, not divided by: checkBounds
		// works out every bound before it judges any.)
		{"read with blocks of 0 bytes", ScenarioCase{Scenario: ScenarioRead, Clients: 1, Ops: 1, ReadSize: 1, Blocks: 1, BlockSize: 0, Pattern: "random", Server: "reactor", Keepalive: time.Second, PoolMax: 4, CacheExpiry: time.Second}},
		{"read at the maximums", ScenarioCase{Scenario: ScenarioRead, Clients: 64, Ops: 10000, ReadSize: 16 << 20, Blocks: 64, BlockSize: 16 << 20, Pattern: "random", Server: "reactor", Keepalive: time.Minute, PoolMax: 64, CacheExpiry: time.Minute}},
		{"pairs: 64 for a minute", ScenarioCase{Scenario: ScenarioPairs, Clients: 64, Msg: 64, Reply: 32 << 10, Duration: time.Minute}},
		{"rpc: a fanout of 0", ScenarioCase{Scenario: ScenarioRPC, Readers: 1, Handlers: 1, Lock: "mutex", Clients: 1, Threads: 1, Fanout: 0, Files: 1, BlockSize: 1, Reads: 1, Duration: time.Millisecond}},
		{"pairs: requests of 0 bytes", ScenarioCase{Scenario: ScenarioPairs, Clients: 1, Msg: 0, Reply: 1, Duration: 5 * time.Millisecond}},
		{"pairs: 8 for 20 ms", ScenarioCase{Scenario: ScenarioPairs, Clients: 8, Msg: 64, Reply: 32 << 10, Duration: 20 * time.Millisecond}},
		{"rpc: a tree of 65,536 files", ScenarioCase{Scenario: ScenarioRPC, Readers: 1, Handlers: 1, Lock: "mutex", Clients: 1, Threads: 1, Depth: 4, Fanout: 8, Files: 16, BlockSize: 1, Reads: 1, Duration: time.Millisecond}},
		{"rpc for a minute", ScenarioCase{Scenario: ScenarioRPC, Readers: 1, Handlers: 1, Lock: "mutex", Clients: 1, Threads: 1, Fanout: 1, Files: 1, BlockSize: 1, Reads: 1, Duration: time.Minute}},
		{"ignore a misspelt property", ScenarioCase{Scenario: ScenarioTCPPattern, Ops: 1, Writes: 1, Msg: 1, Reply: 1, Ignore: []string{"shared"}}},
	} {
		wantRefused(t, e.name, e.c.Validate(), func() (string, string) {
			r := RunScenario(e.c)
			return r.Property, r.Message
		})
	}
}

// A regular file whose read fails (Linux's /proc/self/mem, EIO at offset
// 0) is refused naming the file and what it is not.
func TestReadJSONTraceNamesAnUnreadableFile(t *testing.T) {
	const mem = "/proc/self/mem"
	if st, err := os.Stat(mem); err != nil || !st.Mode().IsRegular() {
		t.Skipf("%s: no regular file whose read fails here", mem)
	}
	_, err := ReadSCTrace(mem)
	if want := mem + ": not a short-circuit trace: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%v, want an error starting %q", err, want)
	}
}

// A JSON trace is read from a regular file of bounded size, holding one
// object of the trace's fields and nothing else; a trace of another
// format says how to record it again.
func TestReadJSONTraceRefuses(t *testing.T) {
	dir := t.TempDir()
	c, err := DrawSC(SeedSource(1), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.json")
	if err := WriteSCTrace(good, SCTrace{TraceHead{Format: SCTraceFormat, Property: PropLeakFree, Events: 9, TraceHash: "0123456789abcdef"}, c}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSCTrace(good); err != nil {
		t.Fatalf("a trace as written: %v", err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	body := string(b)
	sparse := write("sparse.json", b)
	if err := os.Truncate(sparse, maxJSONTrace+1); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Logf("no FIFO: %v", err)
		fifo = dir // a directory is not a regular file either
	}
	for _, e := range []struct {
		name, path, says string
	}{
		// (Read without it, the case ran as if the key were not there.)
		{"a misspelt key", write("key.json", []byte(strings.Replace(body, `"readers"`, `"ignroe": ["harness"], "readers"`, 1))), `unknown field "ignroe"`},
		{"a second object", write("two.json", []byte(body+"{}\n")), "more after its object"},
		{"zeros after the object", write("zeros.json", append(slices.Clone(b), 0, 0, 0)), "more after its object"},
		{"a file past the bound", sparse, "more than a trace's"},
		{"a FIFO", fifo, fifo + ": not a short-circuit trace: not a regular file"},
		{"a directory", dir, dir + ": not a short-circuit trace: not a regular file"},
		// A trace records a failure: without one it replayed as
		// diverged (exit 1), not refused as malformed.
		{"no property", write("noprop.json", []byte(strings.Replace(body, `"property": "leak-freedom"`, `"property": ""`, 1))), "no property"},
		{"no events", write("noevents.json", []byte(strings.Replace(body, `"events": 9`, `"events": 0`, 1))), "no events"},
		{"a short hash", write("hash.json", []byte(strings.Replace(body, `"0123456789abcdef"`, `"0123"`, 1))), `trace_hash "0123": want 16 hex digits`},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadSCTrace(e.path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), e.says) {
				t.Errorf("%s: %v, want an error saying %q", e.name, err, e.says)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still reading after 10 s", e.name)
		}
	}
	// The way to record it again names a bug only when there is one.
	old := write("old.json", []byte(strings.Replace(body, SCTraceFormat, "xceiver-sc-trace/1", 1)))
	_, err = ReadSCTrace(old)
	if err == nil || !strings.HasSuffix(err.Error(), "--system sc --seed 1)") {
		t.Errorf("another format, no bug: %v", err)
	}
	c.Bug = SCBugs[0].Name
	if err := WriteSCTrace(old, SCTrace{TraceHead{Format: "xceiver-sc-trace/1"}, c}); err != nil {
		t.Fatal(err)
	}
	if _, err = ReadSCTrace(old); err == nil || !strings.HasSuffix(err.Error(), "--seed 1 --bug "+c.Bug+")") {
		t.Errorf("another format, a bug: %v", err)
	}
	var pe *os.PathError
	if _, err := ReadSCTrace(filepath.Join(dir, "none.json")); !errors.As(err, &pe) {
		t.Errorf("no file: %v", err)
	}
}

// A scenario case's size out of its bound is named by its key in the file
// (the whole case was printed, the field left to find).
func TestScenarioCaseNamesTheSizeOutOfRange(t *testing.T) {
	c := ScenarioCase{Scenario: ScenarioTCPPattern, Ops: 1, Writes: 1, Msg: 1, Reply: 1, Threads: 65}
	if err := c.Validate(); err == nil || err.Error() != "scenario case: threads 65 outside [0, 64]" {
		t.Errorf("%v", err)
	}
}

// A seed drawn for a bug no catalogue names is an error, not a passing
// outcome.
func TestCheckSeedRefusesAnUnknownBug(t *testing.T) {
	if o, err := CheckSeedShrinking(1, "no-such-bug", Options{}, false, 0); err == nil {
		t.Errorf("checked seed 1 with bug no-such-bug: %+v, want an error", o)
	}
}

// Faults are put in order of their start, and those that start together
// keep the order they were drawn in.
func TestSortFaultsIsStable(t *testing.T) {
	fs := []Fault{{Kind: FaultReset, At: 3}, {Kind: FaultVanish, At: 1}, {Kind: FaultSpike, At: 3}, {Kind: FaultCrash, At: 2}, {Kind: FaultEIO, At: 1}}
	sortFaults(fs)
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s@%d", f.Kind, f.At))
	}
	if want := "vanish@1 eio@1 crash@2 reset@3 spike@3"; strings.Join(got, " ") != want {
		t.Errorf("sorted: %s, want %s", strings.Join(got, " "), want)
	}
}
