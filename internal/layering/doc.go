// Package layering holds the test that enforces the dependency rule of
// docs/architecture.md: the framework imports no payments domain, adapter,
// wiring or tool; the ledger imports only money and itself; the calendar
// imports only the leaves; a leaf imports no adapter, tool or harness; the
// test harnesses (internal/testkit) import no framework, domain or
// migrations, and only tests and their fixtures import them; a package's
// tests migrate only what the package may import; and only the command and
// the tools import a tool. Beside it, over the same reading of the source
// tree: nothing in the wiring is set after its constructor
// (TestNothingSetAfterConstruction), and no package but internal/field
// declares a validation error (TestOneValidationError).
package layering
