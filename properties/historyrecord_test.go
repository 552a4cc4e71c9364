package properties

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestRecordHistory writes the history of a saved case's run as the
// checker's tests keep it (loadHistory): XCEIVER_RECORD_HISTORY=
// CASE.json:BLOCK:OUT.json (BLOCK 0 for every block). Without it the test
// is skipped. A history that troubled the checker is recorded by the code
// that ran it (git archive of that commit, with this file copied in).
func TestRecordHistory(t *testing.T) {
	spec := os.Getenv("XCEIVER_RECORD_HISTORY")
	if spec == "" {
		t.Skip("XCEIVER_RECORD_HISTORY=CASE.json:BLOCK:OUT.json records a history")
	}
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		t.Fatalf("XCEIVER_RECORD_HISTORY=%q: want CASE.json:BLOCK:OUT.json", spec)
	}
	block, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		t.Fatalf("block %q: %v", parts[1], err)
	}
	r := Run(loadCase(t, parts[0]), Options{LinTimeout: time.Millisecond}) // only the history
	b, err := json.Marshal(recordHistory(t, r.History, block))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(parts[2], b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordHistory is block's ops (every block's for 0) as a history is saved.
func recordHistory(t *testing.T, history []porcupine.Operation, block uint64) []historyOp[[]any] {
	var out []historyOp[[]any]
	var wrote []int // ops with data written, by index in out
	var data [][]byte
	for _, op := range history {
		in, o := op.Input.(LinInput), op.Output.(LinOutput)
		if block != 0 && in.Block != block {
			continue
		}
		var r historyOp[[]any]
		r.Client, r.Call, r.Return = op.ClientId, op.Call, op.Return
		r.In.Kind, r.In.Block, r.In.Stamp, r.In.Off, r.In.Len, r.In.Exists = in.Kind, in.Block, in.Stamp, in.Off, in.Len, in.Exists
		r.Out.Outcome, r.Out.Status, r.Out.Stamp, r.Out.Length = o.Outcome, int(o.Status), o.Stamp, o.Length
		data = append(data, []byte(in.Data), []byte(o.Data))
		if in.Data != "" {
			wrote = append(wrote, len(out))
		}
		out = append(out, r)
	}
	// Writes first, longest first: a shorter content of a key is the
	// prefix of a longer one, and must be placed where that one lies,
	// not wherever its few bytes happen to occur in the pool.
	pool := contentPool()
	byLen := slices.Clone(wrote)
	slices.SortStableFunc(byLen, func(a, b int) int { return len(data[2*b]) - len(data[2*a]) })
	var known [][2]int
	for _, j := range byLen {
		w := data[2*j]
		placed := false
		for _, k := range known {
			if x := bytes.Index(pool[k[0]:k[0]+k[1]], w); x >= 0 {
				out[j].In.Data, placed = []any{[2]int{k[0] + x, len(w)}}, true
				break
			}
		}
		if !placed {
			out[j].In.Data = poolPieces(w)
			if win, ok := out[j].In.Data[0].([2]int); ok && len(out[j].In.Data) == 1 {
				known = append(known, win)
			}
		}
	}
	for i := range out {
		if b := data[2*i+1]; len(b) > 0 {
			var same []int
			for _, j := range wrote {
				if out[j].In.Block == out[i].In.Block {
					same = append(same, j)
				}
			}
			if out[i].Out.Data = writtenPieces(b, data, same); out[i].Out.Data == nil {
				t.Fatalf("op %d: a read of %d bytes that is no run of its block's writes", i, len(b))
			}
		}
	}
	return out
}

// poolPieces is a written content as windows of the content pool, and
// bytes found nowhere in it as they are.
func poolPieces(b []byte) []any {
	pool := contentPool()
	var pieces []any
	for i := 0; i < len(b); {
		k := min(32, len(b)-i)
		off := bytes.Index(pool, b[i:i+k])
		if off < 0 {
			pieces = append(pieces, b[i:i+1])
			i++
			continue
		}
		n := k
		for i+n < len(b) && off+n < len(pool) && pool[off+n] == b[i+n] {
			n++
		}
		pieces = append(pieces, [2]int{off, n})
		i += n
	}
	return pieces
}

// writtenPieces is a read's data as pieces of the writes same ([op,
// offset, length]): a block's content is whole writes one after another,
// so the first piece may start inside a write, every piece but the last
// runs to its write's end, and every piece but the first starts at its
// write's start. Nil if there is no such run.
func writtenPieces(b []byte, data [][]byte, same []int) []any {
	var try func(i int) []any
	try = func(i int) []any {
		if i == len(b) {
			return []any{}
		}
		for _, j := range same {
			w := data[2*j]
			last := 0
			if i == 0 {
				last = len(w) - 1
			}
			for o := 0; o <= last; o++ {
				l := min(len(w)-o, len(b)-i)
				if l <= 0 || !bytes.Equal(w[o:o+l], b[i:i+l]) {
					continue
				}
				if rest := try(i + l); rest != nil {
					return append([]any{[3]int{j, o, l}}, rest...)
				}
			}
		}
		return nil
	}
	return try(0)
}
