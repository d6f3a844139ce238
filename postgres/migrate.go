package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// MigrationsTable records which migrations a database has applied.
const MigrationsTable = "paydispatch_schema_migrations"

// migrationLockID is the advisory lock that serializes migrators, so two
// processes starting at once do not apply a migration twice.
const migrationLockID int64 = 0x7061_7964_6973_7061 // "paydispa"

// Migrations returns the embedded migration files.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return sub
}

// MigrationStatus is one migration and whether this database has it.
type MigrationStatus struct {
	Version int64
	Name    string
	Applied bool
}

// Migrator applies and inspects the embedded migrations on one database.
type Migrator struct {
	provider *goose.Provider
}

// NewMigrator prepares a migrator; logger may be nil.
func NewMigrator(pool *pgxpool.Pool, logger *slog.Logger) (*Migrator, error) {
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(migrationLockID),
		lock.WithLockTimeout(1, 600), // retry every second for up to 10 minutes
	)
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	opts := []goose.ProviderOption{
		goose.WithTableName(MigrationsTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), Migrations(), opts...)
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return &Migrator{provider: p}, nil
}

// Up applies every pending migration, each in its own transaction, under
// the migration lock. It returns the versions it applied: none when the
// database is current.
func (m *Migrator) Up(ctx context.Context) ([]MigrationStatus, error) {
	results, err := m.provider.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("apply migrations: %w", err)
	}
	applied := make([]MigrationStatus, 0, len(results))
	for _, r := range results {
		applied = append(applied, MigrationStatus{Version: r.Source.Version, Name: path.Base(r.Source.Path), Applied: true})
	}
	return applied, nil
}

// Status lists every embedded migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]MigrationStatus, error) {
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	out := make([]MigrationStatus, 0, len(st))
	for _, s := range st {
		out = append(out, MigrationStatus{
			Version: s.Source.Version,
			Name:    path.Base(s.Source.Path),
			Applied: s.State == goose.StateApplied,
		})
	}
	return out, nil
}

// Pending tells whether any embedded migration is not yet applied.
func (m *Migrator) Pending(ctx context.Context) (bool, error) {
	pending, err := m.provider.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("check pending migrations: %w", err)
	}
	return pending, nil
}

// Close releases the migrator's database handle (not the pool).
func (m *Migrator) Close() error { return m.provider.Close() }

// Migrate applies pending migrations on pool: the one call serve and the
// tests need.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) ([]MigrationStatus, error) {
	m, err := NewMigrator(pool, logger)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Up(ctx)
}
