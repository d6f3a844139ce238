package layering

import (
	"go/parser"
	"path"
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
	adapters = []string{"postgres", "schema", "temporal", "httpapi", "console", "rail", "railsim", "kafka", "client", "screening"}
	// The wiring goes with the command that runs it.
	wiring = []string{"cmd/paydispatch/internal/app", "cmd/paydispatch/internal/config"}
	// The command and its tools (cmd/paydispatch/internal: bench, demo,
	// chaos, svgchart).
	tools = []string{"cmd"}
	// The leaves: small helpers any layer may import.
	leaves = []string{"internal/plaintext", "internal/wait", "internal/strictjson", "internal/field", "internal/ptr", "internal/explain", "internal/loopback", "internal/txdetail", "internal/pgcopy", "internal/pgerr"}
	// The test harnesses (pgtest, temporaltest, fuzzcost, listeners), for
	// tests alone, apart from the leaves: they may stand on postgres and
	// temporal, which the leaves may not.
	harnesses = []string{"internal/testkit"}
)

// TestDependencyRule reads the imports of every Go file of the module and
// checks each package's imports, direct and indirect, against the rule,
// and what its tests migrate.
func TestDependencyRule(t *testing.T) {
	t.Parallel()
	imports, tests := readImports(t)
	if len(imports) < 50 || len(tests) < 30 {
		t.Fatalf("read %d packages, %d with tests: the module's root was not found", len(imports), len(tests))
	}
	for _, v := range slices.Concat(violations(imports), testViolations(imports, tests)) {
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
		{"a leaf imports a harness", map[string][]string{"internal/strictjson": {"internal/testkit/pgtest"}}, 2},
		{"a leaf imports an adapter", map[string][]string{"internal/explain": {"postgres"}}, 1},
		{"a harness imports the whole schema", map[string][]string{"internal/testkit/pgtest": {"schema"}, "schema": {"payment/migrations"}}, 2},
		{"a harness imports a package's migrations", map[string][]string{"internal/testkit/pgtest": {"queue/migrations"}}, 1},
		{"a harness imports the domain", map[string][]string{"internal/testkit/temporaltest": {"payment"}}, 1},
		{"allowed: harnesses on postgres, temporal and a leaf", map[string][]string{
			"internal/testkit/pgtest": {"postgres", "postgres/pgserver", "internal/explain"}, "internal/testkit/temporaltest": {"temporal/devserver"}}, 0},
		{"the product imports a harness", map[string][]string{"payment": {"internal/testkit/pgtest"}}, 1},
		{"the product imports a harness through a fixture", map[string][]string{
			"ledger/account": {"ledger/internal/ledgertest"}, "ledger/internal/ledgertest": {"internal/testkit/pgtest"}}, 1},
		{"allowed: a fixture on a harness and its package's migrations", map[string][]string{
			"ledger/internal/ledgertest": {"internal/testkit/pgtest", "ledger/account/migrations"}}, 0},
		{"a package under internal/ neither leaf nor harness", map[string][]string{"internal/misc": nil}, 1},
		{"allowed: the domain on the framework, a migration package, a tool on anything", map[string][]string{
			"payment": {"queue", "ledger/account", "routing", "payment/internal/dbsqlc"}, "schema": {"payment/migrations"},
			"cmd/paydispatch/internal/bench": {"cmd/paydispatch/internal/app", "httpapi"}, "dispatch": {"queue", "pacing"}}, 0},
	} {
		if got := violations(tt.imports); len(got) != tt.want {
			t.Errorf("%s: %d violations, want %d: %v", tt.name, len(got), tt.want, got)
		}
	}
}

// TestTestsCatches: a package's tests migrate only what the package may
// import, directly or through a fixture.
func TestTestsCatches(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name           string
		imports, tests map[string][]string
		want           int
	}{
		{"the ledger's tests migrate the whole schema", map[string][]string{"schema": {"payment/migrations"}},
			map[string][]string{"ledger/account": {"schema"}}, 2},
		{"the ledger's tests reach the payments' migrations through a fixture",
			map[string][]string{"ledger/internal/ledgertest": {"internal/testkit/pgtest", "payment/migrations"}},
			map[string][]string{"ledger": {"ledger/internal/ledgertest"}}, 1},
		{"the queue's tests migrate the pacer's tables", nil, map[string][]string{"queue": {"pacing/migrations"}}, 1},
		{"allowed: the ledger's own, the dispatcher's on the queue and the pacer, the payments' on the whole schema",
			map[string][]string{"ledger/internal/ledgertest": {"ledger/account/migrations", "ledger/fx/migrations"}, "schema": {"payment/migrations", "queue/migrations"}},
			map[string][]string{"ledger/fx": {"ledger/internal/ledgertest"}, "dispatch": {"queue/migrations", "pacing/migrations"}, "payment": {"schema"}}, 0},
	} {
		if got := testViolations(tt.imports, tt.tests); len(got) != tt.want {
			t.Errorf("%s: %d violations, want %d: %v", tt.name, len(got), tt.want, got)
		}
	}
}

type rule struct {
	name            string
	from, forbidden []string
	// migrations: the forbidden packages' migrations are forbidden too
	// (elsewhere, any package's migrations are a leaf).
	migrations bool
}

// violations checks imports (a package's path within the module → the
// module's packages it imports) against the rule.
func violations(imports map[string][]string) []string {
	out := ruleViolations(imports)
	for pkg := range imports {
		if under(pkg, []string{"internal"}) && !under(pkg, concat(leaves, harnesses, []string{"internal/layering"})) {
			out = append(out, "a package under internal/ is a leaf or a harness (internal/testkit): "+pkg+" is neither")
		}
		if under(pkg, harnesses) || fixture(pkg) {
			continue
		}
		for _, dep := range deps(imports, pkg) {
			if under(dep, harnesses) {
				out = append(out, "only tests and their fixtures import a harness: "+pkg+" imports "+dep)
			}
		}
	}
	slices.Sort(out)
	return out
}

// testViolations: a package's tests (tests: the module's packages its test
// files import) migrate only the parts of the schema the package may
// import: a migrations package counts as an import of its package, the
// whole schema as an import of schema. The ledger's tests, say, reach no
// payment migration, even through a fixture.
func testViolations(imports, tests map[string][]string) []string {
	var out []string
	for pkg, ds := range tests {
		reach := map[string]bool{}
		for _, d := range ds {
			reach[d] = true
			for _, dd := range deps(imports, d) {
				reach[dd] = true
			}
		}
		for dep := range reach {
			owner, ok := strings.CutSuffix(dep, "/migrations")
			if !ok && dep != "schema" {
				continue
			}
			if len(ruleViolations(map[string][]string{pkg: {owner}})) > 0 {
				out = append(out, "a package's tests migrate only what the package may import: "+pkg+"'s tests reach "+dep)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ruleViolations checks imports against the layers' rules.
func ruleViolations(imports map[string][]string) []string {
	rules := []rule{
		{"the framework imports no domain, adapter, wiring or tool", framework, concat(domain, adapters, wiring, tools), false},
		{"no framework package imports another but dispatch (queue and pacing) and deadletter (queue, pacing and outbox)", []string{"queue", "pacing", "process", "outbox", "webhook", "retention"}, framework, false},
		{"the ledger imports only money and itself", []string{"ledger"}, concat(framework, adapters, wiring, tools,
			[]string{"payment", "bankid", "auth", "idempotency", "audit", "bulkfile", "xmlschema"}), false},
		{"the rail delivers instructions and knows no payment", []string{"rail", "railsim"}, []string{"payment", "ledger", "httpapi", "postgres", "temporal"}, false},
		{"the domain imports no wiring, tool or HTTP", domain, concat(wiring, tools, []string{"httpapi"}), false},
		{"the domain builds rail-neutral instructions: it imports no rail adapter", domain, []string{"rail", "railsim", "kafka"}, false},
		{"the calendar imports only the leaves: it knows no payment or rail", []string{"calendar"}, concat(framework, domain, adapters, wiring, tools), false},
		{"the adapters import no wiring or tool", adapters, concat(wiring, tools), false},
		{"a leaf imports no framework, domain, adapter, wiring, tool or harness", leaves, concat(framework, domain, adapters, wiring, tools, harnesses), false},
		{"a harness imports no framework, domain, wiring, tool, schema or migrations: a package's TestMain names the migrations its tests need",
			harnesses, concat(framework, domain, wiring, tools, []string{"schema"}), true},
	}
	var out []string
	for _, r := range rules {
		for pkg := range imports {
			if !under(pkg, r.from) || fixture(pkg) {
				continue
			}
			home := []string{part(pkg, r.from)}
			for _, dep := range deps(imports, pkg) {
				if under(dep, r.forbidden) && !under(dep, home) && (r.migrations || !migrations(dep)) {
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
// module) to the module's packages its non-test files import, and each
// package with tests to the module's packages its test files import.
func readImports(t *testing.T) (imports, tests map[string][]string) {
	t.Helper()
	imports, tests = map[string][]string{}, map[string][]string{}
	_, files := readTree(t, moduleRoot(t), parser.ImportsOnly, true)
	for _, f := range files {
		into := imports
		if f.test {
			into = tests
		}
		for _, spec := range f.file.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if dep, ok := strings.CutPrefix(p, module); ok && !slices.Contains(into[f.pkg], dep) {
				into[f.pkg] = append(into[f.pkg], dep)
			}
		}
		if _, ok := into[f.pkg]; !ok {
			into[f.pkg] = nil
		}
	}
	return imports, tests
}
