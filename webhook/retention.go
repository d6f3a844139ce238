package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/webhook/internal/dbsqlc"
)

// DefaultDeliveredRetention keeps a delivered webhook's row a week: a
// tenant who asks on a Monday what reached their endpoint last week gets
// an answer.
const DefaultDeliveredRetention = 7 * 24 * time.Hour

// DeleteDelivered deletes up to limit deliveries DELIVERED (settled)
// before before, oldest first, and answers how many: the deliveries'
// retention (package retention calls it, in one process at a time).
// PENDING and SENDING deliveries and dead letters (which wait for a
// redrive) are never touched.
func DeleteDelivered(ctx context.Context, db DBTX, before time.Time, limit int) (int64, error) {
	n, err := dbsqlc.New(db).DeleteDelivered(ctx, dbsqlc.DeleteDeliveredParams{Before: before, MaxRows: int32(min(max(limit, 1), 10_000))})
	if err != nil {
		return n, fmt.Errorf("webhook: delete delivered deliveries: %w", err)
	}
	return n, nil
}
