package sim

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"xceiver/model"
)

// docs/ARCHITECTURE.md §3: same seed and config → byte-identical trace.

func tracePattern(t *testing.T, seed uint64, cfg model.TCPPattern) (uint64, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := New(DefaultConfig(seed))
	w.TraceTo(&buf)
	if _, err := model.RunTCPPattern(w, cfg, time.Hour); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if err := w.TraceErr(); err != nil {
		t.Fatal(err)
	}
	return w.TraceHash(), buf.Bytes()
}

func TestSameSeedSameTrace(t *testing.T) {
	for _, nodelay := range []bool{false, true} {
		cfg := model.TCPPattern{Writes: 2, Msg: 8, Reply: 32768, Ops: 30, NoDelay: nodelay}
		h1, b1 := tracePattern(t, 42, cfg)
		h2, b2 := tracePattern(t, 42, cfg)
		if h1 != h2 {
			t.Errorf("nodelay=%v: trace hashes differ: %016x vs %016x", nodelay, h1, h2)
		}
		if !bytes.Equal(b1, b2) {
			t.Errorf("nodelay=%v: trace bytes differ (%d vs %d bytes)", nodelay, len(b1), len(b2))
		}
		if len(b1) == 0 || bytes.Count(b1, []byte("\n")) < 100 {
			t.Errorf("nodelay=%v: trace suspiciously short (%d bytes)", nodelay, len(b1))
		}
	}
}

func TestDifferentSeedMayDiffer(t *testing.T) {
	// With Nagle on, delayed ACKs fire on the jiffy grid, whose phase is
	// drawn from the seed: some seeds must give different traces.
	cfg := model.TCPPattern{Writes: 2, Msg: 8, Reply: 32768, Ops: 10}
	seen := map[uint64]bool{}
	for seed := uint64(1); seed <= 4; seed++ {
		h, _ := tracePattern(t, seed, cfg)
		seen[h] = true
	}
	if len(seen) < 2 {
		t.Errorf("four seeds gave %d distinct traces; the seed does not reach the run", len(seen))
	}
}

// TestSimStaysDeterministic parses sim's own (non-test) sources and rejects
// what would make a run depend on anything but its seed: goroutines, sync,
// the wall clock, global randomness, and ranging over a map where the
// iteration order could leak into behaviour.
func TestSimStaysDeterministic(t *testing.T) {
	forbiddenImports := map[string]string{
		"sync":        "the simulator is single-threaded",
		"sync/atomic": "the simulator is single-threaded",
		"crypto/rand": "draw from the world's seeded sources",
		"math/rand":   "use math/rand/v2 with a seeded source",
	}
	wallClock := map[string]bool{"Now": true, "Sleep": true, "Since": true, "Until": true, "After": true, "Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true}
	// math/rand/v2 may only build seeded generators.
	randOK := map[string]bool{"New": true, "NewPCG": true, "NewChaCha8": true, "Rand": true, "PCG": true, "ChaCha8": true, "Source": true}
	// Ranges over maps whose order cannot leak, with the reason.
	mapRangeOK := map[string]string{}

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
	if len(files) < 5 {
		t.Fatalf("found only %d source files", len(files))
	}

	// Type-check sim against empty stand-ins for its imports: every map
	// the simulator ranges over is declared in sim, so its type resolves,
	// and the errors about the stand-ins are beside the point.
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: stubImporter{}, Error: func(error) {}}
	conf.Check("xceiver/sim", fset, files, info)

	for _, f := range files {
		file := filepath.Base(fset.Position(f.Pos()).Filename)
		local := map[string]string{} // import name → path
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why, bad := forbiddenImports[path]; bad {
				t.Errorf("%s imports %q: %s", fset.Position(imp.Pos()), path, why)
			}
			name := importName(path)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			local[name] = path
		}
		var fn string
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				fn = n.Name.Name
			case *ast.GoStmt:
				t.Errorf("%s: go statement: the simulator runs on one goroutine", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				id, ok := n.X.(*ast.Ident)
				if !ok {
					break
				}
				switch local[id.Name] {
				case "time":
					if wallClock[n.Sel.Name] {
						t.Errorf("%s: time.%s: the simulator has only virtual time", fset.Position(n.Pos()), n.Sel.Name)
					}
				case "math/rand/v2":
					if !randOK[n.Sel.Name] {
						t.Errorf("%s: rand.%s: global randomness; use a seeded source", fset.Position(n.Pos()), n.Sel.Name)
					}
				}
			case *ast.RangeStmt:
				tv, ok := info.Types[n.X]
				if !ok || tv.Type == nil {
					break
				}
				if _, isMap := tv.Type.Underlying().(*types.Map); isMap {
					if _, fine := mapRangeOK[file+":"+fn]; !fine {
						t.Errorf("%s: range over a map in %s: iteration order is random; sort the keys (or list the function in mapRangeOK with a reason)", fset.Position(n.Pos()), fn)
					}
				}
			}
			return true
		})
	}
}

// The checker must actually see sim's maps, or the test above proves
// nothing.
func TestSimMapRangeCheckSeesMaps(t *testing.T) {
	src := `package p
type d struct{ names map[string]int }
func f(x *d) { for k := range x.names { _ = k } }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	(&types.Config{Importer: stubImporter{}, Error: func(error) {}}).Check("p", fset, []*ast.File{f}, info)
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if r, ok := n.(*ast.RangeStmt); ok {
			_, found = info.Types[r.X].Type.Underlying().(*types.Map)
		}
		return true
	})
	if !found {
		t.Fatal("range over a map field not recognised")
	}
}

type stubImporter struct{}

func (stubImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, importName(path))
	p.MarkComplete()
	return p, nil
}

var versionElem = regexp.MustCompile(`^v[0-9]+$`)

// importName is the package name an import path declares by convention
// ("math/rand/v2" → "rand").
func importName(path string) string {
	elems := strings.Split(path, "/")
	name := elems[len(elems)-1]
	if versionElem.MatchString(name) && len(elems) > 1 {
		name = elems[len(elems)-2]
	}
	return name
}
