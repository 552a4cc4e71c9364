package properties

import (
	"testing"
	"time"
)

// TestLiarEveryLie runs each lie, in each of its variants and with its
// cut early and late, against the correct client: every one must pass
// (the client reports each lie as its kind calls for), and the
// catalogued short-stream bug, which takes a short read for a whole one,
// must fail the property.
func TestLiarEveryLie(t *testing.T) {
	c, err := Draw(SeedSource(3), 3, "")
	if err != nil {
		t.Fatal(err)
	}
	c.Config.Faults, c.Schedule = nil, Schedule{}
	c.Config.Hostile, c.Config.BadConfig = nil, ""
	var lies []Lie
	for _, k := range LieKinds {
		variants := 1
		switch k {
		case LieResponse:
			variants = badResponses
		case LiePacket:
			variants = badPackets
		case LieReject:
			variants = 0
			for cut := range 4 { // each message length
				lies = append(lies, Lie{Kind: k, Len: 700, Packet: 512, Arg: 1 + 4*(cut%2), Cut: cut})
			}
		}
		for v := 0; v < variants; v++ {
			for _, cut := range []int{0, 3, 900, 5000} {
				lies = append(lies, Lie{Kind: k, Gap: time.Millisecond, Off: int64(v * 37 % 512), Len: 3000, Packet: 1024, Arg: v, Cut: cut})
			}
		}
	}
	for i, lie := range lies {
		cc := c
		cc.Config.Liar = &Liar{Size: 9000, Key: 5, DefaultName: i%2 == 0, Lies: []Lie{{Kind: LieHonest, Len: 100, Packet: 512}, lie}}
		if r := Run(cc, Options{}); !r.Passed() {
			t.Errorf("lie %+v: %v", lie, r.Failure)
		}
	}
	cc := c
	cc.Bug, cc.Config.AcceptShortStream = "short-stream", true
	cc.Config.Liar = &Liar{Size: 9000, Key: 5, Lies: []Lie{{Kind: LieShort, Off: 10, Len: 3000, Packet: 1024}}}
	if r := Run(cc, Options{}); r.Passed() || r.Failure.Property != PropLiar {
		t.Errorf("short-stream bug: got %v, want a %s failure", r.Failure, PropLiar)
	}
}
