package sim

import (
	"reflect"
	"testing"
	"time"

	"xceiver/model"
)

// Every field of CPUConfig is a cost Scaled multiplies or a wait it keeps:
// a new field fails here until it is one or the other.
func TestCPUConfigScaledScalesCostsNotWaits(t *testing.T) {
	waits := map[string]bool{
		"Wakeup": true, "WakeupSpread": true, "SliceOn": true, "SliceOff": true,
		"SyscallHold": true, "SyscallHoldSpread": true, "PollerWake": true,
		"PollerWakeSpread": true, "PollerMissed": true, "StackBalance": true,
	}
	var c CPUConfig
	v := reflect.ValueOf(&c).Elem()
	// Each field a distinct value, so a swap would show.
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int64:
			f.SetInt(int64(1000 * (i + 1)))
		case reflect.Array:
			for j := 0; j < f.Len(); j++ {
				f.Index(j).SetInt(int64(1000*(i+1) + 2*j))
			}
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("field %s: kind %v, want a duration, an array of them or a switch", v.Type().Field(i).Name, f.Kind())
		}
	}
	s := reflect.ValueOf(c.Scaled(1.5))
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		before, after := v.Field(i), s.Field(i)
		switch before.Kind() {
		case reflect.Bool:
			if before.Bool() != after.Bool() {
				t.Errorf("%s: switched", name)
			}
		case reflect.Int64:
			want := before.Int()
			if !waits[name] {
				want = want * 3 / 2
			}
			if after.Int() != want {
				t.Errorf("%s: %v scaled by 1.5 is %v, want %v (a cost is scaled, a wait is not)", name, time.Duration(before.Int()), time.Duration(after.Int()), time.Duration(want))
			}
		case reflect.Array:
			for j := 0; j < before.Len(); j++ {
				if want := before.Index(j).Int() * 3 / 2; after.Index(j).Int() != want {
					t.Errorf("%s[%d]: %v, want %v", name, j, after.Index(j).Int(), want)
				}
			}
		}
	}
	if c.Scaled(1) != c || c.Scaled(0) != c || c.Scaled(-2) != c {
		t.Error("a scale of 1, 0 or below changed the costs")
	}
}

// A scaled profile is the same run made slower by its work alone: the
// CPU an op grows by about the factor, and so does the latency of a
// serial exchange whose waits are small.
func TestCPUScaleSlowsTheWork(t *testing.T) {
	run := func(f float64) (cpu, p50 time.Duration) {
		cfg := DefaultConfig(1)
		cfg.CPU = DefaultProfile().CPU().Scaled(f)
		w := New(cfg)
		res, err := model.RunTCPPattern(w, model.TCPPattern{Writes: 1, Msg: 64, Reply: 32 << 10, Ops: 200, NoDelay: true}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var total time.Duration
		for _, p := range w.Processes() {
			total += p.CPUTime()
		}
		return total, res.Latencies.Summarize().P50
	}
	cpu1, p1 := run(1)
	cpu2, p2 := run(2)
	if r := float64(cpu2) / float64(cpu1); r < 1.9 || r > 2.1 {
		t.Errorf("CPU at twice the costs: %v against %v, %.2f×; want about 2×", cpu2, cpu1, r)
	}
	if p2 <= p1 {
		t.Errorf("p50 at twice the costs %v, not above %v", p2, p1)
	}
}
