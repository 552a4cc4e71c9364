package model

import (
	"go/ast"
	"go/parser"
	"go/token"
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
