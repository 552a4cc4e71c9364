package sim

import (
	"reflect"
	"testing"
	"time"

	"xceiver/model"
)

// The read scenario's CPU figures share one window: what every process
// used in it (CPU) is the datanode's share (ServerCPU, from the window's
// start, not from the datanode's) plus the clients' (ClientCPU, spawned
// inside it), exactly, since in the simulator a read scenario's world holds
// only those processes and all three are read at the same two points.
// `read` prints the three per op; a share counted from the wrong start, or
// with the wrong sign, shows as "other" CPU that no process used.
func TestReadScenarioCPUSharesAddUp(t *testing.T) {
	w := New(DefaultConfig(2))
	s := model.DefaultReadScenario()
	s.Clients, s.Ops = 3, 10
	s.CPUTime = func() time.Duration {
		var c time.Duration
		for _, p := range w.Processes() {
			c += p.CPUTime()
		}
		return c
	}
	s.ProcessCPU = func(p model.Process) time.Duration { return p.(*Process).CPUTime() }
	res, err := model.RunRead(w, s, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != s.Clients*s.Ops || res.Errors != 0 {
		t.Fatalf("%d ops, %d errors: want %d clean ops", res.Ops, res.Errors, s.Clients*s.Ops)
	}
	if res.ServerCPU <= 0 || res.ClientCPU <= 0 || res.ServerCPU+res.ClientCPU != res.CPU {
		t.Errorf("datanode %v + clients %v, all processes %v: want two positive shares that add up to the whole", res.ServerCPU, res.ClientCPU, res.CPU)
	}
}

// The read scenario reports the sum of its clients' own counters. A
// keep-alive of a microsecond closes each connection as soon as its op
// ends; with Nagle on, a client's next request waits for its status to
// be acknowledged, by which time the datanode has closed, so reuses find
// dead peers and retry: every counter the report sums is then exercised,
// dead peers and retries included.
func TestReadScenarioReportsItsClientsCounters(t *testing.T) {
	w := New(DefaultConfig(2))
	s := model.DefaultReadScenario()
	s.Clients, s.Ops = 3, 20
	s.Server.Keepalive, s.Client.NoDelay = time.Microsecond, false
	var clients []*model.Client
	s.OnClient = func(_ int, cl *model.Client) { clients = append(clients, cl) }
	res, err := model.RunRead(w, s, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Summed field by field, so a counter added to ClientStats and left
	// out of the report fails here too.
	var sum model.ClientStats
	total := reflect.ValueOf(&sum).Elem()
	for _, cl := range clients {
		st := reflect.ValueOf(cl.Stats())
		for i := range total.NumField() {
			total.Field(i).SetInt(total.Field(i).Int() + st.Field(i).Int())
		}
	}
	if len(clients) != s.Clients || sum.DeadPeers == 0 || sum.Retries == 0 {
		t.Fatalf("%d clients, %d dead peers, %d retries: the test needs every client and some dead peers", len(clients), sum.DeadPeers, sum.Retries)
	}
	if res.ClientStats != sum {
		t.Errorf("reported %+v; the clients counted %+v", res.ClientStats, sum)
	}
}
