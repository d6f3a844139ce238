package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

func enqueueFor(t *testing.T, q *queue.Queue, tenant string, n int, due time.Time) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s-%05d", tenant, i)
		if _, err := q.SaveContextAndEnqueue(context.Background(), queue.EnqueueParams{
			ItemType: itemType, ItemID: id, TenantID: tenant, ScheduledExecTime: due.Add(time.Duration(i) * time.Millisecond),
			Context: json.RawMessage(`{}`),
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func bulkFor(t *testing.T, pool *pgxpool.Pool, tenant string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO exec_context (item_type, item_id, context)
		SELECT $1, $2 || '-' || g, '{}'::jsonb FROM generate_series(1, $3) g`, itemType, tenant, n); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO exec_queue (item_type, item_id, tenant_id, scheduled_exec_time)
		SELECT $1, $2 || '-' || g, $2, now() - interval '1 hour' + g * interval '1 millisecond' FROM generate_series(1, $3) g`, itemType, tenant, n); err != nil {
		t.Fatal(err)
	}
}

func perTenant(b queue.Batch) map[string]int {
	m := map[string]int{}
	for _, it := range b.Items {
		m[it.TenantID]++
	}
	return m
}

// TestFairClaim: a tenant with 10 due items beside one with 50,000 older
// ones gets all 10 into the first batch.
func TestFairClaim(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	bulkFor(t, pool, "big", 50_000)
	enqueueFor(t, q, "small", 10, time.Now().Add(-time.Second)) // younger than all of big's
	if _, err := pool.Exec(ctx, "ANALYZE exec_queue"); err != nil {
		t.Fatal(err)
	}
	p := queue.ClaimParams{ItemType: itemType, BatchSize: 100, MaxRetries: 3}
	b, err := q.ClaimBatch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	got := perTenant(b)
	if len(b.Items) != 100 || got["small"] != 10 || got["big"] != 90 {
		t.Fatalf("fair batch = %v (%d items)", got, len(b.Items))
	}
	// With caps configured, the in-flight count must not scan either.
	if _, err := q.SetTenantCapacity(ctx, queue.TenantCapacity{ItemType: itemType, TenantID: "big", MaxInFlight: 1000}); err != nil {
		t.Fatal(err)
	}
	plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
		_, err := queue.New(tx).ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 100, MaxRetries: 3})
		return err
	})
	if !strings.Contains(plan, "exec_queue_tenant_ready_idx") || strings.Contains(plan, "Seq Scan on exec_queue") {
		t.Fatalf("fair claim plans:\n%s", plan)
	}
}

// TestTenantCaps: a tenant at its cap gets nothing more until an item
// finishes; held-back items stay READY with their retries untouched; the
// default cap applies to tenants without their own.
func TestTenantCaps(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	due := time.Now().Add(-time.Minute)
	enqueueFor(t, q, "basic", 10, due)
	enqueueFor(t, q, "premium", 10, due)
	enqueueFor(t, q, "other", 10, due)
	for _, c := range []queue.TenantCapacity{
		{ItemType: itemType, TenantID: "basic", MaxInFlight: 1, Tier: "BASIC"},
		{ItemType: itemType, TenantID: "premium", MaxInFlight: 5, Tier: "PREMIUM"},
		{ItemType: itemType, TenantID: queue.DefaultTenant, MaxInFlight: 2},
	} {
		if _, err := q.SetTenantCapacity(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	p := queue.ClaimParams{ItemType: itemType, BatchSize: 100, MaxRetries: 3}
	b, err := q.ClaimBatch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := perTenant(b); got["basic"] != 1 || got["premium"] != 5 || got["other"] != 2 {
		t.Fatalf("first batch = %v", got)
	}
	// Dispatched items still count.
	var ds []queue.Dispatch
	for _, it := range b.Items {
		ds = append(ds, queue.Dispatch{ItemID: it.ID, ExecWorkflowID: "w-" + it.ID})
	}
	if _, err := q.MarkDispatchedBatch(ctx, itemType, b.ID, ds); err != nil {
		t.Fatal(err)
	}
	if b, err := q.ClaimBatch(ctx, p); err != nil || len(b.Items) != 0 {
		t.Fatalf("claim at the caps: %v, %v", perTenant(b), err)
	}
	// One of basic's finishes: basic has room for one more.
	var basicDone string
	for _, it := range b.Items {
		if it.TenantID == "basic" {
			basicDone = it.ID
		}
	}
	if err := markCompleted(ctx, q, itemType, basicDone); err != nil {
		t.Fatal(err)
	}
	b3, err := q.ClaimBatch(ctx, p)
	if err != nil || len(b3.Items) != 1 || b3.Items[0].TenantID != "basic" {
		t.Fatalf("after one finished: %v, %v", perTenant(b3), err)
	}
	var held, retried int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE retry_count > 0) FROM exec_queue WHERE queue_status = 'READY'`).Scan(&held, &retried); err != nil {
		t.Fatal(err)
	}
	if held != 30-1-5-2-1 || retried != 0 {
		t.Fatalf("held back %d (retried %d), want %d READY untouched", held, retried, 30-9)
	}
	caps, err := q.ListTenantCapacity(ctx, itemType)
	if err != nil || len(caps) != 3 {
		t.Fatalf("caps = %+v %v", caps, err)
	}
	if _, err := q.SetTenantCapacity(ctx, queue.TenantCapacity{ItemType: itemType, TenantID: "x", MaxInFlight: 0}); err == nil {
		t.Fatal("cap 0 accepted")
	}
}
