package shortcircuit_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// A chunk rotted on the datanode's disk fails the read that meets it,
// through the cached replica's fds and then over TCP, and nothing else:
// as HDFS's DFSInputStream, the client tries the next replica for that
// read only, short-circuit stays on for the path, and the replica stays
// cached for its sound chunks. With OffOnLocalError the checksum error
// turns the path off and the next miss goes over TCP.
func TestChecksumErrorLeavesPathOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  bool
	}{{"fixed", false}, {"sc-off-on-checksum", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := sim.New(sim.DefaultConfig(1))
			type read struct {
				r     model.Result
				local bool
			}
			var reads []read
			var st shortcircuit.ClientStats
			offs := 0
			var after rest
			watch := &shortcircuit.PathWatch{Off: func(model.Loop) { offs++ }}
			scfg := shortcircuit.SharedConfig{Watch: watch, Bugs: shortcircuit.ClientBugs{OffOnLocalError: tc.bug}}
			e := startEnv(t, w, "dn:50010", "/run/dn_socket", scfg, shortcircuit.ClientConfig{DisableFor: time.Minute}, func(e *env) {
				readStep := func(block uint64, off int64) func(next func()) {
					return func(next func()) {
						e.cl.ReadVia(block, 0, off, 100, func(r model.Result, local bool) {
							reads = append(reads, read{r, local})
							next()
						})
					}
				}
				steps(
					readStep(1, 0), // caches block 1's replica
					func(next func()) {
						if !w.Process("datanode").FlipBit("data/blk_1", 50, 3) {
							e.w.Fail(errors.New("no byte 50 of data/blk_1 to rot"))
							return
						}
						next()
					},
					readStep(1, 0),    // chunk 0: rotted
					readStep(1, 1024), // chunk 2 of the cached replica: sound
					readStep(2, 0),    // a miss: asks the datanode if the path is on
					func(next func()) { st = e.cl.Stats(); next() },
					e.finish(&after),
				)
			})
			if len(reads) != 4 {
				t.Fatalf("%d reads done, want 4", len(reads))
			}
			var ce *model.ChecksumError
			if !errors.As(reads[1].r.Err, &ce) || reads[1].local {
				t.Errorf("read of the rotted chunk: %v (local %v), want a checksum error over TCP", reads[1].r.Err, reads[1].local)
			}
			if r := reads[2]; r.r.Err != nil || !r.local || !bytes.Equal(r.r.Data, model.BlockContent(1, blockLen)[1024:1124]) {
				t.Errorf("read of a sound chunk after: %v (local %v), want it through the cached replica", r.r.Err, r.local)
			}
			if st.LocalErrors != 1 || st.Hits != 2 {
				t.Errorf("stats %+v: want 1 local error and 2 hits (the replica stays cached)", st)
			}
			r := reads[3]
			if r.r.Err != nil || !bytes.Equal(r.r.Data, model.BlockContent(2, blockLen)[:100]) {
				t.Errorf("read of block 2: %v", r.r.Err)
			}
			if tc.bug {
				if offs != 1 || r.local {
					t.Errorf("with the bug: path turned off %d times, block 2 read local %v; want once, over TCP", offs, r.local)
				}
			} else if offs != 0 || !r.local {
				t.Errorf("path turned off %d times, block 2 read local %v; want never, through passed fds", offs, r.local)
			}
			e.checkRest(t, after)
		})
	}
}
