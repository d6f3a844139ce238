// Package queue is the dispatch queue: the PostgreSQL buffer between a
// short initialization workflow and the just-in-time start of an execution
// workflow (docs/design.md, "Dispatch queue: Phase A and Phase B").
//
// The queue is generic: it knows item types, tenants and opaque JSON
// contexts, never payments. An item moves through
//
//	READY → CLAIMED → DISPATCHED → COMPLETED
//	CLAIMED → READY | DEAD_LETTER          (start failed, stale claim)
//	DISPATCHED → FAILED → READY | DEAD_LETTER   (execution failed)
//
// and each arrow is one guarded statement (WHERE queue_status = expected)
// that writes its audit rows in the same statement. A transition whose guard
// does not match changes nothing and is reported, never silently applied.
//
// Claims use FOR UPDATE SKIP LOCKED, so any number of dispatchers claim
// disjoint batches, and return each item's context in the same round trip.
package queue
