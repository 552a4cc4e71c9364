package mutation

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// equivalentsCover are the package directories whose mutants
// equivalent.txt lists.
var equivalentsCover = []string{"model/...", "sim", "properties"}

// An ID hashes the mutant's function, operator, texts and line, so an
// edit of the mutated line leaves its entry naming no mutant, which must
// then be judged again rather than still counted as equivalent. So
// every entry must name a mutant that exists, and an entry that begins
// with a function's name (`ID [pkg] Func: why`) must name a mutant of that
// function (or of a closure in it). An entry can still come to name
// another mutant when its function gains an identical line above it (the
// ordinal tells identical lines apart); that passes here, and what the
// entry says is for a reviewer to hold against the mutant's diff
// (`xceiver mutate --list --ids ID`).
func TestEquivalentsNameLiveMutants(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := ExpandPackages(root, equivalentsCover)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Load(context.Background(), root, dirs)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Mutant{}
	for _, m := range src.Mutants {
		byID[m.ID] = m
	}
	pkgs := map[string]bool{}
	for _, d := range dirs {
		pkgs[path.Base(d)] = true
	}
	funcs := declaredFuncs(t, src)
	seen := map[string]int{}
	for i, l := range strings.Split(defaultEquivalents, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n := i + 1
		id, why, _ := strings.Cut(l, " ")
		if first, ok := seen[id]; ok {
			t.Errorf("equivalent.txt:%d: %s is listed again (first at line %d); only one reason is kept", n, id, first)
			continue
		}
		seen[id] = n
		m, ok := byID[id]
		if !ok {
			t.Errorf("equivalent.txt:%d: %s is no mutant of %s: its code changed; find the mutant %q describes and list its new ID, or drop the entry", n, id, strings.Join(equivalentsCover, ", "), cut(why))
			continue
		}
		pkg, name := entryName(why, pkgs)
		if pkg != "" && pkg != path.Base(path.Dir(m.File)) {
			t.Errorf("equivalent.txt:%d: %s is said to be in package %s, but it is %v", n, id, pkg, m)
		}
		switch {
		case name == "":
		case m.Func == "":
			// A mutant outside any function (a constant's value, say):
			// the entry names what is declared there.
			if funcs[path.Dir(m.File)][name] {
				t.Errorf("equivalent.txt:%d: %s is said to be in %s, but it is outside any function: %v", n, id, name, m)
			}
		case m.Func != name && !strings.HasPrefix(m.Func, name+".func"):
			t.Errorf("equivalent.txt:%d: %s is said to be in %s, but it is in %s: %v", n, id, name, m.Func, m)
		}
	}
}

var funcSpelling = regexp.MustCompile(`^(\(\*?\w+\)\.)?\w+(\.\w+)*$`)

// entryName is the package and the function an entry's reason begins
// with: an optional package name, then a name ended by ':' or ',' (`rpc
// (*Server).serve: …`). T.M is read as the method (T).M. A reason that
// begins with prose names nothing.
func entryName(why string, pkgs map[string]bool) (pkg, name string) {
	if first, rest, ok := strings.Cut(why, " "); ok && pkgs[first] {
		pkg, why = first, rest
	}
	end := strings.IndexAny(why, ":,")
	if end < 0 || !funcSpelling.MatchString(why[:end]) {
		return pkg, ""
	}
	name = why[:end]
	if t, m, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(t, "(") && !strings.Contains(m, ".") && m != "func" {
		name = "(" + t + ")." + m
	}
	return pkg, name
}

// declaredFuncs are the names (as Mutant.Func spells them) of the
// functions declared in src's files, by package directory.
func declaredFuncs(t *testing.T, src *Source) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for name, b := range src.Files {
		f, err := parser.ParseFile(fset, name, b, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		dir := path.Dir(name)
		if out[dir] == nil {
			out[dir] = map[string]bool{}
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				out[dir][funcName(fd)] = true
			}
		}
	}
	return out
}

func cut(s string) string {
	if r := []rune(s); len(r) > 70 {
		return string(r[:70]) + "…"
	}
	return s
}

func TestEntryName(t *testing.T) {
	pkgs := map[string]bool{"rpc": true, "properties": true}
	for _, c := range []struct{ why, pkg, name string }{
		{"(*dnConn).flush: outOff reset to 1", "", "(*dnConn).flush"},
		{"rpc (*serverConn).read, HadoopReader: need() > 0", "rpc", "(*serverConn).read"},
		{"FDKind.String: k >= 0 → k < 0", "", "(FDKind).String"},
		{"(*reader).closeWith.func: no break", "", "(*reader).closeWith.func"},
		{"properties bit: bit(false) returns 1", "properties", "bit"},
		{"properties scenario rpc threads draw 1..3 → 1..4: cases stay valid", "properties", ""},
		{"op.resp is written and never read", "", ""},
	} {
		if pkg, name := entryName(c.why, pkgs); pkg != c.pkg || name != c.name {
			t.Errorf("entryName(%q) = %q, %q; want %q, %q", c.why, pkg, name, c.pkg, c.name)
		}
	}
}
