package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/history"
	"github.com/paydispatch/paydispatch/postgres"
)

// HistoryOptions configure `bench history`.
type HistoryOptions struct {
	Env

	Payments, Tenants, Days int
	// KeepAll loads every row, also what the default retention deletes.
	KeepAll bool
}

// HistorySettings binds its flags.
func HistorySettings(o *HistoryOptions) []*config.Setting {
	return []*config.Setting{
		config.Int("payments", 1_000_000, 1, 100_000_000, "payments' worth of history to load", &o.Payments),
		config.Int("tenants", 10, 1, 1000, "tenants (one debtor account each, ACC-t0 …) the payments are spread over", &o.Tenants),
		config.Int("days", 30, 1, 3650, "past days the payments are spread over, due at 16:00 each day and paced at 100/s", &o.Days),
		config.Bool("keep-all", "load every row, also what the retention cleaner at its defaults (PAYDISPATCH_RETENTION_*) would have deleted by now: as a database with every retention at 0 holds it", &o.KeepAll),
	}
}

// RunHistory loads the history into DATABASE_URL's database (migrated
// first), or, without it, into a fresh private PostgreSQL removed after
// (the load's time and size only), and prints what it wrote.
func RunHistory(ctx context.Context, o HistoryOptions) error {
	fmt.Fprintf(o.Out, "paydispatch bench history: %d CPUs, %s; %s payments' history over %d days and %d tenants\n",
		runtime.NumCPU(), memTotal(), thousands(o.Payments), o.Days, o.Tenants)
	var db *postgres.DB
	where := "DATABASE_URL"
	if o.DatabaseURL != "" {
		pool, err := postgres.NewPool(ctx, o.DatabaseURL, 4)
		if err != nil {
			return err
		}
		db = &postgres.DB{Pool: pool}
	} else {
		dir, err := os.MkdirTemp("", "paydispatch-bench-history-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		_ = os.Chmod(dir, 0o755) // the server user must enter it
		if db, err = postgres.Open(ctx, postgres.Options{DataDir: dir, BinDir: o.PGBinDir, MaxConns: 4, Logger: o.Logger}); err != nil {
			return err
		}
		where = "a fresh private PostgreSQL (durable settings), removed after"
	}
	defer db.Close()
	if _, err := app.Migrate(ctx, db.Pool, nil); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "into %s\n", where)
	_, err := loadHistory(ctx, o.Out, db.Pool, history.Options{Payments: o.Payments, Tenants: o.Tenants, Days: o.Days,
		Retention: historyRetention(o.KeepAll)})
	if err != nil {
		return err
	}
	return reportSizes(ctx, o.Out, db.Pool)
}

// historyRetention is what a history leaves out: what the retention
// cleaner at its defaults deletes, or nothing with keepAll.
func historyRetention(keepAll bool) map[string]time.Duration {
	if keepAll {
		return nil
	}
	return history.Retained(config.DefaultRetention())
}

// loadHistory loads and prints the rows a table and the time.
func loadHistory(ctx context.Context, w io.Writer, pool *pgxpool.Pool, o history.Options) (history.Loaded, error) {
	if o.Retention == nil {
		fmt.Fprintf(w, "every row of the history (no retention)\n")
	} else {
		fmt.Fprintf(w, "the history as the retention cleaner at its defaults leaves it (the money records whole)\n")
	}
	o.Progress = func(table string, rows int64, took time.Duration) {
		fmt.Fprintf(w, "  %-26s %12s rows in %6.1f s\n", table, thousands(int(rows)), took.Seconds())
	}
	loaded, err := history.Load(ctx, pool, o)
	if err != nil {
		return loaded, err
	}
	total := loaded.Total()
	fmt.Fprintf(w, "history: %s payments, %s rows (%.1f a payment) in %.1f s (VACUUM (FREEZE, ANALYZE) %.1f s): %.0f payments/s, %.0f rows/s\n",
		thousands(loaded.Payments), thousands(int(total)), float64(total)/float64(loaded.Payments), loaded.Took.Seconds(),
		loaded.Vacuum.Seconds(), float64(loaded.Payments)/loaded.Took.Seconds(), float64(total)/loaded.Took.Seconds())
	return loaded, nil
}

// reportSizes prints the database's size and its largest tables'.
func reportSizes(ctx context.Context, w io.Writer, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid), pg_indexes_size(c.oid)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema() ORDER BY 2 DESC LIMIT 12`)
	if err != nil {
		return fmt.Errorf("bench: table sizes: %w", err)
	}
	type size struct {
		name         string
		total, index int64
	}
	var sizes []size
	for rows.Next() {
		var s size
		if err := rows.Scan(&s.name, &s.total, &s.index); err != nil {
			rows.Close()
			return err
		}
		sizes = append(sizes, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var db int64
	if err := pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&db); err != nil {
		return err
	}
	fmt.Fprintf(w, "database size %.0f MiB; largest tables (with their indexes):\n", float64(db)/(1<<20))
	slices.SortFunc(sizes, func(a, b size) int { return int(b.total - a.total) })
	var b strings.Builder
	for _, s := range sizes {
		fmt.Fprintf(&b, "  %-26s %8.0f MiB (indexes %.0f MiB)\n", s.name, float64(s.total)/(1<<20), float64(s.index)/(1<<20))
	}
	_, err = io.WriteString(w, b.String())
	return err
}
