package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"time"

	tclient "go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/railsim"
	"github.com/paydispatch/paydispatch/temporal"
	"github.com/paydispatch/paydispatch/temporal/devserver"
)

// token is a SecuritySource with one bearer token.
type token string

func (t token) Bearer(context.Context, client.OperationName) (client.Bearer, error) {
	return client.Bearer{Token: string(t)}, nil
}

// The generated client against serve's API on a real stack (PostgreSQL,
// Temporal's own server, the workers, the dispatcher, the outbox relayer
// and the rail simulator): an account opened, a payment refused with its
// field named, and a payment taken in and followed until the rail
// delivered it, the balance debited exactly.
func Example() {
	ctx := context.Background()
	base, admin, stop := startServe(ctx)
	defer stop()

	c, err := client.NewClient(base, token(admin))
	if err != nil {
		panic(err)
	}
	if err := client.Check(c.CreateAccount(ctx, &client.AccountRequest{
		AccountId: "ACC-1", TenantId: client.NewOptString("acme"), Currency: "EUR", Balance: "1000.00",
	}, client.CreateAccountParams{})); err != nil {
		panic(err)
	}

	pay := client.PaymentRequest{
		PaymentId: client.NewOptString("pay-1"), TenantId: client.NewOptString("acme"), DebtorAccount: "ACC-1",
		Amount: "125.00", Currency: "EUR",
		Creditor:               client.Creditor{Name: "Jane Doe", Iban: "DE89370400440532013000"},
		RequestedExecutionTime: time.Now().Add(2 * time.Second),
	}
	bad := pay
	bad.PaymentId, bad.Creditor.Iban = client.NewOptString("pay-2"), "DE00000000000000000000"
	_, err = client.Result[*client.PaymentAcceptedHeaders](c.CreatePayment(ctx, &bad, client.CreatePaymentParams{}))
	if p, ok := errors.AsType[*client.Problem](err); ok {
		fmt.Println(p.Status, p.Title, p.Errors[0].Field)
	}

	accepted, err := client.Result[*client.PaymentAcceptedHeaders](c.CreatePayment(ctx, &pay, client.CreatePaymentParams{}))
	if err != nil {
		panic(err)
	}
	fmt.Println(accepted.Response.PaymentId, accepted.Response.Status)

	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		p, err := client.Result[*client.Payment](c.GetPayment(ctx, client.GetPaymentParams{ID: "pay-1"}))
		if err != nil {
			panic(err)
		}
		if p.Status == client.PaymentStatusDELIVERED {
			fmt.Println(p.PaymentId, p.Status, p.Amount.Or(""), p.Currency.Or(""))
			break
		}
	}
	acct, err := client.Result[*client.Account](c.GetAccount(ctx, client.GetAccountParams{ID: "ACC-1"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(acct.AccountId, acct.Balance, acct.Currency)
	// Output:
	// 422 Invalid payment creditor.iban
	// pay-1 RECEIVED
	// pay-1 DELIVERED 125.00 EUR
	// ACC-1 875.00 EUR
}

// startServe starts what paydispatch serve runs, on a test database, and
// its API with the routes this example calls, behind tokens: the API's
// base URL, an admin token, and a stop for all of it.
func startServe(ctx context.Context) (base, adminToken string, stop func()) {
	log := slog.New(slog.DiscardHandler)
	pool := pgtest.ExamplePool()
	if _, err := app.Migrate(ctx, pool, log); err != nil {
		panic(err)
	}
	// A one-second dispatch cycle and no jitter, so the example is quick.
	if _, err := queue.New(pool).UpdateConfig(ctx, payment.ItemType, map[string]string{
		"dispatch_interval_secs": "1", "jitter_window_ms": "0",
	}); err != nil {
		panic(err)
	}
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	must := func(s func(), err error) {
		if err != nil {
			stop()
			panic(err)
		}
		stops = append(stops, s)
	}
	srv, err := devserver.Start(ctx, devserver.Options{LogLevel: "fatal"})
	must(func() { _ = srv.Stop() }, err)
	tc, err := tclient.Dial(tclient.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(log)})
	must(tc.Close, err)
	db, conn := &postgres.DB{Pool: pool}, &temporal.Conn{Client: tc, Address: srv.HostPort(), Namespace: "default"}
	must(app.StartInitWorker(db, conn, log, app.Options{}))
	must(app.StartExecWorker(db, conn, log, app.Options{}))
	must(app.StartDispatcher(ctx, "schedule", db, conn, log, app.Options{}))
	railURL, stopRail, err := app.StartRailSim(ctx, "127.0.0.1:0", railsim.Behaviour{}, log)
	must(stopRail, err)
	must(app.StartRelayer(ctx, db, app.RelayConfig{RailURL: railURL}, payment.OutboxHooks(), nil, log))

	adminToken, _, err = auth.NewStore(pool).Create(ctx, auth.NewToken{Name: "example", Scopes: []auth.Scope{auth.Admin}})
	must(func() {}, err)
	router := httpapi.NewRouter(log)
	router.RequireAuth(auth.NewStore(pool))
	router.HandlePayments(app.PaymentService(db, conn, 0))
	router.HandleAccounts(service.New(pool))
	api := httptest.NewServer(router)
	stops = append(stops, api.Close)
	return api.URL, adminToken, stop
}
