package retention_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/retention"
)

// now is the tests' clock: rows' ages are counted back from it.
var now = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)

// history is a table of the tests' own: a row is deletable when done.
func history(t *testing.T, pool *pgxpool.Pool, rows map[string]struct {
	done bool
	age  time.Duration
}) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE history (id text PRIMARY KEY, done boolean NOT NULL, at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for id, r := range rows {
		if _, err := pool.Exec(ctx, `INSERT INTO history VALUES ($1, $2, $3)`, id, r.done, now.Add(-r.age)); err != nil {
			t.Fatal(err)
		}
	}
}

func deleteHistory(pool *pgxpool.Pool, calls *int) retention.DeleteFunc {
	return func(ctx context.Context, before time.Time, limit int) (int64, error) {
		*calls++
		tag, err := pool.Exec(ctx, `DELETE FROM history WHERE id IN (
			SELECT id FROM history WHERE done AND at < $1 ORDER BY at LIMIT $2)`, before, limit)
		return tag.RowsAffected(), err
	}
}

func left(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	var ids []string
	rows, err := pool.Query(context.Background(), `SELECT id FROM history ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestRoundDeletesOnlyOldDeletableRows(t *testing.T) {
	t.Parallel()
	type row = struct {
		done bool
		age  time.Duration
	}
	// Seven old done rows, so a batch of 3 takes three statements (3, 3, 1).
	rows := map[string]row{"new-done": {true, time.Hour}, "old-open": {false, 48 * time.Hour}, "edge-done": {true, 24*time.Hour - time.Second}}
	for i := range 7 {
		rows[fmt.Sprintf("old-done-%d", i)] = row{true, 25*time.Hour + time.Duration(i)*time.Minute}
	}
	tests := []struct {
		name    string
		keep    time.Duration
		deleted int64
		batches int
		left    []string
	}{
		{"24 h: only the done rows older than a day", 24 * time.Hour, 7, 3,
			[]string{"edge-done", "new-done", "old-open"}},
		{"2 h: every done row but the newest", 2 * time.Hour, 8, 3,
			[]string{"new-done", "old-open"}},
		{"0 keeps all", 0, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewEmptyPool(t)
			history(t, pool, rows)
			all := left(t, pool)
			reg := prometheus.NewRegistry()
			calls := 0
			c, err := retention.New(retention.Config{Pool: pool, BatchSize: 3, Pause: time.Millisecond,
				Registerer: reg, Now: func() time.Time { return now },
				Policies: []retention.Policy{{Table: "history", Keep: tt.keep, Delete: deleteHistory(pool, &calls)}}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.RunOnce(context.Background())
			if err != nil || !r.Ran {
				t.Fatalf("round: %+v %v", r, err)
			}
			if r.Deleted["history"] != tt.deleted || calls != tt.batches {
				t.Errorf("deleted %d in %d batches, want %d in %d", r.Deleted["history"], calls, tt.deleted, tt.batches)
			}
			want := tt.left
			if want == nil {
				want = all
			}
			if got := left(t, pool); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("left %v, want %v", got, want)
			}
			if got := metric(t, reg, "paydispatch_retention_deleted_rows_total"); tt.deleted > 0 && got != float64(tt.deleted) {
				t.Errorf("deleted_rows_total %v, want %d", got, tt.deleted)
			}
			if got := metric(t, reg, "paydispatch_retention_last_success_timestamp_seconds"); got != float64(now.Unix()) {
				t.Errorf("last success %v, want %d", got, now.Unix())
			}
		})
	}
}

// TestOneRoundAtATime runs two cleaners on one database while the first
// is inside its round: the second skips its round, then runs once the
// first is done.
func TestOneRoundAtATime(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	inside, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	running, most := 0, 0
	del := func(ctx context.Context, _ time.Time, _ int) (int64, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		select {
		case inside <- struct{}{}:
			<-release
		default:
		}
		return 0, nil
	}
	cleaner := func() *retention.Cleaner {
		c, err := retention.New(retention.Config{Pool: pool, Policies: []retention.Policy{{Table: "t", Keep: time.Hour, Delete: del}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := cleaner(), cleaner()
	ctx := context.Background()
	done := make(chan error)
	go func() { _, err := a.RunOnce(ctx); done <- err }()
	<-inside
	tests := []struct {
		name string
		ran  bool
		then func()
	}{
		{"while the first runs, the second skips", false, func() {
			close(release)
			if err := <-done; err != nil {
				t.Errorf("the first round: %v", err)
			}
		}},
		{"after it, the second runs", true, func() {}},
	}
	for _, tt := range tests {
		r, err := b.RunOnce(ctx)
		if err != nil || r.Ran != tt.ran {
			t.Errorf("%s: ran %v (%v), want %v", tt.name, r.Ran, err, tt.ran)
		}
		tt.then()
	}
	if most != 1 {
		t.Errorf("%d rounds ran at once", most)
	}
}

// TestFailedPolicy: a policy that fails is counted and reported, the
// others still run, and the last success is not moved.
func TestFailedPolicy(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	reg := prometheus.NewRegistry()
	ran := false
	c, err := retention.New(retention.Config{Pool: pool, Registerer: reg, Policies: []retention.Policy{
		{Table: "bad", Keep: time.Hour, Delete: func(context.Context, time.Time, int) (int64, error) { return 0, errors.New("boom") }},
		{Table: "good", Keep: time.Hour, Delete: func(context.Context, time.Time, int) (int64, error) { ran = true; return 0, nil }},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunOnce(context.Background()); err == nil || !ran {
		t.Fatalf("round: err %v, the good policy ran %v", err, ran)
	}
	if got := metric(t, reg, "paydispatch_retention_errors_total"); got != 1 {
		t.Errorf("errors_total %v", got)
	}
	if got := metric(t, reg, "paydispatch_retention_last_success_timestamp_seconds"); got != 0 {
		t.Errorf("last success moved to %v on a failed round", got)
	}
}

func TestNewRefusesBadPolicies(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	del := func(context.Context, time.Time, int) (int64, error) { return 0, nil }
	tests := []struct {
		name     string
		policies []retention.Policy
	}{
		{"no table", []retention.Policy{{Keep: time.Hour, Delete: del}}},
		{"two policies of a table", []retention.Policy{{Table: "t", Delete: del}, {Table: "t", Delete: del}}},
		{"negative keep", []retention.Policy{{Table: "t", Keep: -time.Hour, Delete: del}}},
		{"no delete", []retention.Policy{{Table: "t", Keep: time.Hour}}},
	}
	for _, tt := range tests {
		if _, err := retention.New(retention.Config{Pool: pool, Policies: tt.policies}); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

// metric sums a gathered metric's values over its labels.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestStopIsNoFailure: a batch cut short because the cleaner was stopped
// is not counted as a failed batch.
func TestStopIsNoFailure(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := retention.New(retention.Config{Pool: pool, Registerer: reg, Policies: []retention.Policy{
		{Table: "cut", Keep: time.Hour, Delete: func(ctx context.Context, _ time.Time, _ int) (int64, error) {
			cancel() // the cleaner is stopped during the batch
			return 0, ctx.Err()
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunOnce(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("round: %v, want it cut short", err)
	}
	if got := metric(t, reg, "paydispatch_retention_errors_total"); got != 0 {
		t.Errorf("errors_total %v after a stop, want 0", got)
	}
}
