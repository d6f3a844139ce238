package config_test

import (
	"testing"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestWebhookDefaultsAreTheRelayers: with nothing set, the settings give
// the relayer's own defaults, so the commands and the package's
// documentation agree on the retry schedule.
func TestWebhookDefaultsAreTheRelayers(t *testing.T) {
	t.Parallel()
	var w config.Webhooks
	if err := parseWith(nil, nil, config.WebhookSettings(&w)...); err != nil {
		t.Fatal(err)
	}
	if w.MaxAttempts != webhook.DefaultMaxAttempts || w.BackoffBase != webhook.DefaultBackoffBase || w.BackoffMax != webhook.DefaultBackoffMax ||
		w.PerEndpoint != webhook.DefaultPerEndpoint || w.MaxInFlight != webhook.DefaultMaxInFlight {
		t.Errorf("defaults %+v, want the relayer's: %d attempts, backoff %v to %v, %d per endpoint, %d in flight", w,
			webhook.DefaultMaxAttempts, webhook.DefaultBackoffBase, webhook.DefaultBackoffMax, webhook.DefaultPerEndpoint, webhook.DefaultMaxInFlight)
	}
}
