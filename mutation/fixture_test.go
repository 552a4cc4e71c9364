package mutation

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"testing"
)

// enumerateSource type-checks one file and lists its mutants.
func enumerateSource(t *testing.T, src string) ([]Mutant, []byte) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p/p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{}).Check("p", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	return Enumerate(fset, []File{{Name: "p/p.go", Src: []byte(src), AST: f}}, info), []byte(src)
}

// checks reports whether src type-checks.
func checks(src []byte) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		return err
	}
	_, err = (&types.Config{}).Check("p", fset, []*ast.File{f}, nil)
	return err
}
