package main

import (
	"encoding/json"
	"testing"
)

// run rpc answers calls in sim with no errors and reports the namenode's
// modelled CPU within its 8 cores; bad flags are usage errors.
func TestRunRPC(t *testing.T) {
	for _, args := range [][]string{
		{"--readers", "1", "--lock", "mutex"},
		{"--readers", "4", "--lock", "rwlock", "--mix", "8:1"},
	} {
		all := append([]string{"run", "rpc", "--json", "--clients", "8", "--threads", "2", "--depth", "2", "--warmup", "5ms", "--duration", "10ms"}, args...)
		code, stdout, stderr := runCLI(all...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", all, code, stderr)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v: %v: %s", all, err, stdout)
		}
		if res["calls"].(float64) < 100 || res["errors"].(float64) != 0 || res["cpu_percent"].(float64) <= 0 {
			t.Errorf("%v: %s", all, stdout)
		}
		if cpu := res["cpu_percent"].(float64); cpu > 800 {
			t.Errorf("%v: namenode CPU %.0f%% on 8 cores", all, cpu)
		}
	}
	for _, bad := range [][]string{{"--lock", "spin"}, {"--mix", "8"}, {"--clients", "0"}} {
		if code, _, _ := runCLI(append([]string{"run", "rpc"}, bad...)...); code != exitUsage {
			t.Errorf("run rpc %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}
