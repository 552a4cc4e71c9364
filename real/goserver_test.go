package real

import (
	"testing"
	"time"

	"xceiver/model"
)

// The reference server serves the read scenario as the datanode does:
// every byte verified by the clients, sequential and random reads over
// kept-alive connections, and nothing left open when it stops (the
// world's Close checks /proc/self/fd and goroutines).
func TestGoServerServesTheReadScenario(t *testing.T) {
	for _, verify := range []bool{false, true} {
		for _, pattern := range []string{"random", "sequential"} {
			w, err := New(Config{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			s := model.DefaultReadScenario()
			s.Clients, s.Ops, s.ReadSize, s.Pattern = 8, 20, 20000, pattern
			s.Client.CacheExpiry = 100 * time.Millisecond
			s.Serve = GoServer{Verify: verify, Keepalive: 200 * time.Millisecond}.Serve
			res, err := model.RunRead(w, s, time.Minute)
			if cerr := w.Close(); cerr != nil && err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatalf("verify=%v %s: %v", verify, pattern, err)
			}
			if res.Errors > 0 || res.Mismatches > 0 || res.BytesVerified != int64(8*20*20000) {
				t.Errorf("verify=%v %s: %d errors (%s), %d mismatches, %d bytes verified",
					verify, pattern, res.Errors, res.FirstError, res.Mismatches, res.BytesVerified)
			}
			if st := res.ClientStats; st.Reused == 0 {
				t.Errorf("verify=%v %s: no connection reused (%d dials)", verify, pattern, st.Dials)
			}
			if res.ServerPeakFDs < 8 {
				t.Errorf("verify=%v %s: peak fds %d with 8 clients connected", verify, pattern, res.ServerPeakFDs)
			}
		}
	}
}

// A forged token is refused with the datanode's status, and the block is
// not read.
func TestGoServerChecksTokens(t *testing.T) {
	w, err := New(Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := model.DefaultReadScenario()
	s.Clients, s.Ops = 1, 1
	s.Client.TokenKey = []byte("not the datanode's key")
	s.Serve = GoServer{Keepalive: 200 * time.Millisecond}.Serve
	res, err := model.RunRead(w, s, time.Minute)
	if cerr := w.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 1 || res.BytesRead != 0 {
		t.Errorf("%d errors, %d bytes read; want the read refused", res.Errors, res.BytesRead)
	}
}
