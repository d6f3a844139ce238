package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/queue"
)

// queueWrites counts the INSERTs into exec_queue and the COPYs into it.
type queueWrites struct {
	mu              sync.Mutex
	inserts, copies int
}

func (w *queueWrites) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "INSERT INTO exec_queue ") {
		w.mu.Lock()
		w.inserts++
		w.mu.Unlock()
	}
	return ctx
}

func (*queueWrites) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (w *queueWrites) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	if strings.Join(d.TableName, ".") == "exec_queue" {
		w.mu.Lock()
		w.copies++
		w.mu.Unlock()
	}
	return ctx
}

func (*queueWrites) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// TestEnqueueBatchCopied: a batch of new items without contexts, as a
// Phase A chunk's, is written with one COPY, no INSERT, READY and audited
// in one row, with each item's fields as sent; a batch of as many with an
// item that exists gives each the single enqueue's answer (the replay
// not enqueued, the others enqueued), and one with a conflicting item is
// ErrConflict and keeps none.
func TestEnqueueBatchCopied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	due := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	batch := func(prefix string, n int) []queue.EnqueueParams {
		ps := make([]queue.EnqueueParams, n)
		for i := range ps {
			ps[i] = enqueueParams(fmt.Sprintf("%s-%03d", prefix, i), due.Add(time.Duration(i)*time.Millisecond))
			ps[i].Context, ps[i].InitWorkflowID, ps[i].Paced = nil, "init-"+prefix, i%2 == 0
		}
		return ps
	}
	for _, tt := range []struct {
		name string
		// before is enqueued first, alone: the item of the batch that exists.
		before      func(ps []queue.EnqueueParams) queue.EnqueueParams
		wantErr     error
		wantCopies  int
		wantInserts bool
	}{
		{name: "all new", wantCopies: 1},
		{name: "one sent before", before: func(ps []queue.EnqueueParams) queue.EnqueueParams { return ps[70] }, wantCopies: 1, wantInserts: true},
		{name: "one conflicting", before: func(ps []queue.EnqueueParams) queue.EnqueueParams {
			p := ps[70]
			p.ScheduledExecTime = p.ScheduledExecTime.Add(time.Minute)
			return p
		}, wantErr: queue.ErrConflict, wantCopies: 1, wantInserts: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, pool := newQueue(t)
			ps := batch("cp", 150)
			if tt.before != nil {
				if res, err := q.SaveContextAndEnqueue(ctx, tt.before(ps)); err != nil || !res.Enqueued {
					t.Fatalf("before: %+v, %v", res, err)
				}
			}
			w := &queueWrites{}
			cfg := pool.Config()
			cfg.ConnConfig.Tracer = w
			traced, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer traced.Close()
			tx, err := traced.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			res, err := queue.New(traced).EnqueueBatchTx(ctx, tx, ps)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("EnqueueBatchTx: %v, want %v", err, tt.wantErr)
			}
			if w.copies != tt.wantCopies || (w.inserts > 0) != tt.wantInserts {
				t.Errorf("%d COPYs and %d INSERTs into exec_queue, want %d COPYs and INSERTs: %v", w.copies, w.inserts, tt.wantCopies, tt.wantInserts)
			}
			if err != nil {
				return
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			for i, p := range ps {
				if sent := tt.before != nil && i == 70; res[i].Enqueued == sent {
					t.Errorf("%s: %+v, sent before: %v", p.ItemID, res[i], sent)
				}
				it := mustGet(t, q, p.ItemID)
				if it.Status != queue.StatusReady || !it.ScheduledExecTime.Equal(p.ScheduledExecTime) || it.Paced != p.Paced ||
					it.TenantID != p.TenantID || it.InitWorkflowID != p.InitWorkflowID || contextExists(t, pool, p.ItemID) {
					t.Errorf("%s: %+v, want READY as sent %+v", p.ItemID, it, p)
				}
			}
			wantRows := 1
			if tt.before != nil {
				wantRows = 150 // the single enqueue's answer: an audit row each
			}
			if rows, items := enqueueAudits(t, pool); rows != wantRows || items != 150 {
				t.Errorf("audit: %d rows for %d items, want %d for 150", rows, items, wantRows)
			}
		})
	}
}
