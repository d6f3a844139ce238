package history_test

import (
	"context"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/history"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/payment"
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
