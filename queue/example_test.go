package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

// A domain registers its item type once, enqueues items with the context
// their execution needs, and a dispatcher claims the due ones and marks
// them dispatched once their execution workflows are started.
func Example() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open() // a database with the queue's tables
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queue.New(pool)

	if _, err := q.RegisterItemType(ctx, queue.DefaultSettings("EMAIL", "SendEmailWorkflow", "email-task-queue")); err != nil {
		panic(err)
	}
	due := time.Now().Add(-time.Minute)
	for _, id := range []string{"welcome-1", "welcome-2"} {
		res, err := q.SaveContextAndEnqueue(ctx, queue.EnqueueParams{
			ItemType: "EMAIL", ItemID: id, TenantID: "acme", ScheduledExecTime: due,
			Context: json.RawMessage(`{"to":"jane@example.com"}`),
		})
		if err != nil {
			panic(err)
		}
		fmt.Println("enqueued", id, res.Status)
	}

	cfg, err := q.GetConfig(ctx, "EMAIL")
	if err != nil {
		panic(err)
	}
	batch, err := q.ClaimBatch(ctx, cfg.ClaimParams())
	if err != nil {
		panic(err)
	}
	var started []queue.Dispatch
	for _, it := range batch.Items {
		fmt.Printf("claimed %s with context %s\n", it.ID, it.Context)
		started = append(started, queue.Dispatch{ItemID: it.ID, ExecWorkflowID: "exec-email-" + it.ID})
	}
	res, err := q.MarkDispatchedBatch(ctx, "EMAIL", batch.ID, started)
	if err != nil {
		panic(err)
	}
	slices.SortFunc(res.Moved, func(a, b queue.Outcome) int { return strings.Compare(a.ItemID, b.ItemID) })
	for _, o := range res.Moved {
		fmt.Println(o.ItemID, o.Status)
	}
	// Output:
	// enqueued welcome-1 READY
	// enqueued welcome-2 READY
	// claimed welcome-1 with context {"to": "jane@example.com"}
	// claimed welcome-2 with context {"to": "jane@example.com"}
	// welcome-1 DISPATCHED
	// welcome-2 DISPATCHED
}
