package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestDeleteDelivered: a batch deletes delivered rows settled before the
// cutoff, oldest first, at most its limit, and nothing else: not newer
// ones, not dead letters, not deliveries still to be made.
func TestDeleteDelivered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		limit   int
		deleted int64
	}{
		{"a full batch takes every old delivered row", 10_000, 5000},
		{"a short limit takes a batch", 1000, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			ctx := context.Background()
			// Of every four: two DELIVERED (one 8 days ago, one now), a
			// DEAD and a PENDING, half of those settled 8 days ago too.
			if _, err := pool.Exec(ctx, `
				INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload, state, settled_at)
				SELECT gen_random_uuid(), 't-1', 'pay-' || g, gen_random_uuid(), 'payment.delivered', '{}',
				       (ARRAY['DELIVERED', 'DELIVERED', 'DEAD', 'PENDING'])[g % 4 + 1],
				       CASE WHEN g % 4 < 3 THEN now() - (g % 2) * interval '8 days' END
				FROM generate_series(1, 20000) g`); err != nil {
				t.Fatal(err)
			}
			n, err := webhook.DeleteDelivered(ctx, pool, time.Now().Add(-7*24*time.Hour), tt.limit)
			if err != nil || n != tt.deleted {
				t.Fatalf("deleted %d (%v), want %d", n, err, tt.deleted)
			}
			var old, recent, dead, pending int64
			var oldestLeft int64
			if err := pool.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE state = 'DELIVERED' AND settled_at < now() - interval '7 days'),
				count(*) FILTER (WHERE state = 'DELIVERED' AND settled_at > now() - interval '7 days'),
				count(*) FILTER (WHERE state = 'DEAD'), count(*) FILTER (WHERE state = 'PENDING'),
				coalesce(min(delivery_id) FILTER (WHERE state = 'DELIVERED' AND settled_at < now() - interval '7 days'), 0)
				FROM webhook_deliveries`).Scan(&old, &recent, &dead, &pending, &oldestLeft); err != nil {
				t.Fatal(err)
			}
			if old != 5000-tt.deleted || recent != 5000 || dead != 5000 || pending != 5000 {
				t.Fatalf("left %d old delivered, %d recent, %d dead, %d pending; want %d, 5000, 5000, 5000", old, recent, dead, pending, 5000-tt.deleted)
			}
			// The old delivered rows are every fourth from the first:
			// the batch took the oldest.
			if old > 0 && oldestLeft != 4*tt.deleted+1 {
				t.Errorf("the oldest old row left is %d, want %d", oldestLeft, 4*tt.deleted+1)
			}
		})
	}
}

// TestDeleteDeliveredUsesIndexes: the batch is read by the primary key
// (the order deliveries were written), never by a scan of the table.
func TestDeleteDeliveredUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload, state, settled_at)
		SELECT gen_random_uuid(), 't-1', 'pay-' || g, gen_random_uuid(), 'payment.delivered', '{}', 'DELIVERED',
		       now() - (50000 - g) * interval '1 minute'
		FROM generate_series(1, 50000) g;
		ANALYZE webhook_deliveries`); err != nil {
		t.Fatal(err)
	}
	plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
		_, err := webhook.DeleteDelivered(ctx, tx, time.Now().Add(-7*24*time.Hour), 1000)
		return err
	})
	if !strings.Contains(plan, "webhook_deliveries_pkey") || strings.Contains(plan, "Seq Scan on webhook_deliveries") {
		t.Errorf("the delete does not read by webhook_deliveries_pkey:\n%s", plan)
	}
}
