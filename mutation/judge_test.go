package mutation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// find picks the one mutant of the module's model/ matching file, function,
// operator and texts, whose diff has the line given.
func find(t *testing.T, src *Source, file, fn, op, old, new, line string) Mutant {
	t.Helper()
	var found []Mutant
	for _, m := range src.Mutants {
		if m.File == file && m.Func == fn && m.Operator == op && m.Old == old && m.New == new &&
			strings.Contains(m.Diff(src.Files[file]), "+ "+file) && strings.Contains(m.Diff(src.Files[file]), line) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d mutants %s %s %s %q → %q (the code changed? pick another)", len(found), file, fn, op, old, new)
	}
	return found[0]
}

// The judge on the real module: a mutant check catches is killed by the
// check, an equivalent one survives, one that does not compile is invalid.
func TestJudgeOnModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the checker three times")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src, err := Load(ctx, root, []string{"model"})
	if err != nil {
		t.Fatal(err)
	}
	// The client takes a rejection for a success: the check sees a
	// malformed stream at once.
	killed := find(t, src, "model/client.go", "(*clientOp).process", OpNegate, "!=", "==", "if resp.Status == StatusSuccess {")
	// One more byte of capacity in a per-request send buffer: nothing
	// reads capacity, so nothing can tell.
	equivalent := find(t, src, "model/datanode.go", "(*dnConn).opened", OpOffByOne, "64", "65", "dc.buf = newBuffer(dc.dn.p, PacketHeaderLen+MaxPacketLen+65)")
	invalid := equivalent
	invalid.ID, invalid.New = "invalid", "64 +"

	j := &Judge{
		Root: root, Work: t.TempDir(), Files: src.Files, Main: "./cmd/xceiver",
		CheckArgs:  []string{"check", "--seeds", "30", "--parallel", "1", "--max-failures", "1", "--no-shrink"},
		BuildFlags: NoInline("xceiver", []string{"model"}), BuildTimeout: 5 * time.Minute,
		CheckTimeout: 5 * time.Minute, Equivalents: map[string]string{equivalent.ID: "capacity only"},
	}
	if r := j.Run(ctx, killed, 0); r.Status != Killed || r.By != ByCheck || r.Detail == "" {
		t.Errorf("%v: %s by %s (%s), want killed by check", killed, r.Status, r.By, r.Detail)
	}
	if r := j.Run(ctx, equivalent, 0); r.Status != Equivalent || r.Reason != "capacity only" {
		t.Errorf("%v: %s by %s (%s), want equivalent", equivalent, r.Status, r.By, r.Detail)
	}
	if r := j.Run(ctx, invalid, 0); r.Status != Invalid || !strings.Contains(r.Detail, "datanode.go") {
		t.Errorf("%v: %s (%s), want invalid with the compile error", invalid, r.Status, r.Detail)
	}
	// A request pipelined behind a write left unserved: check's clients
	// never pipeline and model's tests never try, but sim's
	// TestPipelinedRequestsAreServed does. With TestPackages, its tests
	// judge the mutant too.
	unserved := find(t, src, "model/datanode.go", "(*dnConn).endOp", OpRemoveCall, "dc.process()", "", "+ model/datanode.go")
	j.Tests, j.TestPackages, j.TestTimeout = true, []string{"sim"}, 5*time.Minute
	if r := j.Run(ctx, unserved, 0); r.Status != Killed || r.By != ByTests || !strings.Contains(r.Detail, "TestPipelinedRequestsAreServed") {
		t.Errorf("%v: %s by %s (%s), want killed by sim's TestPipelinedRequestsAreServed", unserved, r.Status, r.By, r.Detail)
	}
}

// A mutant go vet refuses is killed by vet (CI runs it: the mutant could
// not land), even when the check and the tests pass it: here a checker
// that passes everything, and a swap that puts the failure's property
// where its format was.
func TestJudgeVetKills(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod": "module tiny\n\ngo 1.22\n",
		"lib/lib.go": `package lib

import "fmt"

// Fail formats a failure of prop.
func Fail(prop, format string, a ...any) string { return prop + ": " + fmt.Sprintf(format, a...) }

// Count fails with n.
func Count(n int) string { return Fail("count", "%d items", n) }
`,
		"cmd/check/main.go": "package main\n\nfunc main() {}\n",
	}
	writeFiles(t, root, files)
	ctx := context.Background()
	src, err := Load(ctx, root, []string{"lib"})
	if err != nil {
		t.Fatal(err)
	}
	swapped := find(t, src, "lib/lib.go", "Count", OpSwapArgs, `"count", "%d items"`, `"%d items", "count"`, `Fail("%d items", "count", n)`)
	j := &Judge{Root: root, Work: t.TempDir(), Files: src.Files, Main: "./cmd/check", BuildTimeout: time.Minute, CheckTimeout: time.Minute}
	if _, _, err := j.Baseline(ctx, []string{"lib"}); err != nil {
		t.Fatal(err)
	}
	if r := j.Run(ctx, swapped, 0); r.Status != Killed || r.By != ByVet || !strings.Contains(r.Detail, "lib.go") {
		t.Errorf("%v: %s by %s (%s), want killed by vet", swapped, r.Status, r.By, r.Detail)
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Judging leaves the working tree as it found it: rapid writes a fail
// file into the package's testdata/rapid for each property a test breaks
// (and replays those it finds), unless RAPID_NOFAILFILE is set, which the
// judge's go commands have. The test here does as rapid does.
func TestJudgeLeavesNoRapidFailFiles(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"go.mod":            "module tiny\n\ngo 1.22\n",
		"lib/lib.go":        "package lib\n\n// Two is two.\nfunc Two() int { return 2 }\n",
		"cmd/check/main.go": "package main\n\nfunc main() {}\n",
		"lib/lib_test.go": `package lib

import (
	"os"
	"path/filepath"
	"testing"
)

// As rapid does when a property fails.
func TestTwo(t *testing.T) {
	if Two() != 2 && os.Getenv("RAPID_NOFAILFILE") == "" {
		dir := filepath.Join("testdata", "rapid", "TestTwo")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "TestTwo-1.fail"), nil, 0o644)
	}
	if Two() != 2 {
		t.Fatal("two is not 2")
	}
}
`,
		"sim/sim_test.go": "package sim\n\nimport \"testing\"\n\nfunc TestNothing(t *testing.T) {}\n",
		"sim/testdata/rapid/TestOld/TestOld-0.fail": "",
	})
	ctx := context.Background()
	src, err := Load(ctx, root, []string{"lib"})
	if err != nil {
		t.Fatal(err)
	}
	three := find(t, src, "lib/lib.go", "Two", OpOffByOne, "2", "3", "return 3")
	j := &Judge{Root: root, Work: t.TempDir(), Files: src.Files, Main: "./cmd/check", BuildTimeout: time.Minute, CheckTimeout: time.Minute,
		Tests: true, TestPackages: []string{"sim"}, TestTimeout: time.Minute}
	if r := j.Run(ctx, three, 0); r.Status != Killed || r.By != ByTests {
		t.Fatalf("%v: %s by %s (%s), want killed by tests", three, r.Status, r.By, r.Detail)
	}
	if _, err := os.Stat(filepath.Join(root, "lib", "testdata")); !os.IsNotExist(err) {
		t.Errorf("lib/testdata after judging: %v, want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(root, "sim", "testdata", "rapid", "TestOld", "TestOld-0.fail")); err != nil {
		t.Errorf("a fail file there before judging: %v", err)
	}
}
