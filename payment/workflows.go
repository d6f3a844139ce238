package payment

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
)

// Task queues and workflow names of the payment workers.
const (
	InitTaskQueue = "payment-init-task-queue"
	ExecTaskQueue = "payment-exec-task-queue"
	// PhaseAWorkflowName is PaymentPhaseA's: Phase A for payments taken
	// in (a single payment, or a chunk of a file), which the workflow
	// reads from its intake row, not from its input.
	PhaseAWorkflowName = "PaymentPhaseA"
	// ExecWorkflowName is PaymentExecution's: Phase B for one payment.
	ExecWorkflowName = "PaymentExecution"
)

// InitWorkflowID is the id of a single payment's Phase A workflow: derived
// from its key, so a second submission of the same payment cannot start a
// second one.
func InitWorkflowID(key string) string { return "init-payment-" + key }

// Context is the Phase A output the execution receives, as JSON.
type Context struct {
	Version    int        `json:"version"`
	Request    Request    `json:"request"`
	Enrichment Enrichment `json:"enrichment"`
	Amount     string     `json:"amount"` // decimal, normalized
	Rules      []string   `json:"rulesPassed"`
	// PacingConfig is the rate-limit config the payment's slot is of
	// (stored contexts only; empty: not paced, or a context from before).
	PacingConfig string `json:"pacingConfig,omitempty"`
	// TraceParent is the trace context of the Phase A that stored the
	// payment (a W3C traceparent; stored contexts only; empty: tracing
	// was off): the execution's span is its child.
	TraceParent string `json:"traceparent,omitempty"`
	// TenantPacingConfig is the tenant's own rate-limit config its
	// execution is also held under (empty: none). Rail and ExecutionDate
	// (YYYY-MM-DD) are where and on which business day it executes:
	// the execution does not begin past that day's cut-off (stored
	// contexts only; empty: stored before rails).
	TenantPacingConfig string `json:"tenantPacingConfig,omitempty"`
	Rail               string `json:"rail,omitempty"`
	ExecutionDate      string `json:"executionDate,omitempty"`

	// scheduledAt is the payment's scheduled time as stored (read with a
	// stored context): later than the slot an execution was started for
	// once the payment was rolled to another day. pausedBy is the pause
	// that holds it (empty: none).
	scheduledAt time.Time
	pausedBy    string
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

// PaymentPhaseA is Phase A for payments taken in, those its intake row
// holds (payment_intake, under the workflow's id).
// The requests, and the creditors' names and IBANs in them, stay in
// PostgreSQL, out of the engine's history, and so do their keys: a
// chunk's 2,500 keys were 100 KB in its start and again in its
// activity's input, held in the engine's and gRPC's buffers and written
// to its history. One activity judges them all and stores the verdicts
// in one transaction; payments another run took on already are left as
// they are.
func PaymentPhaseA(ctx workflow.Context) (BatchResult, error) {
	ctx = workflow.WithActivityOptions(ctx, initOptions)
	var a *InitActivities
	var res BatchResult
	err := workflow.ExecuteActivity(ctx, a.InitIntake, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, &res)
	return res, err
}

// PaymentExecution is Phase B's business logic, knowing nothing of the
// queue: hold a paced payment until its slot, run the SubmitPayment
// process (debit, limits, FX, booking and rail instruction; compensated
// on a business failure, which leaves the payment FAILED with its code),
// then record the execution and notify the parties (ACCEPTED →
// PROCESSING). A business failure completes the workflow: the dispatch
// worked, the payment did not, and retrying it would fail the same way.
// An infrastructure failure fails it, for the queue's retry and
// dead-letter path; the process resumes where it stopped on the next run.
//
// A run that goes through is one local activity, Execution: the engine
// records one marker for the whole execution, where a local activity per
// step recorded six to eight, and the workflow calls no GetVersion, each of which
// records a marker and a search attribute upsert (a visibility write the
// product never reads). Changes to it are made as a new workflow type,
// not behind GetVersion, for the same reason. Only a process that has to
// wait (a step's retryable failure backing off, an operator's pause) goes
// on step by step, in process.Run. If the worker dies, the workflow task
// times out and another worker runs Execution again: every step in it is
// idempotent, and the process goes on from the step it reached.
func PaymentExecution(ctx workflow.Context, paymentID, contextJSON string) error {
	pc, err := execContext(contextJSON)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("unreadable payment context: "+err.Error(), "CONTEXT", err)
	}
	in := ExecutionInput{
		PaymentID: paymentID, Context: pc, NotBefore: dispatch.NotBefore(ctx),
		WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, Ref: executionRef(ctx),
	}
	var a *ExecActivities
	var done bool
	if err := workflow.ExecuteLocalActivity(execStepContext(ctx, in.NotBefore), a.Execution, in).Get(ctx, &done); err != nil {
		return err
	}
	if done {
		return nil
	}
	ctx = execStepContext(ctx, time.Time{})
	if succeeded, err := runSubmitPayment(ctx, paymentID, pc); !succeeded {
		return err // a FAILED payment has its code (SubmitPayment's OnFailed)
	}
	return workflow.ExecuteLocalActivity(ctx, a.Finish, paymentID, in.Ref).Get(ctx, nil)
}

// runSubmitPayment drives the payment's SubmitPayment process step by
// step, a local activity each, and reports whether it succeeded.
//
// pc may be a stored context's version alone when Execution started the
// process already: its data is then not needed, and never enters the
// workflow's history.
func runSubmitPayment(ctx workflow.Context, paymentID string, pc Context) (bool, error) {
	var data any
	if pc.Version < 3 || pc.Request.TenantID != "" {
		data = SubmitData(paymentID, pc, workflow.Now(ctx))
	}
	out, err := process.Run(ctx, process.Options{
		Type: SubmitPaymentType, BusinessKey: paymentID, Data: data,
		Exec: process.ExecOptions{Local: true},
	})
	return err == nil && out.Status == process.StatusSucceeded, err
}

// executionRef is what a payment records as its execution: the workflow's
// id and run.
func executionRef(ctx workflow.Context) string {
	e := workflow.GetInfo(ctx).WorkflowExecution
	return e.ID + "/" + e.RunID
}

// execStepContext carries the options of an execution's local activities;
// one that holds a paced payment until notBefore has that much more time.
func execStepContext(ctx workflow.Context, notBefore time.Time) workflow.Context {
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
	if hold := notBefore.Sub(workflow.Now(ctx)); hold > 0 {
		opts.StartToCloseTimeout += hold
		opts.ScheduleToCloseTimeout += hold
	}
	if !notBefore.IsZero() {
		// The rate limiter may hold a paced payment past its slot, when its
		// window's executions are taken (pacing.Limiter.HoldSlot): without
		// the room, the attempt would time out and its retry come later.
		opts.StartToCloseTimeout += pacedAllowance
	}
	return workflow.WithLocalActivityOptions(ctx, opts)
}

// pacedAllowance is how much longer than its slot a paced payment's
// execution may be held by its rate limiter, per attempt.
const pacedAllowance = 2 * time.Minute

// localStepBudget bounds the retries of an execution's local activity
// in time, well beyond what its attempts take.
const localStepBudget = 30 * time.Minute

// ExecActivities hold Phase B's I/O; each is idempotent and its status
// change guarded.
type ExecActivities struct {
	cfg ExecConfig
}

// NewExecActivities returns Phase B's activities for cfg.
func NewExecActivities(cfg ExecConfig) *ExecActivities { return &ExecActivities{cfg: cfg} }

// ExecConfig is what Phase B's activities run with.
type ExecConfig struct {
	Store *Store
	// Slots holds a paced payment to its slot and counts it in the
	// executions of its config's window (pacing.Limiter.HoldSlot); nil:
	// payments are held to their slots only (dispatch.Hold).
	Slots SlotHolder
	// Process runs SubmitPayment's steps; RegisterExec registers it with
	// Phase B (its registry must hold SubmitPayment).
	Process *process.Activities
	// Metrics is where an execution held to its time (NotBefore) records
	// its lag behind it (dispatch.Metrics.ObserveLag); nil: nowhere.
	Metrics *dispatch.Metrics
	// Tracer gives the execution of a payment stored with a trace
	// context (Context.TraceParent) its span, payment.execute, the child
	// of that context; nil (tracing off): none.
	Tracer trace.Tracer
	// Rails, when set, keep executions from beginning past their rail's
	// cut-off: such a payment meets its tenant's cut-off rule instead
	// (missedCutoff). Pacer and Queue give a rolled payment its new slot
	// and its queue item back; CutoffGuard as InitConfig's.
	Rails       Rails
	Pacer       Pacer
	Queue       *queue.Queue
	CutoffGuard time.Duration
}

// ExecutionInput is what Execution needs of a payment's execution.
type ExecutionInput struct {
	PaymentID string
	Context   Context
	// NotBefore is the paced slot (zero: none).
	NotBefore time.Time
	// WorkflowID drives the process; Ref is recorded as the payment's
	// execution (the workflow's id and run).
	WorkflowID, Ref string
}

// Execution is an execution that goes through, in one local activity: hold
// until the slot, start SubmitPayment and run its steps while none has
// to wait, then, once it succeeded, Finish. It reports whether the
// execution is done: false leaves a process waiting to its workflow.
func (a *ExecActivities) Execution(ctx context.Context, in ExecutionInput) (bool, error) {
	executionTime, run, done, err := a.begin(ctx, &in, nil)
	if !run {
		return done, err
	}
	o := a.executeAlone(ctx, in, executionTime)
	return o.Done, o.Err
}

// begin is an execution up to its SubmitPayment: the payment's context
// and status, its cut-off, and its hold until its slot. run false: there
// is nothing to execute, and done and err are the execution's answer;
// else executionTime is when the limiter let it go.
// stored, when not nil, is the payment's context and status read just
// before (a group's, read together), used instead of reading them again.
func (a *ExecActivities) begin(ctx context.Context, in *ExecutionInput, stored *StoredContext) (executionTime time.Time, run, done bool, err error) {
	executionTime, done, err = a.beginOrAnswer(ctx, in, stored)
	return executionTime, err == nil && !done && !executionTime.IsZero(), done, err
}

// beginOrAnswer is begin's body: a zero time with no error and done
// false never comes back with something to run.
func (a *ExecActivities) beginOrAnswer(ctx context.Context, in *ExecutionInput, stored *StoredContext) (time.Time, bool, error) {
	none := time.Time{}
	var status Status
	var err error
	if stored != nil && in.Context.Version >= 3 {
		in.Context, status = stored.Context, stored.Status
	} else if status, err = a.loadContext(ctx, in.PaymentID, &in.Context); err != nil {
		return none, false, err
	}
	if status == StatusCancelled {
		// Cancelled before its execution began: nothing to do, unless a
		// process was started (then Advance ends it, at its first step).
		if _, err := process.Get(ctx, a.cfg.Store.db, process.ID(SubmitPaymentType, in.PaymentID)); errors.Is(err, process.ErrNotFound) {
			return none, true, nil
		} else if err != nil {
			return none, false, err
		}
	}
	if status == StatusHeld || status == StatusAwaitingApproval {
		return none, true, nil // held (at its cut-off, by a control) or awaiting approval: never executed from there
	}
	if status == StatusScheduled && in.Context.pausedBy != "" && in.Context.pausedBy != resumedMark {
		// Paused before its execution began: its item waits PARKED for the
		// resume, which gives it a new slot.
		return none, false, dispatch.Deferred(time.Time{}, "paused ("+in.Context.pausedBy+")")
	}
	if status == StatusScheduled && a.rolledSince(ctx, *in) {
		// Rolled to a later day by an earlier run, whose deferral moved
		// its queue item: this run (a group run again after a crash) is
		// stale, and its item no longer its.
		return none, false, dispatch.Deferred(in.Context.scheduledAt, "rescheduled by an earlier run")
	}
	executionTime := time.Now()
	if status == "" || status == StatusScheduled {
		// Its slot already past its cut-off (a rail's cut-off moved): it
		// is not held for nothing.
		if late, day, rail, err := a.pastCutoff(ctx, in.Context, later(in.NotBefore, executionTime)); err != nil || late {
			if err != nil {
				return none, false, err
			}
			done, err := a.missedCutoff(ctx, *in, day, rail, later(in.NotBefore, executionTime))
			return none, done, err
		}
		// A payment past SCHEDULED was executed by an earlier run (a worker
		// lost after it): held again, it would count twice in its
		// limiter's window.
		if executionTime, err = a.hold(ctx, *in); err != nil {
			return none, false, err
		}
		// Held into a later window (a backlog, a lowered limit, a pause):
		// it begins only if its instruction can still make the cut-off.
		if late, day, rail, err := a.pastCutoff(ctx, in.Context, executionTime); err != nil || late {
			if err != nil {
				return none, false, err
			}
			done, err := a.missedCutoff(ctx, *in, day, rail, executionTime)
			return none, done, err
		}
		a.cfg.Metrics.ObserveLag(ItemType, in.NotBefore, executionTime)
		a.cfg.Metrics.CountExecution(ItemType, in.Context.Request.TenantID)
	}
	return executionTime, false, nil
}

// execute runs the payment's SubmitPayment while no step has to wait
// and, once it succeeded, Finish.
func (a *ExecActivities) execute(ctx context.Context, in ExecutionInput, executionTime time.Time) (bool, error) {
	// The execution time is when the slot came, as the worker saw it; a
	// retry finds the process started and its data kept.
	data, err := json.Marshal(SubmitData(in.PaymentID, in.Context, executionTime))
	if err != nil {
		return false, err
	}
	st, err := a.cfg.Process.Advance(ctx, process.StartInput{
		Type: SubmitPaymentType, BusinessKey: in.PaymentID, Data: data, WorkflowID: in.WorkflowID,
	})
	switch {
	case err != nil:
		return false, err
	case !st.Status.Final():
		return false, nil
	case st.Status != process.StatusSucceeded:
		return true, nil // FAILED with its code, by SubmitPayment's OnFailed
	}
	return true, a.Finish(ctx, in.PaymentID, in.Ref)
}

// SlotHolder holds an execution to its slot under a rate-limit config and
// counts it in the executions of the window it runs in (pacing.Limiter).
type SlotHolder interface {
	HoldSlots(ctx context.Context, slot time.Time, configNames ...string) (pacing.Held, error)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// hold waits for the payment's slot. A paced payment whose context names
// its rate-limit config is let go by the config's limiter, which counts
// executions per window: one that comes after its slot's window, or finds
// its window's executions taken, waits for room in a later window rather
// than burst over the limit.
// It returns the execution's time: when it was let go.
func (a *ExecActivities) hold(ctx context.Context, in ExecutionInput) (time.Time, error) {
	if a.cfg.Slots == nil || in.Context.PacingConfig == "" || in.NotBefore.IsZero() {
		err := dispatch.Hold(ctx, in.NotBefore)
		return time.Now(), err
	}
	configs := []string{in.Context.PacingConfig}
	if t := in.Context.TenantPacingConfig; t != "" && t != in.Context.PacingConfig {
		configs = append(configs, t)
	}
	held, err := a.cfg.Slots.HoldSlots(ctx, in.NotBefore, configs...)
	// Debug, not Info: at a high rate a payment whose slot is at its
	// window's end often goes in the next one, and a line for each (half
	// the payments at 400/s) drowned the log; the execution lag's
	// histogram (dispatch.Metrics.ObserveLag) counts them.
	if err == nil && held.Moved && activity.IsActivity(ctx) {
		activity.GetLogger(ctx).Debug("a payment went in a later window than its slot's", "payment", in.PaymentID,
			"slot", in.NotBefore, "went_at", held.At)
	}
	return held.At, err
}

// loadContext fills in a payment's Phase A context from its row when the
// queue item carried none, or only its version, and tells the
// payment's status (empty when the context came whole).
func (a *ExecActivities) loadContext(ctx context.Context, paymentID string, pc *Context) (Status, error) {
	if pc.Version < 3 {
		return "", nil
	}
	stored, status, err := a.cfg.Store.ContextAndStatus(ctx, paymentID)
	if err != nil {
		return "", err
	}
	*pc = stored
	return status, nil
}

// Finish records the execution, notifies the parties and moves the
// payment ACCEPTED → PROCESSING, once SubmitPayment succeeded: one
// statement (Store.Finish). A payment the rail already answered for
// (DELIVERED, RETURNED: the relayer can be faster than this step) keeps
// its status; any other is a wrong status, not retried.
func (a *ExecActivities) Finish(ctx context.Context, paymentID, ref string) error {
	err := a.cfg.Store.Finish(ctx, paymentID, ref)
	if errors.Is(err, ErrWrongStatus) {
		return nonRetryable(ErrTypeWrongStatus, err)
	}
	return err
}

// RegisterInit puts Phase A on a worker of InitTaskQueue.
func RegisterInit(r worker.Registry, a *InitActivities) {
	r.RegisterWorkflowWithOptions(PaymentPhaseA, workflow.RegisterOptions{Name: PhaseAWorkflowName})
	r.RegisterActivity(a)
}

// RegisterExec puts Phase B (PaymentExecution) on a worker of
// ExecTaskQueue, with the process manager's activities its
// SubmitPayment runs (ExecConfig.Process) and its ProcessWorkflow, which
// an operator's retry of a payment's process starts on this task queue.
func RegisterExec(r worker.Registry, a *ExecActivities) {
	r.RegisterWorkflowWithOptions(PaymentExecution, workflow.RegisterOptions{Name: ExecWorkflowName})
	r.RegisterActivity(a)
	process.Register(r, a.cfg.Process)
}
