package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// DBTX is what the outbox's reads and settings need: a pool, a connection
// or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Instruction is what the domain hands the outbox: one message for one
// participant's rail. The outbox never looks inside Payload.
type Instruction struct {
	// InstructionID identifies the domain's instruction (a payment's id,
	// say). With IdempotencyKey it is the enqueue's idempotency key.
	InstructionID string
	// ParticipantID owns the sequence the instruction is numbered in.
	ParticipantID string
	// IdempotencyKey is also what the rail deduplicates on and what an
	// inquiry asks about.
	IdempotencyKey string
	// RailType picks the Sender's rail and its concurrency limit.
	RailType string
	// Payload is the rail message, as JSON.
	Payload json.RawMessage
	// NotBefore, when set, holds the instruction until then.
	NotBefore time.Time
	// TraceParent is the caller's trace context (a W3C traceparent),
	// opaque to the outbox and kept with the instruction: the relayer's
	// send span is its child (Config.Tracer). Empty: none.
	TraceParent string
}

// ErrInvalidInstruction: an instruction lacks a field or its payload is
// not JSON. Nothing was written.
var ErrInvalidInstruction = errors.New("outbox: invalid instruction")

func (in Instruction) validate() error {
	var missing string
	switch {
	case in.InstructionID == "":
		missing = "InstructionID"
	case in.ParticipantID == "":
		missing = "ParticipantID"
	case in.IdempotencyKey == "":
		missing = "IdempotencyKey"
	case in.RailType == "":
		missing = "RailType"
	}
	if missing != "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalidInstruction, missing)
	}
	if in.ParticipantID == DefaultParticipant {
		return fmt.Errorf("%w: ParticipantID %q is reserved", ErrInvalidInstruction, DefaultParticipant)
	}
	if !json.Valid(in.Payload) {
		return fmt.Errorf("%w: Payload is not JSON", ErrInvalidInstruction)
	}
	return nil
}

// Enqueue adds an instruction to the outbox inside the caller's
// transaction, so that it commits or rolls back with the caller's own
// writes (a booked payment always has its instruction, an unbooked one
// never does). It takes the participant's next sequence number, gap-free:
// the participant's sequence row stays locked until tx ends, so a
// participant's enqueues commit one after another.
//
// Idempotent: a second Enqueue of the same (InstructionID, IdempotencyKey)
// returns the first one's outbox id and sequence with created = false and
// writes nothing, whether the first is still pending, in flight,
// delivered or dead. The rest of the instruction is not compared.
//
// An error leaves tx unusable (PostgreSQL aborts it): roll back.
func Enqueue(ctx context.Context, tx pgx.Tx, in Instruction) (outboxID uuid.UUID, sequenceID int64, created bool, err error) {
	if err := in.validate(); err != nil {
		return uuid.Nil, 0, false, err
	}
	id, err := newOutboxID()
	if err != nil {
		return uuid.Nil, 0, false, fmt.Errorf("outbox: new outbox id: %w", err)
	}
	var notBefore *time.Time
	if !in.NotBefore.IsZero() {
		notBefore = &in.NotBefore
	}
	q := dbsqlc.New(tx)
	row, err := q.Enqueue(ctx, dbsqlc.EnqueueParams{
		InstructionID:  in.InstructionID,
		IdempotencyKey: in.IdempotencyKey,
		ParticipantID:  in.ParticipantID,
		OutboxID:       id,
		RailType:       in.RailType,
		Payload:        in.Payload,
		NotBefore:      notBefore,
		Traceparent:    ptr.Optional(in.TraceParent),
	})
	if err != nil {
		return uuid.Nil, 0, false, fmt.Errorf("outbox: enqueue %s/%s: %w", in.InstructionID, in.IdempotencyKey, err)
	}
	return row.OutboxID, row.SequenceID, row.Created, nil
}

// Lookup returns the outbox id and sequence an (instruction, idempotency
// key) was enqueued under; ErrNotFound when it never was.
func Lookup(ctx context.Context, db DBTX, instructionID, idempotencyKey string) (outboxID uuid.UUID, sequenceID int64, err error) {
	k, err := dbsqlc.New(db).LookupKey(ctx, dbsqlc.LookupKeyParams{InstructionID: instructionID, IdempotencyKey: idempotencyKey})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, 0, ErrNotFound
	}
	if err != nil {
		return uuid.Nil, 0, fmt.Errorf("outbox: look up %s/%s: %w", instructionID, idempotencyKey, err)
	}
	return k.OutboxID, k.SequenceID, nil
}

// ErrNotFound: no such instruction, dead letter or setting.
var ErrNotFound = errors.New("outbox: not found")

// newOutboxID is a UUIDv7: time-ordered, so the pending table's primary
// key grows at its right edge.
func newOutboxID() (uuid.UUID, error) { return uuid.NewV7() }

// Enqueued is what EnqueueBatch did with one instruction.
type Enqueued struct {
	OutboxID   uuid.UUID
	SequenceID int64
	// Created is false for a key enqueued before (or earlier in the same
	// batch): the first one's outbox id and sequence, nothing written.
	Created bool
}

// ErrConcurrentEnqueue: another transaction registered one of the batch's
// keys under another participant while the batch ran. Roll back and
// retry; the retry sees the key as enqueued.
var ErrConcurrentEnqueue = errors.New("outbox: a key of the batch was enqueued concurrently")

// EnqueueBatch is Enqueue for many instructions, in three statements
// whatever their number: it locks the participants' sequence rows (in
// participant order), skips the keys already registered, reserves each
// participant's numbers with one update, and inserts the rest. Numbers
// follow the batch's order within each participant. Enqueue bumps the
// sequence row once per instruction, and a transaction that enqueues
// hundreds for one participant walks the row's growing chain of
// versions each time; a batch does not.
func EnqueueBatch(ctx context.Context, tx pgx.Tx, ins []Instruction) ([]Enqueued, error) {
	out := make([]Enqueued, len(ins))
	if len(ins) == 0 {
		return out, nil
	}
	type key struct{ instruction, idem string }
	var participants []string
	seenP := map[string]bool{}
	keys := dbsqlc.LookupKeysParams{}
	for i, in := range ins {
		if err := in.validate(); err != nil {
			return nil, fmt.Errorf("instruction %d: %w", i, err)
		}
		if !seenP[in.ParticipantID] {
			seenP[in.ParticipantID] = true
			participants = append(participants, in.ParticipantID)
		}
		keys.InstructionIds = append(keys.InstructionIds, in.InstructionID)
		keys.IdempotencyKeys = append(keys.IdempotencyKeys, in.IdempotencyKey)
	}
	q := dbsqlc.New(tx)
	if err := q.LockParticipants(ctx, participants); err != nil {
		return nil, fmt.Errorf("outbox: enqueue batch: lock participants: %w", err)
	}
	found, err := q.LookupKeys(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("outbox: enqueue batch: look up keys: %w", err)
	}
	existing := make(map[key]Enqueued, len(found))
	for _, k := range found {
		existing[key{k.InstructionID, k.IdempotencyKey}] = Enqueued{OutboxID: k.OutboxID, SequenceID: k.SequenceID}
	}
	p := dbsqlc.EnqueueReservedParams{}
	counts := map[string]int32{}
	first := map[key]int{} // the batch's first instruction of each new key
	for i, in := range ins {
		k := key{in.InstructionID, in.IdempotencyKey}
		if e, ok := existing[k]; ok {
			out[i] = e
			continue
		}
		if j, ok := first[k]; ok {
			out[i] = Enqueued{OutboxID: out[j].OutboxID} // sequence filled in below
			continue
		}
		first[k] = i
		id, err := newOutboxID()
		if err != nil {
			return nil, fmt.Errorf("outbox: new outbox id: %w", err)
		}
		out[i] = Enqueued{OutboxID: id, Created: true}
		notBefore := time.Unix(0, 0)
		if !in.NotBefore.IsZero() {
			notBefore = in.NotBefore
		}
		p.OutboxIds = append(p.OutboxIds, id)
		p.InstructionIds = append(p.InstructionIds, in.InstructionID)
		p.IdempotencyKeys = append(p.IdempotencyKeys, in.IdempotencyKey)
		p.ParticipantIds = append(p.ParticipantIds, in.ParticipantID)
		p.RailTypes = append(p.RailTypes, in.RailType)
		p.Payloads = append(p.Payloads, in.Payload)
		p.NotBefore = append(p.NotBefore, notBefore)
		p.Offsets = append(p.Offsets, counts[in.ParticipantID])
		p.Traceparents = append(p.Traceparents, in.TraceParent)
		counts[in.ParticipantID]++
	}
	if len(p.OutboxIds) == 0 {
		return out, nil
	}
	for _, pid := range participants {
		if n := counts[pid]; n > 0 {
			p.Participants = append(p.Participants, pid)
			p.Counts = append(p.Counts, n)
		}
	}
	rows, err := q.EnqueueReserved(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("outbox: enqueue batch: %w", err)
	}
	if len(rows) != len(p.OutboxIds) {
		return nil, ErrConcurrentEnqueue
	}
	seq := make(map[uuid.UUID]int64, len(rows))
	for _, r := range rows {
		seq[r.OutboxID] = r.SequenceID
	}
	for i := range out {
		if out[i].SequenceID == 0 {
			out[i].SequenceID = seq[out[i].OutboxID]
		}
	}
	return out, nil
}
