package main

import (
	"flag"
	"strings"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
)

func scReadFlags(fs *flag.FlagSet) func() (runner, error) {
	s := shortcircuit.DefaultReadScenario()
	fs.StringVar(&s.Path, "path", s.Path, "tcp, uds (data traffic over the domain socket) or sc (short-circuit)")
	var counts countFlags
	counts.intVar(fs, &s.Cache.Shards, "shards", "short-circuit cache shards (HDFS-15202)")
	counts.intVar(fs, &s.Cache.Capacity, "cache-capacity", "short-circuit cache capacity (replicas)")
	fs.DurationVar(&s.Cache.Expiry, "cache-expiry", s.Cache.Expiry, "short-circuit cache expiry")
	fs.IntVar(&s.Readers, "readers", s.Readers, "reader threads in the client process")
	fs.IntVar(&s.Ops, "ops", s.Ops, "reads per reader")
	fs.IntVar(&s.ReadSize, "read-size", s.ReadSize, "bytes per read")
	fs.IntVar(&s.Blocks, "blocks", s.Blocks, "blocks on the datanode")
	fs.IntVar(&s.BlockSize, "block-size", s.BlockSize, "bytes per block")
	fs.StringVar(&s.Pattern, "pattern", s.Pattern, "random or sequential")
	// (No --cores: the simulated host's 2 cores are shared by every
	// process, so the client's own count went unread; 1, 4 and 16 gave
	// one trace hash. bench hdfs-15202 turns the sharing off.)
	fs.BoolVar(&s.SkipChecksum, "skip-checksum", false, "short-circuit reads skip CRC32C verification")
	fs.BoolVar(&s.NoTransferTo, "no-transfer-to", false, "the datanode copies TCP reads through a buffer instead of sendfile (dfs.datanode.transferTo.allowed=false)")
	fs.IntVar(&s.Backlog, "backlog", 0, "the datanode's domain socket accept queue (0: 128); readers whose connect finds it full retry every 1ms")
	return func() (runner, error) {
		if err := counts.check("run sc-read"); err != nil {
			return nil, err
		}
		if s.Cache.Expiry <= 0 {
			return nil, usagef("run sc-read: --cache-expiry %v: want a positive duration", s.Cache.Expiry)
		}
		if err := s.Validate(); err != nil {
			return nil, usagef("run sc-read: %v", err)
		}
		// Refused rather than left unread: the other paths make no
		// cache and verify nothing themselves, so the run is the same
		// with them or without (its trace hash too).
		if s.Path != "sc" {
			if scOnly := setFlags(fs, nil, "shards", "cache-capacity", "cache-expiry", "skip-checksum"); len(scOnly) > 0 {
				return nil, usagef("run sc-read: %s: short-circuit reads'; --path %s reads through the datanode", strings.Join(scOnly, ", "), s.Path)
			}
		}
		if s.Path == "tcp" && isSet(fs, "backlog") {
			return nil, usagef("run sc-read: --backlog: the domain socket's; --path tcp connects over TCP")
		}
		// (With --path sc it stays: the reads that fall back go over TCP.)
		if s.Path == "uds" && isSet(fs, "no-transfer-to") {
			return nil, usagef("run sc-read: --no-transfer-to: TCP reads'; the datanode copies --path uds's data traffic always, never sending it with sendfile")
		}
		return scReadRunner{s}, nil
	}
}

type scReadRunner struct{ s shortcircuit.ReadScenario }

func (r scReadRunner) run(w model.World) (result, error) {
	res, err := shortcircuit.RunRead(w, r.s, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	st := res.Latencies.Summarize()
	return result{
		{"ops", res.Ops},
		{"path", r.s.Path}, {"transfer_to", r.s.Path == "tcp" && !r.s.NoTransferTo}, {"readers", r.s.Readers}, {"read_size", r.s.ReadSize}, {"shards", r.s.Cache.Shards},
		{"first_op_us", us(st.First)},
		{"p50_us", us(st.P50)},
		{"p99_us", us(st.P99)},
		{"mean_us", us(st.Mean)},
		{"throughput_mbps", res.ThroughputMBps()},
		{"bytes_read", res.BytesRead},
		{"errors", res.Errors},
		{"first_error", res.FirstError}, // what the errors were, not only how many
		{"mismatches", res.Mismatches},
		{"client_peak_fds", res.ClientPeakFDs},
		{"cache_hits", res.Hits},
		{"cache_misses", res.Misses},
		{"cache_shared", res.Shared},
		{"fds_received", res.FDsReceived},
		{"fallbacks", res.Fallbacks},
		{"leaked_server_fds", res.LeakedServerFDs},
		{"leaked_client_fds", res.LeakedClientFDs},
	}, nil
}
