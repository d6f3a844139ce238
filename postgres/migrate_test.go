package postgres_test

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m, postgres.Schema{}) }

// toySchema is two packages' migrations and a repeatable script, the shape
// of paydispatch's own (schema tests that one).
func toySchema(fn string) postgres.Schema {
	a := fstest.MapFS{
		"00001_a.sql": {Data: []byte("-- +goose Up\nCREATE TABLE a (id int PRIMARY KEY);\n-- +goose Down\nDROP TABLE a;\n")},
		"00003_a2.sql": {Data: []byte("-- +goose Up\nALTER TABLE a ADD COLUMN n int NOT NULL DEFAULT 0;\n" +
			"-- +goose Down\nALTER TABLE a DROP COLUMN n;\n")},
	}
	b := fstest.MapFS{
		"00002_b.sql": {Data: []byte("-- +goose Up\nCREATE TABLE b (id int PRIMARY KEY);\n-- +goose Down\nDROP TABLE b;\n")},
	}
	return postgres.Schema{
		Migrations: []fs.FS{a, b},
		Scripts:    []postgres.Script{{Name: "a/functions.sql", SQL: fn}},
	}
}

const fnV1 = `CREATE OR REPLACE FUNCTION a_count() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM a $$;
CREATE OR REPLACE FUNCTION a_version() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;`

func version(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var v int
	if err := pool.QueryRow(context.Background(), "SELECT a_version()").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrateTwiceAppliesNothingTheSecondTime: migrations of several
// directories apply in version order, scripts after them; a second run
// applies nothing; a changed script is applied again, alone.
func TestMigrateTwiceAppliesNothingTheSecondTime(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()

	first, err := postgres.Migrate(ctx, pool, toySchema(fnV1), nil)
	if err != nil {
		t.Fatal(err)
	}
	var versions []int64
	for _, m := range first.Migrations {
		versions = append(versions, m.Version)
	}
	if len(versions) != 3 || versions[0] != 1 || versions[1] != 2 || versions[2] != 3 || len(first.Scripts) != 1 {
		t.Fatalf("first run applied %+v", first)
	}
	if v := version(t, pool); v != 1 {
		t.Fatalf("a_version() = %d", v)
	}
	second, err := postgres.Migrate(ctx, pool, toySchema(fnV1), nil)
	if err != nil || !second.Empty() {
		t.Fatalf("second run applied %+v, %v", second, err)
	}

	changed := strings.Replace(fnV1, "SELECT 1", "SELECT 2", 1)
	m, err := postgres.NewMigrator(pool, toySchema(changed), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if pending, err := m.Pending(ctx); err != nil || !pending {
		t.Fatalf("a changed script is not pending: %t, %v", pending, err)
	}
	third, err := m.Up(ctx)
	if err != nil || len(third.Migrations) != 0 || len(third.Scripts) != 1 {
		t.Fatalf("after a script change: %+v, %v", third, err)
	}
	if v := version(t, pool); v != 2 {
		t.Fatalf("a_version() = %d after the change", v)
	}
	migrations, scripts, err := m.Status(ctx)
	if err != nil || len(migrations) != 3 || len(scripts) != 1 || !scripts[0].Current {
		t.Fatalf("status: %+v %+v %v", migrations, scripts, err)
	}
	for _, s := range migrations {
		if !s.Applied {
			t.Errorf("migration %d %s not applied", s.Version, s.Name)
		}
	}
	if pending, err := m.Pending(ctx); err != nil || pending {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	if latest := m.Latest(); latest != 3 {
		t.Fatalf("latest = %d", latest)
	}
}

// TestBadScriptChangesNothing: a script that fails rolls back whole and is
// not recorded; the next run tries it again.
func TestBadScriptChangesNothing(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewEmptyPool(t)
	ctx := context.Background()
	if _, err := postgres.Migrate(ctx, pool, toySchema(fnV1), nil); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(fnV1, "SELECT 1", "SELECT 3", 1) + "\nCREATE FUNCTION broken( RETURNS;"
	if _, err := postgres.Migrate(ctx, pool, toySchema(bad), nil); err == nil {
		t.Fatal("a broken script was applied")
	}
	if v := version(t, pool); v != 1 {
		t.Fatalf("a_version() = %d: the broken script's first statement stayed", v)
	}
	m, err := postgres.NewMigrator(pool, toySchema(bad), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if pending, err := m.Pending(ctx); err != nil || !pending {
		t.Fatalf("the failed script is not pending: %t, %v", pending, err)
	}
}

// TestDuplicateMigrationRefused: two packages may not ship one file name.
func TestDuplicateMigrationRefused(t *testing.T) {
	t.Parallel()
	s := toySchema(fnV1)
	s.Migrations = append(s.Migrations, fstest.MapFS{"00002_b.sql": {Data: []byte("-- +goose Up\nSELECT 1;\n")}})
	if _, err := postgres.NewMigrator(pgtest.NewEmptyPool(t), s, nil); err == nil || !strings.Contains(err.Error(), "in two packages") {
		t.Fatalf("err = %v", err)
	}
	if latest, err := toySchema(fnV1).Latest(); err != nil || latest != 3 {
		t.Fatalf("latest = %d, %v", latest, err)
	}
}

// TestConcurrentMigrations: several processes starting at once apply each
// migration and script exactly once, and all of them succeed.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	ctx := context.Background()
	const n = 6
	var wg sync.WaitGroup
	applied := make([]postgres.Applied, n)
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
			applied[i], errs[i] = postgres.Migrate(ctx, pool, toySchema(fnV1), nil)
		}()
	}
	wg.Wait()
	migrations, scripts := 0, 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		migrations += len(applied[i].Migrations)
		scripts += len(applied[i].Scripts)
	}
	if migrations != 3 || scripts != 1 {
		t.Fatalf("%d migrations and %d scripts applied in all, want each of 3 and 1 once", migrations, scripts)
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
	if rows != 3 {
		t.Fatalf("%d version rows, want 3", rows)
	}
}
