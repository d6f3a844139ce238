package payment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// TestGroupPlansWithStaleStatistics: a day's payments arrive SCHEDULED in
// a table whose statistics, taken over a long history, have seen none
// (autovacuum analyzes a big table only after a tenth of it changed), so
// the planner takes the partial indexes of the SCHEDULED for nearly
// empty. The group's statements still find their payments by key: not
// by reading every waiting payment's entry for each group.
func TestGroupPlansWithStaleStatistics(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, scheduled_execution_time, status, request, context, rail)
		SELECT 'h-' || g, 'h-' || g, 't-' || (g % 10), 'ACC-1', 1, 'EUR', 'Jane Doe', now() - interval '1 day',
		       now() - interval '1 day', 'DELIVERED', '{}', '{}', 'DEFAULT'
		FROM generate_series(1, 100000) g;
		ANALYZE payments;
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, scheduled_execution_time, status, request, context, rail)
		SELECT 'k-' || g, 'k-' || g, 't-' || (g % 10), 'ACC-1', 1, 'EUR', 'Jane Doe', now(), now() + g * interval '10 ms',
		       'SCHEDULED', '{}', '{}', 'DEFAULT'
		FROM generate_series(1, 5000) g`); err != nil {
		t.Fatal(err)
	}
	var p dbsqlc.BeginExecutionsParams
	var tags []string
	for i := range 100 {
		p.PaymentIds = append(p.PaymentIds, fmt.Sprintf("k-%d", 2000+i))
		p.AcceptedAts = append(p.AcceptedAts, time.Now())
		tags = append(tags, "PAUSE")
	}
	now := time.Now()
	for _, tt := range []struct {
		name string
		run  func(ctx context.Context, q *dbsqlc.Queries) error
	}{
		{"a group's executions begin", func(ctx context.Context, q *dbsqlc.Queries) error {
			begun, err := q.BeginExecutions(ctx, p)
			if err == nil && len(begun) != len(p.PaymentIds) {
				err = fmt.Errorf("%d of %d begun", len(begun), len(p.PaymentIds))
			}
			return err
		}},
		{"one execution begins", func(ctx context.Context, q *dbsqlc.Queries) error {
			_, err := q.BeginExecution(ctx, dbsqlc.BeginExecutionParams{PaymentID: "k-3000", AcceptedAt: &now})
			return err
		}},
		{"a transition from SCHEDULED", func(ctx context.Context, q *dbsqlc.Queries) error {
			_, err := q.TransitionPayment(ctx, dbsqlc.TransitionPaymentParams{PaymentID: "k-3001", FromStatus: "SCHEDULED", ToStatus: "HELD"})
			return err
		}},
		{"Phase A's paused payments marked", func(ctx context.Context, q *dbsqlc.Queries) error {
			return q.SetPausedBy(ctx, dbsqlc.SetPausedByParams{PaymentIds: p.PaymentIds, Tags: tags})
		}},
	} {
		plans, err := explain.Run(ctx, pool, explain.Options{Analyze: true}, func(ctx context.Context, tx pgx.Tx) error {
			return tt.run(ctx, dbsqlc.New(tx))
		})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, pl := range plans {
			if testing.Verbose() {
				t.Logf("%s:\n%s", tt.name, pl.Plan)
			}
			if strings.Contains(pl.Plan, "payments_rail_waiting_idx") || strings.Contains(pl.Plan, "Seq Scan on payments") ||
				!strings.Contains(pl.Plan, "payments_pkey") {
				t.Errorf("%s: the payments are not found by key:\n%s", tt.name, pl.Plan)
			}
		}
	}
}
