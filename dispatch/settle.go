package dispatch

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/queue"
)

// Settler settles a queue item from the execution side: when an item's
// execution workflow completes, its last step moves the item DISPATCHED
// → COMPLETED, so the type's max_in_flight frees a place as the execution
// ends rather than when a later dispatcher cycle sees the workflow closed
// in visibility. It is a worker interceptor, so an execution workflow
// still knows nothing of the queue.
//
// Completions are settled here, and deferrals (an execution that returned
// Deferred hands its item back to the queue, then fails, so that the
// item's next run may use the id). A failed execution is left to the
// reconcile, which also remains the safety net for a settlement lost
// (the worker died after the workflow's last step, the database did not
// answer): its retry must not be released while this run is still open,
// or the engine would refuse the new run under the same workflow id.
type Settler struct {
	interceptor.WorkerInterceptorBase
	queue   *queue.Queue
	metrics *Metrics
	// workflow type → what it settles.
	types map[string]SettledWorkflow
}

// SettledWorkflow is an execution workflow type a Settler settles the
// items of.
type SettledWorkflow struct {
	ItemType, WorkflowType string
}

// NewSettler settles the items of the given execution workflow types,
// counting them in metrics' completed_total (metrics may be nil).
func NewSettler(q *queue.Queue, metrics *Metrics, workflows ...SettledWorkflow) *Settler {
	s := &Settler{queue: q, metrics: metrics, types: make(map[string]SettledWorkflow, len(workflows))}
	for _, w := range workflows {
		s.types[w.WorkflowType] = w
	}
	return s
}

func (s *Settler) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	w, ok := s.types[workflow.GetInfo(ctx).WorkflowType.Name]
	if !ok {
		return next
	}
	return &settleInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, s: s, w: w}
}

type settleInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	s *Settler
	w SettledWorkflow
}

func (i *settleInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	out, err := i.Next.ExecuteWorkflow(ctx, in)
	if len(in.Args) == 0 {
		return out, err
	}
	itemID, ok := in.Args[0].(string) // an execution workflow's first argument is its item's id
	if !ok {
		return out, err
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 3},
	})
	if at, deferred := deferral(err); deferred {
		// The item goes back to the queue, and the run fails, so that the
		// item's next execution may run under this workflow id. A
		// deferral that is not recorded leaves the item DISPATCHED: the
		// reconcile sees the run failed and queues it again.
		_ = workflow.ExecuteLocalActivity(lctx, i.s.Defer, i.w.ItemType, itemID, at).Get(ctx, nil)
		return out, err
	}
	if err != nil {
		return out, err
	}
	// A settlement that fails is the reconcile's to make: the execution
	// itself succeeded, and the workflow says so.
	_ = workflow.ExecuteLocalActivity(lctx, i.s.Settle, i.w.ItemType, itemID).Get(ctx, nil)
	return out, nil
}

// Settle marks one executed item COMPLETED (a guarded transition: an item
// no longer DISPATCHED, e.g. already settled by the reconcile, is left as
// it is). A local activity of the execution workflow.
func (s *Settler) Settle(ctx context.Context, itemType, itemID string) error {
	res, err := s.queue.MarkCompletedBatch(ctx, itemType, []string{itemID})
	if err != nil {
		return fmt.Errorf("dispatch: settle %s %s: %w", itemType, itemID, err)
	}
	if s.metrics != nil {
		s.metrics.completed.WithLabelValues(itemType).Add(float64(len(res.Moved)))
	}
	return nil
}

// Defer hands an item whose execution returned Deferred back to the
// queue (READY at at, or PARKED when at is zero). A local activity of the
// execution workflow.
func (s *Settler) Defer(ctx context.Context, itemType, itemID string, at time.Time) error {
	if _, err := s.queue.Defer(ctx, itemType, "", []queue.Deferral{{ItemID: itemID, At: at}}); err != nil {
		return fmt.Errorf("dispatch: defer %s %s: %w", itemType, itemID, err)
	}
	return nil
}
