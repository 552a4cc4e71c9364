package model

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every fd kind has its name (traces and leak reports show them); what
// is not a kind says so.
func TestFDKindNames(t *testing.T) {
	want := []string{"socket", "listener", "file", "block", "meta", "epoll", "eventfd", "passed", "segment"}
	if len(want) != NumFDKinds {
		t.Fatalf("%d kinds, %d names in this test: name the new kind here", NumFDKinds, len(want))
	}
	for k, name := range want {
		if got := FDKind(k).String(); got != name {
			t.Errorf("FDKind(%d) = %q, want %q", k, got, name)
		}
	}
	for _, k := range []FDKind{-1, FDKind(NumFDKinds)} {
		if got := k.String(); got != "fd?" {
			t.Errorf("FDKind(%d) = %q, want fd?", int(k), got)
		}
	}
}

func TestThreadKindDropsNumbers(t *testing.T) {
	for _, c := range []struct{ process, thread, want string }{
		{"client-7", "main", "client/main"},
		{"client-12", "main", "client/main"},
		{"datanode", "selector-0", "datanode/selector"},
		{"datanode", "worker-3", "datanode/worker"},
		{"dn2", "worker", "dn2/worker"}, // a number not after a dash is the name's
		{"-1", "a-b", "-1/a-b"},         // nothing before the dash: kept
		{"client-", "main-x1", "client-/main-x1"},
		{"client-3", "reader-3-7", "client/reader"},
	} {
		if got := ThreadKind(c.process, c.thread); got != c.want {
			t.Errorf("ThreadKind(%q, %q) = %q, want %q", c.process, c.thread, got, c.want)
		}
		if !IsThreadKind(c.want, c.process, c.thread) {
			t.Errorf("IsThreadKind(%q, %q, %q) = false", c.want, c.process, c.thread)
		}
		// Kinds that share a prefix or a suffix are not the same.
		for _, other := range []string{c.want + "x", "x" + c.want, c.want[:len(c.want)-1], "dn2/main"} {
			if other != c.want && IsThreadKind(other, c.process, c.thread) {
				t.Errorf("IsThreadKind(%q, %q, %q) = true", other, c.process, c.thread)
			}
		}
	}
}

// A domain-socket dial the full accept queue refused is tried again every
// UnixDialRetry until the patience is spent (a minute when none is set);
// TCP dials and other errors are not retried.
func TestRetryUnixDial(t *testing.T) {
	var waited time.Duration
	tries := 0
	for RetryUnixDial("unix", fmt.Errorf("dial: %w", ErrWouldBlock), &waited, 10*time.Millisecond) {
		tries++
	}
	if tries != 10 || waited != 10*time.Millisecond {
		t.Errorf("%d retries, waited %v; want 10 and 10ms", tries, waited)
	}
	waited = 0
	if !RetryUnixDial("unix", ErrWouldBlock, &waited, 0) || waited != UnixDialRetry {
		t.Errorf("no patience set: no retry, or waited %v", waited)
	}
	waited, tries = 0, 0 // the least patience there is: one retry
	for RetryUnixDial("unix", ErrWouldBlock, &waited, time.Nanosecond) {
		tries++
	}
	if tries != 1 {
		t.Errorf("%d retries with a patience of 1ns, want 1", tries)
	}
	waited = time.Minute
	if RetryUnixDial("unix", ErrWouldBlock, &waited, 0) {
		t.Errorf("retried past a minute with no patience set")
	}
	waited = 0
	if RetryUnixDial("tcp", ErrWouldBlock, &waited, time.Second) || RetryUnixDial("unix", ErrRejected, &waited, time.Second) || waited != 0 {
		t.Errorf("retried a TCP dial or another error (waited %v)", waited)
	}
}

// TCPPattern.Validate refuses what cannot run, naming it, and accepts
// every bound itself: a request of exactly 1 GiB, as one write or as
// 2^30 writes of a byte, and a reply of 1 GiB.
func TestTCPPatternValidateBounds(t *testing.T) {
	ok := TCPPattern{Writes: 1, Msg: 1, Reply: 1, Ops: 1}
	for _, c := range []TCPPattern{ok, {Writes: 1 << 30, Msg: 1, Reply: 1, Ops: 1}, {Writes: 1, Msg: 1 << 30, Reply: 1 << 30, Ops: 1}, {Writes: 1 << 15, Msg: 1 << 15, Reply: 1, Ops: 1}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v refused: %v", c, err)
		}
	}
	// The count of --sizes writes is bounded on its own: a megabyte of
	// 1-byte writes stays under the byte bound.
	ones := func(n int) []int { return slices.Repeat([]int{1}, n) }
	if c := (TCPPattern{Sizes: ones(1 << 20), Ops: 1}); c.Validate() != nil {
		t.Errorf("2^20 writes of --sizes refused: %v", c.Validate())
	}
	for _, tc := range []struct {
		change func(*TCPPattern)
		want   string
	}{
		{func(c *TCPPattern) { c.Writes = 0 }, "--writes"},
		{func(c *TCPPattern) { c.Msg = 0 }, "--msg"},
		{func(c *TCPPattern) { c.Reply = -1 }, "--reply"},
		{func(c *TCPPattern) { c.Gap = time.Millisecond }, "--gap"}, // (with a reply)
		{func(c *TCPPattern) { c.Reply, c.Gap = 0, time.Minute+1 }, "--gap"},
		{func(c *TCPPattern) { c.Sizes = []int{1, 0} }, "--sizes"},
		{func(c *TCPPattern) { c.Sizes = []int{1 << 30, 1} }, "--sizes"},
		{func(c *TCPPattern) { c.Sizes = ones(1<<20 + 1) }, "2^20 writes"},
		{func(c *TCPPattern) { c.Sizes = []int{1<<30 + 1} }, "want 1 to 2^30"}, // (one write, past the bound alone)
		{func(c *TCPPattern) { c.Ops = 0 }, "--ops"},
		{func(c *TCPPattern) { c.Writes = 1<<30 + 1 }, "1 GiB"},
		{func(c *TCPPattern) { c.Msg = 1<<30 + 1 }, "1 GiB"},
		{func(c *TCPPattern) { c.Writes, c.Msg = 1<<15, 1<<15+1 }, "1 GiB"},
		{func(c *TCPPattern) { c.Writes, c.Msg = 4, 1<<62 }, "1 GiB"}, // (the product wraps to 0)
		{func(c *TCPPattern) { c.Reply = 1<<30 + 1 }, "1 GiB"},
	} {
		c := ok
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %q", c, err, tc.want)
		}
	}
}

// plainConn is a connection that can neither hand over views nor keep
// shared bytes (as the real world's): Read and Write only.
type plainConn struct {
	Conn
	in, out []byte
}

func (c *plainConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, ErrWouldBlock
	}
	n := copy(p, c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *plainConn) Write(p []byte) (int, error) {
	c.out = append(c.out, p...)
	return len(p), nil
}

// sharingConn keeps what WriteShared gives it.
type sharingConn struct {
	plainConn
	shared []byte
}

func (c *sharingConn) WriteShared(p []byte) (int, error) {
	c.shared = append(c.shared, p...)
	return len(p), nil
}

// On a connection without views ReadView reads into buf and hands f what
// it read, and nothing when it read nothing; WriteShared writes there,
// and where the connection can keep the bytes it gives them over.
func TestReadViewAndWriteSharedFallBack(t *testing.T) {
	c := &plainConn{in: []byte("abcdef")}
	var got []string
	f := func(b []byte) { got = append(got, string(b)) }
	buf := make([]byte, 4)
	if n, err := ReadView(c, buf, f); n != 4 || err != nil {
		t.Fatalf("ReadView = %d, %v", n, err)
	}
	if n, err := ReadView(c, buf, f); n != 2 || err != nil {
		t.Fatalf("second ReadView = %d, %v", n, err)
	}
	if n, err := ReadView(c, buf, f); n != 0 || err != ErrWouldBlock {
		t.Fatalf("ReadView of nothing = %d, %v", n, err)
	}
	if strings.Join(got, "|") != "abcd|ef" {
		t.Errorf("f was handed %q, want abcd then ef", got)
	}
	if n, err := WriteShared(c, []byte("xyz")); n != 3 || err != nil || string(c.out) != "xyz" {
		t.Errorf("WriteShared to a plain conn = %d, %v, wrote %q", n, err, c.out)
	}
	s := &sharingConn{}
	if n, err := WriteShared(s, []byte("xyz")); n != 3 || err != nil || string(s.shared) != "xyz" || len(s.out) != 0 {
		t.Errorf("WriteShared to a sharing conn = %d, %v: shared %q, copied %q", n, err, s.shared, s.out)
	}
}
