package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/temporal"
	"github.com/paydispatch/paydispatch/temporal/devserver"
)

// Serve's roles on a database and Temporal's own server: Phase A and
// execution workers, and the dispatcher on its Temporal Schedule. A
// payment submitted through the intake is initialized, waits in the queue
// until it is due, and is executed: its debtor's account is debited once.
func Example() {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	if _, err := app.Migrate(ctx, pool, log); err != nil { // registers PAYMENT
		panic(err)
	}
	// A one-second cycle and no jitter, so the example is quick.
	if _, err := queue.New(pool).UpdateConfig(ctx, payment.ItemType, map[string]string{
		"dispatch_interval_secs": "1", "jitter_window_ms": "0",
	}); err != nil {
		panic(err)
	}
	srv, err := devserver.Start(ctx, devserver.Options{LogLevel: "fatal"})
	if err != nil {
		panic(err)
	}
	defer func() { _ = srv.Stop() }()
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(log)})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	db, tc := &postgres.DB{Pool: pool}, &temporal.Conn{Client: c, Address: srv.HostPort(), Namespace: "default"}

	for _, start := range []func(*postgres.DB, *temporal.Conn, *slog.Logger, app.Options) (func(), error){app.StartInitWorker, app.StartExecWorker} {
		stop, err := start(db, tc, log, app.Options{})
		if err != nil {
			panic(err)
		}
		defer stop()
	}
	stopDispatch, err := app.StartDispatcher(ctx, "schedule", db, tc, log, app.Options{})
	if err != nil {
		panic(err)
	}
	defer stopDispatch()

	// The debtor's account, in the payment's currency, with 1,000.00 on it.
	if _, _, err := account.Create(ctx, pool, account.Spec{
		AccountID: "ACC-1", TenantID: "acme", Currency: "EUR", OpeningBalance: decimal.RequireFromString("1000.00"),
	}); err != nil {
		panic(err)
	}

	intake := app.PaymentService(db, tc, payment.ServiceConfig{ChunkSize: 1000}) // what the HTTP API calls
	taken, err := intake.Take(ctx, payment.Intake{Source: routing.SourceAPI, Requests: []payment.Request{{
		PaymentID: "pay-example-1", TenantID: "acme", DebtorAccount: "ACC-1", Amount: "125.00", Currency: "EUR",
		Creditor:               payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"},
		RequestedExecutionTime: time.Now().Add(2 * time.Second),
	}}})
	if err := errors.Join(err, taken.Refused()); err != nil {
		panic(err)
	}
	id := taken.Started[0].PaymentID
	seen := map[payment.Status]bool{}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		v, err := intake.Status(ctx, "acme", id)
		if err != nil {
			panic(err)
		}
		// (ACCEPTED lasts milliseconds: a poll may or may not see it.)
		if !seen[v.Status] && (v.Status == payment.StatusScheduled || v.Status == payment.StatusProcessing) {
			seen[v.Status] = true
			fmt.Println(v.PaymentID, v.Status, v.Amount, v.Currency)
		}
		if v.Status == payment.StatusProcessing && v.QueueStatus == string(queue.StatusCompleted) {
			fmt.Println("queue item", v.QueueStatus)
			break
		}
	}
	acct, err := account.Get(ctx, pool, "ACC-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("ACC-1 balance", acct.Balance.StringFixed(2), acct.Currency)
	violations, err := payment.Verify(ctx, pool) // what paydispatch verify runs
	if err != nil {
		panic(err)
	}
	fmt.Println("ledger violations:", len(violations))
	// Output:
	// pay-example-1 SCHEDULED 125.00 EUR
	// pay-example-1 PROCESSING 125.00 EUR
	// queue item COMPLETED
	// ACC-1 balance 875.00 EUR
	// ledger violations: 0
}
