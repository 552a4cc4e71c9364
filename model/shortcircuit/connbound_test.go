package shortcircuit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"xceiver/model"
	"xceiver/model/shortcircuit"
	"xceiver/sim"
)

// ServerConfig.MaxConnsPerUser bounds the connections one user (in sim a
// process) holds open without a segment: with a bound of 2, a flooder's
// third idle connection is closed as accepted, unanswered, while another
// process still gets one; a connection given back makes room, and one
// that came to keep a segment no longer counts (MaxSegmentsPerUser bounds
// it). With Bugs.NoConnBound (sc-conn-unbounded) every one stays open. A
// negative bound is refused by Start.
func TestConnBoundPerUser(t *testing.T) {
	bounded := []string{
		"flooder idle open",
		"flooder idle open",
		"flooder idle refused",
		"other idle open",
		"flooder segment SUCCESS fds=1 open",
		"flooder idle open",
		"flooder idle refused",
	}
	unbounded := []string{
		"flooder idle open",
		"flooder idle open",
		"flooder idle open",
		"other idle open",
		"flooder segment SUCCESS fds=1 open",
		"flooder idle open",
		"flooder idle open",
	}
	for _, tc := range []struct {
		bugs    shortcircuit.ServerBugs
		want    []string
		refused int
	}{
		{shortcircuit.ServerBugs{}, bounded, 2},
		{shortcircuit.ServerBugs{NoConnBound: true}, unbounded, 0},
	} {
		got, refused, negErr := connBoundRun(t, tc.bugs)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%+v: connections got\n%s\nwant\n%s", tc.bugs, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
		if refused != tc.refused {
			t.Errorf("%+v: Stats().Refused %d, want %d", tc.bugs, refused, tc.refused)
		}
		if negErr == nil || !strings.Contains(negErr.Error(), "negative connection bound") {
			t.Errorf("Start with MaxConnsPerUser -1: %v, want refused", negErr)
		}
	}
}

func connBoundRun(t *testing.T, bugs shortcircuit.ServerBugs) (got []string, refused int, negErr error) {
	w := sim.New(sim.DefaultConfig(1))
	shmReq := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "t"})
	// Long enough for a refusal to be seen, far short of the read
	// timeout (a minute), which would close an idle one.
	const wait = 20 * time.Millisecond
	var held []model.Conn
	// conn opens a connection from p, sends b (nothing: idle) and notes
	// whether the datanode answered and whether it closed the connection;
	// one left open is held until the end.
	conn := func(p model.Process, who string, b []byte, next func()) {
		rawExchange(p, "/run/dn_socket", b, wait, func(r rawResult, c model.Conn) {
			what := who + " idle"
			if len(b) > 0 {
				status := "undecodable"
				if resp, _, err := shortcircuit.DecodeResponse(r.got); err == nil {
					status = resp.Status.String()
				}
				what = fmt.Sprintf("%s segment %s fds=%d", who, status, len(r.files))
			} else if len(r.got) > 0 {
				what += fmt.Sprintf(" answered %d bytes", len(r.got))
			}
			for _, f := range r.files {
				f.Close()
			}
			if r.closed {
				got = append(got, what+" refused")
			} else {
				got = append(got, what+" open")
				held = append(held, c)
			}
			next()
		})
	}
	_, err := w.Spawn("datanode", model.ProcessConfig{}, func(p model.Process) {
		dn, err := model.StartDatanode(p, p.MainLoop(), model.DatanodeConfig{Addr: "dn:50010"})
		if err != nil {
			w.Fail(err)
			return
		}
		_, negErr = shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/neg_socket", MaxConnsPerUser: -1})
		srv, err := shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/dn_socket", MaxConnsPerUser: 2, Bugs: bugs})
		if err != nil {
			w.Fail(err)
			return
		}
		w.Spawn("flooder", model.ProcessConfig{}, func(fl model.Process) {
			w.Spawn("other", model.ProcessConfig{}, func(op model.Process) {
				steps(
					func(next func()) { conn(fl, "flooder", nil, next) },
					func(next func()) { conn(fl, "flooder", nil, next) },
					func(next func()) { conn(fl, "flooder", nil, next) },
					func(next func()) { conn(op, "other", nil, next) },
					func(next func()) {
						// The flooder gives its first connection back.
						held[0].Close()
						held = held[1:]
						fl.MainLoop().AfterFunc(wait, next)
					},
					func(next func()) { conn(fl, "flooder", shmReq, next) },
					func(next func()) { conn(fl, "flooder", nil, next) },
					func(next func()) { conn(fl, "flooder", nil, next) },
					func(func()) {
						p.MainLoop().Post(func() { refused = srv.Stats().Refused })
						for _, c := range held {
							c.Close()
						}
						fl.MainLoop().AfterFunc(wait, w.Stop)
					},
				)
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	return got, refused, negErr
}
