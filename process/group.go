package process

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// GroupOutcome is where one process of AdvanceGroup stands, as Advance
// answers: State, or Err (an infrastructure failure: the process stays
// at its step, for its caller's retry).
type GroupOutcome struct {
	State State
	Err   error
}

// maxGroupRounds bounds the calls of a group handler for one step: each
// call after the first has taken out the processes the one before could
// not do; past the bound, the rest run the step alone.
const maxGroupRounds = 4

// AdvanceGroup is Advance for processes of one definition at once (ins
// all of one Type): their starts are one statement, and every step with
// a GroupHandler runs for all of them that are at it in one transaction,
// its effect set-based and its transitions, log entries and inbox rows
// one statement. Each process still succeeds, fails or compensates on
// its own: a process its group handler could not do, a step without a
// group handler, and compensations run alone, as Advance runs them, and
// a process rejoins the group at its next grouped step. A failure of a
// group's transaction (a deadlock, a lost connection) moves no process:
// they run that step alone. The outcomes follow ins.
func (a *Activities) AdvanceGroup(ctx context.Context, ins []StartInput) []GroupOutcome {
	out := make([]GroupOutcome, len(ins))
	if len(ins) == 0 {
		return out
	}
	def, err := a.cfg.Registry.lookup(ins[0].Type)
	if err != nil {
		for i := range out {
			out[i].Err = invalid(err)
		}
		return out
	}
	a.startGroup(ctx, def, ins, out)
	active := make([]bool, len(ins))
	for i := range out {
		active[i] = out[i].Err == nil
	}
	// Each round moves every active process by a step (or to a wait); the
	// bound only guards against a process that answers the same forever.
	for round := 0; round < 64; round++ {
		byStep := map[string][]int{}
		var steps []string
		var alone []int
		for i, o := range out {
			if !active[i] {
				continue
			}
			done, wait, req := noWait.plan(o.State)
			if done || wait > 0 {
				active[i] = false
				continue
			}
			if !req.Compensation && o.State.Status != StatusPaused && def.grouped[req.Step] {
				if byStep[req.Step] == nil {
					steps = append(steps, req.Step)
				}
				byStep[req.Step] = append(byStep[req.Step], i)
				continue
			}
			alone = append(alone, i)
		}
		if len(steps) == 0 && len(alone) == 0 {
			return out
		}
		for _, step := range steps {
			alone = append(alone, a.stepGroup(ctx, def, step, byStep[step], out)...)
		}
		for _, i := range alone {
			_, _, req := noWait.plan(out[i].State)
			res, err := a.Execute(ctx, req)
			if err != nil {
				out[i].Err, active[i] = err, false
				continue
			}
			out[i].State = res.State
		}
	}
	for i := range out {
		if active[i] {
			out[i].Err = fmt.Errorf("process %s: AdvanceGroup went round too often", out[i].State.ProcessID)
		}
	}
	return out
}

// startGroup starts ins (or finds them), as Start: the new ones in one
// statement, those that exist one by one (attached to their caller).
func (a *Activities) startGroup(ctx context.Context, def *definition, ins []StartInput, out []GroupOutcome) {
	order := make([]int, 0, len(ins))
	p := dbsqlc.InsertInstancesParams{ProcessType: def.typ, CurrentStep: def.initial, At: a.now(), Actor: SystemActor}
	ids := make([]uuid.UUID, len(ins))
	for i, in := range ins {
		ids[i] = ID(in.Type, in.BusinessKey)
		switch {
		case in.Type != def.typ:
			out[i].Err = invalid(fmt.Errorf("process %s/%s: not of the group's type %s", in.Type, in.BusinessKey, def.typ))
			continue
		case in.BusinessKey == "":
			out[i].Err = invalid(fmt.Errorf("process %s: empty business key", in.Type))
			continue
		}
		order = append(order, i)
	}
	// in id order, and each id once: concurrent groups of the same
	// processes then wait for each other instead of deadlocking
	slices.SortFunc(order, func(x, y int) int { return bytes.Compare(ids[x][:], ids[y][:]) })
	order = slices.CompactFunc(order, func(x, y int) bool { return ids[x] == ids[y] })
	for _, i := range order {
		data, err := def.normalize(ins[i].Data)
		if err != nil {
			out[i].Err = invalid(fmt.Errorf("process %s/%s: %w", def.typ, ins[i].BusinessKey, err))
			continue
		}
		started := entry{event: EventProcessStarted, step: def.initial, detail: map[string]any{"data": json.RawMessage(data), "workflowId": ins[i].WorkflowID}}
		detail, err := started.detailJSON(ids[i])
		if err != nil {
			out[i].Err = invalid(err)
			continue
		}
		p.ProcessIds = append(p.ProcessIds, ids[i])
		p.BusinessKeys = append(p.BusinessKeys, ins[i].BusinessKey)
		p.Datas = append(p.Datas, string(data))
		p.WorkflowIds = append(p.WorkflowIds, ins[i].WorkflowID)
		p.Details = append(p.Details, string(detail))
	}
	inserted := map[uuid.UUID]Instance{}
	if len(p.ProcessIds) > 0 {
		rows, err := dbsqlc.New(a.cfg.DB).InsertInstances(ctx, p)
		if err != nil {
			err = fmt.Errorf("process %s: start a group of %d: %w", def.typ, len(p.ProcessIds), err)
			for _, i := range order {
				if out[i].Err == nil {
					out[i].Err = err
				}
			}
			return
		}
		for _, r := range rows {
			inserted[r.ProcessID] = fromRow(dbsqlc.ProcessInstance(r))
		}
	}
	for i := range ins {
		if out[i].Err != nil {
			continue
		}
		if inst, ok := inserted[ids[i]]; ok {
			out[i].State = stateOf(inst)
			continue
		}
		// Started before (a group run again), or twice in ins.
		out[i].State, out[i].Err = a.Start(ctx, ins[i])
	}
}

// stepGroup runs step for the processes idx of out (all at it, per their
// State) in one transaction, and updates their State. It returns the
// processes that must run the step alone: those the group handler could
// not do, or all of them when the transaction failed.
func (a *Activities) stepGroup(ctx context.Context, def *definition, step string, idx []int, out []GroupOutcome) []int {
	alone, err := a.tryStepGroup(ctx, def, step, idx, out)
	if err != nil {
		// Nothing of the group committed: each goes on alone, where an
		// error is its own.
		return idx
	}
	return alone
}

func (a *Activities) tryStepGroup(ctx context.Context, def *definition, step string, idx []int, out []GroupOutcome) ([]int, error) {
	tx, err := a.cfg.DB.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("process %s: begin: %w", def.typ, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := dbsqlc.New(tx)
	byID := make(map[uuid.UUID]int, len(idx))
	ids := make([]uuid.UUID, 0, len(idx))
	for _, i := range idx {
		byID[out[i].State.ProcessID] = i
		ids = append(ids, out[i].State.ProcessID)
	}
	rows, err := q.LockInstances(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("process %s: lock a group: %w", def.typ, err)
	}
	var alone []int
	type member struct {
		i    int
		inst Instance
		in   StepInput
	}
	var members []member
	for _, r := range rows {
		inst := fromRow(r)
		i := byID[inst.ID]
		delete(byID, inst.ID)
		if !at(inst, StepRequest{ProcessID: inst.ID, Step: step}) {
			// moved on meanwhile (an operator, another runner): Execute
			// tells where it stands
			alone = append(alone, i)
			continue
		}
		members = append(members, member{i: i, inst: inst, in: StepInput{
			ProcessID: inst.ID, ProcessType: inst.Type, BusinessKey: inst.BusinessKey, Step: step,
			Attempt: inst.Retries + 1, IdempotencyKey: idempotencyKey(inst.ID, step, false),
		}})
	}
	for _, i := range byID {
		alone = append(alone, i) // gone: Execute says so
	}
	// A group's statements are planned for their values, whatever the
	// definition's GenericPlans: a plan is made once a group, not once a
	// process, and a generic plan cannot know how many keys an array
	// holds (it may scan a table for a few).
	timeout := def.steps[step].deadline()
	if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true), set_config('plan_cache_mode', 'force_custom_plan', true)",
		strconv.FormatInt(timeout.Milliseconds(), 10)); err != nil {
		return nil, fmt.Errorf("process %s: statement timeout: %w", def.typ, err)
	}
	startedAt := a.now()
	var nexts []string
	for round := 0; ; round++ {
		if len(members) == 0 {
			return alone, nil
		}
		if round == maxGroupRounds {
			for _, m := range members {
				alone = append(alone, m.i)
			}
			return alone, nil
		}
		ins := make([]StepInput, len(members))
		data := make([]stepData, len(members))
		for k := range members {
			// each round from the stored data: a round rolled back leaves
			// nothing of its handler's edits
			d, err := def.decode(members[k].inst.Data)
			if err != nil {
				return nil, invalid(fmt.Errorf("process %s: step %s: %w", members[k].inst.ID, step, err))
			}
			ins[k], data[k] = members[k].in, d
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return nil, fmt.Errorf("process %s: savepoint: %w", def.typ, err)
		}
		stepCtx, cancel := context.WithTimeout(ctx, timeout)
		errs, herr := def.handleGroup(stepCtx, sp, step, ins, data)
		failed := make([]bool, len(members))
		nexts = make([]string, len(members))
		anyFailed := false
		if herr == nil && stepCtx.Err() == nil {
			for k := range members {
				if errs != nil && errs[k] != nil {
					failed[k], anyFailed = true, true
					continue
				}
				next, err := data[k].next(step)
				if _, ok := def.steps[next]; err != nil || (next != "" && !ok) {
					failed[k], anyFailed = true, true
					continue
				}
				nexts[k] = next
			}
		}
		timedOut := stepCtx.Err() != nil
		cancel()
		if herr != nil || timedOut {
			_ = sp.Rollback(ctx)
			for _, m := range members {
				alone = append(alone, m.i)
			}
			return alone, nil
		}
		if anyFailed {
			if err := sp.Rollback(ctx); err != nil {
				return nil, fmt.Errorf("process %s: roll back to the savepoint: %w", def.typ, err)
			}
			kept := members[:0]
			for k, m := range members {
				if failed[k] {
					alone = append(alone, m.i)
				} else {
					kept = append(kept, m)
				}
			}
			members = kept
			continue
		}
		if err := sp.Commit(ctx); err != nil {
			return nil, fmt.Errorf("process %s: release the savepoint: %w", def.typ, err)
		}
		// Recorded for all of them in one statement.
		p := dbsqlc.CompleteStepsParams{}
		now := a.now()
		for k, m := range members {
			after, result, err := data[k].encode()
			if err != nil {
				return nil, invalid(fmt.Errorf("process %s: step %s: %w", m.inst.ID, step, err))
			}
			status, cur := StatusRunning, nexts[k]
			if cur == "" {
				status, cur = StatusSucceeded, step
			}
			p.ProcessIds = append(p.ProcessIds, m.inst.ID)
			p.Versions = append(p.Versions, m.inst.Version)
			p.Statuses = append(p.Statuses, string(status))
			p.CurrentSteps = append(p.CurrentSteps, cur)
			p.Datas = append(p.Datas, string(after))
			p.InboxKeys = append(p.InboxKeys, m.in.IdempotencyKey)
			p.InboxSteps = append(p.InboxSteps, step)
			p.InboxResults = append(p.InboxResults, string(result))
			entries := []entry{
				{at: startedAt, event: EventStepStarted, step: step, attempt: m.in.Attempt},
				{event: EventStepCompleted, step: step, attempt: m.in.Attempt, detail: map[string]any{"result": json.RawMessage(result), "next": nexts[k]}},
			}
			if nexts[k] == "" {
				entries = append(entries, entry{event: EventProcessCompleted, step: step})
			}
			for _, e := range entries {
				detail, err := e.detailJSON(m.inst.ID)
				if err != nil {
					return nil, err
				}
				when := e.at
				if when.IsZero() {
					when = now
				}
				p.LogProcessIds = append(p.LogProcessIds, m.inst.ID)
				p.LogAts = append(p.LogAts, when)
				p.LogEvents = append(p.LogEvents, string(e.event))
				p.LogSteps = append(p.LogSteps, e.step)
				p.LogAttempts = append(p.LogAttempts, int32(e.attempt))
				p.LogDetails = append(p.LogDetails, string(detail))
			}
		}
		done, err := q.CompleteSteps(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("process %s: step %s of a group: %w", def.typ, step, err)
		}
		if len(done) != len(members) {
			return nil, fmt.Errorf("%w: %d of a group of %d at %s", ErrVersionConflict, len(members)-len(done), len(members), step)
		}
		updated := make(map[uuid.UUID]Instance, len(done))
		for _, r := range done {
			if !r.InboxRecorded {
				// The lock makes this impossible; should it happen, the
				// whole group rolls back and each asks alone.
				return nil, fmt.Errorf("process %s: step %s applied before", r.ProcessID, step)
			}
			inst := fromRow(dbsqlc.ProcessInstance{
				ProcessID: r.ProcessID, ProcessType: r.ProcessType, BusinessKey: r.BusinessKey, Status: r.Status,
				CurrentStep: r.CurrentStep, Data: r.Data, Retries: r.Retries, Version: r.Version,
				ResumeStatus: r.ResumeStatus, FailedStep: r.FailedStep, ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage,
				CompensationErrorCode: r.CompensationErrorCode, CompensationErrorMessage: r.CompensationErrorMessage,
				WorkflowID: r.WorkflowID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			})
			if err := runHook(ctx, tx, def, inst); err != nil {
				return nil, err
			}
			updated[inst.ID] = inst
		}
		if err := tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("process %s: commit step %s of a group: %w", def.typ, step, err)
		}
		for _, m := range members {
			out[m.i].State = stateOf(updated[m.inst.ID])
		}
		return alone, nil
	}
}
