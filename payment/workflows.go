package payment

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/process"
)

// Task queues and workflow names of the payment workers.
const (
	InitTaskQueue    = "payment-init-task-queue"
	ExecTaskQueue    = "payment-exec-task-queue"
	InitWorkflowName = "PaymentInitWorkflow"
	ExecWorkflowName = "PaymentExecWorkflow"
)

// InitWorkflowID is the init workflow's id: derived from the payment id, so
// a second submission of the same payment cannot start a second init.
func InitWorkflowID(paymentID string) string { return "init-payment-" + paymentID }

// Context is the Phase A output the execution receives, as JSON.
type Context struct {
	Version    int        `json:"version"`
	Request    Request    `json:"request"`
	Enrichment Enrichment `json:"enrichment"`
	Amount     string     `json:"amount"` // decimal, normalized
	Rules      []string   `json:"rulesPassed"`
}

// initOptions are Phase A's activity options: a CONFLICT (another payment
// under the id) is final; anything else (the database, the limiter) is
// retried.
var initOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: 500 * time.Millisecond, MaximumInterval: 30 * time.Second, MaximumAttempts: 10,
		NonRetryableErrorTypes: []string{ErrTypeConflict, ErrTypeRejected},
	},
}

// PaymentInitWorkflow is Phase A for one payment: validate → enrich →
// apply rules → determine the execution time → persist SCHEDULED, save the
// context and enqueue READY (one transaction) → complete. It never sleeps:
// the payment waits in the queue, not in Temporal. A validation,
// enrichment or rule failure ends the payment REJECTED with its reason and
// enqueues nothing. The steps are one activity, the same code a bulk
// file's chunk runs (InitActivities.initPayments).
func PaymentInitWorkflow(ctx workflow.Context, r Request) (InitResult, error) {
	ctx = workflow.WithActivityOptions(ctx, initOptions)
	var a *InitActivities
	if workflow.GetVersion(ctx, "phase-a-one-step", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return legacyInit(ctx, r)
	}
	var res InitResult
	err := workflow.ExecuteActivity(ctx, a.InitPayment, r, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, &res)
	return res, err
}

// PaymentExecWorkflow is Phase B's business logic, knowing nothing of the
// queue: hold a paced payment until its slot, run the SubmitPayment
// process (debit, limits, FX, booking and rail instruction; compensated
// on a business failure, which leaves the payment FAILED with its code),
// then record the execution and notify the parties (ACCEPTED →
// PROCESSING). A business failure completes the workflow: the dispatch
// worked, the payment did not, and retrying it would fail the same way.
// An infrastructure failure fails it, for the queue's retry and
// dead-letter path; the process resumes where it stopped on the next run.
//
// Every step is a local activity: one short, idempotent database call on
// the worker running the workflow, so an execution is one workflow task
// with markers in its history instead of a round trip through Temporal's
// matching and history services per step. If the worker dies, the task
// times out and another worker replays the steps not yet recorded.
func PaymentExecWorkflow(ctx workflow.Context, paymentID, contextJSON string) error {
	var pc Context
	if err := json.Unmarshal([]byte(contextJSON), &pc); err != nil {
		return temporal.NewNonRetryableApplicationError("unreadable payment context: "+err.Error(), "CONTEXT", err)
	}
	opts := workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		// The attempts bound the retries, not a clock: the budget runs
		// from when the step was first scheduled, so the default (one
		// StartToClose) leaves the worker that takes over from a dead one
		// a single attempt, and a database blip then fails the run.
		ScheduleToCloseTimeout: localStepBudget,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 500 * time.Millisecond, MaximumInterval: 10 * time.Second, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{ErrTypeWrongStatus},
		},
	}
	ctx = workflow.WithLocalActivityOptions(ctx, opts)
	var a *ExecActivities
	// A paced payment started ahead of its slot waits for it, on the
	// worker's clock.
	notBefore := dispatch.NotBefore(ctx)
	holdCtx := ctx
	if hold := notBefore.Sub(workflow.Now(ctx)); hold > 0 {
		opts.StartToCloseTimeout += hold
		opts.ScheduleToCloseTimeout += hold
		holdCtx = workflow.WithLocalActivityOptions(ctx, opts)
	}
	if workflow.GetVersion(ctx, "submit-payment", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return legacyExec(ctx, holdCtx, paymentID, notBefore)
	}
	if notBefore.After(workflow.Now(ctx)) {
		if err := workflow.ExecuteLocalActivity(holdCtx, a.Hold, notBefore).Get(ctx, nil); err != nil {
			return err
		}
	}
	out, err := process.Run(ctx, process.Options{
		Type: SubmitPaymentType, BusinessKey: paymentID, Data: SubmitData(paymentID, pc, workflow.Now(ctx)),
		Exec: process.ExecOptions{Local: true},
	})
	if err != nil {
		return err
	}
	if out.Status != process.StatusSucceeded {
		return nil // the payment is FAILED with the failure's code (SubmitPayment's OnFailed)
	}
	ref := workflow.GetInfo(ctx).WorkflowExecution.ID + "/" + workflow.GetInfo(ctx).WorkflowExecution.RunID
	if err := workflow.ExecuteLocalActivity(ctx, a.PostProcess, paymentID, ref).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.ExecuteLocalActivity(ctx, a.SendNotifications, paymentID).Get(ctx, nil)
}

// localStepBudget bounds the retries of an execution's local activity
// in time, well beyond what its attempts take.
const localStepBudget = 30 * time.Minute

// ExecActivities hold Phase B's I/O; each is idempotent and its status
// change guarded.
type ExecActivities struct{ Store *Store }

// Hold waits until notBefore (a paced slot) on the worker's clock.
func (a *ExecActivities) Hold(ctx context.Context, notBefore time.Time) error {
	return dispatch.Hold(ctx, notBefore)
}

// PostProcess records which execution handled the payment.
func (a *ExecActivities) PostProcess(ctx context.Context, paymentID, ref string) error {
	return a.Store.SetExecutionRef(ctx, paymentID, ref)
}

// SendNotifications tells both parties, then ACCEPTED → PROCESSING. A
// payment the rail already answered for (DELIVERED, RETURNED: the relayer
// can be faster than this step) stays as it is.
func (a *ExecActivities) SendNotifications(ctx context.Context, paymentID string) error {
	for _, party := range []string{"DEBTOR", "CREDITOR"} {
		if err := a.Store.Notify(ctx, paymentID, party, StatusProcessing); err != nil {
			return err
		}
	}
	err := a.Store.Transition(ctx, paymentID, StatusAccepted, StatusProcessing, "")
	if errors.Is(err, ErrWrongStatus) {
		p, gerr := a.Store.Get(ctx, paymentID)
		switch {
		case gerr != nil:
			return gerr // retried: only a status seen is a reason to give up
		case p.Status == StatusDelivered || p.Status == StatusReturned:
			return nil
		}
		return nonRetryable(ErrTypeWrongStatus, err)
	}
	return err
}

// RegisterInit puts Phase A on a worker of InitTaskQueue.
func RegisterInit(r worker.Registry, a *InitActivities) {
	r.RegisterWorkflowWithOptions(PaymentInitWorkflow, workflow.RegisterOptions{Name: InitWorkflowName})
	r.RegisterWorkflowWithOptions(PaymentBatchInitWorkflow, workflow.RegisterOptions{Name: BatchWorkflowName})
	r.RegisterActivity(a)
}

// RegisterExec puts Phase B on a worker of ExecTaskQueue, with the
// process manager's activities its SubmitPayment runs (p's registry must
// hold SubmitPayment) and its ProcessWorkflow, which an operator's retry
// of a payment's process starts on this task queue.
func RegisterExec(r worker.Registry, a *ExecActivities, p *process.Activities) {
	r.RegisterWorkflowWithOptions(PaymentExecWorkflow, workflow.RegisterOptions{Name: ExecWorkflowName})
	r.RegisterActivity(a)
	process.Register(r, p)
}
