package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// TestRetentionKeepsVerifyAndTheView runs payments to their ends — one
// DELIVERED, one RETURNED (its instruction a dead letter), one FAILED for
// want of money (its process FAILED, which an operator may retry) — and
// leaves one SCHEDULED and waiting and one whose process is open, then
// runs every retention policy with a cutoff an hour ahead, in batches of
// two, until each is done: everything deletable goes. verify is still
// clean, from the money records; each payment's view and the list answer
// the same outcome; the money records are all there; and the open
// process, the dead letter, the FAILED process and the waiting payment
// kept their rows.
func TestRetentionKeepsVerifyAndTheView(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := pgtest.NewPool(t)
	if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: "ACC-R", TenantID: "acme", Currency: "EUR",
		OpeningBalance: decimal.RequireFromString("1000"), Fee: decimal.RequireFromString("1")}); err != nil {
		t.Fatal(err)
	}
	request := func(id, amount, remittance string) payment.Request {
		return payment.Request{PaymentID: id, TenantID: "acme", DebtorAccount: "ACC-R", Amount: amount, Currency: "EUR",
			Creditor:               payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"},
			RequestedExecutionTime: time.Now().Add(time.Hour), RemittanceInfo: remittance}
	}
	ids := []string{"taken", "refused", "poor", "waiting", "open"}
	store := payment.NewStore(pool)
	init := payment.NewInitActivities(payment.InitConfig{Store: store, Queue: queue.New(pool)})
	if res, err := init.InitChunk(ctx, []payment.Request{request("taken", "100.00", "INV-1"), request("refused", "200.00", "RAIL-REJECT:AC04"),
		request("poor", "5000.00", "INV-3"), request("waiting", "10.00", "INV-4"), request("open", "10.00", "INV-5")}, "init-retention"); err != nil || res.Scheduled != len(ids) {
		t.Fatalf("Phase A: %+v %v", res, err)
	}
	reg, err := process.NewRegistry(payment.SubmitPayment(payment.SubmitConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	acts := process.NewActivities(process.ActivitiesConfig{DB: pool, Registry: reg})
	keys := map[string]string{}
	for _, id := range ids {
		p, err := store.Find(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		keys[id] = p.Key
		pc, err := store.Context(ctx, p.Key)
		if err != nil {
			t.Fatal(err)
		}
		data := payment.SubmitData(p.Key, pc, time.Now())
		switch id {
		case "taken", "refused", "poor":
			out, err := process.RunDirect(ctx, acts, process.Options{Type: payment.SubmitPaymentType, BusinessKey: p.Key, Data: data})
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if out.Status == process.StatusSucceeded {
				// As its execution does: PROCESSING, both parties told.
				if err := store.Finish(ctx, p.Key, "payment-exec-"+id+"/run"); err != nil {
					t.Fatal(err)
				}
			}
		case "waiting":
			// A payment on its way keeps its notification records.
			if err := store.Notify(ctx, p.Key, "DEBTOR", payment.StatusScheduled); err != nil {
				t.Fatal(err)
			}
		case "open":
			// Started by its execution, not yet run: NEW.
			raw, err := json.Marshal(data)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := acts.Start(ctx, process.StartInput{Type: payment.SubmitPaymentType, BusinessKey: p.Key, Data: raw}); err != nil {
				t.Fatal(err)
			}
		}
	}
	relayToRail(ctx, t, pool)
	for {
		a, _ := store.Find(ctx, "acme", "taken")
		b, _ := store.Find(ctx, "acme", "refused")
		if a.Status == payment.StatusDelivered && b.Status == payment.StatusReturned {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("taken %s, refused %s", a.Status, b.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	verifyClean(ctx, t, pool, "before the retention")

	svc := payment.NewService(payment.ServiceConfig{Store: store, Queue: queue.New(pool)})
	views := func() map[string]payment.View {
		out := map[string]payment.View{}
		for _, id := range ids {
			v, err := svc.Status(ctx, "acme", id)
			if err != nil {
				t.Fatalf("the view of %s: %v", id, err)
			}
			out[id] = v
		}
		return out
	}
	listed := func() string {
		page, err := svc.List(ctx, payment.ListFilter{TenantID: "acme"}, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, v := range page.Payments {
			out += fmt.Sprintf("%s %s %s %s %s; ", v.PaymentID, v.Status, v.StatusReason, v.Amount, v.Currency)
		}
		return out
	}
	moneyTables := []string{"payments", "payment_booking", "payment_keys", "account", "account_transaction", "limit_booking", "fx_contract", "admin_audit"}
	before, listBefore, moneyBefore := views(), listed(), counts(ctx, t, pool, moneyTables)

	// Every policy, everything deletable: a cutoff ahead of now.
	all := config.Retention{QueueCompleted: time.Minute, DispatchAudit: time.Minute, ProcessEnded: time.Minute, OutboxDone: time.Minute,
		Pacing: time.Minute, WebhookDelivered: time.Minute, PaymentNotifications: time.Minute, FileFingerprints: time.Minute}
	deleted := map[string]int64{}
	for _, p := range app.RetentionPolicies(&postgres.DB{Pool: pool}, all) {
		for {
			n, err := p.Delete(ctx, time.Now().Add(time.Hour), 2)
			if err != nil {
				t.Fatalf("%s: %v", p.Table, err)
			}
			deleted[p.Table] += n
			if n < 2 {
				break
			}
		}
	}
	t.Logf("deleted %v", deleted)
	// taken's and refused's processes and notifications, and taken's
	// instruction.
	if deleted["process_instance"] != 2 || deleted["payment_outbox_keys"] != 1 || deleted["payment_notifications"] != 4 {
		t.Errorf("deleted %v: want the 2 ended processes, the 1 done instruction and 4 notifications", deleted)
	}
	verifyClean(ctx, t, pool, "after the retention")

	after := views()
	for _, id := range ids {
		b, a := before[id], after[id]
		if a.Status != b.Status || a.StatusReason != b.StatusReason || a.Amount != b.Amount || a.Currency != b.Currency ||
			a.ExecutionRef != b.ExecutionRef || a.Rail != b.Rail || a.ExecutionDate != b.ExecutionDate {
			t.Errorf("%s's view: %+v before the retention, %+v after", id, b, a)
		}
	}
	// The processes kept: the FAILED one and the open one.
	for id, want := range map[string]process.Status{"poor": process.StatusFailed, "open": process.StatusNew} {
		if p := after[id].Process; p == nil || p.Status != want {
			t.Errorf("%s's process after the retention: %+v, want %s", id, p, want)
		}
	}
	if after["waiting"].Status != payment.StatusScheduled || after["waiting"].QueueStatus != string(queue.StatusReady) {
		t.Errorf("the waiting payment: %+v", after["waiting"])
	}
	if l := listed(); l != listBefore {
		t.Errorf("the list: %s before the retention, %s after", listBefore, l)
	}
	if m := counts(ctx, t, pool, moneyTables); m != moneyBefore {
		t.Errorf("money records: %s before the retention, %s after", moneyBefore, m)
	}
	// The dead letter kept its instruction's key and attempts: it can be
	// requeued.
	var deadKeys, deadAttempts, openLog, waitingNotes int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM payment_outbox_keys k JOIN payment_outbox_dead_letters d USING (outbox_id)),
		(SELECT count(*) FROM payment_outbox_attempts a JOIN payment_outbox_dead_letters d USING (outbox_id)),
		(SELECT count(*) FROM process_log l JOIN process_instance i USING (process_id) WHERE i.business_key = $1),
		(SELECT count(*) FROM payment_notifications WHERE payment_id = $2)`, keys["open"], keys["waiting"]).
		Scan(&deadKeys, &deadAttempts, &openLog, &waitingNotes); err != nil {
		t.Fatal(err)
	}
	if deadKeys != 1 || deadAttempts == 0 || openLog == 0 || waitingNotes != 1 {
		t.Errorf("the dead letter kept %d key(s) and %d attempt(s), the open process %d log entries, the waiting payment %d notification(s); want 1, some, some, 1",
			deadKeys, deadAttempts, openLog, waitingNotes)
	}
	if _, err := outbox.Attempts(ctx, pool, keys["refused"]); err != nil {
		t.Error(err)
	}
}

// relayToRail delivers the outbox to a rail simulator until the test
// ends.
func relayToRail(ctx context.Context, t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	sim := railsim.New(railsim.Options{})
	url, stop, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	json, err := rail.NewHTTPRail(rail.Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	router, err := rail.NewRouter(rail.RouterConfig{Rails: []rail.Rail{json}})
	if err != nil {
		t.Fatal(err)
	}
	relayer, err := outbox.New(outbox.Config{Pool: pool, Sender: router, Hooks: payment.OutboxHooks(), PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRelay := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relayer.Run(runCtx) }()
	t.Cleanup(func() {
		stopRelay()
		if err := <-done; err != nil && err != context.Canceled {
			t.Error(err)
		}
	})
}

func verifyClean(ctx context.Context, t *testing.T, pool *pgxpool.Pool, when string) {
	t.Helper()
	vs, err := payment.Verify(ctx, pool)
	if err != nil {
		t.Fatalf("verify %s: %v", when, err)
	}
	for _, v := range vs {
		t.Errorf("verify %s: %s %s: %s", when, v.Rule, v.Row, v.Detail)
	}
}

// counts is each table's row count, as one line.
func counts(ctx context.Context, t *testing.T, pool *pgxpool.Pool, tables []string) string {
	t.Helper()
	out := ""
	for _, table := range tables {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprintf("%s %d; ", table, n)
	}
	return out
}
