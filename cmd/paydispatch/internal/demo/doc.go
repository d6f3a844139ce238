// Package demo is paydispatch's main job shown end to end on a running
// stack: it sets up tenants, accounts (with limits, one in another
// currency), FX rates and two rails with their own rates and cut-offs (a
// calendar, routing rules, the tenants' cut-off rules), submits a crowd
// of payments due at one instant over the HTTP API (bulk files and
// single calls, some bad, some bound to fail in the saga, the end of a
// file past a cut-off), follows them live, rail by rail, until every one
// has settled, then verifies the outcome against the rails' ledgers and
// cut-offs, the projections and the ledger check and writes a
// self-contained HTML report.
//
// It knows the stack only by its API address, its database and the rail
// simulator's address: cmd/paydispatch's demo command starts the stack.
package demo
