package sim

import (
	"fmt"

	"xceiver/model"
)

// socketEvents is what a simulated socket shares with epoll: the loop and
// handler it reports to, which events the model wants, and whether a
// callback is already queued. Reporting is level-triggered, except that a
// dead connection is reported once, as in the real world, so model code
// that ignores a hangup cannot make a loop spin.
type socketEvents struct {
	src            eventSource
	tcp            *tcpConn // src, when it is a TCP socket: called directly, the common case
	loop           *Loop
	handler        model.Handler
	readInterest   bool
	writeInterest  bool
	closedInterest bool
	queued         bool
	hupDone        bool
	// connected: a connect just completed, reported as Writable once
	// whatever the write interest (model.Process.Dial; real registers
	// EPOLLOUT while connecting).
	connected bool
	// calls counts the reads and writes made on the socket; idle, the
	// callbacks in a row that made none while what they were told of
	// stays wanted (Config.SpinLimit).
	calls uint64
	idle  int
}

// DefaultSpinLimit is Config.SpinLimit as check sets it: how many
// callbacks in a row may leave a socket's readiness as they found it
// without a read or a write on it. Readiness is level-triggered, so each
// comes back at once: a loop that ignores what it asked to hear spins,
// burning a core in the real world for as long as it ignores it. A few in
// a row are a handler waiting a turn for something else; this many is a
// spin.
const DefaultSpinLimit = 1000

// eventSource is a socket as socketEvents sees it.
type eventSource interface {
	// readiness is the socket's current state as events.
	readiness() model.Events
	// fdOpen reports whether the socket still has an fd (a closed fd gets
	// no events).
	fdOpen() bool
	readyConn
}

func (s *socketEvents) SetHandler(loop model.Loop, h model.Handler) {
	l, ok := loop.(*Loop)
	if !ok {
		return
	}
	if l.closed {
		// Misuse the real world fails on (its epoll is gone): a model
		// that did it would pass here and fail there.
		l.p.w.Fail(fmt.Errorf("process %s: SetHandler on closed loop %s", l.p.name, l.name))
		return
	}
	if s.loop != l {
		s.queued = false
	}
	// Hangup is told once to each handler set (as epoll reports a dead
	// socket to a fresh registration): a new owner of a dead socket
	// hears it too.
	s.loop, s.handler, s.hupDone = l, h, false
	s.notify()
}

func (s *socketEvents) SetWriteInterest(on bool) {
	s.writeInterest = on
	if on {
		s.notify()
	}
}

func (s *socketEvents) SetReadInterest(on bool) {
	s.readInterest = on
	if on {
		s.notify()
	}
}

func (s *socketEvents) SetPeerClosedInterest(on bool) {
	s.closedInterest = on
	if on {
		s.notify()
	}
}

// wanted is the socket's readiness that the model asked for.
func (s *socketEvents) wanted() model.Events {
	if s.hupDone {
		return 0
	}
	mask := model.Hangup
	if s.readInterest {
		mask |= model.Readable
	}
	if s.writeInterest || s.connected {
		mask |= model.Writable
	}
	if s.closedInterest {
		mask |= model.PeerClosed
	}
	if s.tcp != nil {
		return s.tcp.readiness() & mask
	}
	return s.src.readiness() & mask
}

func (s *socketEvents) fdOpen() bool {
	if s.tcp != nil {
		return !s.tcp.fdClosed
	}
	return s.src.fdOpen()
}

// notify queues a readiness callback on the socket's loop when the
// handler has something to see.
func (s *socketEvents) notify() {
	if s.queued || s.handler == nil || s.loop == nil || !s.fdOpen() {
		return
	}
	if s.wanted() == 0 {
		return
	}
	s.queued = true
	s.loop.enqueue(task{conn: s.src})
}

// notifyReadable is notify for a TCP socket that has just queued data:
// with read interest on, what it wants is Readable, so it need not be
// worked out.
func (c *tcpConn) notifyReadable() {
	if !c.readInterest || c.hupDone {
		c.notify()
		return
	}
	if c.queued || c.handler == nil || c.loop == nil || c.fdClosed {
		return
	}
	c.queued = true
	c.loop.enqueue(task{conn: c})
}

// dispatch runs the handler with what is ready now, then re-arms.
func (s *socketEvents) dispatch() {
	if s.loop == nil || s.loop.p.w.running != &s.loop.thread {
		// Queued on a loop the socket has since left (SetHandler
		// queued it on the new one): dropped, as EPOLL_CTL_DEL takes a
		// socket off the old epoll's ready list.
		return
	}
	s.queued = false
	if s.handler == nil || !s.fdOpen() {
		return
	}
	ev := s.wanted()
	if ev == 0 {
		return
	}
	s.connected = false
	if ev&model.Hangup != 0 {
		// Before the call, as the real world marks it: a handler that
		// hands the socket over (SetHandler) re-arms it for the new
		// owner, which this would otherwise undo.
		s.hupDone = true
	}
	calls, l := s.calls, s.loop
	s.handler(ev)
	if lim := l.p.w.cfg.SpinLimit; lim > 0 {
		if s.calls == calls && s.handler != nil && s.fdOpen() && s.wanted() == ev {
			if s.idle++; s.idle == lim {
				l.p.w.Fail(fmt.Errorf("process %s: loop %s spins: its handler was called %d times in a row with %s ready and neither read nor wrote", l.p.name, l.name, lim, ev))
			}
		} else {
			s.idle = 0
		}
	}
	s.notify()
}
