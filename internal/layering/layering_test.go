package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/paydispatch/paydispatch/"

// The layers, by package path within the module (a path names the package
// and the packages under it).
var (
	framework = []string{"queue", "pacing", "dispatch", "process", "outbox", "webhook", "deadletter", "retention"}
	domain    = []string{"payment", "ledger", "money", "bankid", "auth", "idempotency", "audit", "bulkfile", "xmlschema", "calendar", "routing"}
	// schema gathers the packages' migrations for postgres's migrator.
	adapters = []string{"postgres", "schema", "temporal", "httpapi", "console", "rail", "railsim", "kafka", "client"}
	// The wiring goes with the command that runs it.
	wiring = []string{"cmd/paydispatch/internal/app", "cmd/paydispatch/internal/config"}
	// The command and its tools (cmd/paydispatch/internal: bench, demo,
	// chaos, svgchart).
	tools  = []string{"cmd"}
	leaves = []string{"internal/plaintext", "internal/wait", "internal/strictjson", "internal/field", "internal/ptr", "internal/explain", "internal/fuzzcost", "internal/pgtest", "internal/temporaltest", "internal/loopback", "internal/listeners"}
)

// TestDependencyRule reads the imports of every non-test Go file of the
// module and checks each package's imports, direct and indirect, against
// the rule.
func TestDependencyRule(t *testing.T) {
	t.Parallel()
	imports := readImports(t)
	if len(imports) < 50 {
		t.Fatalf("read %d packages: the module's root was not found", len(imports))
	}
	for _, v := range violations(imports) {
		t.Error(v)
	}
}

// TestRuleCatches: the rule reports what it forbids, directly or through
// another package, and lets the allowed arrows be.
func TestRuleCatches(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		imports map[string][]string
		want    int
	}{
		{"the framework imports the domain", map[string][]string{"outbox": {"payment"}}, 1},
		{"the framework imports the domain through a leaf", map[string][]string{"pacing": {"internal/plaintext"}, "internal/plaintext": {"money"}}, 2},
		{"a leaf imports a tool", map[string][]string{"internal/strictjson": {"cmd/paydispatch/internal/demo"}}, 2},
		{"the ledger imports a payment", map[string][]string{"ledger/account": {"payment"}}, 1},
		{"the domain imports the wiring", map[string][]string{"payment": {"cmd/paydispatch/internal/app"}}, 2},
		{"a fixture of the ledger's tests opens a database", map[string][]string{"ledger/internal/ledgertest": {"ledger", "postgres"}}, 0},
		{"the outbox's public fixture imports the outbox", map[string][]string{"outbox/outboxtest": {"outbox", "outbox/internal/dbsqlc"}}, 0},
		{"the outbox's public fixture opens a database", map[string][]string{"outbox/outboxtest": {"outbox", "postgres"}}, 1},
		{"the outbox's public fixture imports the queue", map[string][]string{"outbox/outboxtest": {"queue"}}, 1},
		{"the calendar imports another domain package", map[string][]string{"calendar": {"money"}}, 1},
		{"the calendar imports the framework through a leaf", map[string][]string{"calendar": {"internal/field"}, "internal/field": {"pacing"}}, 2},
		{"allowed: the calendar on a leaf, its migrations and generated code", map[string][]string{
			"calendar": {"internal/field", "calendar/internal/dbsqlc"}, "schema": {"calendar/migrations"}}, 0},
		{"the payments import the rail adapter", map[string][]string{"payment": {"rail"}}, 1},
		{"routing imports the rail adapter through the payments", map[string][]string{"routing": {"payment"}, "payment": {"railsim"}}, 2},
		{"allowed: the domain on the framework, a migration package, a tool on anything", map[string][]string{
			"payment": {"queue", "ledger/account", "routing", "payment/internal/dbsqlc"}, "schema": {"payment/migrations"},
			"cmd/paydispatch/internal/bench": {"cmd/paydispatch/internal/app", "httpapi"}, "dispatch": {"queue", "pacing"}}, 0},
	} {
		if got := violations(tt.imports); len(got) != tt.want {
			t.Errorf("%s: %d violations, want %d: %v", tt.name, len(got), tt.want, got)
		}
	}
}

// violations checks imports (a package's path within the module → the
// module's packages it imports) against the rule.
func violations(imports map[string][]string) []string {
	rules := []struct {
		name            string
		from, forbidden []string
	}{
		{"the framework imports no domain, adapter, wiring or tool", framework, concat(domain, adapters, wiring, tools)},
		{"no framework package imports another but dispatch (queue and pacing) and deadletter (queue, pacing and outbox)", []string{"queue", "pacing", "process", "outbox", "webhook", "retention"}, framework},
		{"the ledger imports only money and itself", []string{"ledger"}, concat(framework, adapters, wiring, tools,
			[]string{"payment", "bankid", "auth", "idempotency", "audit", "bulkfile", "xmlschema"})},
		{"the rail delivers instructions and knows no payment", []string{"rail", "railsim"}, []string{"payment", "ledger", "httpapi", "postgres", "temporal"}},
		{"the domain imports no wiring, tool or HTTP", domain, concat(wiring, tools, []string{"httpapi"})},
		{"the domain builds rail-neutral instructions: it imports no rail adapter", domain, []string{"rail", "railsim", "kafka"}},
		{"the calendar imports only the leaves: it knows no payment or rail", []string{"calendar"}, concat(framework, domain, adapters, wiring, tools)},
		{"the adapters import no wiring or tool", adapters, concat(wiring, tools)},
		{"a leaf imports no framework, domain, wiring or tool", leaves, concat(framework, domain, wiring, tools)},
	}
	var out []string
	for _, r := range rules {
		for pkg := range imports {
			if !under(pkg, r.from) || fixture(pkg) {
				continue
			}
			home := []string{part(pkg, r.from)}
			for _, dep := range deps(imports, pkg) {
				if under(dep, r.forbidden) && !under(dep, home) && !migrations(dep) {
					out = append(out, r.name+": "+pkg+" imports "+dep)
				}
			}
		}
	}
	// Nothing but the command, the wiring and the tools imports a tool or
	// the wiring.
	top := concat(tools, wiring)
	for pkg, ds := range imports {
		if under(pkg, top) {
			continue
		}
		for _, dep := range ds {
			if under(dep, top) {
				out = append(out, "only the command and the tools import a tool or the wiring: "+pkg+" imports "+dep)
			}
		}
	}
	slices.Sort(out)
	return out
}

// fixture: a package's test fixtures (ledger/internal/ledgertest), built
// into its tests alone, which may open a database as the tests do.
func fixture(pkg string) bool {
	return strings.Contains(pkg, "/internal/") && strings.HasSuffix(path.Base(pkg), "test")
}

// part is the one of paths that pkg is, or is under. A package may import
// its own part: outbox/outboxtest imports outbox, outbox imports
// outbox/internal/dbsqlc; neither is another framework package.
func part(pkg string, paths []string) string {
	for _, p := range paths {
		if under(pkg, []string{p}) {
			return p
		}
	}
	return pkg
}

// migrations: a package's embedded migrations, a leaf any package may
// import (schema gathers them for the tests' databases).
func migrations(pkg string) bool { return pkg == "migrations" || strings.HasSuffix(pkg, "/migrations") }

func concat(lists ...[]string) []string { return slices.Concat(lists...) }

// under reports whether pkg is one of paths or under one of them.
func under(pkg string, paths []string) bool {
	for _, p := range paths {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

// deps is every package of the module pkg imports, directly or not.
func deps(imports map[string][]string, pkg string) []string {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(p string) {
		for _, d := range imports[p] {
			if !seen[d] {
				seen[d] = true
				visit(d)
			}
		}
	}
	visit(pkg)
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// readImports maps each package of the module (its path within the
// module) to the module's packages its non-test files import.
func readImports(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	imports := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(p, module); ok && !slices.Contains(imports[pkg], dep) {
				imports[pkg] = append(imports[pkg], dep)
			}
		}
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return imports
}
