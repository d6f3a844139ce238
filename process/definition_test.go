package process_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/process"
)

// TestRegistryValidates: a definition that could not run is refused when
// registered, not when a process reaches the broken part.
func TestRegistryValidates(t *testing.T) {
	t.Parallel()
	h := func(context.Context, pgx.Tx, process.StepInput) (process.Data, error) { return nil, nil }
	next := func(string, process.Data) (string, error) { return "", nil }
	valid := func() process.Definition {
		return process.Definition{Type: "T", Initial: "A", Next: next, Steps: map[string]process.Step{
			"A": {Handler: h, Compensation: "UndoA"}, "UndoA": {Handler: h},
		}}
	}
	tests := []struct {
		name   string
		change func(d *process.Definition)
		want   string // "" for valid
	}{
		{"valid", func(*process.Definition) {}, ""},
		{"no type", func(d *process.Definition) { d.Type = "" }, "type"},
		{"no next", func(d *process.Definition) { d.Next = nil }, "Next"},
		{"unknown initial", func(d *process.Definition) { d.Initial = "Z" }, "initial"},
		{"no handler", func(d *process.Definition) { d.Steps["B"] = process.Step{} }, "no handler"},
		{"colon in a name", func(d *process.Definition) { d.Steps["COMPENSATE:A"] = process.Step{Handler: h} }, "':'"},
		{"unknown compensation", func(d *process.Definition) { d.Steps["B"] = process.Step{Handler: h, Compensation: "Z"} }, "not among"},
		{"shared compensation", func(d *process.Definition) { d.Steps["B"] = process.Step{Handler: h, Compensation: "UndoA"} }, "undoes both"},
		{"compensated compensation", func(d *process.Definition) {
			d.Steps["UndoA"] = process.Step{Handler: h, Compensation: "UndoUndo"}
			d.Steps["UndoUndo"] = process.Step{Handler: h}
		}, "of its own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := valid()
			tt.change(&d)
			_, err := process.NewRegistry(d)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one about %s", err, tt.want)
			}
		})
	}
	if _, err := process.NewRegistry(valid(), valid()); err == nil {
		t.Fatal("a type registered twice was accepted")
	}
}

// TestID: the process id depends on type and key only.
func TestID(t *testing.T) {
	t.Parallel()
	if process.ID("T", "k") != process.ID("T", "k") || process.ID("T", "k") == process.ID("T", "k2") ||
		process.ID("T", "k") == process.ID("U", "k") || process.ID("T", "k").Version() != 5 {
		t.Fatal("ids are not deterministic UUID v5s of type and key")
	}
}
