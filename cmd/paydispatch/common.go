package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/loopback"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/schema"
	"github.com/paydispatch/paydispatch/temporal"
)

// startTracing starts a role's traces as the OTEL_* variables say (off
// by default; app.StartTracing); a value it cannot use is bad input.
func startTracing(ctx context.Context, env *environment, role string, log *slog.Logger) (*app.Tracing, error) {
	t, err := app.StartTracing(ctx, env.getenv, role, buildVersion(), env.stdout, log)
	if errors.Is(err, app.ErrTracingConfig) {
		return nil, usageError{err}
	}
	return t, err
}

func newLogger(env *environment, l config.Log) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.Level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(env.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(env.stderr, opts))
}

// openDatabase opens DATABASE_URL, or the private server in the data
// directory when it is empty.
func openDatabase(ctx context.Context, d config.Database, log *slog.Logger) (*postgres.DB, error) {
	db, err := postgres.Open(ctx, postgres.Options{
		URL: d.URL, DataDir: d.DataDir, BinDir: d.PGBinDir, MaxConns: d.MaxConns, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	if db.Server != nil {
		log.Info("using embedded PostgreSQL", "socket_dir", db.Server.SocketDir(), "data_dir", db.Server.DataDir())
	} else {
		log.Info("using PostgreSQL at DATABASE_URL")
	}
	return db, nil
}

// connectTemporal dials TEMPORAL_ADDRESS, or embeds Temporal's server with
// its data in the data directory when it is empty; with tracing on, the
// client and its workers are traced.
func connectTemporal(ctx context.Context, t config.Temporal, db config.Database, store *postgres.DB, tracing *app.Tracing, log *slog.Logger) (*temporal.Conn, error) {
	pgURL := db.URL
	if store.Server != nil {
		pgURL = store.Server.ConnString("postgres")
	}
	conn, err := temporal.Connect(ctx, temporal.Options{
		EmbeddedStore: temporal.Store(t.EmbeddedStore), EmbeddedPostgresURL: pgURL,
		Address: t.Address, Namespace: t.Namespace,
		TLSCertFile: t.TLSCertFile, TLSKeyFile: t.TLSKeyFile, TLSCAFile: t.TLSCAFile, TLSServerName: t.TLSServerName,
		DataDir: db.DataDir, EmbeddedPort: t.EmbeddedPort, EmbeddedLogLevel: t.EmbeddedLogLevel, EmbeddedRetention: t.EmbeddedRetention, Logger: log,
		EmbeddedUI:        embeddedUI(t),
		HeldWorkflowTypes: []string{payment.ExecWorkflowName, dispatch.BatchWorkflowName},
		TracerProvider:    tracing.TracerProvider(),
	})
	if err != nil {
		return nil, err
	}
	if conn.Server != nil {
		log.Info("Temporal frontend embedded; attach with the Temporal CLI: temporal workflow list --address "+conn.Address,
			"address", conn.Address, "namespace", conn.Namespace)
	} else {
		log.Info("using Temporal at TEMPORAL_ADDRESS", "address", conn.Address, "namespace", conn.Namespace)
	}
	return conn, nil
}

// embeddedUI places the embedded Temporal's Web UI as --temporal-ui-port
// says (nil: off).
func embeddedUI(t config.Temporal) *temporal.UIOptions {
	switch {
	case t.UIPort == config.UIPortOff:
		return nil
	case t.UIPort != config.UIPortAuto:
		return &temporal.UIOptions{Port: t.UIPort}
	case t.EmbeddedPort == 0 || t.EmbeddedPort+1000 > 65535:
		return &temporal.UIOptions{Port: 0}
	}
	return &temporal.UIOptions{Port: t.EmbeddedPort + 1000, OrAnyPort: true}
}

// temporalUIBase is the Web UI the API links a payment's execution to:
// the operator's PAYDISPATCH_TEMPORAL_UI_URL, else the embedded one's
// ("" for none).
func temporalUIBase(t config.Temporal, conn *temporal.Conn) string {
	if t.UIURL != "" {
		return t.UIURL
	}
	return conn.UIURL
}

// openCurrentDatabase opens the store for a command that does not
// migrate: it refuses a database whose schema is behind this binary's.
func openCurrentDatabase(ctx context.Context, db config.Database, log *slog.Logger) (*postgres.DB, error) {
	store, err := openDatabase(ctx, db, log)
	if err != nil {
		return nil, err
	}
	if err := requireCurrentSchema(ctx, store); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// listenMetrics binds the metrics address of a role run apart (nil when
// it is off), before any database is opened, so a taken port fails fast.
func listenMetrics(mt config.Metrics) (net.Listener, error) {
	if mt.Addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", mt.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (set --metrics-addr or PAYDISPATCH_METRICS_ADDR to a free address, or empty for off)", mt.Addr, err)
	}
	return ln, nil
}

// processRegistry is a metrics registry with the Go runtime's and the
// process's collectors.
func processRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// errSchemaBehind: the database's schema is older than this binary's.
var errSchemaBehind = errors.New("the database schema is older than this binary's: run 'paydispatch migrate' (serve does it at start)")

// requireCurrentSchema refuses to work on a database whose schema is
// behind this binary's.
func requireCurrentSchema(ctx context.Context, db *postgres.DB) error {
	m, err := schema.NewMigrator(db.Pool, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	pending, err := m.Pending(ctx)
	if err != nil {
		return err
	}
	if pending {
		return errSchemaBehind
	}
	return nil
}

// schemaWait is how long a role run apart waits for serve or 'paydispatch
// migrate' to bring the schema to its version.
const schemaWait = 2 * time.Minute

// startRole starts what a role run apart on a Temporal cluster stands on
// (worker, kafka-intake): its traces, its database (see openRoleDatabase)
// and its Temporal connection, each added to started, which stops them
// after the role's own parts (the traces last: the last spans flushed).
func startRole(ctx context.Context, env *environment, role string, db config.Database, tc config.Temporal, log *slog.Logger,
	started *parts) (*postgres.DB, *temporal.Conn, error) {
	tracing, err := startTracing(ctx, env, role, log)
	if err != nil {
		return nil, nil, err
	}
	started.add("traces", tracing.Stop)
	store, err := openRoleDatabase(ctx, db, log, schemaWait)
	if err != nil {
		return nil, nil, err
	}
	started.add("the database", store.Close)
	tconn, err := connectTemporal(ctx, tc, db, store, tracing, log)
	if err != nil {
		return nil, nil, err
	}
	started.add("Temporal", tconn.Close)
	return store, tconn, nil
}

// openRoleDatabase opens the store for a role run apart (worker, relay,
// kafka-intake). Such a role is often started beside serve or a migrate
// job, so a schema behind this binary's is waited for, up to wait, rather
// than refused at once: a role that ran on a half-migrated schema would
// meet the old definitions of the functions and triggers still to be
// replaced.
func openRoleDatabase(ctx context.Context, db config.Database, log *slog.Logger, wait time.Duration) (*postgres.DB, error) {
	store, err := openDatabase(ctx, db, log)
	if err != nil {
		return nil, err
	}
	if err := awaitCurrentSchema(ctx, store, log, wait, 500*time.Millisecond); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// awaitCurrentSchema checks the schema every poll until it is current,
// wait has passed (errSchemaBehind) or ctx is done.
func awaitCurrentSchema(ctx context.Context, store *postgres.DB, log *slog.Logger, wait, poll time.Duration) error {
	deadline := time.Now().Add(wait)
	for logged := false; ; logged = true {
		err := requireCurrentSchema(ctx, store)
		if !errors.Is(err, errSchemaBehind) || !time.Now().Before(deadline) {
			return err
		}
		if !logged {
			log.Info("waiting for the schema to reach this binary's version (serve or 'paydispatch migrate' brings it)", "wait", wait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (stopped while waiting)", errSchemaBehind)
		case <-time.After(poll):
		}
	}
}

// serveMetrics serves reg at /metrics and the store's health at /healthz
// on ln (a role run apart: relay, kafka-intake) until stop; serveErr
// carries the server's failure.
func serveMetrics(ln net.Listener, reg *prometheus.Registry, store *postgres.DB) (stop func(), serveErr <-chan error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := store.Pool.Ping(r.Context()); err != nil {
			http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	srv := &http.Server{Handler: loopback.Guard(ln.Addr(), mux), ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, errs
}

// parseWindow parses the --from and --to flags' RFC 3339 times into
// fromAt and toAt; an empty flag leaves its time zero.
func parseWindow(from, to string, fromAt, toAt *time.Time) error {
	for _, t := range []struct {
		flag, value string
		at          *time.Time
	}{{"--from", from, fromAt}, {"--to", to, toAt}} {
		if t.value == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, t.value)
		if err != nil {
			return fmt.Errorf("%s %q: want an RFC 3339 time such as 2030-01-01T16:00:00Z", t.flag, plaintext.Clip(t.value, 40))
		}
		*t.at = at
	}
	return nil
}
