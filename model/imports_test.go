package model

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestModelStaysDeterministic enforces docs/ARCHITECTURE.md §2: model/ reaches time,
// I/O, threads and randomness only through the world interface.
func TestModelStaysDeterministic(t *testing.T) {
	forbiddenImports := map[string]string{
		"sync":                  "model code runs on one loop at a time; use Lock from the world",
		"sync/atomic":           "model code runs on one loop at a time",
		"os":                    "reach the disk through Disk",
		"net":                   "reach the network through Process.Dial/Listen",
		"syscall":               "reach the OS through the world",
		"math/rand":             "use Process.Rand (seeded)",
		"golang.org/x/sys/unix": "reach the OS through the world",
		"xceiver/sim":           "model must not depend on a world",
		"xceiver/real":          "model must not depend on a world",
		"os/exec":               "no processes",
		"crypto/rand":           "use Process.Rand (seeded)",
	}
	forbiddenTimeCalls := map[string]bool{"Now": true, "Sleep": true, "After": true, "Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true, "Since": true, "Until": true}
	var files []string
	for _, dir := range modelDirs(t) {
		fs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		timeName := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why, bad := forbiddenImports[path]; bad {
				t.Errorf("%s imports %q: %s", fset.Position(imp.Pos()), path, why)
			}
			if path == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: go statement: model code must not start goroutines", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && forbiddenTimeCalls[n.Sel.Name] {
					t.Errorf("%s: time.%s: use Loop.Now/AfterFunc (virtual time in sim)", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}

// TestModelNeverRangesOverMaps type-checks model's sources and flags every
// range over a map: iteration order is random. Code that needs a map's
// keys in order uses slices.Sorted(maps.Keys(m)).
func TestModelNeverRangesOverMaps(t *testing.T) {
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil) // one importer, so dependencies are checked once
	for _, dir := range modelDirs(t) {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var files []*ast.File
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		found, err := mapRanges(fset, imp, files, path.Join("xceiver/model", filepath.ToSlash(dir)))
		if err != nil {
			t.Fatalf("type-check model/%s: %v", dir, err)
		}
		for _, pos := range found {
			t.Errorf("%s: range over a map: order is random; use slices.Sorted(maps.Keys(m))", fset.Position(pos))
		}
	}
}

// modelDirs is model and every package under it: the rules hold for all.
func modelDirs(t *testing.T) []string {
	dirs := []string{"."}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if gos, _ := filepath.Glob(filepath.Join(p, "*.go")); len(gos) > 0 {
				dirs = append(dirs, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatal("found no package under model/; the walk is broken")
	}
	return dirs
}

// The checker must see a range over a map field, or the test above
// proves nothing.
func TestModelMapRangeCheckSeesMaps(t *testing.T) {
	src := `package p
type d struct{ names map[string]int }
func f(x *d) { for k := range x.names { _ = k } }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found, err := mapRanges(fset, importer.ForCompiler(fset, "source", nil), []*ast.File{f}, "p")
	if err != nil || len(found) != 1 {
		t.Fatalf("found %d map ranges (%v), want 1", len(found), err)
	}
}

// mapRanges type-checks files and returns where they range over a map.
func mapRanges(fset *token.FileSet, imp types.Importer, files []*ast.File, pkg string) ([]token.Pos, error) {
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(pkg, fset, files, info); err != nil {
		return nil, err
	}
	var found []token.Pos
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if r, ok := n.(*ast.RangeStmt); ok {
				if _, isMap := info.Types[r.X].Type.Underlying().(*types.Map); isMap {
					found = append(found, r.Pos())
				}
			}
			return true
		})
	}
	return found, nil
}
