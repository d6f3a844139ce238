package dispatch

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/queue"
)

// TaskQueue is the dispatcher's task queue.
const TaskQueue = "dispatch-task-queue"

// WorkflowName is the registered name of the dispatcher workflow that
// runs each step as an activity; schedules start CycleWorkflowName, and
// this one stays registered for runs started before.
const WorkflowName = "DispatcherWorkflow"

// CycleWorkflowName is the registered name of DispatchCycle, the workflow
// an item type's schedule starts each cycle.
const CycleWorkflowName = "DispatchCycle"

// CycleResult is what one dispatch cycle did.
type CycleResult struct {
	ItemType       string
	StartedAt      time.Time
	Disabled       bool // the kill switch was on: nothing was done
	Recovery       Recovery
	Reconciliation Reconciliation
	Dispatch       Dispatch
}

// steps are the cycle's five steps; DispatcherWorkflow runs them as
// activities, Activities.RunCycle (the lease runner's and DispatchCycle's)
// calls them directly. The sequence is defined once, in runCycle.
type steps struct {
	readConfig func(itemType string) (queue.Settings, error)
	recover    func(queue.Settings) (Recovery, error)
	reconcile  func(queue.Settings) (Reconciliation, error)
	dispatch   func(queue.Settings) (Dispatch, error)
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
		readConfig: func(t string) (c queue.Settings, err error) {
			err = workflow.ExecuteActivity(ctx, a.ReadConfig, t).Get(ctx, &c)
			return c, err
		},
		recover: func(c queue.Settings) (r Recovery, err error) {
			err = workflow.ExecuteActivity(ctx, a.RecoverStaleClaims, c).Get(ctx, &r)
			return r, err
		},
		reconcile: func(c queue.Settings) (r Reconciliation, err error) {
			err = workflow.ExecuteActivity(ctx, a.Reconcile, c).Get(ctx, &r)
			return r, err
		},
		dispatch: func(c queue.Settings) (d Dispatch, err error) {
			err = workflow.ExecuteActivity(ctx, a.ClaimAndDispatch, c).Get(ctx, &d)
			return d, err
		},
		record: func(r CycleResult) error {
			return workflow.ExecuteActivity(ctx, a.RecordResults, r).Get(ctx, nil)
		},
	}, itemType, workflow.Now(ctx))
}

// DispatchCycle runs one dispatch cycle for an item type as one local
// activity (Activities.RunCycle): the steps run in the worker that runs
// the workflow, as the lease runner runs them, and the engine records one
// marker. A schedule fires it every interval (every second by default),
// so the engine's work per cycle is paid around the clock: five
// activities, with their task matching and the workflow tasks between
// them, cost the embedded server about 0.6 ms of CPU per payment at
// 100/s (docs/benchmarks.md). A failed attempt runs the whole cycle
// again: each step is safe to repeat.
func DispatchCycle(ctx workflow.Context, itemType string) (CycleResult, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 200 * time.Millisecond, MaximumInterval: 2 * time.Second, MaximumAttempts: 3,
		},
	})
	var a *Activities // a method value names the activity; never called here
	var res CycleResult
	err := workflow.ExecuteLocalActivity(ctx, a.RunCycle, itemType).Get(ctx, &res)
	return res, err
}
