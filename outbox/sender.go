package outbox

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
)

// Message is one instruction as the relayer hands it to a Sender.
type Message struct {
	OutboxID       uuid.UUID
	InstructionID  string
	ParticipantID  string
	SequenceID     int64
	IdempotencyKey string
	RailType       string
	Payload        json.RawMessage
	// Attempt counts sends of this instruction, from 1.
	Attempt int
	// TraceParent is the trace context the instruction was enqueued with
	// (Instruction.TraceParent; empty: none).
	TraceParent string
}

// Outcome classifies what a rail call, or a status inquiry, established.
type Outcome string

const (
	// Delivered: the rail has the instruction and accepted it.
	Delivered Outcome = "DELIVERED"
	// Retryable: the rail did not take it this time; sending again later
	// is safe.
	Retryable Outcome = "RETRYABLE"
	// Terminal: the rail refused it for good (or it is invalid and was
	// never sent): a dead letter.
	Terminal Outcome = "TERMINAL"
	// Unknown: the call may have arrived (a timeout or a cut connection
	// after the request was written). Inquire before any resend.
	Unknown Outcome = "UNKNOWN"
	// NotReceived answers an inquiry: the rail has no instruction under
	// the idempotency key, so sending it again is safe.
	NotReceived Outcome = "NOT_RECEIVED"
)

// Result is a rail call's outcome with the rail's own words.
type Result struct {
	Outcome Outcome
	// Reference is the rail's reference of a delivered instruction.
	Reference string
	// Code is the rail's code (an ISO 20022 reason code, a transport
	// code), or a local one such as INVALID_PAYLOAD or TIMEOUT.
	Code    string
	Message string
}

// Sender delivers messages to the rails of the types it serves. Its
// methods are called concurrently.
type Sender interface {
	// Validate checks a message before any call: a message it refuses is
	// a terminal failure and is never sent.
	Validate(m Message) error
	// Send delivers m once. It returns within ctx's deadline; a call cut
	// off after the request was written is Unknown, never Retryable.
	Send(ctx context.Context, m Message) Result
	// Inquire asks the rail what became of m, by its idempotency key:
	// Delivered or Terminal when the rail has it, NotReceived when it has
	// not, Unknown when the rail cannot be asked now.
	Inquire(ctx context.Context, m Message) Result
}

// BatchSender is a Sender that can send a strict participant's
// consecutive messages in one call (a lane's batch: package kafka
// produces them in one request). The relayer claims up to
// Config.LaneBatchSize of a participant's messages at once for the rail
// types it batches, and records each message's own outcome.
type BatchSender interface {
	Sender
	// Batches says whether messages of railType go in batches.
	Batches(railType string) bool
	// SendBatch delivers ms, one participant's messages of one rail type
	// in sequence order, in that order, and returns one Result per
	// message, in the same order. A message whose Result is not Delivered
	// (or Terminal) stays pending with every message after it, so a rail
	// must never let a later message of ms overtake an earlier one that
	// failed (or say so by answering it Unknown). It returns within ctx's
	// deadline; results missing or extra make every message Unknown.
	SendBatch(ctx context.Context, ms []Message) []Result
}
