package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/retention"
	"github.com/paydispatch/paydispatch/webhook"
)

// MoneyTables are the money records paydispatch keeps for ever, with
// the accounts, limits and rates they refer to (docs/operating.md,
// Records a payment platform must keep). Every other table is history
// bounded by a retention policy, working state its package deletes, or
// configuration: what a steady-state benchmark expects to stay flat.
var MoneyTables = []string{
	"payments", "payment_keys", "payment_booking", "account_transaction", "limit_booking", "limit_window", "fx_contract",
	"payment_batches", "payment_batch_parts", "payment_batch_pain001", "admin_audit",
	"account", "account_limit", "fx_rate",
}

// FingerprintGrace is how long a duplicate fingerprint outlives its
// window before the cleaner deletes it: an expired one matches nothing,
// so any margin is safe; an hour keeps the deletes off the window's edge.
const FingerprintGrace = time.Hour

// RetentionPolicies are the tables the retention cleaner bounds, each
// with its setting. Every other table is a money record or working state
// deleted by its own package (docs/operating.md, Retention).
func RetentionPolicies(store *postgres.DB, r config.Retention) []retention.Policy {
	q := queue.New(store.Pool)
	pool := store.Pool
	return []retention.Policy{
		{Table: "exec_queue", Keep: r.QueueCompleted, Delete: q.DeleteCompleted},
		{Table: "dispatch_audit_log", Keep: r.DispatchAudit, Delete: q.DeleteAudit},
		{Table: "process_instance", Keep: r.ProcessEnded, Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return process.DeleteEnded(ctx, pool, before, limit)
		}},
		{Table: "payment_outbox_keys", Keep: r.OutboxDone, Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return outbox.DeleteDone(ctx, pool, before, limit)
		}},
		{Table: "pacing_slot", Keep: r.Pacing, Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return pacing.DeleteSlots(ctx, pool, before, limit)
		}},
		{Table: "pacing_window", Keep: r.Pacing, Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return pacing.DeleteWindows(ctx, pool, before, limit)
		}},
		{Table: "webhook_deliveries", Keep: r.WebhookDelivered, Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return webhook.DeleteDelivered(ctx, pool, before, limit)
		}},
		{Table: "payment_notifications", Keep: r.PaymentNotifications, Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return payment.DeleteNotifications(ctx, pool, before, limit)
		}},
		{Table: "payment_file_fingerprints", Keep: r.FileFingerprints, Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return payment.DeleteFileFingerprints(ctx, pool, before, limit)
		}},
		// A fingerprint is kept its window (the tenant's duplicateWindowDays
		// when it was written), and FingerprintGrace past it.
		{Table: "payment_fingerprint", Keep: FingerprintGrace, Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			return payment.DeleteFingerprints(ctx, pool, before, limit)
		}},
	}
}

// StartRetention runs the retention cleaner: a round at once and every
// r.Interval (0: retention.DefaultInterval), one process's round at a
// time whatever runs it (serve, or a worker's dispatch role); its metrics on reg (nil: none). The returned
// func stops it, cutting a batch short: the next round finishes it.
func StartRetention(store *postgres.DB, r config.Retention, reg prometheus.Registerer, log *slog.Logger) (func(), error) {
	c, err := retention.New(retention.Config{Pool: store.Pool, Policies: RetentionPolicies(store, r),
		Interval: r.Interval, Registerer: reg, Logger: log.With("component", "retention")})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	log.Info("retention cleaner started", "queue_completed", r.QueueCompleted, "dispatch_audit", r.DispatchAudit,
		"process_ended", r.ProcessEnded, "outbox_done", r.OutboxDone, "pacing", r.Pacing,
		"webhook_delivered", r.WebhookDelivered, "payment_notifications", r.PaymentNotifications, "file_fingerprints", r.FileFingerprints, "interval", r.Interval)
	return func() { cancel(); <-done }, nil
}
