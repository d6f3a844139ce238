// Package layering holds the test that enforces the dependency rule of
// docs/architecture.md: the framework imports no payments domain, adapter,
// wiring or tool; the ledger imports only money and itself; the calendar
// imports only the leaves; leaves import no tool; and only the command and
// the tools import a tool.
package layering
