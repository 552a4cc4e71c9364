package traces

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"xceiver/properties"
)

var update = flag.Bool("update", false, "re-record traces/corpus: one shrunk trace per catalogued bug")

// recordBug finds the first of seeds 1..200 that fails with bug switched
// on, shrinks it and records its trace.
func recordBug(t *testing.T, bug string) (*Trace, uint64) {
	t.Helper()
	for s := uint64(1); s <= 200; s++ {
		o, err := properties.CheckSeed(s, bug, properties.Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		if !o.Failed() {
			continue
		}
		tr, r := Record(o.Case)
		if r.Failure == nil || r.Failure.Property != o.Result.Failure.Property {
			t.Fatalf("%s seed %d: recording did not fail the same way: %v", bug, s, r.Failure)
		}
		return tr, s
	}
	t.Fatalf("%s: no failure in 200 seeds", bug)
	return nil, 0
}

// Every trace in corpus/ replays: same events, same failure, same hash.
func TestCorpusReplays(t *testing.T) {
	if *update {
		for _, b := range properties.Bugs {
			tr, s := recordBug(t, b.Name)
			path := filepath.Join("corpus", b.Name+".trace")
			if err := tr.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: seed %d, %s, %d events, %d bytes", path, s, tr.Header.Property, tr.Header.Events, tr.Size())
		}
	}
	files, err := filepath.Glob(filepath.Join("corpus", "*.trace"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces in corpus/ (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			tr, err := ReadFile(f)
			if err != nil {
				t.Fatalf("%v (if the code changed on purpose, bump CodeVersion and run: go test ./traces -run Corpus -update)", err)
			}
			rep := Replay(tr, properties.Options{})
			if !rep.Reproduced(tr) {
				t.Fatalf("%s\n(if the change of behaviour is intended, bump CodeVersion and run: go test ./traces -run Corpus -update)", rep.Summary(tr))
			}
		})
	}
}

// Every catalogued bug has its trace in the corpus.
func TestCorpusCoversCatalogue(t *testing.T) {
	for _, b := range properties.Bugs {
		tr, err := ReadFile(filepath.Join("corpus", b.Name+".trace"))
		if err != nil {
			t.Errorf("%s: %v", b.Name, err)
			continue
		}
		if tr.Header.Bug != b.Name || tr.Header.Property != b.Catches {
			t.Errorf("%s: trace of bug %q failing %s, want %s", b.Name, tr.Header.Bug, tr.Header.Property, b.Catches)
		}
	}
}

func corpusBytes(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("corpus", "stale-handle.trace"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadTracesAreRefused(t *testing.T) {
	good := corpusBytes(t)
	lines := strings.SplitAfter(string(good), "\n")
	head, events := lines[0], strings.Join(lines[1:], "")
	fmtKey := fmt.Sprintf(`"format":%d`, Format)
	if !strings.Contains(head, fmtKey) {
		t.Fatalf("corpus header lacks %s", fmtKey)
	}
	cases := map[string]string{
		"truncated":        head + strings.Join(lines[1:len(lines)/2], ""),
		"cut mid-line":     string(good[:len(good)-20]),
		"edited event":     head + strings.Replace(events, `"kind":"seg"`, `"kind":"gse"`, 1),
		"edited header":    strings.Replace(head, `"seed":`, `"seed":1`, 1) + events,
		"unknown field":    strings.Replace(head, fmtKey+",", fmtKey+`,"extra":true,`, 1) + events,
		"other version":    strings.Replace(head, CodeVersion, "xceiver-sim-1999.01-1", 1) + events,
		"other format":     strings.Replace(head, fmtKey, fmt.Sprintf(`"format":%d`, Format+1), 1) + events,
		"not json":         "this is not a trace\n",
		"empty":            "",
		"header only":      head,
		"garbage event":    head + "{\"t_us\":\n" + events,
		"missing format":   strings.Replace(head, fmtKey+",", ``, 1) + events,
		"a different case": strings.Replace(head, `"mode":"reactor"`, `"mode":"forked"`, 1) + events,
		"appended to":      string(good) + strings.Repeat("{}\n", 1000),
	}
	dir := t.TempDir()
	for name, content := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(path, []byte(content), 0o644)
		tr, err := ReadFile(path)
		if err == nil || !IsBadTrace(err) {
			t.Errorf("%s: read %v, %v; want a bad-trace error", name, tr != nil, err)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", name, err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "no-such-file")); !IsBadTrace(err) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "other-version")); err == nil || !strings.Contains(err.Error(), "code version") {
		t.Errorf("other version: %v, want it named", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "appended-to")); err == nil || !strings.Contains(err.Error(), "more event lines") {
		t.Errorf("appended to: %v, want it refused at the first line past the header's count", err)
	}
	// Lines that are not events, and a header of arrays of empty
	// objects, are refused before they are held (millions of either took
	// gigabytes).
	events1 := strings.SplitAfterN(events, "\n", 2)
	for name, content := range map[string]string{
		"a line not an event": head + events1[0] + "{}\n" + events1[1],
		"a dense header":      strings.Replace(head, `"ops":[`, `"ops":[`+strings.Repeat("{},", properties.MaxJSONElements), 1) + events,
		"a key twice":         strings.Replace(head, fmtKey+",", fmtKey+`,"property":"bogus",`, 1) + events,
		"a line too long":     head + `{"t_us":` + strings.Repeat("1", maxLine) + "}\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(path, []byte(content), 0o644)
		want := map[string]string{"a line not an event": "line 3 is not an event", "a dense header": "header: more than 100000 array elements",
			"a key twice": `header: key "property" twice in one object`, "a line too long": "line 2 is longer than a trace's lines may be (8 MiB)"}[name]
		if _, err := ReadFile(path); !IsBadTrace(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	// Not regular files: a FIFO nobody writes would block the read.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		if _, err := ReadFile(p); !IsBadTrace(err) {
			t.Errorf("%s: %v, want a bad-trace error", p, err)
		}
	}
}

// A trace the code no longer produces (as if behaviour changed without a
// version bump) replays to its first divergence.
func TestReplayReportsFirstDivergence(t *testing.T) {
	tr, err := Read(bytes.NewReader(corpusBytes(t)))
	if err != nil {
		t.Fatal(err)
	}
	k := len(tr.Events) / 2
	orig := string(tr.Events[k])
	tr.Events[k] = []byte(strings.Replace(orig, `"t_us":`, `"t_us":1`, 1))
	tr.Seal()
	rep := Replay(tr, properties.Options{})
	if rep.Reproduced(tr) || rep.Divergence == nil {
		t.Fatalf("replay of an altered trace: %s", rep.Summary(tr))
	}
	if d := rep.Divergence; d.Line != k+2 || d.Got != orig || d.Want != string(tr.Events[k]) {
		t.Fatalf("divergence %+v, want line %d", d, k+2)
	}
	// A trace that ends early.
	tr, _ = Read(bytes.NewReader(corpusBytes(t)))
	tr.Events = tr.Events[:len(tr.Events)-3]
	tr.Header.Events -= 3
	tr.Seal()
	rep = Replay(tr, properties.Options{})
	if rep.Divergence == nil || rep.Divergence.Want != "" || rep.Divergence.Line != len(tr.Events)+2 {
		t.Fatalf("short trace: %+v", rep.Divergence)
	}
}

func TestRecordWriteReadRoundTrip(t *testing.T) {
	tr, err := Read(bytes.NewReader(corpusBytes(t)))
	if err != nil {
		t.Fatal(err)
	}
	again, r := Record(tr.Header.Case())
	if r.Failure == nil || again.Header.Checksum != tr.Header.Checksum {
		t.Fatalf("recording the corpus case again gives another trace: %v", r.Failure)
	}
	var buf bytes.Buffer
	if _, err := again.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), corpusBytes(t)) {
		t.Fatal("written trace differs from the corpus file")
	}
	if again.Size() != int64(buf.Len()) {
		t.Fatalf("Size %d, wrote %d", again.Size(), buf.Len())
	}
}

func TestHTML(t *testing.T) {
	tr, err := Read(bytes.NewReader(corpusBytes(t)))
	if err != nil {
		t.Fatal(err)
	}
	rep := Replay(tr, properties.Options{Verbose: true})
	var out bytes.Buffer
	if err := WriteHTML(&out, tr, rep.Result); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{"<svg", "FAIL: <span class=\"prop\">" + tr.Header.Property, "render(data)", "conn ", fmt.Sprint(tr.Header.Seed),
		`class="seg"`, "History of block "} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The failure comes before the diagram, the diagram before porcupine.
	if i, j, k := strings.Index(page, "FAIL: "), strings.Index(page, `<svg class="sequence"`), strings.Index(page, "<iframe"); !(i >= 0 && i < j && j < k) {
		t.Errorf("order: failure at %d, diagram at %d, porcupine at %d", i, j, k)
	}
}

// Converted line endings are caught even though JSON ignores the CR.
func TestCRLFTraceIsRefused(t *testing.T) {
	crlf := strings.ReplaceAll(string(corpusBytes(t)), "\n", "\r\n")
	_, err := Read(strings.NewReader(crlf))
	if err == nil || !IsBadTrace(err) || !strings.Contains(err.Error(), "ends in CR") {
		t.Fatalf("CRLF trace: %v", err)
	}
	// One CR on the last line alone is caught as well.
	good := string(corpusBytes(t))
	one := good[:len(good)-1] + "\r\n"
	if _, err := Read(strings.NewReader(one)); err == nil || !strings.Contains(err.Error(), "ends in CR") {
		t.Fatalf("CR on the last line: %v", err)
	}
}

// A trace whose checksum was recomputed after an edit is still only as
// good as its case: values check would never run are refused.
func TestResealedInvalidCaseIsRefused(t *testing.T) {
	for name, edit := range map[string]func(h *Header){
		"selectors 100000": func(h *Header) { h.Config.Selectors = 100000 },
		"pool_max -1":      func(h *Header) { h.Config.PoolMax = -1 },
		"workers 0":        func(h *Header) { h.Config.Workers = 0 },
		"packet 0":         func(h *Header) { h.Config.Packet = 0 },
		"fault kind":       func(h *Header) { h.Config.Faults = append(h.Config.Faults, "meteor") },
		"scheduled fault": func(h *Header) {
			h.Schedule.Faults = append(h.Schedule.Faults, properties.Fault{Kind: "meteor"})
		},
		"mode": func(h *Header) { h.Config.Mode = "forked" },
	} {
		tr, err := Read(bytes.NewReader(corpusBytes(t)))
		if err != nil {
			t.Fatal(err)
		}
		edit(&tr.Header)
		tr.Seal()
		var buf bytes.Buffer
		tr.WriteTo(&buf)
		if _, err := Read(&buf); err == nil || !IsBadTrace(err) {
			t.Errorf("%s: read %v, want a bad-trace error", name, err)
		}
	}
}

// No line of a trace repeats a key: JSON tools keep only the last one.
func TestTraceLinesHaveNoDuplicateKeys(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("corpus", "*.trace"))
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if dup := duplicateKey([]byte(line)); dup != "" {
				t.Fatalf("%s line %d repeats the key %q: %s", path, i+1, dup, line)
			}
		}
	}
}

// duplicateKey returns a key that some object in the JSON text repeats.
func duplicateKey(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.obj {
					top.wantKey = true
				}
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, wantKey: true})
			case '[':
				if top != nil && top.obj {
					top.wantKey = true
				}
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.obj && top.wantKey {
				if top.keys[v] {
					return v
				}
				top.keys[v] = true
				top.wantKey = false
				continue
			}
			if top != nil && top.obj {
				top.wantKey = true
			}
		default:
			if top != nil && top.obj {
				top.wantKey = true
			}
		}
	}
}

// What a trace says is printed so that it cannot forge a line or reach
// the terminal as escape sequences: a message with a newline printed a
// "reproduced:" line of its own.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"fd-bounds: client-3 holds 1 sockets": "fd-bounds: client-3 holds 1 sockets",
		"x\nreproduced: forged":               `"x\nreproduced: forged"`,
		"red\x1b[31m":                         `"red\x1b[31m"`,
		"":                                    "",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %s, want %s", in, got, want)
		}
	}
	tr := &Trace{Header: Header{Property: "fd-bounds", Message: "x\nreproduced: forged"}}
	if s := (&Report{}).Summary(tr); strings.Contains(s, "\n") {
		t.Errorf("summary of a trace whose message has a newline: %q", s)
	}
}

// A trace records a failure: one without its property or hash, even
// sealed again, is refused (it replayed as diverged, exit 1).
func TestResealedTraceWithoutFailureIsRefused(t *testing.T) {
	for name, edit := range map[string]func(*Header){
		"no property": func(h *Header) { h.Property = "" },
		"a bad hash":  func(h *Header) { h.TraceHash = "xyz" },
	} {
		tr, err := ReadFile(filepath.Join("corpus", "HDFS-3359.trace"))
		if err != nil {
			t.Fatal(err)
		}
		edit(&tr.Header)
		tr.Seal()
		path := filepath.Join(t.TempDir(), "t.trace")
		if err := tr.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path); !IsBadTrace(err) || !strings.Contains(err.Error(), "header: ") {
			t.Errorf("%s: %v, want the header refused", name, err)
		}
	}
}
