package queue

import (
	"encoding/json"
	"time"
)

// Status is an item's place in the queue's state machine.
type Status string

const (
	StatusReady      Status = "READY"
	StatusClaimed    Status = "CLAIMED"
	StatusDispatched Status = "DISPATCHED"
	StatusCompleted  Status = "COMPLETED"
	// StatusFailed is the step between DISPATCHED and READY or DEAD_LETTER.
	// MarkFailed passes through it within one statement, so it shows in the
	// audit log but no row rests in it.
	StatusFailed     Status = "FAILED"
	StatusDeadLetter Status = "DEAD_LETTER"
	// StatusParked: set aside by its domain (a payment held at its rail's
	// cut-off), never claimed, until resumed or completed.
	StatusParked Status = "PARKED"
)

// Statuses lists every status, in lifecycle order.
var Statuses = []Status{StatusReady, StatusClaimed, StatusDispatched, StatusCompleted, StatusFailed, StatusDeadLetter, StatusParked}

// Item is a queue row.
type Item struct {
	Type              string
	ID                string
	TenantID          string
	Status            Status
	ScheduledExecTime time.Time
	InitWorkflowID    string
	DispatchBatchID   string
	ExecWorkflowID    string
	ClaimedAt         *time.Time
	DispatchedAt      *time.Time
	CompletedAt       *time.Time
	RetryCount        int
	LastError         string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	Paced             bool
}

// EnqueueParams describe one item to enqueue with its context.
type EnqueueParams struct {
	ItemType          string
	ItemID            string
	TenantID          string
	ScheduledExecTime time.Time
	InitWorkflowID    string
	// Context is the initialization's output, handed to the execution
	// workflow as is: valid JSON, or none (nil), when the item type keeps
	// its items' data itself and the execution reads it there. An item
	// without one costs no context row; its execution is given "".
	Context        json.RawMessage
	ContextVersion int // default 1
	// Paced: ScheduledExecTime is a slot the pacing rate limiter gave the
	// item; the dispatcher starts it exactly then, with no jitter.
	Paced bool
}

// EnqueueResult says what SaveContextAndEnqueue did.
type EnqueueResult struct {
	// Enqueued is true when this call created the item; false when the same
	// item with the same context was already there (an idempotent replay).
	Enqueued bool
	// Status is the item's queue status after the call.
	Status Status
}

// ClaimParams select a batch to claim. A claim is fair between tenants:
// each tenant with due items offers its oldest, up to twice its share of
// the batch and the room under its cap (tenant_capacity), and the batch
// takes them round-robin.
type ClaimParams struct {
	ItemType  string
	BatchSize int
	// PreStartBuffer claims items due up to this far ahead of now.
	PreStartBuffer time.Duration
	// MaxRetries excludes items that have already failed this many times.
	MaxRetries int
	// MaxInFlight, when positive, caps the item type's items CLAIMED or
	// DISPATCHED: the claim takes at most the room left under it. The
	// count and the claim are two statements, so concurrent claimers can
	// overshoot it together; the dispatcher runs one cycle at a time.
	MaxInFlight int
}

// ClaimedItem is a claimed item with its context pre-loaded.
type ClaimedItem struct {
	Type              string
	ID                string
	TenantID          string
	ScheduledExecTime time.Time
	InitWorkflowID    string
	RetryCount        int
	ClaimedAt         time.Time
	CreatedAt         time.Time
	// Context is nil when the item has no context row (which the queue's own
	// writers never produce: context is saved before the item is enqueued).
	Context        json.RawMessage
	ContextVersion int
	Paced          bool // ScheduledExecTime is a paced slot: start exactly then
}

// Batch is one claim's result.
type Batch struct {
	ID    string
	Items []ClaimedItem
	// InFlight is the item type's count of CLAIMED and DISPATCHED items
	// before this claim, when a MaxInFlight cap asked for it (else 0).
	InFlight int
	// AtCapacity: the cap left no room, so nothing was claimed.
	AtCapacity bool
}

// Dispatch names the execution workflow started for a claimed item.
type Dispatch struct {
	ItemID         string
	ExecWorkflowID string
}

// Failure is an item and why its dispatch or execution failed.
type Failure struct {
	ItemID string
	Error  string
}

// Outcome is where one item of a transition ended up.
type Outcome struct {
	ItemID     string
	Status     Status
	RetryCount int
}

// Depth is the number of items of a type per status, and the scheduled time
// of the oldest READY item (nil when none is READY).
type Depth struct {
	ByStatus    map[Status]int64
	OldestReady *time.Time
}

// AuditEntry is one row of the insert-only audit log.
type AuditEntry struct {
	ID           int64
	BatchID      string
	ItemType     string
	ItemID       string
	Action       string
	StatusBefore Status
	StatusAfter  Status
	Detail       string
	CreatedAt    time.Time
}

// Settings is an item type's dispatch settings, its exec_rate_config row, read
// by the dispatcher on every cycle.
type Settings struct {
	ItemType                 string
	Enabled                  bool
	BatchSize                int
	DispatchInterval         time.Duration
	JitterWindow             time.Duration
	PreStartBuffer           time.Duration
	MaxDispatchRetries       int
	StaleClaimThreshold      time.Duration
	MaxStaleRecoveryPerCycle int
	ExecWorkflowType         string
	ExecTaskQueue            string
	// MaxInFlight caps items claimed or dispatched and not yet settled
	// (0: no cap), so a slow workflow engine is not flooded.
	MaxInFlight int
	// PacingConfig names the rate-limit config (package pacing) that gives
	// the type's items their slots at initialization; empty: not paced.
	PacingConfig string
	// PacedLead starts a paced item's execution workflow this long before
	// its slot (at most PreStartBuffer); the workflow holds the item until
	// the slot on the worker's clock (dispatch.NotBefore), so the engine's
	// timer lateness does not move executions off their slots.
	PacedLead time.Duration
	// ExecMode is how the items are executed: PER_ITEM (ExecWorkflowType,
	// one workflow an item) or BATCH (one workflow a claimed batch, which
	// executes each item at its time; ExecWorkflowType then takes only
	// the items whose execution has to wait). Empty reads as PER_ITEM.
	ExecMode  ExecMode
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ExecMode is an item type's execution mode.
type ExecMode string

const (
	ExecPerItem ExecMode = "PER_ITEM"
	ExecBatch   ExecMode = "BATCH"
)

// Batched tells whether the type's items execute in batch executions.
func (c Settings) Batched() bool { return c.ExecMode == ExecBatch }
