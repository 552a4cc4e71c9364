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

// The fault cuts only the first span bytes of a write: those leave in
// pieces of at most piece bytes, the last of them ending at the span,
// and the rest of the write leaves whole after them.
func TestFragmentCutsOnlyTheSpan(t *testing.T) {
	h := newPair(t)
	h.cli.p.Fragment(64, 100, ms)
	t0 := h.now()
	h.cli.write(1000)
	h.runTo(t0 + 100*ms)
	h.srv.checkGot(1000)
	pieces := h.dataSegs("client", t0)
	if len(pieces) < 3 {
		t.Fatalf("pieces %v, want the span cut", lens(pieces))
	}
	start, sum := pieces[0].Seq, 0
	for _, p := range pieces[:len(pieces)-1] {
		if p.Len > 64 {
			t.Errorf("a piece of %d bytes within the span (pieces %v), want at most 64", p.Len, lens(pieces))
		}
		sum += p.Len
	}
	if last := pieces[len(pieces)-1]; sum != 100 || last.Seq != start+100 || last.Len != 900 {
		t.Errorf("pieces %v: want pieces up to the span's 100th byte, then the other 900 whole", lens(pieces))
	}
}
