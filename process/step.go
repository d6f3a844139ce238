package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// StepRequest asks for one step (or compensation step) of a process: the
// one the runner last saw as current. Asking twice is safe: the second
// time finds the step's inbox row and changes nothing.
type StepRequest struct {
	ProcessID    uuid.UUID
	Step         string
	Compensation bool
}

// StepResult is what Execute did, and where the process stands after.
type StepResult struct {
	State
	// Applied: this call ran the step and committed its effect.
	Applied bool `json:",omitempty"`
	// Duplicate: the step had been applied before; nothing was done and
	// Result is the stored one.
	Duplicate bool `json:",omitempty"`
	// Result is the step's result (applied or duplicate): the top-level
	// keys of the data it changed, null for one it removed.
	Result json.RawMessage `json:",omitempty"`
}

// failure is a business failure of an attempt, recorded after the
// attempt's transaction is rolled back.
type failure struct {
	code, message string
	timedOut      bool
	startedAt     time.Time // when the attempt began
}

// Execute runs the requested step if the process is at it, in one
// transaction: lock the instance, claim the step's inbox row, run the
// handler, decide the next step, write the log entries and the instance —
// commit. If the process is elsewhere (paused, moved on, another runner
// got there first) it changes nothing and returns where the process
// stands, with the stored result when the step was applied before.
//
// A business failure rolls the attempt back and is recorded in a
// transaction of its own. Any other error rolls back and goes back to
// Temporal, which retries the activity.
func (a *Activities) Execute(ctx context.Context, req StepRequest) (StepResult, error) {
	res, f, seen, err := a.attempt(ctx, req)
	if err != nil || f == nil {
		return res, err
	}
	return a.recordFailure(ctx, req, seen, *f)
}

// attempt is Execute's step transaction. On a business failure it returns
// the failure and the instance as it was seen, after rolling back.
func (a *Activities) attempt(ctx context.Context, req StepRequest) (StepResult, *failure, Instance, error) {
	tx, err := BeginGenericPlans(ctx, a.cfg.DB)
	if err != nil {
		return StepResult{}, nil, Instance{}, fmt.Errorf("process %s: begin: %w", req.ProcessID, err)
	}
	// A cancelled ctx must not keep the rollback from running.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := dbsqlc.New(tx)
	inst, def, err := a.lock(ctx, q, req.ProcessID)
	if err != nil {
		return StepResult{}, nil, Instance{}, err
	}
	key := idempotencyKey(req.ProcessID, req.Step, req.Compensation)
	if !at(inst, req) {
		res, err := a.elsewhere(ctx, q, inst, key)
		return res, nil, Instance{}, err
	}
	step, ok := def.steps[req.Step]
	if !ok {
		return StepResult{}, &failure{code: CodeUnknownStep, message: "the definition has no step " + strconv.Quote(req.Step)}, inst, nil
	}
	// Data the definition cannot read is no business failure: no retry
	// cures it, and compensating would undo a process for the code's
	// sake. The process waits at its step for code that reads it.
	data, err := def.decode(inst.Data)
	if err != nil {
		return StepResult{}, nil, Instance{}, invalid(fmt.Errorf("process %s: step %s: %w", req.ProcessID, req.Step, err))
	}
	// The server gives up on a statement the handler leaves running past
	// the deadline, so the row lock is not held long after it.
	timeout := step.deadline()
	planMode := "force_custom_plan"
	if def.genericPlans {
		planMode = "force_generic_plan"
	}
	if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true), set_config('plan_cache_mode', $2, true)",
		strconv.FormatInt(timeout.Milliseconds(), 10), planMode); err != nil {
		return StepResult{}, nil, Instance{}, fmt.Errorf("process %s: statement timeout: %w", req.ProcessID, err)
	}
	in := StepInput{
		ProcessID: inst.ID, ProcessType: inst.Type, BusinessKey: inst.BusinessKey, Step: req.Step,
		Attempt: inst.Retries + 1, IdempotencyKey: key,
	}
	if req.Compensation {
		in.Compensates = def.compensates[req.Step]
	}
	startedAt := a.now()
	stepCtx, cancel := context.WithTimeout(ctx, timeout)
	herr := data.handle(stepCtx, tx, in)
	next := ""
	if herr == nil && stepCtx.Err() == nil && !req.Compensation {
		next, herr = data.next(req.Step)
		if _, ok := def.steps[next]; herr == nil && next != "" && !ok {
			herr = Failf(CodeUnknownStep, "Next(%q) named no step of the definition: %q", req.Step, next)
		}
	}
	timedOut := errors.Is(stepCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if herr != nil || timedOut {
		f, err := classify(herr, timedOut)
		if err != nil {
			return StepResult{}, nil, Instance{}, fmt.Errorf("process %s: step %s: %w", req.ProcessID, req.Step, err)
		}
		f.startedAt = startedAt
		return StepResult{}, f, inst, nil
	}
	after, result, err := data.encode()
	if err != nil {
		return StepResult{}, nil, Instance{}, invalid(fmt.Errorf("process %s: step %s: %w", req.ProcessID, req.Step, err))
	}
	// The instance's row lock serializes the attempts of a step, and a
	// committed step moves the instance on, so the key is new here; its
	// primary key still makes a second application impossible: should the
	// row exist, the effects just made roll back and the request is a
	// duplicate.
	box := &inboxRow{key: key, step: req.Step, result: result}
	updated, recorded, err := a.complete(ctx, tx, q, def, inst, req, in.Attempt, startedAt, result, after, next, box)
	if err != nil {
		return StepResult{}, nil, Instance{}, err
	}
	if !recorded {
		res, err := a.elsewhere(ctx, q, inst, key)
		return res, nil, Instance{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return StepResult{}, nil, Instance{}, fmt.Errorf("process %s: commit %s: %w", req.ProcessID, key, err)
	}
	return StepResult{State: stateOf(updated), Applied: true, Result: result}, nil, Instance{}, nil
}

// complete writes a committed step: its inbox row, its log entries and
// the instance moved on (next step, or the final status and its hook).
// false: the inbox row was there (nothing to commit).
func (a *Activities) complete(ctx context.Context, tx pgx.Tx, q *dbsqlc.Queries, def *definition, inst Instance, req StepRequest, attempt int, startedAt time.Time, result, data json.RawMessage, next string, box *inboxRow) (Instance, bool, error) {
	to := inst
	to.Data, to.Retries = data, 0
	var entries []entry
	if !req.Compensation {
		to.Status = StatusRunning
		entries = []entry{
			{at: startedAt, event: EventStepStarted, step: req.Step, attempt: attempt},
			{event: EventStepCompleted, step: req.Step, attempt: attempt, detail: map[string]any{"result": result, "next": next}},
		}
		if next == "" {
			to.Status = StatusSucceeded
			entries = append(entries, entry{event: EventProcessCompleted, step: req.Step})
		} else {
			to.Step = next
		}
	} else {
		done, err := completedSteps(ctx, q, inst.ID)
		if err != nil {
			return Instance{}, false, err
		}
		plan := def.compensationPlan(append(done, completed{step: req.Step, compensation: true}))
		next = ""
		if len(plan) > 0 {
			next = plan[0]
		}
		entries = []entry{
			{at: startedAt, event: EventCompensationStarted, step: req.Step, attempt: attempt},
			{event: EventCompensationCompleted, step: req.Step, attempt: attempt, detail: map[string]any{
				"result": result, "compensates": def.compensates[req.Step], "next": next,
			}},
		}
		if next == "" {
			to.Status = StatusCompensated
			entries = append(entries, entry{event: EventProcessCompensated, step: req.Step, code: inst.ErrorCode})
		} else {
			to.Step = next
		}
	}
	updated, recorded, err := writeStep(ctx, q, a.now(), inst, to, box, entries...)
	if err != nil || !recorded {
		return Instance{}, false, err
	}
	return updated, true, runHook(ctx, tx, def, updated)
}

// BeginGenericPlans begins a transaction whose statements run on the
// plans PostgreSQL keeps for the connection (plan_cache_mode
// force_generic_plan) rather than planned at each execution: only for
// statements whose generic plans are checked with EXPLAIN
// (explain.Options.Generic). A step's transaction begins so, for the
// package's own statements, which find their rows by key on any plan
// (TestHotQueriesUseIndexes). On a pool the setting goes with BEGIN, in
// one round trip; on a transaction it begins a savepoint.
func BeginGenericPlans(ctx context.Context, db DB) (pgx.Tx, error) {
	if b, ok := db.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	}); ok {
		return b.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan"})
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return tx, nil
}

// recordFailure writes a failed attempt, in a transaction of its own:
// another attempt to come, compensation, or the end.
func (a *Activities) recordFailure(ctx context.Context, req StepRequest, seen Instance, f failure) (StepResult, error) {
	var res StepResult
	err := pgx.BeginFunc(ctx, a.cfg.DB, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		inst, def, err := a.lock(ctx, q, req.ProcessID)
		if err != nil {
			return err
		}
		if inst.Version != seen.Version {
			// An operator acted between the attempt and now. The attempt
			// left no effect, so nothing is lost by not recording it.
			res = StepResult{State: stateOf(inst)}
			return nil
		}
		step := def.steps[req.Step]
		attempt := inst.Retries + 1
		retryable := step.isRetryable(f.code)
		retry := retryable && inst.Retries < step.maxRetries
		start, failed := EventStepStarted, EventStepFailed
		if req.Compensation {
			start, failed = EventCompensationStarted, EventCompensationFailed
		} else if f.timedOut {
			failed = EventStepTimedOut
		}
		entries := []entry{
			{at: f.startedAt, event: start, step: req.Step, attempt: attempt},
			{event: failed, step: req.Step, attempt: attempt, code: f.code, detail: map[string]any{
				"message": f.message, "retryable": retryable, "retry": retry,
			}},
		}
		to := inst
		switch {
		case retry:
			to.Retries++
			if to.Status == StatusNew {
				to.Status = StatusRunning
			}
		case req.Compensation:
			to.Status = StatusCompensationFailed
			to.CompensationErrorCode, to.CompensationErrorMessage = f.code, f.message
			entries = append(entries, entry{event: EventProcessCompensationFailed, step: req.Step, code: f.code})
		default:
			to.FailedStep, to.ErrorCode, to.ErrorMessage, to.Retries = req.Step, f.code, f.message, 0
			done, err := completedSteps(ctx, q, inst.ID)
			if err != nil {
				return err
			}
			if plan := def.compensationPlan(done); len(plan) > 0 {
				to.Status, to.Step = StatusCompensating, plan[0]
				entries = append(entries, entry{event: EventProcessCompensating, step: plan[0], code: f.code, detail: map[string]any{"plan": plan}})
			} else {
				to.Status = StatusFailed
				entries = append(entries, entry{event: EventProcessFailed, step: req.Step, code: f.code})
			}
		}
		updated, err := write(ctx, q, a.now(), inst, to, entries...)
		if err != nil {
			return err
		}
		if err := runHook(ctx, tx, def, updated); err != nil {
			return err
		}
		res = StepResult{State: stateOf(updated)}
		return nil
	})
	return res, err
}

// lock reads the instance under its row lock, with its definition.
func (a *Activities) lock(ctx context.Context, q *dbsqlc.Queries, id uuid.UUID) (Instance, *definition, error) {
	row, err := q.LockInstance(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Instance{}, nil, invalid(fmt.Errorf("%w: %s", ErrNotFound, id))
	}
	if err != nil {
		return Instance{}, nil, fmt.Errorf("process %s: lock: %w", id, err)
	}
	inst := fromRow(row)
	def, err := a.cfg.Registry.lookup(inst.Type)
	if err != nil {
		return Instance{}, nil, invalid(err)
	}
	return inst, def, nil
}

// elsewhere answers a request for a step the process is not at: a
// duplicate (the step's inbox row exists) or a stale request.
func (a *Activities) elsewhere(ctx context.Context, q *dbsqlc.Queries, inst Instance, key string) (StepResult, error) {
	res := StepResult{State: stateOf(inst)}
	box, err := q.GetInbox(ctx, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return res, nil
	}
	if err != nil {
		return StepResult{}, fmt.Errorf("process %s: read inbox %s: %w", inst.ID, key, err)
	}
	res.Duplicate, res.Result = true, box.Result
	return res, nil
}

// at reports whether the process is at the requested step, in a status
// that runs it.
func at(inst Instance, req StepRequest) bool {
	if inst.Step != req.Step {
		return false
	}
	if req.Compensation {
		return inst.Status == StatusCompensating
	}
	return inst.Status == StatusNew || inst.Status == StatusRunning
}

// classify turns a handler's error into a business failure, or returns it
// as an infrastructure failure.
func classify(err error, timedOut bool) (*failure, error) {
	// A deadline comes first: whatever the handler made of it (a
	// cancelled query, its own code), the step ran too long.
	if timedOut {
		msg := "the step ran past its deadline"
		if err != nil {
			msg += ": " + err.Error()
		}
		return &failure{code: CodeTimeout, message: msg, timedOut: true}, nil
	}
	if pe := (*Failure)(nil); errors.As(err, &pe) {
		return &failure{code: pe.Code, message: pe.Message}, nil
	}
	return nil, err
}

// runHook runs the definition's hook for a final status, in tx.
func runHook(ctx context.Context, tx pgx.Tx, def *definition, inst Instance) error {
	var err error
	switch inst.Status {
	case StatusSucceeded:
		if def.onSucceeded != nil {
			err = def.onSucceeded(ctx, tx, inst)
		}
	case StatusFailed, StatusCompensated:
		if def.onFailed != nil {
			err = def.onFailed(ctx, tx, inst, inst.Status, inst.ErrorCode)
		}
	case StatusCompensationFailed:
		if def.onFailed != nil {
			err = def.onFailed(ctx, tx, inst, inst.Status, inst.CompensationErrorCode)
		}
	}
	if err != nil {
		return fmt.Errorf("process %s: %s hook: %w", inst.ID, inst.Status, err)
	}
	return nil
}
