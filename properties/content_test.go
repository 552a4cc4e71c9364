package properties

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// pieced is s as a content made of one to four appends at random cuts.
func pieced(t *rapid.T, s string) content {
	cuts := rapid.IntRange(0, 3).Draw(t, "cuts")
	var c content
	at := 0
	for i := 0; i < cuts && at < len(s); i++ {
		next := rapid.IntRange(at, len(s)).Draw(t, "cut")
		c = c.plus(s[at:next])
		at = next
	}
	return c.plus(s[at:])
}

// A content answers as the string it stands for, however it was pieced
// together: its length, bytes, ends, ranges and equality.
func TestContentIsItsString(t *testing.T) {
	word := rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(0, 90).Draw(t, "n")
		b := []byte(strings.Repeat("a", n))
		for i := range b {
			if rapid.IntRange(0, 9).Draw(t, "poke") == 0 {
				b[i] = 'b'
			}
		}
		return string(b)
	})
	rapid.Check(t, func(t *rapid.T) {
		s := word.Draw(t, "s")
		c := pieced(t, s)
		if c.len() != len(s) || c.String() != s {
			t.Fatalf("content %q (len %d), want %q", c.String(), c.len(), s)
		}
		head, tail := c.headTail()
		if head != s[:min(ends, len(s))] || tail != s[len(s)-min(ends, len(s)):] {
			t.Fatalf("ends %q, %q of %q", head, tail, s)
		}
		off := rapid.IntRange(-1, len(s)+1).Draw(t, "off")
		n := rapid.IntRange(0, len(s)+1).Draw(t, "len")
		probe := word.Draw(t, "probe")
		if off >= 0 && off+n <= len(s) && rapid.Bool().Draw(t, "true range") {
			probe = s[off : off+n]
		}
		want := off >= 0 && off+len(probe) <= len(s) && s[off:off+len(probe)] == probe
		if got := c.rangeIs(int64(off), probe); got != want {
			t.Fatalf("%q.rangeIs(%d, %q) = %v, want %v", s, off, probe, got, want)
		}
		u := word.Draw(t, "u")
		if rapid.Bool().Draw(t, "same") {
			u = s
		}
		d := pieced(t, u)
		if rapid.Bool().Draw(t, "shared prefix") {
			// Both extend one chain: equal can stop at the prefix.
			tailS := word.Draw(t, "tail")
			c, d, s, u = c.plus(tailS), c.plus(u), s+tailS, s+u
		}
		if got := c.equal(d); got != (s == u) {
			t.Fatalf("%q equal %q: %v", s, u, got)
		}
	})
}
