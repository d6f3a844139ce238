package limit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/limit"
)

// TestHotQueriesUseIndexes checks the plans of a booking's and a
// reversal's statements on 200,000 windows and bookings: each finds its
// rows by key.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	for _, sql := range []string{
		`INSERT INTO account_limit (account_id, period, currency, amount)
		 SELECT 'A-' || a, p, 'EUR', 1000000 FROM generate_series(1, 1000) a, unnest('{MINUTE,HOUR,DAY}'::text[]) p`,
		`INSERT INTO limit_window (account_id, period, window_start, window_end, currency, limit_amount, utilized)
		 SELECT 'A-' || a, 'MINUTE', timestamptz '2026-03-04 00:00:00Z' + m * interval '1 minute',
		        timestamptz '2026-03-04 00:01:00Z' + m * interval '1 minute', 'EUR', 1000000, 10
		 FROM generate_series(1, 1000) a, generate_series(0, 199) m`,
		`INSERT INTO limit_booking (reference, period, account_id, window_start, amount)
		 SELECT 'ref-' || a || '-' || m, 'MINUTE', 'A-' || a, timestamptz '2026-03-04 00:00:00Z' + m * interval '1 minute', 10
		 FROM generate_series(1, 1000) a, generate_series(0, 199) m`,
		`ANALYZE account_limit; ANALYZE limit_window; ANALYZE limit_booking`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	when := time.Date(2026, 3, 4, 1, 0, 0, 0, time.UTC)
	plan := func(f func(ctx context.Context, tx pgx.Tx)) string {
		return pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error { f(ctx, tx); return nil })
	}
	book := plan(func(ctx context.Context, tx pgx.Tx) {
		_, _ = limit.Book(ctx, tx, limit.BookRequest{AccountID: "A-7", Amount: decimal.NewFromInt(1), Currency: "EUR", At: when, Reference: "new-ref"})
	})
	replay := plan(func(ctx context.Context, tx pgx.Tx) {
		_, _ = limit.Book(ctx, tx, limit.BookRequest{AccountID: "A-7", Amount: decimal.NewFromInt(10), Currency: "EUR", At: when, Reference: "ref-7-10"})
	})
	reverse := plan(func(ctx context.Context, tx pgx.Tx) { _, _ = limit.Reverse(ctx, tx, "ref-7-10") })
	current := plan(func(ctx context.Context, tx pgx.Tx) { _, _ = limit.Current(ctx, tx, "A-7", when) })
	tests := []struct{ name, plan, index string }{
		{"book: windows ensured by the account's limits", book, "account_limit_pkey"},
		{"book: windows locked and booked", book, "limit_window_pkey"},
		{"book: replay by reference", replay, "limit_booking_pkey"},
		{"reverse: bookings by reference", reverse, "limit_booking_pkey"},
		{"reverse: the booked windows", reverse, "limit_window_pkey"},
		{"current usage", current, "limit_window_pkey"},
	}
	for _, tt := range tests {
		if !strings.Contains(tt.plan, tt.index) {
			t.Errorf("%s does not use %s:\n%s", tt.name, tt.index, tt.plan)
		}
		if strings.Contains(tt.plan, "Seq Scan on limit_window") || strings.Contains(tt.plan, "Seq Scan on limit_booking") {
			t.Errorf("%s scans a table:\n%s", tt.name, tt.plan)
		}
	}
}
