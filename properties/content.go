package properties

// content is a block's bytes as the linearizability checker's states hold
// them: a chain of the pieces that writes and appends left, shared between
// states. Porcupine steps one block through many orders of the same
// appends, and a string per state copied the whole block at every append
// step: seed 286171 allocated 824 MB in one check, mostly such copies.
// Now an append costs one piece, whatever the block's size. The zero
// content is empty. It is not comparable (==, which would compare the
// chains, not the bytes, does not compile): compare with equal.
type content struct {
	last *piece
	_    [0]func()
}

// piece is the bytes s at the end of a content of n bytes, after prev's.
// head and tail are the content's first and last min(n, ends) bytes, kept
// so that hashing a state needs no walk.
type piece struct {
	prev       *piece
	s          string
	n          int
	head, tail string
}

// ends is how many bytes from each end of a content head and tail keep
// (and the state hash mixes).
const ends = 32

// text is s as a content.
func text(s string) content {
	if s == "" {
		return content{}
	}
	return content{last: &piece{s: s, n: len(s), head: s[:min(ends, len(s))], tail: s[len(s)-min(ends, len(s)):]}}
}

func (c content) len() int {
	if c.last == nil {
		return 0
	}
	return c.last.n
}

// plus is c with s appended; c is unchanged.
func (c content) plus(s string) content {
	switch {
	case s == "":
		return c
	case c.last == nil:
		return text(s)
	}
	p := &piece{prev: c.last, s: s, n: c.last.n + len(s), head: c.last.head}
	if len(p.head) < ends {
		h := p.head + s
		p.head = h[:min(ends, len(h))]
	}
	if len(s) >= ends {
		p.tail = s[len(s)-ends:]
	} else {
		t := c.last.tail + s
		p.tail = t[len(t)-min(ends, len(t)):]
	}
	return content{last: p}
}

// headTail is c's first and last min(len, ends) bytes.
func (c content) headTail() (string, string) {
	if c.last == nil {
		return "", ""
	}
	return c.last.head, c.last.tail
}

// String is c's bytes in one string. A content of one piece (a block's
// first contents, every init op of a history) is that piece, shared; a
// chain is copied into one string.
func (c content) String() string {
	if c.last == nil {
		return ""
	}
	if c.last.prev == nil {
		return c.last.s
	}
	b := make([]byte, c.len())
	for p := c.last; p != nil; p = p.prev {
		copy(b[p.n-len(p.s):], p.s)
	}
	return string(b)
}

// rangeIs reports whether c's bytes [off, off+len(s)) are s (false if the
// range is not inside c).
func (c content) rangeIs(off int64, s string) bool {
	if off < 0 || off+int64(len(s)) > int64(c.len()) {
		return false
	}
	lo0, end := int(off), int(off)+len(s)
	for p := c.last; p != nil && end > lo0; p = p.prev {
		start := p.n - len(p.s)
		if start >= end {
			continue
		}
		lo := max(start, lo0)
		if p.s[lo-start:end-start] != s[lo-lo0:end-lo0] {
			return false
		}
		end = lo
	}
	return true
}

// equal reports whether c and d hold the same bytes, however they were
// pieced together. It compares from the ends and stops at a prefix the two
// share.
func (c content) equal(d content) bool {
	a, b := c.last, d.last
	if a == b {
		return true
	}
	if c.len() != d.len() {
		return false
	}
	var as, bs string // the unread ends of a's and b's pieces
	for {
		switch {
		case as == "" && bs == "" && a == b:
			return true // the rest is one chain (or nothing)
		case as == "":
			if a == nil {
				return false
			}
			as, a = a.s, a.prev
		case bs == "":
			if b == nil {
				return false
			}
			bs, b = b.s, b.prev
		default:
			k := min(len(as), len(bs))
			if as[len(as)-k:] != bs[len(bs)-k:] {
				return false
			}
			as, bs = as[:len(as)-k], bs[:len(bs)-k]
		}
	}
}
