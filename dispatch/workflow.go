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
	StartedAt      time.Time
	Disabled       bool // the kill switch was on: nothing was done
	Recovery       Recovery
	Reconciliation Reconciliation
	Dispatch       Dispatch
}

// steps are the cycle's five steps; the workflow runs them as activities,
// the lease runner calls them directly. The sequence is defined once, in
// runCycle.
type steps struct {
	readConfig func(itemType string) (queue.Config, error)
	recover    func(queue.Config) (Recovery, error)
	reconcile  func(queue.Config) (Reconciliation, error)
	dispatch   func(queue.Config) (Dispatch, error)
	record     func(CycleResult) error
}

// runCycle: read config (disabled → return), recover stale claims,
// reconcile finished executions, claim and dispatch a batch, record the
// results. A failed step fails the cycle; the next one starts afresh, and
// guarded statements make every step safe to repeat.
func runCycle(s steps, itemType string, startedAt time.Time) (CycleResult, error) {
	res := CycleResult{ItemType: itemType, StartedAt: startedAt}
	cfg, err := s.readConfig(itemType)
	if err != nil {
		return res, err
	}
	if !cfg.Enabled {
		res.Disabled = true
		return res, nil
	}
	if res.Recovery, err = s.recover(cfg); err != nil {
		return res, err
	}
	if res.Reconciliation, err = s.reconcile(cfg); err != nil {
		return res, err
	}
	if res.Dispatch, err = s.dispatch(cfg); err != nil {
		return res, err
	}
	if res.idle() {
		return res, nil // an idle cycle leaves no audit row
	}
	return res, s.record(res)
}

func (r CycleResult) idle() bool {
	return r.Dispatch.Claimed == 0 && r.Recovery == (Recovery{}) &&
		r.Reconciliation.Completed+r.Reconciliation.Failed+r.Reconciliation.DeadLettered == 0
}

// DispatcherWorkflow runs one dispatch cycle for an item type, each step an
// activity (see runCycle).
func DispatcherWorkflow(ctx workflow.Context, itemType string) (CycleResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 200 * time.Millisecond, MaximumInterval: 2 * time.Second, MaximumAttempts: 3,
		},
	})
	var a *Activities // method values name the activities; never called here
	return runCycle(steps{
		readConfig: func(t string) (c queue.Config, err error) {
			err = workflow.ExecuteActivity(ctx, a.ReadConfig, t).Get(ctx, &c)
			return c, err
		},
		recover: func(c queue.Config) (r Recovery, err error) {
			err = workflow.ExecuteActivity(ctx, a.RecoverStaleClaims, c).Get(ctx, &r)
			return r, err
		},
		reconcile: func(c queue.Config) (r Reconciliation, err error) {
			err = workflow.ExecuteActivity(ctx, a.Reconcile, c).Get(ctx, &r)
			return r, err
		},
		dispatch: func(c queue.Config) (d Dispatch, err error) {
			err = workflow.ExecuteActivity(ctx, a.ClaimAndDispatch, c).Get(ctx, &d)
			return d, err
		},
		record: func(r CycleResult) error {
			return workflow.ExecuteActivity(ctx, a.RecordResults, r).Get(ctx, nil)
		},
	}, itemType, workflow.Now(ctx))
}
