package main

import "testing"

// The ratios are taken within a round: a server that ran while the
// machine was busy is compared with the other servers of that round, not
// with a quiet round's.
func TestPairedRatios(t *testing.T) {
	a := []float64{100, 50, 300, 80, 90}
	b := []float64{100, 100, 200, 0, 60}
	med, lo, hi, ok := pairedRatios(a, b)
	if !ok || med != 1.5 || lo != 0.5 || hi != 1.5 {
		t.Errorf("pairedRatios = %v %v %v %v, want 1.5 0.5 1.5 true (round 4 left out: no reference)", med, lo, hi, ok)
	}
	med, lo, hi, ok = pairedRatios([]float64{1, 2, 3}, []float64{2, 2, 2})
	if !ok || med != 1 || lo != 0.5 || hi != 1.5 {
		t.Errorf("pairedRatios = %v %v %v %v, want 1 0.5 1.5 true", med, lo, hi, ok)
	}
	if _, _, _, ok := pairedRatios([]float64{1}, []float64{0}); ok {
		t.Error("pairedRatios with no reference figure gave a ratio")
	}
}
