package devserver

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the driver Temporal's SQLite plugin uses
)

// Temporal's SQLite visibility table carries 58 indexes, one per column an
// operator might filter on — the custom search attribute slots (Bool01 …
// Keyword10), Temporal's reserved ones, history length, duration — and
// every one of them ends in the close time. So each workflow's start
// inserts 58 index entries and its close rewrites all 58: 7–8 ms of CPU
// per workflow in Temporal's plugin, against 2.5 ms with the indexes kept
// here (BenchmarkVisibilityWrites). A store that only
// paydispatch, the Temporal CLI and the UI read needs the indexes behind
// their lists: by namespace, workflow id, type, status, task queue,
// execution time, parent and root, and the scheduler's namespace
// division. The others are dropped; a query filtering on their columns
// still answers, by scanning the namespace's rows.
var keptVisibilityIndexes = map[string]bool{
	"default_idx":                      true,
	"by_execution_time":                true,
	"by_workflow_id":                   true,
	"by_workflow_type":                 true,
	"by_status":                        true,
	"by_task_queue":                    true,
	"by_parent_workflow_id":            true,
	"by_root_workflow_id":              true,
	"by_temporal_namespace_division":   true,
	"by_temporal_scheduled_by_id":      true,
	"by_temporal_scheduled_start_time": true,
}

// trimVisibilityIndexes drops the visibility indexes not kept from the
// SQLite file at path, and reports how many it dropped. Run before the
// server opens the file; a second run finds nothing to drop.
func trimVisibilityIndexes(ctx context.Context, path string) (int, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout%3D10000")
	if err != nil {
		return 0, fmt.Errorf("temporal: open %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master
		WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL`)
	if err != nil {
		return 0, fmt.Errorf("temporal: list visibility indexes: %w", err)
	}
	var drop []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, err
		}
		if !keptVisibilityIndexes[name] {
			drop = append(drop, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, name := range drop {
		if _, err := db.ExecContext(ctx, `DROP INDEX IF EXISTS "`+name+`"`); err != nil {
			return 0, fmt.Errorf("temporal: drop visibility index %s: %w", name, err)
		}
	}
	return len(drop), nil
}
