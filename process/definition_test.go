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
	type data struct{}
	type def = process.Definition[data]
	type step = process.Step[data]
	h := func(context.Context, pgx.Tx, process.StepInput, *data) error { return nil }
	next := func(string, data) (string, error) { return "", nil }
	valid := func() def {
		return def{Type: "T", Initial: "A", Next: next, Steps: map[string]step{
			"A": {Handler: h, Compensation: "UndoA"}, "UndoA": {Handler: h},
		}}
	}
	tests := []struct {
		name   string
		change func(d *def)
		want   string // "" for valid
	}{
		{"valid", func(*def) {}, ""},
		{"no type", func(d *def) { d.Type = "" }, "type"},
		{"no next", func(d *def) { d.Next = nil }, "Next"},
		{"unknown initial", func(d *def) { d.Initial = "Z" }, "initial"},
		{"no handler", func(d *def) { d.Steps["B"] = step{} }, "no handler"},
		{"colon in a name", func(d *def) { d.Steps["COMPENSATE:A"] = step{Handler: h} }, "':'"},
		{"unknown compensation", func(d *def) { d.Steps["B"] = step{Handler: h, Compensation: "Z"} }, "not among"},
		{"shared compensation", func(d *def) { d.Steps["B"] = step{Handler: h, Compensation: "UndoA"} }, "undoes both"},
		{"compensated compensation", func(d *def) {
			d.Steps["UndoA"] = step{Handler: h, Compensation: "UndoUndo"}
			d.Steps["UndoUndo"] = step{Handler: h}
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
	other := process.Definition[map[string]any]{Type: "T", Initial: "A", Next: func(string, map[string]any) (string, error) { return "", nil },
		Steps: map[string]process.Step[map[string]any]{"A": {Handler: func(context.Context, pgx.Tx, process.StepInput, *map[string]any) error { return nil }}}}
	if _, err := process.NewRegistry(valid(), other); err == nil {
		t.Fatal("a type registered twice, with two data types, was accepted")
	}
	other.Type = "U"
	if _, err := process.NewRegistry(valid(), other); err != nil {
		t.Fatalf("two definitions of two data types: %v", err)
	}
}

// TestID: the process id depends on type and key only.
func TestID(t *testing.T) {
	t.Parallel()
	id, again := process.ID("T", "k"), process.ID("T", "k")
	if id != again || id == process.ID("T", "k2") || id == process.ID("U", "k") || id.Version() != 5 {
		t.Fatal("ids are not deterministic UUID v5s of type and key")
	}
}
