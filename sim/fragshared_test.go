package sim

import "testing"

// A segment the fragmentation fault cuts into pieces may span two chunks
// of the send queue (a copied write held by Nagle, then a shared one):
// each piece must carry its own slice of the stream, gathered per piece,
// or the reader gets some bytes twice and others never. Ten bytes, then
// a hundred held by Nagle, then 2,000 written shared, cut into pieces of
// up to 8 bytes: the server receives the 2,110 bytes whole.
func TestFragmentedSegmentAcrossChunksArrivesWhole(t *testing.T) {
	h := newPair(t)
	h.cli.p.Fragment(8, 256, 5*us)
	t0 := h.now()
	h.cli.write(10)
	h.cli.write(100)
	n, err := h.cli.c.WriteShared(pattern(h.cli.wrote, 2000))
	if err != nil {
		t.Fatal(err)
	}
	h.cli.wrote += n
	h.runTo(t0 + 100*ms)
	h.srv.checkGot(h.cli.wrote)
}

// Fragmentation turned off while bytes it would have cut wait behind
// Nagle: they leave whole, in one segment, when the ACK releases them.
func TestFragmentOffWithBytesHeld(t *testing.T) {
	h := newPair(t)
	h.cli.p.Fragment(8, 256, 5*us)
	t0 := h.now()
	h.cli.write(10)
	h.cli.write(100) // held by Nagle behind the first
	h.cli.p.Fragment(0, 0, 0)
	h.runTo(t0 + 100*ms)
	h.srv.checkGot(110)
	var last segRec
	for _, s := range h.segs {
		if s.From == "client" && s.Len > 0 {
			last = s
		}
	}
	if last.Len != 100 {
		t.Errorf("the held bytes left in a segment of %d bytes, want one of 100 (segments %v)", last.Len, lens(h.segs))
	}
}
