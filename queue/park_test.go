package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/queue"
)

// TestDeferParkResume: an item being executed is handed back READY at a
// later time or PARKED, keeping its retries; a parked item is never
// claimed, is resumed READY at a new time (and an item never enqueued is
// enqueued), or completed; every other status is left alone.
func TestDeferParkResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, pool := newQueue(t)
	now := time.Now().Truncate(time.Microsecond)
	for _, id := range []string{"later", "held", "claimed", "done", "ready"} {
		mustEnqueue(t, q, id, now.Add(-time.Minute))
	}
	force(t, pool, "later", queue.StatusDispatched, "B", 1)
	force(t, pool, "held", queue.StatusDispatched, "B", 0)
	force(t, pool, "claimed", queue.StatusClaimed, "B", 0)
	force(t, pool, "done", queue.StatusCompleted, "B", 0)
	tomorrow := now.Add(24 * time.Hour)
	res, err := q.Defer(ctx, itemType, "B", []queue.Deferral{
		{ItemID: "later", At: tomorrow}, {ItemID: "held"}, {ItemID: "claimed", At: tomorrow}, {ItemID: "done", At: tomorrow}, {ItemID: "ready"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Moved) != 3 || len(res.Rejected) != 2 {
		t.Fatalf("moved %+v, rejected %+v; want later, held and claimed moved", res.Moved, res.Rejected)
	}
	if it := mustGet(t, q, "later"); it.Status != queue.StatusReady || !it.ScheduledExecTime.Equal(tomorrow) || it.RetryCount != 1 || !it.Paced {
		t.Errorf("deferred: %+v", it)
	}
	if it := mustGet(t, q, "held"); it.Status != queue.StatusParked || it.RetryCount != 0 {
		t.Errorf("parked: %+v", it)
	}
	// A parked item is never claimed.
	b, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 100, PreStartBuffer: 48 * time.Hour, MaxRetries: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range b.Items {
		if it.ID == "held" {
			t.Errorf("a parked item was claimed")
		}
	}
	// Resumed: the parked one READY at its new time, one never enqueued
	// enqueued, anything else left alone.
	var resumed []string
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		resumed, err = q.ResumeTx(ctx, tx, itemType, []queue.Resume{
			{ItemID: "held", TenantID: "acme", At: tomorrow}, {ItemID: "new", TenantID: "acme", At: tomorrow}, {ItemID: "done", TenantID: "acme", At: tomorrow},
		})
		return err
	})
	slices.Sort(resumed)
	if err != nil || !slices.Equal(resumed, []string{"held", "new"}) {
		t.Fatalf("resumed %v, %v; want held and new", resumed, err)
	}
	for _, id := range []string{"held", "new"} {
		if it := mustGet(t, q, id); it.Status != queue.StatusReady || !it.ScheduledExecTime.Equal(tomorrow) || !it.Paced {
			t.Errorf("%s resumed: %+v", id, it)
		}
	}
	if it := mustGet(t, q, "done"); it.Status != queue.StatusCompleted {
		t.Errorf("a completed item was resumed: %+v", it)
	}
	// A parked item is completed by its domain's cancel; others are not.
	force(t, pool, "held", queue.StatusParked, "", 0)
	var completed []string
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		completed, err = q.CompleteParkedTx(ctx, tx, itemType, []string{"held", "new"})
		return err
	})
	if err != nil || !slices.Equal(completed, []string{"held"}) {
		t.Fatalf("completed %v, %v; want held", completed, err)
	}
	var actions []string
	rows, _ := pool.Query(ctx, `SELECT action FROM dispatch_audit_log WHERE item_type = $1 AND item_id = 'held' ORDER BY audit_id`, itemType)
	actions, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !slices.Equal(actions[len(actions)-3:], []string{"PARKED", "RESUMED", "COMPLETED"}) {
		t.Errorf("audit of the parked item: %v, %v", actions, err)
	}
}
