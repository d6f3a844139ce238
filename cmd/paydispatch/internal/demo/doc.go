// Package demo is paydispatch's main job shown end to end on a running
// stack: it sets up tenants, accounts (with limits, one in another
// currency) and FX rates, submits a crowd of payments due at one instant
// over the HTTP API (bulk files and single calls, some bad, some bound to
// fail in the saga), follows them live until every one has settled, then
// verifies the outcome against the rail's ledger and the ledger check and
// writes a self-contained HTML report.
//
// It knows the stack only by its API address, its database and the rail
// simulator's address: cmd/paydispatch's demo command starts the stack.
package demo
