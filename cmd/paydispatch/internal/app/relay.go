package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
	"github.com/paydispatch/paydispatch/webhook"
)

// RelayConfig is what StartRelayer needs besides the store.
type RelayConfig struct {
	// RailURL is the rail's base URL. Both adapters live under it: the
	// JSON rail (rail type rail.RailSEPAJSON) and the pacs.008 rail
	// (rail.RailPacs008).
	RailURL string
	// RailTimeout is the hard timeout of one rail call (default
	// rail.DefaultTimeout). The adapters classify a call cut off by it,
	// and the relayer abandons one that ignores it.
	RailTimeout time.Duration
	// Relayer tunes the relayer (package outbox documents each knob).
	// StartRelayer sets its Pool, Sender, Hooks, Metrics, Logger,
	// RailTimeout and Tracer; the rest is taken as given, zero fields
	// defaulted.
	Relayer outbox.Config
	// Rails are more rails beside the two under RailURL: the Kafka event
	// stream's sender (package kafka), when it is on.
	Rails []rail.Rail
	// TracerProvider, when set (Tracing.TracerProvider), gives each rail
	// call its span (outbox.send, outbox.inquire), the child of the
	// payment's execution, and its traceparent header; nil: none.
	TracerProvider trace.TracerProvider
}

// RailSender is the relayer's Sender for a rail at baseURL: a router over
// the JSON rail and the pacs.008 rail, each call bounded by timeout, and
// the more rails given.
func RailSender(baseURL string, timeout time.Duration, more ...rail.Rail) (*rail.Router, error) {
	if timeout <= 0 {
		timeout = rail.DefaultTimeout
	}
	jsonRail, err := rail.NewHTTPRail(rail.Config{BaseURL: baseURL, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	pacsRail, err := rail.NewPacs008Rail(rail.Pacs008Config{Config: rail.Config{BaseURL: baseURL, Timeout: timeout}})
	if err != nil {
		return nil, err
	}
	return rail.NewRouter(append([]rail.Rail{jsonRail, pacsRail}, more...)...)
}

// StartRelayer runs an outbox relayer that delivers to the rail at
// cfg.RailURL until the returned func is called; the func stops claiming,
// lets the rail calls under way finish and records them (for up to the
// relayer's ShutdownTimeout) and returns. hooks run in each outcome
// batch's transaction; metrics may be nil.
func StartRelayer(ctx context.Context, store *postgres.DB, cfg RelayConfig, hooks outbox.Hooks, metrics *outbox.Metrics, log *slog.Logger) (stop func(), err error) {
	timeout := cfg.RailTimeout
	if timeout <= 0 {
		timeout = rail.DefaultTimeout
	}
	sender, err := RailSender(cfg.RailURL, timeout, cfg.Rails...)
	if err != nil {
		return nil, err
	}
	oc := cfg.Relayer
	oc.Pool, oc.Sender, oc.Hooks, oc.Metrics, oc.RailTimeout = store.Pool, sender, hooks, metrics, timeout
	// The event stream's lanes hold at most a quarter of the relayer's
	// calls: the rail's instructions (money) are never queued behind them.
	for _, r := range cfg.Rails {
		if r.Type() == payment.EventRailType {
			if oc.RailConcurrency == nil {
				oc.RailConcurrency = map[string]int{}
			}
			if _, set := oc.RailConcurrency[r.Type()]; !set {
				oc.RailConcurrency[r.Type()] = max(1, cmp.Or(oc.Concurrency, 64)/4)
			}
		}
	}
	oc.Tracer = TracerOf(cfg.TracerProvider, "outbox")
	oc.Logger = log.With("component", "relayer")
	r, err := outbox.New(oc)
	if err != nil {
		return nil, err
	}
	stop = runUntilStopped(ctx, r.Run, log, "outbox relayer")
	log.Info("outbox relayer started", "relayer", r.ID(), "rail_url", redactURL(cfg.RailURL), "rail_types", sender.Types(),
		"rail_timeout", timeout)
	return stop, nil
}

// runUntilStopped runs run in the background until the returned func is
// called, which waits for it to return. Its life is stop's to end, not
// ctx's: on SIGTERM serve drains HTTP first, then stops the relayers,
// which record what they sent before the store closes.
func runUntilStopped(ctx context.Context, run func(context.Context) error, log *slog.Logger, name string) (stop func()) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := run(runCtx); err != nil {
			log.Error(name, "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// RegisterOutboxMetrics registers the relayers' metrics and the outbox's
// depths (read from store at scrape time; claims in flight longer than
// stuckAfter, the reaper's timeout, count as stuck) with reg.
func RegisterOutboxMetrics(reg prometheus.Registerer, store *postgres.DB, stuckAfter time.Duration) *outbox.Metrics {
	reg.MustRegister(outbox.NewDepthCollector(store.Pool, stuckAfter))
	return outbox.NewMetrics(reg)
}

// StartRailSim serves a rail simulator with behaviour b on addr
// ("127.0.0.1:0": any free port) until the returned func is called, and
// returns its base URL. A behaviour railsim refuses is an error.
func StartRailSim(ctx context.Context, addr string, b railsim.Behaviour, log *slog.Logger) (baseURL string, stop func(), err error) {
	opts := railsim.Options{Behaviour: b}
	if err := opts.Validate(); err != nil {
		return "", nil, fmt.Errorf("rail simulator: %w", err)
	}
	sim := railsim.New(opts)
	// Like the relayer, the simulator lives until stop: the relayer's
	// last calls at shutdown still get their answers.
	baseURL, stopSim, err := sim.Start(context.WithoutCancel(ctx), addr)
	if err != nil {
		return "", nil, err
	}
	b = sim.Behaviour()
	log.Info("rail simulator listening", "url", baseURL, "ledger", baseURL+"/ledger",
		"latency", time.Duration(b.Latency), "jitter", time.Duration(b.Jitter), "retryable_fraction", b.RetryableFraction,
		"terminal_fraction", b.TerminalFraction, "timeout_fraction", b.TimeoutFraction, "seed", b.Seed)
	return baseURL, func() {
		stopSim()
		log.Info("rail simulator stopped", "url", baseURL)
	}, nil
}

// redactURL hides a password in a URL for the logs.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// WebhookConfig is the webhook relayer's configuration from its settings.
func WebhookConfig(store *postgres.DB, w config.Webhooks) webhook.Config {
	return webhook.Config{Pool: store.Pool, Policy: WebhookPolicy(w), Timeout: w.Timeout, MaxAttempts: w.MaxAttempts,
		BackoffBase: w.BackoffBase, BackoffMax: w.BackoffMax, PerEndpoint: w.PerEndpoint, MaxInFlight: w.MaxInFlight, Retention: w.Retention}
}

// WebhookPolicy is where the settings let tenants' endpoints point.
func WebhookPolicy(w config.Webhooks) webhook.Policy {
	return webhook.Policy{AllowHTTP: w.AllowHTTP, AllowPrivate: w.AllowPrivate}
}

// StartWebhookRelayer runs a webhook relayer, its metrics on reg, until
// the returned func is called; the func lets the deliveries under way
// finish and records them. It is apart from the rail's relayer: a slow
// endpoint never holds a rail call.
func StartWebhookRelayer(ctx context.Context, cfg webhook.Config, reg prometheus.Registerer, log *slog.Logger) (stop func(), err error) {
	if reg != nil {
		cfg.Metrics = webhook.NewMetrics(reg)
		reg.MustRegister(webhook.NewDepthCollector(cfg.Pool))
	}
	cfg.Logger = log.With("component", "webhooks")
	r, err := webhook.NewRelayer(cfg)
	if err != nil {
		return nil, err
	}
	return runUntilStopped(ctx, r.Run, log, "webhook relayer"), nil
}

// DeadLetters lists and requeues the dispatch queue's and the outbox's
// dead letters; a returned payment's requeue debits it again
// (payment.OutboxHooks), and outbox letters take the payments' rate-limit
// config unless the operator names one.
func DeadLetters(store *postgres.DB) *deadletter.Service {
	return &deadletter.Service{
		DB: store.Pool, Queue: queue.New(store.Pool), Limiter: pacing.New(store.Pool),
		OutboxHooks: payment.OutboxHooks(), OutboxItemType: payment.ItemType,
		OnRequeue: map[string]func(context.Context, pgx.Tx, []string, string) error{payment.ItemType: payment.RequeuedHook},
	}
}
