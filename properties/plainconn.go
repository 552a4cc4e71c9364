package properties

import "xceiver/model"

// plainWorld is a world whose processes' connections offer model.Conn and
// SharedWriter but not sim's ViewReader, as real's connections do not: a
// tcp-pattern run on it takes model.ReadView's path for any other Conn
// (Read into the buffer), which check would otherwise never run. Sim's
// ReadView costs what Read does, so a run's events are the same either way.
type plainWorld struct{ model.World }

func (w plainWorld) Spawn(name string, cfg model.ProcessConfig, main func(model.Process)) (model.Process, error) {
	p, err := w.World.Spawn(name, cfg, func(p model.Process) { main(plainProcess{p}) })
	if p != nil {
		p = plainProcess{p}
	}
	return p, err
}

// plainProcess hands out plain connections; the buffer hooks of the
// process it wraps (BufferSource, BufferFaults) pass through.
type plainProcess struct{ model.Process }

func (p plainProcess) Dial(network, addr string, loop model.Loop, h model.Handler) (model.Conn, error) {
	c, err := p.Process.Dial(network, addr, loop, h)
	return plainConnOf(c), err
}

func (p plainProcess) Listen(network, addr string, backlog int, loop model.Loop) (model.Listener, error) {
	ln, err := p.Process.Listen(network, addr, backlog, loop)
	if ln != nil {
		ln = plainListener{ln}
	}
	return ln, err
}

func (p plainProcess) NewBuffer(n int) []byte {
	if bs, ok := p.Process.(model.BufferSource); ok {
		return bs.NewBuffer(n)
	}
	return make([]byte, 0, n)
}

func (p plainProcess) InFlight(b []byte) {
	if bf, ok := p.Process.(model.BufferFaults); ok {
		bf.InFlight(b)
	}
}

func (p plainProcess) Freed(b []byte) {
	if bf, ok := p.Process.(model.BufferFaults); ok {
		bf.Freed(b)
	}
}

type plainListener struct{ model.Listener }

func (ln plainListener) Accept() (model.Conn, error) {
	c, err := ln.Listener.Accept()
	return plainConnOf(c), err
}

// plainConn is a Conn without ReadView; WriteShared passes through (the
// shared-write check holds tcp-pattern's reply to it).
type plainConn struct{ model.Conn }

func plainConnOf(c model.Conn) model.Conn {
	if c == nil {
		return nil
	}
	return plainConn{c}
}

func (c plainConn) WriteShared(p []byte) (int, error) { return model.WriteShared(c.Conn, p) }
