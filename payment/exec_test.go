package payment_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/temporaltest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
)

// TestExecWorkflowOnTemporal: PaymentExecWorkflow on Temporal's own
// server and PostgreSQL. A payment its account covers ends PROCESSING,
// debited; one it does not ends FAILED with INSUFFICIENT_FUNDS and its
// workflow completes (the dispatch worked; retrying would fail the same
// way); a paced payment started ahead of its slot is not executed before
// it.
func TestExecWorkflowOnTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-E", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("200"), Fee: dec("0.25")})
	contexts := s.schedule(t, paymentTo("covered", "ACC-E", "100.00", "EUR"), paymentTo("paced", "ACC-E", "50.00", "EUR"),
		paymentTo("too-much", "ACC-E", "500.00", "EUR"))
	_, c := temporaltest.Start(t)
	w := worker.New(c, payment.ExecTaskQueue, worker.Options{})
	payment.RegisterExec(w, &payment.ExecActivities{Store: payment.NewStore(s.pool)}, s.acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	slot := time.Now().Add(2 * time.Second)
	for _, id := range []string{"covered", "paced", "too-much"} {
		opts := client.StartWorkflowOptions{ID: dispatch.ExecWorkflowID(payment.ItemType, id), TaskQueue: payment.ExecTaskQueue}
		if id == "paced" {
			opts.Memo = map[string]any{dispatch.NotBeforeMemo: slot.UTC().Format(time.RFC3339Nano)}
		}
		raw, _ := jsonOf(contexts[id])
		run, err := c.ExecuteWorkflow(ctx, opts, payment.ExecWorkflowName, id, raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			t.Fatalf("%s: the workflow failed: %v", id, err)
		}
	}
	store := payment.NewStore(s.pool)
	for id, want := range map[string]payment.Status{"covered": payment.StatusProcessing, "paced": payment.StatusProcessing, "too-much": payment.StatusFailed} {
		p, err := store.Get(ctx, id)
		if err != nil || p.Status != want {
			t.Fatalf("%s: %s (%q), %v; want %s", id, p.Status, p.StatusReason, err, want)
		}
		if id == "paced" {
			var accepted time.Time
			if err := s.pool.QueryRow(ctx, `SELECT accepted_at FROM payments WHERE payment_id = 'paced'`).Scan(&accepted); err != nil {
				t.Fatal(err)
			}
			if accepted.Before(slot) {
				t.Fatalf("executed at %s, before its slot %s", accepted, slot)
			}
		}
	}
	if b := s.balance(t, "ACC-E"); !b.Equal(dec("49.50")) {
		t.Fatalf("balance %s, want 200 − 100.25 − 50.25", b)
	}
	s.verify(t)
}
