package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/paydispatch/paydispatch/process"
)

// execute calls the Execute activity directly, as a worker would.
func execute(t *testing.T, f *fixture, key, step string, compensation bool) process.StepResult {
	t.Helper()
	res, err := f.acts.Execute(t.Context(), process.StepRequest{ProcessID: process.ID(transfer, key), Step: step, Compensation: compensation})
	if err != nil {
		t.Fatalf("execute %s: %v", step, err)
	}
	return res
}

func start(t *testing.T, f *fixture, key string) process.State {
	t.Helper()
	st, err := f.acts.Start(t.Context(), process.StartInput{Type: transfer, BusinessKey: key, Data: json.RawMessage(`{"amount": "10.00"}`), WorkflowID: "wf-" + key})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStepsApplyOnce: every step and every compensation, delivered many
// times at once and then once more, has one effect, one pair of log
// entries, and every delivery but one gets the stored result back.
func TestStepsApplyOnce(t *testing.T) {
	t.Parallel()
	type delivery struct {
		step         string
		compensation bool
	}
	tests := []struct {
		name    string
		script  func(f *fixture, key string)
		steps   []delivery
		want    process.Status
		effects map[string]int
	}{
		{
			name:    "forward steps",
			steps:   []delivery{{"Reserve", false}, {"Debit", false}, {"Notify", false}},
			want:    process.StatusSucceeded,
			effects: map[string]int{"Reserve": 1, "Debit": 1, "Notify": 1},
		},
		{
			name: "compensation steps",
			// Every delivery of Notify fails: the first to record its
			// failure starts the compensation, the others find the
			// process moved on. (With one failure scripted, a delivery
			// queued behind the failed one would run Notify again and
			// succeed: a concurrent retry.)
			script: func(f *fixture, key string) {
				for range 17 {
					f.fail(key, "Notify", process.Failf("REJECTED", "no"))
				}
			},
			steps:   []delivery{{"Reserve", false}, {"Debit", false}, {"Notify", false}, {"Refund", true}, {"Release", true}},
			want:    process.StatusCompensated,
			effects: map[string]int{"Reserve": 1, "Debit": 1, "Refund": 1, "Release": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			key := "once"
			if tt.script != nil {
				tt.script(f, key)
			}
			start(t, f, key)
			for _, d := range tt.steps {
				const n = 16
				results := make([]process.StepResult, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						results[i], errs[i] = f.acts.Execute(context.Background(), process.StepRequest{
							ProcessID: process.ID(transfer, key), Step: d.step, Compensation: d.compensation,
						})
					})
				}
				wg.Wait()
				applied, dup := 0, 0
				var first process.StepResult
				for i, r := range results {
					if errs[i] != nil {
						t.Fatalf("%s: %v", d.step, errs[i])
					}
					if r.Applied {
						applied++
						first = r
					}
					if r.Duplicate {
						dup++
					}
				}
				// A failing step (Notify here) applies nothing: no
				// duplicates either, only the state it left.
				if failed := tt.want == process.StatusCompensated && d.step == "Notify"; failed {
					if applied != 0 || dup != 0 {
						t.Fatalf("%s: applied %d, duplicates %d", d.step, applied, dup)
					}
					continue
				}
				if applied != 1 || dup != n-1 {
					t.Fatalf("%s: applied %d, duplicates %d of %d", d.step, applied, dup, n)
				}
				again := execute(t, f, key, d.step, d.compensation)
				if !again.Duplicate || again.Applied || dataOf(t, again.Result).Refs[d.step] != dataOf(t, first.Result).Refs[d.step] {
					t.Fatalf("%s delivered again: %+v, first %+v", d.step, again, first)
				}
			}
			inst := f.get(t, key)
			if inst.Status != tt.want {
				t.Fatalf("status %s, want %s", inst.Status, tt.want)
			}
			if got := f.effects(t, key); !mapsEqual(got, tt.effects) {
				t.Fatalf("effects %v, want %v", got, tt.effects)
			}
			// The log agrees with the effects: one completion per effect.
			completions := map[string]int{}
			entries, err := process.Log(t.Context(), f.pool, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Event == process.EventStepCompleted || e.Event == process.EventCompensationCompleted {
					completions[e.Step]++
				}
			}
			if !mapsEqual(completions, tt.effects) {
				t.Fatalf("completions in the log %v, effects %v", completions, tt.effects)
			}
		})
	}
}

// TestInfrastructureErrorRollsBack: a handler's plain error goes back to
// Temporal with nothing written — no effect, no log entry, no inbox row,
// the same version — so the retry runs the step as if for the first time.
func TestInfrastructureErrorRollsBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start(t, f, "k")
	before := f.get(t, "k")
	f.fail("k", "Reserve", errConnRefused)
	_, err := f.acts.Execute(t.Context(), process.StepRequest{ProcessID: before.ID, Step: "Reserve"})
	if !errors.Is(err, errConnRefused) {
		t.Fatalf("err = %v, want the handler's", err)
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		t.Fatal("an infrastructure error must stay retryable")
	}
	after := f.get(t, "k")
	if after.Version != before.Version || after.Status != process.StatusNew || after.Retries != 0 {
		t.Fatalf("instance changed: %+v", after)
	}
	if got := f.events(t, "k"); len(got) != 1 {
		t.Fatalf("log %v", got)
	}
	if got := f.effects(t, "k"); len(got) != 0 {
		t.Fatalf("effects %v", got)
	}
	if res := execute(t, f, "k", "Reserve", false); !res.Applied || res.Step != "Debit" {
		t.Fatalf("retry: %+v", res)
	}
}

// TestStart: one process per type and business key, whoever starts it;
// a new caller becomes its driver; an unknown type fails for good.
func TestStart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	first := start(t, f, "k")
	if first.ProcessID != process.ID(transfer, "k") || first.Status != process.StatusNew || first.Step != "Reserve" {
		t.Fatalf("first start %+v", first)
	}
	again, err := f.acts.Start(ctx, process.StartInput{Type: transfer, BusinessKey: "k", Data: json.RawMessage(`{"amount": "99.00"}`), WorkflowID: "wf-k-rerun"})
	if err != nil || again.ProcessID != first.ProcessID {
		t.Fatalf("second start %+v %v", again, err)
	}
	inst := f.get(t, "k")
	if inst.WorkflowID != "wf-k-rerun" || dataOf(t, inst.Data).Amount != "10.00" {
		t.Fatalf("instance after the second start: %+v", inst)
	}
	want := []string{"ProcessStarted Reserve", "RunnerAttached Reserve"}
	if got := f.events(t, "k"); !equal(got, want) {
		t.Fatalf("log %v, want %v", got, want)
	}
	// A caller re-run after the end gets the outcome, and attaches to
	// nothing.
	for _, s := range []string{"Reserve", "Debit", "Notify"} {
		execute(t, f, "k", s, false)
	}
	end, err := f.acts.Start(ctx, process.StartInput{Type: transfer, BusinessKey: "k", WorkflowID: "wf-k-late"})
	if err != nil || end.Outcome == nil || end.Outcome.Status != process.StatusSucceeded || f.get(t, "k").WorkflowID != "wf-k-rerun" {
		t.Fatalf("start after the end: %+v %v", end, err)
	}
	_, err = f.acts.Start(ctx, process.StartInput{Type: "Nope", BusinessKey: "k"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Fatalf("unknown type: %v", err)
	}
	if _, err := f.acts.Load(ctx, process.ID(transfer, "missing")); !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Fatalf("load of a missing process: %v", err)
	}
}

// TestStaleRequest: asking for a step the process is not at changes
// nothing and tells where it is.
func TestStaleRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start(t, f, "k")
	res := execute(t, f, "k", "Notify", false)
	if res.Applied || res.Duplicate || res.Step != "Reserve" || res.Status != process.StatusNew {
		t.Fatalf("stale request: %+v", res)
	}
	if res := execute(t, f, "k", "Reserve", true); res.Applied || res.Step != "Reserve" {
		t.Fatalf("forward step asked as a compensation: %+v", res)
	}
	if got := f.effects(t, "k"); len(got) != 0 {
		t.Fatalf("effects %v", got)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestInboxRowAlreadyThere: a step whose inbox row exists while the
// instance still stands at it (a row written outside the step, the
// instance's lock notwithstanding) is a duplicate: its effect rolls back,
// the instance stays at the step, and the stored result comes back.
func TestInboxRowAlreadyThere(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start(t, f, "k")
	id := process.ID(transfer, "k")
	if _, err := f.pool.Exec(t.Context(), `INSERT INTO process_inbox (key, process_id, step, result)
		VALUES ($1, $2, 'Reserve', '{"stored": true}')`, id.String()+":Reserve", id); err != nil {
		t.Fatal(err)
	}
	res := execute(t, f, "k", "Reserve", false)
	var stored struct{ Stored bool }
	if err := json.Unmarshal(res.Result, &stored); err != nil || res.Applied || !res.Duplicate || !stored.Stored {
		t.Fatalf("a step whose inbox row exists: %+v", res)
	}
	if got := f.effects(t, "k"); len(got) != 0 {
		t.Fatalf("effects %v", got)
	}
	if inst := f.get(t, "k"); inst.Step != "Reserve" || inst.Version != 1 {
		t.Fatalf("the instance moved: %+v", inst)
	}
}
