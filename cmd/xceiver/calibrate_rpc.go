package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// rpcCalls are the calls of one read in hadoop-6713's workload (ls down a
// tree of depth 3 and fanout 4, then getBlockLocations of a file), the
// messages the rpc and namespace costs are timed on.
var rpcCalls = []namespace.Request{
	{Method: namespace.MethodList, Path: "/"},
	{Method: namespace.MethodList, Path: "/d1"},
	{Method: namespace.MethodList, Path: "/d1/d2"},
	{Method: namespace.MethodList, Path: "/d1/d2/d3"},
	{Method: namespace.MethodGetBlockLocations, Path: "/d1/d2/d3/f2"},
}

// rpcCosts times the rpc server's and namespace's own code on rpcCalls:
// what a reader does per call after its read syscall (decode the frame,
// copy it into a call, allocate the call, queue it), what a handler does
// besides the lock and its write (decode the request, run the op on the
// tree, encode the answer, frame it), and issuing a block token. The op's
// time on the tree, less its tokens, is spread over the inodes it visits,
// which a simulated run counts. The namespace runs on a simulated process
// only to have one; its charges are a few ns per op.
func rpcCosts(p *sim.Profile) error {
	p.TokenNs = fastestOp(2000, func() {
		model.IssueToken(model.DefaultTokenKey, model.BlockToken{BlockID: 1 << 30, GenStamp: 1, Modes: model.ModeFor(model.OpReadBlock), Expiry: time.Hour})
	})

	// Frames as a client sends them, back to back in one buffer.
	var wire []byte
	for i, r := range rpcCalls {
		wire = rpc.AppendFrame(wire, rpc.Frame{ID: uint32(i), Code: r.Method, Payload: namespace.EncodeRequest(r)})
	}
	type call struct { // the shape of the reader's call
		conn    *int
		id      uint32
		method  uint8
		payload []byte
	}
	var conn int
	queue := make([]*call, 0, len(rpcCalls))
	var decodeErr error
	p.RPCFrameNs = fastestOp(2000, func() {
		queue = queue[:0]
		for off := 0; off < len(wire); {
			f, n, err := rpc.DecodeFrame(wire[off:], rpc.DefaultMaxFrame)
			if err != nil {
				decodeErr = err
				return
			}
			off += n
			queue = append(queue, &call{conn: &conn, id: f.ID, method: f.Code, payload: append([]byte(nil), f.Payload...)})
		}
	}) / float64(len(rpcCalls))
	if decodeErr != nil {
		return fmt.Errorf("rpc frames: %w", decodeErr)
	}

	// The namespace, with the inode cost at 1 ns and every other cost 0,
	// so the process's CPU time counts inode visits.
	cfg := sim.DefaultConfig(1)
	cfg.HostCores = 0
	cfg.CPU = sim.CPUConfig{Inode: time.Nanosecond}
	w := sim.New(cfg)
	var (
		ns      *namespace.Namespace
		sp      model.Process
		nsErr   error
		answers []namespace.Response
	)
	_, err := w.Spawn("namenode", model.ProcessConfig{}, func(pr model.Process) {
		sp = pr
		if ns, nsErr = namespace.New(pr, namespace.Config{Lock: namespace.RWLock, Datanode: "datanode:50010"}); nsErr != nil {
			return
		}
		nsErr = populateTree(ns, 3, 4, 4)
	})
	if err == nil {
		err = w.Run(time.Second)
	}
	if err = errors.Join(err, nsErr); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	payloads := make([][]byte, len(rpcCalls))
	for i, r := range rpcCalls {
		payloads[i] = namespace.EncodeRequest(r)
		resp, code := ns.Apply(r)
		if code != namespace.OK {
			return fmt.Errorf("namespace: %s %s: %v", namespace.MethodName(r.Method), r.Path, code)
		}
		answers = append(answers, resp)
	}
	tokens := 0
	for _, a := range answers {
		tokens += len(a.Locations)
	}
	// Inode visits of one pass, counted in a callback of their own.
	before := sp.(*sim.Process).CPUTime()
	sp.MainLoop().Post(func() {
		for _, r := range rpcCalls {
			ns.Apply(r)
		}
	})
	if err := w.Run(time.Second); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	visits := int64(sp.(*sim.Process).CPUTime() - before)
	if visits <= 0 {
		return errors.New("namespace: no inode visits counted")
	}
	apply := fastestOp(2000, func() {
		for _, r := range rpcCalls {
			ns.Apply(r)
		}
	})
	p.InodeNs = max(apply-float64(tokens)*p.TokenNs, 0) / float64(visits)

	// Per message: a request decoded, an answer encoded and framed.
	p.ParseNs = fastestOp(2000, func() {
		for i, r := range rpcCalls {
			if _, ok := namespace.DecodeRequest(r.Method, payloads[i]); !ok {
				decodeErr = fmt.Errorf("request %d does not decode", i)
			}
			b := namespace.EncodeResponse(r.Method, answers[i])
			rpc.AppendFrame(make([]byte, 0, rpc.FrameLen(len(b))), rpc.Frame{ID: uint32(i), Code: uint8(rpc.StatusOK), Payload: b})
		}
	}) / float64(3*len(rpcCalls))
	if decodeErr != nil {
		return fmt.Errorf("namespace: %w", decodeErr)
	}
	return nil
}

// fastestOp times f over n calls in 21 batches and returns the fastest
// batch's time per call, in ns. These costs are pure computation, which
// other processes on a shared machine can only slow down (a batch they
// preempt), so the fastest batch is the best estimate of the cost.
func fastestOp(n int, f func()) float64 {
	best := math.Inf(1)
	for range 21 {
		start := time.Now()
		for range n {
			f()
		}
		best = min(best, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	return best
}

// populateTree builds hadoop-6713's tree: depth levels of fanout
// directories, files files of one block each in every leaf.
func populateTree(ns *namespace.Namespace, depth, fanout, files int) error {
	var walk func(dir string, d int) error
	walk = func(dir string, d int) error {
		if d == depth {
			for f := 0; f < files; f++ {
				path := fmt.Sprintf("%s/f%d", dir, f)
				resp, code := ns.Apply(namespace.Request{Method: namespace.MethodCreate, Path: path, Blocks: 1})
				if code != namespace.OK {
					return fmt.Errorf("create %s: %v", path, code)
				}
				done := []namespace.Location{{Block: resp.Blocks[0], Stamp: 1, Length: 4096}}
				if _, code := ns.Apply(namespace.Request{Method: namespace.MethodComplete, Path: path, Done: done}); code != namespace.OK {
					return fmt.Errorf("complete %s: %v", path, code)
				}
			}
			return nil
		}
		for i := 0; i < fanout; i++ {
			sub := fmt.Sprintf("%s/d%d", dir, i)
			if _, code := ns.Apply(namespace.Request{Method: namespace.MethodMkdir, Path: sub}); code != namespace.OK {
				return fmt.Errorf("mkdir %s: %v", sub, code)
			}
			if err := walk(sub, d+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk("", 0)
}
