package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/queue"
)

// TestDispatchInBatchMode: in BATCH mode a claim starts one batch
// execution with every item, in time order; a cycle run again finds it
// started; a refused start releases the whole batch; the reconcile and the
// stale-claim recovery follow the batch execution an item is under.
func TestDispatchInBatchMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	batched := func(f *fixture) queue.Settings {
		c, err := f.q.UpdateConfig(ctx, itemType, map[string]string{"exec_mode": "BATCH"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	t.Run("one workflow a batch", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		cfg := batched(f)
		ids := f.enqueue(t, 10, time.Now().Add(5*time.Second))
		d, err := f.act.ClaimAndDispatch(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		wf := dispatch.BatchWorkflowID(itemType, d.BatchID)
		if d.Claimed != 10 || d.Started != 1 || f.eng.starts[wf] != 1 || len(f.eng.starts) != 1 {
			t.Fatalf("dispatch %+v, starts %v", d, f.eng.starts)
		}
		for _, id := range ids {
			if it := f.status(t, id); it.Status != queue.StatusDispatched || it.ExecWorkflowID != wf {
				t.Fatalf("%s: %s under %q", id, it.Status, it.ExecWorkflowID)
			}
		}
		// The workflow finishes without settling one item (it cannot, but
		// if it did): the item is executed again, not taken as done.
		if _, err := f.q.MarkExecutedBatch(ctx, itemType, d.BatchID, wf, ids[1:]); err != nil {
			t.Fatal(err)
		}
		f.eng.finish(wf, "COMPLETED")
		f.now = func() time.Time { return time.Now().Add(time.Minute) }
		r, err := f.act.Reconcile(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Completed != 0 || r.Failed != 1 || f.status(t, ids[0]).Status != queue.StatusReady {
			t.Fatalf("reconcile %+v, item %s", r, f.status(t, ids[0]).Status)
		}
	})

	t.Run("a refused start releases the batch", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		cfg := batched(f)
		ids := f.enqueue(t, 5, time.Now())
		f.eng.failFor = func(string) error { return errors.New("engine down") }
		d, err := f.act.ClaimAndDispatch(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d.Started != 0 || d.StartFailed != 5 {
			t.Fatalf("dispatch %+v", d)
		}
		for _, id := range ids {
			if it := f.status(t, id); it.Status != queue.StatusReady || it.RetryCount != 1 {
				t.Fatalf("%s: %s retry %d", id, it.Status, it.RetryCount)
			}
		}
	})

	t.Run("a stale claim finds its batch execution", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		cfg := batched(f)
		ids := f.enqueue(t, 4, time.Now())
		b, err := f.q.ClaimBatch(ctx, cfg.ClaimParams())
		if err != nil {
			t.Fatal(err)
		}
		// The dispatcher started the batch execution, then died.
		f.eng.runs[dispatch.BatchWorkflowID(itemType, b.ID)] = "RUNNING"
		if _, err := f.pool.Exec(ctx, `UPDATE exec_queue SET claimed_at = now() - interval '1 hour'`); err != nil {
			t.Fatal(err)
		}
		r, err := f.act.RecoverStaleClaims(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Dispatched != 4 || r.Released != 0 {
			t.Fatalf("recovery %+v", r)
		}
		if it := f.status(t, ids[2]); it.ExecWorkflowID != dispatch.BatchWorkflowID(itemType, b.ID) {
			t.Fatalf("recovered under %q", it.ExecWorkflowID)
		}
	})
}
