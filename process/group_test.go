package process_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/paydispatch/paydispatch/process"
)

// groupInputs are n Transfers' start inputs, keys prefix-0 … prefix-(n-1).
func groupInputs(prefix string, n int) []process.StartInput {
	ins := make([]process.StartInput, n)
	for i := range ins {
		ins[i] = process.StartInput{Type: transfer, BusinessKey: fmt.Sprintf("%s-%d", prefix, i), Data: []byte(`{"amount":"10"}`), WorkflowID: "wf-group"}
	}
	return ins
}

// succeededLog is a Transfer's log when it went through.
var succeededLog = []string{
	"ProcessStarted Reserve",
	"StepStarted Reserve", "StepCompleted Reserve",
	"StepStarted Debit", "StepCompleted Debit",
	"StepStarted Notify", "StepCompleted Notify", "ProcessCompleted Notify",
}

// TestAdvanceGroup: a group's processes go through together, a grouped
// step one call of its group handler for all of them, and each ends as
// Advance would leave it alone: one effect a step, the same log, its own
// hook.
func TestAdvanceGroup(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ins := groupInputs("g", 10)
	out := f.acts.AdvanceGroup(context.Background(), ins)
	for i, o := range out {
		if o.Err != nil || o.State.Status != process.StatusSucceeded {
			t.Fatalf("%s: %+v", ins[i].BusinessKey, o)
		}
		key := ins[i].BusinessKey
		if e := f.effects(t, key); e["Reserve"] != 1 || e["Debit"] != 1 || e["Notify"] != 1 || len(e) != 3 {
			t.Errorf("%s: effects %v, want one a step", key, e)
		}
		if got := f.events(t, key); !slices.Equal(got, succeededLog) {
			t.Errorf("%s: log %v, want %v", key, got, succeededLog)
		}
		if got := f.outcomes(t, key); !slices.Equal(got, []string{"SUCCEEDED/"}) {
			t.Errorf("%s: hooks %v", key, got)
		}
		d := dataOf(t, f.get(t, key).Data)
		if d.Refs["Debit"] != process.ID(transfer, key).String()+":Debit" {
			t.Errorf("%s: data %+v: the group handler's edits were not kept", key, d)
		}
	}
	if r, d := f.calls("Reserve"), f.calls("Debit"); r != 1 || d != 1 {
		t.Errorf("group handler calls: Reserve %d, Debit %d; want one each for the whole group", r, d)
	}
}

// TestAdvanceGroupOneFails: a process whose grouped step fails for good
// leaves the group: it alone compensates and ends with its code; the
// others' steps are done once, in a group call without it.
func TestAdvanceGroupOneFails(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ins := groupInputs("f", 5)
	noFunds := process.Failf("NO_FUNDS", "not enough")
	// its group call, then its call alone
	f.fail("f-2", "Debit", noFunds, noFunds)
	out := f.acts.AdvanceGroup(context.Background(), ins)
	for i, o := range out {
		key := ins[i].BusinessKey
		if key == "f-2" {
			if o.Err != nil || o.State.Status != process.StatusCompensated {
				t.Errorf("%s: %+v, want COMPENSATED", key, o)
			}
			if e := f.effects(t, key); e["Reserve"] != 1 || e["Release"] != 1 || e["Debit"] != 0 {
				t.Errorf("%s: effects %v, want Reserve released and no Debit", key, e)
			}
			if got := f.outcomes(t, key); !slices.Equal(got, []string{"COMPENSATED/NO_FUNDS"}) {
				t.Errorf("%s: hooks %v", key, got)
			}
			continue
		}
		if o.Err != nil || o.State.Status != process.StatusSucceeded {
			t.Errorf("%s: %+v", key, o)
		}
		if e := f.effects(t, key); e["Reserve"] != 1 || e["Debit"] != 1 || e["Notify"] != 1 {
			t.Errorf("%s: effects %v, want one a step", key, e)
		}
	}
	// Debit: the call with f-2, rolled back, and the one without it.
	if d := f.calls("Debit"); d != 2 {
		t.Errorf("Debit's group handler called %d times, want 2", d)
	}
}

// TestAdvanceGroupRetryable: a retryable failure takes its process out
// of the group to retry alone; once it has to wait, AdvanceGroup leaves
// it RUNNING at its step with its retry counted, for its runner.
func TestAdvanceGroupRetryable(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ins := groupInputs("r", 3)
	f.fail("r-0", "Reserve", busy(), busy())
	out := f.acts.AdvanceGroup(context.Background(), ins)
	if o := out[0]; o.Err != nil || o.State.Status != process.StatusRunning || o.State.Step != "Reserve" || o.State.Retries != 1 {
		t.Errorf("r-0: %+v, want RUNNING at Reserve with one retry", o)
	}
	for _, o := range out[1:] {
		if o.Err != nil || o.State.Status != process.StatusSucceeded {
			t.Errorf("%+v", o)
		}
	}
	if e := f.effects(t, "r-0"); len(e) != 0 {
		t.Errorf("r-0: effects %v, want none", e)
	}
	// A group leaves a process that has to wait to its runner, as Advance.
	out = f.acts.AdvanceGroup(context.Background(), ins[:1])
	if o := out[0]; o.Err != nil || o.State.Status != process.StatusRunning || o.State.Retries != 1 {
		t.Errorf("r-0 again: %+v, want it waiting", o)
	}
	if _, err := f.acts.Execute(context.Background(), process.StepRequest{ProcessID: out[0].State.ProcessID, Step: "Reserve"}); err != nil {
		t.Fatal(err)
	}
	if st, err := f.acts.Advance(context.Background(), ins[0]); err != nil || st.Status != process.StatusSucceeded {
		t.Errorf("r-0 by its runner: %+v %v", st, err)
	}
	if e := f.effects(t, "r-0"); e["Reserve"] != 1 || e["Debit"] != 1 {
		t.Errorf("r-0: effects %v", e)
	}
}

// TestAdvanceGroupWholeCallFails: a group handler that fails the call
// moves nobody; each process runs the step alone and goes through.
func TestAdvanceGroupWholeCallFails(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	f.groupFail["Reserve"] = errors.New("the group's statement failed")
	ins := groupInputs("w", 4)
	for i, o := range f.acts.AdvanceGroup(context.Background(), ins) {
		if o.Err != nil || o.State.Status != process.StatusSucceeded {
			t.Errorf("%s: %+v", ins[i].BusinessKey, o)
		}
		if e := f.effects(t, ins[i].BusinessKey); e["Reserve"] != 1 || e["Debit"] != 1 {
			t.Errorf("%s: effects %v", ins[i].BusinessKey, e)
		}
	}
	// Reserve went alone; Debit grouped again.
	if d := f.calls("Debit"); d != 1 {
		t.Errorf("Debit's group handler called %d times, want 1", d)
	}
}

// TestAdvanceGroupExactlyOnce: a group run again (a worker lost after
// it), and groups of the same processes at once, with single Advances
// beside them: every step takes effect once, and every run ends with
// every process SUCCEEDED.
func TestAdvanceGroupExactlyOnce(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ins := groupInputs("x", 12)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// each group in its own order
			mine := slices.Clone(ins)
			if g%2 == 1 {
				slices.Reverse(mine)
			}
			for _, o := range f.acts.AdvanceGroup(context.Background(), mine) {
				if o.Err != nil {
					errs <- o.Err
				}
			}
		}()
	}
	for _, in := range ins[:4] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.acts.Advance(context.Background(), in); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a run failed: %v", err)
	}
	// and once more, after all of them
	for i, o := range f.acts.AdvanceGroup(context.Background(), ins) {
		if o.Err != nil || o.State.Status != process.StatusSucceeded {
			t.Errorf("%s: %+v", ins[i].BusinessKey, o)
		}
	}
	for _, in := range ins {
		if e := f.effects(t, in.BusinessKey); e["Reserve"] != 1 || e["Debit"] != 1 || e["Notify"] != 1 || len(e) != 3 {
			t.Errorf("%s: effects %v, want one a step", in.BusinessKey, e)
		}
		if got := f.outcomes(t, in.BusinessKey); !slices.Equal(got, []string{"SUCCEEDED/"}) {
			t.Errorf("%s: hooks %v", in.BusinessKey, got)
		}
	}
}

// TestAdvanceGroupRefusesOtherTypes: a group is of one definition.
func TestAdvanceGroupRefusesOtherTypes(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ins := groupInputs("t", 2)
	ins[1].Type = "Other"
	out := f.acts.AdvanceGroup(context.Background(), ins)
	if out[0].Err != nil || out[0].State.Status != process.StatusSucceeded || out[1].Err == nil {
		t.Fatalf("%+v", out)
	}
}
