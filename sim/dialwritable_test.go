package sim

import (
	"testing"
	"time"

	"xceiver/model"
)

func TestDialReportsWritableOnce(t *testing.T) {
	w := New(DefaultConfig(1))
	w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
		ln, _ := p.Listen("tcp", "s:1", 0, p.MainLoop())
		ln.SetHandler(func() { ln.Accept() })
	})
	var got []model.Events
	w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
		p.Dial("tcp", "s:1", p.MainLoop(), func(ev model.Events) { got = append(got, ev) })
	})
	w.RunFor(100 * time.Millisecond)
	if len(got) != 1 || got[0]&model.Writable == 0 {
		t.Fatalf("events %v", got)
	}
}

// A dialer that fills its send buffer before its handler has heard the
// connect complete still hears it, once the ACKs make room: Writable is
// the connect's report whatever the write interest (the real world keeps
// EPOLLOUT registered while connecting, and Linux's tcp_poll sets it once
// sk_stream_is_writeable holds again, woken by the ACK's
// tcp_check_space). The first dispatch found the socket unwritable and
// told nothing; an ACK changes writability, so it must look again. The
// server reads nothing until 50 ms, so the buffer stays full until then;
// with fin it shuts its side at once. (onAck used to look only for a
// socket with write interest, unread bytes, the peer's FIN or an error:
// without the FIN the dialer never heard of its connection.)
func TestDialWritableAfterFillingTheBufferFirst(t *testing.T) {
	for _, fin := range []bool{false, true} {
		w := New(DefaultConfig(1))
		var sc model.Conn
		w.Spawn("server", model.ProcessConfig{}, func(p model.Process) {
			ln, _ := p.Listen("tcp", "s:1", 0, p.MainLoop())
			ln.SetHandler(func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				sc = c
				c.SetReadInterest(false)
				c.SetHandler(p.MainLoop(), func(model.Events) {
					for buf := make([]byte, 1<<20); ; {
						if _, err := c.Read(buf); err != nil {
							return
						}
					}
				})
				if fin {
					c.CloseWrite()
				}
			})
		})
		var got []model.Events
		var at []time.Duration
		var cc *tcpConn
		w.Spawn("client", model.ProcessConfig{}, func(p model.Process) {
			c, _ := p.Dial("tcp", "s:1", p.MainLoop(), func(ev model.Events) {
				got, at = append(got, ev), append(at, w.Now())
			})
			c.SetReadInterest(false)
			cc = c.(*tcpConn)
		})
		filled := false
		w.AfterEach(func() {
			if filled || cc == nil || cc.state != tcpEstablished {
				return
			}
			// Established, its report queued but not yet run: the
			// test writes until the buffer is full.
			filled = true
			for {
				if _, err := cc.Write(make([]byte, 256<<10)); err != nil {
					break
				}
			}
		})
		w.At(50*time.Millisecond, func() {
			if len(got) != 0 || cc.readiness()&model.Writable != 0 {
				t.Errorf("fin %v: at 50 ms, events %v, writable %v; want none and a full buffer", fin, got, cc.readiness()&model.Writable != 0)
			}
			sc.SetReadInterest(true)
		})
		if err := w.RunFor(200 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != model.Writable || at[0] < 50*time.Millisecond || at[0] > 51*time.Millisecond {
			t.Errorf("fin %v: the dialer heard %v at %v; want Writable once, when the server's reading made room (50–51 ms)", fin, got, at)
		}
	}
}
