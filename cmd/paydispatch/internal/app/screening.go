package app

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/screening"
)

// ScreeningControls are Phase A's controls for the screening hook as s
// configures it (none when it is off), its metrics on reg (nil: none).
// onError reads a tenant's rule for a payment without an answer (nil:
// its control settings', screeningOnError).
func ScreeningControls(store *postgres.DB, s config.Screening, onError func(ctx context.Context, tenant string) (string, error),
	reg prometheus.Registerer, log *slog.Logger) ([]payment.Control, error) {
	if !s.On() {
		return nil, nil
	}
	var m *screening.Metrics
	if reg != nil {
		m = screening.NewMetrics(reg)
	}
	cl, err := screening.NewClient(screening.ClientConfig{URL: s.URL, BatchSize: s.Batch, Timeout: s.Timeout, MaxInFlight: s.MaxInFlight, Metrics: m})
	if err != nil {
		return nil, err
	}
	if onError == nil {
		settings := payment.NewStore(store.Pool)
		onError = func(ctx context.Context, tenant string) (string, error) {
			rule, err := settings.ScreeningOnError(ctx, tenant)
			return string(rule), err
		}
	}
	c, err := screening.NewControl(screening.ControlConfig{Client: cl, DB: store.Pool, OnError: onError, Metrics: m, Log: log.With("component", "screening")})
	if err != nil {
		return nil, err
	}
	log.Info("screening on", "url", redactURL(s.URL), "timeout", s.Timeout, "batch", s.Batch, "max_in_flight", s.MaxInFlight)
	return []payment.Control{c}, nil
}
