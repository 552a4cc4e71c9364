package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
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
	for _, f := range []float64{1, 0, -2, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if c.Scaled(f) != c {
			t.Errorf("a scale of %v changed the costs", f)
		}
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

// Every figure a profile has is in Profile.fields under its JSON name,
// with its own value, and a cost unless it is one of the waits, wall
// times and counts below: so ParseProfile checks it and SpeedRatio
// weighs it.
func TestProfileFieldsListEveryFigure(t *testing.T) {
	notCosts := map[string]bool{
		"sendfile_per_kb_ns": true, "wakeup_p10_ns": true, "wakeup_p50_ns": true, "wakeup_p90_ns": true,
		"loaded_wakeup_p50_ns": true, "loaded_wakeup_p90_ns": true, "available_cores": true,
		"slice_on_ns": true, "slice_off_ns": true, "syscall_hold_p10_ns": true, "syscall_hold_p50_ns": true,
		"syscall_hold_p90_ns": true, "poller_wake_p10_ns": true, "poller_wake_p50_ns": true,
		"poller_wake_p90_ns": true, "poller_missed_ns": true, "stack_wait_ns": true, "stack_cores": true,
	}
	var p Profile
	v := reflect.ValueOf(&p).Elem()
	want := map[string]float64{}
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); f.Type.Kind() == reflect.Float64 {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			v.Field(i).SetFloat(float64(i + 1)) // each its own value
			want[name] = float64(i + 1)
		}
	}
	seen := map[string]bool{}
	for _, f := range p.fields() {
		if seen[f.name] {
			t.Errorf("%s listed twice", f.name)
		}
		seen[f.name] = true
		w, ok := want[f.name]
		switch {
		case !ok:
			t.Errorf("fields lists %s, which Profile has not", f.name)
		case f.v != w:
			t.Errorf("fields gives %s the value of another figure", f.name)
		case f.cost == notCosts[f.name]:
			t.Errorf("%s: cost %v, want %v", f.name, f.cost, !notCosts[f.name])
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("Profile's %s is not in Profile.fields", name)
		}
	}
}

func TestSpeedRatio(t *testing.T) {
	p := DefaultProfile()
	if r, n := p.SpeedRatio(p); n != 0 && (r < 0.2 || r > 5) {
		t.Errorf("the embedded profile against itself: %.2f over %d probes", r, n)
	}
	// A machine whose every probe costs twice the reference's.
	var now Profile
	twice := Profile{Reference: map[string]float64{}}
	nowJSON := map[string]float64{}
	for _, f := range p.fields() {
		if f.cost {
			twice.Reference[f.name] = 100
			nowJSON[f.name] = 200
		}
	}
	b, _ := json.Marshal(nowJSON)
	if err := json.Unmarshal(b, &now); err != nil {
		t.Fatal(err)
	}
	if r, n := twice.SpeedRatio(now); math.Abs(r-2) > 1e-9 || n == 0 {
		t.Errorf("every probe twice the reference: ratio %v over %d, want 2", r, n)
	}
	// Waits do not count: a machine whose wake-ups alone got slower
	// is as fast.
	slowWake := now
	slowWake.WakeupP50Ns, slowWake.PollerWakeP90Ns = 1e6, 1e6
	if r, _ := twice.SpeedRatio(slowWake); math.Abs(r-2) > 1e-9 {
		t.Errorf("slower waits moved the ratio to %v", r)
	}
	// Without a reference a profile is its own: a calibration against
	// itself is 1, and against one whose probes cost 1.5× as much, 1.5.
	var own Profile
	if err := json.Unmarshal(b, &own); err != nil {
		t.Fatal(err)
	}
	if r, _ := own.SpeedRatio(own); math.Abs(r-1) > 1e-9 {
		t.Errorf("a profile against itself: %v, want 1", r)
	}
	slower := map[string]float64{}
	for k, v := range nowJSON {
		slower[k] = 1.5 * v
	}
	b2, _ := json.Marshal(slower)
	var then Profile
	json.Unmarshal(b2, &then)
	if r, _ := own.SpeedRatio(then); math.Abs(r-1.5) > 1e-9 {
		t.Errorf("1.5× the probes: %v, want 1.5", r)
	}
	// A probe that came out near zero (a difference of two runs) is
	// trimmed away: the ratio stays 2.
	zeroish := now
	zeroish.Callback8ConnsNs = 1e-3
	if r, _ := twice.SpeedRatio(zeroish); math.Abs(r-2) > 1e-9 {
		t.Errorf("one probe near zero moved the ratio to %v, want 2", r)
	}
	// Distinct ratios: a quarter at each end left out, the geometric
	// mean of the middle. Eight probes at 1, 2, ..., 8× the reference:
	// the two lowest and two highest go, and the ratio is the
	// geometric mean of 3, 4, 5 and 6.
	names := []string{"read_ns", "write_ns", "epoll_wait_ns", "pread_ns", "copy_per_kb_ns", "crc32c_per_kb_ns", "parse_ns", "inode_ns"}
	spread := Profile{Reference: map[string]float64{}}
	spreadNow := map[string]float64{}
	for i, n := range names {
		spread.Reference[n] = 10
		spreadNow[n] = 10 * float64(i+1)
	}
	b3, _ := json.Marshal(spreadNow)
	var sp Profile
	json.Unmarshal(b3, &sp)
	if r, n := spread.SpeedRatio(sp); n != 8 || math.Abs(r-math.Pow(3*4*5*6, 0.25)) > 1e-9 {
		t.Errorf("ratios 1 to 8: %v over %d, want the geometric mean of 3 to 6, %v, over 8", r, n, math.Pow(3*4*5*6, 0.25))
	}
	// Three probes: none left out.
	few := Profile{Reference: map[string]float64{"read_ns": 10, "write_ns": 10, "parse_ns": 10}}
	if r, _ := few.SpeedRatio(Profile{ReadNs: 10, WriteNs: 20, ParseNs: 40}); math.Abs(r-2) > 1e-9 {
		t.Errorf("ratios 1, 2, 4: %v, want their geometric mean 2", r)
	}
	// Nothing in common: no evidence, no change.
	if r, n := (Profile{Reference: map[string]float64{"read_ns": 1}}).SpeedRatio(Profile{WriteNs: 5}); r != 1 || n != 0 {
		t.Errorf("no probe in common: %v over %d, want 1 over 0", r, n)
	}
}

func TestParseProfileChecksTheReference(t *testing.T) {
	base := `{"version": 1, "read_ns": 400, "write_ns": 400, "copy_per_kb_ns": 30, "crc32c_per_kb_ns": 60`
	for _, c := range []struct{ ref, want string }{
		{`{"read_ns": 350}`, ""},
		{`{"nope_ns": 350}`, "profile: reference.nope_ns: not a figure a profile has"},
		{`{"read_ns": -1}`, "profile: reference.read_ns = -1, want a cost from 0 to 1 s"},
		{`{"wakeup_p50_ns": 3000}`, "profile: reference.wakeup_p50_ns: a wait or a count, not a cost (SpeedRatio compares costs only)"},
	} {
		_, err := ParseProfile([]byte(base + `, "reference": ` + c.ref + `}`))
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("reference %s: error %v, want %q", c.ref, err, c.want)
		}
	}
}

// WithHostSteal gives the cores slices between gaps of HostStealGap that
// are the share's part of the time, keeps every cost, and does nothing
// for no share.
func TestWithHostSteal(t *testing.T) {
	c := DefaultCPUConfig()
	for _, s := range []float64{0, -1, math.NaN(), 1e-13, 1e-300, MinHostSteal / 2} {
		if got := c.WithHostSteal(s, 0); got != c {
			t.Errorf("share %v changed the config: %+v", s, got)
		}
	}
	for _, tc := range []struct{ share, want float64 }{{0.5, 0.5}, {0.2, 0.2}, {0.9, 0.9}, {0.99, MaxHostSteal}, {MinHostSteal, MinHostSteal}} {
		got := c.WithHostSteal(tc.share, 0)
		if got.SliceOff != HostStealGap {
			t.Errorf("share %v: gaps of %v, want %v", tc.share, got.SliceOff, HostStealGap)
		}
		if off := float64(got.SliceOff) / float64(got.SliceOn+got.SliceOff); math.Abs(off-tc.want) > 1e-6 {
			t.Errorf("share %v: the gaps are %.4f of the time, want %v", tc.share, off, tc.want)
		}
		got.SliceOn, got.SliceOff = c.SliceOn, c.SliceOff
		if got != c {
			t.Errorf("share %v changed more than the slices", tc.share)
		}
	}
}

// A host that withholds half the machine halves what a CPU-bound run
// gets done: request-response pairs keeping both cores busy.
func TestHostStealSlowsABusyRun(t *testing.T) {
	rate := func(share float64) float64 {
		cfg := DefaultConfig(1)
		cfg.CPU = cfg.CPU.WithHostSteal(share, 0)
		// Dear callbacks, so the cores are the bottleneck.
		cfg.CPU.Callback = 50 * time.Microsecond
		w := New(cfg)
		res, err := model.RunPairs(w, model.DefaultPairs(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return res.Rate
	}
	alone, half := rate(0), rate(0.5)
	if r := half / alone; r < 0.4 || r > 0.6 {
		t.Errorf("8 busy pairs did %.0f exchanges with the host withholding half, %.0f alone: %.2f×, want about 0.5×", half, alone, r)
	}
}

// The gaps WithHostSteal leaves are the ones it is given, within bounds.
func TestWithHostStealGap(t *testing.T) {
	c := DefaultCPUConfig()
	for _, tc := range []struct{ gap, want time.Duration }{
		{0, HostStealGap}, {-time.Second, HostStealGap}, {2 * time.Millisecond, 2 * time.Millisecond},
		{time.Microsecond, MinHostStealGap}, {time.Hour, MaxHostStealGap},
	} {
		got := c.WithHostSteal(0.25, tc.gap)
		if got.SliceOff != tc.want || got.SliceOn != 3*tc.want {
			t.Errorf("gap %v: slices of %v between gaps of %v, want %v and %v", tc.gap, got.SliceOn, got.SliceOff, 3*tc.want, tc.want)
		}
	}
}
