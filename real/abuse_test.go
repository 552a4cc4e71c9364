package real

import (
	"testing"

	"xceiver/model/abuse"
)

// Issue 9's defects stay fixed on real sockets, and each test sees its
// defect when it is switched back on.
func TestAbuseRegressions(t *testing.T) {
	for _, r := range abuse.Regressions {
		t.Run(r.Name, func(t *testing.T) {
			for _, bug := range []bool{false, true} {
				w, err := New(Config{})
				if err != nil {
					t.Fatal(err)
				}
				err = r.Run(w, bug)
				if cerr := w.Close(); cerr != nil {
					t.Errorf("bug %v: close: %v", bug, cerr)
				}
				switch {
				case !bug && err != nil:
					t.Errorf("fixed: %v", err)
				case bug && err == nil:
					t.Errorf("with the defect switched on, the test saw nothing")
				}
			}
		})
	}
}
