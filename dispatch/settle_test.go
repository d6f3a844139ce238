package dispatch_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/internal/pgtest"
	"github.com/paydispatch/paydispatch/internal/temporaltest"
	"github.com/paydispatch/paydispatch/queue"
)

// TestSettledByTheExecution: with the Settler on the execution worker, an
// item whose execution completes is COMPLETED by the execution's last
// step, with no dispatcher cycle after its start (no reconcile runs here);
// a failed execution is left DISPATCHED, for the reconcile. The execution
// workflow is the same generic one, knowing nothing of the queue.
func TestSettledByTheExecution(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	q := queue.New(pool)
	cfg := queue.DefaultConfig("TEST", "TestExecWorkflow", "test-exec-settle")
	cfg.BatchSize, cfg.JitterWindow, cfg.PreStartBuffer = 100, 0, 0
	if _, err := q.RegisterItemType(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, c := temporaltest.Start(t)
	execs := &executions{n: map[string]int{}, at: map[string]time.Time{}, notBefore: map[string]time.Time{}}
	ew := worker.New(c, "test-exec-settle", worker.Options{Interceptors: []interceptor.WorkerInterceptor{
		dispatch.NewSettler(q, nil, map[string]string{"TEST": "TestExecWorkflow"}),
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

	acts, err := dispatch.NewActivities(dispatch.Config{Queue: q, Engine: dispatch.TemporalEngine{Client: c, Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = q.GetConfig(ctx, "TEST"); err != nil {
		t.Fatal(err)
	}
	d, err := acts.ClaimAndDispatch(ctx, cfg) // one cycle's dispatch; no reconcile follows
	if err != nil || d.Started != 22 {
		t.Fatalf("dispatch: %+v, %v", d, err)
	}
	depth := p.waitFor(t, "completions settled by the executions", 60*time.Second, func(d queue.Depth) bool {
		return d.ByStatus[queue.StatusCompleted] == 20
	})
	if depth.ByStatus[queue.StatusDispatched] != 2 {
		t.Fatalf("the failed executions: %v, want them DISPATCHED for the reconcile", depth.ByStatus)
	}
	for id, n := range execs.n {
		if n != 1 {
			t.Fatalf("%s executed %d times", id, n)
		}
	}
	// The reconcile finds the completed ones settled and settles the rest.
	r, err := acts.Reconcile(ctx, cfg)
	if err != nil || r.Completed != 0 || r.Failed != 2 {
		t.Fatalf("reconcile after the settlements: %+v, %v; want only the 2 failures", r, err)
	}
}
