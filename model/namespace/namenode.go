package namespace

import (
	"fmt"

	"xceiver/model"
	"xceiver/model/rpc"
)

// NamenodeConfig configures a namenode: its namespace, its rpc server, and
// how it reaches the datanode to delete the blocks of deleted files.
type NamenodeConfig struct {
	Namespace Config
	RPC       rpc.ServerConfig
	// Datanode configures the namenode's datanode client, which deletes
	// invalidated blocks; with no address, blocks are left in place.
	Datanode model.ClientConfig
	// Image, if set, loads the namespace the edit log continues (HDFS's
	// fsimage) before the log is replayed.
	Image func(*Namespace)
}

// Namenode is a namespace behind an rpc server.
type Namenode struct {
	NS     *Namespace
	Server *rpc.Server
	dn     *model.Client
	loop   model.Loop
	// Invalidated and InvalidateErrors count block deletions sent to the
	// datanode (on loop).
	Invalidated, InvalidateErrors int
	// The blocks waiting to be deleted on the datanode, oldest first, and
	// how many deletions are in flight (at most MaxInvalidating).
	invQueue  []uint64
	invFlight int
	invPump   bool
	closed    bool
}

// MaxInvalidating bounds the block deletions the namenode has in flight
// to the datanode; the rest wait their turn. Each deletion holds a socket
// of its own (the datanode client dials one per delete), so without a
// bound a delete of a tree opened one socket per block at once — its fds
// grew with the tree, not with its clients, up to the process's limit.
// HDFS bounds the same work (dfs.block.invalidate.limit blocks a
// datanode is handed per heartbeat).
const MaxInvalidating = 4

// StartNamenode starts a namenode on p with loop as its acceptor.
func StartNamenode(p model.Process, loop model.Loop, cfg NamenodeConfig) (*Namenode, error) {
	if cfg.Namespace.Datanode == "" {
		cfg.Namespace.Datanode = cfg.Datanode.Datanode
	}
	ns, err := New(p, cfg.Namespace)
	if err != nil {
		return nil, err
	}
	if cfg.Image != nil {
		cfg.Image(ns)
	}
	if _, err := ns.Replay(); err != nil {
		ns.Close()
		return nil, fmt.Errorf("namenode: %w", err)
	}
	nn := &Namenode{NS: ns, loop: loop}
	if cfg.Datanode.Datanode != "" {
		if cfg.Datanode.Name == "" {
			cfg.Datanode.Name = "namenode"
		}
		if nn.dn, err = model.NewClient(p, loop, 0, cfg.Datanode); err != nil {
			return nil, fmt.Errorf("namenode: %w", err)
		}
		ns.Invalidate = func(blocks []uint64) { loop.Post(func() { nn.invalidate(blocks) }) }
	}
	if nn.Server, err = rpc.StartServer(p, loop, ns, cfg.RPC); err != nil {
		return nil, fmt.Errorf("namenode: %w", err)
	}
	return nn, nil
}

func (nn *Namenode) invalidate(blocks []uint64) {
	if nn.closed {
		nn.InvalidateErrors += len(blocks)
		return
	}
	nn.invQueue = append(nn.invQueue, blocks...)
	nn.pumpInvalidate()
}

// pumpInvalidate starts queued deletions while fewer than MaxInvalidating
// are in flight. A deletion that ends at once (its dial fails) comes back
// here while the loop below runs; the flag keeps that from nesting.
func (nn *Namenode) pumpInvalidate() {
	if nn.invPump {
		return
	}
	nn.invPump = true
	for nn.invFlight < MaxInvalidating && len(nn.invQueue) > 0 {
		b := nn.invQueue[0]
		nn.invQueue = nn.invQueue[1:]
		nn.invFlight++
		nn.dn.Delete(b, nn.invalidated)
	}
	if len(nn.invQueue) == 0 {
		nn.invQueue = nil
	}
	nn.invPump = false
}

func (nn *Namenode) invalidated(r model.Result) {
	nn.invFlight--
	if r.Err != nil {
		// Never written (a create that did not complete), or the
		// datanode is down: either way nothing stale is served by id,
		// since ids are never reused.
		nn.InvalidateErrors++
	} else {
		nn.Invalidated++
	}
	nn.pumpInvalidate()
}

// Invalidating is how many block deletions are queued or in flight to the
// datanode (on loop).
func (nn *Namenode) Invalidating() int { return len(nn.invQueue) + nn.invFlight }

// Close closes the namenode's datanode client (its cached connections)
// and its edit log. Deletions in flight finish; those still queued are
// dropped (counted in InvalidateErrors), their blocks left in place as a
// stopped HDFS namenode's pending invalidations are.
func (nn *Namenode) Close() {
	nn.closed = true
	nn.InvalidateErrors += len(nn.invQueue)
	nn.invQueue = nil
	if nn.dn != nil {
		nn.dn.Close()
	}
	nn.NS.Close()
}
