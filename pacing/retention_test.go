package pacing_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
)

// seedPacing writes, for two configs (one-second and one-day windows),
// a window and a slot per name, each window starting ago.
func seedPacing(t *testing.T, pool *pgxpool.Pool, windows map[string]time.Duration) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO pacing_config (config_name, max_per_window, window_ms) VALUES ('sec', 10, 1000), ('day', 10, 86400000)`); err != nil {
		t.Fatal(err)
	}
	for name, ago := range windows {
		config := strings.SplitN(name, "-", 2)[0]
		if _, err := pool.Exec(ctx, `WITH w AS (
				INSERT INTO pacing_window (config_name, window_start, slot_count, status) VALUES ($1, now() - $3::interval, 1, 'OPEN')
				RETURNING window_start)
			INSERT INTO pacing_slot (event_id, config_name, window_start, slot_index, scheduled_time, requested_time)
			SELECT $2, $1, w.window_start, 0, w.window_start, w.window_start FROM w`, config, name, ago.String()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeletePast: the slots and windows that began before the cutoff go,
// a config's oldest first, at most a batch; a window still under way is
// never touched, even by a cutoff ahead of now (a one-day window that
// began 12 hours ago).
func TestDeletePast(t *testing.T) {
	t.Parallel()
	windows := map[string]time.Duration{
		"sec-old-1": 72 * time.Hour, "sec-old-2": 48 * time.Hour, "sec-young": time.Hour, "sec-now": 100 * time.Millisecond,
		"day-old": 49 * time.Hour, "day-now": 12 * time.Hour,
	}
	tests := []struct {
		name   string
		before time.Duration // from now
		limit  int
		gone   []string
	}{
		{"a full batch takes every old window", -24 * time.Hour, 100, []string{"sec-old-1", "sec-old-2", "day-old"}},
		{"a cutoff ahead takes only the windows over", time.Hour, 100, []string{"sec-old-1", "sec-old-2", "sec-young", "day-old"}},
		{"a short limit takes a config's oldest first", -24 * time.Hour, 1, nil},
	}
	for _, tt := range tests {
		for _, table := range []string{"pacing_slot", "pacing_window"} {
			t.Run(tt.name+"/"+table, func(t *testing.T) {
				t.Parallel()
				pool := pgtest.NewPool(t)
				ctx := context.Background()
				seedPacing(t, pool, windows)
				del := pacing.DeleteSlots
				if table == "pacing_window" {
					del = pacing.DeleteWindows
				}
				n, err := del(ctx, pool, time.Now().Add(tt.before), tt.limit)
				if err != nil {
					t.Fatal(err)
				}
				left := map[string]bool{}
				for name := range windows {
					left[name] = exists(t, pool, table, name)
				}
				if tt.gone == nil {
					// One row went: the oldest of its config.
					if n != 1 || (left["sec-old-1"] && left["day-old"]) || !left["sec-old-2"] {
						t.Errorf("deleted %d, left %v: want 1, the oldest of a config", n, left)
					}
					return
				}
				if n != int64(len(tt.gone)) {
					t.Errorf("deleted %d, want %d", n, len(tt.gone))
				}
				for name, ok := range left {
					if want := !slices.Contains(tt.gone, name); ok != want {
						t.Errorf("%s left %v, want %v", name, ok, want)
					}
				}
			})
		}
	}
}

// exists says whether name's row is still in table: its slot, or the
// window its slot was in.
func exists(t *testing.T, pool *pgxpool.Pool, table, name string) bool {
	t.Helper()
	q := `SELECT EXISTS (SELECT 1 FROM pacing_slot WHERE event_id = $1)`
	if table == "pacing_window" {
		// The slots are untouched by DeleteWindows: each finds its window.
		q = `SELECT EXISTS (SELECT 1 FROM pacing_slot s JOIN pacing_window w USING (config_name, window_start) WHERE s.event_id = $1)`
	}
	var ok bool
	if err := pool.QueryRow(context.Background(), q, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestDeletePastUsesIndexes: the old rows are read by an index (the
// slots by their time, the windows by config and time), on tables where
// most rows are young.
func TestDeletePastUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	for _, stmt := range []string{
		`INSERT INTO pacing_config (config_name, max_per_window, window_ms) SELECT 'c' || g, 10, 1000 FROM generate_series(1, 5) g`,
		`INSERT INTO pacing_window (config_name, window_start, slot_count, status)
		 SELECT 'c' || (g % 5 + 1), date_trunc('second', now()) - g * interval '1 second', 1, 'CLOSED' FROM generate_series(1, 50000) g`,
		`INSERT INTO pacing_slot (event_id, config_name, window_start, slot_index, scheduled_time, requested_time)
		 SELECT 'e' || g, 'c' || (g % 5 + 1), date_trunc('second', now()) - g * interval '1 second', 0, now(), now() FROM generate_series(1, 50000) g`,
		`ANALYZE pacing_window`, `ANALYZE pacing_slot`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		table, index string
		del          func(context.Context, pacing.DBTX, time.Time, int) (int64, error)
	}{
		{"pacing_slot", "pacing_slot_window_start_idx", pacing.DeleteSlots},
		{"pacing_window", "pacing_window_pkey", pacing.DeleteWindows},
	}
	for _, tt := range tests {
		plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tt.del(ctx, tx, time.Now().Add(-12*time.Hour), 1000)
			return err
		})
		if !strings.Contains(plan, tt.index) {
			t.Errorf("the delete of %s does not use %s:\n%s", tt.table, tt.index, plan)
		}
		if strings.Contains(plan, "Seq Scan on "+tt.table) {
			t.Errorf("the delete scans %s:\n%s", tt.table, plan)
		}
	}
}
