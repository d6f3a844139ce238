package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

// itemType is the queue tests' own item type: the framework's tests
// register theirs, as every domain does, and use no domain's.
const itemType = "TASK"

func taskConfig() queue.Settings {
	return queue.DefaultSettings(itemType, "TaskExecWorkflow", "task-exec")
}

func newQueue(t *testing.T) (*queue.Queue, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewPool(t)
	q := queue.New(pool)
	if _, err := q.RegisterItemType(context.Background(), taskConfig()); err != nil {
		t.Fatal(err)
	}
	return q, pool
}

func enqueueParams(id string, due time.Time) queue.EnqueueParams {
	return queue.EnqueueParams{
		ItemType:          itemType,
		ItemID:            id,
		TenantID:          "acme",
		ScheduledExecTime: due.Truncate(time.Microsecond),
		InitWorkflowID:    "init-" + id,
		Context:           json.RawMessage(fmt.Sprintf(`{"taskId":%q,"size":10}`, id)),
	}
}

func mustEnqueue(t *testing.T, q *queue.Queue, id string, due time.Time) {
	t.Helper()
	res, err := q.SaveContextAndEnqueue(context.Background(), enqueueParams(id, due))
	if err != nil || !res.Enqueued {
		t.Fatalf("enqueue %s: %+v, %v", id, res, err)
	}
}

// force puts an item in a status directly, bypassing the state machine:
// test setup only.
func force(t *testing.T, pool *pgxpool.Pool, id string, status queue.Status, batchID string, retries int) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		UPDATE exec_queue SET queue_status = $2, dispatch_batch_id = NULLIF($3, ''), retry_count = $4,
		       claimed_at = CASE WHEN $2 = 'CLAIMED' THEN now() ELSE claimed_at END
		WHERE item_type = $5 AND item_id = $1`, id, string(status), batchID, retries, itemType)
	if err != nil {
		t.Fatalf("force %s to %s: %v", id, status, err)
	}
}

func mustGet(t *testing.T, q *queue.Queue, id string) queue.Item {
	t.Helper()
	it, err := q.Get(context.Background(), itemType, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return it
}

func auditCount(t *testing.T, pool *pgxpool.Pool, id string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM dispatch_audit_log WHERE item_type = $1 AND item_id = $2`, itemType, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// enqueueAudits counts the ENQUEUED audit rows and the items they
// audit: a batch's row counts its items in its detail.
func enqueueAudits(t *testing.T, pool *pgxpool.Pool) (rows, items int) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `
		SELECT count(*), coalesce(sum(CASE WHEN detail LIKE 'items=%' THEN substr(detail, 7)::int ELSE 1 END), 0)
		FROM dispatch_audit_log WHERE item_type = $1 AND action = 'ENQUEUED'`, itemType).Scan(&rows, &items); err != nil {
		t.Fatal(err)
	}
	return rows, items
}

func contextExists(t *testing.T, pool *pgxpool.Pool, id string) bool {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(context.Background(),
		`SELECT EXISTS (SELECT 1 FROM exec_context WHERE item_type = $1 AND item_id = $2)`, itemType, id).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// bulkReady inserts n due READY items with contexts in two statements.
func bulkReady(t testing.TB, pool *pgxpool.Pool, n int, idPrefix string) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO exec_context (item_type, item_id, context)
		SELECT $1, $2 || g, jsonb_build_object('n', g) FROM generate_series(1, $3) g`, itemType, idPrefix, n); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO exec_queue (item_type, item_id, tenant_id, scheduled_exec_time)
		SELECT $1, $2 || g, 't' || (g % 7), now() - interval '1 hour' + g * interval '1 millisecond'
		FROM generate_series(1, $3) g`, itemType, idPrefix, n); err != nil {
		t.Fatal(err)
	}
}

// The single-item forms the tests use, over the batch transitions (the
// queue's API has the batch forms only).

func markDispatched(ctx context.Context, q *queue.Queue, itemType, batchID string, d queue.Dispatch) error {
	res, err := q.MarkDispatchedBatch(ctx, itemType, batchID, []queue.Dispatch{d})
	if err != nil {
		return err
	}
	return res.Err("mark dispatched", queue.StatusClaimed)
}

func releaseForRetry(ctx context.Context, q *queue.Queue, itemType, batchID string, f queue.Failure, maxRetries int) (queue.Outcome, error) {
	res, err := q.ReleaseForRetryBatch(ctx, itemType, batchID, []queue.Failure{f}, maxRetries)
	return single(res, err, "release for retry", queue.StatusClaimed)
}

func markCompleted(ctx context.Context, q *queue.Queue, itemType, itemID string) error {
	res, err := q.MarkCompletedBatch(ctx, itemType, []string{itemID})
	if err != nil {
		return err
	}
	return res.Err("mark completed", queue.StatusDispatched)
}

func markFailed(ctx context.Context, q *queue.Queue, itemType string, f queue.Failure, maxRetries int) (queue.Outcome, error) {
	res, err := q.MarkFailedBatch(ctx, itemType, []queue.Failure{f}, maxRetries)
	return single(res, err, "mark failed", queue.StatusDispatched)
}

func single(res queue.BatchResult, err error, op string, expected queue.Status) (queue.Outcome, error) {
	if err != nil {
		return queue.Outcome{}, err
	}
	if err := res.Err(op, expected); err != nil {
		return queue.Outcome{}, err
	}
	return res.Moved[0], nil
}

// auditTrail is an item's audit entries, oldest first.
func auditTrail(t *testing.T, pool *pgxpool.Pool, id string) []queue.AuditEntry {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT audit_id, coalesce(batch_id, ''), item_type, coalesce(item_id, ''), action,
		       coalesce(status_before, ''), coalesce(status_after, ''), coalesce(detail, ''), created_at
		FROM dispatch_audit_log WHERE item_type = $1 AND item_id = $2 ORDER BY audit_id`, itemType, id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.AuditEntry, error) {
		var e queue.AuditEntry
		var before, after string
		err := r.Scan(&e.ID, &e.BatchID, &e.ItemType, &e.ItemID, &e.Action, &before, &after, &e.Detail, &e.CreatedAt)
		e.StatusBefore, e.StatusAfter = queue.Status(before), queue.Status(after)
		return e, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// claimedBy counts the items batchID claimed and still holds.
func claimedBy(t *testing.T, pool *pgxpool.Pool, batchID string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM exec_queue WHERE dispatch_batch_id = $1 AND queue_status = 'CLAIMED'`, batchID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
