package namespace_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

const (
	nnAddr = "nn:8020"
	dnAddr = "dn:50010"
)

type e2e struct {
	w  *sim.World
	nn *namespace.Namenode
	dn *model.Datanode
}

// start runs a datanode, a namenode and one client process; script runs on
// the client's loop.
func start(t *testing.T, lock namespace.LockKind, script func(w *sim.World, p model.Process, c *namespace.Client)) *e2e {
	t.Helper()
	e := &e2e{w: sim.New(sim.DefaultConfig(1))}
	w := e.w
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		cfg := model.DefaultDatanodeConfig()
		cfg.Addr = dnAddr
		var err error
		if e.dn, err = model.StartDatanode(p, p.MainLoop(), cfg); err != nil {
			w.Fail(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Spawn("namenode", model.ProcessConfig{Cores: 2}, func(p model.Process) {
		var err error
		e.nn, err = namespace.StartNamenode(p, p.MainLoop(), namespace.NamenodeConfig{
			Namespace: namespace.Config{Lock: lock},
			RPC:       rpc.ServerConfig{Addr: nnAddr, Readers: 2, Handlers: 4},
			Datanode:  model.ClientConfig{Datanode: dnAddr, CacheExpiry: time.Second},
		})
		if err != nil {
			w.Fail(err)
		}
	})
	w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		rc, err := rpc.NewClient(p, p.MainLoop(), rpc.ClientConfig{})
		if err != nil {
			w.Fail(err)
			return
		}
		c := &namespace.Client{RPC: rc, Addr: nnAddr}
		// The client holds no key: its tokens come from the namenode.
		dc, err := model.NewClient(p, p.MainLoop(), 1, model.ClientConfig{Datanode: dnAddr, CacheExpiry: time.Second, MintToken: c.MintToken})
		if err != nil {
			w.Fail(err)
			return
		}
		c.Datanode = func(a string) *model.Client {
			if a == dnAddr {
				return dc
			}
			return nil
		}
		p.MainLoop().AfterFunc(time.Millisecond, func() {
			script(w, p, c)
		})
		p.MainLoop().AfterFunc(time.Minute, dc.Close)
	})
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	return e
}

// seq runs steps one after another on the client's loop.
func seq(t *testing.T, steps ...func(next func())) {
	var run func(i int)
	run = func(i int) {
		if i < len(steps) {
			steps[i](func() { run(i + 1) })
		}
	}
	run(0)
}

func expect(t *testing.T, c *namespace.Client, r namespace.Request, want namespace.Code, check func(namespace.Response)) func(func()) {
	return func(next func()) {
		c.Do(r, func(resp namespace.Response, err error) {
			got := namespace.OK
			var ne *namespace.Error
			switch {
			case errors.As(err, &ne):
				got = ne.Code
			case err != nil:
				t.Errorf("%s %s: %v", namespace.MethodName(r.Method), r.Path, err)
			}
			if got != want {
				t.Errorf("%s %s: %v, want %v", namespace.MethodName(r.Method), r.Path, got, want)
			} else if check != nil {
				check(resp)
			}
			next()
		})
	}
}

func TestNamespaceEndToEnd(t *testing.T) {
	for _, lock := range []namespace.LockKind{namespace.Mutex, namespace.RWLock} {
		data := bytes.Repeat([]byte("0123456789abcdef"), 700) // 11200 bytes: 3 blocks of 4 KiB
		data2 := []byte("a new file under the old name")
		done := false
		e := start(t, lock, func(w *sim.World, p model.Process, c *namespace.Client) {
			M := func(m uint8, path string) namespace.Request { return namespace.Request{Method: m, Path: path} }
			seq(t,
				expect(t, c, M(namespace.MethodMkdir, "/a/b"), namespace.OK, nil),
				expect(t, c, M(namespace.MethodMkdir, "/a//b"), namespace.EINVAL, nil),
				func(next func()) {
					c.WriteFile("/a/b/f", data, 4096, dnAddr, func(err error) {
						if err != nil {
							t.Errorf("write: %v", err)
						}
						next()
					})
				},
				expect(t, c, M(namespace.MethodCreate, "/a/b/f"), namespace.EEXIST, nil),
				expect(t, c, M(namespace.MethodList, "/a"), namespace.OK, func(r namespace.Response) {
					if len(r.Entries) != 1 || r.Entries[0].Name != "b" || !r.Entries[0].Dir {
						t.Errorf("list /a: %+v", r.Entries)
					}
				}),
				expect(t, c, M(namespace.MethodGetBlockLocations, "/a/b/f"), namespace.OK, func(r namespace.Response) {
					if len(r.Locations) != 3 || r.Locations[2].Length != 11200-8192 || r.Locations[0].Datanode != dnAddr {
						t.Errorf("locations: %+v", r.Locations)
					}
				}),
				func(next func()) {
					c.ReadFile("/a/b/f", func(got []byte, err error) {
						if err != nil || !bytes.Equal(got, data) {
							t.Errorf("read back: %v, %d bytes", err, len(got))
						}
						next()
					})
				},
				// Resolve, then delete and re-create the file before its
				// blocks are read: the read must re-resolve and return the
				// new file, not fail and not return the old bytes.
				func(next func()) {
					c.SetAfterResolve(func(then func()) {
						seq(t,
							expect(t, c, M(namespace.MethodDelete, "/a/b/f"), namespace.OK, nil),
							func(n func()) { p.MainLoop().AfterFunc(10*time.Millisecond, n) }, // the invalidation reaches the datanode
							func(n func()) {
								c.WriteFile("/a/b/f", data2, 4096, dnAddr, func(err error) {
									if err != nil {
										t.Errorf("re-create: %v", err)
									}
									n()
								})
							},
							func(func()) { then() },
						)
					})
					c.ReadFile("/a/b/f", func(got []byte, err error) {
						if err != nil || !bytes.Equal(got, data2) {
							t.Errorf("read after re-create: %v, %q", err, got)
						}
						if c.StaleRetries != 1 {
							t.Errorf("stale retries %d, want 1", c.StaleRetries)
						}
						next()
					})
				},
				// Without the namenode's token the datanode refuses the
				// read: the client holds no key of its own.
				func(next func()) {
					c.Do(namespace.Request{Method: namespace.MethodGetBlockLocations, Path: "/a/b/f"}, func(r namespace.Response, err error) {
						if err != nil || len(r.Locations) == 0 || len(r.Locations[0].Token) != model.TokenLen {
							t.Errorf("locations without a token: %v %+v", err, r.Locations)
							next()
							return
						}
						l := r.Locations[0]
						c.Datanode(dnAddr).Read(l.Block, l.Stamp, 0, l.Length, func(res model.Result) {
							if res.Status != model.StatusErrorAccessToken {
								t.Errorf("a read with no token: status %v, err %v", res.Status, res.Err)
							}
							next()
						})
					})
				},
				expect(t, c, namespace.Request{Method: namespace.MethodRename, Path: "/a/b", Dst: "/a/b/c"}, namespace.EINVAL, nil),
				expect(t, c, namespace.Request{Method: namespace.MethodRename, Path: "/a/b", Dst: "/c"}, namespace.OK, nil),
				expect(t, c, M(namespace.MethodGetBlockLocations, "/a/b/f"), namespace.ENOENT, nil),
				expect(t, c, M(namespace.MethodGetBlockLocations, "/c/f"), namespace.OK, nil),
				expect(t, c, M(namespace.MethodGetBlockLocations, "/c"), namespace.EISDIR, nil),
				expect(t, c, M(namespace.MethodDelete, "/"), namespace.EINVAL, nil),
				expect(t, c, M(namespace.MethodDelete, "/c"), namespace.OK, nil),
				expect(t, c, M(namespace.MethodList, "/"), namespace.OK, func(r namespace.Response) {
					if len(r.Entries) != 1 || r.Entries[0].Name != "a" {
						t.Errorf("list /: %+v", r.Entries)
					}
				}),
				func(func()) { done = true },
			)
		})
		if !done {
			t.Errorf("%s: the script did not finish", lock)
		}
		if e.nn.Invalidated != 4 {
			t.Errorf("%s: %d blocks invalidated on the datanode, want 4 (3 + 1)", lock, e.nn.Invalidated)
		}
		if n := e.dn.Store(); n == nil {
			t.Fatal("no store")
		}
	}
}

// A delete of a tree hands the datanode client every block of the tree.
// It dials a socket per block deletion, and the namenode started them
// all at once: check --system rpc seeds 175137, 181776 and 242627 deleted
// trees of 6 to 8 blocks and held that many sockets together, over the
// fd-bounds property's few; a tree of 256 blocks took the namenode to its
// fd limit. The deletions now wait their turn, MaxInvalidating at a time,
// and all of them still reach the datanode.
func TestInvalidationBounded(t *testing.T) {
	const files, blocksPerFile = 10, 4
	data := bytes.Repeat([]byte("x"), blocksPerFile*1024)
	var base, peak int
	done := false
	e := start(t, namespace.RWLock, func(w *sim.World, p model.Process, c *namespace.Client) {
		var steps []func(func())
		for i := range files {
			path := "/t/f" + string(rune('a'+i))
			steps = append(steps, func(next func()) {
				c.WriteFile(path, data, 1024, dnAddr, func(err error) {
					if err != nil {
						t.Errorf("write %s: %v", path, err)
					}
					next()
				})
			})
		}
		steps = append(steps,
			func(next func()) {
				// The namenode's fds now: its baseline and this client's
				// rpc connection.
				nnp := w.Process("namenode")
				base = nnp.FDs().Open
				w.AfterEach(func() { peak = max(peak, nnp.FDs().Open-base) })
				next()
			},
			expect(t, c, namespace.Request{Method: namespace.MethodDelete, Path: "/t"}, namespace.OK, nil),
			func(next func()) { p.MainLoop().AfterFunc(100*time.Millisecond, next) },
			func(func()) { done = true },
		)
		seq(t, steps...)
	})
	if !done {
		t.Fatal("the script did not finish")
	}
	if peak == 0 || peak > namespace.MaxInvalidating {
		t.Errorf("the namenode held %d fds over its baseline while deleting %d blocks, want 1 to %d", peak, files*blocksPerFile, namespace.MaxInvalidating)
	}
	if e.nn.Invalidated != files*blocksPerFile || e.nn.InvalidateErrors != 0 {
		t.Errorf("%d blocks invalidated, %d errors, want %d and 0", e.nn.Invalidated, e.nn.InvalidateErrors, files*blocksPerFile)
	}
}
