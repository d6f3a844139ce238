package payment

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// DefaultNotificationRetention keeps the record that a payment's parties
// were told of a status 30 days, with the payment's other working rows.
const DefaultNotificationRetention = 30 * 24 * time.Hour

// DeleteNotifications deletes up to limit notification records written
// before before, oldest first, of payments settled for good (DELIVERED,
// RETURNED, REJECTED, FAILED, CANCELLED), and answers how many:
// payment_notifications' retention (package retention calls it). A
// payment still on its way keeps its records, so its parties are told
// once.
func DeleteNotifications(ctx context.Context, db DB, before time.Time, limit int) (int64, error) {
	n, err := dbsqlc.New(db).DeleteNotifications(ctx, dbsqlc.DeleteNotificationsParams{Before: before, MaxRows: int32(min(max(limit, 1), 10_000))})
	if err != nil {
		return n, fmt.Errorf("payment: delete notifications: %w", err)
	}
	return n, nil
}
