package sim

import (
	"reflect"
	"testing"
	"time"
)

// FuzzParseProfile: a profile file is input from the user (--profile).
// Whatever it holds, ParseProfile refuses it or gives costs the CPU model
// can run: none negative, and slices (when both are set) no shorter than
// the bounds a run stays quick at.
func FuzzParseProfile(f *testing.F) {
	f.Add(defaultProfile)
	f.Add([]byte(withSlices(string(defaultProfile), 5000, 50000)))
	f.Add([]byte(`{"version": 1}`))
	f.Add([]byte(`{"version": 1, "read_ns": 1e9, "write_ns": 1, "copy_per_kb_ns": 1, "crc32c_per_kb_ns": 1, "slice_on_ns": 1, "slice_off_ns": 1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProfile(b)
		if err != nil {
			return
		}
		c := p.CPU()
		v := reflect.ValueOf(c)
		for i := range v.NumField() {
			if f := v.Field(i); f.Type() == reflect.TypeFor[time.Duration]() && f.Int() < 0 {
				t.Fatalf("%s = %v from an accepted profile", v.Type().Field(i).Name, time.Duration(f.Int()))
			}
		}
		if c.SliceOn > 0 && (c.SliceOn < minSliceOnNs || c.SliceOff < MinHostStealGap) {
			t.Fatalf("slices %v on, %v off accepted", c.SliceOn, c.SliceOff)
		}
	})
}
