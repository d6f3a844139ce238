package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/paydispatch/paydispatch/webhook"
)

// Webhooks tunes webhook delivery (package webhook documents each knob)
// and where tenants' endpoints may point.
type Webhooks struct {
	Timeout      time.Duration
	MaxAttempts  int
	BackoffBase  time.Duration
	BackoffMax   time.Duration
	PerEndpoint  int
	MaxInFlight  int
	AllowHTTP    bool
	AllowPrivate bool
}

// WebhookSettings binds w's settings.
func WebhookSettings(w *Webhooks) []*Setting {
	return []*Setting{
		DurationVar("webhook-timeout", "PAYDISPATCH_WEBHOOK_TIMEOUT", "10s", 100*time.Millisecond, 2*time.Minute,
			"hard timeout of one webhook delivery; one cut off is retried", &w.Timeout),
		IntVar("webhook-max-attempts", "PAYDISPATCH_WEBHOOK_MAX_ATTEMPTS", strconv.Itoa(webhook.DefaultMaxAttempts), 1, 100,
			"attempts before a webhook delivery is dead-lettered", &w.MaxAttempts),
		DurationVar("webhook-backoff-base", "PAYDISPATCH_WEBHOOK_BACKOFF_BASE", webhook.DefaultBackoffBase.String(), time.Millisecond, time.Hour,
			"delay after a webhook delivery's first failure; it doubles with each attempt", &w.BackoffBase),
		DurationVar("webhook-backoff-max", "PAYDISPATCH_WEBHOOK_BACKOFF_MAX", "1h", time.Millisecond, 24*time.Hour,
			"longest delay between a webhook delivery's attempts, and the most an endpoint's Retry-After is waited for", &w.BackoffMax),
		IntVar("webhook-per-endpoint", "PAYDISPATCH_WEBHOOK_PER_ENDPOINT", "32", 1, 256,
			"webhook deliveries in flight to one endpoint at most: what a slow endpoint can hold", &w.PerEndpoint),
		IntVar("webhook-max-in-flight", "PAYDISPATCH_WEBHOOK_MAX_IN_FLIGHT", "1024", 1, 10000,
			"webhook deliveries in flight at most, per relayer", &w.MaxInFlight),
		// Renamed when the retention cleaner took over the relayers'
		// purge: a value set for the old name fails the start rather than
		// being ignored.
		{Flag: "webhook-retention", Env: "PAYDISPATCH_WEBHOOK_RETENTION",
			Usage: "renamed: use --retention-webhook-delivered",
			Parse: func(v string) error {
				if v != "" {
					return fmt.Errorf("renamed: set PAYDISPATCH_RETENTION_WEBHOOK_DELIVERED (--retention-webhook-delivered) instead")
				}
				return nil
			}},
		BoolVar("webhook-allow-http", "PAYDISPATCH_WEBHOOK_ALLOW_HTTP", "false",
			"accept http:// webhook URLs (default: https only)", &w.AllowHTTP),
		BoolVar("webhook-allow-private", "PAYDISPATCH_WEBHOOK_ALLOW_PRIVATE", "false",
			"let webhooks reach loopback and private addresses (default: public addresses only, so a tenant's URL cannot reach paydispatch's own network)", &w.AllowPrivate),
	}
}

// Check reports webhook settings that are fine one by one but not
// together, in one line naming them and the fix.
func (w Webhooks) Check() error {
	if w.BackoffBase > w.BackoffMax {
		return fmt.Errorf("--webhook-backoff-base %s (PAYDISPATCH_WEBHOOK_BACKOFF_BASE) is above --webhook-backoff-max %s (PAYDISPATCH_WEBHOOK_BACKOFF_MAX): lower the base or raise the max", w.BackoffBase, w.BackoffMax)
	}
	if w.PerEndpoint > w.MaxInFlight {
		return fmt.Errorf("--webhook-per-endpoint %d (PAYDISPATCH_WEBHOOK_PER_ENDPOINT) is above --webhook-max-in-flight %d (PAYDISPATCH_WEBHOOK_MAX_IN_FLIGHT): lower it or raise the max", w.PerEndpoint, w.MaxInFlight)
	}
	return nil
}
