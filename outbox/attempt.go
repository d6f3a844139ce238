package outbox

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// State is an attempt row's state in the archive.
type State string

const (
	// StateDispatching: claimed by a relayer, about to be sent (the
	// claim's own row; its outcome is the next row of the attempt).
	StateDispatching State = "DISPATCHING"
	// StateDispatched: the rail has it. Final.
	StateDispatched State = "DISPATCHED"
	// StateRetryable: not taken this time; requeued with backoff (or put
	// back unsent: error code NOT_SENT, OPERATOR_REQUEUE).
	StateRetryable State = "RETRYABLE"
	// StateFailed: a dead letter. Final until an operator requeues it.
	StateFailed State = "FAILED"
	// StateUnknown: the call may have reached the rail; requeued for an
	// inquiry, never resent blindly.
	StateUnknown State = "UNKNOWN"
	// StateZombieRequeue: the claim's relayer gave no outcome within the
	// reaper's timeout; requeued for an inquiry.
	StateZombieRequeue State = "ZOMBIE_REQUEUE"
)

// Error codes the outbox writes in attempts (error_code) and dead letters,
// beside the rail's own code (rail_code).
const (
	// CodeInvalidPayload: Sender.Validate refused the message; never sent.
	CodeInvalidPayload = "INVALID_PAYLOAD"
	// CodeRailTerminal: the rail refused it for good.
	CodeRailTerminal = "RAIL_TERMINAL"
	// CodeRailRetryable: the rail did not take it this time.
	CodeRailRetryable = "RAIL_RETRYABLE"
	// CodeMaxAttempts: still retryable after Config.MaxAttempts attempts.
	CodeMaxAttempts = "MAX_ATTEMPTS"
	// CodeOutcomeUnknown: a send or inquiry that could not tell.
	CodeOutcomeUnknown = "OUTCOME_UNKNOWN"
	// CodeNotSent: claimed but put back before any rail call (the relayer
	// stopped, or the claim grew too old to send safely).
	CodeNotSent = "NOT_SENT"
	// CodeZombieRequeue: taken back by the reaper.
	CodeZombieRequeue = "ZOMBIE_REQUEUE"
	// CodeOperatorRequeue: a dead letter sent again by an operator.
	CodeOperatorRequeue = "OPERATOR_REQUEUE"
)

// Attempt is one row of the archive.
type Attempt struct {
	AttemptID      uuid.UUID
	OutboxID       uuid.UUID
	InstructionID  string
	ParticipantID  string
	SequenceID     int64
	IdempotencyKey string
	RailType       string
	Payload        json.RawMessage
	AttemptNo      int
	State          State
	ClaimedAt      time.Time
	CompletedAt    time.Time // zero for DISPATCHING rows
	RailReference  string
	RailCode       string
	ErrorCode      string
	ErrorMessage   string
	Latency        time.Duration // the rail calls of the attempt
	// InquiryOutcome is what an inquiry at the start of the attempt
	// answered, empty when there was none.
	InquiryOutcome Outcome
	// NextAttemptAt is when a requeued attempt was due again (zero when
	// it was not requeued).
	NextAttemptAt time.Time
	RelayerID     string
	CreatedAt     time.Time
}

func attemptFromRow(a dbsqlc.PaymentOutboxAttempt) Attempt {
	out := Attempt{
		AttemptID:      a.AttemptID,
		OutboxID:       a.OutboxID,
		InstructionID:  a.InstructionID,
		ParticipantID:  a.ParticipantID,
		SequenceID:     a.SequenceID,
		IdempotencyKey: a.IdempotencyKey,
		RailType:       a.RailType,
		Payload:        json.RawMessage(a.Payload),
		AttemptNo:      int(a.AttemptNo),
		State:          State(a.State),
		ClaimedAt:      a.ClaimedAt,
		RailReference:  ptr.Deref(a.RailReference),
		RailCode:       ptr.Deref(a.RailCode),
		ErrorCode:      ptr.Deref(a.ErrorCode),
		ErrorMessage:   ptr.Deref(a.ErrorMessage),
		InquiryOutcome: Outcome(ptr.Deref(a.InquiryOutcome)),
		RelayerID:      ptr.Deref(a.RelayerID),
		CreatedAt:      a.CreatedAt,
	}
	if a.CompletedAt != nil {
		out.CompletedAt = *a.CompletedAt
	}
	if a.NextAttemptAt != nil {
		out.NextAttemptAt = *a.NextAttemptAt
	}
	if a.LatencyMs != nil {
		out.Latency = time.Duration(*a.LatencyMs) * time.Millisecond
	}
	return out
}
