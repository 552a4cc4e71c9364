package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLogCallsMatchSchema holds every Process.Log call under model/ to
// LogKeys: its kind listed (or passed in, as AcceptAll's is, by callers
// whose literal kinds are listed), its keys string literals among the
// kind's keys; and every listed kind is logged somewhere.
func TestLogCallsMatchSchema(t *testing.T) {
	used := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range modelDirs(t) {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch fn := call.Fun.(type) {
				case *ast.SelectorExpr:
					switch {
					case fn.Sel.Name == "Log" && len(call.Args) > 0:
						checkLogCall(t, fset, call, used)
					case fn.Sel.Name == "AcceptAll" && len(call.Args) > 3:
						if kind, ok := stringLit(call.Args[3]); ok {
							used[kind] = true
							if _, ok := LogKeys[kind]; !ok {
								t.Errorf("%s: AcceptAll logs kind %q, which LogKeys does not list", fset.Position(call.Pos()), kind)
							}
						}
					}
				}
				return true
			})
		}
	}
	for kind := range LogKeys {
		if !used[kind] {
			t.Errorf("LogKeys lists %q, which nothing logs", kind)
		}
	}
}

func checkLogCall(t *testing.T, fset *token.FileSet, call *ast.CallExpr, used map[string]bool) {
	t.Helper()
	at := fset.Position(call.Pos())
	if len(call.Args)%2 != 1 {
		t.Errorf("%s: Log with %d fields: want a kind, then key-value pairs", at, len(call.Args)-1)
		return
	}
	kind, literal := stringLit(call.Args[0])
	allowed, listed := LogKeys[kind]
	switch {
	case literal && !listed:
		t.Errorf("%s: Log kind %q is not in LogKeys", at, kind)
		return
	case literal:
		used[kind] = true
	}
	for i := 1; i < len(call.Args); i += 2 {
		key, ok := stringLit(call.Args[i])
		switch {
		case !ok:
			t.Errorf("%s: Log field %d's key is not a string literal", at, (i+1)/2)
		case literal && !slices.Contains(allowed, key):
			t.Errorf("%s: Log kind %q has no key %q in LogKeys (%v)", at, kind, key, allowed)
		}
	}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
