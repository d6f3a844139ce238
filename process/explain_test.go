package process_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// TestHotQueriesUseIndexes checks the plans of the statements every step
// and every operator listing runs, on tables large enough that a scan
// would show: none may scan a table.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	// 20,000 processes in a mix of statuses, 4 log entries and 2 inbox
	// rows each.
	if _, err := pool.Exec(ctx, `
		INSERT INTO process_instance (process_id, process_type, business_key, status, current_step, resume_status, updated_at)
		SELECT md5(i::text)::uuid, 'T', 'k' || i,
		       (ARRAY['SUCCEEDED','SUCCEEDED','SUCCEEDED','COMPENSATED','FAILED','RUNNING','PAUSED'])[1 + i % 7],
		       'A', CASE WHEN i % 7 = 6 THEN 'RUNNING' ELSE '' END,
		       now() - make_interval(secs => i)
		FROM generate_series(1, 20000) i;
		INSERT INTO process_log (process_id, event, step)
		SELECT md5(i::text)::uuid, e, 'A'
		FROM generate_series(1, 20000) i, unnest(ARRAY['ProcessStarted','StepStarted','StepCompleted','ProcessCompleted']) e;
		INSERT INTO process_inbox (key, process_id, step)
		SELECT md5(i::text)::uuid || ':' || s, md5(i::text)::uuid, s
		FROM generate_series(1, 20000) i, unnest(ARRAY['A','B']) s;
		ANALYZE process_instance; ANALYZE process_log; ANALYZE process_inbox`); err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse("c4ca4238-a0b9-2382-0dcc-509a6f75849b") // md5('1')
	tests := []struct {
		name, sql, index string
		args             []any
	}{
		{"lock", dbsqlc.LockInstanceSQL, "process_instance_pkey", []any{id}},
		{"update", dbsqlc.UpdateInstanceSQL, "process_instance_pkey",
			[]any{"RUNNING", "B", []byte("{}"), 0, "", "", "", "", "", "", "", id, int64(1), "RUNNING"}},
		{"list by status", dbsqlc.ListByStatusSQL, "process_instance_status_idx", []any{"FAILED", time.Time{}, uuid.Nil, 100}},
		{"log", dbsqlc.ListLogSQL, "process_log_pkey", []any{id}},
		{"completed steps", dbsqlc.CompletedStepsSQL, "process_log_pkey", []any{id}},
		{"inbox", dbsqlc.GetInboxSQL, "process_inbox_pkey", []any{id.String() + ":A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := explain(t, pool, tt.sql, tt.args...)
			if !strings.Contains(plan, tt.index) || strings.Contains(plan, "Seq Scan") {
				t.Fatalf("%s does not use %s alone:\n%s", tt.name, tt.index, plan)
			}
			// A page of a status comes in index order; a process's few
			// log entries may be sorted.
			if tt.name == "list by status" && strings.Contains(plan, "Sort") {
				t.Fatalf("the listing sorts:\n%s", plan)
			}
		})
	}
	// The lock statement takes the process's turn (the advisory lock) as
	// well as the row.
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := dbsqlc.New(tx).LockInstance(ctx, id); err != nil {
			return err
		}
		var turns int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND classid = 1886547811 AND pid = pg_backend_pid() AND granted`).Scan(&turns); err != nil {
			return err
		}
		if turns != 1 {
			t.Errorf("the lock statement holds %d advisory locks", turns)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The listing pages through a status by its keyset cursor.
	page, next, err := process.List(ctx, pool, process.StatusPaused, 1000, "")
	if err != nil || len(page) != 1000 || next == "" {
		t.Fatalf("list: %d, %q, %v", len(page), next, err)
	}
	seen := 0
	for cursor := ""; ; {
		page, next, err := process.List(ctx, pool, process.StatusPaused, 500, cursor)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(page)
		if next == "" {
			break
		}
		cursor = next
	}
	if seen != 20000/7 {
		t.Fatalf("paged through %d PAUSED, want %d", seen, 20000/7)
	}
	if _, _, err := process.List(ctx, pool, process.StatusPaused, 10, "garbage"); !errors.Is(err, process.ErrInvalidCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
}

var errRollback = errors.New("rollback")

// explain returns a statement's plan, run inside a transaction that is
// rolled back.
func explain(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	var plan []string
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(context.Background(), "EXPLAIN (COSTS OFF) "+sql, args...)
		if err != nil {
			return err
		}
		if plan, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}
