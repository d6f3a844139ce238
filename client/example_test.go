package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// token is a SecuritySource with one bearer token.
type token string

func (t token) Bearer(context.Context, client.OperationName) (client.Bearer, error) {
	return client.Bearer{Token: string(t)}, nil
}

// The generated client against paydispatch serve (on PostgreSQL, with
// Temporal's own server, the workers, the dispatcher, the outbox relayer
// and the rail simulator in it): an account opened, a payment refused with its
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

// startServe builds paydispatch and runs serve on a test database: its
// embedded Temporal, workers, dispatcher, outbox relayer and rail
// simulator, and the API on a free loopback port. It returns the API's
// base URL, the admin token serve was bootstrapped with, and a stop.
func startServe(ctx context.Context) (base, adminToken string, stop func()) {
	dir, err := os.MkdirTemp("", "paydispatch-client-example-")
	if err != nil {
		panic(err)
	}
	bin := filepath.Join(dir, "paydispatch")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/paydispatch/paydispatch/cmd/paydispatch").CombinedOutput(); err != nil {
		panic(fmt.Sprintf("go build: %v: %s", err, out))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	dbURL, drop, err := pgtest.OpenURL()
	if err != nil {
		panic(err)
	}
	adminToken = "example-admin-token-0123456789abcdef"
	serve := exec.Command(bin, "serve", "--http-addr", addr, "--data-dir", dir,
		"--temporal-port", "0", "--temporal-ui-port", "off", "--temporal-log-level", "fatal")
	serve.Env = append(os.Environ(), "DATABASE_URL="+dbURL,
		"TEMPORAL_ADDRESS=", "PAYDISPATCH_RAIL_URL=", "PAYDISPATCH_BOOTSTRAP_TOKEN="+adminToken)
	var stderr bytes.Buffer
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		panic(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	stop = func() {
		_ = serve.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			_ = err // serve's exit status after SIGTERM is not the example's subject
		case <-time.After(time.Minute):
			_ = serve.Process.Kill()
		}
		drop()
		_ = os.RemoveAll(dir)
	}
	base = "http://" + addr
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-exited:
			panic(fmt.Sprintf("serve exited: %v\n%s", err, stderr.String()))
		default:
		}
		if resp, err := http.Get(base + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, adminToken, stop
			}
		}
		if time.Now().After(deadline) {
			stop()
			panic("serve not ready in 2 minutes:\n" + stderr.String())
		}
	}
}
