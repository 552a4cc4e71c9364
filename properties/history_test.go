package properties

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"xceiver/model"
)

// The checker's tests keep the block histories that troubled the checker
// (testdata/*-history.json), not the cases whose runs made them: a saved
// case's run changes with the simulator, and the three witness tests had
// decayed so (their runs had come to have 5, 0 and 11 unknown ops where
// the checker once gave up). This file is the format, its reader and its
// recorder, and needs nothing else of the tests but loadCase, which every
// tree with saved cases has: to record a history as an older commit ran
// it, copy it into that commit's tree (git archive) and run
// TestRecordHistory there.

// historyOp is an op of a saved history, its data D: savedData when
// read, pieces when recorded.
type historyOp[D any] struct {
	Client int   `json:"client"`
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
	In     struct {
		Kind   opKind `json:"kind"`
		Block  uint64 `json:"block"`
		Stamp  uint64 `json:"stamp,omitempty"`
		Off    int64  `json:"off,omitempty"`
		Len    int64  `json:"len,omitempty"`
		Data   D      `json:"data,omitempty"`
		Exists bool   `json:"exists,omitempty"`
	} `json:"in"`
	Out struct {
		Outcome outcome      `json:"outcome,omitempty"`
		Status  model.Status `json:"status,omitempty"`
		Stamp   uint64       `json:"stamp,omitempty"`
		Length  int64        `json:"length,omitempty"`
		Data    D            `json:"data,omitempty"`
	} `json:"out"`
}

// savedData is content as pieces in order, so a history takes kilobytes,
// not the megabyte of its bytes. A written content's pieces are windows
// of the content pool (blockData), [offset, length], or bytes found
// nowhere in it (base64). A read's are pieces of what the history's ops
// wrote, [op, offset, length]: a suffix of one, whole ones, then a prefix
// of one, as a block's content is made of its writes. So a read's bytes
// follow the writes' if the pool changes: with SplitMix64 changed
// (mutant 7a4ff1cdbb) every saved history still passes.
type savedData []json.RawMessage

// content is d's bytes; written is what each op of the history wrote
// (nil while those are read).
func (d savedData) content(written []string) (string, error) {
	pool := contentPool()
	var b strings.Builder
	for _, piece := range d {
		if len(piece) > 0 && piece[0] == '"' {
			var raw []byte
			if err := json.Unmarshal(piece, &raw); err != nil {
				return "", fmt.Errorf("piece %s: %w", piece, err)
			}
			b.Write(raw)
			continue
		}
		var win []int
		if err := json.Unmarshal(piece, &win); err != nil {
			return "", fmt.Errorf("piece %s: %w", piece, err)
		}
		switch {
		case len(win) == 2 && win[0] >= 0 && win[1] >= 0 && win[0] <= len(pool) && win[1] <= len(pool)-win[0]:
			b.Write(pool[win[0] : win[0]+win[1]])
		case len(win) == 3 && win[0] >= 0 && win[0] < len(written) && win[1] >= 0 && win[2] >= 0 &&
			win[1] <= len(written[win[0]]) && win[2] <= len(written[win[0]])-win[1]:
			b.WriteString(written[win[0]][win[1] : win[1]+win[2]])
		default:
			return "", fmt.Errorf("piece %s: outside the pool or what was written", piece)
		}
	}
	return b.String(), nil
}

// loadHistory reads a saved history.
func loadHistory(t *testing.T, path string) []porcupine.Operation {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ops []historyOp[savedData]
	if err := json.Unmarshal(b, &ops); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	written := make([]string, len(ops))
	for i, o := range ops {
		if written[i], err = o.In.Data.content(nil); err != nil {
			t.Fatalf("%s: op %d: %v", path, i, err)
		}
	}
	h := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		read, err := o.Out.Data.content(written)
		if err != nil {
			t.Fatalf("%s: op %d: %v", path, i, err)
		}
		h[i] = porcupine.Operation{
			ClientId: o.Client, Call: o.Call, Return: o.Return,
			Input: LinInput{Kind: o.In.Kind, Block: o.In.Block, Stamp: o.In.Stamp, Off: o.In.Off, Len: o.In.Len,
				Data: written[i], Exists: o.In.Exists},
			Output: LinOutput{Outcome: o.Out.Outcome, Status: o.Out.Status, Stamp: o.Out.Stamp,
				Length: o.Out.Length, Data: read},
		}
	}
	return h
}

// TestRecordHistory writes the history of a saved case's run as the
// checker's tests keep it: XCEIVER_RECORD_HISTORY=CASE.json:BLOCK:OUT.json
// (BLOCK 0 for every block). Without it the test is skipped.
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
	r := Run(loadCase(t, parts[0]), Options{LinBudget: 1}) // only the history
	ops, err := recordHistory(r.History, block)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(parts[2], b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordHistory is block's ops (every block's for 0) as a history is saved.
func recordHistory(history []porcupine.Operation, block uint64) ([]historyOp[[]any], error) {
	var out []historyOp[[]any]
	var inData, outData [][]byte
	var wrote []int // ops that wrote data, by index in out
	for _, op := range history {
		in, o := op.Input.(LinInput), op.Output.(LinOutput)
		if block != 0 && in.Block != block {
			continue
		}
		var r historyOp[[]any]
		r.Client, r.Call, r.Return = op.ClientId, op.Call, op.Return
		r.In.Kind, r.In.Block, r.In.Stamp, r.In.Off, r.In.Len, r.In.Exists = in.Kind, in.Block, in.Stamp, in.Off, in.Len, in.Exists
		r.Out.Outcome, r.Out.Status, r.Out.Stamp, r.Out.Length = o.Outcome, o.Status, o.Stamp, o.Length
		inData, outData = append(inData, []byte(in.Data)), append(outData, []byte(o.Data))
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
	slices.SortStableFunc(byLen, func(a, b int) int { return len(inData[b]) - len(inData[a]) })
	var known [][2]int
	for _, j := range byLen {
		w := inData[j]
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
		if len(outData[i]) == 0 {
			continue
		}
		var same []int
		for _, j := range wrote {
			if out[j].In.Block == out[i].In.Block {
				same = append(same, j)
			}
		}
		if out[i].Out.Data = writtenPieces(outData[i], inData, same); out[i].Out.Data == nil {
			return nil, fmt.Errorf("op %d: a read of %d bytes is no run of its block's writes", i, len(outData[i]))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no op of that block")
	}
	return out, nil
}

// poolPieces is a written content as windows of the content pool, with
// the bytes found nowhere in it kept as they are.
func poolPieces(b []byte) []any {
	pool := contentPool()
	var pieces []any
	unfound := -1 // start of the bytes not found so far
	for i := 0; i < len(b); {
		k := min(32, len(b)-i)
		off := bytes.Index(pool, b[i:i+k])
		if off < 0 {
			if unfound < 0 {
				unfound = i
			}
			i++
			continue
		}
		if unfound >= 0 {
			pieces, unfound = append(pieces, b[unfound:i]), -1
		}
		n := k
		for i+n < len(b) && off+n < len(pool) && pool[off+n] == b[i+n] {
			n++
		}
		pieces = append(pieces, [2]int{off, n})
		i += n
	}
	if unfound >= 0 {
		pieces = append(pieces, b[unfound:])
	}
	return pieces
}

// writtenPieces is a read's data as pieces of the writes same ([op,
// offset, length]): a block's content is whole writes one after another,
// so the first piece may start inside a write, every piece but the last
// runs to its write's end, and every piece but the first starts at its
// write's start. Nil if there is no such run. A position no run goes on
// from is tried once.
func writtenPieces(b []byte, written [][]byte, same []int) []any {
	dead := make([]bool, len(b)+1)
	var try func(i int) []any
	try = func(i int) []any {
		if i == len(b) {
			return []any{}
		}
		if dead[i] {
			return nil
		}
		for _, j := range same {
			w := written[j]
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
		dead[i] = true
		return nil
	}
	return try(0)
}
