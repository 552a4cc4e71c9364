package namespace_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"xceiver/model/namespace"
	"xceiver/sim"
)

// smallScenario is a scenario of a few clients over a tree of 2 levels of
// 2 directories with 2 files each (8 files), reads and writes end to end.
func smallScenario() namespace.Scenario {
	s := namespace.DefaultScenario()
	s.Clients, s.Threads = 2, 2
	s.Depth, s.Fanout, s.Files, s.FileSize = 2, 2, 2, 4096
	s.Reads, s.Writes = 1, 1
	s.NamenodeCores, s.DatanodeCores = 2, 2
	s.Warmup, s.Duration = 10*time.Millisecond, 50*time.Millisecond
	return s
}

// The scenario runs its mix end to end without an error: reads descend
// the tree to a file (list after list) and read it, writes create files;
// the datanode holds file k's block as block 2^30+k, the id the
// namenode's tree gives it; in the sim, the servers listen on their fixed
// names (a real world's 127.0.0.1:0 is for the real world only).
func TestScenarioRunsEndToEnd(t *testing.T) {
	s := smallScenario()
	w := sim.New(sim.DefaultConfig(1))
	var listens []string
	w.Observe(func(e *sim.Event) {
		if e.Kind == "listen" {
			listens = append(listens, e.Proc+" "+e.S)
		}
	})
	res, err := namespace.RunScenario(w, s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.FirstError != "" || res.Reads == 0 || res.Writes == 0 || res.Calls == 0 {
		t.Errorf("%d reads, %d writes, %d calls, %d errors (%s): want reads and writes, no error", res.Reads, res.Writes, res.Calls, res.Errors, res.FirstError)
	}
	if res.Server.Calls == 0 || res.EditLog.Syncs == 0 || res.EditLog.Edits < 2*res.Writes {
		t.Errorf("server calls %d, edit log %+v, for %d writes (a create and a complete each)", res.Server.Calls, res.EditLog, res.Writes)
	}
	names, err := w.Process("datanode").Disk().List("data")
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 8; k++ {
		if name := fmt.Sprintf("blk_%d", 1<<30+k); !slices.Contains(names, name) {
			t.Errorf("the datanode holds no %s, file %d of the tree (it holds %d files, the first %q)", name, k, len(names), names[:min(len(names), 4)])
		}
	}
	want := []string{"datanode tcp datanode:50010", "namenode tcp namenode:8020"}
	if !slices.Equal(listens, want) {
		t.Errorf("listens %q, want %q", listens, want)
	}
}

// An op whose datanode read or write fails is a failed op, not a read or
// a write: with the datanode's disk failing every read (or write) from
// half-way through the warm-up (the tree long written), no op of the
// window succeeds, each counts as an error, and FirstError names the
// first. Counting every op that ended, whatever its error, reported these
// as reads (writes) and no error.
func TestScenarioCountsFailedDataOpsAsErrors(t *testing.T) {
	for _, tc := range []struct {
		what   string
		mix    [2]int
		faults sim.DiskFaults
		says   string
	}{
		{"reads", [2]int{1, 0}, sim.DiskFaults{ReadEIO: 1}, "namespace read /d"},
		{"writes", [2]int{0, 1}, sim.DiskFaults{WriteEIO: 1}, "namespace write /d"},
	} {
		s := smallScenario()
		s.Reads, s.Writes = tc.mix[0], tc.mix[1]
		w := sim.New(sim.DefaultConfig(1))
		w.At(s.Warmup/2, func() { w.Process("datanode").AddDiskFaults(tc.faults) })
		res, err := namespace.RunScenario(w, s)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reads != 0 || res.Writes != 0 || res.Errors == 0 || res.Calls == 0 || !strings.Contains(res.FirstError, tc.says) {
			t.Errorf("every datanode %s failing: %d reads, %d writes, %d calls, %d errors (first: %q); want no read or write, errors, the first %q...",
				tc.what, res.Reads, res.Writes, res.Calls, res.Errors, res.FirstError, tc.says)
		}
	}
}

// A datanode that cannot store the tree's blocks fails the run at once:
// its files would be missing, every read of them failing.
func TestScenarioFailsWhenTheBlocksDoNotFit(t *testing.T) {
	s := smallScenario()
	s.Reads, s.Writes = 1, 0
	cfg := sim.DefaultConfig(1)
	cfg.Disk.Capacity = 3 * int64(s.FileSize) // 3 of the 8 files
	_, err := namespace.RunScenario(sim.New(cfg), s)
	if err == nil || !strings.Contains(err.Error(), "space") {
		t.Errorf("run on a datanode with room for 3 of 8 files: error %v, want one of space", err)
	}
}

// A sim run is bounded: one whose namenode cannot stop the world within
// 10 s of its window's end (here its reader takes 20 s of CPU to take a
// call off the wire, so the stop at the window's end waits behind it)
// ends at the simulator's limit, with its error, rather than run on.
func TestScenarioStopsAtItsLimit(t *testing.T) {
	s := smallScenario()
	s.Clients, s.Threads = 1, 1
	cfg := sim.DefaultConfig(1)
	cfg.CPU.Frame = 20 * time.Second
	_, err := namespace.RunScenario(sim.New(cfg), s)
	// The clients start once the datanode has written the tree's 8 files
	// (a few hundred µs of virtual time each).
	var limit time.Duration
	if m := regexp.MustCompile(`virtual time (\S+)$`).FindStringSubmatch(fmt.Sprint(err)); m != nil {
		limit, _ = time.ParseDuration(m[1])
	}
	setup := limit - (s.Warmup + s.Duration + 10*time.Second)
	if !errors.Is(err, sim.ErrLimit) || setup <= 0 || setup > 5*time.Millisecond {
		t.Errorf("run: error %v, want the simulator's limit 10 s past the window's end (%v), the clients starting within 5 ms", err, s.Warmup+s.Duration)
	}
}

// The limit counts from the clients' start, not from 0: writing the
// tree's files before it (here 2,048 on a disk whose syncs take 4 ms)
// takes longer than the 10 s a run may go past its window, and the run
// still measures its window. (Counted from 0, `run rpc` over 65,536
// files reached it before the first call.)
func TestScenarioLimitCountsFromTheWindow(t *testing.T) {
	s := smallScenario()
	s.Depth, s.Fanout, s.Files, s.FileSize = 2, 8, 32, 1
	cfg := sim.DefaultConfig(1)
	cfg.Disk.Latency = 4 * time.Millisecond
	w := sim.New(cfg)
	res, err := namespace.RunScenario(w, s)
	if err != nil || res.Calls == 0 {
		t.Fatalf("run: %d calls, error %v", res.Calls, err)
	}
	if setup := w.Now() - s.Warmup - s.Duration; setup < 10*time.Second {
		t.Errorf("the window ended at %v: the tree took %v to write, want over 10 s for the test to mean anything", w.Now(), setup)
	}
	// Writing the tree has a limit of its own, 10 ms a file past the
	// other's: here 20 ms a file, so the run ends at it.
	cfg.Disk.Latency = 10 * time.Millisecond
	_, err = namespace.RunScenario(sim.New(cfg), s)
	if !errors.Is(err, sim.ErrLimit) || !strings.Contains(err.Error(), "virtual time 30.54s") {
		t.Errorf("a tree of 2,048 files at 20 ms each: error %v, want the simulator's limit at 30.54s (10.06 s + 2,048 × 10 ms)", err)
	}
}

// DefaultScenario is `run rpc`'s default: 32 clients of 4 ops at once over
// a tree of 3 levels of 4 directories with 4 files of 4 KiB in each leaf
// (256 files), read-only, end to end, with the edit log, on 8 cores each.
func TestDefaultScenario(t *testing.T) {
	s := namespace.DefaultScenario()
	got := fmt.Sprintf("clients %d threads %d depth %d fanout %d files %d size %d mix %d:%d data %v log %v cores %d/%d lock %s readers %d handlers %d warmup %v duration %v",
		s.Clients, s.Threads, s.Depth, s.Fanout, s.Files, s.FileSize, s.Reads, s.Writes, s.ReadData, s.EditLog, s.NamenodeCores, s.DatanodeCores, s.Lock, s.RPC.Readers, s.RPC.Handlers, s.Warmup, s.Duration)
	want := "clients 32 threads 4 depth 3 fanout 4 files 4 size 4096 mix 1:0 data true log true cores 8/8 lock rwlock readers 1 handlers 10 warmup 50ms duration 200ms"
	if got != want {
		t.Errorf("DefaultScenario:\n %s\nwant\n %s", got, want)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("DefaultScenario does not validate: %v", err)
	}
}

// Validate takes each field at its bounds and refuses it just past them,
// with the one line a user of run rpc (or a hand-edited scenario case)
// is shown: which flag, its value and its range. A line with the wrong
// value or range in it would send them the wrong way.
func TestScenarioValidate(t *testing.T) {
	for _, tc := range []struct {
		what string
		set  func(s *namespace.Scenario)
		says string // the error, exactly; "": accepted
	}{
		{"the default", func(s *namespace.Scenario) {}, ""},
		{"1 client", func(s *namespace.Scenario) { s.Clients = 1 }, ""},
		{"0 clients", func(s *namespace.Scenario) { s.Clients = 0 }, "--clients 0 outside [1, 4096]"},
		{"4096 clients", func(s *namespace.Scenario) { s.Clients = 4096 }, ""},
		{"4097 clients", func(s *namespace.Scenario) { s.Clients = 4097 }, "--clients 4097 outside [1, 4096]"},
		{"1 thread", func(s *namespace.Scenario) { s.Threads = 1 }, ""},
		{"0 threads", func(s *namespace.Scenario) { s.Threads = 0 }, "--threads 0 outside [1, 4096]"},
		{"4096 threads", func(s *namespace.Scenario) { s.Threads = 4096 }, ""},
		{"4097 threads", func(s *namespace.Scenario) { s.Threads = 4097 }, "--threads 4097 outside [1, 4096]"},
		{"depth 0", func(s *namespace.Scenario) { s.Depth = 0 }, ""},
		{"depth -1", func(s *namespace.Scenario) { s.Depth = -1 }, "--depth -1 outside [0, 1000]"},
		{"fanout 1: a chain of MaxDepth", func(s *namespace.Scenario) { s.Fanout, s.Depth = 1, namespace.MaxDepth }, ""},
		{"depth past MaxDepth", func(s *namespace.Scenario) { s.Fanout, s.Depth = 1, namespace.MaxDepth+1 }, "--depth 1001 outside [0, 1000]"},
		{"fanout 0", func(s *namespace.Scenario) { s.Fanout = 0 }, "--fanout 0: want at least 1"},
		{"1 file", func(s *namespace.Scenario) { s.Files = 1 }, ""},
		{"0 files", func(s *namespace.Scenario) { s.Files = 0 }, "--files 0: want at least 1"},
		{"file size 1", func(s *namespace.Scenario) { s.FileSize = 1 }, ""},
		{"file size 0", func(s *namespace.Scenario) { s.FileSize = 0 }, "--file-size 0 outside [1, 256 MiB]"},
		{"file size 256 MiB", func(s *namespace.Scenario) { s.Depth, s.FileSize = 0, 256<<20 }, ""},
		{"file size past 256 MiB", func(s *namespace.Scenario) { s.Depth, s.FileSize = 0, 256<<20+1 }, "--file-size 268435457 outside [1, 256 MiB]"},
		{"MaxFiles files", func(s *namespace.Scenario) { s.Depth, s.Fanout, s.Files, s.FileSize = 2, 1024, 1, 1 }, ""},
		{"past MaxFiles files", func(s *namespace.Scenario) { s.Depth, s.Fanout, s.Files, s.FileSize = 2, 1024, 2, 1 },
			"tree: --fanout 1024 to the power --depth 2, times --files 2, is more than 1048576 files"},
		// Three values apart, so each flag is seen to name its own.
		{"MaxFiles files in a binary tree", func(s *namespace.Scenario) { s.Depth, s.Fanout, s.Files, s.FileSize = 20, 2, 1, 1 }, ""},
		{"past MaxFiles files in a binary tree", func(s *namespace.Scenario) { s.Depth, s.Fanout, s.Files, s.FileSize = 21, 2, 1, 1 },
			"tree: --fanout 2 to the power --depth 21, times --files 1, is more than 1048576 files"},
		{"4 GiB of data", func(s *namespace.Scenario) { s.Depth, s.Files, s.FileSize = 0, 16, 256<<20 }, ""},
		{"past 4 GiB of data", func(s *namespace.Scenario) { s.Depth, s.Files, s.FileSize = 0, 17, 256<<20 },
			"tree: 17 files of --file-size 268435456 exceeds 4 GiB of block data (--read-data)"},
		{"past 4 GiB without data", func(s *namespace.Scenario) { s.Depth, s.Files, s.FileSize, s.ReadData = 0, 17, 256<<20, false }, ""},
		{"mix 0:1", func(s *namespace.Scenario) { s.Reads, s.Writes = 0, 1 }, ""},
		{"mix MaxMix:MaxMix", func(s *namespace.Scenario) { s.Reads, s.Writes = namespace.MaxMix, namespace.MaxMix }, ""},
		{"mix 0:0", func(s *namespace.Scenario) { s.Reads, s.Writes = 0, 0 }, "--mix 0:0: want reads and writes from 0 to 1048576, not both 0"},
		{"mix -1:2", func(s *namespace.Scenario) { s.Reads, s.Writes = -1, 2 }, "--mix -1:2: want reads and writes from 0 to 1048576, not both 0"},
		{"reads past MaxMix", func(s *namespace.Scenario) { s.Reads, s.Writes = namespace.MaxMix+1, 0 },
			"--mix 1048577:0: want reads and writes from 0 to 1048576, not both 0"},
		{"writes past MaxMix", func(s *namespace.Scenario) { s.Reads, s.Writes = 0, namespace.MaxMix+1 },
			"--mix 0:1048577: want reads and writes from 0 to 1048576, not both 0"},
		{"0 readers: the default", func(s *namespace.Scenario) { s.RPC.Readers = 0 }, ""},
		{"MaxLoops readers", func(s *namespace.Scenario) { s.RPC.Readers = namespace.MaxLoops }, ""},
		{"readers past MaxLoops", func(s *namespace.Scenario) { s.RPC.Readers = namespace.MaxLoops + 1 }, "--readers 1025 outside [0, 1024]"},
		{"0 handlers: the default", func(s *namespace.Scenario) { s.RPC.Handlers = 0 }, ""},
		{"MaxLoops handlers", func(s *namespace.Scenario) { s.RPC.Handlers = namespace.MaxLoops }, ""},
		{"handlers past MaxLoops", func(s *namespace.Scenario) { s.RPC.Handlers = namespace.MaxLoops + 1 }, "--handlers 1025 outside [0, 1024]"},
		{"readers -1", func(s *namespace.Scenario) { s.RPC.Readers = -1 }, "--readers -1: want at least 0 (0: the default)"},
		{"handlers -1", func(s *namespace.Scenario) { s.RPC.Handlers = -1 }, "--handlers -1: want at least 0 (0: the default)"},
		{"queue 0: the default", func(s *namespace.Scenario) { s.RPC.QueueSize = 0 }, ""},
		{"queue -1", func(s *namespace.Scenario) { s.RPC.QueueSize = -1 }, "--queue -1: want at least 0 (0: 100 per handler)"},
		{"1 namenode core", func(s *namespace.Scenario) { s.NamenodeCores = 1 }, ""},
		{"0 namenode cores", func(s *namespace.Scenario) { s.NamenodeCores = 0 }, "--namenode-cores 0 outside [1, 1024]"},
		{"1024 namenode cores", func(s *namespace.Scenario) { s.NamenodeCores = 1024 }, ""},
		{"1025 namenode cores", func(s *namespace.Scenario) { s.NamenodeCores = 1025 }, "--namenode-cores 1025 outside [1, 1024]"},
		{"1 datanode core", func(s *namespace.Scenario) { s.DatanodeCores = 1 }, ""},
		{"0 datanode cores", func(s *namespace.Scenario) { s.DatanodeCores = 0 }, "datanode cores 0 outside [1, 1024]"},
		{"1024 datanode cores", func(s *namespace.Scenario) { s.DatanodeCores = 1024 }, ""},
		{"1025 datanode cores", func(s *namespace.Scenario) { s.DatanodeCores = 1025 }, "datanode cores 1025 outside [1, 1024]"},
		{"no warmup", func(s *namespace.Scenario) { s.Warmup = 0 }, ""},
		{"warmup -1", func(s *namespace.Scenario) { s.Warmup = -1 }, "--warmup -1ns outside [0, 24h0m0s]"},
		{"warmup MaxWindow", func(s *namespace.Scenario) { s.Warmup = namespace.MaxWindow }, ""},
		{"warmup past MaxWindow", func(s *namespace.Scenario) { s.Warmup = namespace.MaxWindow + 1 }, "--warmup 24h0m0.000000001s outside [0, 24h0m0s]"},
		{"duration 1 ns", func(s *namespace.Scenario) { s.Duration = 1 }, ""},
		{"duration MaxWindow", func(s *namespace.Scenario) { s.Duration = namespace.MaxWindow }, ""},
		{"duration 0", func(s *namespace.Scenario) { s.Duration = 0 }, "--duration 0s outside (0, 24h0m0s]"},
		{"duration past MaxWindow", func(s *namespace.Scenario) { s.Duration = namespace.MaxWindow + 1 }, "--duration 24h0m0.000000001s outside (0, 24h0m0s]"},
		{"lock mutex", func(s *namespace.Scenario) { s.Lock = namespace.Mutex }, ""},
		{"lock spin", func(s *namespace.Scenario) { s.Lock = "spin" }, `namespace: lock "spin" is neither mutex nor rwlock`},
	} {
		s := namespace.DefaultScenario()
		tc.set(&s)
		err := s.Validate()
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: refused (%v), want it accepted", tc.what, err)
		case tc.says != "" && (err == nil || err.Error() != tc.says):
			t.Errorf("%s: Validate says %v, want %q", tc.what, err, tc.says)
		}
	}
}

// ParseMix takes run rpc's --mix: READS:WRITES, each side from 0 to
// MaxMix and not both 0. It takes each side at its bounds and gives the
// mix back as written (a mix read backwards, or one side lost, would run
// another load than asked for); anything else it refuses with one line
// that quotes what was given and says what is wanted.
func TestParseMix(t *testing.T) {
	for _, tc := range []struct {
		mix           string
		reads, writes int
	}{
		{"8:1", 8, 1},
		{"1:0", 1, 0},
		{"0:1", 0, 1},
		{"1:1", 1, 1},
		{"1048576:0", namespace.MaxMix, 0},
		{"0:1048576", 0, namespace.MaxMix},
		{"1048576:1048576", namespace.MaxMix, namespace.MaxMix},
	} {
		r, w, err := namespace.ParseMix(tc.mix)
		if err != nil || r != tc.reads || w != tc.writes {
			t.Errorf("ParseMix(%q) = %d, %d, %v; want %d, %d", tc.mix, r, w, err, tc.reads, tc.writes)
		}
	}
	for _, bad := range []string{
		"8",                      // no colon
		"",                       // nothing
		"x:1",                    // reads not a number
		"1:x",                    // writes not a number
		"8:1:2",                  // a third side
		"-1:2",                   // reads below 0 (with a sum above 0)
		"2:-1",                   // writes below 0 (likewise)
		"0:0",                    // neither
		"1048577:0",              // reads past MaxMix
		"0:1048577",              // writes past MaxMix
		"99999999999999999999:1", // past an int
		"+8:1",                   // a sign
		"8:+1",                   // likewise
		"08:1",                   // a leading zero
		"8:01",                   // likewise
		" 8:1",                   // a space
		":1",                     // reads empty
		"1:",                     // writes empty
	} {
		want := fmt.Sprintf("mix %q: want READS:WRITES, each 0 to 1048576 and not both 0, e.g. 8:1", bad)
		if r, w, err := namespace.ParseMix(bad); err == nil || err.Error() != want {
			t.Errorf("ParseMix(%q) = %d, %d, %v; want the error %q", bad, r, w, err, want)
		}
	}
}
