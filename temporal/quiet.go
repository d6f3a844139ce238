package temporal

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// maxHold bounds a deliberate hold: the queue's paced lead (at most 60 s,
// by its schema) and the SDK's own 5 s threshold on top.
const maxHold = 65 * time.Second

// heldTaskFilter drops the SDK's TMPRL1104 warning ("workflow task
// duration exceeded 5 seconds") for the workflow types that hold their
// first task on purpose: a paced execution started its lead ahead of its
// slot waits in a local activity, on the worker's clock, inside the task
// (the SDK heartbeats the task meanwhile). Logged for every such payment,
// the warning would drown the real ones; it still shows for a task of
// those types that ran longer than any hold, and for every other type.
type heldTaskFilter struct {
	slog.Handler
	types []string
}

func (h heldTaskFilter) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "[TMPRL1104]") {
		held, short := false, false
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "WorkflowType":
				held = slices.Contains(h.types, a.Value.String())
			case "WorkflowTaskDuration":
				short = a.Value.Kind() == slog.KindDuration && a.Value.Duration() < maxHold
			}
			return true
		})
		if held && short {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h heldTaskFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return heldTaskFilter{Handler: h.Handler.WithAttrs(as), types: h.types}
}

func (h heldTaskFilter) WithGroup(name string) slog.Handler {
	return heldTaskFilter{Handler: h.Handler.WithGroup(name), types: h.types}
}
