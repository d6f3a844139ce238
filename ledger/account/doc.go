// Package account keeps accounts and their transactions: create (once per
// client-chosen id), get, a bulk lookup for Phase A (one query for a whole
// file), debit, credit and reverse.
//
// # One posting, one round trip
//
// Every posting goes through the SQL function ledger_post
// (migrations/functions.sql): lock the account row, see whether the reference was posted
// already (after the lock, in a statement of its own, so a concurrent
// delivery of the same step to this account has committed and is seen:
// the duplicate gets the first posting back instead of a unique-key error
// that would abort the caller's transaction), check the funds, move the
// balance and the per-account sequence, insert the transaction. Refusals
// come back as statuses, so the caller's transaction stays usable.
//
// # Concurrency: a row lock, held briefly
//
// Many debits of one account at once (a payroll file from one corporate
// account) are serialized by the account row's lock: none is lost, none
// overdraws, and each transaction's resulting balance follows from the
// one before (seq 1, 2, 3, ... without gaps, checkable by ledger.Verify).
// A debit beyond the balance of an account that is not limit-based is
// INSUFFICIENT_FUNDS and changes nothing; a limit-based account may go
// below zero (its control is ledger/limit).
//
// The lock is held from the posting until the caller's transaction
// commits, so one account's throughput is bounded by that span, commit
// and its WAL flush included: call Debit last in the step, after the
// inbox and log rows, and commit right after it. Nothing else is locked
// (no foreign keys: no KEY SHARE on the account from the insert), so
// payments of different accounts do not wait for each other.
//
// A debit may charge the account's flat fee (ChargeFee): the transaction's
// amount is the payment's plus the fee, and Fee records the fee's part,
// both in the account currency; a reversal returns both.
package account
