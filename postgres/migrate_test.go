package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestMigrateTwiceAppliesNothingTheSecondTime(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()

	first, err := postgres.Migrate(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 {
		t.Fatal("first run applied nothing on an empty database")
	}
	second, err := postgres.Migrate(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 0 {
		t.Fatalf("second run applied %v", second)
	}
	m, err := postgres.NewMigrator(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	status, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range status {
		if !s.Applied {
			t.Errorf("migration %d %s not applied", s.Version, s.Name)
		}
	}
	if pending, err := m.Pending(ctx); err != nil || pending {
		t.Fatalf("pending = %v, %v", pending, err)
	}
}

// TestConcurrentMigrations: several processes starting at once apply each
// migration exactly once, and all of them succeed.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	ctx := context.Background()
	const n = 6
	var wg sync.WaitGroup
	applied := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each migrator on its own pool, as separate processes would be.
			pool, err := postgres.NewPool(ctx, url, 4)
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			res, err := postgres.Migrate(ctx, pool, nil)
			applied[i], errs[i] = len(res), err
		}()
	}
	wg.Wait()
	total := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		total += applied[i]
	}
	pool := pgtest.NewEmptyPool(t) // fresh, for counting the embedded set
	want, err := postgres.Migrate(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(want) {
		t.Fatalf("%d migrations applied in all, want each of %d once", total, len(want))
	}
	check, err := postgres.NewPool(ctx, url, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	var rows int
	if err := check.QueryRow(ctx, "SELECT count(*) FROM "+postgres.MigrationsTable+" WHERE version_id > 0").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(want) {
		t.Fatalf("%d version rows, want %d", rows, len(want))
	}
}

// TestEveryDownUndoesItsUp: from the newest version down to each older one
// and up again, so that every Down section runs against the schema it
// meant to undo and leaves one the later Ups apply on.
func TestEveryDownUndoesItsUp(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	if _, err := postgres.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), postgres.Migrations(),
		goose.WithTableName(postgres.MigrationsTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	newest, err := p.GetDBVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for v := newest - 1; v >= 0; v-- {
		if _, err := p.DownTo(ctx, v); err != nil {
			t.Fatalf("down to %d: %v", v, err)
		}
		if _, err := p.Up(ctx); err != nil {
			t.Fatalf("up again from %d: %v", v, err)
		}
	}
	// The functions the last Ups define work.
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pacing_assign('c', 4000, 100, 3, now(), ARRAY['a','b'], ARRAY[0.5,0.5])`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("pacing_assign after the round trips: %d rows, %v", n, err)
	}
}
