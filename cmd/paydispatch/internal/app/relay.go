package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/rail"
	"github.com/paydispatch/paydispatch/railsim"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/webhook"
)

// RelayConfig is what StartRelayer needs besides the store.
type RelayConfig struct {
	// RailURL is the process's rail URL: the endpoint of every rail
	// configured without one (DEFAULT's, by default), and of the legacy
	// rail types (rail.RailSEPAJSON, rail.RailPacs008) of instructions
	// enqueued before there were rails.
	RailURL string
	// RailTimeout is the hard timeout of one rail call (default
	// rail.DefaultTimeout). The adapters classify a call cut off by it,
	// and the relayer abandons one that ignores it.
	RailTimeout time.Duration
	// ChargeBearer and DebtorAgentBIC are what pacs.008 rails render
	// (rail.Pacs008Config): ChrgBr (default SLEV), and the DbtrAgt of an
	// instruction that names no debtor BIC, as the payments' never do.
	ChargeBearer, DebtorAgentBIC string
	// Directory finds the rails the outbox's messages name (the RailType
	// of an instruction is its rail's name); nil: the routing table in
	// the store (RailDirectory).
	Directory rail.Directory
	// Relayer tunes the relayer (package outbox documents each knob).
	// StartRelayer sets its Pool, Sender, Hooks, Metrics, Logger,
	// RailTimeout and Tracer; the rest is taken as given, zero fields
	// defaulted.
	Relayer outbox.Config
	// Rails are more rails, served by type beside the legacy two: the
	// Kafka event stream's sender (package kafka), when it is on.
	Rails []rail.Rail
	// TracerProvider, when set (Tracing.TracerProvider), gives each rail
	// call its span (outbox.send, outbox.inquire), the child of the
	// payment's execution, and its traceparent header; nil: none.
	TracerProvider trace.TracerProvider
}

// RailSender is the relayer's Sender: a router that sends each message
// to the rail its RailType names in dir, in that rail's format, at its
// endpoint (none: cfg.RailURL), never at or past the rail's cut-off for
// the instruction's value date; the legacy types to the JSON and the
// pacs.008 rail at cfg.RailURL; cfg.Rails by their types. Each call is
// bounded by cfg.RailTimeout.
func RailSender(cfg RelayConfig, dir rail.Directory) (*rail.Router, error) {
	timeout := cmp.Or(cfg.RailTimeout, rail.DefaultTimeout)
	if timeout < 0 {
		timeout = rail.DefaultTimeout
	}
	jsonRail, err := rail.NewHTTPRail(rail.Config{BaseURL: cfg.RailURL, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	pacsRail, err := rail.NewPacs008Rail(rail.Pacs008Config{Config: rail.Config{BaseURL: cfg.RailURL, Timeout: timeout},
		ChargeBearer: cfg.ChargeBearer, DebtorAgentBIC: cfg.DebtorAgentBIC})
	if err != nil {
		return nil, err
	}
	return rail.NewRouter(rail.RouterConfig{
		Rails:     append([]rail.Rail{jsonRail, pacsRail}, cfg.Rails...),
		Directory: dir, DefaultURL: cfg.RailURL, Timeout: timeout,
		ChargeBearer: cfg.ChargeBearer, DebtorAgentBIC: cfg.DebtorAgentBIC,
	})
}

// RailDirectory is the relayer's view of the rails: the routing table,
// read through rails (a snapshot trusted for a few seconds). A rail
// delivers its instructions whether or not it is active: inactive only
// stops new payments being routed to it. Its cut-off on a value date is
// the rail's business day's (routing.Rail.DayOn), the instant Phase A
// and the execution plan by.
func RailDirectory(rails *routing.Resolver) rail.Directory { return railDirectory{rails: rails} }

type railDirectory struct{ rails *routing.Resolver }

func (d railDirectory) Destination(ctx context.Context, name string) (rail.Destination, bool, error) {
	r, err := d.rails.Rail(ctx, name)
	switch {
	case errors.Is(err, routing.ErrNotFound):
		return rail.Destination{}, false, nil
	case err != nil:
		return rail.Destination{}, false, err
	}
	return Destination(r), true, nil
}

// Destination is where rail r's instructions go (endpoint "": the
// process's rail URL, which the router fills in).
func Destination(r routing.Rail) rail.Destination {
	d := rail.Destination{Name: r.Name, BaseURL: r.Endpoint}
	switch r.Type {
	case routing.TypeSEPAJSON:
		d.Type = rail.RailSEPAJSON
	case routing.TypePACS008:
		d.Type = rail.RailPacs008
	default:
		d.Type = r.Type // the router refuses it: RAIL_MISCONFIGURED
	}
	if r.Cutoff != 0 {
		d.Cutoff = func(valueDate string) (time.Time, bool, error) {
			date, err := calendar.ParseDate(valueDate)
			if err != nil {
				return time.Time{}, false, fmt.Errorf("value date: %w", err)
			}
			day, err := r.DayOn(date)
			if err != nil {
				return time.Time{}, false, err
			}
			return day.Cutoff, !day.Cutoff.IsZero(), nil
		}
	}
	return d
}

// StartRelayer runs an outbox relayer that delivers to the rails until
// the returned func is called; the func stops claiming, lets the rail
// calls under way finish and records them (for up to the relayer's
// ShutdownTimeout) and returns. hooks run in each outcome batch's
// transaction; metrics may be nil.
func StartRelayer(ctx context.Context, store *postgres.DB, cfg RelayConfig, hooks outbox.Hooks, metrics *outbox.Metrics, log *slog.Logger) (stop func(), err error) {
	timeout := cfg.RailTimeout
	if timeout <= 0 {
		timeout = rail.DefaultTimeout
	}
	cfg.RailTimeout = timeout
	dir := cfg.Directory
	if dir == nil {
		if store.Pool == nil {
			return nil, errors.New("relayer: no database to read the rails from")
		}
		rails := Rails(store)
		dir = RailDirectory(rails)
		if cfg.DebtorAgentBIC == "" {
			warnPacs008WithoutDebtorAgent(ctx, rails, log)
		}
	}
	sender, err := RailSender(cfg, dir)
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
		"rails", "by name, from the routing table", "rail_timeout", timeout)
	return stop, nil
}

// warnPacs008WithoutDebtorAgent warns when a PACS008 rail is configured
// and no debtor agent BIC is: every payment it carries would be returned
// INVALID_PAYLOAD, as the payments' instructions name no debtor BIC.
func warnPacs008WithoutDebtorAgent(ctx context.Context, rails *routing.Resolver, log *slog.Logger) {
	all, err := rails.Rails(ctx)
	if err != nil {
		return // the relayer reads them again; its errors say more
	}
	for _, r := range all {
		if r.Type == routing.TypePACS008 {
			log.Warn("rail "+r.Name+" is PACS008 and no debtor agent BIC is set (PAYDISPATCH_PACS008_DEBTOR_AGENT_BIC): its payments will be returned INVALID_PAYLOAD",
				"rail", r.Name)
			return
		}
	}
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

// StartRailSim serves a rail simulator with opts on addr ("127.0.0.1:0":
// any free port) until the returned func is called, and returns its base
// URL (DEFAULT's; rail NAME's is baseURL/rails/NAME). Options railsim
// refuses are an error.
func StartRailSim(ctx context.Context, addr string, opts railsim.Options, log *slog.Logger) (baseURL string, stop func(), err error) {
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
	b := sim.Behaviour()
	log.Info("rail simulator listening", "url", baseURL, "ledger", baseURL+"/ledger", "rails", baseURL+"/rails/{name}",
		"latency", time.Duration(b.Latency), "jitter", time.Duration(b.Jitter), "retryable_fraction", b.RetryableFraction,
		"terminal_fraction", b.TerminalFraction, "timeout_fraction", b.TimeoutFraction, "seed", b.Seed)
	for _, r := range sim.Rails() {
		if r.Cutoff != "" {
			log.Info("rail simulator cut-off", "rail", r.Name, "url", baseURL+"/rails/"+r.Name, "cutoff", r.Cutoff, "time_zone", r.TimeZone)
		}
	}
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
		BackoffBase: w.BackoffBase, BackoffMax: w.BackoffMax, PerEndpoint: w.PerEndpoint, MaxInFlight: w.MaxInFlight}
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
	return deadletter.New(deadletter.Config{
		DB: store.Pool, Queue: queue.New(store.Pool), Limiter: pacing.New(pacing.Config{Pool: store.Pool}),
		OutboxHooks: payment.OutboxHooks(), OutboxItemType: payment.ItemType,
		OnRequeue: map[string]func(context.Context, pgx.Tx, []string, string) error{payment.ItemType: payment.RequeuedHook},
	})
}
