package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/webhook"
)

// TestRetrySchedule: the default schedule retries a refused delivery
// within a second (a brief 503 is the common refusal, and its payment's
// later events wait behind it), then doubles to the same delays as a 1 s
// base, so the budget before a dead letter is still about half an hour.
// An endpoint's Retry-After is honoured up to BackoffMax.
func TestRetrySchedule(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tt := range []struct {
		name       string
		cfg        webhook.Config
		attempt    int
		retryAfter time.Duration
		jitter     float64
		want       time.Duration
	}{
		{"first retry", webhook.Config{}, 1, 0, 0, ms(125)},
		{"second", webhook.Config{}, 2, 0, 0, ms(250)},
		{"third", webhook.Config{}, 3, 0, 0, ms(500)},
		{"fourth: the old base's first", webhook.Config{}, 4, 0, 0, time.Second},
		{"the last before dead", webhook.Config{}, webhook.DefaultMaxAttempts - 1, 0, 0, 1024 * time.Second},
		{"at most the max", webhook.Config{}, 40, 0, 0, time.Hour},
		{"a fifth off at most (the jitter's bound)", webhook.Config{}, 1, 0, 1, ms(100)},
		{"half the jitter", webhook.Config{}, 4, 0, 0.5, ms(900)},
		{"Retry-After longer than the schedule", webhook.Config{}, 1, 30 * time.Second, 0, 30 * time.Second},
		{"Retry-After shorter: the schedule", webhook.Config{}, 5, time.Second, 0, 2 * time.Second},
		{"Retry-After past the max: the max", webhook.Config{}, 1, 5 * time.Hour, 0, time.Hour},
		{"configured", webhook.Config{BackoffBase: time.Second, BackoffMax: 5 * time.Second}, 3, 0, 0, 4 * time.Second},
		{"configured, capped", webhook.Config{BackoffBase: time.Second, BackoffMax: 5 * time.Second}, 4, 0, 0, 5 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := webhook.RetryDelay(tt.cfg, tt.attempt, tt.retryAfter, tt.jitter); got != tt.want {
				t.Errorf("delay after attempt %d = %v, want %v", tt.attempt, got, tt.want)
			}
		})
	}
	// The budget: every delay before a delivery is dead, with no jitter
	// and with the most.
	var longest, shortest time.Duration
	for a := 1; a < webhook.DefaultMaxAttempts; a++ {
		longest += webhook.RetryDelay(webhook.Config{}, a, 0, 0)
		shortest += webhook.RetryDelay(webhook.Config{}, a, 0, 1)
	}
	if longest < 30*time.Minute || longest > 40*time.Minute || shortest < 27*time.Minute {
		t.Errorf("the default retries span %v to %v before a dead letter, want about half an hour", shortest, longest)
	}
	// The first three retries together take less than a second.
	if got := webhook.RetryDelay(webhook.Config{}, 1, 0, 0) + webhook.RetryDelay(webhook.Config{}, 2, 0, 0) +
		webhook.RetryDelay(webhook.Config{}, 3, 0, 0); got >= time.Second {
		t.Errorf("three refusals in a row cost %v of backoff, want under a second", got)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"30", 30 * time.Second},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{"1.5", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"99999999999999999", (1 << 30) * time.Second},
	} {
		t.Run(tt.header, func(t *testing.T) {
			t.Parallel()
			if got := webhook.RetryAfter(tt.header, now); got != tt.want {
				t.Errorf("RetryAfter(%q) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

// TestRelayerHonoursRetryAfter: an endpoint that answers 503 with
// Retry-After: 30 gets its delivery again no sooner than it asked, though
// the relayer's own schedule would retry after 5 ms.
func TestRelayerHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	ep, _, err := (webhook.NewStore(webhook.StoreConfig{DB: pool, Policy: open})).Register(context.Background(), webhook.NewEndpoint{TenantID: "t-ra", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"id": uuid.New()})
	if _, err := webhook.Publish(context.Background(), pool, []webhook.Event{{TenantID: "t-ra", Subject: "p1", Type: "payment.accepted", Payload: payload}}); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig(pool)
	cfg.BackoffMax = time.Hour
	startRelayer(t, cfg)
	var d webhook.Delivery
	waitFor(t, "the first attempt refused", 10*time.Second, func() bool {
		ds, err := (webhook.NewStore(webhook.StoreConfig{DB: pool})).Deliveries(context.Background(), ep.ID, "", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 1 && ds[0].State == webhook.StatePending && ds[0].Attempts == 1 {
			d = ds[0]
			return true
		}
		return false
	})
	if d.NextAttempt == nil || d.NextAttempt.Before(time.Now().Add(20*time.Second)) {
		t.Errorf("next attempt at %v, want about 30 s from now (Retry-After: 30)", d.NextAttempt)
	}
	if d.LastStatus != http.StatusServiceUnavailable {
		t.Errorf("last status %d, want 503", d.LastStatus)
	}
	time.Sleep(200 * time.Millisecond)
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests within 200 ms, want 1: the retry went before its Retry-After", n)
	}
}
