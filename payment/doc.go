// Package payment is the payments domain: what a payment request is, how
// it is validated and taken in (RECEIVED: its id claimed, its request in
// its Phase A workflow's intake row, alone or as a bulk file in chunks),
// Phase A (PaymentPhaseA: enrichment, rules, the pacing slot, the
// payment's row written once and its queue item, in one transaction; the
// queue item of a slot past the queue's mark written by the Feeder, in a
// dispatch cycle, as it comes near), the execution (PaymentExecution
// and the SubmitPayment saga on the ledger, run per payment or in batches
// by the dispatcher), the rail instruction's outbox hooks, its business
// statuses, and Verify, the money invariants across the ledger, the
// process manager and the outbox. It is built on the framework packages
// (queue, dispatch, pacing, process, outbox), which never import it.
package payment
