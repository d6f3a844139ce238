package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// DefaultDoneRetention keeps a done instruction's key and attempts 30
// days: long enough for an operator to trace a payment's delivery through
// a month-end, a rail's late return, and the reconciliation of the
// rail's statements, while the booking (the money record) keeps which
// instruction it was for good.
const DefaultDoneRetention = 30 * 24 * time.Hour

// Beginner is a DBTX that can begin a transaction: a pool, a connection
// or a transaction (whose Begin is a savepoint).
type Beginner interface {
	DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
}

// maxDeleteBatch bounds a retention batch to what a statement should hold.
const maxDeleteBatch = 10_000

// DeleteDone deletes up to limit instructions enqueued before before and
// done — nothing pending (a retry, a backoff, an inquiry), nothing in
// flight, no dead letter — each with its key and every archived attempt,
// oldest first, and answers how many: the outbox's retention (package
// retention calls it). An instruction not yet done is never touched,
// however old.
func DeleteDone(ctx context.Context, db Beginner, before time.Time, limit int) (int64, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: delete done instructions: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The archive's trigger lets the retention's transaction delete.
	if _, err := tx.Exec(ctx, `SELECT set_config('paydispatch.retention', 'on', true)`); err != nil {
		return 0, fmt.Errorf("outbox: delete done instructions: %w", err)
	}
	n, err := dbsqlc.New(tx).DeleteDone(ctx, dbsqlc.DeleteDoneParams{Before: before, MaxRows: int32(min(max(limit, 1), maxDeleteBatch))})
	if err != nil {
		return 0, fmt.Errorf("outbox: delete done instructions: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("outbox: delete done instructions: commit: %w", err)
	}
	return n, nil
}
