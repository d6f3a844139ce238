package payment

import (
	"context"
	"time"

	"github.com/paydispatch/paydispatch/queue"
)

// ItemTypeConfig is PAYMENT's dispatch configuration as first registered:
// the queue's defaults, its own workflow and task queue, at most 4,000
// items in flight (at 1,000/s a cycle claims two seconds of payments
// while the two before still settle), paced executions started 6 s ahead
// of their slot (the embedded engine can fall seconds behind under load),
// and BATCH execution with a cycle every 2 s (one workflow a claimed
// batch, run as groups of up to 100; a cycle every second costs 15 % more
// CPU a payment for no gain in pacing; docs/design.md compares the
// modes). Items are claimed 8 s ahead, the lead and a cycle: a lever
// moves only what is not claimed, so this is how soon one acts.
func ItemTypeConfig() queue.Settings {
	c := queue.DefaultSettings(ItemType, ExecWorkflowName, ExecTaskQueue)
	c.MaxInFlight = 4000
	c.PacedLead = 6 * time.Second
	c.PreStartBuffer = 8 * time.Second
	c.ExecMode = queue.ExecBatch
	c.DispatchInterval = 2 * time.Second
	return c
}

// RegisterItemType registers PAYMENT in the dispatch queue, once; an
// operator's later changes are kept.
func RegisterItemType(ctx context.Context, q *queue.Queue) error {
	_, err := q.RegisterItemType(ctx, ItemTypeConfig())
	return err
}
