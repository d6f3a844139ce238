package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/queue/internal/dbsqlc"
)

// Retention defaults: what an operator who sets nothing keeps.
const (
	// DefaultCompletedRetention keeps a COMPLETED item a day, as River
	// keeps a completed job: long enough to see the day's items in
	// /metrics and the console, and an item's status in its payment's
	// view, while the money records keep the outcome for good.
	DefaultCompletedRetention = 24 * time.Hour
	// DefaultAuditRetention keeps the queue's transitions a week: an
	// incident found on a Monday can still be traced through the
	// previous week's cut-offs, as the webhook deliveries are kept.
	DefaultAuditRetention = 7 * 24 * time.Hour
)

// DeleteCompleted deletes up to limit items COMPLETED before before, of
// every type, oldest first, and answers how many: the exec_queue's
// retention (package retention calls it). Items in any other state
// (READY, PARKED, CLAIMED, DISPATCHED, FAILED, DEAD_LETTER) are never
// touched.
func (q *Queue) DeleteCompleted(ctx context.Context, before time.Time, limit int) (int64, error) {
	n, err := q.q.DeleteCompleted(ctx, dbsqlc.DeleteCompletedParams{Before: &before, MaxRows: batchLimit(limit)})
	if err != nil {
		return n, fmt.Errorf("queue: delete completed items: %w", err)
	}
	return n, nil
}

// DeleteAudit deletes up to limit dispatch_audit_log rows written
// before before, oldest first, and answers how many: the audit log's
// retention.
func (q *Queue) DeleteAudit(ctx context.Context, before time.Time, limit int) (int64, error) {
	n, err := q.q.DeleteAudit(ctx, dbsqlc.DeleteAuditParams{Before: before, MaxRows: batchLimit(limit)})
	if err != nil {
		return n, fmt.Errorf("queue: delete audit rows: %w", err)
	}
	return n, nil
}

// batchLimit bounds a retention batch to what a statement should hold.
func batchLimit(n int) int32 { return int32(min(max(n, 1), MaxBatchSize)) }
