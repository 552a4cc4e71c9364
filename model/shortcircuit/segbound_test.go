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

// ServerConfig.MaxSegmentsPerUser bounds the segments one user holds (in
// sim each process is a user): with a bound of 2, a process holding two
// is refused a third with an error status, no fd, and the connection
// closed; another process is still granted one, and so is the first
// once it gave one back. A negative bound is refused by Start.
func TestSegmentBoundPerUser(t *testing.T) {
	w := sim.New(sim.DefaultConfig(1))
	shmReq := shortcircuit.AppendRequest(nil, shortcircuit.Request{Op: shortcircuit.OpRequestShm, ClientID: "t"})
	const wait = 20 * time.Millisecond
	var negErr error
	var got []string
	var held []model.Conn
	// segment asks p for a segment and notes what came back: the status,
	// the fds and whether the datanode closed the connection; a granted
	// segment's connection stays open (held) until released.
	segment := func(p model.Process, who string, next func()) {
		rawExchange(p, "/run/dn_socket", shmReq, wait, func(r rawResult, c model.Conn) {
			status := "undecodable"
			if resp, _, err := shortcircuit.DecodeResponse(r.got); err == nil {
				status = resp.Status.String()
			}
			got = append(got, fmt.Sprintf("%s %s fds=%d closed=%v", who, status, len(r.files), r.closed))
			for _, f := range r.files {
				f.Close()
			}
			if !r.closed {
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
		_, negErr = shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/neg_socket", MaxSegmentsPerUser: -1})
		if _, err := shortcircuit.Start(dn, shortcircuit.ServerConfig{Path: "/run/dn_socket", MaxSegmentsPerUser: 2}); err != nil {
			w.Fail(err)
			return
		}
		w.Spawn("squatter", model.ProcessConfig{}, func(sq model.Process) {
			w.Spawn("other", model.ProcessConfig{}, func(op model.Process) {
				steps(
					func(next func()) { segment(sq, "squatter", next) },
					func(next func()) { segment(sq, "squatter", next) },
					func(next func()) { segment(sq, "squatter", next) },
					func(next func()) { segment(op, "other", next) },
					func(next func()) {
						// The squatter gives its first segment back: the
						// datanode frees it when its connection closes.
						held[0].Close()
						held = held[1:]
						sq.MainLoop().AfterFunc(wait, next)
					},
					func(next func()) { segment(sq, "squatter", next) },
					func(func()) {
						for _, c := range held {
							c.Close()
						}
						sq.MainLoop().AfterFunc(wait, w.Stop)
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
	want := []string{
		"squatter SUCCESS fds=1 closed=false",
		"squatter SUCCESS fds=1 closed=false",
		"squatter ERROR fds=0 closed=true",
		"other SUCCESS fds=1 closed=false",
		"squatter SUCCESS fds=1 closed=false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("segment requests got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if negErr == nil || !strings.Contains(negErr.Error(), "negative segment bound") {
		t.Errorf("Start with MaxSegmentsPerUser -1: %v, want refused", negErr)
	}
}
