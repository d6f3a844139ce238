package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/queue"
)

// TestHotQueriesUseIndexes checks the plans of the hot statements on a
// queue large enough that a scan would show: none may scan exec_queue.
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
	claim, err := q.ExplainClaim(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 500, MaxRetries: 3, PreStartBuffer: time.Minute}, true)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := q.ExplainFindStaleClaims(ctx, itemType, 2*time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	dispatch, err := q.ExplainMarkDispatched(ctx, itemType, inFlight[0], []string{"e-20001", "e-20002"}, false)
	if err != nil {
		t.Fatal(err)
	}
	exhausted, err := q.ExplainDeadLetterExhausted(ctx, itemType, 3, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, plan, index string
	}{
		{"claim", claim, "exec_queue_claim_idx"},
		{"claim context join", claim, "exec_context_pkey"},
		{"stale claims", stale, "exec_queue_stale_claims_idx"},
		{"mark dispatched", dispatch, "exec_queue_"},
		{"dead-letter exhausted", exhausted, "exec_queue_retried_ready_idx"},
	}
	for _, tt := range tests {
		if !strings.Contains(tt.plan, tt.index) {
			t.Errorf("%s does not use %s:\n%s", tt.name, tt.index, tt.plan)
		}
		if strings.Contains(tt.plan, "Seq Scan on exec_queue") || strings.Contains(tt.plan, "Seq Scan on exec_context") {
			t.Errorf("%s scans a table:\n%s", tt.name, tt.plan)
		}
	}
	// The dispatch transition finds its rows by key or by batch, never by
	// walking every claimed row.
	if !strings.Contains(dispatch, "exec_queue_pkey") && !strings.Contains(dispatch, "exec_queue_batch_idx") {
		t.Errorf("mark dispatched uses neither the key nor the batch index:\n%s", dispatch)
	}
	// EXPLAIN ANALYZE ran the claim, but rolled back: nothing more is claimed.
	d, err := q.Depth(ctx, itemType)
	if err != nil || d.ByStatus[queue.StatusClaimed] != 4*500 {
		t.Fatalf("explain claimed rows: %+v %v", d.ByStatus, err)
	}
}
