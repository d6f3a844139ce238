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

// TestLockMovableAndEnqueueAbsent: for a domain that enqueues its far-off
// items late, LockMovableTx tells the READY items (locked) and the
// absent ones from those held elsewhere: an item in any other status, or
// READY but locked by another transaction, is neither. EnqueueAbsentTx
// enqueues only the absent, READY at their times, each audited ENQUEUED,
// and leaves every item there as it is.
func TestLockMovableAndEnqueueAbsent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, pool := newQueue(t)
	now := time.Now().Truncate(time.Microsecond)
	for _, id := range []string{"ready", "busy", "claimed", "parked", "done"} {
		mustEnqueue(t, q, id, now.Add(time.Minute))
	}
	force(t, pool, "claimed", queue.StatusClaimed, "B", 0)
	force(t, pool, "parked", queue.StatusParked, "", 0)
	force(t, pool, "done", queue.StatusCompleted, "B", 0)
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(ctx) }()
	if locked, err := q.LockReadyTx(ctx, other, itemType, []string{"busy"}); err != nil || len(locked) != 1 {
		t.Fatalf("another lever's lock: %v, %v", locked, err)
	}
	ids := []string{"ready", "busy", "claimed", "parked", "done", "far-1", "far-2"}
	var ready, absent, added []string
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if ready, absent, err = q.LockMovableTx(ctx, tx, itemType, ids); err != nil {
			return err
		}
		var ps []queue.EnqueueParams
		for _, id := range ids {
			ps = append(ps, queue.EnqueueParams{ItemID: id, TenantID: "acme", ScheduledExecTime: now.Add(time.Hour), Paced: true})
		}
		added, err = q.EnqueueAbsentTx(ctx, tx, itemType, ps)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ready, []string{"ready"}) || !slices.Equal(absent, []string{"far-1", "far-2"}) {
		t.Errorf("ready %v, absent %v; want [ready], [far-1 far-2]", ready, absent)
	}
	slices.Sort(added)
	if !slices.Equal(added, []string{"far-1", "far-2"}) {
		t.Errorf("enqueued %v, want the absent ones", added)
	}
	for id, want := range map[string]queue.Status{"ready": queue.StatusReady, "claimed": queue.StatusClaimed, "parked": queue.StatusParked,
		"done": queue.StatusCompleted, "far-1": queue.StatusReady, "far-2": queue.StatusReady} {
		it := mustGet(t, q, id)
		if it.Status != want || (id[:3] == "far") != it.ScheduledExecTime.Equal(now.Add(time.Hour)) {
			t.Errorf("%s: %s at %s, want %s", id, it.Status, it.ScheduledExecTime, want)
		}
	}
	if trail := auditTrail(t, pool, "far-1"); len(trail) != 1 || trail[0].Action != "ENQUEUED" || trail[0].StatusAfter != queue.StatusReady {
		t.Errorf("far-1's audit: %+v", trail)
	}
	if _, err := q.EnqueueAbsentTx(ctx, nil, itemType, []queue.EnqueueParams{{ItemID: "no-time"}}); err == nil {
		t.Error("an item without a time was taken")
	}
}
