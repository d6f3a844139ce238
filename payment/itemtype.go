package payment

import (
	"context"
	"time"

	"github.com/paydispatch/paydispatch/queue"
)

// ItemTypeConfig is PAYMENT's dispatch configuration as first registered:
// the queue's defaults, its own workflow and task queue, at most 2,000
// executions in flight, and paced executions started 6 s ahead of their
// slot (the embedded engine can fall seconds behind under load; the hold
// takes rate × lead of the exec worker's workflow-task slots).
func ItemTypeConfig() queue.Config {
	c := queue.DefaultConfig(ItemType, ExecWorkflowName, ExecTaskQueue)
	c.MaxInFlight = 2000
	c.PacedLead = 6 * time.Second
	return c
}

// RegisterItemType registers PAYMENT in the dispatch queue, once; an
// operator's later changes are kept.
func RegisterItemType(ctx context.Context, q *queue.Queue) error {
	_, err := q.RegisterItemType(ctx, ItemTypeConfig())
	return err
}
