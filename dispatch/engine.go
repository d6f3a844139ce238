package dispatch

import (
	"context"
	"errors"
	"strings"
	"time"
)

// ErrAlreadyStarted: the engine already has this execution workflow (running,
// or completed); a start is a duplicate and counts as done.
var ErrAlreadyStarted = errors.New("dispatch: execution workflow already started")

// Engine is what the dispatcher needs from the workflow engine.
type Engine interface {
	// Start starts an execution workflow. A duplicate (same id, running or
	// completed) is ErrAlreadyStarted.
	Start(ctx context.Context, s StartRequest) error
	// Exists tells whether any run of the workflow id exists.
	Exists(ctx context.Context, workflowID string) (bool, error)
	// Closed reports how the latest run of each of ids closed; ids whose
	// latest run is still open (or unknown) are absent.
	Closed(ctx context.Context, ids []string) (map[string]Closure, error)
}

// StartRequest starts one execution workflow.
type StartRequest struct {
	WorkflowID   string
	WorkflowType string
	TaskQueue    string
	// Delay before the workflow's first task (Temporal's StartDelay): the
	// workflow exists at once, so a duplicate start is refused even before
	// it runs.
	Delay time.Duration
	// ItemID and Context are an item's execution workflow's two
	// arguments; Input, when set, is instead the one argument (a batch
	// execution's BatchInput).
	ItemID  string
	Context string
	Input   any
	// NotBefore, for a paced item started ahead of its slot (the paced
	// lead), is the slot: the engine hands it to the workflow (see
	// NotBefore), which holds the item until then. Zero otherwise.
	NotBefore time.Time
}

// Closure is how an execution workflow's latest run ended.
type Closure struct {
	Completed bool   // false: failed, terminated, timed out or cancelled
	Status    string // the engine's status name
}

// ExecWorkflowID is the deterministic id of an item's execution workflow.
func ExecWorkflowID(itemType, itemID string) string {
	return "exec-" + strings.ToLower(itemType) + "-" + itemID
}
