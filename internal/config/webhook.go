package config

import (
	"fmt"
	"strconv"
	"time"
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
	Retention    time.Duration // negative: keep every delivery
}

// WebhookSettings binds w's settings.
func WebhookSettings(w *Webhooks) []*Setting {
	boolean := func(dst *bool) func(string) error {
		return func(v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("want true or false")
			}
			*dst = b
			return nil
		}
	}
	return []*Setting{
		{Flag: "webhook-timeout", Env: "PAYDISPATCH_WEBHOOK_TIMEOUT", Default: "10s",
			Usage: "hard timeout of one webhook delivery; one cut off is retried",
			Parse: func(v string) error {
				d, err := durationIn(v, 100*time.Millisecond, 2*time.Minute)
				w.Timeout = d
				return err
			}},
		{Flag: "webhook-max-attempts", Env: "PAYDISPATCH_WEBHOOK_MAX_ATTEMPTS", Default: "12",
			Usage: "attempts before a webhook delivery is dead-lettered",
			Parse: func(v string) error {
				n, err := intIn(v, 1, 100)
				w.MaxAttempts = n
				return err
			}},
		{Flag: "webhook-backoff-base", Env: "PAYDISPATCH_WEBHOOK_BACKOFF_BASE", Default: "1s",
			Usage: "delay after a webhook delivery's first failure; it doubles with each attempt",
			Parse: func(v string) error {
				d, err := durationIn(v, time.Millisecond, time.Hour)
				w.BackoffBase = d
				return err
			}},
		{Flag: "webhook-backoff-max", Env: "PAYDISPATCH_WEBHOOK_BACKOFF_MAX", Default: "1h",
			Usage: "longest delay between a webhook delivery's attempts",
			Parse: func(v string) error {
				d, err := durationIn(v, time.Millisecond, 24*time.Hour)
				w.BackoffMax = d
				return err
			}},
		{Flag: "webhook-per-endpoint", Env: "PAYDISPATCH_WEBHOOK_PER_ENDPOINT", Default: "4",
			Usage: "webhook deliveries in flight to one endpoint at most: what a slow endpoint can hold",
			Parse: func(v string) error {
				n, err := intIn(v, 1, 256)
				w.PerEndpoint = n
				return err
			}},
		{Flag: "webhook-max-in-flight", Env: "PAYDISPATCH_WEBHOOK_MAX_IN_FLIGHT", Default: "256",
			Usage: "webhook deliveries in flight at most, per relayer",
			Parse: func(v string) error {
				n, err := intIn(v, 1, 10000)
				w.MaxInFlight = n
				return err
			}},
		{Flag: "webhook-retention", Env: "PAYDISPATCH_WEBHOOK_RETENTION", Default: "168h",
			Usage: "how long a delivered webhook's row is kept (dead letters stay until redriven); 0 keeps them all",
			Parse: func(v string) error {
				if v == "0" {
					w.Retention = -1
					return nil
				}
				d, err := durationIn(v, time.Minute, 10*365*24*time.Hour)
				w.Retention = d
				return err
			}},
		{Flag: "webhook-allow-http", Env: "PAYDISPATCH_WEBHOOK_ALLOW_HTTP", Default: "false",
			Usage: "accept http:// webhook URLs (default: https only)", Bool: true, Parse: boolean(&w.AllowHTTP)},
		{Flag: "webhook-allow-private", Env: "PAYDISPATCH_WEBHOOK_ALLOW_PRIVATE", Default: "false",
			Usage: "let webhooks reach loopback and private addresses (default: public addresses only, so a tenant's URL cannot reach paydispatch's own network)",
			Bool:  true, Parse: boolean(&w.AllowPrivate)},
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
