package sim

import (
	"testing"

	"xceiver/model/abuse"
)

// Issue 9's defects stay fixed in the simulated world, and each test sees
// its defect when it is switched back on.
func TestAbuseRegressions(t *testing.T) {
	for _, r := range abuse.Regressions {
		t.Run(r.Name, func(t *testing.T) {
			if err := r.Run(New(DefaultConfig(1)), false); err != nil {
				t.Errorf("fixed: %v", err)
			}
			if err := r.Run(New(DefaultConfig(1)), true); err == nil {
				t.Errorf("with the defect switched on, the test saw nothing")
			}
		})
	}
}
