package outbox

import (
	"context"
	"fmt"

	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// Ordering is a participant's delivery order.
type Ordering string

const (
	// Throughput: an instruction goes out as soon as it is due, in
	// parallel with the participant's others; a retrying instruction
	// holds up nothing, and order at the rail is not guaranteed.
	Throughput Ordering = "THROUGHPUT"
	// Strict: sequence N+1 is not sent before N is DISPATCHED or dead.
	// At most one instruction of the participant is in flight, and a
	// retrying (or unknown) N holds back everything after it until it
	// settles: head-of-line blocking, the price of order.
	Strict Ordering = "STRICT"
)

// DefaultParticipant is the setting used for participants without their
// own. It starts as Throughput.
const DefaultParticipant = "*"

func (o Ordering) valid() bool { return o == Throughput || o == Strict }

// SetOrdering sets a participant's ordering mode, or the default's
// (DefaultParticipant). It applies to instructions enqueued afterwards:
// each carries the mode it was enqueued under. Strict order holds among a
// participant's strict instructions, which also wait for its older
// pending throughput ones, but not for throughput ones already in flight;
// switch a participant to strict when it is drained to have it from its
// first instruction.
func SetOrdering(ctx context.Context, db DBTX, participantID string, mode Ordering) error {
	if participantID == "" || !mode.valid() {
		return fmt.Errorf("outbox: set ordering %q to %q: want a participant and %s or %s", participantID, mode, Strict, Throughput)
	}
	if err := dbsqlc.New(db).UpsertOrdering(ctx, dbsqlc.UpsertOrderingParams{ParticipantID: participantID, OrderingMode: string(mode)}); err != nil {
		return fmt.Errorf("outbox: set ordering of %s: %w", participantID, err)
	}
	return nil
}

// ResetOrdering removes a participant's own setting: it follows the
// default again. ErrNotFound when it had none.
func ResetOrdering(ctx context.Context, db DBTX, participantID string) error {
	n, err := dbsqlc.New(db).DeleteOrdering(ctx, participantID)
	if err != nil {
		return fmt.Errorf("outbox: reset ordering of %s: %w", participantID, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// OrderingOf returns the mode a participant's next instruction gets.
func OrderingOf(ctx context.Context, db DBTX, participantID string) (Ordering, error) {
	m, err := dbsqlc.New(db).GetOrdering(ctx, participantID)
	if err != nil {
		return "", fmt.Errorf("outbox: ordering of %s: %w", participantID, err)
	}
	return Ordering(m), nil
}
