package model

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestModelStaysDeterministic enforces DESIGN.md §3: model/ reaches time,
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
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
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

// TestModelNeverRangesOverMapsUnsorted type-checks model's sources and
// flags every range over a map: iteration order is random, so each must
// only collect keys to sort (listed below with the reason).
func TestModelNeverRangesOverMapsUnsorted(t *testing.T) {
	sorted := map[string]bool{
		"Blocks":       true, // collects the ids, then sorts them
		"sortedBlocks": true, // collects the ids, then sorts them
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
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
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("xceiver/model", fset, files, info); err != nil {
		t.Fatalf("type-check model: %v", err)
	}
	ranges := 0
	for _, f := range files {
		var fn string
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				fn = n.Name.Name
			case *ast.RangeStmt:
				if _, isMap := info.Types[n.X].Type.Underlying().(*types.Map); isMap {
					ranges++
					if !sorted[fn] {
						t.Errorf("%s: range over a map in %s: order is random; collect and sort the keys", fset.Position(n.Pos()), fn)
					}
				}
			}
			return true
		})
	}
	if ranges == 0 {
		t.Error("found no map range at all: the check is not seeing model's maps")
	}
}
