package properties

import (
	"errors"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// fakeSCDatanode listens on the datanode's domain socket in its own
// process: serve gets each connection's bytes so far (it may consume
// them) each time more arrive; a connection the peer ends is closed.
func fakeSCDatanode(t *testing.T, w *sim.World, serve func(p model.Process, c model.Conn, in *[]byte)) {
	t.Helper()
	if _, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		ln, err := p.Listen("unix", "/run/dn_socket", 0, p.MainLoop())
		if err != nil {
			w.Fail(err)
			return
		}
		ln.SetHandler(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				in := new([]byte)
				c.SetHandler(p.MainLoop(), func(model.Events) {
					var b [4096]byte
					n, err := c.Read(b[:])
					*in = append(*in, b[:n]...)
					if err != nil && !errors.Is(err, model.ErrWouldBlock) {
						_ = c.Close() // the rogue let go
						return
					}
					serve(p, c, in)
				})
			}
		})
	}); err != nil {
		t.Fatal(err)
	}
}

// runSCRogue runs one rogue attack of kind on w until the rogue lets go,
// and returns the fds and segments it counts received and its failures.
func runSCRogue(t *testing.T, w *sim.World, kind string) (fds, segs int, failed []string) {
	t.Helper()
	if _, err := w.Spawn("rogue", model.ProcessConfig{}, func(p model.Process) {
		r := &scRogue{p: p, loop: p.MainLoop(), block: 1, hold: 100 * time.Millisecond,
			fail:     func(format string, a ...any) { failed = append(failed, format) },
			faulted:  func() bool { return false },
			received: func(f, s int) { fds, segs = fds+f, segs+s },
			done:     w.Stop}
		p.MainLoop().AfterFunc(time.Millisecond, func() { r.run(kind) })
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	return fds, segs, failed
}

// A rogue counts a segment only when the datanode grants one: an error
// answer to its second segment request that carries an fd is no segment,
// so sc-stats, comparing the datanode's count with what was received,
// sees the datanode count one the rogue was refused. A fake datanode
// grants the first segment and refuses the second with an fd attached.
func TestSCRogueCountsOnlyGrantedSegments(t *testing.T) {
	w := sim.New(worldConfig(1, 0, unhashed))
	answered := 0
	fakeSCDatanode(t, w, func(p model.Process, c model.Conn, in *[]byte) {
		for {
			req, used, err := shortcircuit.DecodeRequest(*in)
			if errors.Is(err, model.ErrNeedMore) {
				return
			}
			if err != nil || req.Op != shortcircuit.OpRequestShm {
				w.Fail(errors.New("the rogue sent no segment request"))
				return
			}
			*in = (*in)[used:]
			_, f, err := p.NewSegment("shm", shortcircuit.SegmentSize)
			if err != nil {
				w.Fail(err)
				return
			}
			resp := shortcircuit.Response{Status: model.StatusSuccess, ShmID: 1}
			if answered++; answered > 1 {
				resp = shortcircuit.Response{Status: model.StatusError, Message: "one segment per connection"}
			}
			if _, err := c.SendFDs(shortcircuit.AppendResponse(nil, resp), []model.File{f}); err != nil {
				w.Fail(err)
				return
			}
		}
	})
	fds, segs, failed := runSCRogue(t, w, "second-segment")
	if answered != 2 || len(failed) > 0 {
		t.Fatalf("the fake datanode answered %d segment requests, the rogue failed %q: want 2 and none", answered, failed)
	}
	if fds != 0 || segs != 1 {
		t.Errorf("the rogue counts %d fds and %d segments received: want 0 and 1 (the second was refused)", fds, segs)
	}
}

// Each attack on the wire format sends what its kind says: a request the
// decoder refuses for that reason, which sc-refusal then wants refused;
// an attack that came out well formed would test the slot registry
// instead (as no-segment does), and sc-refusal would pass it just the
// same. A fake datanode that never answers keeps what the rogue sent.
func TestSCRogueWireAttacksAreMalformed(t *testing.T) {
	for _, tc := range []struct{ kind, err string }{
		{"version", "protocol version"},
		{"op", "is not a short-circuit op"},
		{"huge-body", "body of 2049 bytes outside"},
		{"tiny-body", "body of 31 bytes outside"},
		{"long-token", "token of 1025 bytes exceeds"},
		{"long-name", "client name of 257 bytes exceeds"},
		{"trailing", "3 trailing bytes"},
		{"token-overrun", "ends inside the token"},
		{"name-cut", "ends before the client name length"},
		{"bad-token", ""},
		{"no-segment", ""},
	} {
		w := sim.New(worldConfig(1, 0, unhashed))
		var sent []*[]byte
		fakeSCDatanode(t, w, func(_ model.Process, _ model.Conn, in *[]byte) {
			if len(sent) == 0 || sent[len(sent)-1] != in {
				sent = append(sent, in)
			}
		})
		runSCRogue(t, w, tc.kind)
		if len(sent) != 1 {
			t.Errorf("rogue %q: %d connections sent bytes, want 1", tc.kind, len(sent))
			continue
		}
		_, n, err := shortcircuit.DecodeRequest(*sent[0])
		switch {
		case tc.err == "" && (err != nil || n != len(*sent[0])):
			t.Errorf("rogue %q: sent %d bytes: %v after %d, want one request", tc.kind, len(*sent[0]), err, n)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("rogue %q: decoding what it sent: %v, want an error saying %q", tc.kind, err, tc.err)
		}
	}
}
