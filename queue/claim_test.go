package queue_test

import (
	"context"
	"encoding/json"
	"errors"

	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/queue"
)

func TestClaimBatch(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	now := time.Now()
	mustEnqueue(t, q, "late", now.Add(-time.Minute))
	mustEnqueue(t, q, "early", now.Add(-time.Hour))
	mustEnqueue(t, q, "in-buffer", now.Add(20*time.Second))
	mustEnqueue(t, q, "future", now.Add(time.Hour))
	mustEnqueue(t, q, "exhausted", now.Add(-time.Hour))
	force(t, pool, "exhausted", queue.StatusReady, "", maxRetries)

	b, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 10, PreStartBuffer: 30 * time.Second, MaxRetries: maxRetries})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range b.Items {
		ids = append(ids, it.ID)
		var c struct{ TaskID string }
		if err := json.Unmarshal(it.Context, &c); err != nil || c.TaskID != it.ID {
			t.Errorf("%s: context not pre-loaded: %s", it.ID, it.Context)
		}
		if it.ContextVersion != 1 || it.TenantID != "acme" || it.InitWorkflowID != "init-"+it.ID || it.ClaimedAt.IsZero() {
			t.Errorf("%s: claimed item incomplete: %+v", it.ID, it)
		}
		stored := mustGet(t, q, it.ID)
		if stored.Status != queue.StatusClaimed || stored.DispatchBatchID != b.ID || stored.ClaimedAt == nil {
			t.Errorf("%s: row not claimed by %s: %+v", it.ID, b.ID, stored)
		}
	}
	want := []string{"early", "late", "in-buffer"}
	if len(ids) != len(want) {
		t.Fatalf("claimed %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("claimed %v, want %v (oldest first)", ids, want)
		}
	}
	for _, id := range []string{"future", "exhausted"} {
		if s := mustGet(t, q, id).Status; s != queue.StatusReady {
			t.Errorf("%s: %s, want READY", id, s)
		}
	}
	if n := claimedBy(t, pool, b.ID); n != 3 {
		t.Fatalf("items in batch: %d", n)
	}

	// Nothing left that is due: an empty batch.
	b2, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 10, PreStartBuffer: 30 * time.Second, MaxRetries: maxRetries})
	if err != nil || len(b2.Items) != 0 {
		t.Fatalf("second claim: %d items, %v", len(b2.Items), err)
	}
}

func TestClaimBatchValidation(t *testing.T) {
	t.Parallel()
	q, _ := newQueue(t)
	for _, p := range []queue.ClaimParams{
		{ItemType: "", BatchSize: 1, MaxRetries: 1},
		{ItemType: itemType, BatchSize: 0, MaxRetries: 1},
		{ItemType: itemType, BatchSize: queue.MaxBatchSize + 1, MaxRetries: 1},
		{ItemType: itemType, BatchSize: 1, MaxRetries: 0},
		{ItemType: itemType, BatchSize: 1, MaxRetries: 1, PreStartBuffer: -time.Second},
	} {
		if _, err := q.ClaimBatch(context.Background(), p); err == nil {
			t.Errorf("ClaimBatch(%+v) accepted", p)
		}
	}
}

// TestConcurrentClaims: 8 goroutines claim from 50,000 READY items; every
// item is claimed exactly once and none is lost.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	const total, claimers = 50_000, 8
	bulkReady(t, pool, total, "c-")

	var (
		mu      sync.Mutex
		owner   = make(map[string]string, total) // item → batch
		dupes   []string
		wg      sync.WaitGroup
		errOnce sync.Once
		failure error
	)
	for w := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := 200 + 50*w // uneven batches interleave more
			for {
				b, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: size, MaxRetries: 3})
				if err != nil {
					errOnce.Do(func() { failure = err })
					return
				}
				if len(b.Items) == 0 {
					return
				}
				mu.Lock()
				for _, it := range b.Items {
					if prev, ok := owner[it.ID]; ok {
						dupes = append(dupes, it.ID+" in "+prev+" and "+b.ID)
					}
					owner[it.ID] = b.ID
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	if len(dupes) > 0 {
		t.Fatalf("%d items claimed twice, e.g. %s", len(dupes), dupes[0])
	}
	if len(owner) != total {
		t.Fatalf("claimed %d distinct items, want %d", len(owner), total)
	}
	// The database agrees: every row CLAIMED by the batch that returned it.
	rows, err := pool.Query(ctx, `SELECT item_id, queue_status, dispatch_batch_id FROM exec_queue`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, status, batch string
		if err := rows.Scan(&id, &status, &batch); err != nil {
			t.Fatal(err)
		}
		n++
		if status != string(queue.StatusClaimed) || owner[id] != batch {
			t.Fatalf("%s: %s by %s, returned to %s", id, status, batch, owner[id])
		}
	}
	if n != total {
		t.Fatalf("%d rows, want %d", n, total)
	}
	// One audit row per batch, counting its items.
	var audited, batches int
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(split_part(detail, '=', 2)::int), 0), count(DISTINCT batch_id)
		FROM dispatch_audit_log WHERE action = 'CLAIMED' AND item_id IS NULL`).Scan(&audited, &batches); err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for _, b := range owner {
		distinct[b] = true
	}
	if audited != total || batches != len(distinct) {
		t.Fatalf("claim audit: %d items in %d batches, want %d in %d", audited, batches, total, len(distinct))
	}
}

func TestFindStaleClaimsAndRecover(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	for _, id := range []string{"old", "older", "fresh"} {
		mustEnqueue(t, q, id, time.Now())
		force(t, pool, id, queue.StatusClaimed, "B-"+id, 0)
	}
	if _, err := pool.Exec(ctx, `UPDATE exec_queue SET claimed_at = now() - interval '10 minutes' WHERE item_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE exec_queue SET claimed_at = now() - interval '20 minutes' WHERE item_id = 'older'`); err != nil {
		t.Fatal(err)
	}
	stale, err := q.FindStaleClaims(ctx, itemType, 2*time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 2 || stale[0].ID != "older" || stale[1].ID != "old" {
		t.Fatalf("stale = %+v, want older, old", stale)
	}
	if capped, _ := q.FindStaleClaims(ctx, itemType, 2*time.Minute, 1); len(capped) != 1 {
		t.Fatalf("limit not applied: %d", len(capped))
	}
	res, err := q.RecoverStale(ctx, itemType, stale[0].DispatchBatchID, []queue.Failure{{ItemID: "older", Error: "stale claim"}}, 3)
	if err != nil || len(res.Moved) != 1 || res.Moved[0].Status != queue.StatusReady {
		t.Fatalf("recover: %+v %v", res, err)
	}
	trail := auditTrail(t, pool, "older")
	if last := trail[len(trail)-1]; last.Action != "STALE_RECOVERY" || last.StatusAfter != queue.StatusReady {
		t.Fatalf("recovery audit = %+v", last)
	}
}

func TestDepth(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	d, err := q.Depth(ctx, itemType)
	if err != nil || d.OldestReady != nil || d.ByStatus[queue.StatusReady] != 0 {
		t.Fatalf("empty depth: %+v %v", d, err)
	}
	oldest := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	mustEnqueue(t, q, "a", oldest)
	mustEnqueue(t, q, "b", time.Now())
	mustEnqueue(t, q, "c", oldest.Add(-time.Hour))
	force(t, pool, "c", queue.StatusDeadLetter, "", 3)
	d, err = q.Depth(ctx, itemType)
	if err != nil {
		t.Fatal(err)
	}
	if d.ByStatus[queue.StatusReady] != 2 || d.ByStatus[queue.StatusDeadLetter] != 1 || d.ByStatus[queue.StatusClaimed] != 0 {
		t.Fatalf("depth = %+v", d.ByStatus)
	}
	if d.OldestReady == nil || !d.OldestReady.Equal(oldest) {
		t.Fatalf("oldest ready = %v, want %v", d.OldestReady, oldest)
	}
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	err := q.WriteAudit(ctx, []queue.AuditEntry{
		{BatchID: "B1", ItemType: itemType, Action: "BATCH_COMPLETE", Detail: "dispatched=2 failed=0"},
		{BatchID: "B1", ItemType: itemType, ItemID: "x", Action: "NOTE", StatusBefore: queue.StatusClaimed, StatusAfter: queue.StatusDispatched},
	})
	if err != nil {
		t.Fatal(err)
	}
	trail := auditTrail(t, pool, "x")
	if len(trail) != 1 || trail[0].StatusAfter != queue.StatusDispatched || trail[0].BatchID != "B1" {
		t.Fatalf("trail = %+v", trail)
	}
	if err := q.WriteAudit(ctx, []queue.AuditEntry{{ItemType: itemType}}); err == nil {
		t.Fatal("an audit entry without an action was accepted")
	}
	// Insert-only: history cannot be rewritten.
	if _, err := pool.Exec(ctx, `UPDATE dispatch_audit_log SET action = 'FORGED'`); err == nil {
		t.Fatal("audit log accepted an UPDATE")
	}
}

// TestRegisterItemType: a type is registered once with its defaults; a
// second registration keeps the settings it has (an operator's changes),
// and a type without its workflow or task queue is refused.
func TestRegisterItemType(t *testing.T) {
	t.Parallel()
	q, _ := newQueue(t) // registers itemType
	ctx := context.Background()
	cfg, err := q.GetConfig(ctx, itemType)
	if err != nil {
		t.Fatal(err)
	}
	want := taskConfig()
	want.CreatedAt, want.UpdatedAt = cfg.CreatedAt, cfg.UpdatedAt
	if cfg != want {
		t.Fatalf("%s config = %+v\nwant %+v", itemType, cfg, want)
	}
	if _, err := q.UpdateConfig(ctx, itemType, map[string]string{"batch_size": "42"}); err != nil {
		t.Fatal(err)
	}
	again := taskConfig()
	again.BatchSize = 7
	if created, err := q.RegisterItemType(ctx, again); err != nil || created {
		t.Fatalf("second registration: created %t, %v", created, err)
	}
	if cfg, _ := q.GetConfig(ctx, itemType); cfg.BatchSize != 42 {
		t.Fatalf("batch size %d after a second registration, want the operator's 42", cfg.BatchSize)
	}
	for _, bad := range []queue.Settings{
		queue.DefaultSettings("", "W", "Q"), queue.DefaultSettings("X", "", "Q"), queue.DefaultSettings("X", "W", ""),
	} {
		var invalid *field.Invalid
		if _, err := q.RegisterItemType(ctx, bad); !errors.Is(err, queue.ErrInvalidConfig) || !errors.As(err, &invalid) || len(invalid.Fields) != 1 {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming the missing setting", bad, err)
		}
	}
	if _, err := q.GetConfig(ctx, "NOPE"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("unknown item type: %v", err)
	}
}

func TestUpdateConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		changes map[string]string
		wantErr string
		check   func(queue.Settings) bool
	}{
		{"kill switch", map[string]string{"enabled": "false"}, "", func(c queue.Settings) bool { return !c.Enabled && c.BatchSize == 500 }},
		{"several", map[string]string{"batch_size": "1000", "jitter_window_ms": "8000", "exec_task_queue": "q2"}, "",
			func(c queue.Settings) bool {
				return c.BatchSize == 1000 && c.JitterWindow == 8*time.Second && c.ExecTaskQueue == "q2" && c.Enabled
			}},
		{"paced lead", map[string]string{"paced_lead_ms": "1500"}, "", func(c queue.Settings) bool { return c.PacedLead == 1500*time.Millisecond }},
		{"paced lead out of range", map[string]string{"paced_lead_ms": "60001"}, `paced_lead_ms: "60001": want a whole number from 0 to 60000`, nil},
		{"exec mode", map[string]string{"exec_mode": "BATCH"}, "", func(c queue.Settings) bool { return c.Batched() }},
		{"exec mode unknown", map[string]string{"exec_mode": "batch"}, `exec_mode: "batch": want PER_ITEM or BATCH`, nil},
		{"unknown key", map[string]string{"speed": "fast"}, "speed: unknown setting", nil},
		{"out of range", map[string]string{"batch_size": "0"}, `batch_size: "0": want a whole number from 1 to 10000`, nil},
		{"not a bool", map[string]string{"enabled": "maybe"}, `enabled: "maybe": want true or false`, nil},
		{"empty name", map[string]string{"exec_workflow_type": " "}, "exec_workflow_type: want a non-empty name", nil},
		{"one bad among good", map[string]string{"batch_size": "10", "max_dispatch_retries": "0"}, `max_dispatch_retries: "0"`, nil},
		{"nothing", map[string]string{}, "no settings given", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, _ := newQueue(t)
			ctx := context.Background()
			before, _ := q.GetConfig(ctx, itemType)
			got, err := q.UpdateConfig(ctx, itemType, tt.changes)
			if tt.wantErr != "" {
				if !errors.Is(err, queue.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				// The refusal names the setting, for the API's problem.
				var invalid *field.Invalid
				for key, value := range tt.changes {
					if len(tt.changes) == 1 && (!errors.As(err, &invalid) || !invalid.Has(key)) {
						t.Fatalf("err = %#v, want a *field.Invalid naming %s (%s)", err, key, value)
					}
				}
				if after, _ := q.GetConfig(ctx, itemType); after != before {
					t.Fatalf("a refused change changed the config: %+v", after)
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Fatalf("got %+v, %v", got, err)
			}
			if stored, _ := q.GetConfig(ctx, itemType); stored != got || !stored.UpdatedAt.After(before.UpdatedAt) {
				t.Fatalf("stored %+v", stored)
			}
		})
	}
	q, _ := newQueue(t)
	if _, err := q.UpdateConfig(context.Background(), "NOPE", map[string]string{"enabled": "false"}); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("unknown item type: %v", err)
	}
}

func TestClaimBatchMaxInFlight(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	now := time.Now()
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		mustEnqueue(t, q, id, now.Add(-time.Minute))
	}
	force(t, pool, "a", queue.StatusDispatched, "B-old", 0)
	force(t, pool, "b", queue.StatusClaimed, "B-old", 0)
	params := queue.ClaimParams{ItemType: itemType, BatchSize: 10, PreStartBuffer: time.Minute, MaxRetries: maxRetries, MaxInFlight: 4}

	// 2 in flight under a cap of 4: room for 2 of the 4 due.
	b, err := q.ClaimBatch(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Items) != 2 || b.InFlight != 2 || b.AtCapacity {
		t.Fatalf("claimed %d (in flight %d, at capacity %t), want 2 (2, false)", len(b.Items), b.InFlight, b.AtCapacity)
	}
	// Now 4 in flight: nothing more, and the rest stay READY.
	b, err = q.ClaimBatch(ctx, params)
	if err != nil || len(b.Items) != 0 || !b.AtCapacity || b.InFlight != 4 {
		t.Fatalf("at the cap: claimed %d, in flight %d, at capacity %t, %v", len(b.Items), b.InFlight, b.AtCapacity, err)
	}
	var ready int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM exec_queue WHERE item_type = $1 AND queue_status = 'READY'`, itemType).Scan(&ready); err != nil || ready != 2 {
		t.Fatalf("READY = %d, want 2 (%v)", ready, err)
	}
	// One settles: room for one more.
	force(t, pool, "a", queue.StatusCompleted, "B-old", 0)
	b, err = q.ClaimBatch(ctx, params)
	if err != nil || len(b.Items) != 1 {
		t.Fatalf("after one settled: claimed %d, %v; want 1", len(b.Items), err)
	}
	// No cap: everything due.
	params.MaxInFlight = 0
	b, err = q.ClaimBatch(ctx, params)
	if err != nil || len(b.Items) != 1 || b.InFlight != 0 {
		t.Fatalf("uncapped: claimed %d, in flight %d, %v; want 1, 0", len(b.Items), b.InFlight, err)
	}
}
