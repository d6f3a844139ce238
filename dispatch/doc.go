// Package dispatch is Phase B of the dispatch queue (docs/design.md): the
// dispatcher cycle that releases due queue items to the workflow engine,
// just in time: one short execution workflow per item (PER_ITEM), or one
// per claimed batch (BATCH), which executes each item at its time.
//
// One cycle (DispatcherWorkflow, fired by a Temporal Schedule with overlap
// SKIP, or by the lease runner) reads the item type's configuration (a
// disabled type returns at once: the kill switch), recovers stale claims,
// reconciles dispatched items with the engine, claims a batch and starts
// its execution workflows, and records the results. The workflow is
// deterministic; every read and write is an activity. An item type whose
// domain writes the queue items of its far-off work late has a Feeder,
// run in the claim's activity before the claim: it enqueues what comes
// due before the claim's reach and FeedAhead beyond.
//
// The package is generic: it knows item types, their configured execution
// workflow type and task queue, and opaque contexts; never payments. An
// execution workflow receives (itemID, contextJSON) and knows nothing of the
// queue.
//
// A paced item (its time is a slot from package pacing) is started the
// type's paced lead ahead of the slot, with the slot in the start's memo:
// the execution workflow reads it with NotBefore and holds the item with
// Hold in its first (local) activity, on the worker's clock, so the
// engine's timer lateness does not move executions off their slots.
//
// An execution worker may carry the Settler, an interceptor that settles
// the item (DISPATCHED → COMPLETED) as the completed execution's last step,
// so max_in_flight frees a place when an execution ends; the reconcile
// settles failures and any settlement lost. The step is behind GetVersion
// only for a workflow type with runs older than it (SettledWorkflow).
//
// In BATCH mode (an item type's exec_mode) the claim starts BatchExecution
// (id exec-batch-{type}-{batch}) on the type's task queue, where a
// BatchRunner is registered with each type's Executor. It runs the items in
// groups, a local activity each (RunGroup), settles the executed ones and
// hands an item that has to wait, or failed, to its own PER_ITEM workflow.
//
// Exactly-once starts rest on four layers: the schedule's SKIP overlap
// policy (one cycle at a time), SKIP LOCKED claims (disjoint batches), the
// deterministic workflow id exec-{type}-{id} with the engine refusing a
// second start (see Temporal.Start), and guarded queue transitions.
package dispatch
