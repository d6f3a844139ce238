package process_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/process"
)

// seedProcess writes a process in status, with a log whose last entry
// is ended ago (the final event for an ended one), an inbox row and, for
// a status an operator looks for, its attention row.
func seedProcess(t *testing.T, pool *pgxpool.Pool, key, status string, ended time.Duration) {
	t.Helper()
	last := map[string]string{"SUCCEEDED": "ProcessCompleted", "COMPENSATED": "ProcessCompensated",
		"FAILED": "ProcessFailed", "COMPENSATION_FAILED": "ProcessCompensationFailed", "PAUSED": "ProcessPaused"}[status]
	if last == "" {
		last = "StepStarted"
	}
	resume := ""
	if status == "PAUSED" {
		resume = "RUNNING"
	}
	stmts := []string{
		`INSERT INTO process_instance (process_id, process_type, business_key, status, current_step, resume_status)
		 VALUES (md5(@key)::uuid, 'T', @key, @status, 'S', @resume)`,
		`INSERT INTO process_log (process_id, at, event) VALUES (md5(@key)::uuid, now() - @ago::interval - interval '1 minute', 'ProcessStarted'),
		 (md5(@key)::uuid, now() - @ago::interval, @last)`,
		`INSERT INTO process_inbox (key, process_id, step) VALUES (md5(@key) || ':S', md5(@key)::uuid, 'S')`,
	}
	if slices.Contains([]string{"FAILED", "COMPENSATED", "PAUSED", "COMPENSATION_FAILED"}, status) {
		stmts = append(stmts, `INSERT INTO process_attention (process_id, status, updated_at) VALUES (md5(@key)::uuid, @status, now() - @ago::interval)`)
	}
	for _, s := range stmts {
		if _, err := pool.Exec(context.Background(), s, pgx.NamedArgs{"key": key, "status": status, "ago": ended.String(), "resume": resume, "last": last}); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
}

// TestDeleteEnded: a process that ended for good (SUCCEEDED,
// COMPENSATED) before the cutoff goes with its log, inbox and attention
// rows, oldest first, at most a batch; a young one stays, and so does
// every other status however old: open, paused, and FAILED or
// COMPENSATION_FAILED, which an operator may still retry.
func TestDeleteEnded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit int
		gone  []string
	}{
		{"a full batch takes every old ended process", 100, []string{"SUCCEEDED-old-0", "SUCCEEDED-old-1", "COMPENSATED-old-0", "COMPENSATED-old-1"}},
		{"a short limit takes the oldest first", 2, []string{"SUCCEEDED-old-1", "COMPENSATED-old-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			ctx := context.Background()
			var all []string
			for si, status := range []string{"NEW", "RUNNING", "SUCCEEDED", "FAILED", "COMPENSATING", "COMPENSATED", "PAUSED", "COMPENSATION_FAILED"} {
				for i := range 2 {
					key := fmt.Sprintf("%s-old-%d", status, i)
					// Ages interleave across statuses: the oldest are the
					// -1 ones, the SUCCEEDED before the COMPENSATED.
					seedProcess(t, pool, key, status, 40*24*time.Hour+time.Duration(i*100-si)*time.Hour)
					all = append(all, key)
				}
				seedProcess(t, pool, status+"-new", status, time.Hour)
				all = append(all, status+"-new")
			}
			n, err := process.DeleteEnded(ctx, pool, time.Now().Add(-30*24*time.Hour), tt.limit)
			if err != nil || n != int64(len(tt.gone)) {
				t.Fatalf("deleted %d (%v), want %d", n, err, len(tt.gone))
			}
			for _, key := range all {
				var inst, logs, inbox, attention int
				if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM process_instance WHERE process_id = md5($1)::uuid),
					(SELECT count(*) FROM process_log WHERE process_id = md5($1)::uuid),
					(SELECT count(*) FROM process_inbox WHERE process_id = md5($1)::uuid),
					(SELECT count(*) FROM process_attention WHERE process_id = md5($1)::uuid)`, key).Scan(&inst, &logs, &inbox, &attention); err != nil {
					t.Fatal(err)
				}
				if slices.Contains(tt.gone, key) {
					if inst+logs+inbox+attention != 0 {
						t.Errorf("%s: %d instance, %d log, %d inbox, %d attention rows left, want none", key, inst, logs, inbox, attention)
					}
				} else if inst != 1 || logs != 2 || inbox != 1 {
					t.Errorf("%s: %d instance, %d log, %d inbox rows left, want 1, 2, 1", key, inst, logs, inbox)
				}
			}
		})
	}
}

// TestLogStaysAppendOnly: outside the retention's transaction the log
// still refuses a delete.
func TestLogStaysAppendOnly(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	seedProcess(t, pool, "p", "SUCCEEDED", time.Hour)
	if _, err := pool.Exec(context.Background(), `DELETE FROM process_log`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("delete: %v, want refused", err)
	}
}

// TestDeleteEndedUsesIndexes: the batch is found by the final events'
// index, and the log and inbox rows by process, on tables where most
// processes are young.
func TestDeleteEndedUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	for _, stmt := range []string{
		`INSERT INTO process_instance (process_id, process_type, business_key, status, current_step)
		 SELECT md5('p' || g)::uuid, 'T', 'p' || g, CASE WHEN g % 10 = 0 THEN 'RUNNING' ELSE 'SUCCEEDED' END, 'S' FROM generate_series(1, 20000) g`,
		`INSERT INTO process_log (process_id, at, event)
		 SELECT md5('p' || g)::uuid, now() - g * interval '1 minute', e
		 FROM generate_series(1, 20000) g, unnest(ARRAY['ProcessStarted', 'StepStarted', 'StepCompleted', 'ProcessCompleted']) e
		 WHERE e <> 'ProcessCompleted' OR g % 10 <> 0`,
		`INSERT INTO process_inbox (key, process_id, step) SELECT 'p' || g || ':S', md5('p' || g)::uuid, 'S' FROM generate_series(1, 20000) g`,
		`ANALYZE process_instance`, `ANALYZE process_log`, `ANALYZE process_inbox`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
		_, err := process.DeleteEnded(ctx, tx, time.Now().Add(-10*24*time.Hour), 1000)
		return err
	})
	for _, index := range []string{"process_log_ended_idx", "process_log_pkey", "process_inbox_process_idx", "process_instance_pkey"} {
		if !strings.Contains(plan, index) {
			t.Errorf("the delete does not use %s:\n%s", index, plan)
		}
	}
	for _, table := range []string{"process_instance", "process_log", "process_inbox"} {
		if strings.Contains(plan, "Seq Scan on "+table) {
			t.Errorf("the delete scans %s:\n%s", table, plan)
		}
	}
}
