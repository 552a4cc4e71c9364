package mutation

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Source is what Load read: the mutants and the original bytes of every
// file they change, by File name.
type Source struct {
	Mutants []Mutant
	Files   map[string][]byte
}

// ExpandPackages turns patterns ("model", "model/...") relative to root
// into the directories holding non-test Go files, sorted.
func ExpandPackages(root string, patterns []string) ([]string, error) {
	var dirs []string
	for _, p := range patterns {
		p = filepath.ToSlash(filepath.Clean(strings.TrimPrefix(p, "./")))
		base, recursive := strings.CutSuffix(p, "/...")
		if p == "..." {
			base, recursive = ".", true
		}
		if !filepath.IsLocal(filepath.FromSlash(base)) && base != "." {
			// Mutants are of this module's code: ../.. walked out of it
			// and failed later, in go list.
			return nil, fmt.Errorf("package %q: outside the module at %s", p, root)
		}
		abs := filepath.Join(root, filepath.FromSlash(base))
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("package %q: no directory %s", p, abs)
		}
		if !recursive {
			if !hasGoFiles(abs) {
				return nil, fmt.Errorf("package %q: no Go files in %s", p, abs)
			}
			dirs = append(dirs, base)
			continue
		}
		err := filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if n := d.Name(); path != abs && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			if hasGoFiles(path) {
				rel, _ := filepath.Rel(root, path)
				dirs = append(dirs, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("package %q: %w", p, err)
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), nil
}

func hasGoFiles(dir string) bool {
	p, err := build.ImportDir(dir, 0)
	return err == nil && len(p.GoFiles) > 0
}

// Load parses and type-checks the packages in dirs (relative to root, the
// module root) and enumerates their mutants. Imports are type-checked from
// the export data `go list -export` leaves in the build cache.
func Load(ctx context.Context, root string, dirs []string) (*Source, error) {
	exports, err := exportData(ctx, root, dirs)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %q", path)
		}
		return os.Open(f)
	})
	src := &Source{Files: map[string][]byte{}}
	for _, dir := range dirs {
		bp, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(dir)), 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		var files []File
		var asts []*ast.File
		for _, name := range bp.GoFiles {
			rel := pathJoin(dir, name)
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				return nil, err
			}
			f, err := parser.ParseFile(fset, rel, b, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			files = append(files, File{Name: rel, Src: b, AST: f})
			asts = append(asts, f)
			src.Files[rel] = b
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(bp.ImportPath, fset, asts, info); err != nil {
			return nil, fmt.Errorf("type-checking %s: %w", dir, err)
		}
		src.Mutants = append(src.Mutants, Enumerate(fset, files, info)...)
	}
	return src, nil
}

// ModulePath is the module path go.mod in root declares.
func ModulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
}

// NoInline is the -gcflags that turn inlining off in the packages of dirs
// (see Judge.BuildFlags).
func NoInline(module string, dirs []string) []string {
	var flags []string
	for _, d := range dirs {
		flags = append(flags, "-gcflags="+pathJoin(module, d)+"=-l")
	}
	return flags
}

func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	if name == "." {
		return dir
	}
	return dir + "/" + name
}

// exportData maps the import path of every dependency of dirs to its
// export data file.
func exportData(ctx context.Context, root string, dirs []string) (map[string]string, error) {
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}
	for _, d := range dirs {
		args = append(args, "./"+d)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, firstLine(stderr.String()))
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok {
			m[path] = file
		}
	}
	return m, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
