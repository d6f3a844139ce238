package process_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/process"
)

// operator acts without Temporal: the tests drive the process with
// direct activity calls.
func (f *fixture) operator() *process.Operator {
	return process.NewOperator(process.OperatorConfig{DB: f.pool, Registry: f.reg})
}

// TestOperatorRefusals: an action on a process in the wrong status is a
// *StatusError (ErrWrongStatus, for a 409) and changes nothing.
func TestOperatorRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start(t, f, "ok")
	for _, s := range []string{"Reserve", "Debit", "Notify"} {
		execute(t, f, "ok", s, false)
	}
	start(t, f, "running")
	execute(t, f, "running", "Reserve", false)
	op := f.operator()
	type action func(context.Context, uuid.UUID, string) (process.Instance, error)
	tests := []struct {
		name   string
		key    string
		action action
	}{
		{"compensate a SUCCEEDED process", "ok", op.Compensate},
		{"pause a SUCCEEDED process", "ok", op.Pause},
		{"retry a SUCCEEDED process", "ok", op.Retry},
		{"retry a RUNNING process", "running", op.Retry},
		{"resume a RUNNING process", "running", op.Resume},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.get(t, tt.key)
			_, err := tt.action(t.Context(), process.ID(transfer, tt.key), "alice")
			var se *process.StatusError
			if !errors.Is(err, process.ErrWrongStatus) || !errors.As(err, &se) || se.Status != before.Status {
				t.Fatalf("err = %v", err)
			}
			if after := f.get(t, tt.key); after.Version != before.Version {
				t.Fatalf("version moved %d → %d", before.Version, after.Version)
			}
		})
	}
	if _, err := op.Pause(t.Context(), process.ID(transfer, "nobody"), "alice"); !errors.Is(err, process.ErrNotFound) {
		t.Fatalf("unknown process: %v", err)
	}
	if _, err := op.Pause(t.Context(), process.ID(transfer, "running"), ""); !errors.Is(err, process.ErrNoActor) {
		t.Fatalf("no actor: %v", err)
	}
}

// TestForceCompensation: whatever completed is undone, in reverse order,
// from RUNNING, PAUSED or FAILED; with nothing completed the process is
// COMPENSATED at once. The log names the operator.
func TestForceCompensation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prepare func(t *testing.T, f *fixture, key string)
		plan    []string
		code    string
	}{
		{
			name: "running",
			prepare: func(t *testing.T, f *fixture, key string) {
				execute(t, f, key, "Reserve", false)
				execute(t, f, key, "Debit", false)
			},
			plan: []string{"Refund", "Release"},
			code: process.CodeOperator,
		},
		{
			name: "paused",
			prepare: func(t *testing.T, f *fixture, key string) {
				execute(t, f, key, "Reserve", false)
				if _, err := f.operator().Pause(t.Context(), process.ID(transfer, key), "bob"); err != nil {
					t.Fatal(err)
				}
			},
			plan: []string{"Release"},
			code: process.CodeOperator,
		},
		{
			name: "failed, nothing to undo",
			prepare: func(t *testing.T, f *fixture, key string) {
				f.fail(key, "Reserve", process.Failf("INSUFFICIENT_FUNDS", "no"))
				execute(t, f, key, "Reserve", false)
			},
			code: "INSUFFICIENT_FUNDS",
		},
		{name: "new", code: process.CodeOperator},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			const key = "k"
			start(t, f, key)
			if tt.prepare != nil {
				tt.prepare(t, f, key)
			}
			inst, err := f.operator().Compensate(t.Context(), process.ID(transfer, key), "alice")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.plan {
				if inst.Status != process.StatusCompensating || inst.Step != c {
					t.Fatalf("at %s/%s, want COMPENSATING/%s", inst.Status, inst.Step, c)
				}
				if res := execute(t, f, key, c, true); !res.Applied {
					t.Fatalf("%s not applied: %+v", c, res)
				}
				inst = f.get(t, key)
			}
			inst = f.get(t, key)
			if inst.Status != process.StatusCompensated || inst.ErrorCode != tt.code || inst.ResumeStatus != "" {
				t.Fatalf("after compensation: %+v", inst)
			}
			wantHooks := []string{"COMPENSATED/" + tt.code}
			if tt.code != process.CodeOperator {
				wantHooks = append([]string{"FAILED/" + tt.code}, wantHooks...)
			}
			if got := f.outcomes(t, key); !equal(got, wantHooks) {
				t.Fatalf("hooks %v", got)
			}
			entries, err := process.Log(t.Context(), f.pool, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			var actors []string
			for _, e := range entries {
				if e.Event == process.EventOperatorCompensate {
					actors = append(actors, e.Actor)
				}
			}
			if !equal(actors, []string{"alice"}) {
				t.Fatalf("OperatorCompensate actors %v", actors)
			}
			if _, err := f.operator().Compensate(t.Context(), inst.ID, "alice"); !errors.Is(err, process.ErrWrongStatus) {
				t.Fatalf("compensating a COMPENSATED process: %v", err)
			}
		})
	}
}

// TestPauseAndResume: a paused process runs no step, whatever a runner
// asks, until it is resumed to the status it had.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	start(t, f, "k")
	execute(t, f, "k", "Reserve", false)
	op := f.operator()
	id := process.ID(transfer, "k")
	inst, err := op.Pause(ctx, id, "alice")
	if err != nil || inst.Status != process.StatusPaused || inst.ResumeStatus != process.StatusRunning {
		t.Fatalf("pause: %+v %v", inst, err)
	}
	if res := execute(t, f, "k", "Debit", false); res.Applied || res.Status != process.StatusPaused {
		t.Fatalf("a step of a paused process: %+v", res)
	}
	if got := f.effects(t, "k"); got["Debit"] != 0 {
		t.Fatalf("effects %v", got)
	}
	if inst, err = op.Resume(ctx, id, "bob"); err != nil || inst.Status != process.StatusRunning || inst.ResumeStatus != "" {
		t.Fatalf("resume: %+v %v", inst, err)
	}
	if res := execute(t, f, "k", "Debit", false); !res.Applied {
		t.Fatalf("after resume: %+v", res)
	}
	entries, err := process.Log(ctx, f.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	actors := map[process.Event]string{}
	for _, e := range entries {
		actors[e.Event] = e.Actor
	}
	if actors[process.EventProcessPaused] != "alice" || actors[process.EventProcessResumed] != "bob" || actors[process.EventStepCompleted] != process.SystemActor {
		t.Fatalf("actors %v", actors)
	}
}

// TestPauseRacingAStep: a pause during a step waits for the step's row
// lock and lands after it: the step is complete, the next one not begun.
func TestPauseRacingAStep(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start(t, f, "k")
	execute(t, f, "k", "Reserve", false)
	entered, release := f.hold("k", "Debit")
	defer release()
	stepDone := make(chan process.StepResult, 1)
	go func() {
		res, err := f.acts.Execute(t.Context(), process.StepRequest{ProcessID: process.ID(transfer, "k"), Step: "Debit"})
		if err != nil {
			t.Error(err)
		}
		stepDone <- res
	}()
	<-entered
	paused := make(chan error, 1)
	go func() {
		_, err := f.operator().Pause(t.Context(), process.ID(transfer, "k"), "alice")
		paused <- err
	}()
	f.waitForLockWaiter(t, paused)
	release()
	if res := <-stepDone; !res.Applied || res.Step != "Notify" {
		t.Fatalf("step: %+v", res)
	}
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
	inst := f.get(t, "k")
	if inst.Status != process.StatusPaused || inst.Step != "Notify" || inst.ResumeStatus != process.StatusRunning {
		t.Fatalf("instance %+v", inst)
	}
	want := concat(happyEvents[:5], []string{"ProcessPaused Notify"})
	if got := f.events(t, "k"); !equal(got, want) {
		t.Fatalf("log %v, want %v", got, want)
	}
}

// TestConcurrentOperatorActions: of many operators pausing at once,
// exactly one does; the others are told the process is paused already.
// Guarded updates lose nothing: the log has one pause.
func TestConcurrentOperatorActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start(t, f, "k")
	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = f.operator().Pause(t.Context(), process.ID(transfer, "k"), "op") })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, process.ErrWrongStatus):
			t.Fatalf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d pauses succeeded", ok)
	}
	if got := f.events(t, "k"); !equal(got, []string{"ProcessStarted Reserve", "ProcessPaused Reserve"}) {
		t.Fatalf("log %v", got)
	}
}

// TestRetryWithoutRunner: retrying a COMPENSATION_FAILED process puts it
// back at the failed compensation with fresh retries; a FAILED one at its
// failed step, its failure cleared.
func TestRetryWithoutRunner(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	op := f.operator()

	start(t, f, "comp")
	f.fail("comp", "Debit", process.Failf("ACCOUNT_BLOCKED", "blocked"))
	f.fail("comp", "Release", process.Failf("LEDGER_CLOSED", "closed"))
	execute(t, f, "comp", "Reserve", false)
	execute(t, f, "comp", "Debit", false)
	if res := execute(t, f, "comp", "Release", true); res.Status != process.StatusCompensationFailed || res.Outcome.CompensationErrorCode != "LEDGER_CLOSED" {
		t.Fatalf("release: %+v", res)
	}
	inst, err := op.Retry(ctx, process.ID(transfer, "comp"), "alice")
	if err != nil || inst.Status != process.StatusCompensating || inst.Step != "Release" || inst.CompensationErrorCode != "" || inst.ErrorCode != "ACCOUNT_BLOCKED" {
		t.Fatalf("retry: %+v %v", inst, err)
	}
	if res := execute(t, f, "comp", "Release", true); res.Status != process.StatusCompensated {
		t.Fatalf("release again: %+v", res)
	}
	if got := f.outcomes(t, "comp"); !equal(got, []string{"COMPENSATION_FAILED/LEDGER_CLOSED", "COMPENSATED/ACCOUNT_BLOCKED"}) {
		t.Fatalf("hooks %v", got)
	}

	start(t, f, "failed")
	f.fail("failed", "Reserve", process.Failf("INSUFFICIENT_FUNDS", "no"))
	execute(t, f, "failed", "Reserve", false)
	inst, err = op.Retry(ctx, process.ID(transfer, "failed"), "alice")
	if err != nil || inst.Status != process.StatusRunning || inst.Step != "Reserve" || inst.ErrorCode != "" || inst.FailedStep != "" {
		t.Fatalf("retry: %+v %v", inst, err)
	}
	for _, s := range []string{"Reserve", "Debit", "Notify"} {
		execute(t, f, "failed", s, false)
	}
	if got := f.outcomes(t, "failed"); !equal(got, []string{"FAILED/INSUFFICIENT_FUNDS", "SUCCEEDED/"}) {
		t.Fatalf("hooks %v", got)
	}
}

// TestActionsInCallersTransaction: an action taken inside a caller's
// transaction (PauseTx, ResumeTx, ...) changes the process only if that
// transaction commits; its Action's Drive, after the commit, returns the
// process as it is then.
func TestActionsInCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	start(t, f, "tx")
	op, id := f.operator(), process.ID(transfer, "tx")
	before := f.get(t, "tx")
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := op.PauseTx(ctx, tx, id, "alice")
	if err != nil || a.Status != process.StatusPaused {
		t.Fatalf("pause in a transaction: %+v, %v", a.Instance, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if after := f.get(t, "tx"); after.Status != before.Status || after.Version != before.Version {
		t.Fatalf("a pause rolled back left the process %s (version %d → %d)", after.Status, before.Version, after.Version)
	}
	for _, act := range []func(context.Context, pgx.Tx, uuid.UUID, string) (process.Action, error){op.PauseTx, op.ResumeTx} {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, err := act(ctx, tx, id, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		inst, err := a.Drive(ctx)
		if stored := f.get(t, "tx"); err != nil || inst.Status != stored.Status || inst.Version != stored.Version {
			t.Fatalf("driven: %s v%d, %v; stored %s v%d", inst.Status, inst.Version, err, stored.Status, stored.Version)
		}
	}
	if after := f.get(t, "tx"); after.Status != before.Status || after.Version != before.Version+2 {
		t.Fatalf("paused and resumed: %s v%d, want %s v%d", after.Status, after.Version, before.Status, before.Version+2)
	}
}
