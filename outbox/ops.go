package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
	rows, err := dbsqlc.New(db).ListDeadLetters(ctx, int32(limit))
	if err != nil {
		return nil, fmt.Errorf("outbox: dead letters: %w", err)
	}
	out := make([]DeadLetterEntry, len(rows))
	for i, d := range rows {
		out[i] = DeadLetterEntry{
			Message: Message{
				OutboxID: d.OutboxID, InstructionID: d.InstructionID, ParticipantID: d.ParticipantID,
				SequenceID: d.SequenceID, IdempotencyKey: d.IdempotencyKey, RailType: d.RailType,
				Payload: d.Payload, Attempt: int(d.AttemptCount),
			},
			EnqueuedAt: d.EnqueuedAt, DeadAt: d.DeadAt, ErrorCode: d.ErrorCode,
			RailCode: deref(d.RailCode), ErrorMessage: deref(d.ErrorMessage),
		}
	}
	return out, nil
}

// RequeueDeadLetter sends a dead letter again, by an operator's decision:
// it goes back to the pending table with its outbox id, sequence and
// attempt count, due now, and an attempt row (RETRYABLE,
// OPERATOR_REQUEUE, reason) records the decision. It gets one more
// attempt: a retryable failure dead-letters it again, as its attempts
// are used up. For a strict participant it goes out of order (its
// successors went on when it died). ErrNotFound when it is not a dead
// letter (any more).
//
// Whatever the domain did on the dead letter (OnDead) it must be ready to
// undo when OnDelivered follows.
func RequeueDeadLetter(ctx context.Context, db DBTX, outboxID uuid.UUID, reason string) (sequenceID int64, err error) {
	row, err := dbsqlc.New(db).RequeueDeadLetter(ctx, dbsqlc.RequeueDeadLetterParams{OutboxID: outboxID, Reason: reason})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("outbox: requeue dead letter %s: %w", outboxID, err)
	}
	return row.SequenceID, nil
}
