package payment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/temporaltest"
	"github.com/paydispatch/paydispatch/payment"
)

// TestBatchProgress: a recorded file counts its payments by stage as
// Phase A stores them; recording the same file again changes nothing;
// rejections read back; an unknown file is ErrNotFound.
func TestBatchProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := payment.NewStore(newPool(t))
	svc := &payment.Service{Store: store}
	sub := payment.BatchSubmission{BatchID: "batch-t", Payments: 3, Chunks: 1}
	ids := []string{"bp-1", "bp-2", "bp-3"}
	for range 2 {
		if err := store.RecordBatch(ctx, sub, []string{"acme"}, ids); err != nil {
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
	if err := svc.RecordRejections(ctx, sub.BatchID, []payment.LineError{{Line: 4, Fields: []payment.FieldError{{Field: "amount", Detail: "must be greater than zero"}}}}); err != nil {
		t.Fatal(err)
	}
	v, err := svc.Batch(ctx, sub.BatchID)
	want := payment.BatchProgress{Received: 1, Rejected: 1, Scheduled: 1}
	if err != nil || v.Payments != 3 || v.Rejected != 1 || v.Progress != want || len(v.Tenants) != 1 || v.Tenants[0] != "acme" {
		t.Fatalf("batch %+v, %v; want progress %+v", v, err, want)
	}
	rej, tenants, err := svc.BatchRejections(ctx, sub.BatchID)
	if err != nil || len(rej) != 1 || rej[0].Line != 4 || len(tenants) != 1 {
		t.Fatalf("rejections %+v %v, %v", rej, tenants, err)
	}
	if _, err := svc.Batch(ctx, "batch-none"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("unknown batch: %v", err)
	}
}

// TestReceivedShowsItsTenant: a payment taken in but not yet through
// Phase A (no init worker runs here) is RECEIVED, with its tenant, so a
// tenant's token can follow the statusUrl it was given.
func TestReceivedShowsItsTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	_, c := temporaltest.Start(t)
	svc := &payment.Service{Store: payment.NewStore(newPool(t)), Temporal: c}
	r := validRequest(time.Now())
	id, err := svc.Submit(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	v, err := svc.Status(ctx, id)
	if err != nil || v.Status != payment.StatusReceived || v.TenantID != "acme" {
		t.Fatalf("status %+v, %v; want RECEIVED for acme", v, err)
	}
	if _, err := svc.Status(ctx, "pay-unknown"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("an unknown payment: %v", err)
	}
}
