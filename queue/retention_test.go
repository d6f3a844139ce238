package queue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

// TestDeleteCompleted: only COMPLETED items settled before the cutoff
// go, at most a batch of them, oldest first; every other state stays
// however old, a dead letter above all (it waits for its redrive).
func TestDeleteCompleted(t *testing.T) {
	t.Parallel()
	states := []queue.Status{queue.StatusReady, queue.StatusParked, queue.StatusClaimed, queue.StatusDispatched,
		queue.StatusCompleted, queue.StatusFailed, queue.StatusDeadLetter}
	tests := []struct {
		name  string
		limit int
		gone  []string
	}{
		{"a full batch takes every old COMPLETED item", 100, []string{"COMPLETED-old-0", "COMPLETED-old-1", "COMPLETED-old-2"}},
		{"a short limit takes the oldest first", 2, []string{"COMPLETED-old-1", "COMPLETED-old-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, pool := newQueue(t)
			ctx := context.Background()
			var all []string
			add := func(id string, st queue.Status, completedAgo time.Duration) {
				if _, err := pool.Exec(ctx, `INSERT INTO exec_queue (item_type, item_id, queue_status, scheduled_exec_time, completed_at)
					VALUES ($1, $2, $3, now(), now() - $4::interval)`, itemType, id, string(st), completedAgo.String()); err != nil {
					t.Fatal(err)
				}
				all = append(all, id)
			}
			for _, st := range states {
				// Every state with a completed_at well past the cutoff:
				// the state alone must keep it.
				for i := range 3 {
					add(fmt.Sprintf("%s-old-%d", st, i), st, 48*time.Hour+time.Duration(i)*time.Hour)
				}
				add(string(st)+"-new", st, time.Hour)
			}
			n, err := q.DeleteCompleted(ctx, time.Now().Add(-24*time.Hour), tt.limit)
			if err != nil || n != int64(len(tt.gone)) {
				t.Fatalf("deleted %d (%v), want %d", n, err, len(tt.gone))
			}
			for _, id := range all {
				var left bool
				if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM exec_queue WHERE item_type = $1 AND item_id = $2)`, itemType, id).Scan(&left); err != nil {
					t.Fatal(err)
				}
				if want := !slices.Contains(tt.gone, id); left != want {
					t.Errorf("%s left %v, want %v", id, left, want)
				}
			}
		})
	}
}

// TestDeleteAudit: the audit rows written before the cutoff go, a batch
// at a time, the newer stay.
func TestDeleteAudit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		limit      int
		old, newer int
		deleted    int64
	}{
		{"every old row in one batch", 100, 5, 3, 5},
		{"a batch takes the oldest", 2, 5, 3, 2},
		{"nothing old, nothing deleted", 100, 0, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, pool := newQueue(t)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `INSERT INTO dispatch_audit_log (item_type, item_id, action, created_at)
				SELECT $1, 'old-' || g, 'CLAIMED', now() - interval '8 days' FROM generate_series(1, $2) g`, itemType, tt.old); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO dispatch_audit_log (item_type, item_id, action)
				SELECT $1, 'new-' || g, 'CLAIMED' FROM generate_series(1, $2) g`, itemType, tt.newer); err != nil {
				t.Fatal(err)
			}
			n, err := q.DeleteAudit(ctx, time.Now().Add(-7*24*time.Hour), tt.limit)
			if err != nil || n != tt.deleted {
				t.Fatalf("deleted %d (%v), want %d", n, err, tt.deleted)
			}
			var old, newer int64
			if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE item_id LIKE 'old-%'), count(*) FILTER (WHERE item_id LIKE 'new-%') FROM dispatch_audit_log`).Scan(&old, &newer); err != nil {
				t.Fatal(err)
			}
			if old != int64(tt.old)-tt.deleted || newer != int64(tt.newer) {
				t.Errorf("left %d old and %d newer, want %d and %d", old, newer, int64(tt.old)-tt.deleted, tt.newer)
			}
		})
	}
}

// TestRetentionUsesIndexes: each retention batch reads its batch by an
// index, never the whole table, on a queue where most rows are kept.
func TestRetentionUsesIndexes(t *testing.T) {
	t.Parallel()
	_, pool := newQueue(t)
	ctx := context.Background()
	bulkReady(t, pool, 20_000, "e-")
	for _, stmt := range []string{
		`UPDATE exec_queue SET queue_status = 'COMPLETED', completed_at = now() - (substr(item_id, 3)::int * interval '1 minute')
		 WHERE item_id LIKE 'e-1%'`,
		`INSERT INTO dispatch_audit_log (item_type, item_id, action, created_at)
		 SELECT 'TASK', 'e-' || g, 'CLAIMED', now() - interval '30 days' + g * interval '1 minute' FROM generate_series(1, 40000) g`,
		`ANALYZE exec_queue`, `ANALYZE dispatch_audit_log`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		op    func(ctx context.Context, q *queue.Queue) error
		index string
		table string
	}{
		{"delete completed", func(ctx context.Context, q *queue.Queue) error {
			_, err := q.DeleteCompleted(ctx, time.Now().Add(-24*time.Hour), 1000)
			return err
		}, "exec_queue_completed_idx", "exec_queue"},
		{"delete audit", func(ctx context.Context, q *queue.Queue) error {
			_, err := q.DeleteAudit(ctx, time.Now().Add(-7*24*time.Hour), 1000)
			return err
		}, "dispatch_audit_log_pkey", "dispatch_audit_log"},
	}
	for _, tt := range tests {
		plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
			return tt.op(ctx, queue.New(tx))
		})
		if !strings.Contains(plan, tt.index) {
			t.Errorf("%s does not use %s:\n%s", tt.name, tt.index, plan)
		}
		if strings.Contains(plan, "Seq Scan on "+tt.table) {
			t.Errorf("%s scans %s:\n%s", tt.name, tt.table, plan)
		}
	}
}
