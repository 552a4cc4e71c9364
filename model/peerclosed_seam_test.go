package model_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// peerClosedScenario: a server that reads nothing (read interest off),
// with peer-closed interest as given; its client sends 5 bytes, and 30 ms
// later closes. The server reports every event it hears (turning the
// interest off at the first PeerClosed), then what two reads return: 20 ms
// after it hears PeerClosed, or else 100 ms after the close (with the
// interest, 500 ms: the failure path). The report's timer is armed by the
// close itself, so a loop that runs late cannot run the close and the
// report in one pass, before epoll has told it of the FIN.
func peerClosedScenario(network, addr string, interest bool) func(p model.Process, done func(string)) {
	return func(p model.Process, done func(string)) {
		var heard []string
		var ln model.Listener
		var sc model.Conn // the server's end, once accepted
		reported := false
		report := func() {
			if reported {
				return
			}
			reported = true
			ln.Close()
			if sc == nil {
				done("closed before the accept")
				return
			}
			buf := make([]byte, 16)
			n1, e1 := sc.Read(buf)
			n2, e2 := sc.Read(buf)
			sc.Close()
			done(fmt.Sprintf("heard [%s], then read %s %s", strings.Join(heard, " "), opResult(n1, e1), opResult(n2, e2)))
		}
		ln = serve(p, network, addr, done, func(c model.Conn) {
			sc = c
			c.SetReadInterest(false)
			c.SetPeerClosedInterest(interest)
			c.SetHandler(p.MainLoop(), func(ev model.Events) {
				heard = append(heard, ev.String())
				if ev&model.PeerClosed != 0 {
					// Level-triggered: it would come again at once.
					c.SetPeerClosedInterest(false)
					p.MainLoop().AfterFunc(20*time.Millisecond, report)
				}
			})
		})
		if ln == nil {
			return
		}
		var c model.Conn
		sent := false
		c, err := p.Dial(network, ln.Addr(), p.MainLoop(), func(ev model.Events) {
			c.SetWriteInterest(false)
			if ev&model.Writable != 0 && !sent {
				sent = true
				c.Write([]byte("hello"))
				p.MainLoop().AfterFunc(30*time.Millisecond, func() {
					c.Close()
					wait := 100 * time.Millisecond
					if interest {
						wait = 500 * time.Millisecond
					}
					p.MainLoop().AfterFunc(wait, report)
				})
			}
		})
		if err != nil {
			done("dial: " + err.Error())
			return
		}
		c.SetReadInterest(false)
		c.SetWriteInterest(true)
	}
}

// A connection that leaves its input in the socket hears its peer's FIN
// as PeerClosed (EPOLLRDHUP), once it asks, and not the data before it;
// the data and the EOF are still there to read. Without the interest it
// hears nothing. The same in both worlds, over TCP and Unix sockets.
func TestPeerClosedWithInputUnread(t *testing.T) {
	for _, tc := range []struct {
		network, addr string
	}{{"tcp", "127.0.0.1:0"}, {"unix", "pc.sock"}} {
		t.Run(tc.network, func(t *testing.T) {
			sameInBoth(t, "heard [PeerClosed], then read 5 EOF")(untilDone(t, model.ProcessConfig{}, peerClosedScenario(tc.network, tc.addr, true)))
			sameInBoth(t, "heard [], then read 5 EOF")(untilDone(t, model.ProcessConfig{}, peerClosedScenario(tc.network, tc.addr, false)))
		})
	}
}
