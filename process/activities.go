package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// Registered names. The activities are registered by name, not as a
// struct, so they never collide with a domain's activities on the same
// worker.
const (
	StartActivity   = "process.Start"
	LoadActivity    = "process.Load"
	ExecuteActivity = "process.Execute"
	AdvanceActivity = "process.Advance"
	// WorkflowName is ProcessWorkflow's registered name.
	WorkflowName = "ProcessWorkflow"
)

// errTypeInvalid is the Temporal error type of failures no retry can
// cure: an unknown process or process type.
const errTypeInvalid = "PROCESS_INVALID"

// Activities are the process manager's I/O: every read and write of
// PostgreSQL a runner needs. Each is idempotent.
type Activities struct {
	cfg ActivitiesConfig
}

// ActivitiesConfig is what the process manager's activities run with.
type ActivitiesConfig struct {
	DB       DB
	Registry *Registry
	// Now stamps log entries (time.Now when nil).
	Now func() time.Time
}

// NewActivities returns the process manager's activities for cfg.
func NewActivities(cfg ActivitiesConfig) *Activities { return &Activities{cfg: cfg} }

// Register puts the activities and ProcessWorkflow on a worker. Register
// them on the worker of every workflow that calls Run: local activities
// run on the caller's own worker.
func Register(r worker.Registry, a *Activities) {
	r.RegisterActivityWithOptions(a.Start, activity.RegisterOptions{Name: StartActivity})
	r.RegisterActivityWithOptions(a.Load, activity.RegisterOptions{Name: LoadActivity})
	r.RegisterActivityWithOptions(a.Execute, activity.RegisterOptions{Name: ExecuteActivity})
	r.RegisterActivityWithOptions(a.Advance, activity.RegisterOptions{Name: AdvanceActivity})
	r.RegisterWorkflowWithOptions(ProcessWorkflow, workflow.RegisterOptions{Name: WorkflowName})
}

func (a *Activities) now() time.Time {
	if a.cfg.Now != nil {
		return a.cfg.Now()
	}
	return time.Now()
}

// StartInput asks for a process to be created, or found.
type StartInput struct {
	Type        string
	BusinessKey string
	// Data is the initial data: a JSON object that decodes into the
	// definition's D with no key to spare (ignored when the process
	// exists). It is JSON, not a D, because the activity's input is
	// decoded before anyone knows the type.
	Data json.RawMessage
	// WorkflowID is the caller's: where a resume signal goes.
	WorkflowID string
}

// State is where a process stands, as a runner needs to know it.
type State struct {
	ProcessID    uuid.UUID
	Status       Status
	Step         string
	Retries      int
	ResumeStatus Status `json:",omitempty"`
	// Outcome is set once Status is final.
	Outcome *Outcome `json:",omitempty"`
}

func stateOf(inst Instance) State {
	s := State{ProcessID: inst.ID, Status: inst.Status, Step: inst.Step, Retries: inst.Retries, ResumeStatus: inst.ResumeStatus}
	if inst.Status.Final() {
		o := outcomeOf(inst)
		s.Outcome = &o
	}
	return s
}

// Start creates the process NEW at its initial step, or finds the one
// created before for the same type and business key (its data then stays
// as it is) and makes the caller its driver.
func (a *Activities) Start(ctx context.Context, in StartInput) (State, error) {
	def, err := a.cfg.Registry.lookup(in.Type)
	if err != nil {
		return State{}, invalid(err)
	}
	if in.BusinessKey == "" {
		return State{}, invalid(fmt.Errorf("process %s: empty business key", in.Type))
	}
	id := ID(in.Type, in.BusinessKey)
	data, err := def.normalize(in.Data)
	if err != nil {
		return State{}, invalid(fmt.Errorf("process %s/%s: %w", in.Type, in.BusinessKey, err))
	}
	// A new process is one statement, the instance with its first entry;
	// one that exists is read under its lock and attached to the runner.
	started := entry{event: EventProcessStarted, step: def.initial, detail: map[string]any{"data": json.RawMessage(data), "workflowId": in.WorkflowID}}
	detail, err := started.detailJSON(id)
	if err != nil {
		return State{}, invalid(err)
	}
	row, err := dbsqlc.New(a.cfg.DB).InsertInstance(ctx, dbsqlc.InsertInstanceParams{
		ProcessID: id, ProcessType: in.Type, BusinessKey: in.BusinessKey,
		CurrentStep: def.initial, Data: data, WorkflowID: in.WorkflowID,
		At: a.now(), Detail: detail, Actor: started.actorName(),
	})
	if err == nil {
		return stateOf(fromRow(dbsqlc.ProcessInstance(row))), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return State{}, fmt.Errorf("process %s: insert: %w", id, err)
	}
	var st State
	err = pgx.BeginFunc(ctx, a.cfg.DB, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		row, err := q.LockInstance(ctx, id)
		if err != nil {
			return fmt.Errorf("process %s: lock: %w", id, err)
		}
		inst := fromRow(row)
		if inst.Type != in.Type || inst.BusinessKey != in.BusinessKey {
			return invalid(fmt.Errorf("process %s belongs to %s/%s", id, inst.Type, inst.BusinessKey))
		}
		if !inst.Status.Final() && in.WorkflowID != "" && inst.WorkflowID != in.WorkflowID {
			to := inst
			to.WorkflowID = in.WorkflowID
			if inst, err = write(ctx, q, a.now(), inst, to, entry{
				event: EventRunnerAttached, step: inst.Step, detail: map[string]string{"workflowId": in.WorkflowID},
			}); err != nil {
				return err
			}
		}
		st = stateOf(inst)
		return nil
	})
	return st, err
}

// Advance starts (or finds) a process, as Start, then executes its steps
// one after another for as long as none has to wait (a backoff after a
// retryable failure, a pause): a run that goes through is one call, and
// one activity of its caller's history instead of one per step. It
// returns where the process stands: final, or waiting for a runner (Run,
// ProcessWorkflow) to wait and go on. Every step is still its own
// transaction, so an Advance that fails part-way (retried by its caller)
// goes on from the step the process reached.
func (a *Activities) Advance(ctx context.Context, in StartInput) (State, error) {
	st, err := a.Start(ctx, in)
	if err != nil {
		return st, err
	}
	return a.advance(ctx, st)
}

// advance executes st's steps while they need no wait.
func (a *Activities) advance(ctx context.Context, st State) (State, error) {
	for {
		done, wait, req := noWait.plan(st)
		if done || wait > 0 {
			return st, nil
		}
		res, err := a.Execute(ctx, req)
		if err != nil {
			return st, err
		}
		st = res.State
	}
}

// noWait plans Advance's steps: only whether a wait is due matters there,
// not how long it is.
var noWait = ExecOptions{}.withDefaults()

// Load reads where a process stands.
func (a *Activities) Load(ctx context.Context, id uuid.UUID) (State, error) {
	inst, err := Get(ctx, a.cfg.DB, id)
	if errors.Is(err, ErrNotFound) {
		return State{}, invalid(err)
	}
	return stateOf(inst), err
}

// invalid marks err as beyond any retry: Temporal fails the activity at
// once.
func invalid(err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), errTypeInvalid, err)
}
