package layering

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

// TestNothingSetAfterConstruction reads the wiring's non-test files
// (cmd/): a component, the value a constructor of the module returned
// (pkg.New…, or one of the wiring's own builders in package app), is not
// changed afterwards, by assigning to an exported field or by calling a
// setter of the module (an exported method, on a pointer, that returns
// nothing and only assigns to its receiver's fields); it takes its
// settings in the Config of its constructor. A Config the wiring fills
// field by field before the call, and a row read to be edited and stored
// again (routing.GetRail), are not components and are not checked.
func TestNothingSetAfterConstruction(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	_, module := readTree(t, root, parser.SkipObjectResolution, false)
	for _, v := range setAfterConstruction(t, filepath.Join(root, "cmd"), setters(module)) {
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
	lim.SetBurst(3)
	lim.Reserve(3)
	var b = strings.NewReplacer()
	b.Field = 1
	cfg := pacing.Config{}
	cfg.CacheTTL = 2
	_ = err
}

type limiter struct{ burst, left int }

func (l *limiter) SetBurst(n int) {
	if n < 1 {
		n = 1
	}
	l.burst = n
}

func (l *limiter) Reserve(n int) { l.left -= n; use(l) }
`
	if err := os.WriteFile(filepath.Join(dir, "wiring.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, files := readTree(t, dir, parser.SkipObjectResolution, false)
	var got []string
	for _, v := range setAfterConstruction(t, dir, setters(files)) {
		got = append(got, v.what)
	}
	want := []string{"svc.Metrics", "lim.CacheTTL", "lim.SetBurst"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("found %v, want %v (strings' value, a row read, a Config built in place and a method that does more than set are not)", got, want)
	}
}

type violation struct {
	pos  token.Position
	what string
}

// setAfterConstruction scans the non-test Go files under dir; setters
// are the names of the module's setter methods.
func setAfterConstruction(t *testing.T, dir string, setters map[string]bool) []violation {
	t.Helper()
	fset, files := readTree(t, dir, parser.SkipObjectResolution, false)
	var out []violation
	for _, f := range files {
		ours := map[string]bool{} // the file's names for the module's packages
		for _, im := range f.file.Imports {
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
		for _, decl := range f.file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				out = append(out, scanBody(fset, fn.Body, ours, setters)...)
			}
		}
	}
	return out
}

// setters are the names of the setter methods among files: exported
// methods on a pointer that return nothing and whose every statement
// assigns to a field of the receiver (ifs around such assignments
// included).
func setters(files []goFile) map[string]bool {
	out := map[string]bool{}
	for _, f := range files {
		for _, decl := range f.file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil || !fn.Name.IsExported() || fn.Type.Results != nil || len(fn.Recv.List[0].Names) == 0 {
				continue
			}
			if _, pointer := fn.Recv.List[0].Type.(*ast.StarExpr); !pointer {
				continue
			}
			if onlySets(fn.Body.List, fn.Recv.List[0].Names[0].Name) {
				out[fn.Name.Name] = true
			}
		}
	}
	return out
}

// onlySets reports whether stmts set a field of recv and do nothing else
// but return and assign to locals (a value adjusted before it is set),
// through ifs.
func onlySets(stmts []ast.Stmt, recv string) bool {
	sets, ok := setsOnly(stmts, recv)
	return ok && sets
}

func setsOnly(stmts []ast.Stmt, recv string) (sets, ok bool) {
	for _, st := range stmts {
		switch s := st.(type) {
		case *ast.AssignStmt:
			for _, l := range s.Lhs {
				if _, local := l.(*ast.Ident); local {
					continue
				}
				sel, isSel := l.(*ast.SelectorExpr)
				if !isSel {
					return false, false
				}
				if id, isID := sel.X.(*ast.Ident); !isID || id.Name != recv {
					return false, false
				}
				sets = true
			}
		case *ast.IfStmt:
			branches := []ast.Stmt{s.Body}
			if s.Else != nil {
				branches = append(branches, s.Else)
			}
			for _, b := range branches {
				list := []ast.Stmt{b}
				if block, isBlock := b.(*ast.BlockStmt); isBlock {
					list = block.List
				}
				set, fine := setsOnly(list, recv)
				if !fine {
					return false, false
				}
				sets = sets || set
			}
		case *ast.ReturnStmt:
		default:
			return false, false
		}
	}
	return sets, true
}

// scanBody finds, in one function (its closures included), the variables
// bound to a component and the assignments to their exported fields. Names are matched per function, which is enough
// for wiring code that does not shadow.
func scanBody(fset *token.FileSet, body *ast.BlockStmt, ours, setters map[string]bool) []violation {
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
		case *ast.ExprStmt:
			call, ok := s.X.(*ast.CallExpr)
			if !ok {
				break
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && setters[sel.Sel.Name] {
				if id, ok := sel.X.(*ast.Ident); ok && returned[id.Name] {
					out = append(out, violation{pos: fset.Position(sel.Pos()), what: id.Name + "." + sel.Sel.Name})
				}
			}
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
