package payment_test

import (
	"context"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// TestDelivery: executed payments reach the rail simulator through the
// outbox's relayer and the JSON rail adapter: the one the rail takes is
// DELIVERED, received once; the one it refuses for good is RETURNED with
// the rail's code, its debit given back to the cent.
func TestDelivery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := newSaga(t)
	s.account(t, account.Spec{AccountID: "ACC-D", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("1000"), Fee: dec("1")})
	refused := paymentTo("refused", "ACC-D", "200.00", "EUR")
	refused.RemittanceInfo = "RAIL-REJECT:AC04"
	contexts := s.schedule(t, paymentTo("taken", "ACC-D", "100.00", "EUR"), refused)
	for _, id := range []string{"taken", "refused"} {
		if out, err := s.execute(ctx, id, contexts[id]); err != nil || out.Status != "SUCCEEDED" {
			t.Fatalf("%s: %+v %v", id, out, err)
		}
	}
	sim := railsim.New(railsim.Options{})
	url, stop, err := sim.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	json, err := rail.NewHTTPRail(rail.Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	router, err := rail.NewRouter(json)
	if err != nil {
		t.Fatal(err)
	}
	relayer, err := outbox.New(outbox.Config{Pool: s.pool, Sender: router, Hooks: payment.OutboxHooks(), PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRelay := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relayer.Run(runCtx) }()
	store := payment.NewStore(s.pool)
	for {
		a, _ := store.Find(ctx, "acme", "taken")
		b, _ := store.Find(ctx, "acme", "refused")
		if a.Status == payment.StatusDelivered && b.Status == payment.StatusReturned {
			if b.StatusReason[:4] != "AC04" {
				t.Fatalf("returned with %q, want the rail's AC04", b.StatusReason)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("taken %s, refused %s (%q)", a.Status, b.Status, b.StatusReason)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopRelay()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatal(err)
	}
	// 1000 − (100 + 1): the refused payment's 201 came back.
	if bal := s.balance(t, "ACC-D"); !bal.Equal(dec("899")) {
		t.Fatalf("balance %s, want 899", bal)
	}
	if l := sim.Ledger(); l.Unique != 1 || l.Refused != 1 || l.Duplicates != 0 || l.Gaps != 0 {
		t.Fatalf("rail ledger %+v", l)
	}
	s.verify(t)
}
