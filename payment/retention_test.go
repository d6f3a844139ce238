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

// TestDeleteFileFingerprints: the fingerprints whose duplicate window
// closed before the cutoff go, oldest first, at most a batch; one whose
// window is still open stays. Both the delete and a file's look-up use
// their indexes, never a scan.
func TestDeleteFileFingerprints(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO payment_file_fingerprints (tenant_id, fingerprint, batch_id, received_at, expires_at)
		SELECT 't-' || (g % 50), 'file-' || g, 'batch-' || g, now() - g * interval '1 minute', now() + interval '7 days' - g * interval '1 minute'
		FROM generate_series(1, 20000) g;
		ANALYZE payment_file_fingerprints`); err != nil {
		t.Fatal(err)
	}
	// Half a minute ago: the windows of g over 10,080 (a week of
	// minutes) closed before it.
	cutoff := time.Now().Add(-30 * time.Second)
	for _, tt := range []struct {
		limit int
		want  int64
	}{{10, 10}, {100_000, 20_000 - 10_080 - 10}} {
		if n, err := payment.DeleteFileFingerprints(ctx, pool, cutoff, tt.limit); err != nil || n != tt.want {
			t.Fatalf("limit %d: deleted %d (%v), want %d", tt.limit, n, err, tt.want)
		}
	}
	var oldest time.Time
	if err := pool.QueryRow(ctx, `SELECT min(expires_at) FROM payment_file_fingerprints`).Scan(&oldest); err != nil || oldest.Before(cutoff) {
		t.Fatalf("a window closed before the cutoff is left: %v, %v", oldest, err)
	}
	for _, call := range []struct {
		name  string
		index string
		run   func(ctx context.Context, tx pgx.Tx) error
	}{
		{"delete", "payment_file_fingerprints_expires_idx", func(ctx context.Context, tx pgx.Tx) error {
			_, err := payment.DeleteFileFingerprints(ctx, tx, time.Now(), 1000)
			return err
		}},
		{"look-up", "payment_file_fingerprints_lookup_idx", func(ctx context.Context, tx pgx.Tx) error {
			_, err := payment.SentBefore(ctx, tx, "file-7", []string{"t-7", "t-8"}, time.Now().Add(-7*24*time.Hour))
			return err
		}},
	} {
		plan := pgtest.Plans(t, pool, true, call.run)
		if !strings.Contains(plan, call.index) || strings.Contains(plan, "Seq Scan") {
			t.Errorf("the %s does not use %s:\n%s", call.name, call.index, plan)
		}
	}
}
