package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/console"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/idempotency"
	"github.com/paydispatch/paydispatch/internal/loopback"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
	"github.com/paydispatch/paydispatch/schema"
	"github.com/paydispatch/paydispatch/temporal"
	"github.com/paydispatch/paydispatch/temporal/webui"
	"github.com/paydispatch/paydispatch/webhook"
)

func runServe(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "serve", "[flags]",
		"Opens the store (a private PostgreSQL in the data directory when DATABASE_URL is empty),\n"+
			"applies pending migrations, connects to Temporal (Temporal's own server embedded, its data in\n"+
			"the data directory, when TEMPORAL_ADDRESS is empty), and serves the HTTP API until SIGINT or SIGTERM.\n"+
			"It relays the outbox to the rail at PAYDISPATCH_RAIL_URL (empty: a rail simulator in-process on loopback).")
	var (
		db  config.Database
		srv config.Server
		tc  config.Temporal
		dm  config.Dispatch
		lg  config.Log
		rl  config.Rail
		rc  config.Relay
		wh  config.Webhooks
		kc  config.Kafka
		rt  config.Retention
		sc  config.Screening
	)
	settings := append(config.DatabaseSettings(&db), config.ServerSettings(&srv)...)
	settings = append(settings, config.TemporalSettings(&tc)...)
	settings = append(settings, config.DispatchSettings(&dm)...)
	settings = append(settings, append(config.RailSettings(&rl), config.RelaySettings(&rc)...)...)
	settings = append(settings, config.WebhookSettings(&wh)...)
	settings = append(settings, config.KafkaSettings(&kc)...)
	settings = append(settings, config.RetentionSettings(&rt)...)
	settings = append(settings, config.ScreeningSettings(&sc)...)
	set := config.NewSet(fs, env.getenv, append(settings, config.LogSettings(&lg)...)...)
	if err := parse(set, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: serve takes only flags", fs.Arg(0))}
	}
	if err := rc.Check(rl); err != nil {
		return usageError{err}
	}
	if err := wh.Check(); err != nil {
		return usageError{err}
	}
	log := newLogger(env, lg)
	run, err := startServer(ctx, env, serverConfig{db: db, srv: srv, tc: tc, dm: dm, rl: rl, rc: rc, wh: wh, kc: kc, rt: rt, sc: sc}, log)
	if err != nil {
		return err
	}
	store, serveErr := run.store, run.serveErr

	var dbDied <-chan struct{}
	if store.Server != nil {
		dbDied = store.Server.Done()
	}
	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-serveErr:
		runErr = fmt.Errorf("http server: %w", err)
	case <-dbDied:
		runErr = errors.New("embedded PostgreSQL exited unexpectedly; see its server.log in the data directory")
	}
	// Everything stops within the shutdown timeout: the requests in
	// flight get it less the roles' share, the roles the rest.
	deadline := time.Now().Add(srv.ShutdownTimeout)
	drainLimit := srv.ShutdownTimeout - rolesShare(srv.ShutdownTimeout)
	cut, err := run.api.drain(drainLimit)
	if cut > 0 {
		log.Warn("requests still running at the drain limit were cut", "requests", cut, "drain_limit", drainLimit)
	}
	if err != nil && runErr == nil {
		runErr = fmt.Errorf("http shutdown: %w", err)
	}
	if err := run.parts.stopBy(deadline); err != nil {
		log.Error("serve did not stop in time", "shutdown_timeout", srv.ShutdownTimeout, "err", err)
		runErr = cmp.Or(runErr, err)
	}
	return runErr
}

// rolesShare is the part of serve's shutdown timeout kept for stopping
// its roles after HTTP: a third, at most 10 s. Requests that finish
// sooner leave the roles more.
func rolesShare(limit time.Duration) time.Duration { return min(limit/3, 10*time.Second) }

// apiServer is the API's HTTP server. Its requests' contexts derive from
// one that drain cancels, so work stops when the server does, and it
// counts the requests in flight, to say how many a drain cut.
type apiServer struct {
	*http.Server
	cancel   context.CancelFunc
	inFlight atomic.Int64
}

func newAPIServer(h http.Handler) *apiServer {
	base, cancel := context.WithCancel(context.Background())
	s := &apiServer{cancel: cancel}
	// A slow or stalled client cannot hold a connection for long; a bulk
	// file (up to 512 MiB) gets the read time a slow uplink needs.
	s.Server = &http.Server{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 15 * time.Minute,
		WriteTimeout: 15 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		BaseContext: func(net.Listener) context.Context { return base },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.inFlight.Add(1)
			defer s.inFlight.Add(-1)
			h.ServeHTTP(w, r)
		})}
	return s
}

// drain stops the server within limit. It stops taking connections at
// once and gives the requests in flight most of limit to finish; then it
// cancels the contexts of those still running and gives them the rest
// (a fifth, at most 5 s) to answer; then it closes the connections left,
// so that nothing holds serve past limit. It returns how many requests
// were still running when their contexts were cancelled.
func (s *apiServer) drain(limit time.Duration) (cut int64, err error) {
	deadline := time.Now().Add(limit)
	defer s.cancel()
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-min(limit/5, 5*time.Second)))
	err = s.Shutdown(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return 0, err
	}
	cut = s.inFlight.Load()
	s.cancel()
	ctx, cancel = context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if s.Shutdown(ctx) != nil {
		// A handler that ignores its context still holds its connection.
		_ = s.Close()
	}
	return cut, nil
}

// serverConfig is what serve is configured with.
type serverConfig struct {
	db  config.Database
	srv config.Server
	tc  config.Temporal
	dm  config.Dispatch
	rl  config.Rail
	rc  config.Relay
	wh  config.Webhooks
	kc  config.Kafka
	// rt is the retention of the tables' history (zero: keep it all).
	rt config.Retention
	// sc is the screening hook (zero: off).
	sc config.Screening
	// railSim is how the embedded rail simulator behaves (no rail URL).
	railSim railsim.Behaviour
}

// runningServer is serve's stack, up and serving the API.
type runningServer struct {
	store   *postgres.DB
	tconn   *temporal.Conn
	http    *http.Server
	api     *apiServer // http, with drain
	addr    string     // the API's listen address
	railURL string
	// kafkaBrokers are the Kafka brokers the intake reads (none: off).
	kafkaBrokers []string
	serveErr     <-chan error
	parts        parts
}

// stop stops every role, Temporal and the database, in reverse order of
// their start, waiting for each; the HTTP server is shut down by the
// caller first. serve itself stops them by its shutdown timeout
// (parts.stopBy).
func (r *runningServer) stop() { r.parts.stopAll() }

// startServer starts what serve runs: the store, migrations, Temporal,
// the workers, the dispatcher, the relayer (and rail simulator) and the
// HTTP API. On error, what was started is stopped.
func startServer(ctx context.Context, env *environment, c serverConfig, log *slog.Logger) (_ *runningServer, err error) {
	db, srv, tc, dm, rl, rc := c.db, c.srv, c.tc, c.dm, c.rl, c.rc
	run := &runningServer{}
	defer func() {
		if err != nil {
			// A start cut short by SIGTERM stops in time too.
			if serr := run.parts.stopWithin(srv.ShutdownTimeout); serr != nil {
				log.Error("serve did not stop in time", "shutdown_timeout", srv.ShutdownTimeout, "err", serr)
			}
		}
	}()
	// Bind first: a taken port fails fast, before a database is started.
	ln, err := net.Listen("tcp", srv.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (set --http-addr or PAYDISPATCH_HTTP_ADDR to a free address)", srv.HTTPAddr, err)
	}
	run.parts.add("the HTTP listener", func() { ln.Close() })
	// Traces (off unless OTEL_TRACES_EXPORTER says): stopped last, so the
	// roles' last spans are flushed.
	tracing, err := startTracing(ctx, env, "serve", log)
	if err != nil {
		return nil, err
	}
	run.parts.add("traces", tracing.Stop)

	store, err := openDatabase(ctx, db, log)
	if err != nil {
		return nil, err
	}
	run.parts.add("the database", store.Close)

	migrator, err := schema.NewMigrator(store.Pool, nil)
	if err != nil {
		return nil, err
	}
	run.parts.add("the migrator", func() { _ = migrator.Close() })
	if srv.MigrateOnStart {
		applied, err := app.Migrate(ctx, store.Pool, nil)
		if err != nil {
			return nil, err
		}
		log.Info("schema migrated", "migrations", len(applied.Migrations), "scripts", applied.Scripts, "version", migrator.Latest())
	}
	tconn, err := connectTemporal(ctx, tc, db, store, tracing, log)
	if err != nil {
		return nil, err
	}
	run.parts.add("Temporal", tconn.Close)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		dispatch.NewDepthCollector(queue.New(store.Pool)), pacing.NewCollector(pacing.New(pacing.Config{Pool: store.Pool})), process.NewCollector(store.Pool),
		app.NewRailCollector(store))
	// The dispatcher's and the executions' metrics in a registry of their
	// own, which the console reads every second without running the
	// database collectors; /metrics serves both.
	dispatchReg := prometheus.NewRegistry()
	dispatchMetrics := dispatch.NewMetrics(dispatchReg, dispatch.MetricsConfig{TenantLabels: srv.MetricsTenantLabels})
	controls, err := app.ScreeningControls(store, c.sc, nil, reg, log)
	if err != nil {
		return nil, err
	}
	opts := app.Options{Metrics: dispatchMetrics, Controls: controls}
	for _, w := range []struct {
		name  string
		start func(*postgres.DB, *temporal.Conn, *slog.Logger, app.Options) (func(), error)
	}{{"the init worker", app.StartInitWorker}, {"the exec worker", app.StartExecWorker}} {
		stop, err := w.start(store, tconn, log, opts)
		if err != nil {
			return nil, err
		}
		run.parts.add(w.name, stop)
	}

	stopDispatch, err := app.StartDispatcher(ctx, dm.Mode, store, tconn, log, opts)
	if err != nil {
		return nil, err
	}
	run.parts.add("the dispatcher", stopDispatch)

	stopRetention, err := app.StartRetention(store, c.rt, reg, log)
	if err != nil {
		return nil, err
	}
	run.parts.add("the retention cleaner", stopRetention)

	// Kafka, when configured: its brokers (or an embedded cluster), and the
	// payment event stream's sender for the relayer.
	var kafkaBrokers []string
	var moreRails []rail.Rail
	if c.kc.On() {
		brokers, stopCluster, err := app.KafkaBrokers(c.kc, log)
		if err != nil {
			return nil, err
		}
		run.parts.add("the embedded Kafka cluster", stopCluster)
		kafkaBrokers = brokers
	}
	events, err := app.EventStream(ctx, store, c.kc, kafkaBrokers, log)
	if err != nil {
		return nil, err
	}
	if events != nil {
		run.parts.add("the event stream's producer", events.Close)
		moreRails = append(moreRails, events)
	}
	run.kafkaBrokers = kafkaBrokers

	// The relayer role: the outbox to the rail (or the embedded simulator)
	// and the webhooks, their metrics on this registry.
	stopRelay, railURL, err := startRelayRole(ctx, store, rl, rc, c.wh, c.railSim, moreRails, reg, tracing, log)
	if err != nil {
		return nil, err
	}
	run.parts.add("the relayers", stopRelay)

	payments := app.PaymentService(store, tconn, payment.ServiceConfig{ChunkSize: srv.BulkChunkSize, Metrics: payment.NewMetrics(reg),
		DuplicateFileWindow: time.Duration(srv.DuplicateFileDays) * 24 * time.Hour})
	if c.kc.On() {
		stopIntake, err := app.StartKafkaIntake(ctx, store, payments, c.kc, kafkaBrokers, reg, log)
		if err != nil {
			return nil, err
		}
		run.parts.add("the Kafka intake", stopIntake)
	}
	router, uiBase, err := newRouter(ctx, env, c, &run.parts, store, migrator, tconn,
		apiServices(c, store, tconn, payments, reg, dispatchReg), log)
	if err != nil {
		return nil, err
	}
	if err := startProfiling(srv.PprofAddr, &run.parts, log); err != nil {
		return nil, err
	}
	// On loopback (the default address) the API answers only a loopback
	// Host: a web page whose name is rebound to 127.0.0.1 reads nothing,
	// even with --insecure-dev.
	api := newAPIServer(loopback.Guard(ln.Addr(), app.TraceHTTP(tracing.TracerProvider(), router, router.Route)))
	run.parts.add("the API's requests", api.cancel)
	serveErr := make(chan error, 1)
	go func() { serveErr <- api.Serve(ln) }()
	log.Info("paydispatch serving", "http_addr", ln.Addr().String(), "temporal_ui", cmp.Or(uiBase, "off"), "version", buildVersion())
	run.store, run.tconn, run.http, run.api, run.addr, run.railURL, run.serveErr = store, tconn, api.Server, api, ln.Addr().String(), railURL, serveErr
	return run, nil
}

// newRouter is the HTTP API's router on services: its readiness checks,
// idempotency keys (their cleanup among ps), tokens and their limits
// (unless --insecure-dev), body limits and links to Temporal's Web UI, at
// uiBase ("": none).
func newRouter(ctx context.Context, env *environment, c serverConfig, ps *parts, store *postgres.DB, migrator *postgres.Migrator,
	tconn *temporal.Conn, services httpapi.Services, log *slog.Logger) (_ *httpapi.Router, uiBase string, _ error) {
	db, srv, tc := c.db, c.srv, c.tc
	idem := idempotency.NewStore(store.Pool, idempotency.Config{TTL: srv.IdempotencyTTL})
	cfg := httpapi.RouterConfig{
		Log:             log,
		Checks:          readiness(store, migrator, tconn),
		IdempotencyKeys: idem,
		MaxBody:         int64(srv.MaxBody),
		MaxBulkBody:     int64(srv.MaxBulkBody),
		Services:        services,
	}
	if srv.InsecureDev {
		log.Warn("--insecure-dev: the API answers anyone, without a token; never run it so beyond a developer's machine")
	} else {
		if err := bootstrapToken(ctx, env, store, db.DataDir, log); err != nil {
			return nil, "", err
		}
		cfg.Auth = auth.NewStore(store.Pool)
		cfg.TokenRate, cfg.TokenBurst = float64(srv.TokenRate), 2*srv.TokenRate
		cfg.AuthFailuresPerMinute = srv.AuthFailureLimit
	}
	uiBase = temporalUIBase(tc, tconn)
	if uiBase != "" {
		cfg.ExecutionPage = func(workflowID, runID string) string {
			return webui.WorkflowURL(uiBase, tconn.Namespace, workflowID, runID)
		}
	}
	router, err := httpapi.NewRouter(cfg)
	if err != nil {
		return nil, "", err
	}
	cleanupCtx, stopCleanup := context.WithCancel(ctx)
	ps.add("the idempotency keys' cleanup", stopCleanup)
	go idem.Cleanup(cleanupCtx, 10*time.Minute, func(err error) { log.Warn("idempotency keys cleanup", "error", err) })
	return router, uiBase, nil
}

// apiServices are the services serve's API routes serve.
func apiServices(c serverConfig, store *postgres.DB, tconn *temporal.Conn, payments *payment.Service,
	reg, dispatchReg *prometheus.Registry) httpapi.Services {
	// A change through the API drops the intake's routing snapshot at once;
	// the workers' (and other processes') read it within their 5 s.
	intakeRouting, _ := payments.Rails().(interface{ Flush() })
	ledgerAPI := service.New(store.Pool)
	return httpapi.Services{
		Payments:        payments,
		Levers:          payments,
		Rails:           app.RailStore(store, intakeRouting),
		Pacer:           pacing.New(pacing.Config{Pool: store.Pool}),
		DispatchConfigs: queue.New(store.Pool),
		Accounts:        ledgerAPI,
		FXRates:         ledgerAPI,
		Processes:       app.ProcessAPI{Operator: app.ProcessOperator(store, tconn), DB: store.Pool},
		Audit:           audit.New(audit.Config{DB: store.Pool}),
		Webhooks:        webhook.NewStore(webhook.StoreConfig{DB: store.Pool, Policy: app.WebhookPolicy(c.wh)}),
		EventTypes:      payment.EventTypes(),
		DeadLetters:     app.DeadLetters(store),
		Console:         console.New(queue.New(store.Pool), pacing.New(pacing.Config{Pool: store.Pool}), dispatchReg, app.ConsoleRails{Store: app.RailStore(store, nil)}),
		Metrics:         promhttp.HandlerFor(prometheus.Gatherers{reg, dispatchReg}, promhttp.HandlerOpts{}),
		Contract:        true,
	}
}

// startProfiling serves the profiling endpoints on addr ("": off), off the
// API listener, on an address of its own.
func startProfiling(addr string, ps *parts, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	pln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set --pprof-addr or PAYDISPATCH_PPROF_ADDR to a free address, or empty for off)", addr, err)
	}
	profiling := &http.Server{Handler: loopback.Guard(pln.Addr(), mux), ReadHeaderTimeout: 10 * time.Second}
	ps.add("the profiling endpoints", func() { _ = profiling.Close() })
	go func() { _ = profiling.Serve(pln) }()
	log.Info("profiling endpoints on", "addr", pln.Addr().String())
	return nil
}

// readiness is what /readyz checks: the database, its schema and Temporal.
func readiness(store *postgres.DB, migrator *postgres.Migrator, tconn *temporal.Conn) []httpapi.Check {
	return []httpapi.Check{
		{Name: "database", Run: func(ctx context.Context) error { return store.Pool.Ping(ctx) }},
		{Name: "schema", Run: func(ctx context.Context) error {
			pending, err := migrator.Pending(ctx)
			if err == nil && pending {
				err = errors.New("migrations pending: run 'paydispatch migrate'")
			}
			return err
		}},
		{Name: "temporal", Run: func(ctx context.Context) error {
			_, err := tconn.Client.CheckHealth(ctx, nil)
			return err
		}},
	}
}

// bootstrapToken gives a new database its first admin token: the
// operator's PAYDISPATCH_BOOTSTRAP_TOKEN, or a generated one printed once
// and written to <data dir>/admin-token (mode 0600).
func bootstrapToken(ctx context.Context, env *environment, store *postgres.DB, dataDir string, log *slog.Logger) error {
	given := env.getenv("PAYDISPATCH_BOOTSTRAP_TOKEN")
	secret, created, err := auth.Bootstrap(ctx, store.Pool, given)
	if errors.Is(err, auth.ErrInvalid) {
		return usageError{err}
	}
	if err != nil || !created {
		return err
	}
	if given != "" {
		log.Info("first admin token taken from PAYDISPATCH_BOOTSTRAP_TOKEN")
		return nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("write the first admin token: %w", err)
	}
	file, err := filepath.Abs(filepath.Join(dataDir, "admin-token"))
	if err == nil {
		err = os.WriteFile(file, []byte(secret+"\n"), 0o600)
	}
	if err != nil {
		return fmt.Errorf("write the first admin token: %w", err)
	}
	fmt.Fprintf(env.stderr, "\nThe first admin token (shown once; also in %s, mode 0600):\n\n  %s\n\n"+
		"Send it as 'Authorization: Bearer <token>'; make others with 'paydispatch token create'.\n\n", file, secret)
	return nil
}
