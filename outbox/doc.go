// Package outbox is the money-safe outbox between an executed item and the
// rail that must receive it: a gap-free sequence per participant, a hot
// pending table, an append-only attempts archive, a relayer woken by
// NOTIFY with a fallback poll, and a reaper for attempts whose relayer
// died mid-dispatch (docs/design.md, "Outbox and rail delivery").
//
// The outbox is a framework: it knows participants, rails, idempotency
// keys and opaque JSON payloads, never payments. A Sender (package rail)
// turns a Message into a call to a rail and classifies the answer; Hooks
// let the domain react to a final outcome in the same transaction that
// records it.
//
// # Tables (migration 00022)
//
//	participant_outbox_sequences  next number per participant (bump_participant_outbox_seq)
//	outbox_participant_settings   ordering mode per participant, '*' the default
//	payment_outbox_keys           every (instruction_id, idempotency_key) enqueued, until the retention
//	payment_outbox_pending        hot: waiting to be claimed (new or requeued)
//	payment_outbox_inflight       hot: claimed, not settled (claim token, reaper list, strict marker)
//	payment_outbox_attempts       append-only archive (a trigger refuses UPDATE, DELETE, TRUNCATE;
//	                              a DELETE only from the retention's transaction)
//	payment_outbox_dead_letters   the current dead letters
//
// An instruction is in exactly one of pending, in flight, or settled
// (DISPATCHED, or a dead letter), and every move between them is one
// statement that also appends its archive rows:
//
//	Enqueue          → pending
//	claim            pending → in flight            + DISPATCHING
//	outcome          in flight → settled             + DISPATCHED | FAILED
//	                 in flight → pending (requeue)   + RETRYABLE | UNKNOWN
//	reaper           in flight → pending (inquire)   + ZOMBIE_REQUEUE
//	operator         dead letter → pending           + RETRYABLE (OPERATOR_REQUEUE)
//
// A requeue keeps the outbox id, the sequence and the original enqueue
// time; only the attempt number grows (attempt_count + 1 at each claim).
//
// # Producer
//
// Enqueue runs in the caller's transaction: the domain books a payment
// and enqueues its instruction in one transaction, so a booked payment
// always has its instruction and an unbooked one never does. The sequence
// number comes from the participant's row in participant_outbox_sequences,
// which stays locked until the caller's transaction ends: a rollback
// gives the number back, so numbers are gap-free, and a participant's
// numbers become visible in order (the next enqueuer waited for the
// lock). A key enqueued before (its row anywhere: pending, in flight,
// delivered, dead) returns the first outbox id and sequence and writes
// nothing; payment_outbox_keys remembers every key for that, until the
// retention (DeleteDone) deletes a done instruction's key and attempts
// together, once old enough (migration 00067). EnqueueBatch
// does the same for many instructions in three statements, reserving each
// participant's numbers with one update.
//
// # Relayer
//
// Wake-ups. A relayer LISTENs on outbox_pending on a connection of its own
// (reopened with backoff when it drops; each start triggers a pass for
// what was notified meanwhile). A notification after a quiet spell wakes
// it at once; more within the debounce window (25 ms) fold into one pass
// at the window's end. Each transaction that inserted pending rows
// notifies when it commits, but only one notifying transaction commits at
// a time: PostgreSQL serializes the commits of notifying transactions
// (fsync included), so a notification per enqueue would cap producers at
// one commit per fsync; a transaction that finds another notifier
// committing skips its own, and the pass at the end of the debounce window
// sees its rows. The poll (500 ms) is the fallback; either alone drives
// delivery. After a pass that left nothing due, the relayer asks when the
// next pending row falls due and sets a timer, so backoffs end on time
// with the poll off. A relayer also passes again after an outcome batch
// it records when the batch may have made work claimable that no
// notification announces: a strict head settled (the participant's next
// sequence may go), a message put back, room in a relayer that was full.
// A batch of delivered throughput messages wakes nobody, so that a claim
// gathers what arrived in a debounce window instead of one claim a
// delivered message (1.1 claim passes a payment before).
//
// Claim. One transaction: the strict claim, then the throughput claim,
// each one statement that picks rows with FOR UPDATE SKIP LOCKED (several
// relayers take disjoint rows), deletes them from the pending table, and
// inserts their in-flight rows and DISPATCHING attempts. A crash before
// the commit leaves all of it pending; the commit makes the claim durable
// before any rail call. Batch sizes and the number of messages a relayer
// holds (MaxInFlight) are configured.
//
// Calls. Concurrency bounds rail calls at once, RailConcurrency per rail
// type; each call has a hard timeout (RailTimeout; a Sender that ignores
// its deadline is abandoned and the outcome is Unknown, as is a panic).
// Validate runs before every send: an invalid message is FAILED with
// INVALID_PAYLOAD and never sent.
//
// Outcomes are appended in batches, one transaction per batch:
//
//	Delivered               DISPATCHED, with the rail's reference; final
//	Terminal                FAILED (RAIL_TERMINAL), a dead letter; final
//	Retryable, NotReceived  RETRYABLE, requeued after BackoffBase·2^(n−1) (≤ BackoffMax, less up to
//	                        BackoffJitter of it); at attempt MaxAttempts FAILED (MAX_ATTEMPTS) instead.
//	                        The rail's code is recorded, so codes the rail's taxonomy does not know end
//	                        here too
//	Unknown (or anything    UNKNOWN, requeued with backoff and marked for inquiry (pending.inquire,
//	the contract lacks)     so the mark survives any crash); never dead-lettered: the rail may have it
//
// Inquiry. A claim marked for inquiry (an UNKNOWN, or a reaped claim)
// first calls Sender.Inquire: Delivered → DISPATCHED without a send;
// Terminal → FAILED; NotReceived → validated and sent now, in the same
// attempt; Unknown → requeued for inquiry again, with backoff. The
// inquiry's answer is recorded with the attempt (inquiry_outcome).
//
// MaxAttempts counts claims (attempt numbers), inquiries and messages put
// back unsent included.
//
// # Ordering
//
// Each participant is THROUGHPUT (the default) or STRICT
// (SetOrdering; '*' sets the default). The mode is read at enqueue and
// travels with the row.
//
// Throughput: a due row goes out as soon as a relayer claims it, beside
// the participant's others; a retrying row holds up nothing. Order at the
// rail follows claim order only roughly.
//
// Strict: sequence N+1 is not sent before N is DISPATCHED or dead. At most
// one strict head of a participant is in flight: its in-flight row is the
// participant's marker, and a partial unique index on
// payment_outbox_inflight (participant_id) WHERE strict AND NOT follower
// makes a second one an error, which rolls the claim back. The strict claim walks the
// participants with strict rows (a skip scan), takes each one's head — its
// lowest pending sequence, whatever its mode — and claims it only when it
// is strict, due, and the participant has no strict row in flight. The
// head is decided from the statement's snapshot and then locked with SKIP
// LOCKED: a head another relayer holds is skipped, never replaced by
// N+1, and a head claimed and settled since the snapshot is found gone
// when locked. Sequences become visible in order (the enqueue's row lock),
// so no lower sequence can appear below a head later. So any number of
// relayers, in any number of processes, keep strict order. The trade-off
// is head-of-line blocking: a strict participant moves one instruction per
// claim–send–record cycle (a few milliseconds with fsync), and a
// retrying, unknown or dead relayer's head holds everything behind it
// until it settles, for as long as its backoffs (or the reaper's timeout)
// last. Throughput mode has none of that and no order.
//
// Lanes: when the Sender is a BatchSender that batches the head's rail
// type (package kafka's event stream), the claim that takes a strict head
// also takes the run right behind it, up to LaneBatchSize messages in all
// (ClaimLaneFollowers): the participant's next pending rows in sequence
// order, stopping at the first that is not strict, not due, of another
// rail type, or locked by another claim. They are in flight as followers
// (strict, outside the unique marker; the claims' "no strict row in
// flight" test counts them, so the lane stays closed until every one is
// recorded or reaped). One SendBatch sends the messages in order, after
// the inquiries of those marked for one; each gets its own outcome, and
// from the first that is neither DISPATCHED nor dead, it and everything
// after it go back to pending (the rest due at once, BEHIND_FAILURE,
// marked for inquiry when the rail may have them). A crash between the
// call and its record leaves the whole batch to the reaper, which
// requeues each for inquiry; what was recorded before is never sent again.
//
// A participant switched to strict with instructions pending: its strict
// rows also wait for its older pending throughput rows (they are the
// head), but not for throughput rows already in flight. Switch while it is
// drained to have order from its first instruction. An operator's requeue
// of a dead letter sends it out of order (its successors went on).
//
// # Hooks
//
// OnDelivered and OnDead run in the outcome batch's transaction with the
// batch's settled messages. An error rolls the batch back: nothing is lost.
// The relayer splits the batch and records the halves apart (so one
// refused message does not hold up the others), retries what still fails
// a few times, and leaves the rest in flight: its DISPATCHING attempt is
// the latest, the reaper requeues it for inquiry after its timeout, and the
// inquiry finds it at the rail and records it (and calls the hook) again,
// without a second send.
//
// # Reaper
//
// Every relayer runs it: at start, every ReaperInterval (60 s), and
// earlier when the oldest claim in flight reaches ReaperTimeout (120 s), so
// a claim whose relayer died is requeued 120 s after it was made. One
// statement takes in-flight rows older than the timeout (SKIP LOCKED:
// reapers side by side, and claims being settled, are left to each
// other), requeues them with the same outbox id and sequence, marked for
// inquiry (the dead relayer may have sent them), and appends
// ZOMBIE_REQUEUE; deleting the in-flight row clears a strict participant's
// marker. An UNKNOWN outcome is recorded and requeued in one statement,
// so there is no UNKNOWN left unrequeued to reap.
//
// # What "exactly once" rests on
//
// The outbox sends a message again only when it knows the rail does not
// have it; the rail's deduplication on the idempotency key covers the
// windows no database can close. In detail:
//
//  1. One holder at a time. A claim deletes the pending row (SKIP LOCKED)
//     and inserts the in-flight row (primary key outbox_id) in one
//     statement; only the holder of an in-flight row may record its
//     outcome (the record deletes it, guarded by outbox id and attempt
//     number), and the reaper takes it away the same way. A relayer whose
//     claim was reaped records nothing.
//  2. The claim is durable before the call: a crash after a send leaves a
//     DISPATCHING attempt and an in-flight row, never a pending row.
//  3. No blind resend. Whatever may have reached the rail — an Unknown
//     outcome, a claim whose relayer vanished — is requeued marked for
//     inquiry, in the pending row itself, and sent again only after the
//     rail answered NotReceived.
//  4. No late send. A relayer never starts a send later than ReaperTimeout
//     − RailTimeout − ReaperTimeout/4 after its claim (it puts the message
//     back unsent instead, NOT_SENT), and RailTimeout is at most half the
//     reaper's timeout: a send is over before the reaper can hand the
//     message to another relayer.
//  5. The rail's idempotency key. A process frozen between that check
//     and its write, or a request delayed in the network past the
//     inquiry that found nothing, can still deliver twice; only the rail,
//     deduplicating on the idempotency key, closes that. The Sender must
//     send the key on every call and ask by it.
//
// The kill test (three relayer processes, one killed with SIGKILL
// mid-flight, 10,000 instructions) checks it end to end: every key reaches
// an HTTP rail exactly once, and strict participants' in sequence.
// cmd/paydispatch's TestRelayKilledMidFlight does the same with
// `paydispatch relay` processes, the real rail adapters and a
// `paydispatch rail-sim` that also answers busy and loses answers.
//
// # Metrics and operations
//
// NewMetrics registers the relayers' counters and histograms (notify
// wake-ups, claim batches, attempts by state, dispatch and
// enqueue-to-delivered latency, unknown outcomes, inquiries by result,
// reaper requeues, hook failures); NewDepthCollector reads the depths at
// scrape time (pending, due, oldest pending age, in flight, stuck in
// flight, dead letters). Attempts lists an instruction's archive,
// AttemptCounts and ReadDepth count, DeadLetters and ListDeadLetters list
// and RequeueDeadLetters sends some again (through the domain's
// OnRequeue hook, at the times given: package deadletter gives them slots
// from a rate limiter), and Reap requeues stale claims on
// demand. The hot statements' plans are checked by a test that explains
// what the operations really send (internal/testkit/pgtest.Plans).
//
// # Traces
//
// An Instruction may carry its enqueuer's trace context
// (Instruction.TraceParent, a W3C traceparent), opaque to the outbox: it
// is stored with the instruction (a nullable traceparent column) and
// follows it through claims, requeues, reaped claims and dead letters.
// A relayer given a Tracer (Config.Tracer, the OpenTelemetry API) starts
// a span per rail call, outbox.send or outbox.inquire, the child of that
// context, and hands it to the Sender in the call's context (package
// rail sends it on as a traceparent header). Without a Tracer the
// relayer starts none; without a trace context the column stays NULL.
package outbox
