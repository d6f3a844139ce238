package payment

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
)

// legacyInit replays, and finishes, init workflows started before Phase A
// became one step (no "phase-a-one-step" marker in their history): the
// same sequence of activities as then, each now a thin wrapper over Phase
// A's one code path. Remove it (and the activities below) once no such
// workflow can be open: an init workflow lives seconds, so one release
// later.
func legacyInit(ctx workflow.Context, r Request) (InitResult, error) {
	res := InitResult{PaymentID: r.PaymentID}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 500 * time.Millisecond, MaximumInterval: 10 * time.Second, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{ErrTypeRejected},
		},
	})
	var a *InitActivities
	var amount string
	var enr Enrichment
	var rules []string
	err := workflow.ExecuteActivity(ctx, a.Validate, r).Get(ctx, &amount)
	if err == nil {
		err = workflow.ExecuteActivity(ctx, a.Enrich, r).Get(ctx, &enr)
	}
	if err == nil {
		err = workflow.ExecuteActivity(ctx, a.ApplyRules, r, amount, enr).Get(ctx, &rules)
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ErrTypeRejected {
		res.Status, res.Reason = StatusRejected, appErr.Message()
		return res, workflow.ExecuteActivity(ctx, a.Reject, r, res.Reason).Get(ctx, nil)
	}
	if err != nil {
		return res, err
	}
	execAt, paced := r.RequestedExecutionTime, false
	if workflow.GetVersion(ctx, "pacing-slot", workflow.DefaultVersion, 1) == 1 {
		var slot ExecSlot
		if err := workflow.ExecuteActivity(ctx, a.ExecTime, r).Get(ctx, &slot); err != nil {
			return res, err
		}
		execAt, paced = slot.At, slot.Paced
	}
	if err := workflow.ExecuteActivity(ctx, a.PersistScheduled, r, execAt).Get(ctx, nil); err != nil {
		return res, err
	}
	pc, err := json.Marshal(Context{Version: 1, Request: r, Enrichment: enr, Amount: amount, Rules: rules})
	if err != nil {
		return res, err
	}
	if err := workflow.ExecuteActivity(ctx, a.Enqueue, EnqueueInput{
		PaymentID: r.PaymentID, TenantID: r.TenantID, ExecAt: execAt, Paced: paced,
		InitWorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, Context: pc,
	}).Get(ctx, nil); err != nil {
		return res, err
	}
	res.Status, res.ScheduledExecutionTime = StatusScheduled, execAt
	return res, nil
}

// legacyVerdict judges r as Phase A does; a refusal is a REJECTED error.
func (a *InitActivities) legacyVerdict(r Request) (verdict, error) {
	v := a.judge([]Request{r}, a.now(), nil)[0]
	if v.refusal != nil {
		return v, temporal.NewNonRetryableApplicationError(v.refusal.Error(), ErrTypeRejected, nil)
	}
	return v, nil
}

// Validate is a legacy step: the whole judgement, answering the amount.
func (a *InitActivities) Validate(_ context.Context, r Request) (string, error) {
	v, err := a.legacyVerdict(r)
	if err != nil {
		return "", err
	}
	return v.money.Amount.String(), nil
}

// Enrich is a legacy step.
func (a *InitActivities) Enrich(_ context.Context, r Request) (Enrichment, error) {
	e, err := enrich(r)
	if err != nil {
		return e, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeRejected, nil)
	}
	return e, nil
}

// ApplyRules is a legacy step: the rules on the given amount and enrichment.
func (a *InitActivities) ApplyRules(_ context.Context, r Request, amount string, e Enrichment) ([]string, error) {
	amt, err := decimal.NewFromString(amount)
	if err == nil {
		var rules []string
		if rules, err = a.Rules.apply(r, Money{Amount: amt, Currency: r.Currency}, e); err == nil {
			return rules, nil
		}
	}
	return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeRejected, nil)
}

// Reject is a legacy step: the payment recorded REJECTED, once.
func (a *InitActivities) Reject(ctx context.Context, r Request, reason string) error {
	v := a.judge([]Request{r}, a.now(), nil)[0]
	_, err := a.Store.Record(ctx, r, v.money, StatusRejected, reason, nil)
	if errors.Is(err, ErrConflict) {
		return nonRetryable(ErrTypeConflict, err)
	}
	return err
}

// ExecTime is a legacy step: the payment's execution time.
func (a *InitActivities) ExecTime(ctx context.Context, r Request) (ExecSlot, error) {
	key := Key(r.TenantID, r.PaymentID)
	slots, err := a.execTimes(ctx, []string{key}, []Request{r})
	if err != nil {
		return ExecSlot{}, err
	}
	return slots[key], nil
}

// PersistScheduled is a legacy step: the payment stored SCHEDULED.
func (a *InitActivities) PersistScheduled(ctx context.Context, r Request, execAt time.Time) error {
	v := a.judge([]Request{r}, time.Time{}, nil)[0]
	if v.money == nil {
		return temporal.NewNonRetryableApplicationError("invalid amount or currency", ErrTypeRejected, nil)
	}
	_, err := a.Store.Record(ctx, r, v.money, StatusScheduled, "", &execAt)
	if errors.Is(err, ErrConflict) {
		return nonRetryable(ErrTypeConflict, err)
	}
	return err
}

// EnqueueInput is what the legacy enqueue step needs.
type EnqueueInput struct {
	PaymentID, TenantID, InitWorkflowID string
	ExecAt                              time.Time
	Paced                               bool // ExecAt is a paced slot
	Context                             []byte
}

// Enqueue is a legacy step: context and READY row in one transaction.
func (a *InitActivities) Enqueue(ctx context.Context, in EnqueueInput) error {
	// The payment's key: the one it was stored under (PersistScheduled),
	// whether before ids were scoped to tenants or after.
	p, err := NewStore(a.Store.db).Find(ctx, in.TenantID, in.PaymentID)
	if err != nil {
		return err
	}
	_, err = a.Queue.SaveContextAndEnqueue(ctx, queue.EnqueueParams{
		ItemType: ItemType, ItemID: p.Key, TenantID: in.TenantID,
		ScheduledExecTime: in.ExecAt, InitWorkflowID: in.InitWorkflowID, Context: in.Context, Paced: in.Paced,
	})
	if errors.Is(err, queue.ErrConflict) {
		return nonRetryable(ErrTypeConflict, err)
	}
	return err
}

// legacyExec replays, and finishes, exec workflows started before
// execution ran SubmitPayment (no "submit-payment" marker): the payment
// is accepted without moving money, as it then was. Remove it one
// release later: an exec workflow lives seconds.
func legacyExec(ctx, holdCtx workflow.Context, paymentID string, notBefore time.Time) error {
	var a *ExecActivities
	if err := workflow.ExecuteLocalActivity(holdCtx, a.ExecutePayment, paymentID, notBefore).Get(ctx, nil); err != nil {
		return err
	}
	if err := workflow.ExecuteLocalActivity(ctx, a.PostProcess, paymentID, executionRef(ctx)).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.ExecuteLocalActivity(ctx, a.SendNotifications, paymentID).Get(ctx, nil)
}

// ExecutePayment is a legacy step: the payment accepted, not before
// notBefore, without moving money.
func (a *ExecActivities) ExecutePayment(ctx context.Context, paymentID string, notBefore time.Time) error {
	if err := dispatch.Hold(ctx, notBefore); err != nil {
		return err
	}
	err := a.Store.Transition(ctx, paymentID, StatusScheduled, StatusAccepted, "")
	if errors.Is(err, ErrWrongStatus) {
		// PROCESSING means a previous run got further: nothing to redo.
		p, gerr := a.Store.Get(ctx, paymentID)
		switch {
		case gerr != nil:
			return gerr // retried: only a status seen is a reason to give up
		case p.Status == StatusProcessing:
			return nil
		}
		return nonRetryable(ErrTypeWrongStatus, err)
	}
	return err
}

// StartSubmitPayment starts a payment's SubmitPayment process with its
// stored Phase A context (a retry finds it started, its data kept).
func (a *ExecActivities) StartSubmitPayment(ctx context.Context, paymentID string) error {
	pc, err := a.Store.Context(ctx, paymentID)
	if err != nil {
		return err
	}
	_, err = a.Process.Start(ctx, process.StartInput{Type: SubmitPaymentType, BusinessKey: paymentID,
		Data: SubmitData(paymentID, pc, time.Now()), WorkflowID: activity.GetInfo(ctx).WorkflowExecution.ID})
	return err
}

// PaymentExecWorkflow is PaymentExecution as it was before an execution
// became one local activity: the same steps, each a local activity of its
// own, behind two GetVersion calls. It is kept for its open runs and for
// an item type configured with it (LegacyExecWorkflowName); remove it
// once neither can be.
func PaymentExecWorkflow(ctx workflow.Context, paymentID, contextJSON string) error {
	pc, err := execContext(contextJSON)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("unreadable payment context: "+err.Error(), "CONTEXT", err)
	}
	var a *ExecActivities
	notBefore := dispatch.NotBefore(ctx)
	holdCtx := execStepContext(ctx, notBefore)
	ctx = execStepContext(ctx, time.Time{})
	if workflow.GetVersion(ctx, "submit-payment", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return legacyExec(ctx, holdCtx, paymentID, notBefore)
	}
	if notBefore.After(workflow.Now(ctx)) {
		if err := workflow.ExecuteLocalActivity(holdCtx, a.Hold, notBefore).Get(ctx, nil); err != nil {
			return err
		}
	}
	if pc.Version >= 3 {
		// The context is stored with the payment; the process is started
		// with it inside the activity, so that only its data's version
		// enters this workflow's history.
		if err := workflow.ExecuteLocalActivity(ctx, a.StartSubmitPayment, paymentID).Get(ctx, nil); err != nil {
			return err
		}
	}
	if succeeded, err := runSubmitPayment(ctx, paymentID, pc); !succeeded {
		return err // a FAILED payment has its code (SubmitPayment's OnFailed)
	}
	if err := workflow.ExecuteLocalActivity(ctx, a.PostProcess, paymentID, executionRef(ctx)).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.ExecuteLocalActivity(ctx, a.SendNotifications, paymentID).Get(ctx, nil)
}
