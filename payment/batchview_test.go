package payment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// TestBatchProgress: a recorded file counts its payments by stage as
// Phase A stores them; recording the same file again changes nothing;
// rejections read back; an unknown file is ErrNotFound.
func TestBatchProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := payment.NewStore(newPool(t))
	svc := payment.NewService(payment.ServiceConfig{Store: store})
	sub := payment.BatchSubmission{BatchID: "batch-t", Payments: 3, Chunks: 1}
	ids := []string{"bp-1", "bp-2", "bp-3"}
	keys := []string{payment.Key("acme", "bp-1"), payment.Key("acme", "bp-2"), payment.Key("acme", "bp-3")}
	for range 2 {
		if err := store.RecordBatch(ctx, sub, []string{"acme"}, keys, []int{0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for i, status := range []payment.Status{payment.StatusScheduled, payment.StatusRejected} {
		r := validRequest(now)
		r.PaymentID = ids[i]
		m, err := payment.Validate(r, now)
		if err != nil {
			t.Fatal(err)
		}
		at := r.RequestedExecutionTime
		mp := &m
		if status == payment.StatusRejected {
			mp = nil
		}
		if _, err := store.Record(ctx, r, mp, status, "", &at); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.RecordRejections(ctx, sub.BatchID, []payment.LineError{{Line: 4, Fields: []field.Error{{Field: "amount", Detail: "must be greater than zero"}}, TenantID: "acme"}}); err != nil {
		t.Fatal(err)
	}
	v, err := svc.Batch(ctx, sub.BatchID)
	want := payment.BatchProgress{Received: 1, Rejected: 1, Scheduled: 1}
	if err != nil || v.Payments != 3 || v.Rejected != 1 || v.Progress != want || len(v.Tenants) != 1 || v.Tenants[0] != "acme" {
		t.Fatalf("batch %+v, %v; want progress %+v", v, err, want)
	}
	rej, tenants, err := svc.BatchRejections(ctx, sub.BatchID)
	// Each rejection keeps its tenant, for the API to show it to that
	// tenant only.
	if err != nil || len(rej) != 1 || rej[0].Line != 4 || rej[0].TenantID != "acme" || len(tenants) != 1 {
		t.Fatalf("rejections %+v %v, %v", rej, tenants, err)
	}
	if _, err := svc.Batch(ctx, "batch-none"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("unknown batch: %v", err)
	}
}

// TestReceivedShowsItsTenant: a payment taken in but not yet through
// Phase A (no init worker runs here) is RECEIVED, with its tenant, so a
// tenant's token can follow the statusUrl it was given; the same id is
// another tenant's to use, and an operator who names no tenant is told
// to when two tenants have it.
func TestReceivedShowsItsTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	_, c := temporaltest.Start(t)
	pool := newPool(t)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Temporal: c})
	r := validRequest(time.Now())
	id, err := takeOne(ctx, svc, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"acme", ""} {
		v, err := svc.Status(ctx, tenant, id)
		if err != nil || v.Status != payment.StatusReceived || v.TenantID != "acme" || v.PaymentID != id {
			t.Fatalf("status for %q: %+v, %v; want RECEIVED for acme", tenant, v, err)
		}
	}
	if _, err := svc.Status(ctx, "globex", id); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("another tenant's payment: %v", err)
	}
	if _, err := svc.Status(ctx, "acme", "pay-unknown"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("an unknown payment: %v", err)
	}
	other := r
	other.TenantID, other.Amount = "globex", "1.00"
	if got, err := takeOne(ctx, svc, other); err != nil || got != id {
		t.Fatalf("the same id in another tenant: %q, %v", got, err)
	}
	if _, err := svc.Status(ctx, "", id); !errors.Is(err, payment.ErrAmbiguous) {
		t.Fatalf("an id two tenants use, no tenant named: %v", err)
	}
	if v, err := svc.Status(ctx, "globex", id); err != nil || v.Amount != "1.00" {
		t.Fatalf("globex's payment: %+v, %v", v, err)
	}
}

// takeOne takes r in as POST /v1/payments does, answering its id, or an
// error naming its rejection.
func takeOne(ctx context.Context, svc *payment.Service, r payment.Request) (string, error) {
	got, err := svc.Take(ctx, payment.Intake{Source: routing.SourceAPI, Requests: []payment.Request{r}})
	switch {
	case err != nil:
		return "", err
	case len(got.Rejections) > 0:
		return "", fmt.Errorf("rejected: %+v", got.Rejections)
	}
	return got.Started[0].PaymentID, nil
}
