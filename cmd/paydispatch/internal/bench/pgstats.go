package bench

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pgStatSettings loads pg_stat_statements into the embedded server when
// on (nil: the server's defaults).
func pgStatSettings(on bool) map[string]string {
	if !on {
		return nil
	}
	return map[string]string{"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all",
		"pg_stat_statements.track_planning": "on"}
}

// resetPGStats starts counting: the statements of the intake and the
// set-up are left out.
func resetPGStats(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	_, err := pool.Exec(ctx, `SELECT pg_stat_statements_reset(), pg_stat_reset(), pg_stat_reset_shared('wal'), pg_stat_reset_shared('bgwriter')`)
	return err
}

// reportPGStats prints the statements that took the most time since the
// reset, per payment: calls, total and mean time, rows.
func reportPGStats(ctx context.Context, w io.Writer, pool *pgxpool.Pool, during string, payments int) error {
	var total, planning float64
	var plans int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(total_exec_time), 0), coalesce(sum(total_plan_time), 0), coalesce(sum(plans), 0)
		FROM pg_stat_statements WHERE toplevel`).Scan(&total, &planning, &plans); err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	rows, err := pool.Query(ctx, `
		SELECT regexp_replace(left(query, 400), '\s+', ' ', 'g'), calls, total_exec_time, mean_exec_time, rows
		FROM pg_stat_statements WHERE toplevel ORDER BY total_exec_time DESC LIMIT 12`)
	if err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	defer rows.Close()
	n := float64(payments)
	fmt.Fprintf(w, "PostgreSQL during the %s (pg_stat_statements, top-level statements): %.2f ms of statement time per payment, and %.2f ms planning them (%.1f plans)\n",
		during, total/n, planning/n, float64(plans)/n)
	fmt.Fprintf(w, "  %8s %10s %9s %8s %6s  %s\n", "calls/p", "ms/p", "mean ms", "rows/p", "share", "statement")
	for rows.Next() {
		var q string
		var calls, nrows int64
		var t, mean float64
		if err := rows.Scan(&q, &calls, &t, &mean, &nrows); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %8.2f %10.3f %9.3f %8.2f %5.1f%%  %s\n", float64(calls)/n, t/n, mean, float64(nrows)/n, 100*t/max(total, 1e-9), statementName(q))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var records, fpi, bytes float64
	if err := pool.QueryRow(ctx, `SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal`).Scan(&records, &fpi, &bytes); err != nil {
		return fmt.Errorf("pg_stat_wal: %w", err)
	}
	fmt.Fprintf(w, "WAL per payment: %.1f records, %.2f full-page images, %.0f bytes\n", records/n, fpi/n, bytes/n)
	if err := reportBuffers(ctx, w, pool, n); err != nil {
		return err
	}
	return reportTableWrites(ctx, w, pool, n)
}

// reportBuffers prints the shared buffers the statements used per
// payment, who wrote pages out, and the database's size: a run whose data
// outgrows shared_buffers reads pages back from the kernel. The backends'
// writes (new pages of growing tables among them) reach pg_stat_bgwriter
// through the checkpointer, so a run without a checkpoint shows none.
func reportBuffers(ctx context.Context, w io.Writer, pool *pgxpool.Pool, n float64) error {
	var hit, read, dirtied, written, checkpoints, byCheckpoint, byBgwriter, byBackend, size float64
	if err := pool.QueryRow(ctx, `
		SELECT s.hit, s.read, s.dirtied, s.written,
		       (b.checkpoints_timed + b.checkpoints_req)::float8, b.buffers_checkpoint::float8, b.buffers_clean::float8,
		       b.buffers_backend::float8, pg_database_size(current_database())::float8
		FROM (SELECT coalesce(sum(shared_blks_hit), 0)::float8 AS hit, coalesce(sum(shared_blks_read), 0)::float8 AS read,
		             coalesce(sum(shared_blks_dirtied), 0)::float8 AS dirtied, coalesce(sum(shared_blks_written), 0)::float8 AS written
		      FROM pg_stat_statements WHERE toplevel) s, pg_stat_bgwriter b`).Scan(
		&hit, &read, &dirtied, &written, &checkpoints, &byCheckpoint, &byBgwriter, &byBackend, &size); err != nil {
		return fmt.Errorf("buffers: %w", err)
	}
	fmt.Fprintf(w, "shared buffers per payment: %.1f hit, %.2f read from the kernel, %.2f dirtied, %.2f written by the statements; "+
		"pages written out during the run: %.0f by %.0f checkpoints, %.0f by the background writer, %.0f by backends; database %.0f MiB\n",
		hit/n, read/n, dirtied/n, written/n, byCheckpoint, checkpoints, byBgwriter, byBackend, size/(1<<20))
	return nil
}

// reportTableWrites prints each table's row writes per payment since the
// reset: an update that is not HOT writes every index of its table again.
func reportTableWrites(ctx context.Context, w io.Writer, pool *pgxpool.Pool, n float64) error {
	rows, err := pool.Query(ctx, `
		SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
		       (SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid), autovacuum_count, autoanalyze_count
		FROM pg_stat_user_tables t
		WHERE n_tup_ins + n_tup_upd + n_tup_del > 0
		ORDER BY n_tup_ins + n_tup_upd + n_tup_del DESC LIMIT 12`)
	if err != nil {
		return fmt.Errorf("pg_stat_user_tables: %w", err)
	}
	defer rows.Close()
	// Autovacuum's runs are counted whole: its work is part of the CPU
	// outside the process, and a table it visits often during a run is
	// one to look at.
	fmt.Fprintf(w, "row writes per payment (pg_stat_user_tables), and autovacuum's runs:\n  %8s %8s %8s %8s %8s %8s %8s  %s\n",
		"inserts", "updates", "of: HOT", "deletes", "indexes", "vacuums", "analyzes", "table")
	for rows.Next() {
		var name string
		var ins, upd, hot, del, idx, vac, anl int64
		if err := rows.Scan(&name, &ins, &upd, &hot, &del, &idx, &vac, &anl); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %8.2f %8.2f %8.2f %8.2f %8d %8d %8d  %s\n", float64(ins)/n, float64(upd)/n, float64(hot)/n, float64(del)/n, idx, vac, anl, name)
	}
	return rows.Err()
}

// statementName shortens a statement to what names it: its sqlc name
// comment, or its first words.
func statementName(q string) string {
	if i := strings.Index(q, "-- name: "); i >= 0 {
		f := strings.Fields(q[i+len("-- name: "):])
		if len(f) > 0 {
			return f[0]
		}
	}
	return trim(q, 90)
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
