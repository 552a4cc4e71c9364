package model

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// drawLatencies draws n latencies clustered the way runs' are (a few
// magnitudes apart, nanoseconds to a second), with ties.
func drawLatencies(t *rapid.T, n int) Latencies {
	centres := rapid.SliceOfN(rapid.Int64Range(0, int64(time.Second)), 1, 4).Draw(t, "centres")
	spread := rapid.Int64Range(0, int64(50*time.Millisecond)).Draw(t, "spread")
	seed := rapid.Uint64().Draw(t, "seed")
	l := make(Latencies, n)
	for i := range l {
		seed = seed*6364136223846793005 + 1442695040888963407
		c := centres[int(seed>>33)%len(centres)]
		d := c + int64(seed>>40)%(spread+1) - spread/2
		l[i] = time.Duration(max(d, 0))
	}
	return l
}

// within reports whether got is within 1/1024 of want, the bound
// LatencyLog promises once folded.
func within(got, want time.Duration) bool {
	diff := got - want
	if diff < 0 {
		diff = -diff
	}
	return diff <= want/1024
}

// A log summarizes as the full list does: exactly while it lists them,
// within 0.1% once it has folded them; count, first, mean, max and the
// stall share always exactly.
func TestLatencyLogSummarizesAsTheList(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.OneOf(rapid.IntRange(0, 50), rapid.IntRange(logExact-2, logExact+2), rapid.IntRange(0, 3*logExact)).Draw(t, "n")
		list := drawLatencies(t, n)
		var log LatencyLog
		for _, d := range list {
			log.Add(d)
		}
		checkLog(t, &log, list)
	})
}

// Logs merged summarize as the list of all their latencies, in the order
// merged (the first is the receiver's first).
func TestLatencyLogMerge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.IntRange(1, 5).Draw(t, "parts")
		var all Latencies
		var merged LatencyLog
		listed := true // every part still lists its latencies
		for range parts {
			n := rapid.OneOf(rapid.IntRange(0, 20), rapid.IntRange(logExact-2, logExact+2)).Draw(t, "n")
			part := drawLatencies(t, n)
			var log LatencyLog
			for _, d := range part {
				log.Add(d)
			}
			before := log.Summarize()
			merged.Merge(&log)
			if log.Summarize() != before || log.Len() != len(part) {
				t.Fatalf("Merge changed the log merged in")
			}
			all = append(all, part...)
			listed = listed && len(part) <= logExact
		}
		checkLog(t, &merged, all)
		if merged.Exact() != listed {
			t.Fatalf("merged log exact %v, its parts' all listed %v (%d latencies)", merged.Exact(), listed, len(all))
		}
	})
}

func checkLog(t *rapid.T, log *LatencyLog, list Latencies) {
	t.Helper()
	if log.Len() != len(list) {
		t.Fatalf("Len %d, want %d", log.Len(), len(list))
	}
	if log.StallShare() != list.StallShare() {
		t.Fatalf("stall share %v, want %v", log.StallShare(), list.StallShare())
	}
	got, want := log.Summarize(), list.Summarize()
	if log.Exact() {
		// Listed in the order given, a merged log's after its own.
		if !slices.Equal(log.Listed(), list) {
			t.Fatalf("exact log of %d lists %d latencies, not those given in order", len(list), len(log.Listed()))
		}
		if got != want {
			t.Fatalf("exact log of %d: %+v, want %+v", len(list), got, want)
		}
		return
	}
	if len(list) <= logExact {
		t.Fatalf("folded with %d latencies, at most %d listed", len(list), logExact)
	}
	if log.Listed() != nil {
		t.Fatalf("folded log of %d still lists %d", len(list), len(log.Listed()))
	}
	if got.First != want.First || got.Mean != want.Mean || got.Max != want.Max {
		t.Fatalf("folded log of %d: first, mean, max %v %v %v, want %v %v %v", len(list), got.First, got.Mean, got.Max, want.First, want.Mean, want.Max)
	}
	if !within(got.P50, want.P50) || !within(got.P99, want.P99) {
		t.Fatalf("folded log of %d: p50 %v p99 %v, want within 0.1%% of %v %v", len(list), got.P50, got.P99, want.P50, want.P99)
	}
}

// Each bucket starts where the one before it ends, and the latencies
// at its edges fall in it: the buckets tile the line.
func TestLatencyLogBuckets(t *testing.T) {
	end := time.Duration(0)
	for b := 0; b < bucketOf(time.Duration(1<<63-1))+1; b++ {
		lo, width := bucketRange(b)
		if lo != end {
			t.Fatalf("bucket %d starts at %d, the one before ends at %d", b, lo, end)
		}
		if bucketOf(lo) != b || bucketOf(lo+width-1) != b {
			t.Fatalf("bucket %d [%d, %d): edges fall in %d and %d", b, lo, lo+width, bucketOf(lo), bucketOf(lo+width-1))
		}
		if b >= 2*logSub && width*1024 > lo*2 {
			t.Fatalf("bucket %d [%d, +%d): wider than 1/512 of its start", b, lo, width)
		}
		end = lo + width
		if end < lo { // the last bucket ends past the largest Duration
			break
		}
	}
}

// However many latencies a log is given, it holds at most a chunk for
// each doubling they span: a run's memory does not grow with its length.
func TestLatencyLogStaysBounded(t *testing.T) {
	var log LatencyLog
	var most time.Duration
	for i := range 1_000_000 {
		// 100 µs to 50 ms, and a few outliers up to a minute.
		d := 100*time.Microsecond + time.Duration(i*7919%50000)*time.Microsecond
		if i%10007 == 0 {
			d = time.Duration(i) * 60 * time.Microsecond
		}
		log.Add(d)
		most = max(most, d)
	}
	if log.Exact() || log.exact != nil {
		t.Fatalf("a million latencies still listed")
	}
	held := 0
	for _, c := range log.chunks {
		held += len(c)
	}
	if held > 20*logSub {
		t.Errorf("%d buckets held for latencies spanning 20 doublings", held)
	}
	s := log.Summarize()
	if s.P50 < 20*time.Millisecond || s.P50 > 30*time.Millisecond || s.Max != most {
		t.Errorf("summary %+v", s)
	}
}
