// Package history loads what a long run of paydispatch leaves behind, by
// COPY, so that benchmarks (`paydispatch bench history`, `bench drain
// --history`) and plan tests run on a database with a past instead of an
// empty one.
//
// Each payment gets the rows a real run writes for it (read off a drain of
// 200 payments through the full path in BATCH mode): its id's claim, the
// payment, its COMPLETED queue item and dispatch audit, its pacing slot and
// the windows' counts, its SubmitPayment process (instance, log, inbox),
// its debit, its booking, its rail instruction's outbox key and attempts,
// and its notifications. One payment in a hundred each is FAILED (its
// process failed before any money moved, listed for an operator),
// CANCELLED before its execution, or REJECTED at intake. Every day of the
// past the payments of that day are due at 16:00 and paced at 100/s.
//
// The history keeps `paydispatch verify` clean: each debtor account's
// debits chain from an opening balance raised by their sum, so its balance
// is what it was before the load; each tenant's rail sequence moves past
// the history's.
//
// With Options.Retention (Retained gives serve's), the load leaves out what
// the retention cleaner would have deleted by its end: the history is what
// a database that ran that long holds, the money records whole.
package history
