package payment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
)

// TestResumeIntake: payments stored RECEIVED whose Phase A workflow never
// started (the engine was down at intake) are taken on by ResumeIntake,
// each once, through the workflow intake would have started; a payment
// that has waited less than the wait is left alone; a second resume
// starts nothing. Neither workflow's history holds a creditor's name or
// IBAN, nor the payments' keys: the workflow reads them from its intake
// row.
func TestResumeIntake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	_, c := temporaltest.Start(t)
	w := worker.New(c, payment.InitTaskQueue, worker.Options{})
	payment.RegisterInit(w, payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)}))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Temporal: c})

	var rs []payment.Request
	for i := range 5 {
		r := validRequest(time.Now())
		r.PaymentID = fmt.Sprintf("resume-%d", i)
		rs = append(rs, r)
	}
	chunkOf := func(i int) string { return fmt.Sprintf("init-batch-resume-%d", i/3) }
	receipts, err := svc.Store().Receive(ctx, rs, chunkOf, true)
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
			p, err := svc.Store().Find(ctx, r.TenantID, r.PaymentID)
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
		for _, personal := range []string{validIBAN, validCreditor, payment.Key(rs[0].TenantID, rs[0].PaymentID), payment.Key(rs[4].TenantID, rs[4].PaymentID)} {
			if temporaltest.HistoryHolds(t, c, id, personal) {
				t.Fatalf("%s: the history holds %q", id, personal)
			}
		}
	}
	// An attempt after the chunk was taken on (its answer lost) takes on
	// nothing, and says so.
	a := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)})
	if res, err := a.InitIntake(ctx, chunkOf(0)); err != nil || res != (payment.BatchResult{TakenBefore: true}) {
		t.Fatalf("a second attempt: %+v, %v", res, err)
	}
}

// TestStartBatchInParts: a file larger than one transaction's part
// (10,000 payments) is stored part by part when it is not taken whole,
// and its chunks start as each part commits: every payment is stored
// once, each chunk holds its own payments, and a payment whose id was
// used for a different payment, in the second part, is reported by its
// index in the file and left alone. Taken whole, the same file stores
// nothing.
func TestStartBatchInParts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	_, c := temporaltest.Start(t)
	const n, conflictAt = 12_000, 11_000
	tests := []struct {
		whole bool
		// chunk: 0 for the default, a part's size; chunks smaller than
		// a part start together once it commits.
		chunk, chunks int
	}{
		{whole: false, chunk: 2500, chunks: 5}, // 4 of 2,500, then 1,999
		{whole: false, chunk: 0, chunks: 2},    // 10,000, then 1,999
		{whole: true, chunk: 2500},
	}
	for _, tt := range tests {
		whole := tt.whole
		// One after another: the cases share the Temporal server, whose
		// init task queue each case's worker polls with its own database,
		// so a case's chunk could run on another's worker and find
		// nothing there to store.
		t.Run(fmt.Sprintf("whole=%v/chunk=%d", whole, tt.chunk), func(t *testing.T) {
			ctx := context.Background()
			pool := newPool(t)
			svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: queue.New(pool), Temporal: c, ChunkSize: tt.chunk})
			if !whole { // taken whole, nothing starts: no worker
				w := worker.New(c, payment.InitTaskQueue, worker.Options{})
				payment.RegisterInit(w, payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: queue.New(pool)}))
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(w.Stop)
			}

			at := time.Now()
			rs := make([]payment.Request, n)
			for i := range rs {
				rs[i] = validRequest(at)
				rs[i].PaymentID = fmt.Sprintf("part-%05d", i)
			}
			taken := rs[conflictAt]
			taken.Amount = "1.00"
			// taken in, its Phase A not started: it stays as it is
			if _, err := svc.Store().Receive(ctx, []payment.Request{taken}, func(int) string { return "init-taken" }, true); err != nil {
				t.Fatal(err)
			}
			sub, err := svc.StartBatch(ctx, rs, whole)
			if len(sub.Conflicts) != 1 || sub.Conflicts[0] != conflictAt {
				t.Fatalf("conflicts %v, want [%d]", sub.Conflicts, conflictAt)
			}
			var claimed int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM payment_keys WHERE external_id LIKE 'part-%'`).Scan(&claimed); err != nil {
				t.Fatal(err)
			}
			if whole {
				if !errors.Is(err, payment.ErrConflict) || claimed != 1 {
					t.Fatalf("whole: %v, %d payments taken in; want ErrConflict and only the one taken before", err, claimed)
				}
				return
			}
			if err != nil || sub.Payments != n-1 || sub.Chunks != tt.chunks {
				t.Fatalf("%+v, %v; want %d payments in %d chunks", sub, err, n-1, tt.chunks)
			}
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
				var scheduled, chunks int
				if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE p.status = 'SCHEDULED'), count(DISTINCT q.init_workflow_id)
					FROM payments p LEFT JOIN exec_queue q ON q.item_id = p.payment_id WHERE p.external_id LIKE 'part-%'`).Scan(&scheduled, &chunks); err != nil {
					t.Fatal(err)
				}
				if scheduled == n-1 {
					if chunks != tt.chunks {
						t.Fatalf("%d init workflows enqueued the payments, want the %d chunks", chunks, tt.chunks)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d scheduled after two minutes", scheduled, n-1)
				}
			}
			p, err := svc.Store().Find(ctx, taken.TenantID, taken.PaymentID)
			if err != nil || p.Status != payment.StatusReceived || p.Amount != "1.00" {
				t.Fatalf("the payment taken before: %+v, %v; want it as it was", p, err)
			}
		})
	}
}
