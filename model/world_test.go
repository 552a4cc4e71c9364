package model

import "testing"

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
