// Package retention deletes a database's old history in small batches,
// off the hot path, in one process at a time.
//
// A Cleaner runs a list of Policies every Interval. A Policy names a
// table, how long its rows are kept (Keep; 0 keeps them all) and a
// Delete function that deletes at most limit rows older than a cutoff,
// in a deletable state only (the owning package decides what that is),
// and answers how many it deleted. Each policy is called again, after a
// short pause, until a batch comes back short: one statement of a
// thousand rows is a short transaction that holds few locks and leaves
// the hot path's statements room between batches, where one DELETE of a
// day's rows would hold them all at once and bloat the WAL in one burst.
//
// One round at a time across processes: a round takes a session-level
// PostgreSQL advisory lock with pg_try_advisory_lock on a connection
// acquired for the round, and gives it back at the round's end. A process
// that finds the lock taken skips that round. A try-lock per round, not a
// lock held for the process's life, pins no connection between rounds
// and needs no leader hand-over: when the process holding it dies, its
// session ends, the lock goes with it, and another process's next tick
// runs the round. The batches themselves run on other pooled connections
// (the lock gates rounds, it protects no rows), so a Delete closes over
// whatever handle its package uses.
//
// Metrics (prometheus): paydispatch_retention_deleted_rows_total{table},
// paydispatch_retention_errors_total{table} and
// paydispatch_retention_last_success_timestamp_seconds, the end of the
// last round that ran every policy without error.
//
// The package knows no domain: the queue, the outbox and the others give
// their own policies, and the application lists them.
package retention
