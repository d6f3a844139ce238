package app_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

// TestStartRetention starts the cleaner as serve does: its first round
// deletes the old COMPLETED item and the old audit row at once and keeps
// the rest; a table set to 0 keeps everything; stop returns promptly.
func TestStartRetention(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		ret                 config.Retention
		wantItems, wantRows int
	}{
		{"defaults delete the old history", config.Retention{QueueCompleted: 24 * time.Hour, DispatchAudit: 7 * 24 * time.Hour}, 2, 1},
		{"0 keeps all", config.Retention{}, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			ctx := context.Background()
			for _, stmt := range []string{
				`INSERT INTO exec_queue (item_type, item_id, queue_status, scheduled_exec_time, completed_at) VALUES
					('X', 'old-done', 'COMPLETED', now(), now() - interval '2 days'),
					('X', 'new-done', 'COMPLETED', now(), now() - interval '1 hour'),
					('X', 'old-dead', 'DEAD_LETTER', now(), now() - interval '2 days')`,
				`INSERT INTO dispatch_audit_log (item_type, item_id, action, created_at) VALUES
					('X', 'a', 'CLAIMED', now() - interval '8 days'), ('X', 'b', 'CLAIMED', now())`,
			} {
				if _, err := pool.Exec(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
			reg := prometheus.NewRegistry()
			stop, err := app.StartRetention(&postgres.DB{Pool: pool}, tt.ret, reg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			var items, rows int
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM exec_queue), (SELECT count(*) FROM dispatch_audit_log)`).Scan(&items, &rows); err != nil {
					t.Fatal(err)
				}
				if items == tt.wantItems && rows == tt.wantRows && lastSuccess(t, reg) > 0 {
					break
				}
			}
			begin := time.Now()
			stop()
			if items != tt.wantItems || rows != tt.wantRows {
				t.Errorf("left %d items and %d audit rows, want %d and %d", items, rows, tt.wantItems, tt.wantRows)
			}
			if lastSuccess(t, reg) == 0 {
				t.Error("no successful round in the metrics")
			}
			if d := time.Since(begin); d > 5*time.Second {
				t.Errorf("stop took %s", d)
			}
		})
	}
}

func lastSuccess(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "paydispatch_retention_last_success_timestamp_seconds" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// TestMoneyTables checks the one list of money records against the
// migrated schema: each is a table, none has a retention policy, and
// the policies' tables are tables too, so a steady-state benchmark that
// sums every other table measures what retention bounds.
func TestMoneyTables(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	var tables []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(c.relname::text), '{}') FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND n.nspname = ANY(current_schemas(false))`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	exists := map[string]bool{}
	for _, name := range tables {
		exists[name] = true
	}
	money := map[string]bool{}
	for _, name := range app.MoneyTables {
		if !exists[name] {
			t.Errorf("money table %s is not a table of the schema", name)
		}
		money[name] = true
	}
	for _, p := range app.RetentionPolicies(&postgres.DB{Pool: pool}, config.Retention{}) {
		if !exists[p.Table] {
			t.Errorf("policy table %s is not a table of the schema", p.Table)
		}
		if money[p.Table] {
			t.Errorf("policy table %s is listed as a money record", p.Table)
		}
	}
}

// TestStartRetentionInterval: the cleaner's rounds follow the setting,
// so an item that completes after the first round still goes within a
// few of the setting's intervals, not a minute later.
func TestStartRetentionInterval(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	stop, err := app.StartRetention(&postgres.DB{Pool: pool}, config.Retention{QueueCompleted: time.Hour, Interval: 100 * time.Millisecond},
		nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	time.Sleep(300 * time.Millisecond) // the first round is over
	if _, err := pool.Exec(ctx, `INSERT INTO exec_queue (item_type, item_id, queue_status, scheduled_exec_time, completed_at)
		VALUES ('X', 'old-done', 'COMPLETED', now(), now() - interval '2 hours')`); err != nil {
		t.Fatal(err)
	}
	var left int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM exec_queue`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
	}
	t.Fatalf("the old COMPLETED item is still there 5 s after it was written, with rounds every 100 ms")
}
