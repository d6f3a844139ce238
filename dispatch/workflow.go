package dispatch

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/queue"
)

// TaskQueue is the dispatcher's task queue.
const TaskQueue = "dispatch-task-queue"

// WorkflowName is the dispatcher workflow's registered name.
const WorkflowName = "DispatcherWorkflow"

// CycleResult is what one dispatch cycle did.
type CycleResult struct {
	ItemType       string
	Disabled       bool // the kill switch was on: nothing was done
	Recovery       Recovery
	Reconciliation Reconciliation
	Dispatch       Dispatch
}

// DispatcherWorkflow runs one dispatch cycle for an item type: read config
// (disabled → return), recover stale claims, reconcile finished
// executions, claim and dispatch a batch, record the results. A failed step
// fails the cycle; the next scheduled cycle starts afresh, and guarded
// statements make every step safe to repeat.
func DispatcherWorkflow(ctx workflow.Context, itemType string) (CycleResult, error) {
	res := CycleResult{ItemType: itemType}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 200 * time.Millisecond, MaximumInterval: 2 * time.Second, MaximumAttempts: 3,
		},
	})
	var a *Activities // method values name the activities; never called here

	var cfg queue.Config
	if err := workflow.ExecuteActivity(ctx, a.ReadConfig, itemType).Get(ctx, &cfg); err != nil {
		return res, err
	}
	if !cfg.Enabled {
		res.Disabled = true
		return res, nil
	}
	if err := workflow.ExecuteActivity(ctx, a.RecoverStaleClaims, cfg).Get(ctx, &res.Recovery); err != nil {
		return res, err
	}
	if err := workflow.ExecuteActivity(ctx, a.Reconcile, cfg).Get(ctx, &res.Reconciliation); err != nil {
		return res, err
	}
	if err := workflow.ExecuteActivity(ctx, a.ClaimAndDispatch, cfg).Get(ctx, &res.Dispatch); err != nil {
		return res, err
	}
	if res.Dispatch.Claimed == 0 && res.Recovery == (Recovery{}) && res.Reconciliation.Completed+res.Reconciliation.Failed+res.Reconciliation.DeadLettered == 0 {
		return res, nil // an idle cycle leaves no audit row
	}
	if err := workflow.ExecuteActivity(ctx, a.RecordResults, res).Get(ctx, nil); err != nil {
		return res, err
	}
	return res, nil
}
