package properties

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/real"
	"xceiver/sim"
)

// Every operation checks its block token (issue 9, item 8): a missing,
// malformed, forged, expired, wrong-block or wrong-mode token gets
// ERROR_ACCESS_TOKEN and a closed connection, the block is untouched, and
// the datanode is back at its baseline. The same script runs in both
// worlds.

func TestTokensRefusedSim(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	tokenRefusals(t, w, "dn:50010", nil)
}

func TestTokensRefusedReal(t *testing.T) {
	w, err := real.New(real.Config{Seed: 1, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tokenRefusals(t, w, "127.0.0.1:0", w.Close)
}

type badToken struct {
	name string
	mint func(req model.Request, now time.Duration) []byte
}

func badTokens() []badToken {
	key := model.DefaultTokenKey
	grant := func(req model.Request, now time.Duration) model.BlockToken {
		return model.BlockToken{BlockID: req.BlockID, GenStamp: req.GenStamp, Modes: model.ModeFor(req.Op), Expiry: now + time.Hour}
	}
	return []badToken{
		{"missing", func(model.Request, time.Duration) []byte { return nil }},
		{"garbage", func(model.Request, time.Duration) []byte { return []byte("let me in") }},
		{"forged", func(req model.Request, now time.Duration) []byte {
			return model.IssueToken([]byte("not the datanode's key"), grant(req, now))
		}},
		{"tampered", func(req model.Request, now time.Duration) []byte {
			// A read token whose mode byte was changed to grant everything.
			g := grant(req, now)
			g.Modes = model.ModeRead
			tok := model.IssueToken(key, g)
			tok[16] = 0xf
			return tok
		}},
		{"expired", func(req model.Request, now time.Duration) []byte {
			g := grant(req, now)
			g.Expiry = now
			return model.IssueToken(key, g)
		}},
		{"wrong block", func(req model.Request, now time.Duration) []byte {
			g := grant(req, now)
			g.BlockID++
			return model.IssueToken(key, g)
		}},
		{"wrong stamp", func(req model.Request, now time.Duration) []byte {
			g := grant(req, now)
			g.GenStamp++
			return model.IssueToken(key, g)
		}},
		{"wrong mode", func(req model.Request, now time.Duration) []byte {
			g := grant(req, now)
			g.Modes = (model.ModeRead | model.ModeWrite | model.ModeReplace | model.ModeDelete) &^ g.Modes
			return model.IssueToken(key, g)
		}},
	}
}

type tokenOp struct {
	name string
	run  func(cl *model.Client, done func(model.Result))
}

func tokenOps() []tokenOp {
	return []tokenOp{
		{"read", func(cl *model.Client, done func(model.Result)) { cl.Read(1, 0, 0, 100, done) }},
		{"write", func(cl *model.Client, done func(model.Result)) { cl.Write(9, []byte("new block"), done) }},
		{"append", func(cl *model.Client, done func(model.Result)) { cl.Append(1, []byte("more"), done) }},
		{"replace", func(cl *model.Client, done func(model.Result)) { cl.Replace(1, []byte("other"), done) }},
		{"delete", func(cl *model.Client, done func(model.Result)) { cl.Delete(1, done) }},
	}
}

func tokenRefusals(t *testing.T, w model.World, addr string, closeWorld func() error) {
	content := model.BlockContent(1, 4096)
	bad, ops := badTokens(), tokenOps()
	var results []string
	var stamp uint64
	var after1, after9 model.Result
	var dn *model.Datanode
	var dnProc model.Process
	var baseline, conns, fds int
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dnProc = p
		store := model.NewBlockStore(p.Disk(), "data")
		var err error
		if stamp, err = store.Write(1, content); err != nil {
			w.Fail(err)
			return
		}
		dn, err = model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: addr, Keepalive: 100 * time.Millisecond, PoolIdle: 50 * time.Millisecond})
		if err != nil {
			w.Fail(err)
			return
		}
		baseline = p.FDs().Open
		addr := dn.Addr()
		w.Spawn("client", model.ProcessConfig{}, func(cp model.Process) {
			loop := cp.MainLoop()
			client := func(id int, mint func(model.Request, time.Duration) []byte) *model.Client {
				cl, err := model.NewClient(cp, loop, id, model.ClientConfig{Datanode: addr, NoDelay: true, MintToken: mint})
				if err != nil {
					w.Fail(err)
				}
				return cl
			}
			var step func(i int)
			step = func(i int) {
				if i == len(bad)*len(ops) {
					cl := client(i, nil)
					cl.Read(1, 0, 0, int64(len(content)), func(r model.Result) {
						after1 = r
						cl.Read(9, 0, 0, 1, func(r model.Result) {
							after9 = r
							cl.Close()
							// Past the keep-alive and the pool's idle time.
							loop.AfterFunc(300*time.Millisecond, func() {
								dnProc.MainLoop().Post(func() {
									conns, fds = dn.Conns(), dnProc.FDs().Open
									dn.Stop()
									dnProc.MainLoop().AfterFunc(50*time.Millisecond, w.Stop)
								})
							})
						})
					})
					return
				}
				b, o := bad[i/len(ops)], ops[i%len(ops)]
				cl := client(i, b.mint)
				o.run(cl, func(r model.Result) {
					results = append(results, fmt.Sprintf("%s token, %s: %v %v", b.name, o.name, r.Status, r.Err))
					if r.Status != model.StatusErrorAccessToken || !errors.Is(r.Err, model.ErrRejected) {
						w.Fail(fmt.Errorf("%s with a %s token: status %v, err %v; want %v, rejected", o.name, b.name, r.Status, r.Err, model.StatusErrorAccessToken))
					}
					cl.Close()
					step(i + 1)
				})
			}
			step(0)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(results) != len(bad)*len(ops) {
		t.Fatalf("%d of %d refusals ran", len(results), len(bad)*len(ops))
	}
	if after1.Err != nil || after1.Stamp != stamp || !bytes.Equal(after1.Data, content) {
		t.Errorf("block 1 changed by refused ops: stamp %d (was %d), %d bytes, err %v", after1.Stamp, stamp, len(after1.Data), after1.Err)
	}
	if after9.Status != model.StatusErrorInvalid {
		t.Errorf("block 9 after a refused write: status %v, err %v; want it missing", after9.Status, after9.Err)
	}
	if conns != 0 || fds != baseline {
		t.Errorf("datanode holds %d connections and %d fds (baseline %d)", conns, fds, baseline)
	}
	if closeWorld != nil {
		if err := closeWorld(); err != nil {
			t.Errorf("world close: %v", err)
		}
	}
}
