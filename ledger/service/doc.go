// Package service is the ledger's intake for the HTTP API: it opens the
// transactions that the ledger's operations leave to their caller (an
// account and its limits commit together) and composes the account view
// (balance, limits with their current utilization, recent transactions).
// Process steps do not use it: they call ledger/account, ledger/limit and
// ledger/fx in the transaction the process manager opened.
package service
