package payment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/internal/temporaltest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// TestResumeIntake: payments stored RECEIVED whose Phase A workflow never
// started (the engine was down at intake) are taken on by ResumeIntake,
// each once, through the workflow intake would have started; a payment
// that has waited less than the wait is left alone; a second resume
// starts nothing. Neither workflow's history holds a creditor's name or
// IBAN: the engine is given keys.
func TestResumeIntake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	_, c := temporaltest.Start(t)
	w := worker.New(c, payment.InitTaskQueue, worker.Options{})
	payment.RegisterInit(w, &payment.InitActivities{Store: payment.NewStore(pool), Queue: queue.New(pool)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	svc := &payment.Service{Store: payment.NewStore(pool), Queue: queue.New(pool), Temporal: c}

	var rs []payment.Request
	for i := range 5 {
		r := validRequest(time.Now())
		r.PaymentID = fmt.Sprintf("resume-%d", i)
		rs = append(rs, r)
	}
	chunkOf := func(i int) string { return fmt.Sprintf("init-batch-resume-%d", i/3) }
	receipts, err := svc.Store.Receive(ctx, rs, chunkOf, true)
	if err != nil || len(receipts) != 5 {
		t.Fatalf("receive: %+v, %v", receipts, err)
	}
	if n, err := svc.ResumeIntake(ctx, time.Hour, 10); err != nil || n != 0 {
		t.Fatalf("a resume of payments that have not waited: %d started, %v", n, err)
	}
	if n, err := svc.ResumeIntake(ctx, 0, 10); err != nil || n != 2 {
		t.Fatalf("resume: %d workflows started, %v; want the 2 chunks", n, err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		scheduled := 0
		for _, r := range rs {
			p, err := svc.Store.Find(ctx, r.TenantID, r.PaymentID)
			if err != nil {
				t.Fatal(err)
			}
			if p.Status == payment.StatusScheduled {
				scheduled++
			}
		}
		if scheduled == len(rs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d scheduled after a minute", scheduled, len(rs))
		}
	}
	if n, err := svc.ResumeIntake(ctx, 0, 10); err != nil || n != 0 {
		t.Fatalf("a second resume: %d started, %v", n, err)
	}
	for _, id := range []string{chunkOf(0), chunkOf(3)} {
		for _, personal := range []string{validIBAN, validCreditor} {
			if temporaltest.HistoryHolds(t, c, id, personal) {
				t.Fatalf("%s: the history holds %q", id, personal)
			}
		}
	}
}
