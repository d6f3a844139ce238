package deadletter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/queue"
)

// fixture is a database with an item type whose items die at their
// first failed start, and the service on it.
type fixture struct {
	pool *pgxpool.Pool
	q    *queue.Queue
	lim  *pacing.Limiter
	svc  *deadletter.Service
}

func newFixture(t testing.TB, pool *pgxpool.Pool) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{pool: pool, q: queue.New(pool), lim: pacing.New(pacing.Config{Pool: pool})}
	if _, err := f.lim.PutConfig(ctx, pacing.Limit{Name: "own", MaxPerWindow: 100, Window: time.Second, Headroom: 100}); err != nil {
		t.Fatal(err)
	}
	c := queue.DefaultSettings("JOB", "JobWorkflow", "jobs")
	c.MaxDispatchRetries, c.PacingConfig = 1, "own"
	if _, err := f.q.RegisterItemType(ctx, c); err != nil {
		t.Fatal(err)
	}
	f.svc = deadletter.New(deadletter.Config{DB: pool, Queue: f.q, Limiter: f.lim, OutboxItemType: "JOB"})
	return f
}

// kill enqueues n items of tenant and dead-letters them: claimed, their
// start failed with why, their one retry used.
func (f *fixture) kill(t testing.TB, tenant, why string, n int) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]queue.EnqueueParams, n)
	for i := range ps {
		ids[i] = fmt.Sprintf("%s-%s", tenant, uuid.NewString())
		ps[i] = queue.EnqueueParams{ItemType: "JOB", ItemID: ids[i], TenantID: tenant, ScheduledExecTime: time.Now().Add(-time.Minute)}
	}
	if _, err := f.q.EnqueueBatchTx(ctx, tx, ps); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for left := n; left > 0; {
		b, err := f.q.ClaimBatch(ctx, queue.ClaimParams{ItemType: "JOB", BatchSize: left, PreStartBuffer: time.Minute, MaxRetries: 1})
		if err != nil || len(b.Items) == 0 {
			t.Fatalf("claim: %d items, %v", len(b.Items), err)
		}
		fs := make([]queue.Failure, len(b.Items))
		for i, it := range b.Items {
			fs[i] = queue.Failure{ItemID: it.ID, Error: why}
		}
		if _, err := f.q.ReleaseForRetryBatch(ctx, "JOB", b.ID, fs, 1); err != nil {
			t.Fatal(err)
		}
		left -= len(b.Items)
	}
	return ids
}
