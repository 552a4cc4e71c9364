package shortcircuit_test

import (
	"testing"
	"time"

	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// pathRead reads 64 MiB sequentially in 64 KiB reads by one local reader
// on path, as bench hdfs-347 reads its GiB (blocks of 8 MiB, the
// embedded profile's costs on the 2 host cores), and returns the result.
// It cycles over 2 blocks, not the bench's 8: storing 64 MiB of blocks
// three times took more than half a second, and the figures are the same
// to 1%.
func pathRead(t *testing.T, path string) *shortcircuit.ReadResult {
	t.Helper()
	s := shortcircuit.DefaultReadScenario()
	s.Path, s.Readers, s.ReadSize, s.Pattern = path, 1, 64<<10, "sequential"
	s.Blocks, s.BlockSize = 2, 8<<20
	s.Ops = (64 << 20) / s.ReadSize
	cfg := sim.DefaultConfig(1)
	cfg.CPU = sim.DefaultProfile().CPU()
	res, err := shortcircuit.RunRead(sim.New(cfg), s, time.Hour)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if res.Errors > 0 || res.Mismatches > 0 || res.Ops != s.Ops {
		t.Fatalf("%s: %d ops, %d errors (%s), %d mismatches", path, res.Ops, res.Errors, res.FirstError, res.Mismatches)
	}
	return res
}

// HDFS-347's conclusion: a local reader reads fastest short-circuit, from
// the block files themselves, and the sim must rank the paths as the
// real sockets here do: sc first, then domain-socket data traffic (uds),
// then TCP. (HDFS measured its domain socket behind TCP, 7.9 s against
// 6.7; on this machine's costs both worlds put uds ahead: README.md,
// bench, and validate's uds-vs-tcp row.)
//
// bench hdfs-347 in sim (6 December, 1 GiB): sc 0.56 s, uds 2.05 s, tcp
// 2.98 s (sc 3.7× faster than uds; uds 1.45× faster than tcp, p50 125
// against 179 µs); real on the shared 2-core machine: sc 4.4 s, uds
// 11.0 s, tcp 14.0 s (2.5× and 1.27×); validate uds-vs-tcp's p50 ratio
// sim 0.685, real 0.55. This test reads a sixteenth of the GiB, which
// keeps the ratios (today sc 35 ms, uds 128 ms, tcp 193 ms; p50 34, 125
// and 183 µs). It asks for sc at least twice as fast as uds, well inside
// the sim's 3.7× and real's 2.5×, and for uds ahead of tcp in time and
// p50, a ranking only: real's margin there is no wider than the sim's.
func TestShortCircuitReadsFastestThenDomainSocketThenTCP(t *testing.T) {
	tcp, uds, sc := pathRead(t, "tcp"), pathRead(t, "uds"), pathRead(t, "sc")
	p50 := func(r *shortcircuit.ReadResult) time.Duration { return r.Latencies.Summarize().P50 }
	t.Logf("64 MiB: sc %v (p50 %v), uds %v (p50 %v), tcp %v (p50 %v)",
		sc.Elapsed, p50(sc), uds.Elapsed, p50(uds), tcp.Elapsed, p50(tcp))
	if sc.Elapsed*2 > uds.Elapsed {
		t.Errorf("sc %v, uds %v (%.2f×): want short-circuit at least twice as fast as domain-socket data traffic",
			sc.Elapsed, uds.Elapsed, float64(uds.Elapsed)/float64(sc.Elapsed))
	}
	if uds.Elapsed >= tcp.Elapsed || p50(uds) >= p50(tcp) {
		t.Errorf("uds %v (p50 %v), tcp %v (p50 %v): want domain-socket data traffic ahead of TCP, as in real",
			uds.Elapsed, p50(uds), tcp.Elapsed, p50(tcp))
	}
}
