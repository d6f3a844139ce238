package payment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/payment"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := payment.NewStore(pgtest.NewPool(t))
	now := time.Now()
	r := validRequest(now)
	m, err := payment.Validate(r, now)
	if err != nil {
		t.Fatal(err)
	}
	at := r.RequestedExecutionTime
	if created, err := s.Record(ctx, r, &m, payment.StatusScheduled, "", &at); err != nil || !created {
		t.Fatalf("record: %v %v", created, err)
	}
	// Replay: the same request (its time in another zone) is a no-op.
	replay := r
	replay.RequestedExecutionTime = r.RequestedExecutionTime.In(time.FixedZone("MST", -7*3600))
	if created, err := s.Record(ctx, replay, &m, payment.StatusScheduled, "", &at); err != nil || created {
		t.Fatalf("replay: %v %v", created, err)
	}
	other := r
	other.Amount = "999.00"
	if _, err := s.Record(ctx, other, &m, payment.StatusScheduled, "", &at); !errors.Is(err, payment.ErrConflict) {
		t.Fatalf("different payment under the same id: %v", err)
	}
	p, err := s.Get(ctx, r.PaymentID)
	if err != nil || p.Status != payment.StatusScheduled || !p.Money.Amount.Equal(decimal.RequireFromString("125")) || p.Money.Currency != "EUR" {
		t.Fatalf("get: %+v %v", p, err)
	}

	// Guarded transitions; repeating one that happened is fine.
	steps := []struct {
		from, to payment.Status
		wantErr  error
	}{
		{payment.StatusScheduled, payment.StatusAccepted, nil},
		{payment.StatusScheduled, payment.StatusAccepted, nil}, // retried activity
		{payment.StatusScheduled, payment.StatusRejected, payment.ErrWrongStatus},
		{payment.StatusAccepted, payment.StatusProcessing, nil},
		{payment.StatusAccepted, payment.StatusFailed, payment.ErrWrongStatus},
	}
	for _, st := range steps {
		if err := s.Transition(ctx, r.PaymentID, st.from, st.to, ""); !errors.Is(err, st.wantErr) {
			t.Fatalf("%s → %s: %v, want %v", st.from, st.to, err, st.wantErr)
		}
	}
	if p, _ := s.Get(ctx, r.PaymentID); p.Status != payment.StatusProcessing {
		t.Fatalf("status %s", p.Status)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}

	// A payment rejected for being invalid is kept without an amount.
	bad := validRequest(now)
	bad.PaymentID, bad.Amount = "pay-bad", "-5"
	if _, err := s.Record(ctx, bad, nil, payment.StatusRejected, "amount: must be greater than zero", nil); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Get(ctx, "pay-bad"); err != nil || p.Money != nil || p.Status != payment.StatusRejected || p.StatusReason == "" {
		t.Fatalf("rejected: %+v %v", p, err)
	}
}

func TestInitActivitiesRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := &payment.InitActivities{Rules: payment.Rules{MaxAmount: decimal.RequireFromString("1000"), BlockedCountries: []string{"KP"}}}
	r := validRequest(time.Now())
	e, err := a.Enrich(ctx, r)
	if err != nil || e.CreditorCountry != "DE" || e.CreditorIBAN != "DE89370400440532013000" {
		t.Fatalf("enrich: %+v %v", e, err)
	}
	if _, err := a.ApplyRules(ctx, r, "125.00", e); err != nil {
		t.Fatalf("rules on a fine payment: %v", err)
	}
	if _, err := a.ApplyRules(ctx, r, "1000.01", e); err == nil {
		t.Fatal("amount over the limit passed")
	}
	if _, err := a.ApplyRules(ctx, r, "1", payment.Enrichment{CreditorCountry: "KP"}); err == nil {
		t.Fatal("blocked country passed")
	}
	if _, err := a.Validate(ctx, payment.Request{}); err == nil {
		t.Fatal("empty request validated")
	}
}
