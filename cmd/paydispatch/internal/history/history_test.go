package history_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/history"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/retention"
)

// TestLoadPassesVerify: the history is what verify expects of a real
// run's rows (ledger chains, processes that replay, one debit and one
// instruction a delivered payment, every id claimed), and has each
// kind of row a payment leaves.
func TestLoadPassesVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	loaded, err := history.Load(ctx, pool, history.Options{Payments: 5000, Tenants: 3, Days: 4})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := payment.Verify(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("violation: %s", v)
	}
	for table, want := range map[string]int64{"payments": 5000, "payment_keys": 5000, "exec_queue": 4950, "account_transaction": 4850,
		"process_instance": 4900, "process_log": 4850*6 + 50*4, "payment_outbox_attempts": 4850 * 2, "pacing_slot": 4900} {
		var got int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want || loaded.Rows[table] != want {
			t.Errorf("%s: %d rows (%d reported), want %d", table, got, loaded.Rows[table], want)
		}
	}
	var statuses int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT status) FROM payments`).Scan(&statuses); err != nil {
		t.Fatal(err)
	}
	if statuses != 4 {
		t.Errorf("%d statuses; want DELIVERED, FAILED, CANCELLED, REJECTED", statuses)
	}
	// The history is in the past: nothing of it waits.
	var waiting int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM exec_queue WHERE queue_status <> 'COMPLETED'`).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if waiting != 0 {
		t.Errorf("%d queue items not COMPLETED", waiting)
	}
	// A payment of the history is found as the API finds it.
	p, err := payment.NewStore(pool).Find(ctx, history.Tenant(1), "h-000000001")
	if err != nil || p.Status != payment.StatusDelivered || !p.RequestedExecutionTime.Before(time.Now()) {
		t.Errorf("find a history payment: %+v, %v", p, err)
	}
	// Loaded once more on top, it fails: history goes first.
	if _, err := history.Load(ctx, pool, history.Options{Payments: 10, Tenants: 3}); err == nil {
		t.Error("a second load on accounts with transactions succeeded")
	}
}

// TestRetainedIsWhatTheCleanerLeaves: a history loaded under a retention
// holds what the retention cleaner leaves of the whole history: the same
// rows in every table it cleans, a failed process kept however old, and
// nothing the cleaner would delete; the money records stay whole and
// verify stays clean on what is left.
func TestRetainedIsWhatTheCleanerLeaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	// Over 6 days, each table keeps another number of them, and most cut
	// a day's 10 s of payments (16:00:00 to 16:00:10) in two.
	day, burst := 24*time.Hour, 17*time.Hour // 09:00 less 17 h is 16:00
	r := config.Retention{QueueCompleted: burst - 5*time.Second, DispatchAudit: 3 * day, ProcessEnded: 2*day + burst - 3*time.Second,
		OutboxDone: 4*day + burst - 7*time.Second, Pacing: burst - 6*time.Second, PaymentNotifications: day + burst - 2*time.Second}
	o := history.Options{Payments: 6000, Tenants: 3, Days: 6, Now: now}
	cleaner := func(pool *pgxpool.Pool) *retention.Cleaner {
		c, err := retention.New(retention.Config{Pool: pool, Policies: app.RetentionPolicies(&postgres.DB{Pool: pool}, r),
			BatchSize: 10_000, Pause: time.Millisecond, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	whole, retained := pgtest.NewPool(t), pgtest.NewPool(t)
	if _, err := history.Load(ctx, whole, o); err != nil {
		t.Fatal(err)
	}
	if _, err := cleaner(whole).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	o.Retention = history.Retained(r)
	loaded, err := history.Load(ctx, retained, o)
	if err != nil {
		t.Fatal(err)
	}
	round, err := cleaner(retained).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for table, n := range round.Deleted {
		if n > 0 {
			t.Errorf("the cleaner deleted %d rows of %s from the retained history", n, table)
		}
	}
	counts := func(pool *pgxpool.Pool, table string) int64 {
		var n int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for table := range loaded.Rows {
		got, want := counts(retained, table), counts(whole, table)
		switch table {
		case "pacing_execution":
			// Not the cleaner's: pacing keeps an hour of it, and the
			// history's last window is a day old.
			want = 0
		case "dispatch_audit_log":
			// The cleaner deletes the oldest by id and stops at the first
			// newer: a day's enqueue rows, written an hour before its
			// payments but after the day before's, stay behind it.
			if got > want {
				t.Errorf("%s: %d rows retained, more than the %d the cleaner leaves", table, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: %d rows retained, the cleaner leaves %d", table, got, want)
		}
	}
	for table, want := range map[string]int64{"payments": 6000, "payment_keys": 6000, "account_transaction": 5820, "payment_booking": 5820} {
		if got := counts(retained, table); got != want {
			t.Errorf("%s: %d rows, want every payment's: %d", table, got, want)
		}
	}
	if got := counts(retained, "process_instance"); got <= 60+2000 || got >= 60+3000 {
		t.Errorf("process_instance: %d rows: want the failed processes (60) and those of the last 2 days and 7 s, not all", got)
	}
	vs, err := payment.Verify(ctx, retained)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("violation: %s", v)
	}
	if _, err := history.Load(ctx, pgtest.NewPool(t), history.Options{Payments: 10, Retention: map[string]time.Duration{"payments": time.Hour}}); err == nil {
		t.Error("a retention on payments, which the cleaner never deletes, was taken")
	}
}
