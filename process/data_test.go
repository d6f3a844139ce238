package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/temporal"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/process"
)

// TestTypedData: a handler edits the data decoded for its step, and what
// it leaves is stored whole — a field set to false, or to a zero its tag
// omits, included; the step's result is what changed (null: removed);
// Next reads the data the handler left. Data a definition cannot take is
// refused at Start, and stored data it cannot read stops the step for
// good without a trace.
func TestTypedData(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	type data struct {
		Flag bool   `json:"flag"`
		N    int    `json:"n,omitempty"`
		Note string `json:"note,omitempty"`
	}
	reg, err := process.NewRegistry(process.Definition[data]{
		Type: "Typed", Initial: "A",
		Next: func(step string, d data) (string, error) {
			if step == "A" && d.Note == "to B" {
				return "B", nil
			}
			return "", nil
		},
		Steps: map[string]process.Step[data]{
			"A": {Handler: func(_ context.Context, _ pgx.Tx, _ process.StepInput, d *data) error {
				d.Flag, d.N, d.Note = false, 0, "to B"
				return nil
			}},
			"B": {Handler: func(context.Context, pgx.Tx, process.StepInput, *data) error { return nil }},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	acts := process.NewActivities(process.ActivitiesConfig{DB: pool, Registry: reg})
	out, err := process.RunDirect(ctx, acts, process.Options{Type: "Typed", BusinessKey: "k", Data: data{Flag: true, N: 3}})
	if err != nil || out.Status != process.StatusSucceeded || out.Step != "B" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	inst, err := process.Get(ctx, pool, out.ProcessID)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, inst.Data, `{"flag": false, "note": "to B"}`) {
		t.Fatalf("data %s", inst.Data)
	}
	log, err := process.Log(ctx, pool, out.ProcessID)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]json.RawMessage{}
	for _, e := range log {
		if e.Event == process.EventStepCompleted {
			var d struct{ Result json.RawMessage }
			if err := json.Unmarshal(e.Detail, &d); err != nil {
				t.Fatal(err)
			}
			results[e.Step] = d.Result
		}
	}
	if !sameJSON(t, results["A"], `{"flag": false, "n": null, "note": "to B"}`) || !sameJSON(t, results["B"], `{}`) {
		t.Fatalf("results %s", results)
	}

	var appErr *temporal.ApplicationError
	_, err = acts.Start(ctx, process.StartInput{Type: "Typed", BusinessKey: "extra", Data: json.RawMessage(`{"flag": true, "colour": "red"}`)})
	if !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Fatalf("initial data with a key the type lacks: %v", err)
	}
	st, err := acts.Start(ctx, process.StartInput{Type: "Typed", BusinessKey: "bad", Data: json.RawMessage(`{"flag": true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE process_instance SET data = '{"flag": "yes"}' WHERE process_id = $1`, st.ProcessID); err != nil {
		t.Fatal(err)
	}
	_, err = acts.Execute(ctx, process.StepRequest{ProcessID: st.ProcessID, Step: "A"})
	if !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Fatalf("stored data the type cannot read: %v", err)
	}
	inst, err = process.Get(ctx, pool, st.ProcessID)
	if err != nil || inst.Status != process.StatusNew || inst.Step != "A" || inst.Version != 1 {
		t.Fatalf("the process moved: %+v %v", inst, err)
	}
	checkReplay(t, pool)
}

// sameJSON reports whether got and want are the same JSON value.
func sameJSON(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}
