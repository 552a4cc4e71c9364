// Package abuse drives hostile peers against a datanode, written once
// against the world seam: issue 9's regression tests run the same attacks
// in both worlds, and real/'s abuse benchmark runs them at scale.
package abuse

import (
	"errors"
	"fmt"
	"time"

	"xceiver/model"
)

// Kind is what a hostile peer does.
type Kind string

// Hostile peer kinds.
const (
	Idle         Kind = "idle"          // connects and sends nothing
	Announce     Kind = "announce"      // announces a write of Length bytes and sends no data
	AnnounceQuit Kind = "announce-quit" // announces a write, then closes
	NonReader    Kind = "nonreader"     // reads Length bytes of Block and never reads the answer
	Quitter      Kind = "quitter"       // reads Block, then closes at once
	QuitterTail  Kind = "quitter-tail"  // reads Block, pipelines more junk than a read waiting for a handle buffers, then closes
	Drip         Kind = "drip"          // a read request one byte every Every, never the last byte (slowloris)
	Hoard        Kind = "hoard"         // announces a write of Length bytes, sends a little over half of its data and holds
	HoardQuit    Kind = "hoard-quit"    // announces a write of Length bytes, sends a quarter of its data, and closes once told to (Peers.Quit)
	Garbage      Kind = "garbage"       // bytes that are no request
)

// Attack is Count peers of one kind.
type Attack struct {
	Kind   Kind
	Count  int
	Block  uint64
	Length int64
	Every  time.Duration // Drip's period
	At     time.Duration // when the peers connect, after the attack starts
}

// Peers are one process's hostile connections.
type Peers struct {
	p     model.Process
	loop  model.Loop
	addr  string
	conns []*peer
	// Failed counts dials that failed (the process's fds ran out).
	Failed int
	// Reads and ReadErrs count a well-behaved client's reads that
	// completed, and those that failed (Scenario.Reads).
	Reads, ReadErrs int
	// quit: hoard-quit peers close once they have sent their data.
	quit bool
}

type peer struct {
	a       Attack
	c       model.Conn
	msg     []byte
	sent    int
	started bool
	closed  bool
	timer   model.Timer // a drip's next byte
}

// Start connects the attacks' peers from p (on its main loop) to addr.
func Start(p model.Process, addr string, attacks ...Attack) *Peers {
	ps := &Peers{p: p, loop: p.MainLoop(), addr: addr}
	for _, a := range attacks {
		if a.At > 0 {
			ps.loop.AfterFunc(a.At, func() { ps.dial(a) })
			continue
		}
		ps.dial(a)
	}
	return ps
}

func (ps *Peers) dial(a Attack) {
	for i := 0; i < a.Count; i++ {
		pr := &peer{a: a, msg: message(a, i)}
		c, err := ps.p.Dial("tcp", ps.addr, ps.loop, func(ev model.Events) { ps.event(pr, ev) })
		if err != nil {
			ps.Failed++
			continue
		}
		pr.c = c
		c.SetWriteInterest(true)
		c.SetReadInterest(false) // hostile peers never read
		ps.conns = append(ps.conns, pr)
	}
}

// Token is a valid token for every op on block: hostile peers here are
// clients the namenode trusts, gone bad.
func Token(block uint64) []byte {
	return model.IssueToken(model.DefaultTokenKey, model.BlockToken{BlockID: block,
		Modes: model.ModeRead | model.ModeWrite | model.ModeReplace | model.ModeDelete, Expiry: model.DefaultTokenLifetime})
}

func message(a Attack, i int) []byte {
	switch a.Kind {
	case Announce, AnnounceQuit:
		b := 1<<40 + uint64(i)
		return model.AppendRequest(nil, model.Request{Op: model.OpWriteBlock, BlockID: b, Length: a.Length, Token: Token(b)})
	case NonReader, Quitter:
		return model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: a.Block, Length: a.Length, Token: Token(a.Block)})
	case QuitterTail:
		msg := model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: a.Block, Length: a.Length, Token: Token(a.Block)})
		return append(msg, model.BlockContent(uint64(i), 2*(model.MaxRequestLen+64))...)
	case Drip:
		return model.AppendRequest(nil, model.Request{Op: model.OpReadBlock, BlockID: a.Block, Length: a.Length,
			ClientName: string(model.BlockContent(uint64(i), model.MaxClientNameLen)), Token: Token(a.Block)})
	case Garbage:
		return []byte(fmt.Sprintf("GET /%d HTTP/1.0\r\n\r\n", i))
	case Hoard, HoardQuit:
		b := 1<<40 + 1<<20 + uint64(i)
		if a.Kind == HoardQuit {
			b += 1 << 10
		}
		msg := model.AppendRequest(nil, model.Request{Op: model.OpWriteBlock, BlockID: b, Length: a.Length, Token: Token(b)})
		send := a.Length/2 + hoardPacket
		if a.Kind == HoardQuit {
			send = a.Length / 4
		}
		return AppendPackets(msg, model.BlockContent(b, int(min(send, a.Length))), hoardPacket)
	}
	return nil
}

// hoardPacket is the data of a hoarding peer's packets.
const hoardPacket = 16 << 10

// AppendPackets appends data to msg as the first packets of a write, of
// size bytes of data each (the last may be shorter), none marked last:
// what a hoarding peer sends before it stops.
func AppendPackets(msg, data []byte, size int) []byte {
	for off := 0; off < len(data); off += size {
		end := min(off+size, len(data))
		msg = model.AppendPacket(msg, model.PacketHeader{Offset: int64(off), Seqno: int64(off / size)}, data[off:end], model.BytesPerChecksum)
	}
	return msg
}

func (ps *Peers) event(pr *peer, ev model.Events) {
	if pr.closed {
		return
	}
	if ev&model.Hangup != 0 && pr.c.Err() != nil {
		ps.close(pr)
		return
	}
	if ev&model.Writable == 0 {
		return
	}
	if !pr.started {
		pr.started = true
		pr.c.SetWriteInterest(false)
		if pr.a.Kind == Drip {
			ps.drip(pr)
			return
		}
	}
	for pr.sent < len(pr.msg) {
		n, err := pr.c.Write(pr.msg[pr.sent:])
		if errors.Is(err, model.ErrWouldBlock) {
			pr.c.SetWriteInterest(true)
			return
		}
		if err != nil {
			ps.close(pr)
			return
		}
		pr.sent += n
	}
	pr.c.SetWriteInterest(false)
	switch pr.a.Kind {
	case Quitter, QuitterTail, AnnounceQuit:
		ps.close(pr)
	case HoardQuit:
		if ps.quit {
			ps.close(pr)
		}
	}
}

func (ps *Peers) drip(pr *peer) {
	if pr.closed || pr.sent >= len(pr.msg)-1 {
		return
	}
	if n, err := pr.c.Write(pr.msg[pr.sent : pr.sent+1]); err == nil {
		pr.sent += n
	}
	pr.timer = ps.loop.AfterFunc(pr.a.Every, func() { ps.drip(pr) })
}

func (ps *Peers) close(pr *peer) {
	if pr.closed {
		return
	}
	pr.closed = true
	if pr.timer != nil {
		pr.timer.Stop()
	}
	_ = pr.c.Close()
}

// Quit tells the hoard-quit peers to close, from any loop: on the peers'
// loop, each closes at once if it has sent its data, else once it has
// (and one not yet dialed, once it has sent its).
func (ps *Peers) Quit() {
	ps.loop.Post(func() {
		ps.quit = true
		for _, pr := range ps.conns {
			if pr.a.Kind == HoardQuit && pr.sent == len(pr.msg) {
				ps.close(pr)
			}
		}
	})
}

// Open is the number of peers still connected (as far as they know).
func (ps *Peers) Open() int {
	n := 0
	for _, pr := range ps.conns {
		if !pr.closed {
			n++
		}
	}
	return n
}

// Close closes every peer's connection (on the peers' loop).
func (ps *Peers) Close() {
	for _, pr := range ps.conns {
		ps.close(pr)
	}
}

// Memory sums what the datanode's connections buffer, as VisitMemory
// reports it: in all, as write data, and in connections already closed.
type Memory struct {
	Buffered, WriteData, Closed int
	Conns                       int
}

// MemoryOf reads dn's buffers. Call it on dn's acceptor loop while its
// connections are idle (in the real world, only then are their fields
// safe to read).
func MemoryOf(dn *model.Datanode) Memory {
	var m Memory
	dn.VisitMemory(func(c model.ConnMemory) {
		m.Conns++
		m.Buffered += c.Buffered
		m.WriteData += c.WriteData
		if c.Closed {
			m.Closed += c.Buffered
		}
	})
	return m
}

// Scenario is a datanode with some blocks under attack.
type Scenario struct {
	Datanode model.DatanodeConfig
	FDLimit  int            // the datanode process's (0: the world's default)
	Blocks   map[uint64]int // block id → size
	Attacks  []Attack
	// Then runs on the datanode's loop at each step: After[i] after the
	// previous one ran (the first after the attacks started); the last
	// step ends the scenario.
	After []time.Duration
	Then  func(step int, dn *model.Datanode, peers *Peers)
	// Reads are blocks a well-behaved client reads (whole), one after
	// the other, starting ReadsAt after the attacks.
	Reads   []uint64
	ReadsAt time.Duration
}

// Run runs s in w: it spawns the datanode and the attackers, runs Then at
// each step, then stops the datanode and the world. limit bounds the run
// in world time.
func Run(w model.World, s Scenario, limit time.Duration) error {
	if s.Datanode.Dir == "" {
		s.Datanode.Dir = "data"
	}
	if s.Datanode.Addr == "" {
		s.Datanode.Addr = "datanode:50010"
		if w.Kind() == "real" {
			s.Datanode.Addr = "127.0.0.1:0"
		}
	}
	_, err := w.Spawn("datanode", model.ProcessConfig{FDLimit: s.FDLimit}, func(p model.Process) {
		store := model.NewBlockStore(p.Disk(), s.Datanode.Dir)
		for id := uint64(1); id <= uint64(len(s.Blocks))+64; id++ {
			if size, ok := s.Blocks[id]; ok {
				if _, err := store.WriteShared(id, model.BlockContent(id, size)); err != nil {
					w.Fail(err)
					return
				}
			}
		}
		dn, err := model.StartDatanode(p, p.MainLoop(), s.Datanode)
		if err != nil {
			w.Fail(err)
			return
		}
		_, err = w.Spawn("attacker", model.ProcessConfig{FDLimit: 1 << 16}, func(ap model.Process) {
			peers := Start(ap, dn.Addr(), s.Attacks...)
			if len(s.Reads) > 0 {
				cl, err := model.NewClient(ap, ap.MainLoop(), 1, model.ClientConfig{Datanode: dn.Addr(), NoDelay: true, Timeout: 5 * time.Second})
				if err != nil {
					w.Fail(err)
					return
				}
				var next func(i int)
				next = func(i int) {
					if i == len(s.Reads) {
						cl.Close()
						return
					}
					cl.Read(s.Reads[i], 0, 0, int64(s.Blocks[s.Reads[i]]), func(r model.Result) {
						if r.Err != nil {
							peers.ReadErrs++
						} else {
							peers.Reads++
						}
						next(i + 1)
					})
				}
				ap.MainLoop().AfterFunc(s.ReadsAt, func() { next(0) })
			}
			// Each step is armed when the one before has run: After[i]
			// counts from step i-1, however late its loop ran it.
			var step func(i int)
			step = func(i int) {
				p.MainLoop().AfterFunc(s.After[i], func() {
					s.Then(i, dn, peers)
					if i < len(s.After)-1 {
						step(i + 1)
						return
					}
					ap.MainLoop().Post(peers.Close)
					dn.Stop()
					p.MainLoop().AfterFunc(50*time.Millisecond, w.Stop)
				})
			}
			if len(s.After) > 0 {
				p.MainLoop().Post(func() { step(0) })
			}
		})
		if err != nil {
			w.Fail(err)
		}
	})
	if err != nil {
		return err
	}
	return w.Run(limit)
}
