package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"xceiver/properties"
)

// check --bug HDFS-6750 finds the bug at seed 1 and writes a trace that
// replay reproduces; without the bug the same seeds pass.
func TestCheckSC(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI("check", "--bug", "HDFS-6750", "--seeds", "3", "--max-failures", "1", "--out", dir)
	if code != exitFail || !strings.Contains(out, "seed 1: linearizability") {
		t.Fatalf("check --bug HDFS-6750: exit %d\n%s%s", code, out, errs)
	}
	trace := filepath.Join(dir, "sc-seed-1-HDFS-6750.json")
	if code, out, errs := runCLI("replay", trace); code != exitOK || !strings.HasPrefix(out, "reproduced: linearizability") {
		t.Errorf("replay %s: exit %d\n%s%s", trace, code, out, errs)
	}
	if code, out, errs := runCLI("check", "--system", "sc", "--seeds", "3", "--out", dir); code != exitOK {
		t.Errorf("check --system sc: exit %d\n%s%s", code, out, errs)
	}
}

// A malformed short-circuit trace is refused with one line and exit 2.
func TestReplayBadSCTrace(t *testing.T) {
	for name, body := range map[string]string{
		"garbage":  `{"format":"` + properties.SCTraceFormat + `","sc_case":`,
		"invalid":  `{"format":"` + properties.SCTraceFormat + `","sc_case":{"seed":1,"shards":0,"capacity":1,"readers":1}}`,
		"old":      `{"format":"xceiver-sc-trace/2","sc_case":{"seed":1,"shards":1,"capacity":1,"readers":1}}`,
		"wrong op": `{"format":"` + properties.SCTraceFormat + `","sc_case":{"seed":1,"shards":1,"capacity":1,"readers":1,"ops":[{"op":"x","block":1}]}}`,
	} {
		path := filepath.Join(t.TempDir(), "t.json")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runCLI("replay", path)
		if code != exitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || errs == "" {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line", name, code, errs, exitUsage)
		}
	}
}
