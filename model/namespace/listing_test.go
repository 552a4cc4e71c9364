package namespace_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"xceiver/model"
	"xceiver/model/namespace"
	"xceiver/model/rpc"
	"xceiver/sim"
)

// A directory of 4,000 names of MaxComponentLen, which any client may
// make, lists a page (ListLimit entries) at a time. Unpaged, its listing
// was over the rpc frame bound (DefaultMaxFrame): the client took the
// answer for a broken stream, dropped the connection and failed every call
// on it, so the directory could never be listed.
func TestBigDirectoryListsInPages(t *testing.T) {
	const files = 4000
	pad := strings.Repeat("n", namespace.MaxComponentLen-5)
	var names []string
	for i := range files {
		names = append(names, fmt.Sprintf("%05d%s", 2*i, pad))
	}
	type page struct {
		after     string
		entries   []string
		remaining int
		err       error
	}
	var pages []page
	var all []namespace.Entry
	var allErr, mkdirErr error
	var stats rpc.ClientStats
	ended := 0
	start(t, namespace.RWLock, func(w *sim.World, p model.Process, c *namespace.Client) {
		left := files
		for _, name := range names {
			c.Do(namespace.Request{Method: namespace.MethodCreate, Path: "/d/" + name}, func(_ namespace.Response, err error) {
				if err != nil {
					t.Errorf("create %s: %v", name[:5], err)
				}
				if left--; left > 0 {
					return
				}
				// The first page, the next, one after a name not there
				// (between two), and past the last.
				for _, after := range []string{"", names[999], "01999", names[files-1]} {
					c.Do(namespace.Request{Method: namespace.MethodList, Path: "/d", After: after}, func(resp namespace.Response, err error) {
						pg := page{after: after, remaining: resp.Remaining, err: err}
						for _, e := range resp.Entries {
							pg.entries = append(pg.entries, e.Name)
						}
						pages = append(pages, pg)
					})
				}
				c.Do(namespace.Request{Method: namespace.MethodMkdir, Path: "/unrelated"}, func(_ namespace.Response, err error) {
					mkdirErr = err
					stats = c.RPC.Stats()
					ended++
				})
				c.List("/d", func(es []namespace.Entry, err error) {
					all, allErr = es, err
					ended++
				})
			})
		}
	})
	if ended != 2 || len(pages) != 4 {
		t.Fatalf("%d pages and %d of mkdir and List ended", len(pages), ended)
	}
	if mkdirErr != nil || stats.Malformed != 0 || stats.ConnErrors != 0 {
		t.Errorf("a mkdir in flight with the listings: %v; client stats %+v (want no malformed frame, no connection lost)", mkdirErr, stats)
	}
	want := map[string]struct {
		from, to, remaining int
	}{"": {0, 1000, 3000}, names[999]: {1000, 2000, 2000}, "01999": {1000, 2000, 2000}, names[files-1]: {files, files, 0}}
	for _, pg := range pages { // (in the order answered)
		w := want[pg.after]
		if pg.err != nil || !slices.Equal(pg.entries, names[w.from:w.to]) || pg.remaining != w.remaining {
			first := ""
			if len(pg.entries) > 0 {
				first = pg.entries[0][:5]
			}
			t.Errorf("list after %.5q: %v, %d entries from %q, %d remaining; want entries %d to %d, %d remaining", pg.after, pg.err, len(pg.entries), first, pg.remaining, w.from, w.to, w.remaining)
		}
	}
	var got []string
	for _, e := range all {
		got = append(got, e.Name)
	}
	if allErr != nil || !slices.Equal(got, names) {
		t.Errorf("List: %v, %d entries, want the %d names in order", allErr, len(got), files)
	}
}

// A full page of the longest names fits in a frame, with room to spare.
func TestListPageFitsInAFrame(t *testing.T) {
	var r namespace.Response
	for range namespace.ListLimit {
		r.Entries = append(r.Entries, namespace.Entry{Name: strings.Repeat("x", namespace.MaxComponentLen), Dir: true, Length: 1 << 40})
	}
	r.Remaining = 1 << 30
	if n := len(namespace.EncodeResponse(namespace.MethodList, r)); n > rpc.DefaultMaxFrame/2 {
		t.Errorf("a full page is %d bytes; the frame bound is %d", n, rpc.DefaultMaxFrame)
	}
	// A page and its paging field round-trip; an empty After or a zero
	// Remaining on the wire is refused (never sent).
	got, err := namespace.DecodeResponse(namespace.MethodList, namespace.EncodeResponse(namespace.MethodList, r))
	if err != nil || got.Remaining != r.Remaining || len(got.Entries) != namespace.ListLimit {
		t.Errorf("round trip: %v, %d remaining, %d entries", err, got.Remaining, len(got.Entries))
	}
	if _, err := namespace.DecodeResponse(namespace.MethodList, []byte{0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("a listing with Remaining 0 on the wire decoded")
	}
	req := namespace.Request{Method: namespace.MethodList, Path: "/d", After: "b"}
	if back, ok := namespace.DecodeRequest(namespace.MethodList, namespace.EncodeRequest(req)); !ok || back.Path != req.Path || back.After != req.After {
		t.Errorf("request round trip: %+v, %v", back, ok)
	}
	if _, ok := namespace.DecodeRequest(namespace.MethodList, append(namespace.EncodeRequest(namespace.Request{Path: "/d"}), 0, 0)); ok {
		t.Error("a list with an empty After on the wire decoded")
	}
}
