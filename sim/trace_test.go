package sim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// A string's precomputed words hash as the string does, whatever its
// length (the full words and the tail).
func TestStrHashFoldsAsFnvString(t *testing.T) {
	for n := 0; n <= 40; n++ {
		s := strings.Repeat("client-7x", 5)[:n]
		for _, h := range []uint64{fnvOffset, 1, 0xdeadbeefcafef00d} {
			if got, want := newStrHash(s).fold(h), fnvString(h, s); got != want {
				t.Fatalf("%q from %x: fold %x, fnvString %x", s, h, got, want)
			}
		}
	}
}

// recordSeg folds a segment into the trace hash the same way whether the
// run is watched (observers, a JSON trace) or not: both end with the same
// hash.
func TestRecordSegHashesAsRecord(t *testing.T) {
	run := func(watch bool) uint64 {
		h := newPair(t)
		if !watch {
			h.w.observers = nil
		}
		h.cli.write(70000)
		h.runTo(h.now() + ms)
		h.srv.write(3)
		h.runTo(h.now() + 300*ms)
		return h.w.TraceHash()
	}
	if a, b := run(true), run(false); a != b {
		t.Fatalf("trace hash %016x with an observer, %016x without", a, b)
	}
}

// A log line is hashed from its buffer when nobody watches (recordLog),
// and as a recorded event when someone does: both give the same hash.
func TestRecordLogHashesAsRecord(t *testing.T) {
	run := func(watch bool) uint64 {
		h := newPair(t)
		if !watch {
			h.w.observers = nil
		}
		for i, line := range []string{"", "x", "seven77", "eight888", "nine99999", strings.Repeat("a log line ", 4)} {
			h.cli.p.Log(line, "n", i, "s", line)
			h.runTo(h.now() + ms)
		}
		return h.w.TraceHash()
	}
	if a, b := run(true), run(false); a != b {
		t.Fatalf("trace hash %016x with an observer, %016x without", a, b)
	}
}

// An unhashed world (Config.Unhashed: check's first run of a seed) runs
// the same events as a hashed one: as many, to the same time, and written
// out the same when traced, log lines included; it only keeps no hash.
func TestUnhashedRunsTheSameEvents(t *testing.T) {
	run := func(unhashed bool, out *bytes.Buffer) *World {
		cfg := DefaultConfig(5)
		cfg.Unhashed = unhashed
		w := New(cfg)
		if out != nil {
			w.TraceTo(out)
		}
		s := model.DefaultReadScenario()
		s.Clients, s.Ops, s.Blocks, s.BlockSize, s.ReadSize = 3, 20, 2, 256<<10, 32<<10
		if _, err := model.RunRead(w, s, time.Hour); err != nil {
			t.Fatalf("run: %v", err)
		}
		p := w.Processes()[0]
		for i := range 3 {
			p.Log("probe", "n", i)
		}
		return w
	}
	hashed, unhashed := run(false, nil), run(true, nil)
	if hashed.TraceEvents() != unhashed.TraceEvents() || hashed.Events() != unhashed.Events() || hashed.Now() != unhashed.Now() {
		t.Errorf("hashed: %d trace events, %d in all, ending at %v; unhashed: %d, %d, %v",
			hashed.TraceEvents(), hashed.Events(), hashed.Now(), unhashed.TraceEvents(), unhashed.Events(), unhashed.Now())
	}
	if h := unhashed.TraceHashString(); h != "unhashed" {
		t.Errorf("an unhashed world's hash reads %q", h)
	}
	if h := hashed.TraceHashString(); h == "unhashed" || hashed.TraceHash() == fnvOffset {
		t.Errorf("a hashed world's hash reads %q", h)
	}
	var a, b bytes.Buffer
	tracedHashed := run(false, &a)
	tracedUnhashed := run(true, &b)
	if a.Len() == 0 || !bytes.Equal(a.Bytes(), b.Bytes()) || !strings.Contains(b.String(), `"probe n=2"`) {
		t.Errorf("traced, the hashed run wrote %d bytes and the unhashed %d; they differ, or the log line is missing", a.Len(), b.Len())
	}
	// A traced world keeps its hash, asked to be unhashed or not.
	if h, u := tracedHashed.TraceHashString(), tracedUnhashed.TraceHashString(); h != u || h != hashed.TraceHashString() {
		t.Errorf("traced: hash %s hashed, %s unhashed; untraced %s", h, u, hashed.TraceHashString())
	}
}

// Every field of an event counts in the trace hash: two runs that differ
// in any one of them (the time, process, kind, connection, the four
// numbers or the text) end with different hashes, so determinism checks
// see it.
func TestEventHashSeesEveryField(t *testing.T) {
	base := Event{T: 5 * ms, Proc: "client", Kind: "write", Conn: 7, A: 1, B: 2, C: 3, D: 4, S: "s"}
	h0 := eventHash(fnvOffset, &base, base.S)
	for name, change := range map[string]func(e *Event){
		"T":    func(e *Event) { e.T++ },
		"Proc": func(e *Event) { e.Proc = "server" },
		"Kind": func(e *Event) { e.Kind = "read" },
		"Conn": func(e *Event) { e.Conn++ },
		"A":    func(e *Event) { e.A++ },
		"B":    func(e *Event) { e.B++ },
		"C":    func(e *Event) { e.C++ },
		"D":    func(e *Event) { e.D++ },
		"S":    func(e *Event) { e.S = "t" },
	} {
		e := base
		change(&e)
		if eventHash(fnvOffset, &e, e.S) == h0 {
			t.Errorf("an event differing only in %s hashes as the base event", name)
		}
	}
}

// A traced event is one JSON object whose fields are the event's, with
// the names its kind gives them; text is quoted (escapes included).
func TestEventAppendJSONIsJSON(t *testing.T) {
	for _, e := range []Event{
		{T: 1500, Proc: "client", Kind: "log", S: `op "read" \ done`},
		{T: 2 * ms, Proc: "dn", Kind: "no-such-kind", Conn: 3, A: -1, B: 2, C: 3, D: 4, S: "x"},
		{Proc: "p", Kind: "close", Conn: 9, A: 12, S: "unix"},
	} {
		line := e.AppendJSON(nil)
		var got map[string]any
		if err := json.Unmarshal(line, &got); err != nil {
			t.Errorf("%+v as %s: %v", e, line, err)
			continue
		}
		if got["proc"] != e.Proc || got["kind"] != e.Kind || got["t_us"] != float64(e.T)/1e3 {
			t.Errorf("%+v as %s: proc, kind or time lost", e, line)
		}
		names, ok := FieldNames[e.Kind]
		if !ok {
			names = [6]string{"conn", "a", "b", "c", "d", "s"}
		}
		for i, v := range []int64{int64(e.Conn), e.A, e.B, e.C, e.D} {
			if names[i] != "" && got[names[i]] != float64(v) {
				t.Errorf("%+v as %s: %s = %v, want %d", e, line, names[i], got[names[i]], v)
			}
		}
		if names[5] != "" && got[names[5]] != e.S {
			t.Errorf("%+v as %s: %s = %v, want %q", e, line, names[5], got[names[5]], e.S)
		}
	}
}
