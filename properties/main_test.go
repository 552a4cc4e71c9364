package properties

import (
	"flag"
	"os"
	"testing"
)

// TestMain pins rapid's seed unless -rapid.seed is given, so `go test`
// draws the same cases on every run and CI's verdict is reproducible.
// Random draws still find failures. -rapid.seed=9962580066681192302 (a
// 67 KB read through a 2 KiB send buffer, 27 delayed ACKs) was the
// availability bound's mistake and passes now
// (TestSmallSendBufferReadWithinBound); -rapid.seed=11 is open: a client
// whose no-progress timeout was drawn at 150 ms times out waiting for the
// only handle (pool_max 1) among idle, drip, announce and mute peers; who
// holds it, and why for longer than 150 ms, is not established yet.
// Explore with -rapid.seed=0 for a fresh seed each run, or with
// `xceiver check` over many seeds.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.seed" })
	if !set {
		if err := flag.Set("rapid.seed", "1"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
