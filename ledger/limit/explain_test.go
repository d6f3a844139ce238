package limit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/ledger/limit/internal/dbsqlc"
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
	periods := []string{"MINUTE", "HOUR", "DAY", "WEEK", "MONTH"}
	when := time.Date(2026, 3, 4, 1, 0, 0, 0, time.UTC)
	starts := []time.Time{when, when, when.Truncate(24 * time.Hour), when, when}
	ends := []time.Time{when.Add(time.Minute), when.Add(time.Hour), when.Add(24 * time.Hour), when, when}
	explain := func(sql string, args ...any) string {
		rows, err := pool.Query(ctx, "EXPLAIN (COSTS OFF) "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(plan, "\n")
	}
	one := decimal.NewFromInt(1)
	tests := []struct{ name, plan, index string }{
		{"ensure windows", explain(dbsqlc.EnsureWindowsSQL, periods, starts, ends, "A-7"), "account_limit_pkey"},
		{"lock windows", explain(dbsqlc.LockWindowsSQL, periods, starts, "A-7"), "limit_window_pkey"},
		{"replay by reference", explain(dbsqlc.BookingsByReferenceSQL, "ref-7-10"), "limit_booking_pkey"},
		{"book windows", explain(dbsqlc.BookWindowsSQL, "new-ref", "A-7", one, periods, starts), "limit_window_pkey"},
		{"lock booked windows", explain(dbsqlc.LockBookedWindowsSQL, "ref-7-10"), "limit_booking_pkey"},
		{"reverse bookings", explain(dbsqlc.ReverseBookingsSQL, "ref-7-10"), "limit_booking_pkey"},
		{"current usage", explain(dbsqlc.CurrentUsageSQL, periods, starts, "A-7"), "limit_window_pkey"},
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
