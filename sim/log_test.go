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
