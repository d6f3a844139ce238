package deadletter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/queue"
)

// Three items whose starts kept failing are requeued under a config of
// two a second: they go back READY two a window, not all at once.
func Example() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open() // a database with the queue's, the pacer's and the outbox's tables
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q, lim := queue.New(pool), pacing.New(pacing.Config{Pool: pool})
	cfg := queue.DefaultSettings("REPORT", "ReportWorkflow", "reports")
	cfg.MaxDispatchRetries = 1
	if _, err := q.RegisterItemType(ctx, cfg); err != nil {
		panic(err)
	}
	if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "two-a-second", MaxPerWindow: 2, Window: time.Second, Headroom: 10}); err != nil {
		panic(err)
	}
	// Three items due, claimed, and their one start failed: dead letters.
	tx, _ := pool.Begin(ctx)
	for _, id := range []string{"r-1", "r-2", "r-3"} {
		if _, err := q.EnqueueBatchTx(ctx, tx, []queue.EnqueueParams{{ItemType: "REPORT", ItemID: id, TenantID: "acme",
			ScheduledExecTime: time.Now().Add(-time.Minute)}}); err != nil {
			panic(err)
		}
	}
	_ = tx.Commit(ctx)
	b, _ := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: "REPORT", BatchSize: 10, PreStartBuffer: time.Minute, MaxRetries: 1})
	var fs []queue.Failure
	for _, it := range b.Items {
		fs = append(fs, queue.Failure{ItemID: it.ID, Error: "engine unavailable"})
	}
	_, _ = q.ReleaseForRetryBatch(ctx, "REPORT", b.ID, fs, 1)

	svc := deadletter.New(deadletter.Config{DB: pool, Queue: q, Limiter: lim})
	page, _ := svc.List(ctx, deadletter.Filter{Reason: "unavailable"}, nil, 10)
	fmt.Println("dead letters:", len(page.Letters), page.Letters[0].Source, page.Letters[0].Reason)

	res, err := svc.Requeue(ctx, deadletter.Request{Filter: &deadletter.Filter{Source: deadletter.SourceDispatch},
		Config: "two-a-second", Reason: "engine back"})
	if err != nil {
		panic(err)
	}
	fmt.Println("requeued:", res.Requeued, "under", res.Configs)
	fmt.Println("slots span at least a window:", res.LastSlot.Sub(res.FirstSlot) >= 500*time.Millisecond)
	it, _ := q.Get(ctx, "REPORT", "r-3")
	fmt.Println("r-3:", it.Status, "paced:", it.Paced, "retries:", it.RetryCount)
	// Output:
	// dead letters: 3 dispatch engine unavailable
	// requeued: 3 under [two-a-second]
	// slots span at least a window: true
	// r-3: READY paced: true retries: 0
}
