package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// Attempts lists an instruction's attempts (every outbox id it was
// enqueued under), in the order they happened.
func Attempts(ctx context.Context, db DBTX, instructionID string) ([]Attempt, error) {
	rows, err := dbsqlc.New(db).ListAttempts(ctx, instructionID)
	if err != nil {
		return nil, fmt.Errorf("outbox: attempts of %s: %w", instructionID, err)
	}
	out := make([]Attempt, len(rows))
	for i, a := range rows {
		out[i] = attemptFromRow(a)
	}
	return out, nil
}

// AttemptCounts counts the archive's rows per state. It reads the whole
// archive: an operations query, not a metric.
func AttemptCounts(ctx context.Context, db DBTX) (map[State]int64, error) {
	rows, err := dbsqlc.New(db).AttemptStateCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbox: attempt counts: %w", err)
	}
	out := make(map[State]int64, len(rows))
	for _, r := range rows {
		out[State(r.State)] = r.N
	}
	return out, nil
}

// Depth is the outbox's current state at a glance.
type Depth struct {
	Pending    int64 // in the pending table, due or backing off
	PendingDue int64
	// OldestPending is the enqueue time of the oldest pending
	// instruction (zero when none).
	OldestPending time.Time
	InFlight      int64 // claimed, not yet settled
	Stuck         int64 // in flight longer than the stuckAfter asked for
	DeadLetters   int64
}

// ReadDepth reads the hot tables' counts.
func ReadDepth(ctx context.Context, db DBTX, stuckAfter time.Duration) (Depth, error) {
	d, err := dbsqlc.New(db).Depth(ctx, stuckAfter.Seconds())
	if err != nil {
		return Depth{}, fmt.Errorf("outbox: depth: %w", err)
	}
	out := Depth{Pending: d.Pending, PendingDue: d.PendingDue, InFlight: d.InFlight, Stuck: d.Stuck, DeadLetters: d.DeadLetters}
	if d.OldestPending.After(time.Unix(0, 0)) {
		out.OldestPending = d.OldestPending
	}
	return out, nil
}

// DeadLetterEntry is a current dead letter.
type DeadLetterEntry struct {
	Message      Message // Attempt: the attempts it had
	EnqueuedAt   time.Time
	DeadAt       time.Time
	ErrorCode    string
	RailCode     string
	ErrorMessage string
}

// DeadLetters lists up to limit current dead letters, oldest first.
func DeadLetters(ctx context.Context, db DBTX, limit int) ([]DeadLetterEntry, error) {
	return ListDeadLetters(ctx, db, DeadLetterFilter{}, nil, limit)
}
