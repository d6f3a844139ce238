package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
)

// runRelay runs outbox relayers in their own process: as many as the
// rail's load needs, against one database.
func runRelay(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet(env, "relay", "[flags]",
		"Delivers the outbox's instructions to their rails until SIGINT or SIGTERM: it claims due instructions\n"+
			"(woken by LISTEN/NOTIFY, with a fallback poll), validates each before any call, sends it to the rail it\n"+
			"names (the routing table's: JSON for type SEPA_JSON, ISO 20022 pacs.008 for PACS008, at the rail's\n"+
			"endpoint or PAYDISPATCH_RAIL_URL), never at or after the rail's cut-off for its value date\n"+
			"(CUTOFF_MISSED: dead, the payment returned), records the outcome, backs off and retries, settles\n"+
			"unknown outcomes by inquiry, and requeues the claims of relayers that died. Any\n"+
			"number of relay processes (and serve) may share one database. It serves /metrics and /healthz on\n"+
			"--metrics-addr. With no DATABASE_URL it uses the private PostgreSQL in the data directory (beside\n"+
			"a running serve: serve's).")
	var (
		db config.Database
		rl config.Rail
		rc config.Relay
		wh config.Webhooks
		mt config.Metrics
		kc config.Kafka
		lg config.Log
		// shutdown bounds the whole stop; each relayer's own is the
		// outbox's (rail timeout + 5 s).
		shutdown time.Duration
	)
	settings := append(config.DatabaseSettings(&db), config.RailSettings(&rl)...)
	settings = append(settings, config.RelaySettings(&rc)...)
	settings = append(settings, config.WebhookSettings(&wh)...)
	settings = append(settings, config.MetricsSettings(&mt)...)
	settings = append(settings, config.KafkaSettings(&kc)...)
	settings = append(settings, config.ShutdownSetting(&shutdown))
	if err := parse(config.NewSet(fs, env.getenv, append(settings, config.LogSettings(&lg)...)...), args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: relay takes only flags", fs.Arg(0))}
	}
	if err := rc.Check(rl); err != nil {
		return usageError{err}
	}
	if err := wh.Check(); err != nil {
		return usageError{err}
	}
	if rl.URL == "" {
		return usageError{errors.New("relay needs PAYDISPATCH_RAIL_URL (or --rail-url), the rail to deliver to, e.g. http://127.0.0.1:9090 for 'paydispatch rail-sim'")}
	}
	if kc.Embedded {
		return usageError{errors.New("relay publishes events to brokers other processes share: set PAYDISPATCH_KAFKA_BROKERS to their host:port, not embedded")}
	}
	log := newLogger(env, lg)
	var started parts
	// A start that failed, or was cut short by SIGTERM; nothing once
	// stopBy ran.
	defer func() { _ = started.stopWithin(shutdown) }()
	tracing, err := startTracing(ctx, env, "relay", log)
	if err != nil {
		return err
	}
	started.add("traces", tracing.Stop) // after the relayers stopped: their last spans flushed

	// Bind first: a taken port fails fast, before a database is opened.
	ln, err := listenMetrics(mt)
	if err != nil {
		return err
	}
	if ln != nil {
		started.add("the metrics listener", func() { ln.Close() })
	}
	store, err := openRoleDatabase(ctx, db, log, schemaWait)
	if err != nil {
		return err
	}
	started.add("the database", store.Close)

	reg := processRegistry()
	metrics := app.RegisterOutboxMetrics(reg, store, rc.ReaperTimeout)
	cfg := relayConfig(rl, rc, tracing)
	events, err := app.EventStream(ctx, store, kc, kc.Brokers, log)
	if err != nil {
		return err
	}
	if events != nil {
		started.add("the event stream's producer", events.Close)
		cfg.Rails = append(cfg.Rails, events)
	}
	stop, err := app.StartRelayer(ctx, store, cfg, payment.OutboxHooks(), metrics, log)
	if err != nil {
		return err
	}
	started.add("the outbox relayer", stop)
	stopHooks, err := app.StartWebhookRelayer(ctx, app.WebhookConfig(store, wh), reg, log)
	if err != nil {
		return err
	}
	started.add("the webhook relayer", stopHooks)

	var serveErr <-chan error
	if ln != nil {
		var stopMetrics func()
		stopMetrics, serveErr = serveMetrics(ln, reg, store)
		started.add("the metrics server", stopMetrics)
		log.Info("relay metrics on http://"+ln.Addr().String()+"/metrics", "metrics_addr", ln.Addr().String())
	}
	log.Info("relay running", "version", buildVersion())

	var dbDied <-chan struct{}
	if store.Server != nil {
		dbDied = store.Server.Done()
	}
	var runErr error
	select {
	case <-ctx.Done():
		log.Info("relay stopping", "shutdown_timeout", shutdown)
	case err := <-serveErr:
		runErr = fmt.Errorf("metrics server: %w", err)
	case <-dbDied:
		runErr = errors.New("embedded PostgreSQL exited unexpectedly; see its server.log in the data directory")
	}
	return cmp.Or(runErr, started.stopBy(time.Now().Add(shutdown)))
}

// relayConfig is the relayer's wiring from its settings; with tracing
// on, each rail call gets its span.
func relayConfig(rl config.Rail, rc config.Relay, tracing *app.Tracing) app.RelayConfig {
	return app.RelayConfig{
		RailURL:        rl.URL,
		RailTimeout:    rl.Timeout,
		ChargeBearer:   rl.ChargeBearer,
		DebtorAgentBIC: rl.DebtorAgentBIC,
		TracerProvider: tracing.TracerProvider(),
		Relayer: outbox.Config{
			DisableNotify: !rc.Notify,
			DisablePoll:   rc.PollInterval == 0,
			PollInterval:  rc.PollInterval,
			Debounce:      rc.Debounce,
			Concurrency:   rc.Concurrency,
			MaxAttempts:   rc.MaxAttempts,
			BackoffBase:   rc.BackoffBase,
			BackoffMax:    rc.BackoffMax,
			ReaperTimeout: rc.ReaperTimeout,
		},
	}
}

// startRelayRole is serve's relayer: to the rail at rl.URL, or, when none
// is configured, to a rail simulator in this process on loopback (the
// embedded default, like serve's PostgreSQL and Temporal). Its metrics go
// to reg. The returned func stops the relayer, then the simulator.
func startRelayRole(ctx context.Context, store *postgres.DB, rl config.Rail, rc config.Relay, wh config.Webhooks, sim railsim.Behaviour, more []rail.Rail, reg prometheus.Registerer, tracing *app.Tracing, log *slog.Logger) (stop func(), railURL string, err error) {
	stopSim := func() {}
	if rl.URL == "" {
		url, stop, err := app.StartRailSim(ctx, "127.0.0.1:0", railsim.Options{Behaviour: sim}, log)
		if err != nil {
			return nil, "", err
		}
		log.Info("rail simulator embedded on "+url+" (rail NAME at "+url+"/rails/NAME); set PAYDISPATCH_RAIL_URL for a real rail", "url", url)
		rl.URL, stopSim = url, stop
	}
	metrics := app.RegisterOutboxMetrics(reg, store, rc.ReaperTimeout)
	cfg := relayConfig(rl, rc, tracing)
	cfg.Rails = more
	stopRelay, err := app.StartRelayer(ctx, store, cfg, payment.OutboxHooks(), metrics, log)
	if err != nil {
		stopSim()
		return nil, "", err
	}
	stopHooks, err := app.StartWebhookRelayer(ctx, app.WebhookConfig(store, wh), reg, log)
	if err != nil {
		stopRelay()
		stopSim()
		return nil, "", err
	}
	return func() { stopHooks(); stopRelay(); stopSim() }, rl.URL, nil
}
