package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ExecOptions say how a runner executes its activities. Zero values take
// the defaults below.
type ExecOptions struct {
	// Local runs the activities as local activities, on the worker running
	// the workflow: no round trip through the engine per step (the
	// workflow's worker must have Register'ed the activities).
	Local bool
	// TaskQueue of regular activities; the workflow's own when empty.
	TaskQueue string
	// Timeout is an activity attempt's StartToClose (default 1 min). It
	// must exceed every step's Timeout.
	Timeout time.Duration
	// RetryPolicy retries infrastructure failures (default: 1 s doubling
	// to 30 s, 10 attempts). When it gives up, Run fails and the process
	// stays where it was, for the caller's own retry to continue.
	RetryPolicy *temporal.RetryPolicy
	// InitialBackoff and MaxBackoff space the attempts of a step that
	// failed with a retryable code: InitialBackoff × 2^(retries−1), at
	// most MaxBackoff (defaults 1 s, 1 min).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// ResumeCheck is how often a paused runner looks again without a
	// resume signal (default 30 s), so a lost signal cannot strand it.
	ResumeCheck time.Duration
}

// localStepBudget bounds a local step's retries in time, well beyond
// what the retry policy's attempts take.
const localStepBudget = 30 * time.Minute

func (o ExecOptions) withDefaults() ExecOptions {
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.RetryPolicy == nil {
		o.RetryPolicy = &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 10,
		}
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.ResumeCheck <= 0 {
		o.ResumeCheck = 30 * time.Second
	}
	return o
}

// Options start (or find) a process for Run.
type Options struct {
	Type        string
	BusinessKey string
	// Data is the initial data: a D of the definition (or its JSON,
	// a json.RawMessage); ignored when the process exists already. It is
	// the Start activity's input, so in a workflow it enters the history.
	Data any
	Exec ExecOptions
}

// startData is opts.Data as the Start activity takes it: encoding a
// value is deterministic, so a workflow may do it.
func (opts Options) startData() (json.RawMessage, error) {
	if opts.Data == nil {
		return nil, nil
	}
	b, err := json.Marshal(opts.Data)
	if err != nil {
		return nil, fmt.Errorf("process %s/%s: encode the initial data: %w", opts.Type, opts.BusinessKey, err)
	}
	return b, nil
}

// Outcome is how a process ended for its runner.
type Outcome struct {
	ProcessID uuid.UUID
	Status    Status
	// Step is the last step run, or the compensation that failed.
	Step string
	// The failure that made the process fail or compensate.
	FailedStep   string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
	// The compensation failure of a COMPENSATION_FAILED process.
	CompensationErrorCode    string `json:",omitempty"`
	CompensationErrorMessage string `json:",omitempty"`
	// Data is the process's data as it ended, as stored (JSON). It is
	// never serialized: an Outcome is an activity's or workflow's result,
	// kept in the engine's history, and the data holds what the engine
	// must not (names, account numbers). A workflow reads it from the
	// store (Get).
	Data json.RawMessage `json:"-"`
}

func outcomeOf(inst Instance) Outcome {
	return Outcome{
		ProcessID: inst.ID, Status: inst.Status, Step: inst.Step, FailedStep: inst.FailedStep,
		ErrorCode: inst.ErrorCode, ErrorMessage: inst.ErrorMessage,
		CompensationErrorCode: inst.CompensationErrorCode, CompensationErrorMessage: inst.CompensationErrorMessage,
		Data: inst.Data,
	}
}

// WakeSignal is the signal that tells a process's runner to look again at
// once (after a resume, a forced compensation); its payload is ignored.
func WakeSignal(id uuid.UUID) string { return "process-wake/" + id.String() }

// RunnerWorkflowID is the id of the n-th runner workflow an operator
// action starts for a process (n: the instance version it was started at).
func RunnerWorkflowID(id uuid.UUID, n int64) string { return fmt.Sprintf("process-%s-%d", id, n) }

// Run starts the process (or finds the one a previous run of the calling
// workflow started) and drives it to a final status, inline in the
// calling workflow. A business outcome, failed or not, is an Outcome with
// a nil error; the error is for infrastructure that stayed down through
// the activity retries, the process then waits where it was for the next
// run.
//
// While the process is paused, Run waits for the resume signal (with a
// fallback check every ResumeCheck); a long pause grows the caller's
// history by a timer and an activity per check.
func Run(ctx workflow.Context, opts Options) (Outcome, error) {
	r := runner{ctx: ctx, opts: opts.Exec.withDefaults()}
	id := ID(opts.Type, opts.BusinessKey)
	data, err := opts.startData()
	if err != nil {
		return Outcome{ProcessID: id, Status: StatusNew}, err
	}
	var st State
	err = r.call(StartActivity, StartInput{
		Type: opts.Type, BusinessKey: opts.BusinessKey, Data: data,
		WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID,
	}, &st)
	if err != nil {
		return Outcome{ProcessID: id, Status: StatusNew}, fmt.Errorf("process %s/%s: start: %w", opts.Type, opts.BusinessKey, err)
	}
	return r.drive(st, false)
}

// Drive is ProcessWorkflow's input.
type Drive struct {
	ProcessID uuid.UUID
	Exec      ExecOptions
}

// ProcessWorkflow drives an existing process by id to a final status: the
// runner an operator action starts when the process's own caller has
// finished. It continues as new when its history grows long (a long
// pause).
func ProcessWorkflow(ctx workflow.Context, in Drive) (Outcome, error) {
	r := runner{ctx: ctx, opts: in.Exec.withDefaults()}
	var st State
	if err := r.call(LoadActivity, in.ProcessID, &st); err != nil {
		return Outcome{ProcessID: in.ProcessID}, fmt.Errorf("process %s: load: %w", in.ProcessID, err)
	}
	out, err := r.drive(st, true)
	if errors.Is(err, errContinueAsNew) {
		return out, workflow.NewContinueAsNewError(ctx, WorkflowName, in)
	}
	return out, err
}

var errContinueAsNew = errors.New("process: continue as new")

// maxHistory is the history length at which a waiting ProcessWorkflow
// continues as new.
const maxHistory = 10_000

type runner struct {
	ctx  workflow.Context
	opts ExecOptions
}

// drive is the loop: wait if paused or backing off, execute the current
// step, repeat with what the activity says. Every decision comes from an
// activity's result, so replays take the same path.
func (r runner) drive(st State, mayContinueAsNew bool) (Outcome, error) {
	wake := workflow.GetSignalChannel(r.ctx, WakeSignal(st.ProcessID))
	for {
		done, wait, req := r.opts.plan(st)
		if done {
			return st.outcome(), nil
		}
		if wait > 0 {
			info := workflow.GetInfo(r.ctx)
			if mayContinueAsNew && (info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > maxHistory) {
				return Outcome{ProcessID: st.ProcessID, Status: st.Status, Step: st.Step}, errContinueAsNew
			}
			r.sleep(wake, wait)
		}
		var res StepResult
		if err := r.call(ExecuteActivity, req, &res); err != nil {
			// The activity's error names the process and the step.
			return Outcome{ProcessID: st.ProcessID, Status: st.Status, Step: st.Step}, err
		}
		st = res.State
	}
}

// plan is what a runner does next with a process in st: nothing more
// (done), or wait (paused, or backing off a retryable failure) and then
// execute req. Both runners — the workflow and RunDirect — follow it.
func (o ExecOptions) plan(st State) (done bool, wait time.Duration, req StepRequest) {
	if st.Status.Final() {
		return true, 0, StepRequest{}
	}
	switch {
	case st.Status == StatusPaused:
		wait = o.ResumeCheck
	case st.Retries > 0:
		wait = o.backoff(st.Retries)
	}
	compensating := st.Status == StatusCompensating || (st.Status == StatusPaused && st.ResumeStatus == StatusCompensating)
	return false, wait, StepRequest{ProcessID: st.ProcessID, Step: st.Step, Compensation: compensating}
}

// outcome is how a process in a final status ended.
func (st State) outcome() Outcome {
	if st.Outcome != nil {
		return *st.Outcome
	}
	return Outcome{ProcessID: st.ProcessID, Status: st.Status, Step: st.Step}
}

// sleep waits d, or less if the wake signal comes; signals that came
// meanwhile are used up, since one look serves them all.
func (r runner) sleep(wake workflow.ReceiveChannel, d time.Duration) {
	tctx, cancel := workflow.WithCancel(r.ctx)
	defer cancel()
	sel := workflow.NewSelector(r.ctx)
	sel.AddFuture(workflow.NewTimer(tctx, d), func(workflow.Future) {})
	sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(r.ctx, nil) })
	sel.Select(r.ctx)
	for wake.ReceiveAsync(nil) {
	}
}

func (o ExecOptions) backoff(retries int) time.Duration {
	d := o.InitialBackoff
	for i := 1; i < retries && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
}

func (r runner) call(name string, arg, out any) error {
	if r.opts.Local {
		// ScheduleToClose would default to one attempt's timeout, counted
		// from when the step was first scheduled: a worker failover would
		// leave the next worker one attempt. The retry policy's attempts
		// bound the retries instead.
		ctx := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: r.opts.Timeout, ScheduleToCloseTimeout: max(localStepBudget, r.opts.Timeout), RetryPolicy: r.opts.RetryPolicy,
		})
		return workflow.ExecuteLocalActivity(ctx, name, arg).Get(ctx, out)
	}
	ctx := workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		TaskQueue: r.opts.TaskQueue, StartToCloseTimeout: r.opts.Timeout, RetryPolicy: r.opts.RetryPolicy,
	})
	return workflow.ExecuteActivity(ctx, name, arg).Get(ctx, out)
}
