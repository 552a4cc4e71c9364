package model

import (
	"slices"
	"testing"
)

// writeCountConn is scriptConn that records the length of every write,
// and takes at most room bytes a write (0: all of them).
type writeCountConn struct {
	scriptConn
	writes []int
	room   int
}

func (c *writeCountConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, len(p))
	if c.room > 0 && len(p) > c.room {
		return c.room, nil
	}
	return len(p), nil
}

// A bouncer makes a write only when it has a reply to send: run pairs
// measures what an exchange costs, and a write of nothing is a system
// call all the same (in sim it charges one). It answers each request
// read in full with one write when the socket takes the reply whole,
// whatever size the pieces the request arrives in.
func TestBouncerWritesOnlyReplies(t *testing.T) {
	for _, per := range []int{1, 3, 8, 64} {
		c := &writeCountConn{scriptConn: scriptConn{in: make([]byte, 3*8), per: per}}
		b := &bouncer{c: c, in: 8, out: make([]byte, 100), buf: make([]byte, 8)}
		for i := 0; i < 100 && (len(c.in) > 0 || len(b.pending) > 0); i++ {
			b.handle(nil)
		}
		if b.count != 3 || !slices.Equal(c.writes, []int{100, 100, 100}) {
			t.Errorf("3 requests of 8 bytes arriving %d at a time: %d read, writes %v; want 3 and one of 100 bytes each", per, b.count, c.writes)
		}
	}
	// A reply the socket takes in pieces is written on as it takes
	// them, each write with bytes to send.
	c := &writeCountConn{scriptConn: scriptConn{in: make([]byte, 8), per: 8}, room: 40}
	b := &bouncer{c: c, in: 8, out: make([]byte, 100), buf: make([]byte, 8)}
	for i := 0; i < 10; i++ {
		b.handle(nil)
	}
	if !slices.Equal(c.writes, []int{100, 60, 20}) {
		t.Errorf("a reply of 100 bytes to a socket taking 40 a write: writes %v, want [100 60 20]", c.writes)
	}
}
