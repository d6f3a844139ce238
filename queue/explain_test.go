package queue_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

// TestHotQueriesUseIndexes checks the plans of the hot statements, as the
// queue sends them, on a queue large enough that a scan would show: none
// may scan exec_queue or exec_context.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	bulkReady(t, pool, 20_000, "e-")
	// Rows in other states, as in a live queue: finished ones, and a few
	// batches in flight.
	if _, err := pool.Exec(ctx, `UPDATE exec_queue SET queue_status = 'COMPLETED' WHERE item_id LIKE 'e-1%'`); err != nil {
		t.Fatal(err)
	}
	var inFlight []string
	for range 4 {
		b, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 500, MaxRetries: 3})
		if err != nil {
			t.Fatal(err)
		}
		inFlight = append(inFlight, b.ID)
	}
	if _, err := pool.Exec(ctx, `ANALYZE exec_queue; ANALYZE exec_context`); err != nil {
		t.Fatal(err)
	}
	var claimed queue.Batch
	tests := []struct {
		name    string
		analyze bool
		op      func(ctx context.Context, q *queue.Queue) error
		index   string
	}{
		{"claim", true, func(ctx context.Context, q *queue.Queue) (err error) {
			claimed, err = q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 500, MaxRetries: 3, PreStartBuffer: time.Minute})
			return err
		}, "exec_queue_tenant_ready_idx"},
		{"claim context join", true, func(ctx context.Context, q *queue.Queue) error {
			_, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 500, MaxRetries: 3})
			return err
		}, "exec_context_pkey"},
		{"stale claims", false, func(ctx context.Context, q *queue.Queue) error {
			_, err := q.FindStaleClaims(ctx, itemType, 2*time.Minute, 100)
			return err
		}, "exec_queue_stale_claims_idx"},
		{"mark dispatched", false, func(ctx context.Context, q *queue.Queue) error {
			_, err := q.MarkDispatchedBatch(ctx, itemType, inFlight[0], []queue.Dispatch{{ItemID: "e-20001", ExecWorkflowID: "w"}, {ItemID: "e-20002", ExecWorkflowID: "w"}})
			return err
		}, "exec_queue_"},
		{"dead-letter exhausted", true, func(ctx context.Context, q *queue.Queue) error {
			_, err := q.DeadLetterExhausted(ctx, itemType, 3, 100)
			return err
		}, "exec_queue_retried_ready_idx"},
		{"batch execution settles", false, func(ctx context.Context, q *queue.Queue) error {
			_, err := q.MarkExecutedBatch(ctx, itemType, inFlight[1], "exec-batch-w", []string{"e-20003", "e-20004"})
			return err
		}, "exec_queue_pkey"},
		{"batch execution hands over", false, func(ctx context.Context, q *queue.Queue) error {
			_, err := q.HandOver(ctx, itemType, "e-20005", inFlight[1], "exec-batch-w", "exec-own")
			return err
		}, "exec_queue_pkey"},
		{"reconcile list", false, func(ctx context.Context, q *queue.Queue) error {
			_, err := q.ListDispatched(ctx, itemType, time.Now(), 100)
			return err
		}, "exec_queue_dispatched_idx"},
	}
	for _, tt := range tests {
		plan := pgtest.Plans(t, pool, tt.analyze, func(ctx context.Context, tx pgx.Tx) error {
			return tt.op(ctx, queue.New(tx))
		})
		if !strings.Contains(plan, tt.index) {
			t.Errorf("%s does not use %s:\n%s", tt.name, tt.index, plan)
		}
		if strings.Contains(plan, "Seq Scan on exec_queue") || strings.Contains(plan, "Seq Scan on exec_context") {
			t.Errorf("%s scans a table:\n%s", tt.name, plan)
		}
		// The dispatch transition finds its rows by key or by batch, never
		// by walking every claimed row.
		if tt.name == "mark dispatched" && !strings.Contains(plan, "exec_queue_pkey") && !strings.Contains(plan, "exec_queue_batch_idx") {
			t.Errorf("mark dispatched uses neither the key nor the batch index:\n%s", plan)
		}
	}
	if len(claimed.Items) != 500 {
		t.Fatalf("the explained claim claimed %d items", len(claimed.Items))
	}
	// The depth's oldest READY item: one descent per tenant in the fair
	// claim's index (the depth's count by status reads the table).
	plans, err := explain.Run(ctx, pool, explain.Options{Analyze: true}, func(ctx context.Context, tx pgx.Tx) error {
		_, err := queue.New(tx).Depth(ctx, itemType)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	oldest := slices.IndexFunc(plans, func(p explain.Plan) bool { return strings.Contains(p.SQL, "OldestReady") })
	if oldest < 0 {
		t.Fatalf("the depth ran no OldestReady: %v", plans)
	}
	if p := plans[oldest].Plan; !strings.Contains(p, "exec_queue_tenant_ready_idx") || strings.Contains(p, "Seq Scan on exec_queue") {
		t.Errorf("the oldest READY item is not found by the fair claim's index:\n%s", p)
	}
	// Everything explained was rolled back: nothing more is claimed.
	d, err := q.Depth(ctx, itemType)
	if err != nil || d.ByStatus[queue.StatusClaimed] != 4*500 {
		t.Fatalf("explain claimed rows: %+v %v", d.ByStatus, err)
	}
}
