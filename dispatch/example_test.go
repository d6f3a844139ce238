package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

// printingEngine stands in for Temporal: it prints the execution workflows
// the dispatcher starts, and reports none closed yet.
type printingEngine struct{}

func (printingEngine) Start(_ context.Context, s dispatch.StartRequest) error {
	fmt.Printf("start %s (%s on %s) with %s\n", s.WorkflowID, s.WorkflowType, s.TaskQueue, s.Context)
	return nil
}
func (printingEngine) Exists(context.Context, string) (bool, error) { return false, nil }
func (printingEngine) Closed(context.Context, []string) (map[string]dispatch.Closure, error) {
	return nil, nil
}

// One dispatch cycle, as a replica holding the item type's lease runs it:
// read the configuration, recover stale claims, reconcile finished
// executions, claim the due items and start their execution workflows.
func Example() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open() // a database with the queue's, the pacer's and the dispatcher's tables
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	q := queue.New(pool)
	cfg := queue.DefaultSettings("EMAIL", "SendEmailWorkflow", "email-task-queue")
	cfg.JitterWindow = 0
	if _, err := q.RegisterItemType(ctx, cfg); err != nil {
		panic(err)
	}
	for _, id := range []string{"welcome-1", "welcome-2"} {
		if _, err := q.SaveContextAndEnqueue(ctx, queue.EnqueueParams{
			ItemType: "EMAIL", ItemID: id, TenantID: "acme", ScheduledExecTime: time.Now().Add(-time.Second),
			Context: json.RawMessage(`{"to":"jane@example.com"}`),
		}); err != nil {
			panic(err)
		}
	}

	acts, err := dispatch.NewActivities(dispatch.Config{Queue: q, Engine: printingEngine{}, StartConcurrency: 1})
	if err != nil {
		panic(err)
	}
	runner, err := dispatch.NewLeaseRunner(dispatch.LeaseConfig{DB: pool, Acts: acts, ItemTypes: []string{"EMAIL"}})
	if err != nil {
		panic(err)
	}
	res, ran, err := runner.Tick(ctx, "EMAIL", cfg.DispatchInterval)
	if err != nil {
		panic(err)
	}
	fmt.Printf("ran %t: claimed %d, started %d\n", ran, res.Dispatch.Claimed, res.Dispatch.Started)
	d, _ := q.Depth(ctx, "EMAIL")
	fmt.Println("dispatched:", d.ByStatus[queue.StatusDispatched])
	// Output:
	// start exec-email-welcome-1 (SendEmailWorkflow on email-task-queue) with {"to": "jane@example.com"}
	// start exec-email-welcome-2 (SendEmailWorkflow on email-task-queue) with {"to": "jane@example.com"}
	// ran true: claimed 2, started 2
	// dispatched: 2
}
