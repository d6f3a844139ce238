package process

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// DefaultEndedRetention keeps an ended process 30 days: its log shows an
// operator how a payment went through the month, while the payment and
// its ledger transactions (the money records) keep the outcome for good.
const DefaultEndedRetention = 30 * 24 * time.Hour

// DeleteEnded deletes up to limit processes that ended for good
// (SUCCEEDED or COMPENSATED) before before, oldest first, each with its
// log, inbox and attention rows, and answers how many: the process
// manager's retention (package retention calls it). An open process, a
// paused one, and a FAILED or COMPENSATION_FAILED one (which an operator
// may still retry or compensate) are never touched.
func DeleteEnded(ctx context.Context, db DB, before time.Time, limit int) (int64, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("process: delete ended processes: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The log's trigger lets the retention's transaction delete.
	if _, err := tx.Exec(ctx, `SELECT set_config('paydispatch.retention', 'on', true)`); err != nil {
		return 0, fmt.Errorf("process: delete ended processes: %w", err)
	}
	n, err := dbsqlc.New(tx).DeleteEnded(ctx, dbsqlc.DeleteEndedParams{Before: before, MaxRows: int32(min(max(limit, 1), 10_000))})
	if err != nil {
		return 0, fmt.Errorf("process: delete ended processes: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("process: delete ended processes: commit: %w", err)
	}
	return n, nil
}
