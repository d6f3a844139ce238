// Package pgtest gives tests real PostgreSQL databases.
//
// The first test that asks for a database starts one throw-away server for
// the whole test process (from the installed server binaries, fsync off), or
// uses TEST_DATABASE_URL when set. Every test then gets its own database,
// cloned from a template migrated once, dropped when the test ends. A
// package runs its tests through Main, naming the part of the schema its
// tests need (the ledger's tests the ledger's migrations, so they reach no
// other package's), and the server is stopped afterwards:
//
//	func TestMain(m *testing.M) {
//		pgtest.Main(m, postgres.Schema{Migrations: []fs.FS{queuemig.FS}})
//	}
//
// The packages whose tests need the whole database pass schema.Schema().
// pgtest itself imports no package's migrations.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/postgres/pgserver"
)

var (
	once      sync.Once
	onceErr   error
	inMain    bool            // Main is running the tests
	schema    postgres.Schema // what Main was given: the template's schema
	adminURL  string          // connection string to a database we may create databases from
	server    *pgserver.Server
	serverDir string
	template  string
	prefix    string
	counter   atomic.Int64
	createMu  sync.Mutex // CREATE DATABASE ... TEMPLATE wants the template idle
)

// Main runs the tests on databases holding s (an empty Schema for tests
// that migrate their databases themselves), then stops the server if one
// was started.
func Main(m *testing.M, s postgres.Schema) {
	inMain, schema = true, s
	code := m.Run()
	shutdown()
	os.Exit(code)
}

func setup() error {
	if !inMain {
		return errors.New("the package's tests do not run through pgtest.Main (TestMain), which names their schema")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix = fmt.Sprintf("pdtest_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	if url := os.Getenv("TEST_DATABASE_URL"); url != "" {
		adminURL = url
	} else {
		dir, err := os.MkdirTemp("", "paydispatch-pgtest-")
		if err != nil {
			return err
		}
		serverDir = dir
		// MkdirTemp makes 0700 dirs; the server user must be able to enter.
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		server, err = pgserver.Start(ctx, pgserver.Options{
			Dir:       dir,
			Ephemeral: true,
			Settings:  map[string]string{"max_connections": "400", "shared_buffers": "128MB"},
		})
		if err != nil {
			return err
		}
		adminURL = server.ConnString("postgres")
	}
	template = prefix + "_template"
	if err := exec(ctx, adminURL, "CREATE DATABASE "+template); err != nil {
		return err
	}
	if len(schema.Migrations) == 0 && len(schema.Scripts) == 0 {
		return nil // goose refuses an empty set of migrations
	}
	pool, err := postgres.NewPool(ctx, withDatabase(adminURL, template), 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool, schema, nil); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	return nil
}

func shutdown() {
	if adminURL == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if server == nil {
		_ = exec(ctx, adminURL, "DROP DATABASE IF EXISTS "+template+" WITH (FORCE)")
		return
	}
	if err := server.Stop(ctx); err != nil {
		log.Printf("pgtest: stop server: %v", err)
	}
	_ = os.RemoveAll(serverDir)
}

func ready() error {
	once.Do(func() { onceErr = setup() })
	if onceErr != nil {
		return fmt.Errorf("pgtest: no test database: %w", onceErr)
	}
	return nil
}

// NewPool returns a pool on a new database holding the schema given to
// Main; the database is dropped when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return newPool(t, true)
}

// NewEmptyPool returns a pool on a new database with no schema at all.
func NewEmptyPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return newPool(t, false)
}

// URL returns a connection string for a new migrated database (dropped when
// the test ends), for code under test that opens its own pool.
func URL(t testing.TB) string {
	t.Helper()
	return newURL(t, true)
}

// EmptyURL is URL for a new database with no schema.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return newURL(t, false)
}

// Open is NewPool for code with no testing.TB, such as a runnable example:
// a pool on a new migrated database, and the function that closes the
// pool and drops the database.
func Open() (*pgxpool.Pool, func(), error) {
	url, drop, err := OpenURL()
	if err != nil {
		return nil, nil, err
	}
	pool, err := postgres.NewPool(context.Background(), url, 40)
	if err != nil {
		drop()
		return nil, nil, fmt.Errorf("pgtest: connect: %w", err)
	}
	return pool, func() { pool.Close(); drop() }, nil
}

// OpenURL is URL for code with no testing.TB: a connection string for a
// new migrated database, and the function that drops it (a failure to
// drop is only logged: the server goes when Main ends).
func OpenURL() (string, func(), error) {
	name, drop, err := createDatabase(true)
	if err != nil {
		return "", nil, err
	}
	return withDatabase(adminURL, name), func() {
		if err := drop(); err != nil {
			log.Print(err)
		}
	}, nil
}

func newURL(t testing.TB, migrated bool) string {
	t.Helper()
	name, drop, err := createDatabase(migrated)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Logf("%v", err)
		}
	})
	return withDatabase(adminURL, name)
}

func newPool(t testing.TB, migrated bool) *pgxpool.Pool {
	t.Helper()
	// The drop is registered before the pool's Close, so it runs after it.
	url := newURL(t, migrated)
	pool, err := postgres.NewPool(context.Background(), url, 40)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// createDatabase creates a database, a clone of the migrated template or
// an empty one, and returns its name and the function that drops it.
func createDatabase(migrated bool) (string, func() error, error) {
	if err := ready(); err != nil {
		return "", nil, err
	}
	from := "template0"
	if migrated {
		from = template
	}
	name := fmt.Sprintf("%s_%d", prefix, counter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createMu.Lock()
	err := exec(ctx, adminURL, "CREATE DATABASE "+name+" TEMPLATE "+from)
	createMu.Unlock()
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := exec(ctx, adminURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgtest: drop %s: %w", name, err)
		}
		return nil
	}
	return name, drop, nil
}

func exec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

// withDatabase points a connection string (URL or keyword/value) at another
// database.
func withDatabase(conn, db string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			panic(fmt.Sprintf("pgtest: bad TEST_DATABASE_URL: %v", err))
		}
		u.Path = "/" + db
		return u.String()
	}
	// Keyword/value: a repeated keyword's last value wins.
	return conn + " dbname=" + db
}

// Plans runs f on a transaction that is rolled back at the end and
// returns the plans of every statement f sent, joined (package explain).
// f's own errors fail the test: swallow the ones it expects.
func Plans(t testing.TB, pool *pgxpool.Pool, analyze bool, f func(ctx context.Context, tx pgx.Tx) error) string {
	t.Helper()
	return PlansWith(t, pool, explain.Options{Analyze: analyze}, f)
}

// PlansWith is Plans with every option of explain.Run.
func PlansWith(t testing.TB, pool *pgxpool.Pool, o explain.Options, f func(ctx context.Context, tx pgx.Tx) error) string {
	t.Helper()
	plans, err := explain.Run(context.Background(), pool, o, f)
	if err != nil {
		t.Fatalf("pgtest: plans: %v", err)
	}
	var b strings.Builder
	for _, p := range plans {
		b.WriteString(p.Plan)
		b.WriteString("\n")
	}
	return b.String()
}
