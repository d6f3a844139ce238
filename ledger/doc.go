// Package ledger is the payments domain's ledger: accounts and their
// transactions (ledger/account), period limits (ledger/limit), FX rates and
// contracts (ledger/fx), on PostgreSQL. This package holds what they share:
// the typed refusal (Refusal, with a Code per rule) and Verify, which checks
// the ledger's invariants on a live database.
//
// # Operations run in the caller's transaction
//
// A process step (SubmitPayment: debit the amount and fee, book the
// limits, book the FX contract, create the payment booking; and the
// compensations: reverse the transaction, reverse the limits, unwind the
// contract) runs inside a transaction that the process manager opens,
// so that its effect, its inbox row and its log rows commit together.
// Every operation therefore takes a DBTX (the step's pgx.Tx, or a pool for
// a statement on its own) and never begins or commits.
//
// Every write is idempotent by a reference, '<processId>:<step>', unique
// in its table: a step delivered twice posts once even outside the
// process manager's inbox, and the second delivery gets the first result
// back ("replayed"). The same reference for a different operation is
// REFERENCE_CONFLICT.
//
// A refusal (INSUFFICIENT_FUNDS, LIMIT_EXCEEDED, ...) is a *Refusal with its
// Code, returned without an SQL error, so the step's transaction stays
// usable (to record the failure, say). Callers decide on codes, never on
// message text. An error that is not a *Refusal (a lost connection) is
// transient: retrying the step is safe because of the references.
//
// # Verify
//
// Verify checks, each rule in one statement: opening balance + credits -
// debits = balance; each transaction's resulting balance follows from the
// one before by the per-account sequence, without gaps; no balance of an
// account that is not limit-based below zero; every reversal reverses an
// existing transaction of its account and amount, once; each limit
// window's utilization is the sum of its bookings not reversed and within
// its limit; an UNWOUND contract has its unwind record; amounts positive
// and within their currency's minor units.
//
// The ledger does not import payment, queue, dispatch or Temporal.
package ledger
