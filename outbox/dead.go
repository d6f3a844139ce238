package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// DeadLetterFilter selects dead letters; zero fields select all.
type DeadLetterFilter struct {
	RailType      string
	ParticipantID string
	// Reason matches a part of the error code, the rail's code or its
	// message, in any case.
	Reason string
	// DiedFrom and DiedTo bound when the message died: [DiedFrom, DiedTo).
	DiedFrom, DiedTo time.Time
}

// DeadLetterPosition is where a page of dead letters ended.
type DeadLetterPosition struct {
	DeadAt   time.Time
	OutboxID uuid.UUID
}

var (
	epoch     = time.Unix(0, 0).UTC()
	farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
)

// ListDeadLetters lists up to limit dead letters after the position (nil:
// from the first), oldest death first.
func ListDeadLetters(ctx context.Context, db DBTX, f DeadLetterFilter, after *DeadLetterPosition, limit int) ([]DeadLetterEntry, error) {
	p := dbsqlc.ListDeadLettersAfterParams{
		AfterAt: epoch, DiedFrom: f.DiedFrom, DiedTo: f.DiedTo, RailType: f.RailType,
		ParticipantID: f.ParticipantID, Reason: f.Reason, MaxRows: int32(limit),
	}
	if p.DiedFrom.IsZero() {
		p.DiedFrom = epoch
	}
	if p.DiedTo.IsZero() {
		p.DiedTo = farFuture
	}
	if after != nil {
		p.AfterAt, p.AfterID = after.DeadAt, after.OutboxID
	}
	rows, err := dbsqlc.New(db).ListDeadLettersAfter(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("outbox: dead letters: %w", err)
	}
	out := make([]DeadLetterEntry, len(rows))
	for i, d := range rows {
		out[i] = deadLetterEntry(d)
	}
	return out, nil
}

func deadLetterEntry(d dbsqlc.PaymentOutboxDeadLetter) DeadLetterEntry {
	return DeadLetterEntry{
		Message: Message{
			OutboxID: d.OutboxID, InstructionID: d.InstructionID, ParticipantID: d.ParticipantID,
			SequenceID: d.SequenceID, IdempotencyKey: d.IdempotencyKey, RailType: d.RailType,
			Payload: d.Payload, Attempt: int(d.AttemptCount), TraceParent: ptr.Deref(d.Traceparent),
		},
		EnqueuedAt: d.EnqueuedAt, DeadAt: d.DeadAt, ErrorCode: d.ErrorCode,
		RailCode: ptr.Deref(d.RailCode), ErrorMessage: ptr.Deref(d.ErrorMessage),
	}
}

// Requeue asks for a dead letter to be sent again, due at At.
type Requeue struct {
	OutboxID uuid.UUID
	At       time.Time
}

// Requeued is what RequeueDeadLetters did.
type Requeued struct {
	// Messages went back to the pending table, each due at its At.
	Messages []Message
	// Refused are those the domain's OnRequeue kept dead, with why.
	Refused map[uuid.UUID]string
}

// RequeueDeadLetters sends dead letters again by an operator's decision,
// in tx: the domain's OnRequeue hook first redoes what its OnDead undid
// (and may refuse a message, which stays dead), then one statement moves
// the rest back to the pending table with their outbox id, sequence and
// attempt count, each due at its At (a slot from a rate-limit config, so
// a large requeue goes out at that rate), with an attempt row
// (RETRYABLE, OPERATOR_REQUEUE, reason) each. A message gets one more
// attempt: a retryable failure dead-letters it again. For a strict
// participant it goes out of order (its successors went on when it died).
// Ids no longer dead are left out of both lists.
func RequeueDeadLetters(ctx context.Context, tx pgx.Tx, hooks Hooks, reqs []Requeue, reason string) (Requeued, error) {
	ids := make([]uuid.UUID, len(reqs))
	at := make(map[uuid.UUID]time.Time, len(reqs))
	for i, r := range reqs {
		ids[i], at[r.OutboxID] = r.OutboxID, r.At
	}
	q := dbsqlc.New(tx)
	locked, err := q.LockDeadLetters(ctx, ids)
	if err != nil {
		return Requeued{}, fmt.Errorf("outbox: lock %d dead letters: %w", len(ids), err)
	}
	msgs := make([]Message, len(locked))
	for i, d := range locked {
		msgs[i] = Message{
			OutboxID: d.OutboxID, InstructionID: d.InstructionID, ParticipantID: d.ParticipantID,
			SequenceID: d.SequenceID, IdempotencyKey: d.IdempotencyKey, RailType: d.RailType,
			Payload: d.Payload, Attempt: int(d.AttemptCount),
		}
	}
	out := Requeued{Refused: map[uuid.UUID]string{}}
	if hooks.OnRequeue != nil && len(msgs) > 0 {
		if out.Refused, err = hooks.OnRequeue(ctx, tx, msgs); err != nil {
			return Requeued{}, fmt.Errorf("outbox: requeue hook: %w", err)
		}
		if out.Refused == nil {
			out.Refused = map[uuid.UUID]string{}
		}
	}
	send, sendAt := make([]uuid.UUID, 0, len(msgs)), make([]time.Time, 0, len(msgs))
	for _, m := range msgs {
		if _, no := out.Refused[m.OutboxID]; !no {
			send, sendAt = append(send, m.OutboxID), append(sendAt, at[m.OutboxID])
		}
	}
	if len(send) == 0 {
		return out, nil
	}
	rows, err := q.RequeueDeadLetters(ctx, dbsqlc.RequeueDeadLettersParams{OutboxIds: send, Ats: sendAt, Reason: reason})
	if err != nil {
		return Requeued{}, fmt.Errorf("outbox: requeue %d dead letters: %w", len(send), err)
	}
	out.Messages = make([]Message, len(rows))
	for i, r := range rows {
		out.Messages[i] = Message{
			OutboxID: r.OutboxID, InstructionID: r.InstructionID, ParticipantID: r.ParticipantID,
			SequenceID: r.SequenceID, IdempotencyKey: r.IdempotencyKey, RailType: r.RailType,
			Payload: r.Payload, Attempt: int(r.AttemptCount),
		}
	}
	return out, nil
}

// DeadLettersByID reads the dead letters among ids (those not dead are
// absent).
func DeadLettersByID(ctx context.Context, db DBTX, ids []uuid.UUID) ([]DeadLetterEntry, error) {
	rows, err := dbsqlc.New(db).GetDeadLetters(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("outbox: dead letters by id: %w", err)
	}
	out := make([]DeadLetterEntry, len(rows))
	for i, d := range rows {
		out[i] = deadLetterEntry(d)
	}
	return out, nil
}
