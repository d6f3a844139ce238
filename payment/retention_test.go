package payment_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/payment"
)

// TestDeleteNotifications: a settled payment's notification records
// written before the cutoff go, oldest first, at most a batch; a young
// one stays, and so does an old one of a payment still on its way (its
// parties are told once).
func TestDeleteNotifications(t *testing.T) {
	t.Parallel()
	statuses := []string{"SCHEDULED", "HELD", "ACCEPTED", "PROCESSING", "DELIVERED", "RETURNED", "REJECTED", "FAILED", "CANCELLED"}
	settled := []string{"DELIVERED", "RETURNED", "REJECTED", "FAILED", "CANCELLED"}
	tests := []struct {
		name  string
		limit int
		gone  int // of the settled payments' old records, oldest first
	}{
		{"a full batch takes every old settled record", 100, len(settled)},
		{"a short limit takes the oldest first", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t)
			ctx := context.Background()
			for i, st := range statuses {
				if _, err := pool.Exec(ctx, `
					INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
					                      requested_execution_time, status, request, context)
					VALUES ($1, $1, 't', 'ACC-1', 1, 'EUR', 'Jane Doe', now(), $1, '{}', '{}')`, st); err != nil {
					t.Fatal(err)
				}
				if _, err := pool.Exec(ctx, `
					INSERT INTO payment_notifications (payment_id, party, status, created_at) VALUES
						($1, 'DEBTOR', 'PROCESSING', now() - interval '40 days' - $2 * interval '1 hour'),
						($1, 'CREDITOR', 'PROCESSING', now() - interval '1 day')`, st, len(statuses)-i); err != nil {
					t.Fatal(err)
				}
			}
			n, err := payment.DeleteNotifications(ctx, pool, time.Now().Add(-30*24*time.Hour), tt.limit)
			if err != nil || n != int64(tt.gone) {
				t.Fatalf("deleted %d (%v), want %d", n, err, tt.gone)
			}
			for _, st := range statuses {
				var old, young int
				if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE party = 'DEBTOR'), count(*) FILTER (WHERE party = 'CREDITOR')
					FROM payment_notifications WHERE payment_id = $1`, st).Scan(&old, &young); err != nil {
					t.Fatal(err)
				}
				// The settled ones' old records are oldest in the order
				// listed: the first tt.gone of them go.
				i := slices.Index(settled, st)
				wantOld := 1
				if i >= 0 && i < tt.gone {
					wantOld = 0
				}
				if old != wantOld || young != 1 {
					t.Errorf("%s: %d old and %d young records left, want %d and 1", st, old, young, wantOld)
				}
			}
		})
	}
}

// TestDeleteNotificationsUsesIndexes: the batch is found by the records'
// time index and their payments by key, never by a scan.
func TestDeleteNotificationsUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, status, request, context)
		SELECT 'k-' || g, 'p-' || g, 't', 'ACC-1', 1, 'EUR', 'Jane Doe', now(), 'DELIVERED', '{}', '{}' FROM generate_series(1, 20000) g;
		INSERT INTO payment_notifications (payment_id, party, status, created_at)
		SELECT 'k-' || g, p, 'PROCESSING', now() - g * interval '1 minute' FROM generate_series(1, 20000) g, unnest(ARRAY['DEBTOR', 'CREDITOR']) p;
		ANALYZE payments; ANALYZE payment_notifications`); err != nil {
		t.Fatal(err)
	}
	plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
		_, err := payment.DeleteNotifications(ctx, tx, time.Now().Add(-10*24*time.Hour), 1000)
		return err
	})
	for _, index := range []string{"payment_notifications_created_idx", "payments_pkey"} {
		if !strings.Contains(plan, index) {
			t.Errorf("the delete does not use %s:\n%s", index, plan)
		}
	}
	for _, table := range []string{"payments", "payment_notifications"} {
		if strings.Contains(plan, "Seq Scan on "+table) {
			t.Errorf("the delete scans %s:\n%s", table, plan)
		}
	}
}
