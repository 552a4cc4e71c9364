package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Packetdrill-style scripts: socket calls at given times on a fresh
// loopback connection, and every segment the exchange puts on the wire
// after the handshake, with the window in which each must appear. The
// same scripts run on real loopback (real/script_test.go) where a test may
// capture lo.

func runScript(t *testing.T, sc Script) {
	h := newPair(t)
	if sc.Warm {
		h.warm(10)
	}
	t0 := h.now()
	from := len(h.segs)
	for _, st := range sc.Steps {
		if t0+st.At > h.now() {
			h.runTo(t0 + st.At)
		}
		e := h.cli
		if st.Who == "server" {
			e = h.srv
		}
		var err error
		switch st.Op {
		case "write":
			e.write(st.N)
		case "more":
			e.writeMore(st.N)
		case "cork", "uncork":
			err = e.c.SetCork(st.Op == "cork")
		case "nodelay":
			err = e.c.SetNoDelay(st.N != 0)
		case "shutdown":
			err = e.c.CloseWrite()
		default:
			t.Fatalf("unknown op %q", st.Op)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", st.Who, st.Op, err)
		}
	}
	h.runTo(t0 + time.Second)
	got := h.segs[from:]
	var lines []string
	for _, s := range got {
		lines = append(lines, fmt.Sprintf("%v %s len %d %s", s.T-t0, s.From, s.Len, s.Flags))
	}
	if len(got) != len(sc.Segs) {
		t.Fatalf("%d segments, want %d:\n%s", len(got), len(sc.Segs), strings.Join(lines, "\n"))
	}
	for i, want := range sc.Segs {
		s := got[i]
		if d := s.T - t0; s.From != want.From || s.Len != want.Len || s.Flags != want.Flags || d < want.Lo || d > want.Hi {
			t.Errorf("segment %d: %s, want %s len %d %s in [%v, %v]", i, lines[i], want.From, want.Len, want.Flags, want.Lo, want.Hi)
		}
	}
}

func TestScripts(t *testing.T) {
	for _, sc := range Scripts() {
		t.Run(sc.Name, func(t *testing.T) { runScript(t, sc) })
	}
}

// A script pins a rule only if its windows are narrow: the timers behind
// its segments (delayed ACK, the probe timer, the tail loss probe) fire on
// the jiffy grid (HZ=250 here: a 4 ms tick), so a segment may come up to
// a tick after its rule's time and no later, and a window wider than that
// would pass a segment that broke the rule (an ACK sent at once where the
// delayed ACK is due 40 ms later). Each window starts at or after the
// script's start, ends no earlier than it starts, and spans a tick at
// most.
func TestScriptWindowsAreATickWide(t *testing.T) {
	tick := DefaultTCPConfig().Tick
	for _, sc := range Scripts() {
		for i, s := range sc.Segs {
			if s.Lo < 0 || s.Hi < s.Lo || s.Hi-s.Lo > tick {
				t.Errorf("%s: segment %d (%s len %d %s) in [%v, %v]: want a window of at most %v", sc.Name, i, s.From, s.Len, s.Flags, s.Lo, s.Hi, tick)
			}
		}
	}
}
