package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"xceiver/model"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// cliJSON runs the CLI with args and decodes its JSON output into into.
// Output that is not JSON fails the test; none (a run that stopped with
// an error) is left to the caller, which checks the code.
func cliJSON(t *testing.T, into any, args ...string) (code int, stderr string) {
	t.Helper()
	code, stdout, stderr := runCLI(args...)
	if stdout != "" {
		if err := json.Unmarshal([]byte(stdout), into); err != nil {
			t.Fatalf("%q: exit %d, output not JSON: %v\n%s%s", args, code, err, stdout, stderr)
		}
	}
	return code, stderr
}

func TestBadUsageIsOneLineAndExit2(t *testing.T) {
	cases := [][]string{
		{},
		{"frobnicate"},
		{"run"},
		{"run", "no-such-scenario"},
		{"run", "tcp-pattern", "--ops", "0"},
		{"run", "tcp-pattern", "--msg", "-5"},
		{"run", "tcp-pattern", "--writes", "x"},
		{"run", "tcp-pattern", "--no-such-flag"},
		{"run", "tcp-pattern", "--world", "mars"},
		{"run", "tcp-pattern", "extra-arg"},
		{"run", "read", "--clients", "0"},
		{"run", "read", "--server", "forked"},
		{"run", "read", "--pattern", "zigzag"},
		{"run", "read", "--read-size", "-1"},
		{"run", "read", "--pool-max", "1"},
		// Counts the model reads as "the default" when 0: a user who
		// asks for 0 is told, not given the default.
		{"run", "read", "--pool-max", "0"},
		{"run", "read", "--selectors", "0"},
		{"run", "read", "--workers", "0"},
		{"run", "rpc", "--readers", "0"},
		{"run", "rpc", "--handlers", "0"},
		{"run", "sc-read", "--shards", "0"},
		{"run", "sc-read", "--cache-capacity", "0"},
		{"run", "sc-read", "--cache-expiry", "0s"},
		{"run", "read", "--keepalive", "soon"},
		{"run", "tcp-pattern", "--trace", filepath.Join(os.TempDir(), "no", "such", "dir", "t.jsonl")},
		{"run", "read", "--world", "real", "--tmpdir", "/no/such/dir"},
		{"validate", "--scenario", "nope"},
		{"bench"},
		{"bench", "nope"},
		{"bench", "sim-speed", "--world", "venus"},
		{"run", "tcp-pattern", "--profile", "/no/such/profile.json"},
		{"run", "tcp-pattern", "--profile", "main_test.go"},
		{"validate", "--profile", "/no/such/profile.json"},
		{"bench", "hdfs-941", "--profile", "/no/such/profile.json"},
		{"calibrate", "extra-arg"},
	}
	for _, args := range cases {
		code, _, stderr := runCLI(args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
		if len(args) > 0 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%q: error is not one line: %q", args, stderr)
		}
	}
}

func TestRunTCPPatternJSON(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	code, stdout, stderr := runCLI("run", "tcp-pattern", "--writes", "2", "--msg", "8", "--reply", "32768", "--ops", "20", "--json", "--trace", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"scenario", "world", "seed", "ops", "first_op_us", "p50_us", "p99_us", "mean_us", "stall_share", "server_rcvbuf", "events", "trace_hash"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if p50 := got["p50_us"].(float64); p50 < 40000 || p50 > 48000 {
		t.Errorf("p50 %v µs, want the 40–44 ms delayed-ACK stall", p50)
	}
	b, err := os.ReadFile(trace)
	if err != nil || !bytes.Contains(b, []byte(`"kind":"delack"`)) || !bytes.Contains(b, []byte(`"kind":"seg"`)) {
		t.Errorf("trace lacks segments or delayed ACKs (%v, %d bytes)", err, len(b))
	}
	// Same seed, same hash.
	_, again, _ := runCLI("run", "tcp-pattern", "--writes", "2", "--msg", "8", "--reply", "32768", "--ops", "20", "--json")
	var got2 map[string]any
	json.Unmarshal([]byte(again), &got2)
	if got["trace_hash"] != got2["trace_hash"] {
		t.Errorf("same seed, different hashes: %v vs %v", got["trace_hash"], got2["trace_hash"])
	}
}

func TestRunReadJSON(t *testing.T) {
	code, stdout, stderr := runCLI("run", "read", "--clients", "4", "--ops", "10", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "world", "seed", "ops", "p50_us", "p99_us", "throughput_mbps", "server_peak_fds",
		"server_peak_threads", "server_peak_open_block_files", "bytes_verified", "errors", "trace_hash"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if got["errors"].(float64) != 0 || got["bytes_verified"].(float64) != 4*10*32768 {
		t.Errorf("errors %v, bytes verified %v", got["errors"], got["bytes_verified"])
	}
}

// --cpu-scale runs the same model on a slower machine: the same work
// (bytes, callbacks) at the factor's CPU, and the JSON says which
// machine it was.
func TestRunReadCPUScale(t *testing.T) {
	get := func(args ...string) map[string]any {
		t.Helper()
		var got map[string]any
		if code, stderr := cliJSON(t, &got, append([]string{"run", "read", "--clients", "4", "--ops", "10", "--json"}, args...)...); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		return got
	}
	one, two := get(), get("--cpu-scale", "2")
	if _, ok := one["cpu_scale"]; ok {
		t.Errorf("the profile as measured reports cpu_scale %v", one["cpu_scale"])
	}
	if two["cpu_scale"] != 2.0 {
		t.Errorf("cpu_scale %v, want 2", two["cpu_scale"])
	}
	if r := two["cpu_us_per_op"].(float64) / one["cpu_us_per_op"].(float64); r < 1.8 || r > 2.2 {
		t.Errorf("CPU an op at twice the costs: %.2f× the profile's, want about 2×", r)
	}
	if two["throughput_mbps"].(float64) >= one["throughput_mbps"].(float64) {
		t.Errorf("throughput at twice the costs %v, not below %v", two["throughput_mbps"], one["throughput_mbps"])
	}
	if two["bytes_verified"] != one["bytes_verified"] {
		t.Errorf("bytes verified %v and %v: the same reads should run", two["bytes_verified"], one["bytes_verified"])
	}
}

// validate --cpu-scale runs the sim side at the factor and says so.
func TestValidateCPUScaleIsApplied(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real world")
	}
	simP50 := func(scale string) (float64, float64) {
		t.Helper()
		var got struct {
			CPUScale *float64 `json:"cpu_scale"`
			Rows     []row    `json:"rows"`
		}
		if code, stderr := cliJSON(t, &got, "validate", "--scenario", "tcp-nodelay", "--cpu-scale", scale, "--host-steal", "0", "--json"); code != exitOK && code != exitFail {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if len(got.Rows) != 1 {
			t.Fatalf("%d rows, want tcp-nodelay's one", len(got.Rows))
		}
		f := 1.0
		if got.CPUScale != nil {
			f = *got.CPUScale
		} else if scale != "1" {
			t.Errorf("--cpu-scale %s: no cpu_scale in the JSON", scale)
		}
		return f, got.Rows[0].Sim
	}
	f1, p1 := simP50("1")
	f3, p3 := simP50("3")
	if f1 != 1 || f3 != 3 {
		t.Errorf("cpu_scale %v and %v, want 1 and 3", f1, f3)
	}
	// The exchange is CPU and no wait (NODELAY, hand-off at once): at
	// three times the costs, about three times the p50.
	if r := p3 / p1; r < 2 || r > 3.5 {
		t.Errorf("sim p50 %v µs at ×3 against %v at ×1 (%.2f×): the factor did not reach the sim", p3, p1, r)
	}
	code, stdout, _ := runCLI("validate", "--scenario", "tcp-nodelay", "--cpu-scale", "1.5", "--host-steal", "0")
	if !strings.Contains(stdout, "the sim's CPU costs were the profile's × 1.5 (--cpu-scale)") {
		t.Errorf("exit %d; the table does not say the costs were scaled:\n%s", code, stdout)
	}
}

func TestAutoFactor(t *testing.T) {
	for _, c := range []struct {
		r, want float64
		ok      bool
	}{{1.2749, 1.27, true}, {0.25, 0.25, true}, {4, 4, true}, {0.2, 0, false}, {4.5, 0, false}, {math.NaN(), 0, false}, {math.Inf(1), 0, false}} {
		f, err := autoFactor(c.r)
		if (err == nil) != c.ok || f != c.want {
			t.Errorf("autoFactor(%v) = %v, %v; want %v, ok %v", c.r, f, err, c.want, c.ok)
		}
		if err != nil && exitCode(fmt.Errorf("validate --cpu-scale auto: %w", err)) != exitUsage {
			t.Errorf("autoFactor(%v): %v is not a usage error (exit 2)", c.r, err)
		}
	}
}

// bench --cpu-scale runs the sim side slower and records the factor.
func TestBenchCPUScale(t *testing.T) {
	if testing.Short() {
		t.Skip("two hdfs-918 benches")
	}
	reactor := func(args ...string) (tp float64, scale *float64) {
		t.Helper()
		var got struct {
			CPUScale *float64   `json:"cpu_scale"`
			Rows     []benchRow `json:"rows"`
		}
		if code, stderr := cliJSON(t, &got, append([]string{"bench", "hdfs-918", "--json"}, args...)...); code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, r := range got.Rows {
			if r.World == "sim" && r.Case == "reactor" && r.Metric == "throughput" {
				return r.Value, got.CPUScale
			}
		}
		t.Fatal("no sim reactor throughput row")
		return 0, nil
	}
	tp1, s1 := reactor()
	tp2, s2 := reactor("--cpu-scale", "2")
	if s1 != nil || s2 == nil || *s2 != 2 {
		t.Errorf("cpu_scale %v at the default, %v at 2: want absent, then 2", s1, s2)
	}
	if tp2 >= tp1*0.8 {
		t.Errorf("sim reactor %.0f MB/s at twice the costs, %.0f at the profile's: want well below", tp2, tp1)
	}
}

// simBench runs bench name in sim with --json and returns its figures by
// case and metric.
func simBench(t *testing.T, name string) map[string]map[string]float64 {
	t.Helper()
	var got struct {
		Rows []benchRow `json:"rows"`
	}
	if code, stderr := cliJSON(t, &got, "bench", name, "--json"); code != exitOK {
		t.Fatalf("bench %s: exit %d: %s", name, code, stderr)
	}
	fig := map[string]map[string]float64{}
	for _, r := range got.Rows {
		if r.World != "sim" {
			continue
		}
		if fig[r.Case] == nil {
			fig[r.Case] = map[string]float64{}
		}
		fig[r.Case][r.Metric] = r.Value
	}
	return fig
}

// In real the reactor out-reads the thread-per-connection server (HDFS-918);
// the sim must rank them alike. A selector that dropped its spare packet
// buffers each time none was lent turned the sim's ranking round for a
// day (693 MB/s against 735) while real kept it. HDFS-918 also cut a
// random read's latency (3.42 ms thread per request → 2.83 ms
// multiplexed): the sim's p50s today are 10.12 ms for the reactor
// against 10.73 for the threaded server (1.06×, where HDFS had 1.21×), a
// thin margin, so the test asks for the order only (the dropped spares
// put the reactor's at 12.19 ms). With 128 clients reading in a closed
// loop a p50 moves against the throughput, whose order real shares;
// real's p50s are not recorded in README.md.
func TestBenchHDFS918SimRanksTheReactorFirst(t *testing.T) {
	fig := simBench(t, "hdfs-918")
	r, th := fig["reactor"], fig["threaded"]
	if r["throughput"] == 0 || th["throughput"] == 0 || r["p50"] == 0 || th["p50"] == 0 {
		t.Fatalf("sim rows %v: want reactor and threaded, throughput and p50", fig)
	}
	if r["throughput"] <= th["throughput"] {
		t.Errorf("sim reactor %.0f MB/s, threaded %.0f: want the reactor ahead, as in real", r["throughput"], th["throughput"])
	}
	if r["p50"] >= th["p50"] {
		t.Errorf("sim p50 reactor %.2f ms, threaded %.2f: want the reactor's lower, as HDFS-918 measured", r["p50"], th["p50"])
	}
}

// HDFS-941: without TCP_NODELAY every read waits out a delayed ACK (a
// p50 of 44 ms in both worlds), and NODELAY is many times faster, in
// every case of TestParallelRead. bench hdfs-941's sim on/off ratios
// today: 133× with 4 readers (4.2 against 554 MB/s), 50× with 16 (16.8
// against 830), 102× with 2 files × 4 (8.3 against 851); real 94–191×,
// 36–74× and 61–136×; published 23× (12 against 274 MB/s). The test runs
// the bench's cases as it does (runScenario, the embedded profile) with
// a quarter of the reads, 256 a reader, which gives the same ratios
// within 3% (137×, 50×, 103×) for a quarter of the 2 s of CPU. It asks
// for at least 10×, as validate's read-keepalive row does of both
// worlds: well under every figure, and far over the 2× the cases give
// with NODELAY set at the datanode alone. (sim's
// TestParallelReadVerifiesEveryReadAndNagleSlowsIt asks 5× of the
// 4-reader case with the hand-set costs; this is the bench's
// configuration, every case.)
func TestBenchHDFS941SimNoDelayIsManyTimesFaster(t *testing.T) {
	for _, c := range []struct {
		name           string
		files, readers int
	}{{"4 readers", 1, 4}, {"16 readers", 1, 16}, {"2 files x 4", 2, 4}} {
		var tput, p50 [2]float64
		for i, nd := range []bool{false, true} {
			s := model.DefaultParallelRead()
			s.Files, s.Readers, s.NoDelay, s.Iterations = c.files, c.readers, nd, 256
			res, err := runScenario("parallel-read", parallelReadRunner{s}, benchOptions("sim", 1))
			if err != nil {
				t.Fatalf("%s, nodelay=%v: %v", c.name, nd, err)
			}
			tput[i], p50[i] = num(res, "throughput_mbps"), num(res, "p50_us")/1e3
		}
		t.Logf("%s: nodelay off %.1f MB/s (p50 %.2f ms), on %.1f (p50 %.2f ms): %.1f×", c.name, tput[0], p50[0], tput[1], p50[1], tput[1]/tput[0])
		if !(tput[1] >= 10*tput[0]) || tput[0] <= 0 {
			t.Errorf("%s: nodelay on %.1f MB/s, off %.1f (%.1f×): want NODELAY at least 10× faster", c.name, tput[1], tput[0], tput[1]/tput[0])
		}
		if p50[0] < 40 {
			t.Errorf("%s: nodelay=false p50 %.2f ms: want each read to wait out a delayed ACK (≥ 40 ms)", c.name, p50[0])
		}
	}
}

// HADOOP-6713: several rpc reader threads (with a read-write namespace
// lock) let the namenode use its cores: CPU 175% with one reader → 750%
// read-only and 550% at 8:1. Bench hadoop-6713's sim sweep ends, as
// `run rpc` runs them (barging locks, wake-ups on, Hadoop 0.20's reader,
// 64 clients × 8, 32 handlers, 8 cores, namenode calls only), today:
// readers=1 mutex 46.1k calls/s at 312% (8:1: 46.1k, 318%), readers=8
// rwlock 119.8k at 800% (8:1: 118.1k, 800%), 2.6× the calls and 2.5×
// the CPU. The test asks for 2× of both on both loads: inside today's
// 2.5–2.6× (which the 8 cores cap) by a fifth, and over what two readers
// give (1.83–1.86× of both, read-only; a server dealing its
// connections to 2 of its 8 readers gave 1.86× and 1.83×), so it fails
// a server whose extra readers do not all read. (Real on 2 shared cores
// cannot tell the cases apart; the published figure is the reality
// here.)
func TestRunRPCMoreReadersGiveMoreCallsAndCPU(t *testing.T) {
	run := func(readers, lock, mix string) (calls, cpu float64) {
		t.Helper()
		var got struct {
			Calls  float64 `json:"calls_per_s"`
			CPU    float64 `json:"cpu_percent"`
			Errors float64 `json:"errors"`
		}
		args := []string{"run", "rpc", "--json", "--readers", readers, "--lock", lock, "--mix", mix,
			"--hadoop-reader", "--handlers", "32", "--clients", "64", "--threads", "8",
			"--read-data=false", "--warmup", "20ms", "--duration", "50ms"}
		if code, stderr := cliJSON(t, &got, args...); code != exitOK || got.Errors != 0 {
			t.Fatalf("%q: exit %d, %v errors: %s", args, code, got.Errors, stderr)
		}
		return got.Calls, got.CPU
	}
	for _, mix := range []string{"1:0", "8:1"} {
		c1, cpu1 := run("1", "mutex", mix)
		c8, cpu8 := run("8", "rwlock", mix)
		t.Logf("%s: readers=1 mutex %.0f calls/s at %.0f%%, readers=8 rwlock %.0f at %.0f%%", mix, c1, cpu1, c8, cpu8)
		if c1 <= 0 || cpu1 <= 0 {
			t.Fatalf("%s: readers=1 %v calls/s at %v%%", mix, c1, cpu1)
		}
		if c8 < 2*c1 || cpu8 < 2*cpu1 {
			t.Errorf("%s: readers=8 rwlock %.0f calls/s at %.0f%% CPU, readers=1 mutex %.0f at %.0f%% (%.2f×, %.2f×): want at least 2× of both",
				mix, c8, cpu8, c1, cpu1, c8/c1, cpu8/cpu1)
		}
	}
}

// validate --cpu-scale auto measures the machine and scales the sim's
// costs by how much dearer its work is than the profile's reference.
func TestValidateScalesByTheMachineWithAuto(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the machine (about 7 s)")
	}
	var got struct {
		CPUScale     float64 `json:"cpu_scale"`
		CPUScaleAuto bool    `json:"cpu_scale_auto"`
	}
	code, stderr := cliJSON(t, &got, "validate", "--scenario", "tcp-nodelay", "--cpu-scale", "auto", "--host-steal", "0", "--json")
	if code == exitUsage && strings.Contains(stderr, "past 4× either way") {
		// A machine four times faster or slower than the profile's:
		// validate says so rather than scale; nothing to check here.
		t.Skip(strings.TrimSpace(stderr))
	}
	if code != exitOK && code != exitFail {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !got.CPUScaleAuto || got.CPUScale < 0.25 || got.CPUScale > 4 {
		t.Errorf("cpu_scale %v, auto %v: want a measured factor in [0.25, 4]", got.CPUScale, got.CPUScaleAuto)
	}
	// The factor applied is the one measured, not a default.
	var measured float64
	if _, rest, ok := strings.Cut(stderr, "the sim's CPU costs × "); !ok {
		t.Errorf("stderr does not say what the machine measured:\n%s", stderr)
	} else if _, err := fmt.Sscanf(rest, "%g", &measured); err != nil || measured != got.CPUScale {
		t.Errorf("measured × %v (%v), the JSON says %v", measured, err, got.CPUScale)
	}
}

// run read splits its CPU by kind of thread in both worlds, and the two
// worlds' threads run the same callbacks for an op.
func TestRunReadSplitsCPUByThread(t *testing.T) {
	perOp := map[string]map[string]float64{}
	for _, world := range []string{"sim", "real"} {
		// As validate runs it: short timeouts, so the real run ends soon.
		r := readRun(func(s *model.ReadScenario) {
			s.Clients, s.Ops = 2, 50
			shortTimeouts(s, 20*time.Millisecond)
		})
		res, err := runScenario("read", r, runOptions{world: world, seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", world, err)
		}
		stdout, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			CPU     float64 `json:"cpu_us_per_op"`
			Server  float64 `json:"server_cpu_us_per_op"`
			Client  float64 `json:"client_cpu_us_per_op"`
			Outside float64 `json:"outside_callbacks_cpu_us_per_op"`
			Threads []threadRow
		}
		if err := json.Unmarshal(stdout, &got); err != nil {
			t.Fatal(err)
		}
		perOp[world] = map[string]float64{}
		sum := 0.0
		for _, r := range got.Threads {
			perOp[world][r.Thread] = r.CallbacksPerOp
			sum += r.USPerOp
			if r.CallbacksPerOp <= 0 || r.USPerCallback <= 0 {
				t.Errorf("%s: %+v", world, r)
			}
		}
		// Against the processes' CPU, counted apart: in real the same
		// accounting, so the same sum, but read a moment later than
		// the kinds, while other loops may end a callback (one CI run
		// on 1 December: 103.452 against 103.834 µs an op); in sim the
		// processes' also holds the dispatches, the accounting and the
		// wake-ups, with the embedded profile of 2 December more than
		// half of it at two clients (50.5 of 107.3 µs an op in kinds).
		procs := got.Server + got.Client
		if world == "real" && (sum > procs*(1+1e-6) || sum < procs*0.98) || world == "sim" && (sum >= procs || sum < procs/4) {
			t.Errorf("%s: the kinds add up to %.3f µs an op, the processes' CPU is %.3f", world, sum, procs)
		}
		if got.Outside <= 0 {
			t.Errorf("%s: %.1f µs an op outside callbacks: dispatches and wake-ups cost something", world, got.Outside)
		}
	}
	// A real run that does not account callbacks has no kinds to show.
	r := readRun(func(s *model.ReadScenario) { s.Clients, s.Ops = 1, 5; shortTimeouts(s, 20*time.Millisecond) })
	res, err := runScenario("read", r, runOptions{world: "real", seed: 1, wholeProcessCPU: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.get("threads") != nil || res.get("outside_callbacks_cpu_us_per_op") != nil {
		t.Errorf("without accounting: threads %v, outside %v; want neither", res.get("threads"), res.get("outside_callbacks_cpu_us_per_op"))
	}
	for _, kind := range []string{"client/main", "datanode/selector", "datanode/worker"} {
		s, r := perOp["sim"][kind], perOp["real"][kind]
		if s <= 0 || r < 0.75*s || r > 1.33*s {
			t.Errorf("%s: %.2f callbacks an op in sim, %.2f in real", kind, s, r)
		}
	}
}

// A real run says how much of the CPU time the machine wanted the host
// withheld (null where the run wanted too little to say); a simulated
// run has the key, null for the machine alone, the share --host-steal
// gave its host otherwise, at the cost of fewer ops a second.
func TestRunReportsHostSteal(t *testing.T) {
	rate := map[string]float64{}
	for _, args := range [][]string{nil, {"--host-steal", "0.5"}} {
		var got map[string]any
		code, stderr := cliJSON(t, &got, append([]string{"run", "pairs", "--json"}, args...)...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		want := any(nil)
		if args != nil {
			want = 0.5
		}
		if v, ok := got["host_steal_share"]; !ok || v != want {
			t.Errorf("sim %q: host_steal_share %v (%v), want %v", args, v, ok, want)
		}
		wantGap := any(nil)
		if args != nil {
			wantGap = 750.0
		}
		if v, ok := got["host_steal_gap_us"]; !ok || v != wantGap {
			t.Errorf("sim %q: host_steal_gap_us %v (%v), want %v", args, v, ok, wantGap)
		}
		rate[fmt.Sprint(args)], _ = got["exchanges_per_s"].(float64)
	}
	if alone, shared := rate["[]"], rate["[--host-steal 0.5]"]; !(shared < 0.8*alone) {
		t.Errorf("sim pairs: %.0f exchanges a second alone, %.0f with the host withholding half: want well below", alone, shared)
	}
	// --host-steal-gap reaches the simulated host: other gaps, another
	// run.
	hash := map[string]any{}
	for _, gap := range []string{"750µs", "5ms"} {
		var got map[string]any
		if code, stderr := cliJSON(t, &got, "run", "pairs", "--json", "--host-steal", "0.5", "--host-steal-gap", gap); code != exitOK {
			t.Fatalf("--host-steal-gap %s: exit %d: %s", gap, code, stderr)
		}
		hash[gap] = got["trace_hash"]
		if gap == "5ms" && got["host_steal_gap_us"] != 5000.0 {
			t.Errorf("--host-steal-gap 5ms: host_steal_gap_us %v, want 5000", got["host_steal_gap_us"])
		}
	}
	if hash["750µs"] == hash["5ms"] {
		t.Errorf("gaps of 750µs and 5ms gave the same run (%v)", hash["5ms"])
	}
	for _, world := range []string{"sim", "real"} {
		var got map[string]any
		code, stderr := cliJSON(t, &got, "run", "tcp-pattern", "--ops", "20", "--writes", "1", "--world", world, "--json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", world, code, stderr)
		}
		v, ok := got["host_steal_share"]
		switch {
		case !ok:
			t.Errorf("%s: no host_steal_share in %v", world, got)
		case world == "sim" && v != nil:
			t.Errorf("sim: host_steal_share %v, want null", v)
		case world == "real" && v != nil:
			if s, isNum := v.(float64); !isNum || s < 0 || s > 1 {
				t.Errorf("real: host_steal_share %v, want a share in [0, 1] or null", v)
			}
		}
	}
}

// --profile embedded names the default profile, as validate's does: the
// same run as without the flag.
func TestRunProfileEmbeddedIsTheDefault(t *testing.T) {
	hash := func(args ...string) any {
		t.Helper()
		var got map[string]any
		if code, stderr := cliJSON(t, &got, append([]string{"run", "tcp-pattern", "--ops", "3", "--json"}, args...)...); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		return got["trace_hash"]
	}
	if a, b := hash(), hash("--profile", "embedded"); a != b || a == nil {
		t.Errorf("trace %v with --profile embedded, %v without", b, a)
	}
}
