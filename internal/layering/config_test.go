package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNothingSetAfterConstruction reads the wiring's non-test files
// (cmd/): a component, the value a constructor of the module returned
// (pkg.New…, or one of the wiring's own builders in package app), is not
// changed by assigning to an exported field afterwards; it takes its
// settings in the Config of its constructor. A Config the wiring fills
// field by field before the call, and a row read to be edited and stored
// again (routing.GetRail), are not components and are not checked.
func TestNothingSetAfterConstruction(t *testing.T) {
	t.Parallel()
	for _, v := range setAfterConstruction(t, filepath.Join("..", "..", "cmd")) {
		t.Errorf("%s: %s set after construction: put it in the constructor's Config", v.pos, v.what)
	}
}

// TestSetAfterConstructionCatches shows the scan finding each shape.
func TestSetAfterConstructionCatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := `package wiring

import (
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/routing"
	"strings"
)

func wire() {
	svc := app.PaymentService()
	svc.Metrics = nil
	r, _ := routing.GetRail()
	r.Active = true
	lim, err := pacing.New(pacing.Config{})
	lim.CacheTTL, err = 1, nil
	var b = strings.NewReplacer()
	b.Field = 1
	cfg := pacing.Config{}
	cfg.CacheTTL = 2
	_ = err
}
`
	if err := os.WriteFile(filepath.Join(dir, "wiring.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range setAfterConstruction(t, dir) {
		got = append(got, v.what)
	}
	want := []string{"svc.Metrics", "lim.CacheTTL"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("found %v, want %v (strings' value, a row read and a Config built in place are not components)", got, want)
	}
}

type violation struct {
	pos  token.Position
	what string
}

// setAfterConstruction scans the non-test Go files under dir.
func setAfterConstruction(t *testing.T, dir string) []violation {
	t.Helper()
	fset := token.NewFileSet()
	var out []violation
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ours := map[string]bool{} // the file's names for the module's packages
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			ours[name] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			fn, ok := n.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				return true
			}
			out = append(out, scanBody(fset, fn.Body, ours)...)
			return false
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scanBody finds, in one function (its closures included), the variables
// bound to a component and the assignments to their exported fields. Names are matched per function, which is enough
// for wiring code that does not shadow.
func scanBody(fset *token.FileSet, body *ast.BlockStmt, ours map[string]bool) []violation {
	returned := map[string]bool{}
	fromModule := func(e ast.Expr) bool {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && ours[pkg.Name] && (strings.HasPrefix(sel.Sel.Name, "New") || pkg.Name == "app")
	}
	bind := func(lhs []ast.Expr, rhs []ast.Expr) {
		if len(rhs) == 1 && fromModule(rhs[0]) {
			if id, ok := lhs[0].(*ast.Ident); ok {
				returned[id.Name] = true
			}
			return
		}
		for i, r := range rhs {
			if i < len(lhs) && fromModule(r) {
				if id, ok := lhs[i].(*ast.Ident); ok {
					returned[id.Name] = true
				}
			}
		}
	}
	var out []violation
	ast.Inspect(body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.ValueSpec:
			names := make([]ast.Expr, len(s.Names))
			for i, id := range s.Names {
				names[i] = id
			}
			bind(names, s.Values)
		case *ast.AssignStmt:
			for _, l := range s.Lhs {
				sel, ok := l.(*ast.SelectorExpr)
				if !ok || !sel.Sel.IsExported() {
					continue
				}
				if id, ok := sel.X.(*ast.Ident); ok && returned[id.Name] {
					out = append(out, violation{pos: fset.Position(sel.Pos()), what: id.Name + "." + sel.Sel.Name})
				}
			}
			bind(s.Lhs, s.Rhs)
		}
		return true
	})
	return out
}
