package shortcircuit

// SegmentIDs lists the ids of the segments sh has mapped, for tests that
// play a local user who has learnt one.
func SegmentIDs(sh *Shared) []uint64 {
	var ids []uint64
	for _, s := range sh.all {
		ids = append(ids, s.id)
	}
	return ids
}

// SequentialRead is the sequential pattern's read at position seq.
func (s *ReadScenario) SequentialRead(seq int64) (block uint64, off, next int64) {
	return s.sequentialRead(seq)
}
