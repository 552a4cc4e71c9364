package model

import "time"

// Operation is one client op as the history checker sees it: what was
// asked, when it was called and when it returned, and what came back.
type Operation struct {
	Client int
	Kind   Op
	Block  uint64
	Stamp  uint64 // requested (reads)
	Off    int64
	Len    int64
	Input  []byte // data written
	Call   time.Duration
	Return time.Duration
	Done   bool // returned; false means still in flight (outcome unknown)
	Result Result
}

// History records a client's ops in call order. Each client keeps its own
// (a client's ops all run on its loop), and the checker merges them.
type History struct {
	Ops []Operation
}

func (h *History) call(client int, op *clientOp, now time.Duration) int {
	h.Ops = append(h.Ops, Operation{
		Client: client, Kind: op.kind, Block: op.block, Stamp: op.stamp,
		Off: op.off, Len: op.n, Input: op.data, Call: now,
	})
	return len(h.Ops) - 1
}

func (h *History) ret(i int, r Result, now time.Duration) {
	o := &h.Ops[i]
	o.Return, o.Done, o.Result = now, true, r
}
