package devserver

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // the driver Temporal's SQLite plugin uses
)

// Temporal's SQLite visibility table carries 58 indexes, one per column an
// operator might filter on — the custom search attribute slots (Bool01 …
// Keyword10), Temporal's reserved ones, history length, duration — and
// every one of them ends in the close time. So each workflow's start
// inserts 58 index entries and its close rewrites all 58: 7–8 ms of CPU
// per workflow in Temporal's plugin, against 2.5 ms with the indexes kept
// here (BenchmarkVisibilityWrites). A store that only paydispatch, the
// Temporal CLI and the UI read needs the indexes behind their lists: by
// namespace, workflow id, type, status, task queue, execution time, parent
// and root, and the scheduler's namespace division. The others are
// dropped; a query filtering on their columns still answers, by scanning
// the namespace's rows.
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

// openStore opens the server's SQLite file, before the server does.
func openStore(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout%3D10000")
	if err != nil {
		return nil, fmt.Errorf("temporal: open %s: %w", path, err)
	}
	return db, nil
}

// trimVisibilityIndexes drops the visibility indexes not kept from the
// SQLite file at path, and reports how many it dropped. Run before the
// server opens the file; a second run finds nothing to drop.
func trimVisibilityIndexes(ctx context.Context, path string) (int, error) {
	db, err := openStore(path)
	if err != nil {
		return 0, err
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

// shapeVisibilityStats tells SQLite's planner what the visibility table
// looks like at scale, in sqlite_stat1 (per index: rows, then rows per
// distinct prefix of its columns): one namespace holds every row; a
// workflow id, run id or execution time picks about one row; a workflow
// type, status or task queue many (lowCardinality). Without statistics the
// planner guesses, and for paydispatch's reconcile query (namespace,
// WorkflowId IN (…), ordered by close time) it guessed default_idx: a scan
// of the whole namespace per query, 43 ms at 13,500 rows and growing with
// every workflow — during a 20,000-payment drain the reconcile queries
// grew to an eighth of the process's CPU and the engine fell behind. With
// these figures it probes by_workflow_id per id, and a plain list still
// walks default_idx in order. Run before the server opens the file: SQLite
// reads the statistics when a connection loads the schema. sqlite_stat1 is
// created by analysing a one-row table (ANALYZE of the visibility table
// itself would read all of it).
func shapeVisibilityStats(ctx context.Context, path string) error {
	db, err := openStore(path)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stats, err := visibilityShape(ctx, conn)
	if err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `ANALYZE namespace_metadata`); err != nil {
		return fmt.Errorf("temporal: create sqlite_stat1: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sqlite_stat1 WHERE tbl = 'executions_visibility'`); err != nil {
		return fmt.Errorf("temporal: visibility statistics: %w", err)
	}
	for idx, stat := range stats {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('executions_visibility', ?, ?)`, idx, stat); err != nil {
			return fmt.Errorf("temporal: visibility statistics for %s: %w", idx, err)
		}
	}
	return tx.Commit()
}

// lowCardinality are the visibility columns with few distinct values.
var lowCardinality = map[string]string{"workflow_type_name": "100000", "status": "300000", "task_queue": "100000"}

// visibilityShape is the sqlite_stat1 line of each index of the
// visibility table that leads with the namespace.
func visibilityShape(ctx context.Context, conn *sql.Conn) (map[string]string, error) {
	const rows = "1000000"
	names, err := conn.QueryContext(ctx, `SELECT name FROM pragma_index_list('executions_visibility')`)
	if err != nil {
		return nil, fmt.Errorf("temporal: list visibility indexes: %w", err)
	}
	var indexes []string
	for names.Next() {
		var n string
		if err := names.Scan(&n); err != nil {
			names.Close()
			return nil, err
		}
		indexes = append(indexes, n)
	}
	names.Close()
	out := map[string]string{}
	for _, idx := range indexes {
		cols, err := conn.QueryContext(ctx, `SELECT coalesce(name, '') FROM pragma_index_info(?) ORDER BY seqno`, idx)
		if err != nil {
			return nil, fmt.Errorf("temporal: columns of %s: %w", idx, err)
		}
		stat := []string{rows}
		for cols.Next() {
			var col string
			if err := cols.Scan(&col); err != nil {
				cols.Close()
				return nil, err
			}
			switch {
			case len(stat) == 1 && col != "namespace_id":
				stat = nil // not led by the namespace: left to the defaults
			case stat == nil:
			case len(stat) == 1:
				stat = append(stat, rows) // one namespace holds them all
			case len(stat) == 2 && lowCardinality[col] != "":
				stat = append(stat, lowCardinality[col])
			default:
				stat = append(stat, "1")
			}
		}
		cols.Close()
		if len(stat) > 1 {
			out[idx] = strings.Join(stat, " ")
		}
	}
	return out, nil
}
