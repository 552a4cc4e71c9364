package namespace_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// editLogWorld runs a namenode with an edit log and clients that each
// make ops changes (mkdir) at once and list the root; faults, if set, are
// the namenode disk's.
func editLogWorld(t *testing.T, clients, ops int, faults sim.DiskFaults) (nn *namespace.Namenode, nnp *sim.Process, answers []time.Duration, errs []error) {
	t.Helper()
	w := sim.New(sim.DefaultConfig(1))
	sp, err := w.Spawn("namenode", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		var err error
		nn, err = namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: namespace.Config{Lock: namespace.RWLock, EditLog: "edits"},
			RPC:       rpc.ServerConfig{Addr: nnAddr, Readers: 2, Handlers: 8},
		})
		if err != nil {
			w.Fail(err)
			return
		}
		p.(*sim.Process).SimDisk().SetFaults(faults)
		for i := 0; i < clients; i++ {
			w.Spawn(fmt.Sprintf("client%d", i), model.ProcessConfig{}, func(cp model.Process) {
				rc, _ := rpc.NewClient(cp, cp.MainLoop(), rpc.ClientConfig{})
				c := &namespace.Client{RPC: rc, Addr: nnAddr}
				l := cp.MainLoop()
				for k := 0; k < ops; k++ {
					t0 := l.Now()
					c.Do(namespace.Request{Method: namespace.MethodMkdir, Path: fmt.Sprintf("/c%d/d%d", i, k)}, func(_ namespace.Response, err error) {
						answers = append(answers, l.Now()-t0)
						errs = append(errs, err)
					})
				}
				c.Do(namespace.Request{Method: namespace.MethodList, Path: "/"}, func(_ namespace.Response, err error) {
					if err != nil {
						t.Errorf("list: %v", err)
					}
				})
				l.AfterFunc(time.Minute, rc.Close)
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	return nn, sp.(*sim.Process), answers, errs
}

// Every change is answered only once the log holding it is synced, the
// changes made meanwhile share the next sync (group commit), and the log
// holds each change once, in transaction order; reads are not logged.
func TestEditLogSyncsBeforeAnswering(t *testing.T) {
	const clients, ops = 4, 5
	nn, p, answers, errs := editLogWorld(t, clients, ops, sim.DiskFaults{})
	lat := sim.DefaultDiskConfig().Latency
	for i, err := range errs {
		if err != nil {
			t.Errorf("mkdir %d: %v", i, err)
		}
	}
	for i, d := range answers {
		if d < lat {
			t.Errorf("mkdir %d answered after %v, before an fsync (%v) could have made it durable", i, d, lat)
		}
	}
	st := nn.NS.EditLogStats()
	if st.Edits != clients*ops || st.Syncs >= st.Edits || st.Syncs == 0 || st.Failed != 0 {
		t.Errorf("edit log %+v: want %d edits in fewer syncs", st, clients*ops)
	}
	f, err := p.Disk().Open("edits", model.ReadOnly, model.FDFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, _ := f.Size()
	b := make([]byte, size)
	f.ReadAt(b, 0)
	var txids []uint64
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+n || n < 9 {
			t.Fatalf("log record of %d bytes with %d left", n, len(b)-4)
		}
		txids = append(txids, binary.BigEndian.Uint64(b[4:]))
		if m := b[12]; m != namespace.MethodMkdir {
			t.Errorf("logged method %d, want only mkdirs", m)
		}
		b = b[4+n:]
	}
	if len(txids) != clients*ops {
		t.Errorf("log holds %d edits, want %d", len(txids), clients*ops)
	}
	for i, id := range txids {
		if id != uint64(i+1) {
			t.Fatalf("edit %d has txid %d: %v", i, id, txids)
		}
	}
}

// A sync that fails answers the changes it carried with EIO, never OK.
func TestEditLogFailedSyncAnswersEIO(t *testing.T) {
	nn, _, _, errs := editLogWorld(t, 2, 3, sim.DiskFaults{WriteEIO: 1})
	for i, err := range errs {
		if !namespace.IsCode(err, namespace.EIO) {
			t.Errorf("mkdir %d: %v, want EIO", i, err)
		}
	}
	if st := nn.NS.EditLogStats(); st.Failed == 0 || st.Failed != st.Syncs {
		t.Errorf("edit log %+v: want every sync failed", st)
	}
}
