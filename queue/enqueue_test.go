package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/queue"
)

func TestSaveContextAndEnqueue(t *testing.T) {
	t.Parallel()
	due := time.Now().Add(time.Hour)
	tests := []struct {
		name       string
		first      func(p queue.EnqueueParams) queue.EnqueueParams // nil: nothing enqueued before
		prepare    func(t *testing.T, q *queue.Queue, pool *pgxpool.Pool)
		second     func(p queue.EnqueueParams) queue.EnqueueParams
		wantErr    error
		want       queue.EnqueueResult
		wantCtx    string // the stored context afterwards, "" for none
		wantAudits int
	}{
		{
			name:       "new item",
			second:     same,
			want:       queue.EnqueueResult{Enqueued: true, Status: queue.StatusReady},
			wantCtx:    `{"size": 10, "taskId": "x"}`,
			wantAudits: 1,
		},
		{
			name:       "replay with the same context is a no-op",
			first:      same,
			second:     same,
			want:       queue.EnqueueResult{Enqueued: false, Status: queue.StatusReady},
			wantCtx:    `{"size": 10, "taskId": "x"}`,
			wantAudits: 1,
		},
		{
			name:  "replay with the same JSON in another key order is a no-op",
			first: same,
			second: func(p queue.EnqueueParams) queue.EnqueueParams {
				p.Context = json.RawMessage(`{ "taskId":"x", "size":10 }`)
				return p
			},
			want:       queue.EnqueueResult{Enqueued: false, Status: queue.StatusReady},
			wantCtx:    `{"size": 10, "taskId": "x"}`,
			wantAudits: 1,
		},
		{
			name:  "same id with another context conflicts",
			first: same,
			second: func(p queue.EnqueueParams) queue.EnqueueParams {
				p.Context = json.RawMessage(`{"taskId":"x","size":99}`)
				return p
			},
			wantErr:    queue.ErrConflict,
			wantCtx:    `{"size": 10, "taskId": "x"}`,
			wantAudits: 1,
		},
		{
			name:  "same id with another schedule conflicts",
			first: same,
			second: func(p queue.EnqueueParams) queue.EnqueueParams {
				p.ScheduledExecTime = p.ScheduledExecTime.Add(time.Minute)
				return p
			},
			wantErr:    queue.ErrConflict,
			wantCtx:    `{"size": 10, "taskId": "x"}`,
			wantAudits: 1,
		},
		{
			name:  "same id with another context version conflicts",
			first: same,
			second: func(p queue.EnqueueParams) queue.EnqueueParams {
				p.ContextVersion = 2
				return p
			},
			wantErr:    queue.ErrConflict,
			wantCtx:    `{"size": 10, "taskId": "x"}`,
			wantAudits: 1,
		},
		{
			name:  "replay after completion does not revive the item",
			first: same,
			prepare: func(t *testing.T, q *queue.Queue, pool *pgxpool.Pool) {
				force(t, pool, "x", queue.StatusDispatched, "B", 0)
				if err := markCompleted(context.Background(), q, itemType, "x"); err != nil {
					t.Fatal(err)
				}
			},
			second:     same,
			want:       queue.EnqueueResult{Enqueued: false, Status: queue.StatusCompleted},
			wantCtx:    "",
			wantAudits: 2,
		},
		{
			name:    "invalid JSON context is refused",
			second:  func(p queue.EnqueueParams) queue.EnqueueParams { p.Context = json.RawMessage(`{"a":`); return p },
			wantErr: errAny,
		},
		{
			name:    "missing item id is refused",
			second:  func(p queue.EnqueueParams) queue.EnqueueParams { p.ItemID = ""; return p },
			wantErr: errAny,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, pool := newQueue(t)
			ctx := context.Background()
			base := enqueueParams("x", due)
			if tt.first != nil {
				if _, err := q.SaveContextAndEnqueue(ctx, tt.first(base)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.prepare != nil {
				tt.prepare(t, q, pool)
			}
			var before queue.Item
			if tt.first != nil {
				before = mustGet(t, q, "x")
			}
			got, err := q.SaveContextAndEnqueue(ctx, tt.second(base))
			switch {
			case tt.wantErr == errAny && err == nil:
				t.Fatalf("want an error, got %+v", got)
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantErr == nil && got != tt.want:
				t.Fatalf("result = %+v, want %+v", got, tt.want)
			}
			if tt.wantErr == errAny {
				var n int
				_ = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM exec_queue) + (SELECT count(*) FROM exec_context)`).Scan(&n)
				if n != 0 {
					t.Fatalf("refused enqueue wrote %d rows", n)
				}
				return
			}
			var stored string
			_ = pool.QueryRow(ctx, `SELECT context::text FROM exec_context WHERE item_id = 'x'`).Scan(&stored)
			if stored != tt.wantCtx {
				t.Errorf("stored context = %q, want %q", stored, tt.wantCtx)
			}
			if n := auditCount(t, pool, "x"); n != tt.wantAudits {
				t.Errorf("audit rows = %d, want %d", n, tt.wantAudits)
			}
			if tt.first != nil {
				if after := mustGet(t, q, "x"); !reflect.DeepEqual(after, before) {
					t.Errorf("replay changed the row:\n before %+v\n after  %+v", before, after)
				}
			}
		})
	}
}

var errAny = errors.New("any error")

func same(p queue.EnqueueParams) queue.EnqueueParams { return p }

// TestEnqueueInCallerTransaction: a replay inside the caller's transaction
// leaves that transaction usable and its own writes intact.
func TestEnqueueInCallerTransaction(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	p := enqueueParams("tx-1", time.Now())
	mustEnqueue(t, q, "tx-1", p.ScheduledExecTime)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO dispatch_audit_log (item_type, item_id, action) VALUES ('TASK', 'marker', 'TEST')`); err != nil {
		t.Fatal(err)
	}
	res, err := q.SaveContextAndEnqueueTx(ctx, tx, p)
	if err != nil || res.Enqueued {
		t.Fatalf("replay in tx: %+v %v", res, err)
	}
	p2 := enqueueParams("tx-2", time.Now())
	if res, err := q.SaveContextAndEnqueueTx(ctx, tx, p2); err != nil || !res.Enqueued {
		t.Fatalf("enqueue in tx: %+v %v", res, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if auditCount(t, pool, "marker") != 1 || mustGet(t, q, "tx-2").Status != queue.StatusReady {
		t.Fatal("the caller's writes or the second enqueue were lost")
	}
}

// TestConcurrentEnqueueOfOneItem: many goroutines enqueue the same item;
// exactly one creates it.
func TestConcurrentEnqueueOfOneItem(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	p := enqueueParams("same", time.Now())
	const n = 16
	created := make(chan bool, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			res, err := q.SaveContextAndEnqueue(context.Background(), p)
			errs <- err
			created <- res.Enqueued
		}()
	}
	var total int
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if <-created {
			total++
		}
	}
	if total != 1 {
		t.Fatalf("%d goroutines created the item, want 1", total)
	}
	if got := auditCount(t, pool, "same"); got != 1 {
		t.Fatalf("audit rows = %d, want 1", got)
	}
}

// TestEnqueueBatch: a batch of new items is enqueued set-based, each with
// its context, READY, audited in one row; a batch with an existing item (a
// replay beside new ones) gives each the single enqueue's answer; a batch
// with a conflicting item is ErrConflict.
func TestEnqueueBatch(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	due := time.Now().Add(time.Hour)
	batch := func(ids ...string) []queue.EnqueueParams {
		var ps []queue.EnqueueParams
		for _, id := range ids {
			p := enqueueParams(id, due)
			p.InitWorkflowID = "init-batch" // as a Phase A chunk's
			ps = append(ps, p)
		}
		return ps
	}
	inTx := func(ps []queue.EnqueueParams) ([]queue.EnqueueResult, error) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		res, err := q.EnqueueBatchTx(ctx, tx, ps)
		if err == nil {
			err = tx.Commit(ctx)
		}
		return res, err
	}
	res, err := inTx(batch("b-1", "b-2", "b-3"))
	if err != nil || len(res) != 3 {
		t.Fatalf("new batch: %+v %v", res, err)
	}
	for i, id := range []string{"b-1", "b-2", "b-3"} {
		if !res[i].Enqueued || mustGet(t, q, id).Status != queue.StatusReady || !contextExists(t, pool, id) {
			t.Fatalf("%s: %+v", id, res[i])
		}
	}
	if rows, items := enqueueAudits(t, pool); rows != 1 || items != 3 {
		t.Fatalf("the batch's audit: %d rows for %d items, want one row for 3", rows, items)
	}
	res, err = inTx(batch("b-2", "b-4"))
	if err != nil || res[0].Enqueued || !res[1].Enqueued || auditCount(t, pool, "b-2") != 0 || auditCount(t, pool, "b-4") != 1 {
		t.Fatalf("a replay beside a new item: %+v %v", res, err)
	}
	if rows, items := enqueueAudits(t, pool); rows != 2 || items != 4 {
		t.Fatalf("after a replay beside a new item: %d audit rows for %d items, want 2 for 4", rows, items)
	}
	conflicting := batch("b-5", "b-3")
	conflicting[1].Context = json.RawMessage(`{"taskId":"other"}`)
	if _, err := inTx(conflicting); !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("a conflicting item in a batch: %v, want ErrConflict", err)
	}
	if _, err := q.Get(ctx, itemType, "b-5"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("the conflicting batch's new item was kept: %v", err)
	}
}

// TestEnqueueWithoutContext: an item whose type keeps its data itself is
// enqueued without a context row, alone or in a batch; it is claimed with
// none; sent again without one it is a replay, with one a conflict.
func TestEnqueueWithoutContext(t *testing.T) {
	t.Parallel()
	q, pool := newQueue(t)
	ctx := context.Background()
	due := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	bare := func(id string) queue.EnqueueParams {
		p := enqueueParams(id, due)
		p.Context, p.InitWorkflowID = nil, "init-bare"
		return p
	}
	if res, err := q.SaveContextAndEnqueue(ctx, bare("n-1")); err != nil || !res.Enqueued {
		t.Fatalf("alone: %+v %v", res, err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.EnqueueBatchTx(ctx, tx, []queue.EnqueueParams{bare("n-2"), bare("n-3")})
	if err != nil || !res[0].Enqueued || !res[1].Enqueued {
		t.Fatalf("in a batch: %+v %v", res, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"n-1", "n-2", "n-3"} {
		if contextExists(t, pool, id) || mustGet(t, q, id).Status != queue.StatusReady {
			t.Fatalf("%s: a context row, or not READY", id)
		}
	}
	if res, err := q.SaveContextAndEnqueue(ctx, bare("n-2")); err != nil || res.Enqueued {
		t.Fatalf("sent again without a context: %+v %v, want a replay", res, err)
	}
	with := bare("n-3")
	with.Context = json.RawMessage(`{"taskId":"n-3"}`)
	if _, err := q.SaveContextAndEnqueue(ctx, with); !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("sent again with a context: %v, want ErrConflict", err)
	}
	if contextExists(t, pool, "n-3") {
		t.Fatal("the conflicting call left its context")
	}
	b, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 10, PreStartBuffer: 30 * time.Second, MaxRetries: 3})
	if err != nil || len(b.Items) != 3 {
		t.Fatalf("claim: %+v %v", b, err)
	}
	for _, it := range b.Items {
		if it.Context != nil {
			t.Fatalf("%s claimed with context %s, want none", it.ID, it.Context)
		}
	}
}
