package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/schema"
	"github.com/paydispatch/paydispatch/temporal"
)

func TestMain(m *testing.M) { pgtest.Main(m, schema.Schema()) }

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
	// A short cycle keeps the test quick; the rest is PAYMENT's default.
	pool, tc := startServe(t, map[string]string{
		"dispatch_interval_secs": "1", "pre_start_buffer_secs": "5", "jitter_window_ms": "1000",
	})
	db, c := &postgres.DB{Pool: pool}, tc.Client
	openAccounts(t, pool, "t0", "t1", "t2", "t3", "t4", "t5", "t6")

	instant := time.Now().Add(15 * time.Second).Truncate(time.Second)
	reqs := make([]payment.Request, n)
	for i := range reqs {
		reqs[i] = payment.Request{
			PaymentID: fmt.Sprintf("p-%04d", i), TenantID: fmt.Sprintf("t%d", i%7), DebtorAccount: fmt.Sprintf("ACC-t%d", i%7),
			Amount: "10.50", Currency: "EUR", Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"},
			RequestedExecutionTime: instant,
		}
	}
	sub, err := app.PaymentService(db, tc, payment.ServiceConfig{ChunkSize: 1000}).Take(ctx, payment.Intake{Source: routing.SourceFile, Requests: reqs, Whole: true})
	if err = errors.Join(err, sub.Refused()); err != nil || sub.Chunks != 2 {
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
	// Each execution workflow ran once: as many runs of the execution
	// workflow types (a payment's own, or a batch's) as there are
	// workflows the payments were settled under; a second run of an id
	// would be one more. Visibility is eventually consistent, so wait for
	// it to count them all.
	var workflows int64
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT exec_workflow_id) FROM exec_queue WHERE item_type = $1`, payment.ItemType).Scan(&workflows); err != nil {
		t.Fatal(err)
	}
	var runs int64
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: "default", Query: "WorkflowType IN ('" + payment.ExecWorkflowName + "', '" + dispatch.BatchWorkflowName + "')",
		})
		if err != nil {
			t.Fatal(err)
		}
		runs = resp.GetCount()
		if runs >= workflows || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if runs != workflows || workflows == 0 {
		t.Fatalf("%d runs of the execution workflows for %d workflows the %d payments were settled under", runs, workflows, n)
	}
	// Each payment debited its tenant's account once: 10.50 each.
	var debited decimal.Decimal
	if err := pool.QueryRow(ctx, `SELECT sum(opening_balance - balance) FROM account`).Scan(&debited); err != nil {
		t.Fatal(err)
	}
	if want := decimal.RequireFromString("10.50").Mul(decimal.NewFromInt(n)); !debited.Equal(want) {
		t.Fatalf("accounts debited %s in all, want %s", debited, want)
	}
	verifyLedger(t, pool)
}

// openAccounts opens ACC-<tenant> for each tenant, in EUR, with enough
// money for any test here.
func openAccounts(t *testing.T, pool *pgxpool.Pool, tenants ...string) {
	t.Helper()
	for _, tenant := range tenants {
		if _, _, err := account.Create(context.Background(), pool, account.Spec{
			AccountID: "ACC-" + tenant, TenantID: tenant, Currency: "EUR", OpeningBalance: decimal.NewFromInt(1_000_000),
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// verifyLedger runs the ledger check (paydispatch verify) and fails the
// test on any violation.
func verifyLedger(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	vs, err := payment.Verify(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("ledger check: %s", v)
	}
}

// startServe wires what serve runs (Phase A and exec workers, the
// scheduled dispatcher) on Temporal's own server and a fresh database, with
// PAYMENT's settings changed as given.
func startServe(t *testing.T, settings map[string]string) (*pgxpool.Pool, *temporal.Conn) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	srv, c := temporaltest.Start(t)
	db := &postgres.DB{Pool: pool}
	tc := &temporal.Conn{Client: c, Address: srv.HostPort(), Namespace: "default"}
	log := slog.New(slog.DiscardHandler)
	if _, err := app.Migrate(ctx, pool, nil); err != nil { // as serve does: registers PAYMENT
		t.Fatal(err)
	}
	if _, err := queue.New(pool).UpdateConfig(ctx, payment.ItemType, settings); err != nil {
		t.Fatal(err)
	}
	startRoles(t, db, tc, log)
	return pool, tc
}

// TestPacedPaymentsFollowTheirSlots: with PAYMENT paced (50 per second),
// 300 payments due at one instant get slots over six seconds; each runs
// once, started the paced lead ahead and held until its slot: none is
// accepted before its slot, and each slot window holds at most 50.
// startRoles starts serve's payment roles on db and tc: the Phase A and
// exec workers and the scheduled dispatcher, stopped at the test's end.
func startRoles(t *testing.T, db *postgres.DB, tc *temporal.Conn, log *slog.Logger) {
	t.Helper()
	for _, start := range []func(*postgres.DB, *temporal.Conn, *slog.Logger, app.Options) (func(), error){app.StartInitWorker, app.StartExecWorker} {
		stop, err := start(db, tc, log, app.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	stop, err := app.StartDispatcher(context.Background(), "schedule", db, tc, log, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

func TestPacedPaymentsFollowTheirSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	const n = 300
	ctx := context.Background()
	pool, tc := startServe(t, map[string]string{
		"dispatch_interval_secs": "1", "pre_start_buffer_secs": "10", "paced_lead_ms": "3000", "pacing_config": "paced",
	})
	if _, err := pacing.New(pacing.Config{Pool: pool}).PutConfig(ctx, pacing.Limit{Name: "paced", MaxPerWindow: 50, Window: time.Second, Headroom: pacing.DefaultHeadroom}); err != nil {
		t.Fatal(err)
	}
	db := &postgres.DB{Pool: pool}
	openAccounts(t, pool, "t1")
	instant := time.Now().Add(12 * time.Second).Truncate(time.Second)
	reqs := make([]payment.Request, n)
	for i := range reqs {
		reqs[i] = payment.Request{
			PaymentID: fmt.Sprintf("paced-%03d", i), TenantID: "t1", DebtorAccount: "ACC-t1",
			Amount: "1.00", Currency: "EUR", Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"},
			RequestedExecutionTime: instant,
		}
	}
	taken, err := app.PaymentService(db, tc, payment.ServiceConfig{ChunkSize: 1000}).Take(ctx, payment.Intake{Source: routing.SourceFile, Requests: reqs, Whole: true})
	if err := errors.Join(err, taken.Refused()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var processing int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status = 'PROCESSING'`).Scan(&processing); err != nil {
			t.Fatal(err)
		}
		if processing == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3 min: %d of %d PROCESSING", processing, n)
		}
		time.Sleep(time.Second)
	}
	var early, offSlot, overfull, windows int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM payments WHERE accepted_at < scheduled_execution_time),
		(SELECT count(*) FROM payments p LEFT JOIN pacing_slot s ON s.event_id = p.payment_id
		  WHERE s.scheduled_time IS DISTINCT FROM p.scheduled_execution_time),
		(SELECT count(*) FROM (SELECT window_start FROM pacing_slot GROUP BY 1 HAVING count(*) > 50) w),
		(SELECT count(DISTINCT window_start) FROM pacing_slot)`).Scan(&early, &offSlot, &overfull, &windows); err != nil {
		t.Fatal(err)
	}
	if early != 0 || offSlot != 0 || overfull != 0 || windows < n/50 {
		t.Fatalf("accepted before the slot %d, not scheduled at their slot %d, windows over 50 %d (want 0 each); %d windows (want ≥ %d)",
			early, offSlot, overfull, windows, n/50)
	}
	verifyLedger(t, pool)
}
