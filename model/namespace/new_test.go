package namespace_test

import (
	"errors"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/sim"
)

// New refuses a lock it does not know, as ParseLockKind does, and makes
// no namespace for it.
func TestNewRefusesUnknownLock(t *testing.T) {
	inNamenode(t, model.ProcessConfig{}, func(p model.Process) {
		if ns, err := namespace.New(p, namespace.Config{Lock: "spin"}); err == nil || ns != nil {
			t.Errorf("lock spin: New made %v, error %v; want refused", ns != nil, err)
		}
	})
}

// inNamenode runs f in a namenode process of cfg, in a world of its own,
// and fails the test if it never ran.
func inNamenode(t *testing.T, cfg model.ProcessConfig, f func(p model.Process)) {
	t.Helper()
	w := sim.New(sim.DefaultConfig(1))
	ran := false
	_, err := w.Spawn("namenode", cfg, func(p model.Process) {
		ran = true
		f(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the namenode process never ran")
	}
}

// A namespace whose edit log cannot be opened is refused, never made
// without its log (whose changes would be answered and never durable):
// at the fd limit the log's file cannot be opened (room for none), or its
// file opens and its loop (an epoll and an eventfd) cannot be made (room
// for one), when the file is closed again.
func TestNewRefusesEditLogItCannotOpen(t *testing.T) {
	for _, room := range []int{0, 1} {
		// The main loop holds two fds (an epoll and an eventfd).
		inNamenode(t, model.ProcessConfig{FDLimit: 2 + room}, func(p model.Process) {
			before := p.FDs().Open
			if before != 2 {
				t.Errorf("room %d: the process holds %d fds at the start, want its main loop's 2", room, before)
			}
			ns, err := namespace.New(p, namespace.Config{EditLog: "edits"})
			if err == nil || !errors.Is(err, model.ErrTooManyFiles) {
				t.Errorf("room %d for fds: New made %v, error %v; want EMFILE", room, ns != nil, err)
			}
			if ns != nil {
				ns.Close()
			}
			if n := p.FDs().Open; n != before {
				t.Errorf("room %d for fds: %d fds open after the refusal, want %d", room, n, before)
			}
		})
	}
}
