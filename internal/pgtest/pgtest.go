// Package pgtest gives tests real PostgreSQL databases.
//
// The first test that asks for a database starts one throw-away server for
// the whole test process (from the installed server binaries, fsync off), or
// uses TEST_DATABASE_URL when set. Every test then gets its own database,
// cloned from a migrated template, dropped when the test ends. A package
// using it runs its tests through Main so the server is stopped afterwards:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"context"
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
	"github.com/paydispatch/paydispatch/schema"
)

var (
	once      sync.Once
	onceErr   error
	adminURL  string // connection string to a database we may create databases from
	server    *pgserver.Server
	serverDir string
	template  string
	prefix    string
	counter   atomic.Int64
	createMu  sync.Mutex // CREATE DATABASE ... TEMPLATE wants the template idle
)

// Main runs the tests, then stops the server if one was started.
func Main(m *testing.M) {
	code := m.Run()
	for _, f := range exampleCleanups {
		f()
	}
	shutdown()
	os.Exit(code)
}

var exampleCleanups []func()

// ExamplePool is NewPool for runnable examples, which have no *testing.T:
// a new migrated database, dropped when Main ends. It panics when no
// database can be had.
func ExamplePool() *pgxpool.Pool {
	t := &exampleTB{}
	pool := NewPool(t)
	exampleCleanups = append(exampleCleanups, t.cleanups...)
	return pool
}

// exampleTB is the little of testing.TB that NewPool uses.
type exampleTB struct {
	testing.TB
	cleanups []func()
}

func (*exampleTB) Helper()                           {}
func (e *exampleTB) Cleanup(f func())                { e.cleanups = append([]func(){f}, e.cleanups...) }
func (*exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (*exampleTB) Logf(string, ...any)               {}

func setup() error {
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
	pool, err := postgres.NewPool(ctx, withDatabase(adminURL, template), 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool, schema.Schema(), nil); err != nil {
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

func ready(t testing.TB) {
	t.Helper()
	once.Do(func() { onceErr = setup() })
	if onceErr != nil {
		t.Fatalf("pgtest: no test database: %v", onceErr)
	}
}

// NewPool returns a pool on a new database holding the current schema; the
// database is dropped when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ready(t)
	return newPool(t, template)
}

// NewEmptyPool returns a pool on a new database with no schema at all.
func NewEmptyPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return newPool(t, "template0")
}

// URL returns a connection string for a new migrated database (dropped when
// the test ends), for code under test that opens its own pool.
func URL(t testing.TB) string {
	t.Helper()
	ready(t)
	return withDatabase(adminURL, createDatabase(t, template))
}

// EmptyURL is URL for a new database with no schema.
func EmptyURL(t testing.TB) string {
	t.Helper()
	ready(t)
	return withDatabase(adminURL, createDatabase(t, "template0"))
}

func newPool(t testing.TB, from string) *pgxpool.Pool {
	t.Helper()
	ready(t)
	name := createDatabase(t, from)
	pool, err := postgres.NewPool(context.Background(), withDatabase(adminURL, name), 40)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", name, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func createDatabase(t testing.TB, from string) string {
	t.Helper()
	name := fmt.Sprintf("%s_%d", prefix, counter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createMu.Lock()
	err := exec(ctx, adminURL, "CREATE DATABASE "+name+" TEMPLATE "+from)
	createMu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	// Registered before the pool's Close, so it runs after it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := exec(ctx, adminURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return name
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
