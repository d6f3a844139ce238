package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/queue"
)

// TestSettledByTheExecution: with the Settler on the execution worker, an
// item whose execution completes is COMPLETED by the execution's last
// step, with no dispatcher cycle after its start (no reconcile runs here);
// a failed execution is left DISPATCHED, for the reconcile, and so is a
// completed one whose settlement the database refused: the reconcile, the
// safety net, settles it. The execution workflow is the same generic one,
// knowing nothing of the queue.
func TestSettledByTheExecution(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	q := queue.New(pool)
	cfg := queue.DefaultSettings("TEST", "TestExecWorkflow", "test-exec-settle")
	cfg.BatchSize, cfg.JitterWindow, cfg.PreStartBuffer = 100, 0, 0
	if _, err := q.RegisterItemType(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, c := temporaltest.Start(t)
	execs := &executions{n: map[string]int{}, at: map[string]time.Time{}, notBefore: map[string]time.Time{}}
	ew := worker.New(c, "test-exec-settle", worker.Options{Interceptors: []interceptor.WorkerInterceptor{
		dispatch.NewSettler(q, nil, dispatch.SettledWorkflow{ItemType: "TEST", WorkflowType: "TestExecWorkflow"}),
	}})
	ew.RegisterWorkflowWithOptions(testExecWorkflow, workflow.RegisterOptions{Name: "TestExecWorkflow"})
	ew.RegisterActivity(execs)
	if err := ew.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ew.Stop)
	p := &pipeline{q: q, pool: pool, c: c, execs: execs}
	p.enqueue(t, "ok", 20, `{}`)
	p.enqueue(t, "bad", 2, `{"fail":true}`)
	p.enqueue(t, "lost", 1, `{}`)
	p.enqueue(t, "held", 1, `{"park":true}`)
	// The database refuses the lost item's settlement while refuse_settle
	// names it, as it would while restarting.
	if _, err := pool.Exec(ctx, `
		CREATE TABLE refuse_settle (item_id text PRIMARY KEY);
		INSERT INTO refuse_settle VALUES ('lost-0000');
		CREATE FUNCTION refuse_settle() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.queue_status = 'COMPLETED' AND EXISTS (SELECT 1 FROM refuse_settle r WHERE r.item_id = NEW.item_id) THEN
				RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_settle BEFORE UPDATE ON exec_queue FOR EACH ROW EXECUTE FUNCTION refuse_settle();`); err != nil {
		t.Fatal(err)
	}

	acts, err := dispatch.NewActivities(dispatch.Config{Queue: q, Engine: dispatch.TemporalEngine{Client: c, Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = q.GetConfig(ctx, "TEST"); err != nil {
		t.Fatal(err)
	}
	d, err := acts.ClaimAndDispatch(ctx, cfg) // one cycle's dispatch; no reconcile follows
	if err != nil || d.Started != 24 {
		t.Fatalf("dispatch: %+v, %v", d, err)
	}
	depth := p.waitFor(t, "completions settled by the executions, the deferral parked", 60*time.Second, func(d queue.Depth) bool {
		return d.ByStatus[queue.StatusCompleted] == 20 && d.ByStatus[queue.StatusParked] == 1
	})
	// The deferred run failed, so the item's next execution may use its id.
	var ae *temporal.ApplicationError
	if err := c.GetWorkflow(ctx, dispatch.ExecWorkflowID("TEST", "held-0000"), "").Get(ctx, nil); !errors.As(err, &ae) || ae.Type() != dispatch.ErrTypeDeferred {
		t.Fatalf("the parked item's execution: %v, want it failed %s", err, dispatch.ErrTypeDeferred)
	}
	// The lost settlement's execution has ended, its settlement given up.
	lostWF := dispatch.ExecWorkflowID("TEST", "lost-0000")
	if err := c.GetWorkflow(ctx, lostWF, "").Get(ctx, nil); err != nil {
		t.Fatalf("the execution whose settlement is refused: %v, want it completed", err)
	}
	if depth = p.waitFor(t, "depth", time.Second, func(queue.Depth) bool { return true }); depth.ByStatus[queue.StatusDispatched] != 3 {
		t.Fatalf("the failed executions and the lost settlement: %v, want 3 DISPATCHED for the reconcile", depth.ByStatus)
	}
	for id, n := range execs.n {
		if n != 1 {
			t.Fatalf("%s executed %d times", id, n)
		}
	}
	// A type born with the settlement step records it, and no version:
	// no version marker, no search attribute upsert (a visibility write).
	events := temporaltest.CountEvents(t, c, dispatch.ExecWorkflowID("TEST", "ok-0000"))
	markers, upserts := events[enumspb.EVENT_TYPE_MARKER_RECORDED], events[enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]
	if markers != 1 || upserts != 0 {
		t.Fatalf("a settled execution's history: %d markers, %d upserts; want the settlement's marker alone", markers, upserts)
	}
	// The reconcile finds the settled ones settled, and settles the lost
	// one and the failures (as soon as visibility lists them closed).
	if _, err := pool.Exec(ctx, `DELETE FROM refuse_settle`); err != nil {
		t.Fatal(err)
	}
	var completed, failed int
	for deadline := time.Now().Add(30 * time.Second); completed+failed < 3 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r, err := acts.Reconcile(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		completed, failed = completed+r.Completed, failed+r.Failed
	}
	if completed != 1 || failed != 2 {
		t.Fatalf("the reconcile settled %d completed and %d failed, want the lost one and the 2 failures", completed, failed)
	}
	if it, err := q.Get(ctx, "TEST", "lost-0000"); err != nil || it.Status != queue.StatusCompleted {
		t.Fatalf("the lost settlement after the reconcile: %+v, %v", it, err)
	}
}
