package payment_test

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// TestExecWorkflowOnTemporal: the execution workflow on Temporal's own
// server and PostgreSQL. A payment its account covers ends
// PROCESSING, debited; one it does not ends FAILED with
// INSUFFICIENT_FUNDS and its workflow completes (the dispatch worked;
// retrying would fail the same way); a paced payment started ahead of its
// slot is not executed before it. PaymentExecution's history is one
// marker, its Execution, with no version marker and no search attribute
// upsert.
func TestExecWorkflowOnTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	_, c := temporaltest.Start(t)
	w := worker.New(c, payment.ExecTaskQueue, worker.Options{})
	payment.RegisterExec(w, payment.NewExecActivities(payment.ExecConfig{Store: payment.NewStore(s.pool), Process: s.acts}))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	store := payment.NewStore(s.pool)

	wf := payment.ExecWorkflowName
	acct := "ACC-" + wf
	s.account(t, account.Spec{AccountID: acct, TenantID: "acme", Currency: "EUR", OpeningBalance: dec("200"), Fee: dec("0.25")})
	id := func(name string) string { return wf + "-" + name }
	s.schedule(t, paymentTo(id("covered"), acct, "100.00", "EUR"), paymentTo(id("paced"), acct, "50.00", "EUR"),
		paymentTo(id("too-much"), acct, "500.00", "EUR"))
	slot := time.Now().Add(2 * time.Second)
	for _, name := range []string{"covered", "paced", "too-much"} {
		key := payment.Key("acme", id(name))
		opts := client.StartWorkflowOptions{ID: dispatch.ExecWorkflowID(payment.ItemType, key), TaskQueue: payment.ExecTaskQueue}
		if name == "paced" {
			opts.Memo = map[string]any{dispatch.NotBeforeMemo: slot.UTC().Format(time.RFC3339Nano)}
		}
		// The context the queue item carries: its version alone; the
		// execution reads the rest from the payment's row.
		run, err := c.ExecuteWorkflow(ctx, opts, wf, key, `{"version":3}`)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			t.Fatalf("%s: the workflow failed: %v", id(name), err)
		}
	}
	for name, want := range map[string]payment.Status{"covered": payment.StatusProcessing, "paced": payment.StatusProcessing, "too-much": payment.StatusFailed} {
		p, err := store.Find(ctx, "acme", id(name))
		if err != nil || p.Status != want {
			t.Fatalf("%s: %s (%q), %v; want %s", id(name), p.Status, p.StatusReason, err, want)
		}
		if name == "paced" {
			var accepted time.Time
			if err := s.pool.QueryRow(ctx, `SELECT accepted_at FROM payments WHERE payment_id = $1`, p.Key).Scan(&accepted); err != nil {
				t.Fatal(err)
			}
			if accepted.Before(slot) {
				t.Fatalf("%s executed at %s, before its slot %s", id(name), accepted, slot)
			}
		}
	}
	if b := s.balance(t, acct); !b.Equal(dec("49.50")) {
		t.Fatalf("%s: balance %s, want 200 − 100.25 − 50.25", acct, b)
	}
	for _, name := range []string{"covered", "paced", "too-much"} {
		wfID := dispatch.ExecWorkflowID(payment.ItemType, payment.Key("acme", payment.ExecWorkflowName+"-"+name))
		events := temporaltest.CountEvents(t, c, wfID)
		markers, upserts := events[enumspb.EVENT_TYPE_MARKER_RECORDED], events[enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]
		if markers != 1 || upserts != 0 {
			t.Fatalf("%s: %d markers and %d upserts, want the Execution's marker alone", wfID, markers, upserts)
		}
		// Its history holds neither the creditor's name nor the IBAN.
		for _, personal := range []string{validIBAN, validCreditor} {
			if temporaltest.HistoryHolds(t, c, wfID, personal) {
				t.Fatalf("%s: the history holds %q", wfID, personal)
			}
		}
	}
	s.verify(t)
}

// TestLatePaymentWaitsForRoom: a paced payment whose execution comes
// after its slot's window (its workflow started late, a backlog catching
// up) does not burst into a window whose executions are taken: the
// limiter counts it where it runs, and it waits for a window with room.
// It runs once, and its accepted_at is when it was let go.
func TestLatePaymentWaitsForRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSaga(t)
	lim := pacing.New(pacing.Config{Pool: s.pool})
	if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "payments", MaxPerWindow: 2, Window: time.Second, Headroom: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.New(s.pool).UpdateConfig(ctx, payment.ItemType, map[string]string{"pacing_config": "payments"}); err != nil {
		t.Fatal(err)
	}
	s.init = payment.NewInitActivities(payment.InitConfig{Store: s.store, Queue: s.queue, Pacer: lim})
	pc := s.schedule(t, paymentTo("late", "ACC-1", "10.00", "EUR"))["late"]
	if pc.PacingConfig != "payments" {
		t.Fatalf("the stored context names %q as its rate-limit config", pc.PacingConfig)
	}
	// Two executions on time take this second's room.
	var full time.Time
	for range 2 {
		h, err := lim.HoldSlot(ctx, "payments", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		full = h.At
	}
	key := payment.Key("acme", "late")
	a := payment.NewExecActivities(payment.ExecConfig{Store: s.store, Process: s.acts, Slots: lim})
	done, err := a.Execution(ctx, payment.ExecutionInput{PaymentID: key, Context: payment.Context{Version: 3},
		NotBefore: time.Now().Add(-5 * time.Second), WorkflowID: "exec-payment-" + key, Ref: "exec-payment-" + key + "/run"})
	if err != nil || !done {
		t.Fatalf("execution: %v, %v", done, err)
	}
	p, err := s.store.Get(ctx, key)
	if err != nil || p.Status != payment.StatusProcessing {
		t.Fatalf("the payment: %+v, %v", p, err)
	}
	var accepted time.Time
	var executed int
	if err := s.pool.QueryRow(ctx, `SELECT p.accepted_at, e.executed FROM payments p
		JOIN pacing_execution e ON e.config_name = 'payments' AND e.window_start = date_trunc('second', p.accepted_at)
		WHERE p.payment_id = $1`, key).Scan(&accepted, &executed); err != nil {
		t.Fatalf("the window it went in: %v", err)
	}
	if accepted.Truncate(time.Second).Equal(full.Truncate(time.Second)) || executed > 2 {
		t.Fatalf("accepted at %s, in a window with %d executions, the full one being %s", accepted.Format(time.RFC3339Nano),
			executed, full.Truncate(time.Second).Format(time.RFC3339))
	}
	s.verify(t)
}
