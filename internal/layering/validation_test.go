package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// shapeAllowed are the error types that carry a field and a detail and
// are not validation errors: strictjson.Error is a body that cannot be
// read as its JSON at all (400), before any check of its values (422).
var shapeAllowed = map[string]bool{"internal/strictjson.Error": true}

// TestOneValidationError reads every non-generated, non-test Go file of
// the module: no package but internal/field declares a validation error of its
// own, by name (FieldError, *ValidationError, *InvalidError, an alias of
// field.Error or field.Invalid) or by shape (an error carrying field
// errors, or a Field and a Detail). Every check of input returns a
// *field.Invalid, which the HTTP API and the CLI read in one place.
func TestOneValidationError(t *testing.T) {
	t.Parallel()
	pkgs := map[string][]*ast.File{}
	_, files := readTree(t, moduleRoot(t), parser.SkipObjectResolution|parser.ParseComments, false)
	for _, f := range files {
		if !ast.IsGenerated(f.file) {
			pkgs[f.pkg] = append(pkgs[f.pkg], f.file)
		}
	}
	if len(pkgs) < 50 {
		t.Fatalf("read %d packages: the module's root was not found", len(pkgs))
	}
	for pkg, files := range pkgs {
		for _, v := range ownValidationErrors(pkg, files) {
			t.Error(v)
		}
	}
}

// TestOwnValidationErrorsCaught: the scan reports each way a package
// could declare a validation error again, and lets other errors be.
func TestOwnValidationErrorsCaught(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, pkg, src string
		want           int
	}{
		{"a ValidationError", "rail", `type ValidationError struct{ Fields []field.Error }`, 1},
		{"an InvalidError", "pacing", `type InvalidError struct{ Field, Detail string }`, 1},
		{"a prefixed name", "webhook", `type EndpointValidationError struct{ Msg string }`, 1},
		{"an alias", "payment", `type FieldError = field.Error`, 1},
		{"an alias of Invalid", "routing", `type Bad = field.Invalid`, 1},
		{"a definition on Invalid", "routing", `type Bad field.Invalid`, 1},
		{"the shape, with field errors", "queue", `type Refused struct{ Why []field.Error }
			func (r *Refused) Error() string { return "" }`, 1},
		{"the shape, with a field and a detail", "outbox", `type Bad struct{ Field, Detail string }
			func (b Bad) Error() string { return b.Detail }`, 1},
		{"allowed: field errors that are not an error", "payment", `type LineError struct{ Line int; Fields []field.Error }`, 0},
		{"allowed: an error wrapping the one type", "ledger", `type Refusal struct{ Code string; Invalid *field.Invalid }
			func (e *Refusal) Error() string { return e.Code }`, 0},
		{"allowed: a refusal of unreadable JSON", "internal/strictjson", `type Error struct{ Field, Detail string }
			func (e *Error) Error() string { return e.Detail }`, 0},
		{"allowed: in internal/field", "internal/field", `type Error struct{ Field, Detail string }
			type Invalid struct{ Fields []Error }
			func (e *Invalid) Error() string { return "" }`, 0},
		{"allowed: another error", "queue", `type TransitionError struct{ From, To string }
			func (e *TransitionError) Error() string { return e.From }`, 0},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+tt.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := ownValidationErrors(tt.pkg, []*ast.File{f}); len(got) != tt.want {
			t.Errorf("%s: %d found, want %d: %v", tt.name, len(got), tt.want, got)
		}
	}
}

// ownValidationErrors lists the validation error types pkg (a path in
// the module) declares in files.
func ownValidationErrors(pkg string, files []*ast.File) []string {
	if pkg == "internal/field" {
		return nil
	}
	withError := map[string]bool{} // the types with an Error method
	var specs []*ast.TypeSpec
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && d.Name.Name == "Error" && len(d.Recv.List) == 1 {
					withError[receiverName(d.Recv.List[0].Type)] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						specs = append(specs, ts)
					}
				}
			}
		}
	}
	var out []string
	for _, ts := range specs {
		name := ts.Name.Name
		switch {
		case name == "FieldError" || strings.HasSuffix(name, "ValidationError") || strings.HasSuffix(name, "InvalidError"):
			out = append(out, pkg+"."+name+": a validation error of its own: return a *field.Invalid")
		case isField(ts.Type, "Error") || isField(ts.Type, "Invalid"):
			out = append(out, pkg+"."+name+": another name for internal/field's type: use field.Error or field.Invalid")
		case withError[name] && carriesFields(ts.Type) && !shapeAllowed[pkg+"."+name]:
			out = append(out, pkg+"."+name+": an error carrying field errors: return a *field.Invalid")
		}
	}
	return out
}

func receiverName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// isField reports whether e is field.<name>.
func isField(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "field" && sel.Sel.Name == name
}

// carriesFields reports whether e is a struct holding field errors: a
// field.Error, a slice of them, or a Field and a Detail of its own.
func carriesFields(e ast.Expr) bool {
	st, ok := e.(*ast.StructType)
	if !ok {
		return false
	}
	var hasField, hasDetail bool
	for _, f := range st.Fields.List {
		t := f.Type
		if arr, ok := t.(*ast.ArrayType); ok {
			t = arr.Elt
		}
		if isField(t, "Error") {
			return true
		}
		for _, n := range f.Names {
			hasField = hasField || n.Name == "Field"
			hasDetail = hasDetail || n.Name == "Detail"
		}
	}
	return hasField && hasDetail
}
