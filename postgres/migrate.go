package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/paydispatch/paydispatch/internal/pgerr"
)

// MigrationsTable records which migrations a database has applied.
const MigrationsTable = "paydispatch_schema_migrations"

// ScriptsTable records the checksum of each repeatable script as last applied.
const ScriptsTable = "paydispatch_schema_scripts"

// migrationLockID is the advisory lock that serializes migrators, so two
// processes starting at once do not apply a migration twice.
const migrationLockID int64 = 0x7061_7964_6973_7061 // "paydispa"

// lockWait bounds how long a migrator waits for another one to finish.
const lockWait = 10 * time.Minute

// Schema is what a migrator applies: versioned migrations, and repeatable
// scripts applied after them.
type Schema struct {
	// Migrations are directories of goose SQL files (NNNNN_name.sql; other
	// files are ignored), each package its own; versions are unique across
	// them and apply in order.
	Migrations []fs.FS
	// Scripts are re-applied whenever their text changes, after the
	// migrations: the current source of PL/pgSQL functions, kept in one
	// file per package instead of one copy per migration that changed them.
	Scripts []Script
}

// Script is a repeatable script: idempotent SQL (CREATE OR REPLACE ...).
type Script struct {
	Name string // e.g. "pacing/migrations/functions.sql"
	SQL  string
}

func (s Script) checksum() string {
	sum := sha256.Sum256([]byte(s.SQL))
	return hex.EncodeToString(sum[:])
}

// MigrationStatus is one migration and whether this database has it.
type MigrationStatus struct {
	Version int64
	Name    string
	Applied bool
}

// ScriptStatus is one repeatable script and whether this database has its
// current text.
type ScriptStatus struct {
	Name    string
	Current bool
}

// Applied is what one Up did.
type Applied struct {
	Migrations []MigrationStatus
	Scripts    []string
}

// Empty tells whether Up found the database current.
func (a Applied) Empty() bool { return len(a.Migrations) == 0 && len(a.Scripts) == 0 }

// Migrator applies and inspects a Schema on one database.
type Migrator struct {
	pool     *pgxpool.Pool
	provider *goose.Provider
	scripts  []Script
}

// NewMigrator prepares a migrator; logger may be nil.
func NewMigrator(pool *pgxpool.Pool, s Schema, logger *slog.Logger) (*Migrator, error) {
	files, err := s.Files()
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{
		goose.WithTableName(MigrationsTable),
		goose.WithDisableGlobalRegistry(true),
	}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), files, opts...)
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return &Migrator{pool: pool, provider: p, scripts: s.Scripts}, nil
}

// Files are s's migrations as one directory, as goose reads them.
func (s Schema) Files() (fs.FS, error) { return mergeDirs(s.Migrations) }

// Latest is the newest migration version of s.
func (s Schema) Latest() (int64, error) {
	files, err := s.Files()
	if err != nil {
		return 0, err
	}
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, n := range names {
		v, err := goose.NumericComponent(n)
		if err != nil {
			return 0, fmt.Errorf("migration %s: %w", n, err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// Latest is the newest migration version of the schema.
func (m *Migrator) Latest() int64 {
	var v int64
	for _, s := range m.provider.ListSources() {
		v = max(v, s.Version)
	}
	return v
}

// Up applies every pending migration, each in its own transaction, then
// every repeatable script whose text changed, all under the migration
// lock. On a current database it applies nothing.
func (m *Migrator) Up(ctx context.Context) (Applied, error) {
	var out Applied
	err := m.locked(ctx, func(conn *pgxpool.Conn) error {
		results, err := m.provider.Up(ctx)
		if err != nil {
			return fmt.Errorf("apply migrations: %w", err)
		}
		for _, r := range results {
			out.Migrations = append(out.Migrations, MigrationStatus{Version: r.Source.Version, Name: path.Base(r.Source.Path), Applied: true})
		}
		out.Scripts, err = m.applyScripts(ctx, conn)
		return err
	})
	return out, err
}

// locked runs f holding the migration lock on a connection of its own.
func (m *Migrator) locked(ctx context.Context, f func(*pgxpool.Conn) error) error {
	conn, err := m.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer conn.Release()
	lockCtx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	if _, err := conn.Exec(lockCtx, "SELECT pg_advisory_lock($1)", migrationLockID); err != nil {
		return fmt.Errorf("migration lock (another migrator holds it): %w", err)
	}
	defer func() {
		// A session lock: release it even when ctx is done.
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLockID); err != nil {
			conn.Conn().Close(context.Background()) // closing the session releases it
		}
	}()
	return f(conn)
}

func (m *Migrator) applyScripts(ctx context.Context, conn *pgxpool.Conn) ([]string, error) {
	if len(m.scripts) == 0 {
		return nil, nil
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ScriptsTable+` (
		name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("scripts table: %w", err)
	}
	current, err := m.checksums(ctx, conn)
	if err != nil {
		return nil, err
	}
	var applied []string
	for _, s := range m.scripts {
		sum := s.checksum()
		if current[s.Name] == sum {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			// No arguments: the simple protocol, which takes many statements.
			if _, err := tx.Exec(ctx, s.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+ScriptsTable+` (name, checksum) VALUES ($1, $2)
				ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()`, s.Name, sum)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("apply %s: %w", s.Name, err)
		}
		applied = append(applied, s.Name)
	}
	return applied, nil
}

// checksums reads the recorded checksums; none when the table is missing.
func (m *Migrator) checksums(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (map[string]string, error) {
	type row struct{ Name, Checksum string }
	rows, err := db.Query(ctx, `SELECT name, checksum FROM `+ScriptsTable)
	var got []row
	if err == nil {
		got, err = pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	}
	if isUndefinedTable(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read script checksums: %w", err)
	}
	out := make(map[string]string, len(got))
	for _, r := range got {
		out[r.Name] = r.Checksum
	}
	return out, nil
}

// Status lists every migration and every repeatable script and whether
// this database has it.
func (m *Migrator) Status(ctx context.Context) ([]MigrationStatus, []ScriptStatus, error) {
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("migration status: %w", err)
	}
	migrations := make([]MigrationStatus, 0, len(st))
	for _, s := range st {
		migrations = append(migrations, MigrationStatus{
			Version: s.Source.Version,
			Name:    path.Base(s.Source.Path),
			Applied: s.State == goose.StateApplied,
		})
	}
	current, err := m.checksums(ctx, m.pool)
	if err != nil {
		return nil, nil, err
	}
	scripts := make([]ScriptStatus, 0, len(m.scripts))
	for _, s := range m.scripts {
		scripts = append(scripts, ScriptStatus{Name: s.Name, Current: current[s.Name] == s.checksum()})
	}
	return migrations, scripts, nil
}

// Pending tells whether any migration, or any script's current text, is
// not yet applied.
func (m *Migrator) Pending(ctx context.Context) (bool, error) {
	pending, err := m.provider.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("check pending migrations: %w", err)
	}
	if pending {
		return true, nil
	}
	_, scripts, err := m.Status(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range scripts {
		if !s.Current {
			return true, nil
		}
	}
	return false, nil
}

// Close releases the migrator's database handle (not the pool).
func (m *Migrator) Close() error { return m.provider.Close() }

// Migrate applies s on pool: the one call serve and the tests need.
func Migrate(ctx context.Context, pool *pgxpool.Pool, s Schema, logger *slog.Logger) (Applied, error) {
	m, err := NewMigrator(pool, s, logger)
	if err != nil {
		return Applied{}, err
	}
	defer m.Close()
	return m.Up(ctx)
}

// mergeDirs presents several migration directories as one, refusing a
// file name found in two.
func mergeDirs(dirs []fs.FS) (fs.FS, error) {
	m := mergedFS{}
	for _, d := range dirs {
		entries, err := fs.ReadDir(d, ".")
		if err != nil {
			return nil, fmt.Errorf("read migrations: %w", err)
		}
		for _, e := range entries {
			// Only NNNNN_name.sql files are migrations (a package's
			// functions.sql is a repeatable script).
			if e.IsDir() || path.Ext(e.Name()) != ".sql" || e.Name()[0] < '0' || e.Name()[0] > '9' {
				continue
			}
			if _, dup := m[e.Name()]; dup {
				return nil, fmt.Errorf("migration %s is in two packages", e.Name())
			}
			m[e.Name()] = d
		}
	}
	return m, nil
}

// mergedFS maps each file name to the directory holding it.
type mergedFS map[string]fs.FS

func (m mergedFS) Open(name string) (fs.File, error) {
	if name == "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("a merged directory is listed, not opened")}
	}
	d, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return d.Open(name)
}

func (m mergedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(m))
	for file, d := range m {
		info, err := fs.Stat(d, file)
		if err != nil {
			return nil, err
		}
		out = append(out, fs.FileInfoToDirEntry(info))
	}
	return out, nil
}

// Glob serves goose's "*.sql" listing.
func (m mergedFS) Glob(pattern string) ([]string, error) {
	var out []string
	for file := range m {
		if ok, err := path.Match(pattern, file); err != nil {
			return nil, err
		} else if ok {
			out = append(out, file)
		}
	}
	return out, nil
}

func isUndefinedTable(err error) bool {
	return pgerr.Is(err, pgerr.UndefinedTable)
}
