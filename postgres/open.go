package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/postgres/pgserver"
)

// Options say where the database is.
type Options struct {
	// URL is a PostgreSQL connection string. When empty, a private server
	// is run from the locally installed binaries, in DataDir/postgres.
	URL string
	// DataDir holds the private server's files (used only without URL).
	DataDir string
	// BinDir overrides where the PostgreSQL server binaries are looked for.
	BinDir string
	// MaxConns caps the pool (default 20).
	MaxConns int32
	// Ephemeral runs the private server without fsync: tests and benchmarks only.
	Ephemeral bool
	// ServerSettings are the private server's extra settings (name →
	// value), e.g. shared_preload_libraries for a benchmark's statistics.
	ServerSettings map[string]string
	Logger         *slog.Logger
}

// DB is an open pool, and the private server behind it if one was started.
type DB struct {
	Pool   *pgxpool.Pool
	Server *pgserver.Server // nil on an external DATABASE_URL
}

// EmbeddedDatabase is the database created in the private server.
const EmbeddedDatabase = "paydispatch"

// Open connects to the database, starting the private server first when no
// URL is given. Close the DB to close the pool and stop that server.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	db := &DB{}
	url := opts.URL
	if url == "" {
		if opts.DataDir == "" {
			return nil, errors.New("postgres: no DATABASE_URL and no data directory for the embedded server")
		}
		srv, err := pgserver.Start(ctx, pgserver.Options{
			Dir:       filepath.Join(opts.DataDir, "postgres"),
			BinDir:    opts.BinDir,
			Database:  EmbeddedDatabase,
			Ephemeral: opts.Ephemeral,
			Settings:  opts.ServerSettings,
			Logger:    opts.Logger,
		})
		if err != nil {
			return nil, err
		}
		db.Server = srv
		url = srv.ConnString(EmbeddedDatabase)
	}
	pool, err := NewPool(ctx, url, opts.MaxConns)
	if err != nil {
		db.stopServer()
		return nil, err
	}
	db.Pool = pool
	return db, nil
}

// jitOption finds jit set in a connection string's options ("-c jit=on",
// "--jit=on"), not jit_above_cost and its kin.
var jitOption = regexp.MustCompile(`(^|[^_a-z])jit=`)

// NewPool opens a pgx pool on url and checks that it answers.
func NewPool(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can echo the password; say only what is wrong.
		return nil, errors.New("DATABASE_URL is not a valid PostgreSQL connection string: use postgres://user:password@host:5432/dbname")
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	} else {
		cfg.MaxConns = 20
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "paydispatch"
	// Every statement is planned for the values at hand. PostgreSQL's own
	// choice (plan_cache_mode auto, a cached generic plan once five custom
	// ones cost no less) saved 1.25 ms of planning a payment, a fifth of
	// its CPU, in three runs of four; in the fourth, a generic plan made
	// while the tables were nearly empty tripled PostgreSQL's CPU a
	// payment (docs/performance.md, "Planning"). Until each hot statement's
	// generic plan is checked, custom plans stay forced.
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	// No JIT compilation: it pays off for long analytic queries, while
	// here a statement over a chunk's arrays or a count over a big table
	// crossed jit_above_cost and spent longer compiling than running
	// (LLVM was 2 % of the machine's CPU in a 500,000-payment intake).
	// A jit set in the connection string's options still wins.
	if !jitOption.MatchString(cfg.ConnConfig.RuntimeParams["options"]) {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		registerTypes(conn.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// Close closes the pool and stops the private server, if any.
func (db *DB) Close() {
	if db.Pool != nil {
		db.Pool.Close()
	}
	db.stopServer()
}

func (db *DB) stopServer() {
	if db.Server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_ = db.Server.Stop(ctx)
}
