package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/queue"
)

// TestBatchExecutionTransitions: a batch execution settles its executed
// items from DISPATCHED under it, or from CLAIMED by its batch (executed
// before the dispatcher recorded the start), and hands an item over to its
// own workflow the same way; any other item is left as it is, and each
// move is audited with the status it left.
func TestBatchExecutionTransitions(t *testing.T) {
	t.Parallel()
	const wf, own = "exec-batch-b", "exec-own-x"
	tests := []struct {
		name       string
		status     queue.Status
		batch, exe string // the row's claiming batch and execution workflow
		handOver   bool   // HandOver, else MarkExecutedBatch
		moved      bool
		want       queue.Status
		wantExec   string
		wantBefore queue.Status
	}{
		{"executed, dispatched", queue.StatusDispatched, "B", wf, false, true, queue.StatusCompleted, wf, queue.StatusDispatched},
		{"executed before the dispatch was recorded", queue.StatusClaimed, "B", "", false, true, queue.StatusCompleted, wf, queue.StatusClaimed},
		{"executed, claimed by another batch", queue.StatusClaimed, "C", "", false, false, queue.StatusClaimed, "", ""},
		{"executed, back to ready", queue.StatusReady, "", "", false, false, queue.StatusReady, "", ""},
		{"executed, completed already", queue.StatusCompleted, "B", wf, false, false, queue.StatusCompleted, wf, ""},
		{"handed over, dispatched", queue.StatusDispatched, "B", wf, true, true, queue.StatusDispatched, own, queue.StatusDispatched},
		{"handed over, claimed", queue.StatusClaimed, "B", "", true, true, queue.StatusDispatched, own, queue.StatusClaimed},
		{"handed over already", queue.StatusDispatched, "B", own, true, false, queue.StatusDispatched, own, ""},
		{"handed over, another batch's", queue.StatusDispatched, "C", "exec-batch-c", true, false, queue.StatusDispatched, "exec-batch-c", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			q, pool := newQueue(t)
			id := fmt.Sprintf("x%d", i)
			mustEnqueue(t, q, id, time.Now())
			force(t, pool, id, tt.status, tt.batch, 0)
			if _, err := pool.Exec(ctx, `UPDATE exec_queue SET exec_workflow_id = NULLIF($2, '') WHERE item_id = $1`, id, tt.exe); err != nil {
				t.Fatal(err)
			}
			var moved bool
			if tt.handOver {
				ok, err := q.HandOver(ctx, itemType, id, "B", wf, own)
				if err != nil {
					t.Fatal(err)
				}
				moved = ok
			} else {
				res, err := q.MarkExecutedBatch(ctx, itemType, "B", wf, []string{id})
				if err != nil {
					t.Fatal(err)
				}
				moved = len(res.Moved) == 1
				if !moved && len(res.Rejected) != 1 {
					t.Fatalf("an item not moved is not reported: %+v", res)
				}
			}
			got := mustGet(t, q, id)
			if moved != tt.moved || got.Status != tt.want || got.ExecWorkflowID != tt.wantExec {
				t.Fatalf("moved %t to %s under %q; want moved %t to %s under %q", moved, got.Status, got.ExecWorkflowID, tt.moved, tt.want, tt.wantExec)
			}
			trail := auditTrail(t, pool, id)
			last := trail[len(trail)-1]
			switch {
			case tt.moved && (last.StatusBefore != tt.wantBefore || last.StatusAfter != tt.want):
				t.Fatalf("audited %s → %s, want %s → %s", last.StatusBefore, last.StatusAfter, tt.wantBefore, tt.want)
			case !tt.moved && len(trail) != 1:
				t.Fatalf("a refused move was audited: %+v", trail)
			}
			if tt.moved && !tt.handOver && contextExists(t, pool, id) {
				t.Fatal("a completed item kept its context")
			}
		})
	}
}
