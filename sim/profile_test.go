package sim

import (
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

func TestEmbeddedProfileParsesAndMapsOntoTheCPUModel(t *testing.T) {
	p := DefaultProfile()
	c := p.CPU()
	if c.Syscall != ns((p.ReadNs+p.WriteNs)/2) || c.CopyPerKB != ns(p.CopyPerKBNs) || c.ChecksumPerK != ns(p.CRC32CPerKBNs) {
		t.Errorf("profile %+v mapped to %+v", p, c)
	}
	if c.Wakeup != ns(p.WakeupP10Ns) || c.Wakeup+c.WakeupSpread != ns(p.WakeupP10Ns)+ns(p.WakeupP90Ns-p.WakeupP10Ns) {
		t.Errorf("wake-up %v + [0, %v), want the 10th to 90th percentile of %+v", c.Wakeup, c.WakeupSpread, p)
	}
	if c.Parse != DefaultCPUConfig().Parse {
		t.Errorf("an unmeasured cost changed: parse %v", c.Parse)
	}
}

func TestParseProfileRejectsBadProfiles(t *testing.T) {
	good := string(defaultProfile)
	for name, tc := range map[string]struct{ in, want string }{
		"not json":      {"{", "profile:"},
		"wrong version": {strings.Replace(good, `"version": 1`, `"version": 7`, 1), "version 7"},
		"negative":      {strings.Replace(good, `"copy_per_kb_ns": `, `"copy_per_kb_ns": -`, 1), "copy_per_kb_ns"},
		"missing":       {`{"version": 1}`, "must be measured"},
		"huge":          {strings.Replace(good, `"epoll_wait_ns": `, `"epoll_wait_ns": 9e99 + `, 1), "profile:"},
	} {
		if _, err := ParseProfile([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one mentioning %q", name, err, tc.want)
		}
	}
}

func TestWakeupDelaysOnlyABlockedLoop(t *testing.T) {
	cfg := DefaultConfig(1)
	cfg.CPU.Wakeup = 10 * us
	w := New(cfg)
	var blocked, own time.Duration
	_, err := w.Spawn("p", model.ProcessConfig{}, func(p model.Process) {
		other, _ := p.NewLoop("other")
		l := p.MainLoop()
		l.AfterFunc(ms, func() {
			t0 := l.Now()
			// From this loop to a blocked one: it wakes 10 µs later.
			other.Post(func() { blocked = other.Now() - t0 })
			// To itself: no wake-up; it runs when this callback ends.
			l.Post(func() { own = l.Now() - t0 })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	w.RunFor(10 * ms)
	cb := cfg.CPU.Callback
	if blocked != 10*us+cb || own == 0 || own >= 10*us {
		t.Errorf("blocked loop ran %v after the post, want wake-up 10µs + callback %v; own loop %v, want no wake-up", blocked, cb, own)
	}
}
