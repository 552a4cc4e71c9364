package main

import (
	"fmt"
	"syscall"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/real"
	"xceiver/sim"
)

// rusage is this OS process's user and system CPU so far.
func rusage() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// runSCRead runs s in a fresh world and returns the result with the CPU
// used: in sim the modelled CPU of the client and datanode processes
// (user time: the model does not split kernel work out), in real the
// whole OS process's user and system time (client and datanode share
// it).
func runSCRead(world string, seed uint64, s shortcircuit.ReadScenario) (res *shortcircuit.ReadResult, user, sys time.Duration, err error) {
	var w model.World
	switch world {
	case "sim":
		w = sim.New(sim.DefaultConfig(seed))
		s.CPUTime = func(p model.Process) time.Duration { return p.(*sim.Process).CPUTime() }
	default:
		rw, err := real.New(real.Config{Seed: seed})
		if err != nil {
			return nil, 0, 0, err
		}
		defer rw.Close()
		w = rw
	}
	u0, s0 := rusage()
	res, err = shortcircuit.RunRead(w, s, 24*time.Hour)
	if err != nil {
		return nil, 0, 0, err
	}
	if res.Errors > 0 || res.Mismatches > 0 {
		return nil, 0, 0, fmt.Errorf("%s: %d errors (%s), %d mismatches", s.Path, res.Errors, res.FirstError, res.Mismatches)
	}
	if world == "sim" {
		return res, res.ClientCPU + res.ServerCPU, 0, nil
	}
	u1, s1 := rusage()
	return res, u1 - u0, s1 - s0, nil
}

// benchHDFS347 reads 1 GiB sequentially (64 KiB reads cycling over 64 MiB
// of blocks, so the worlds hold 64 MiB, not 1 GiB) over TCP, domain-socket
// data traffic and short-circuit.
func benchHDFS347(world string, seed uint64) ([]benchRow, error) {
	var rows []benchRow
	for _, path := range []string{"tcp", "uds", "sc"} {
		s := shortcircuit.DefaultReadScenario()
		s.Path, s.Readers, s.ReadSize, s.Pattern = path, 1, 64<<10, "sequential"
		s.Blocks, s.BlockSize = 8, 8<<20
		s.Ops = (1 << 30) / s.ReadSize
		res, user, sys, err := runSCRead(world, seed, s)
		if err != nil {
			return nil, err
		}
		rows = append(rows,
			benchRow{world, path, "time for 1 GiB", res.Elapsed.Seconds(), "s"},
			benchRow{world, path, "throughput", res.ThroughputMBps(), "MB/s"},
			benchRow{world, path, "user CPU", user.Seconds(), "s"})
		if world == "real" {
			rows = append(rows, benchRow{world, path, "system CPU", sys.Seconds(), "s"})
		}
		rows = append(rows, benchRow{world, path, "p50", us(res.Latencies.Summarize().P50), "µs"})
	}
	return rows, nil
}

// benchHDFS15202 does 100,000 reads of 64 KiB by many reader threads
// through the short-circuit cache, with 1 to 5 shards. The cache's
// critical sections charge their bookkeeping (hash lookups, LRU entries
// visited) to the modelled CPU and the sim's lock queues its waiters, so
// what sharding buys comes from the lock's hold time and queueing.
func benchHDFS15202(world string, seed uint64) ([]benchRow, error) {
	var rows []benchRow
	var t1 float64
	for n := 1; n <= 5; n++ {
		s := shortcircuit.DefaultReadScenario()
		s.Path, s.Readers, s.Cores, s.ReadSize = "sc", 64, 16, 64<<10
		s.Blocks, s.BlockSize = 100, 1<<20
		s.Ops = 100_000 / s.Readers
		s.Cache.Shards = n
		res, user, sys, err := runSCRead(world, seed, s)
		if err != nil {
			return nil, err
		}
		c := fmt.Sprintf("shards=%d", n)
		t := res.Elapsed.Seconds()
		if n == 1 {
			t1 = t
		}
		rows = append(rows,
			benchRow{world, c, "time", t, "s"},
			benchRow{world, c, "speed-up vs 1 shard", t1 / t, "×"},
			benchRow{world, c, "user CPU", user.Seconds(), "s"})
		if world == "real" {
			rows = append(rows, benchRow{world, c, "system CPU", sys.Seconds(), "s"})
		}
		rows = append(rows, benchRow{world, c, "p99", us(res.Latencies.Summarize().P99), "µs"},
			benchRow{world, c, "cache hits", float64(res.Hits), "reads"})
	}
	return rows, nil
}
