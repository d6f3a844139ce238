package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goFile is one Go file of a tree, parsed.
type goFile struct {
	// pkg is the file's directory relative to the tree's root, with
	// slashes: its package's path within the module when the root is the
	// module's.
	pkg  string
	test bool
	file *ast.File
}

// moduleRoot is the module's root directory, two levels up.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// readTree parses the Go files under root, with mode, but for those in
// testdata and hidden directories, and test files unless tests is set.
func readTree(t *testing.T, root string, mode parser.Mode, tests bool) (*token.FileSet, []goFile) {
	t.Helper()
	fset := token.NewFileSet()
	var out []goFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		test := strings.HasSuffix(path, "_test.go")
		if !strings.HasSuffix(path, ".go") || test && !tests {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, mode)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		out = append(out, goFile{pkg: filepath.ToSlash(rel), test: test, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, out
}
