package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"xceiver/properties"
	"xceiver/traces"
)

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestCheckPasses(t *testing.T) {
	code, stdout, stderr := runCLI("check", "--seeds", "12", "--parallel", "2", "--out", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if got := lastLine(stdout); got != "12 passed, 0 failed" {
		t.Fatalf("last line %q", got)
	}
}

func TestCheckJSONAndShards(t *testing.T) {
	total := 0
	for _, shard := range []string{"1/3", "2/3", "3/3"} {
		code, stdout, stderr := runCLI("check", "--seeds", "30", "--seed", "100", "--shard", shard, "--json")
		if code != exitOK {
			t.Fatalf("shard %s: exit %d: %s", shard, code, stderr)
		}
		var got struct {
			Seeds, Passed, Failed int
			Shard                 string
			Failures              []any
		}
		if strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
			t.Fatalf("--json printed more than one line: %q", stdout)
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("not one JSON object: %v: %q", err, stdout)
		}
		if got.Passed != got.Seeds || got.Failed != 0 || got.Shard != shard || got.Failures == nil {
			t.Fatalf("shard %s: %+v", shard, got)
		}
		total += got.Seeds
	}
	if total != 30 {
		t.Fatalf("shards covered %d seeds, want 30", total)
	}
}

// A catalogued bug is found; its shrunk trace is written, and replaying it
// reproduces the failure with the same hash.
func TestCheckFindsBugAndTraceReplays(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("check", "--bug", "stale-handle", "--seeds", "8", "--out", out)
	if code != exitFail {
		t.Fatalf("exit %d, want 1: %s%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`^\d+ passed, [1-9]\d* failed$`).MatchString(lastLine(stdout)) {
		t.Fatalf("last line %q", lastLine(stdout))
	}
	m := regexp.MustCompile(`trace (\S+\.trace)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no trace path printed: %s", stdout)
	}
	html := filepath.Join(out, "view.html")
	code, rout, rerr := runCLI("replay", m[1], "--html", html)
	if code != exitOK || !strings.Contains(rout, "reproduced: linearizability") {
		t.Fatalf("replay: exit %d: %s%s", code, rout, rerr)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("html: %v", err)
	}
	tr, _ := traces.ReadFile(m[1])
	if !strings.Contains(rout, tr.Header.TraceHash) {
		t.Fatalf("replay does not show the trace hash %s: %s", tr.Header.TraceHash, rout)
	}
}

func TestCheckBugList(t *testing.T) {
	code, stdout, _ := runCLI("check", "--bug", "list")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, b := range properties.Bugs {
		if !strings.Contains(stdout, b.Name) {
			t.Errorf("list lacks %s", b.Name)
		}
	}
}

func TestCheckAndReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join("..", "..", "traces", "corpus", "stale-handle.trace"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	lines := strings.SplitAfter(string(good), "\n")
	truncated := write("truncated.trace", strings.Join(lines[:len(lines)/2], ""))
	edited := write("edited.trace", strings.Replace(string(good), `"kind":"seg"`, `"kind":"ges"`, 1))
	version := write("version.trace", strings.Replace(string(good), traces.CodeVersion, "xceiver-sim-0", 1))
	cases := [][]string{
		{"check", "--shard", "3/2"},
		{"check", "--shard", "0/2"},
		{"check", "--shard", "two"},
		{"check", "--seeds", "0"},
		{"check", "--parallel", "0"},
		{"check", "--bug", "HDFS-0"},
		{"check", "extra"},
		{"check", "--seeds", "x"},
		{"replay"},
		{"replay", filepath.Join(dir, "nope.trace")},
		{"replay", truncated},
		{"replay", edited},
		{"replay", version},
		{"replay", truncated, edited},
		{"replay", write("ok.trace", string(good)), "--html", filepath.Join(dir, "no", "such", "dir", "x.html")},
	}
	for _, args := range cases {
		code, _, stderr := runCLI(args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want 2 (%q)", args, code, stderr)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
			t.Errorf("%q: want a one-line error, got %q", args, stderr)
		}
	}
	_, _, stderr := runCLI("replay", version)
	if !strings.Contains(stderr, "code version") {
		t.Errorf("version mismatch not named: %q", stderr)
	}
}

// A trace that no longer matches what the code does (behaviour changed
// without a version bump): replay reports the divergence and exits 1.
func TestReplayDivergenceExits1(t *testing.T) {
	tr, err := traces.ReadFile(filepath.Join("..", "..", "traces", "corpus", "stale-handle.trace"))
	if err != nil {
		t.Fatal(err)
	}
	k := len(tr.Events) / 3
	tr.Events[k] = []byte(strings.Replace(string(tr.Events[k]), `"t_us":`, `"t_us":9`, 1))
	tr.Seal()
	path := filepath.Join(t.TempDir(), "changed.trace")
	if err := tr.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("replay", path)
	if code != exitFail || !strings.Contains(stdout, "diverged at line") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
}
