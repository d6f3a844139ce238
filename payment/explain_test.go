package payment_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/payment"
)

// TestHotQueriesUseIndexes: on 100,000 payments of 10 tenants, 20,000 of
// them waiting for Phase A in 100 workflows, every lookup of the intake and of Phase A uses
// an index: a tenant's id, every tenant's id (an operator's), the
// comparison of a file's payments with the stored ones, the keys Phase A
// takes on, an execution's context, and the resume of the intake.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
		                      requested_execution_time, status, request, context)
		SELECT 'k-' || g, 'p-' || (g / 10), 't-' || (g % 10), 'ACC-1', 1, 'EUR', 'Jane Doe', now(),
		       CASE WHEN g % 5 = 0 THEN 'RECEIVED' ELSE 'SCHEDULED' END, '{}', '{}'
		FROM generate_series(1, 100000) g;
		INSERT INTO payment_intake (init_workflow_id, payment_ids, received_at)
		SELECT 'init-' || (substr(payment_id, 3)::int / 1000), array_agg(payment_id), now() - interval '1 hour'
		FROM payments WHERE status = 'RECEIVED' GROUP BY 1;
		ANALYZE payments; ANALYZE payment_intake`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, index string
		f           func(ctx context.Context, s *payment.Store)
	}{
		{"find by the tenant's id", "payments_external_key", func(ctx context.Context, s *payment.Store) { _, _ = s.Find(ctx, "t-3", "p-42") }},
		{"find in every tenant", "payments_external_key", func(ctx context.Context, s *payment.Store) { _, _ = s.FindAll(ctx, "p-42") }},
		{"compare a replay with what is stored", "payments_external_key", func(ctx context.Context, s *payment.Store) {
			r := payment.Request{TenantID: "t-3", PaymentID: "p-42", Amount: "1", Currency: "EUR"}
			_, _ = s.Record(ctx, r, nil, payment.StatusRejected, "", nil)
		}},
		{"what Phase A takes on", "payments_pkey", func(ctx context.Context, s *payment.Store) {
			_, _, _ = s.Received(ctx, []string{"k-5", "k-10", "k-15"})
		}},
		{"an execution's context", "payments_pkey", func(ctx context.Context, s *payment.Store) { _, _ = s.Context(ctx, "k-7") }},
		{"a Phase A workflow's payments", "payment_intake_pkey", func(ctx context.Context, s *payment.Store) {
			_, _ = s.IntakeKeys(ctx, "init-7")
		}},
		{"the intake's resume", "payment_intake_received_idx", func(ctx context.Context, s *payment.Store) {
			_, _ = s.Pending(ctx, time.Now().Add(-2*time.Hour), 100)
		}},
	} {
		plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error { tt.f(ctx, payment.NewStore(tx)); return nil })
		if testing.Verbose() {
			t.Logf("%s:\n%s", tt.name, plan)
		}
		if !strings.Contains(plan, tt.index) || strings.Contains(plan, "Seq Scan on payments") || strings.Contains(plan, "Seq Scan on payment_intake") {
			t.Errorf("%s: no %s in\n%s", tt.name, tt.index, plan)
		}
	}
}
