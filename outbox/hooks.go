package outbox

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Hooks let the domain react to final outcomes in the transaction that
// records them: the outcome rows and the hook's own writes commit
// together or not at all. Both are optional.
//
// A hook error rolls back the whole outcome batch; nothing is lost. The
// relayer retries the batch, then bisects it so that the other outcomes
// are recorded without the failing one. An outcome it still cannot record
// stays in flight (its DISPATCHING attempt is the latest) until the
// reaper requeues it for inquiry; the inquiry finds it delivered (or
// refused) at the rail, so it is recorded, and the hook called, again
// without a second send. A hook that always fails for a message thus
// retries every reaper timeout, visibly (hook_failures_total), and a
// strict participant waits behind it.
//
// Hooks see each settled message once per committed outcome; a hook must
// still be idempotent against the domain's own replays. Batches are
// sorted by participant and sequence.
type Hooks struct {
	// OnDelivered is called with messages the rail has (DISPATCHED).
	OnDelivered func(ctx context.Context, tx pgx.Tx, delivered []Delivery) error
	// OnDead is called with dead letters (FAILED): refused by the rail,
	// invalid (never sent), or still retryable when out of attempts. The
	// rail accepted none of them; an outcome that might have been
	// accepted (Unknown) is never dead-lettered.
	OnDead func(ctx context.Context, tx pgx.Tx, dead []DeadLetter) error
	// OnRequeue is called with dead letters an operator sends again
	// (RequeueDeadLetters), before they move: it redoes what OnDead
	// undid. It may keep some dead, saying why (by outbox id); the others
	// go out again, and OnDelivered or OnDead follows for each.
	OnRequeue func(ctx context.Context, tx pgx.Tx, msgs []Message) (refused map[uuid.UUID]string, err error)
}

// Delivery is a message the rail accepted.
type Delivery struct {
	Message Message
	// Result is the rail's answer: Reference, Code and Message.
	Result Result
	// Inquired: an inquiry found it delivered (an earlier send whose
	// outcome was unknown); no send in this attempt.
	Inquired bool
}

// DeadLetter is a message that will not be delivered.
type DeadLetter struct {
	Message Message
	// ErrorCode says why: CodeRailTerminal, CodeInvalidPayload or
	// CodeMaxAttempts.
	ErrorCode string
	// Result is the rail's last answer (empty for an invalid payload,
	// whose reason is in Result.Message).
	Result Result
}
