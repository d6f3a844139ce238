package process

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// ErrNoActor: an operator action must name who asked for it.
var ErrNoActor = errors.New("process: an operator action needs an actor")

// Operator carries out operator actions. Each is one transaction: a
// guarded update and a log entry naming the actor. Then, when the process
// needs driving, it signals the workflow driving it, or starts a
// ProcessWorkflow.
type Operator struct {
	cfg OperatorConfig
}

// NewOperator returns an operator for cfg.
func NewOperator(cfg OperatorConfig) *Operator { return &Operator{cfg: cfg} }

// OperatorConfig is what an Operator acts with.
type OperatorConfig struct {
	DB       DB
	Registry *Registry
	// Client reaches the runners. Nil: the actions change the process
	// only, and whoever drives it must notice (tests, tools).
	Client client.Client
	// TaskQueue is where ProcessWorkflow runs: a worker with Register'ed
	// activities.
	TaskQueue string
	// Exec is how the runners it starts execute steps.
	Exec ExecOptions
	// Now stamps log entries (time.Now when nil).
	Now func() time.Time
}

// Action is an operator action taken inside the caller's transaction
// (RetryTx, CompensateTx, PauseTx, ResumeTx): the process as the action
// left it, and what drives it on once the transaction has committed
// (Drive). The non-Tx methods do both.
type Action struct {
	Instance
	drive func(ctx context.Context) (Instance, error)
}

// Drive makes sure the process is driven after its action committed: it
// starts the runner the action recorded, or wakes the one driving it, and
// returns the process as it is then. Called before the commit, a runner
// would find the process as it was.
func (a Action) Drive(ctx context.Context) (Instance, error) {
	if a.drive == nil {
		return a.Instance, nil
	}
	return a.drive(ctx)
}

// thenDrive drives the process once an action taken in a transaction of its
// own (o.DB) has committed.
func thenDrive(ctx context.Context, a Action, err error) (Instance, error) {
	if err != nil {
		return a.Instance, err
	}
	return a.Drive(ctx)
}

// Retry moves a FAILED process back to RUNNING at its failed step, or a
// COMPENSATION_FAILED one back to COMPENSATING at its failed compensation,
// with fresh retries, and starts a runner for it.
func (o *Operator) Retry(ctx context.Context, id uuid.UUID, actor string) (Instance, error) {
	a, err := o.retry(ctx, o.cfg.DB, id, actor)
	return thenDrive(ctx, a, err)
}

// RetryTx is Retry's change inside the caller's transaction; the
// Action's Drive starts the runner once it has committed.
func (o *Operator) RetryTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (Action, error) {
	return o.retry(ctx, tx, id, actor)
}

func (o *Operator) retry(ctx context.Context, db DB, id uuid.UUID, actor string) (Action, error) {
	inst, err := o.act(ctx, db, id, actor, "retry", []Status{StatusFailed, StatusCompensationFailed},
		func(_ []completed, _ *definition, inst Instance) (Instance, []entry) {
			to := inst
			to.Retries, to.WorkflowID = 0, o.runnerID(inst)
			if inst.Status == StatusFailed {
				to.Status = StatusRunning
				to.FailedStep, to.ErrorCode, to.ErrorMessage = "", "", ""
			} else {
				to.Status = StatusCompensating
				to.CompensationErrorCode, to.CompensationErrorMessage = "", ""
			}
			return to, []entry{{event: EventOperatorRetry, step: to.Step, detail: map[string]any{
				"from": inst.Status, "workflowId": to.WorkflowID,
			}}}
		})
	if err != nil {
		return Action{Instance: inst}, err
	}
	return Action{Instance: inst, drive: func(ctx context.Context) (Instance, error) { return inst, o.startRunner(ctx, inst) }}, nil
}

// Compensate forces compensation of a NEW, RUNNING, PAUSED or FAILED
// process: whatever completed is undone, in reverse order, and the process
// ends COMPENSATED (at once when nothing needs undoing).
func (o *Operator) Compensate(ctx context.Context, id uuid.UUID, actor string) (Instance, error) {
	a, err := o.compensate(ctx, o.cfg.DB, id, actor)
	return thenDrive(ctx, a, err)
}

// CompensateTx is Compensate's change inside the caller's transaction;
// the Action's Drive starts or wakes the runner once it has committed.
func (o *Operator) CompensateTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (Action, error) {
	return o.compensate(ctx, tx, id, actor)
}

func (o *Operator) compensate(ctx context.Context, db DB, id uuid.UUID, actor string) (Action, error) {
	var from Status
	inst, err := o.act(ctx, db, id, actor, "compensate", []Status{StatusNew, StatusRunning, StatusPaused, StatusFailed},
		func(done []completed, def *definition, inst Instance) (Instance, []entry) {
			from = inst.Status
			to := inst
			to.Retries, to.ResumeStatus = 0, ""
			if to.ErrorCode == "" {
				to.FailedStep, to.ErrorCode, to.ErrorMessage = inst.Step, CodeOperator, "compensation forced by "+actor
			}
			entries := []entry{{event: EventOperatorCompensate, step: inst.Step, detail: map[string]any{"from": inst.Status}}}
			plan := def.compensationPlan(done)
			if len(plan) == 0 {
				to.Status = StatusCompensated
				return to, append(entries, entry{event: EventProcessCompensated, step: inst.Step, code: to.ErrorCode})
			}
			to.Status, to.Step = StatusCompensating, plan[0]
			if from == StatusFailed {
				// Its runner has finished: a new one is needed.
				to.WorkflowID = o.runnerID(inst)
			}
			return to, append(entries, entry{event: EventProcessCompensating, step: plan[0], code: to.ErrorCode, detail: map[string]any{"plan": plan}})
		})
	switch {
	case err != nil || inst.Status != StatusCompensating:
		return Action{Instance: inst}, err
	case from == StatusFailed:
		return Action{Instance: inst, drive: func(ctx context.Context) (Instance, error) { return inst, o.startRunner(ctx, inst) }}, nil
	}
	return Action{Instance: inst, drive: func(ctx context.Context) (Instance, error) { return o.Wake(ctx, id, actor) }}, nil
}

// Pause stops a NEW, RUNNING or COMPENSATING process before its next step:
// a step in flight holds the row lock, so the pause lands before it or
// after it, never inside. The runner waits for Resume.
func (o *Operator) Pause(ctx context.Context, id uuid.UUID, actor string) (Instance, error) {
	a, err := o.pause(ctx, o.cfg.DB, id, actor)
	return thenDrive(ctx, a, err)
}

// PauseTx is Pause inside the caller's transaction (its Action has
// nothing to drive).
func (o *Operator) PauseTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (Action, error) {
	return o.pause(ctx, tx, id, actor)
}

func (o *Operator) pause(ctx context.Context, db DB, id uuid.UUID, actor string) (Action, error) {
	inst, err := o.act(ctx, db, id, actor, "pause", []Status{StatusNew, StatusRunning, StatusCompensating},
		func(_ []completed, _ *definition, inst Instance) (Instance, []entry) {
			to := inst
			to.Status, to.ResumeStatus = StatusPaused, inst.Status
			return to, []entry{{event: EventProcessPaused, step: inst.Step, detail: map[string]any{"resumeStatus": inst.Status}}}
		})
	return Action{Instance: inst}, err
}

// Resume puts a PAUSED process back in the status it had and wakes its
// runner (a signal; a new runner if none is left).
func (o *Operator) Resume(ctx context.Context, id uuid.UUID, actor string) (Instance, error) {
	a, err := o.resume(ctx, o.cfg.DB, id, actor)
	return thenDrive(ctx, a, err)
}

// ResumeTx is Resume's change inside the caller's transaction; the
// Action's Drive wakes the runner once it has committed.
func (o *Operator) ResumeTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (Action, error) {
	return o.resume(ctx, tx, id, actor)
}

func (o *Operator) resume(ctx context.Context, db DB, id uuid.UUID, actor string) (Action, error) {
	inst, err := o.act(ctx, db, id, actor, "resume", []Status{StatusPaused},
		func(_ []completed, _ *definition, inst Instance) (Instance, []entry) {
			to := inst
			to.Status, to.ResumeStatus = inst.ResumeStatus, ""
			return to, []entry{{event: EventProcessResumed, step: inst.Step, detail: map[string]any{"status": inst.ResumeStatus}}}
		})
	if err != nil {
		return Action{Instance: inst}, err
	}
	return Action{Instance: inst, drive: func(ctx context.Context) (Instance, error) { return o.Wake(ctx, id, actor) }}, nil
}

// Wake makes sure a NEW, RUNNING or COMPENSATING process is being driven:
// it signals the workflow recorded as its driver to look at once, and when
// that workflow is gone, starts a ProcessWorkflow (logged as
// RunnerAttached). Safe to call any time; it is how a runner that failed
// to start after an action is started after all.
func (o *Operator) Wake(ctx context.Context, id uuid.UUID, actor string) (Instance, error) {
	inst, err := Get(ctx, o.cfg.DB, id)
	if err != nil || o.cfg.Client == nil || !inst.Status.in(StatusNew, StatusRunning, StatusCompensating) {
		return inst, err
	}
	if inst.WorkflowID != "" {
		err := o.cfg.Client.SignalWorkflow(ctx, inst.WorkflowID, "", WakeSignal(id), nil)
		var gone *serviceerror.NotFound
		if !errors.As(err, &gone) {
			if err != nil {
				return inst, fmt.Errorf("process %s: signal %s: %w", id, inst.WorkflowID, err)
			}
			return inst, nil
		}
	}
	inst, err = o.act(ctx, o.cfg.DB, id, actor, "wake", []Status{StatusNew, StatusRunning, StatusCompensating},
		func(_ []completed, _ *definition, inst Instance) (Instance, []entry) {
			to := inst
			to.WorkflowID = o.runnerID(inst)
			return to, []entry{{event: EventRunnerAttached, step: inst.Step, detail: map[string]any{"workflowId": to.WorkflowID}}}
		})
	if err != nil {
		return inst, err
	}
	return inst, o.startRunner(ctx, inst)
}

// change computes an action's new instance and log entries from the
// instance read, its definition and its completed steps.
type change func(done []completed, def *definition, inst Instance) (Instance, []entry)

// act runs one operator action in one transaction: read the instance
// under its row lock, check the status, write guarded by the version read,
// log with the actor, run the final status's hook. The lock queues the
// action behind a step in flight, and ahead of the runner's next step: a
// pause asked for during a step lands right after it.
func (o *Operator) act(ctx context.Context, db DB, id uuid.UUID, actor, action string, allowed []Status, fn change) (Instance, error) {
	if actor == "" {
		return Instance{}, ErrNoActor
	}
	now := time.Now
	if o.cfg.Now != nil {
		now = o.cfg.Now
	}
	var out Instance
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		row, err := q.LockInstance(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		if err != nil {
			return fmt.Errorf("process %s: %s: read: %w", id, action, err)
		}
		inst := fromRow(row)
		if err := checkStatus(inst, action, allowed...); err != nil {
			return err
		}
		def, err := o.cfg.Registry.lookup(inst.Type)
		if err != nil {
			return err
		}
		done, err := completedSteps(ctx, q, id)
		if err != nil {
			return err
		}
		to, entries := fn(done, def, inst)
		for i := range entries {
			entries[i].actor = actor
		}
		if out, err = write(ctx, q, now(), inst, to, entries...); err != nil {
			return err
		}
		return runHook(ctx, tx, def, out)
	})
	if err != nil {
		return Instance{}, err
	}
	return out, nil
}

// runnerID names the runner an action starts: unique per action, since
// the version moves with every change. Without a client nothing is
// started and the driver stays as it was.
func (o *Operator) runnerID(inst Instance) string {
	if o.cfg.Client == nil {
		return inst.WorkflowID
	}
	return RunnerWorkflowID(inst.ID, inst.Version+1)
}

// startRunner starts ProcessWorkflow under the id the action recorded.
func (o *Operator) startRunner(ctx context.Context, inst Instance) error {
	if o.cfg.Client == nil {
		return nil
	}
	_, err := o.cfg.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: inst.WorkflowID, TaskQueue: o.cfg.TaskQueue},
		WorkflowName, Drive{ProcessID: inst.ID, Exec: o.cfg.Exec})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("process %s: %s recorded, but runner %s did not start (Wake starts one): %w", inst.ID, inst.Status, inst.WorkflowID, err)
	}
	return nil
}
