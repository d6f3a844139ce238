package process_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
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
		INSERT INTO process_attention (process_id, status, updated_at)
		SELECT process_id, status, updated_at FROM process_instance WHERE status NOT IN ('NEW', 'RUNNING', 'SUCCEEDED');
		ANALYZE process_instance; ANALYZE process_log; ANALYZE process_inbox; ANALYZE process_attention`); err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse("c4ca4238-a0b9-2382-0dcc-509a6f75849b") // md5('1')
	type data struct {
		OK bool `json:"ok"`
	}
	noop := func(_ context.Context, _ pgx.Tx, _ process.StepInput, d *data) error {
		d.OK = true
		return nil
	}
	noopGroup := func(_ context.Context, _ pgx.Tx, _ []process.StepInput, ds []*data) ([]error, error) {
		for _, d := range ds {
			d.OK = true
		}
		return nil, nil
	}
	reg, err := process.NewRegistry(process.Definition[data]{
		Type: "T", Initial: "A", Next: func(step string, _ data) (string, error) {
			if step == "A" {
				return "B", nil
			}
			return "", nil
		},
		Steps: map[string]process.Step[data]{"A": {Handler: noop, Group: noopGroup}, "B": {Handler: noop, Group: noopGroup}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A RUNNING process of the 20,000 at its step A (i = 5), and a PAUSED
	// one (i = 6).
	running := uuid.MustParse("e4da3b7f-bbce-2345-d777-2b0674a318d5") // md5('5')
	paused := uuid.MustParse("1679091c-5a88-0faf-6fb5-e6087eb1b2dc")  // md5('6')
	plans := func(f func(ctx context.Context, tx pgx.Tx) error) string {
		return pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error { _ = f(ctx, tx); return nil })
	}
	// A step's own statements run on generic plans (and a definition's
	// with GenericPlans): these are the plans kept for the connection.
	step := pgtest.PlansWith(t, pool, explain.Options{Generic: true}, func(ctx context.Context, tx pgx.Tx) error {
		_, _ = process.NewActivities(process.ActivitiesConfig{DB: tx, Registry: reg}).Execute(ctx, process.StepRequest{ProcessID: running, Step: "A"})
		return nil
	})
	// A group's start, lock and steps (AdvanceGroup), planned for their
	// values.
	group := pgtest.PlansWith(t, pool, explain.Options{}, func(ctx context.Context, tx pgx.Tx) error {
		ins := []process.StartInput{{Type: "T", BusinessKey: "g1"}, {Type: "T", BusinessKey: "g2"}, {Type: "T", BusinessKey: "g3"}}
		for _, o := range process.NewActivities(process.ActivitiesConfig{DB: tx, Registry: reg}).AdvanceGroup(ctx, ins) {
			if o.Err != nil || o.State.Status != process.StatusSucceeded {
				t.Errorf("group: %+v", o)
			}
		}
		return nil
	})
	operator := plans(func(ctx context.Context, tx pgx.Tx) error {
		_, err := process.NewOperator(process.OperatorConfig{DB: tx, Registry: reg}).Resume(ctx, paused, "explain")
		return err
	})
	list := plans(func(ctx context.Context, tx pgx.Tx) error {
		_, _, err := process.List(ctx, tx, process.StatusFailed, 100, "")
		return err
	})
	logs := plans(func(ctx context.Context, tx pgx.Tx) error { _, err := process.Log(ctx, tx, id); return err })
	tests := []struct{ name, plan, index string }{
		{"a step: lock and update the instance", step, "process_instance_pkey"},
		{"a step: its inbox row", step, "process_inbox_pkey"},
		{"a group's steps: lock and update the instances", group, "process_instance_pkey"},
		{"a group's steps: their inbox rows", group, "process_inbox_pkey"},
		{"an operator action: the completed steps", operator, "process_log_pkey"},
		{"list by status", list, "process_attention_status_idx"},
		{"log", logs, "process_log_pkey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.plan, tt.index) || strings.Contains(tt.plan, "Seq Scan") {
				t.Fatalf("%s does not use %s alone:\n%s", tt.name, tt.index, tt.plan)
			}
			// A page of a status comes in index order.
			if tt.name == "list by status" && strings.Contains(tt.plan, "Sort") {
				t.Fatalf("the listing sorts:\n%s", tt.plan)
			}
		})
	}
	// The lock statement takes the process's turn (the advisory lock) as
	// well as the row.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
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
	// A step's updates of the instance are HOT: they change no indexed
	// column, so they write no index entry.
	errRollback := errors.New("rollback")
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := process.NewActivities(process.ActivitiesConfig{DB: tx, Registry: reg}).Execute(ctx, process.StepRequest{ProcessID: running, Step: "A"}); err != nil {
			return err
		}
		var updated, hot int
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_updated('process_instance'::regclass),
			pg_stat_get_xact_tuples_hot_updated('process_instance'::regclass)`).Scan(&updated, &hot); err != nil {
			return err
		}
		if updated == 0 || hot != updated {
			t.Errorf("a step updated the instance %d times, %d of them HOT; want all", updated, hot)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	// The common statuses are not listed.
	if _, _, err := process.List(ctx, pool, process.StatusRunning, 10, ""); !errors.Is(err, process.ErrNotListed) {
		t.Fatalf("list RUNNING: %v, want ErrNotListed", err)
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
