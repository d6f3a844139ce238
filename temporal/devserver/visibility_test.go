package devserver

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	tsql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/resolver"
	"go.temporal.io/server/schema/sqlite"
)

func sqliteConfig(path string) *config.SQL {
	return &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      path,
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "1", "busy_timeout": "10000"},
	}
}

func visibilityIndexes(t testing.TB, path string) map[string]bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		got[name] = true
	}
	return got
}

func TestTrimVisibilityIndexes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "temporal.db")
	if err := sqlite.SetupSchema(sqliteConfig(path)); err != nil {
		t.Fatal(err)
	}
	before := visibilityIndexes(t, path)
	for name := range keptVisibilityIndexes {
		if !before[name] {
			t.Errorf("Temporal's schema has no index %s: the kept list is out of date", name)
		}
	}
	dropped, err := trimVisibilityIndexes(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	after := visibilityIndexes(t, path)
	if dropped != len(before)-len(keptVisibilityIndexes) || len(after) != len(keptVisibilityIndexes) {
		t.Errorf("dropped %d of %d, %d left; want %d left", dropped, len(before), len(after), len(keptVisibilityIndexes))
	}
	for name := range keptVisibilityIndexes {
		if !after[name] {
			t.Errorf("index %s dropped", name)
		}
	}
	if again, err := trimVisibilityIndexes(context.Background(), path); err != nil || again != 0 {
		t.Errorf("second trim: dropped %d, %v; want 0", again, err)
	}
}

// TestVisibilityPlans: with the shape statistics, the queries the
// dispatcher and the lists send use an index made for them, however few
// rows the table has — not a scan of the namespace.
func TestVisibilityPlans(t *testing.T) {
	t.Parallel()
	for _, trim := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "temporal.db")
		if err := sqlite.SetupSchema(sqliteConfig(path)); err != nil {
			t.Fatal(err)
		}
		if trim {
			if _, err := trimVisibilityIndexes(context.Background(), path); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 { // a restart shapes again
			if err := shapeVisibilityStats(context.Background(), path); err != nil {
				t.Fatal(err)
			}
		}
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		const order = ` ORDER BY COALESCE(close_time, '9999-12-31 23:59:59+00:00') DESC, start_time DESC, run_id LIMIT 1000`
		for _, tc := range []struct{ where, index string }{
			{"workflow_id IN ('exec-payment-a', 'exec-payment-b', 'exec-payment-c')", "by_workflow_id"},
			{"workflow_id = 'exec-payment-a'", "by_workflow_id"},
			{"1 = 1", "default_idx"},
		} {
			var plan strings.Builder
			rows, err := db.Query(`EXPLAIN QUERY PLAN SELECT * FROM executions_visibility WHERE namespace_id = ? AND `+tc.where+order, "ns")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan.WriteString(detail + "; ")
			}
			rows.Close()
			if !strings.Contains(plan.String(), "USING INDEX "+tc.index+" ") {
				t.Errorf("trimmed %v, %s: plan %q, want index %s", trim, tc.where, plan.String(), tc.index)
			}
		}
		db.Close()
	}
}

// BenchmarkVisibilityWrites measures what Temporal's SQLite visibility
// store does per workflow — the start's insert and the close's upsert,
// through Temporal's own plugin — with every index of its schema and with
// the kept ones. Compare the two in one run: ns/op is per workflow.
func BenchmarkVisibilityWrites(b *testing.B) {
	for _, tc := range []struct {
		name string
		trim bool
	}{{"all-indexes", false}, {"kept-indexes", true}} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "temporal.db")
			cfg := sqliteConfig(path)
			if err := sqlite.SetupSchema(cfg); err != nil {
				b.Fatal(err)
			}
			if tc.trim {
				if _, err := trimVisibilityIndexes(context.Background(), path); err != nil {
					b.Fatal(err)
				}
			}
			db, err := tsql.NewSQLDB(sqlplugin.DbKindVisibility, sqliteConfig(path), resolver.NewNoopResolver(), tlog.NewNoopLogger(), metrics.NoopMetricsHandler)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			ns := "5f1c3f5e-6a0e-4bb1-9d43-3e0c8b3f3a11"
			// A table that already holds a day's workflows: index depth counts.
			write := func(i int) {
				start := time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
				row := &sqlplugin.VisibilityRow{
					NamespaceID: ns, RunID: fmt.Sprintf("0195a1c2-%08d-7000-8000-000000000000", i),
					WorkflowTypeName: "PaymentExecution", WorkflowID: fmt.Sprintf("exec-payment-pay-%08d", i),
					StartTime: start, ExecutionTime: start, Status: 1, Memo: []byte(`{"fields":{}}`), Encoding: "Proto3",
					TaskQueue: "payment-exec-task-queue", RootWorkflowID: fmt.Sprintf("exec-payment-pay-%08d", i),
					RootRunID: fmt.Sprintf("0195a1c2-%08d-7000-8000-000000000000", i), Version: 1,
				}
				if _, err := db.InsertIntoVisibility(ctx, row); err != nil {
					b.Fatal(err)
				}
				closed := start.Add(50 * time.Millisecond)
				length, size, dur, transitions := int64(11), int64(2048), int64(50*time.Millisecond), int64(4)
				row.Status, row.CloseTime, row.Version = 2, &closed, 2
				row.HistoryLength, row.HistorySizeBytes, row.ExecutionDuration, row.StateTransitionCount = &length, &size, &dur, &transitions
				if _, err := db.ReplaceIntoVisibility(ctx, row); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 5_000 {
				write(-1 - i)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				write(i)
			}
		})
	}
}
