// Package deadletter lists the dead letters of the dispatch queue (items
// whose executions could not be started or kept failing) and of the
// outbox (instructions the rail refused for good, or that ran out of
// attempts), and requeues them through a rate limiter: each requeued item
// gets a new slot from a rate-limit config (package pacing), so 50,000
// requeued payments go out at that config's rate, not in one burst.
//
// A dead letter's id says where it lives: "dispatch:<item type>:<item id>"
// or "outbox:<outbox id>". A requeue keeps the item's identity: a queue
// item becomes READY again at its slot with its retries anew (its
// execution workflow, if one failed, runs again under the same id and
// resumes where the domain's process stopped); an outbox instruction goes
// back to the pending table, due at its slot, with its id, sequence and
// idempotency key, after the domain's outbox.Hooks.OnRequeue redid what
// its OnDead undid (a returned payment is debited again).
//
// The package is framework: it knows the queue, the outbox and the
// limiter, never the payments domain, which it reaches through the
// outbox's hooks.
package deadletter
