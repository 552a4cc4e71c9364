package namespace_test

import (
	"strings"
	"testing"

	"xceiver/model"
	"xceiver/model/namespace"
)

// A complete must name the file's own blocks, each with a length that is
// not negative. A client whose file was deleted and created again by
// another before its complete arrived (a stale complete) would otherwise
// mark the new file complete with the stamps and lengths of blocks it
// never had, which its readers would then not find on the datanode.
// check's clients complete only the blocks their create was given, and
// 300 seeds drew no such race (a namenode that refused a complete only
// when both its block and its length were wrong passed them).
func TestCompleteRefusesBlocksNotTheFiles(t *testing.T) {
	inNamenode(t, model.ProcessConfig{}, func(p model.Process) {
		ns, err := namespace.New(p, namespace.Config{})
		if err != nil {
			t.Error(err)
			return
		}
		create := func(path string) uint64 {
			resp, code := ns.Apply(namespace.Request{Method: namespace.MethodCreate, Path: path, Blocks: 1})
			if code != namespace.OK || len(resp.Blocks) != 1 {
				t.Fatalf("create %s: %v, %d blocks", path, code, len(resp.Blocks))
			}
			return resp.Blocks[0]
		}
		complete := func(path string, l namespace.Location) namespace.Code {
			_, code := ns.Apply(namespace.Request{Method: namespace.MethodComplete, Path: path, Done: []namespace.Location{l}})
			return code
		}
		old := create("/f")
		if _, code := ns.Apply(namespace.Request{Method: namespace.MethodDelete, Path: "/f"}); code != namespace.OK {
			t.Fatalf("delete /f: %v", code)
		}
		cur := create("/f")
		for _, c := range []struct {
			what string
			l    namespace.Location
		}{
			{"the deleted file's block (a stale complete)", namespace.Location{Block: old, Stamp: 7, Length: 100}},
			{"its own block with a negative length", namespace.Location{Block: cur, Stamp: 7, Length: -1}},
		} {
			if code := complete("/f", c.l); code != namespace.EINVAL {
				t.Errorf("complete /f with %s: %v, want EINVAL", c.what, code)
			}
		}
		if _, code := ns.Apply(namespace.Request{Method: namespace.MethodGetBlockLocations, Path: "/f"}); code != namespace.EINCOMPLETE {
			t.Errorf("after refused completes, getBlockLocations /f: %v, want EINCOMPLETE", code)
		}
		if code := complete("/f", namespace.Location{Block: cur, Stamp: 7, Length: 100}); code != namespace.OK {
			t.Errorf("complete /f with its own block: %v, want ok", code)
		}
	})
}

// SplitPath holds a path to HDFS's limits (dfs.namenode.fs-limits) and
// refuses the components a tree of names cannot hold: "" (a doubled or
// trailing slash), "." and "..". Each bound is tried at its edge: check's
// paths are short, of a few names, so none of them reached one.
func TestSplitPathBounds(t *testing.T) {
	long := strings.Repeat("n", namespace.MaxComponentLen)
	// A path of exactly MaxPathLen: components of MaxComponentLen and one
	// that makes up the rest.
	var b strings.Builder
	for b.Len()+1+namespace.MaxComponentLen < namespace.MaxPathLen {
		b.WriteString("/" + long)
	}
	b.WriteString("/" + strings.Repeat("m", namespace.MaxPathLen-b.Len()-1))
	atMax := b.String()
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{"/a/b", true},
		{"/" + long, true},
		{"/" + long + "x", false},
		{atMax, true},
		{atMax + "x", false},
		{"", false},
		{"a/b", false},
		{"/a//b", false},
		{"/a/", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/..", false},
	} {
		if _, ok := namespace.SplitPath(c.path); ok != c.ok {
			show := c.path
			if len(show) > 20 {
				show = show[:10] + "…" + show[len(show)-10:]
			}
			t.Errorf("SplitPath(%q) (%d bytes): ok %v, want %v", show, len(c.path), ok, c.ok)
		}
	}
}
