package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/paydispatch/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/temporal"
	"github.com/paydispatch/paydispatch/temporal/devserver"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPaymentsAtOneInstant runs the whole pipeline as serve wires it, on
// Temporal's own server and a real PostgreSQL: 2,000 payments due at the
// same instant, submitted as one bulk file, all reach PROCESSING (none
// before the instant) and their queue items COMPLETED, and each exec
// workflow ran exactly once.
func TestPaymentsAtOneInstant(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server and executes 2,000 payments")
	}
	t.Parallel()
	const n = 2000
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	srv, err := devserver.Start(ctx, devserver.Options{LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	db := &postgres.DB{Pool: pool}
	tc := &temporal.Conn{Client: c, Address: srv.HostPort(), Namespace: "default"}
	log := slog.New(slog.DiscardHandler)

	// A short cycle keeps the test quick; the rest is PAYMENT's default.
	if _, err := queue.New(pool).UpdateConfig(ctx, payment.ItemType, map[string]string{
		"dispatch_interval_secs": "1", "pre_start_buffer_secs": "5", "jitter_window_ms": "1000",
	}); err != nil {
		t.Fatal(err)
	}
	for _, start := range []func(*postgres.DB, *temporal.Conn, *slog.Logger) (func(), error){app.StartInitWorker, app.StartExecWorker} {
		stop, err := start(db, tc, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	stop, err := app.StartDispatcher(ctx, "schedule", db, tc, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	instant := time.Now().Add(15 * time.Second).Truncate(time.Second)
	reqs := make([]payment.Request, n)
	for i := range reqs {
		reqs[i] = payment.Request{
			PaymentID: fmt.Sprintf("p-%04d", i), TenantID: fmt.Sprintf("t%d", i%7), DebtorAccount: "ACC-1",
			Amount: "10.50", Currency: "EUR", Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"},
			RequestedExecutionTime: instant,
		}
	}
	sub, err := app.PaymentService(db, tc, 1000).SubmitBatch(ctx, reqs)
	if err != nil || sub.Chunks != 2 {
		t.Fatalf("submit: %+v %v", sub, err)
	}

	deadline := time.Now().Add(8 * time.Minute)
	for {
		var processing, completed int
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payments WHERE status = 'PROCESSING'),
			(SELECT count(*) FROM exec_queue WHERE item_type = 'PAYMENT' AND queue_status = 'COMPLETED')`).Scan(&processing, &completed); err != nil {
			t.Fatal(err)
		}
		if processing == n && completed == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 8 min: %d PROCESSING, %d COMPLETED of %d", processing, completed, n)
		}
		time.Sleep(time.Second)
	}

	var early, notified, dispatchedTwice int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM payment_notifications WHERE created_at < $1),
		(SELECT count(*) FROM payment_notifications),
		(SELECT count(*) FROM (SELECT item_id FROM dispatch_audit_log WHERE status_after = 'DISPATCHED'
		                       GROUP BY item_id HAVING count(*) > 1) d)`, instant).Scan(&early, &notified, &dispatchedTwice); err != nil {
		t.Fatal(err)
	}
	if early != 0 || notified != 2*n || dispatchedTwice != 0 {
		t.Fatalf("notifications before the instant %d (want 0), total %d (want %d), items dispatched twice %d (want 0)",
			early, notified, 2*n, dispatchedTwice)
	}
	// Each exec workflow ran once: as many runs of PaymentExecWorkflow as
	// payments (a second run of an id would be one more). Visibility is
	// eventually consistent, so wait for it to count them all.
	var runs int64
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: "default", Query: "WorkflowType = 'PaymentExecWorkflow'",
		})
		if err != nil {
			t.Fatal(err)
		}
		runs = resp.GetCount()
		if runs >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if runs != n {
		t.Fatalf("%d runs of PaymentExecWorkflow for %d payments", runs, n)
	}
}
