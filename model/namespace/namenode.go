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
}

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
	for _, b := range blocks {
		nn.dn.Delete(b, func(r model.Result) {
			if r.Err != nil {
				// Never written (a create that did not complete), or the
				// datanode is down: either way nothing stale is served by
				// id, since ids are never reused.
				nn.InvalidateErrors++
				return
			}
			nn.Invalidated++
		})
	}
}

// Close closes the namenode's datanode client (its cached connections)
// and its edit log.
func (nn *Namenode) Close() {
	if nn.dn != nil {
		nn.dn.Close()
	}
	nn.NS.Close()
}
