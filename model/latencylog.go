package model

import (
	"math/bits"
	"slices"
	"time"
)

// LatencyLog summarizes latencies in memory that stays bounded however
// many it is given. A run would otherwise keep a list that grows with
// every op it has ever made: run rpc --duration at 64 clients kept 1.25
// MB a virtual second, and RSS grew from 42 MB to 102 MB between a 1 s
// and a 16 s run; run read's 3.2 M reads of 16 clients peaked at 160 MB,
// 38 MB with a log a client.
//
// It lists every latency it is given until it has logExact of them, and
// so do logs merged from such logs (a run's clients'): its summary is then
// exactly Latencies.Summarize's. Past that, it counts
// them in buckets: below 1024 ns one a nanosecond, above it logSub to a
// doubling, so that a percentile, reported as the middle of its bucket
// and kept within the least and greatest latency seen, is off by at most
// 1/1024 of its value (0.1%). Count, first, mean, max and the stall
// share stay exact.
type LatencyLog struct {
	exact  Latencies // every latency, until folded
	folded bool
	n      int
	first  time.Duration
	min    time.Duration
	max    time.Duration
	sum    time.Duration
	stalls int        // at StallThreshold or over
	chunks [][]uint64 // chunks[i][j]: latencies in bucket i*logSub+j, allocated as touched (uint32 could wrap in a day-long run)
}

const (
	logSubBits = 9
	logSub     = 1 << logSubBits // buckets to a doubling
	// logExact is how many latencies a log lists before it folds them
	// into buckets: 32 KB, so a log per client stays small with many
	// clients, and a run's first seconds are summarized exactly.
	logExact = 4096
)

// Add records one latency. Negative ones count as zero.
func (l *LatencyLog) Add(d time.Duration) {
	d = max(d, 0)
	if l.n == 0 {
		l.first, l.min, l.max = d, d, d
	}
	l.n++
	l.sum += d
	l.min, l.max = min(l.min, d), max(l.max, d)
	if d >= StallThreshold {
		l.stalls++
	}
	if !l.folded {
		if len(l.exact) < logExact {
			l.exact = append(l.exact, d)
			return
		}
		l.fold()
	}
	l.count(d, 1)
}

// Merge adds o's latencies to l's, as if each had been added after l's
// own (so l's first stays first). o is left as it was. l stays exact if
// both were: merging the logs of a run's clients, each exact up to
// logExact, lists at most that many latencies a client.
func (l *LatencyLog) Merge(o *LatencyLog) {
	if o.n == 0 {
		return
	}
	if l.n == 0 {
		l.first, l.min, l.max = o.first, o.min, o.max
	}
	l.n += o.n
	l.sum += o.sum
	l.min, l.max = min(l.min, o.min), max(l.max, o.max)
	l.stalls += o.stalls
	if !l.folded && !o.folded {
		l.exact = append(l.exact, o.exact...)
		return
	}
	if !l.folded {
		l.fold()
	}
	for _, d := range o.exact {
		l.count(d, 1)
	}
	for i, c := range o.chunks {
		for j, k := range c {
			if k > 0 {
				l.countBucket(i*logSub+j, k)
			}
		}
	}
}

// Len is how many latencies the log has been given.
func (l *LatencyLog) Len() int { return l.n }

// Exact reports whether the log still lists every latency, so that its
// percentiles are exact.
func (l *LatencyLog) Exact() bool { return !l.folded }

// Listed is every latency the log was given, in the order given (a merged
// log's after the log's own), while it is exact; nil once it has folded.
// It is the log's own list, not a copy.
func (l *LatencyLog) Listed() Latencies {
	if l.folded {
		return nil
	}
	return l.exact
}

// Summarize computes the statistics Latencies.Summarize does: exactly,
// or with the percentiles within 0.1% once the log has folded.
func (l *LatencyLog) Summarize() Summary {
	if l.n == 0 {
		return Summary{}
	}
	if !l.folded {
		s := l.exact.Summarize()
		s.First = l.first
		return s
	}
	return Summary{
		First: l.first,
		P50:   l.percentile(50),
		P99:   l.percentile(99),
		Mean:  l.sum / time.Duration(l.n),
		Max:   l.max,
	}
}

// StallShare is the share of latencies at StallThreshold or over.
func (l *LatencyLog) StallShare() float64 {
	if l.n == 0 {
		return 0
	}
	return float64(l.stalls) / float64(l.n)
}

// fold moves the listed latencies into buckets, for good.
func (l *LatencyLog) fold() {
	l.folded = true
	for _, d := range l.exact {
		l.count(d, 1)
	}
	l.exact = nil
}

func (l *LatencyLog) count(d time.Duration, k uint64) { l.countBucket(bucketOf(d), k) }

func (l *LatencyLog) countBucket(b int, k uint64) {
	i := b / logSub
	if i >= len(l.chunks) {
		l.chunks = slices.Grow(l.chunks, i+1-len(l.chunks))[:i+1]
	}
	if l.chunks[i] == nil {
		l.chunks[i] = make([]uint64, logSub)
	}
	l.chunks[i][b%logSub] += k
}

// percentile is the nearest-rank percentile: the middle of the bucket
// holding it, within [min, max].
func (l *LatencyLog) percentile(pct int) time.Duration {
	rank := uint64(percentileIndex(l.n, pct)) // 0-based
	var seen uint64
	for i, c := range l.chunks {
		for j, k := range c {
			if seen += k; seen > rank {
				lo, width := bucketRange(i*logSub + j)
				return min(max(lo+(width-1)/2, l.min), l.max)
			}
		}
	}
	return l.max // unreachable: the buckets hold n latencies
}

// bucketOf is the bucket of a latency of d ns: d itself below 2*logSub;
// above, the doubling it lies in and which of logSub equal parts of it.
func bucketOf(d time.Duration) int {
	v := uint64(d)
	if v < 2*logSub {
		return int(v)
	}
	shift := bits.Len64(v) - (logSubBits + 1)
	return (shift+1)*logSub + int(v>>shift) - logSub
}

// bucketRange is the least latency in bucket b and how many nanoseconds
// the bucket spans.
func bucketRange(b int) (lo, width time.Duration) {
	if b < 2*logSub {
		return time.Duration(b), 1
	}
	shift := b/logSub - 1
	return time.Duration(uint64(b%logSub+logSub) << shift), time.Duration(1) << shift
}
