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
)

// Task queues and workflow names (seed 000's workers).
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
// queue: executePayment (SCHEDULED → ACCEPTED), postProcess,
// sendNotifications (ACCEPTED → PROCESSING).
//
// The three steps are local activities: each is a short, idempotent
// database call on the worker that runs the workflow, so the whole
// execution is one workflow task with three markers in its history instead
// of seven tasks round-tripping through Temporal's matching and history
// services. At a 16:00 cut-off with hundreds of thousands of payments that
// is what the Temporal cluster's persistence feels: measured on the
// embedded server, about 2.5× more payments per second. A failed attempt is
// retried by the SDK on the same worker with the retry policy below; if the
// worker dies, the workflow task times out and another worker replays the
// steps not yet recorded.
func PaymentExecWorkflow(ctx workflow.Context, paymentID, contextJSON string) error {
	var pc Context
	if err := json.Unmarshal([]byte(contextJSON), &pc); err != nil {
		return temporal.NewNonRetryableApplicationError("unreadable payment context: "+err.Error(), "CONTEXT", err)
	}
	opts := workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 500 * time.Millisecond, MaximumInterval: 10 * time.Second, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{ErrTypeWrongStatus},
		},
	}
	ctx = workflow.WithLocalActivityOptions(ctx, opts)
	var a *ExecActivities
	// A paced payment started ahead of its slot waits for it in the
	// execute step, on the worker's clock.
	notBefore := dispatch.NotBefore(ctx)
	execCtx := ctx
	if hold := notBefore.Sub(workflow.Now(ctx)); hold > 0 {
		opts.StartToCloseTimeout += hold
		execCtx = workflow.WithLocalActivityOptions(ctx, opts)
	}
	if err := workflow.ExecuteLocalActivity(execCtx, a.ExecutePayment, paymentID, notBefore).Get(ctx, nil); err != nil {
		return err
	}
	ref := workflow.GetInfo(ctx).WorkflowExecution.ID + "/" + workflow.GetInfo(ctx).WorkflowExecution.RunID
	if err := workflow.ExecuteLocalActivity(ctx, a.PostProcess, paymentID, ref).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.ExecuteLocalActivity(ctx, a.SendNotifications, paymentID).Get(ctx, nil)
}

// ExecActivities hold Phase B's I/O; each is idempotent and its status
// change guarded.
type ExecActivities struct{ Store *Store }

// ExecutePayment accepts the payment, not before notBefore (a paced slot;
// zero: now): SCHEDULED → ACCEPTED. (The execution saga of seed 004 comes
// here in a later part.)
func (a *ExecActivities) ExecutePayment(ctx context.Context, paymentID string, notBefore time.Time) error {
	if err := dispatch.Hold(ctx, notBefore); err != nil {
		return err
	}
	err := a.Store.Transition(ctx, paymentID, StatusScheduled, StatusAccepted, "")
	if errors.Is(err, ErrWrongStatus) {
		// PROCESSING means a previous run got further: nothing to redo.
		if p, gerr := a.Store.Get(ctx, paymentID); gerr == nil && p.Status == StatusProcessing {
			return nil
		}
		return nonRetryable(ErrTypeWrongStatus, err)
	}
	return err
}

// PostProcess records which execution handled the payment.
func (a *ExecActivities) PostProcess(ctx context.Context, paymentID, ref string) error {
	return a.Store.SetExecutionRef(ctx, paymentID, ref)
}

// SendNotifications tells both parties, then ACCEPTED → PROCESSING.
func (a *ExecActivities) SendNotifications(ctx context.Context, paymentID string) error {
	for _, party := range []string{"DEBTOR", "CREDITOR"} {
		if err := a.Store.Notify(ctx, paymentID, party, StatusProcessing); err != nil {
			return err
		}
	}
	err := a.Store.Transition(ctx, paymentID, StatusAccepted, StatusProcessing, "")
	if errors.Is(err, ErrWrongStatus) {
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

// RegisterExec puts Phase B on a worker of ExecTaskQueue.
func RegisterExec(r worker.Registry, a *ExecActivities) {
	r.RegisterWorkflowWithOptions(PaymentExecWorkflow, workflow.RegisterOptions{Name: ExecWorkflowName})
	r.RegisterActivity(a)
}
