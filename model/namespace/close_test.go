package namespace_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// Namenode.Close closes the edit log but leaves the rpc server serving
// (the harness lets idle timeouts close its connections): a change that
// came after it was applied and answered OK without being logged, and a
// power loss and restart lost it. It is refused with EIO, unmade. (The
// change whose sync is under way at Close is never answered: its client
// times out, outcome unknown.)
func TestChangeAfterCloseIsRefused(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	var nn *namespace.Namenode
	var np *sim.Process
	starts := 0
	answers := map[string]string{}
	var replayed []string
	sp, _ := w.Spawn("namenode", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		starts++
		if starts == 1 {
			p.(*sim.Process).SimDisk().TrackDurability()
		}
		var err error
		nn, err = namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: namespace.Config{EditLog: "edits"},
			RPC:       rpc.ServerConfig{Addr: nnAddr, Readers: 1, Handlers: 4},
		})
		if err != nil {
			w.Fail(err)
			return
		}
		if starts == 2 {
			nn.NS.Walk(func(path string, _, _ bool, _ []namespace.Location) { replayed = append(replayed, path) })
			return
		}
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			rc, _ := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{CallTimeout: time.Second})
			c := &namespace.Client{RPC: rc, Addr: nnAddr}
			l := cp.MainLoop()
			mkdir := func(path string) {
				c.Do(namespace.Request{Method: namespace.MethodMkdir, Path: path}, func(_ namespace.Response, err error) {
					answers[path] = fmt.Sprint(err)
				})
			}
			mkdir("/before")
			l.AfterFunc(5*time.Millisecond, func() {
				mkdir("/inflight") // its sync is under way when Close comes
				l.AfterFunc(20*time.Microsecond, func() { p.MainLoop().Post(nn.Close) })
			})
			l.AfterFunc(10*time.Millisecond, func() { mkdir("/after") })
			l.AfterFunc(2*time.Second, func() {
				rc.Close()
				np.Crash()
				np.SimDisk().PowerLoss()
				np.Restart()
			})
		})
	})
	np = sp.(*sim.Process)
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("answers %v; replayed after power loss: %v", answers, replayed)
	if answers["/after"] == "<nil>" && !contains(replayed, "/after") {
		t.Errorf("mkdir /after was answered OK after Close but is not in the log: a power loss lost it (replayed %v)", replayed)
	}
	if !strings.Contains(answers["/after"], "EIO") || contains(replayed, "/after") || !contains(replayed, "/before") || answers["/before"] != "<nil>" {
		t.Errorf("answers %v, replayed %v: want /before answered and replayed, /after refused with EIO and not made", answers, replayed)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
