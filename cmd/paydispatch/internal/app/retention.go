package app

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/retention"
)

// RetentionPolicies are the tables the retention cleaner bounds, each
// with its setting.
func RetentionPolicies(store *postgres.DB, r config.Retention) []retention.Policy {
	q := queue.New(store.Pool)
	return []retention.Policy{
		{Table: "exec_queue", Keep: r.QueueCompleted, Delete: q.DeleteCompleted},
		{Table: "dispatch_audit_log", Keep: r.DispatchAudit, Delete: q.DeleteAudit},
	}
}

// StartRetention runs the retention cleaner: a round at once and every
// minute, one process's round at a time whatever runs it (serve, or a
// worker's dispatch role); its metrics on reg (nil: none). The returned
// func stops it, cutting a batch short: the next round finishes it.
func StartRetention(store *postgres.DB, r config.Retention, reg prometheus.Registerer, log *slog.Logger) (func(), error) {
	c, err := retention.New(retention.Config{Pool: store.Pool, Policies: RetentionPolicies(store, r),
		Registerer: reg, Logger: log.With("component", "retention")})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	log.Info("retention cleaner started", "queue_completed", r.QueueCompleted, "dispatch_audit", r.DispatchAudit)
	return func() { cancel(); <-done }, nil
}
