package sim

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"xceiver/model"
)

// Log's values read as fmt's %v would print them, the strconv fast path
// included: trace hashes fold these lines in.
func TestLogValuesAsFmt(t *testing.T) {
	type named uint64
	var nilErr error
	for _, v := range []any{"", "a b=c", 0, -1, math.MaxInt64, math.MinInt64, int64(-7), uint64(math.MaxUint64),
		true, false, named(3), 3 * time.Millisecond, errors.New("boom"), nilErr, 1.5, model.OpReadBlock, uint32(9), []byte("x")} {
		if got, want := string(appendValue([]byte("k="), v)), "k="+fmt.Sprintf("%v", v); got != want {
			t.Errorf("%T %v: %q, want %q", v, v, got, want)
		}
	}
}

// Logged counts a process's Log calls by kind, for a harness to hold a
// model's counters to the events it logged beside them.
func TestLoggedCountsByKind(t *testing.T) {
	w := New(DefaultConfig(1))
	p, _ := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		p.Log("a", "k", 1)
		p.Log("b")
		p.Log("a", "k", 2)
	})
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	sp := p.(*Process)
	if a, b, c := sp.Logged("a"), sp.Logged("b"), sp.Logged("c"); a != 2 || b != 1 || c != 0 {
		t.Errorf("Logged a, b, c = %d, %d, %d; want 2, 1, 0", a, b, c)
	}
}
