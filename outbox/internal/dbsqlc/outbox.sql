-- Outbox statements. Every state change is one statement that writes its
-- archive rows too, so a change and its audit record commit together.

-- name: Enqueue :one
-- Enqueue's one round trip (outbox_enqueue, in the migration).
SELECT e.outbox_id::uuid AS outbox_id, e.sequence_id::bigint AS sequence_id, e.created::bool AS created
FROM outbox_enqueue(@instruction_id::text, @idempotency_key::text, @participant_id::text, @outbox_id::uuid,
                    @rail_type::text, @payload::jsonb, sqlc.narg('not_before')::timestamptz,
                    sqlc.narg('traceparent')::text) e;

-- name: LookupKey :one
-- The enqueue conflict lookup: the outbox id and sequence of a key.
SELECT k.outbox_id, k.sequence_id
FROM payment_outbox_keys k
WHERE k.instruction_id = @instruction_id::text AND k.idempotency_key = @idempotency_key::text;

-- name: ClaimDue :many
-- The throughput claim: due non-strict rows, oldest first, locked with
-- SKIP LOCKED so concurrent relayers take disjoint rows, deleted from the
-- pending table, with their in-flight row and DISPATCHING attempt
-- inserted, in one statement: a crash leaves all of it or none.
WITH claimed AS (
    DELETE FROM payment_outbox_pending p
    WHERE p.outbox_id = ANY(ARRAY(
        SELECT d.outbox_id
        FROM payment_outbox_pending d
        WHERE NOT d.strict AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at, d.created_at
        LIMIT @batch_size::int
        FOR UPDATE SKIP LOCKED))
    RETURNING p.outbox_id, p.instruction_id, p.participant_id, p.sequence_id, p.idempotency_key,
              p.rail_type, p.payload, p.attempt_count, p.created_at, p.inquire, p.strict, p.traceparent
), inflight AS (
    INSERT INTO payment_outbox_inflight (outbox_id, attempt_no, participant_id, sequence_id, strict,
                                         relayer_id, claimed_at, enqueued_at)
    SELECT c.outbox_id, c.attempt_count + 1, c.participant_id, c.sequence_id, c.strict,
           @relayer_id::text, now(), c.created_at
    FROM claimed c
), attempts AS (
    -- Attempt ids come from the relayer (UUIDv7 made in Go: a tenth of
    -- the cost of outbox_uuidv7() per row), one per claimed row.
    INSERT INTO payment_outbox_attempts (attempt_id, outbox_id, instruction_id, participant_id, sequence_id,
                                         idempotency_key, rail_type, payload, attempt_no, state, claimed_at, relayer_id,
                                         traceparent)
    SELECT (@attempt_ids::uuid[])[c.n], c.outbox_id, c.instruction_id, c.participant_id, c.sequence_id,
           c.idempotency_key, c.rail_type, c.payload, c.attempt_count + 1, 'DISPATCHING', now(), @relayer_id::text,
           c.traceparent
    FROM (SELECT claimed.*, row_number() OVER () AS n FROM claimed) c
)
SELECT c.outbox_id, c.instruction_id, c.participant_id, c.sequence_id, c.idempotency_key, c.rail_type,
       c.payload, (c.attempt_count + 1)::int AS attempt_no, c.created_at, c.inquire, c.strict,
       now()::timestamptz AS claimed_at, coalesce(c.traceparent, '')::text AS traceparent
FROM claimed c;

-- name: ClaimStrict :many
-- The strict claim: for each participant with strict rows (a skip scan,
-- one index descent each), its head (lowest sequence pending, whatever
-- its mode), claimable only when it is strict, due, and the participant
-- has no strict row in flight. At most one row per participant. The head
-- is decided from this statement's snapshot and then locked with SKIP
-- LOCKED: a head another relayer holds is skipped, never replaced by the
-- next sequence, and a head that was claimed since the snapshot is gone
-- when locked. The in-flight insert is the marker: the unique index
-- ix_inflight_strict makes a second strict row of a participant in flight
-- an error, which rolls the claim back.
WITH RECURSIVE participants AS (
    (SELECT p.participant_id FROM payment_outbox_pending p WHERE p.strict ORDER BY p.participant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT p.participant_id FROM payment_outbox_pending p
            WHERE p.strict AND p.participant_id > participants.participant_id
            ORDER BY p.participant_id LIMIT 1)
    FROM participants
    WHERE participants.participant_id IS NOT NULL
), heads AS (
    SELECT h.outbox_id
    FROM participants s
    CROSS JOIN LATERAL (
        SELECT p.outbox_id, p.strict, p.next_attempt_at, p.created_at
        FROM payment_outbox_pending p
        WHERE p.participant_id = s.participant_id
        ORDER BY p.sequence_id
        LIMIT 1) h
    WHERE s.participant_id IS NOT NULL
      AND h.strict
      AND h.next_attempt_at <= now()
      AND NOT EXISTS (SELECT 1 FROM payment_outbox_inflight f
                      WHERE f.participant_id = s.participant_id AND f.strict)
    ORDER BY h.next_attempt_at, h.created_at
    LIMIT @batch_size::int
), claimed AS (
    DELETE FROM payment_outbox_pending p
    WHERE p.outbox_id = ANY(ARRAY(
        SELECT d.outbox_id
        FROM payment_outbox_pending d
        WHERE d.outbox_id = ANY(ARRAY(SELECT heads.outbox_id FROM heads))
        FOR UPDATE SKIP LOCKED))
    RETURNING p.outbox_id, p.instruction_id, p.participant_id, p.sequence_id, p.idempotency_key,
              p.rail_type, p.payload, p.attempt_count, p.created_at, p.inquire, p.strict, p.traceparent
), inflight AS (
    INSERT INTO payment_outbox_inflight (outbox_id, attempt_no, participant_id, sequence_id, strict,
                                         relayer_id, claimed_at, enqueued_at)
    SELECT c.outbox_id, c.attempt_count + 1, c.participant_id, c.sequence_id, c.strict,
           @relayer_id::text, now(), c.created_at
    FROM claimed c
), attempts AS (
    -- Attempt ids come from the relayer (UUIDv7 made in Go: a tenth of
    -- the cost of outbox_uuidv7() per row), one per claimed row.
    INSERT INTO payment_outbox_attempts (attempt_id, outbox_id, instruction_id, participant_id, sequence_id,
                                         idempotency_key, rail_type, payload, attempt_no, state, claimed_at, relayer_id,
                                         traceparent)
    SELECT (@attempt_ids::uuid[])[c.n], c.outbox_id, c.instruction_id, c.participant_id, c.sequence_id,
           c.idempotency_key, c.rail_type, c.payload, c.attempt_count + 1, 'DISPATCHING', now(), @relayer_id::text,
           c.traceparent
    FROM (SELECT claimed.*, row_number() OVER () AS n FROM claimed) c
)
SELECT c.outbox_id, c.instruction_id, c.participant_id, c.sequence_id, c.idempotency_key, c.rail_type,
       c.payload, (c.attempt_count + 1)::int AS attempt_no, c.created_at, c.inquire, c.strict,
       now()::timestamptz AS claimed_at, coalesce(c.traceparent, '')::text AS traceparent
FROM claimed c;

-- name: RecordOutcomes :many
-- Settles a batch of claims: deletes each one's in-flight row, guarded by
-- outbox id and attempt number (a claim the reaper took back, or already
-- settled, is left alone and not returned), appends its outcome attempt,
-- requeues it (same outbox id and sequence) when requeue_after_ms >= 0,
-- and files it as a dead letter when its state is FAILED. Returns the
-- outbox ids actually settled.
WITH input AS (
    SELECT unnest(@outbox_ids::uuid[]) AS outbox_id,
           unnest(@attempt_ids::uuid[]) AS attempt_id,
           unnest(@attempt_nos::int[]) AS attempt_no,
           unnest(@instruction_ids::text[]) AS instruction_id,
           unnest(@idempotency_keys::text[]) AS idempotency_key,
           unnest(@rail_types::text[]) AS rail_type,
           unnest(@payloads::jsonb[]) AS payload,
           unnest(@states::text[]) AS state,
           unnest(@rail_references::text[]) AS rail_reference,
           unnest(@rail_codes::text[]) AS rail_code,
           unnest(@error_codes::text[]) AS error_code,
           unnest(@error_messages::text[]) AS error_message,
           unnest(@latencies_ms::int[]) AS latency_ms,
           unnest(@inquiry_outcomes::text[]) AS inquiry_outcome,
           unnest(@requeue_after_ms::bigint[]) AS requeue_after_ms,
           unnest(@requeue_inquire::bool[]) AS requeue_inquire,
           unnest(@traceparents::text[]) AS traceparent
), settled AS (
    DELETE FROM payment_outbox_inflight f
    USING input i
    WHERE f.outbox_id = ANY(@outbox_ids::uuid[])
      AND f.outbox_id = i.outbox_id
      AND f.attempt_no = i.attempt_no
    RETURNING f.outbox_id, f.participant_id, f.sequence_id, f.strict, f.relayer_id, f.claimed_at, f.enqueued_at
), outcome AS (
    SELECT i.outbox_id, i.attempt_id, i.attempt_no, i.instruction_id, s.participant_id, s.sequence_id, i.idempotency_key,
           i.rail_type, i.payload, i.state, i.rail_reference, i.rail_code, i.error_code, i.error_message,
           i.latency_ms, i.inquiry_outcome, i.requeue_after_ms, i.requeue_inquire, NULLIF(i.traceparent, '') AS traceparent,
           s.strict, s.relayer_id, s.claimed_at, s.enqueued_at
    FROM input i
    JOIN settled s ON s.outbox_id = i.outbox_id
), attempts AS (
    INSERT INTO payment_outbox_attempts (attempt_id, outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                         rail_type, payload, attempt_no, state, claimed_at, completed_at,
                                         rail_reference, rail_code, error_code, error_message, latency_ms,
                                         inquiry_outcome, next_attempt_at, relayer_id)
    SELECT o.attempt_id, o.outbox_id, o.instruction_id, o.participant_id, o.sequence_id, o.idempotency_key,
           o.rail_type, o.payload, o.attempt_no, o.state, o.claimed_at, now(),
           NULLIF(o.rail_reference, ''), NULLIF(o.rail_code, ''), NULLIF(o.error_code, ''),
           NULLIF(o.error_message, ''), o.latency_ms, NULLIF(o.inquiry_outcome, ''),
           CASE WHEN o.requeue_after_ms >= 0 THEN now() + o.requeue_after_ms * interval '1 millisecond' END,
           o.relayer_id
    FROM outcome o
), requeued AS (
    INSERT INTO payment_outbox_pending (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                        rail_type, payload, attempt_count, next_attempt_at, created_at,
                                        inquire, strict, traceparent)
    SELECT o.outbox_id, o.instruction_id, o.participant_id, o.sequence_id, o.idempotency_key,
           o.rail_type, o.payload, o.attempt_no, now() + o.requeue_after_ms * interval '1 millisecond',
           o.enqueued_at, o.requeue_inquire, o.strict, o.traceparent
    FROM outcome o
    WHERE o.requeue_after_ms >= 0
), dead AS (
    INSERT INTO payment_outbox_dead_letters (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                             rail_type, payload, attempt_count, enqueued_at, strict,
                                             error_code, rail_code, error_message, traceparent)
    SELECT o.outbox_id, o.instruction_id, o.participant_id, o.sequence_id, o.idempotency_key,
           o.rail_type, o.payload, o.attempt_no, o.enqueued_at, o.strict,
           coalesce(NULLIF(o.error_code, ''), 'FAILED'), NULLIF(o.rail_code, ''), NULLIF(o.error_message, ''),
           o.traceparent
    FROM outcome o
    WHERE o.state = 'FAILED'
)
SELECT s.outbox_id, s.enqueued_at FROM settled s;

-- name: ReapZombies :many
-- Claims older than the timeout whose relayer never settled them (it died,
-- or lost its database connection): the in-flight row is deleted (which
-- also clears a strict participant's marker), the row goes back to the
-- pending table with the same outbox id and sequence, marked for inquiry
-- (the dead relayer may have sent it), due at once, and a ZOMBIE_REQUEUE
-- attempt is appended. SKIP LOCKED: reapers running side by side take
-- disjoint claims, and a claim being settled right now is left alone.
WITH reaped AS (
    DELETE FROM payment_outbox_inflight f
    WHERE f.outbox_id = ANY(ARRAY(
        SELECT z.outbox_id
        FROM payment_outbox_inflight z
        WHERE z.claimed_at < now() - make_interval(secs => @timeout_secs::float8)
        ORDER BY z.claimed_at
        LIMIT @batch_size::int
        FOR UPDATE SKIP LOCKED))
    RETURNING f.outbox_id, f.attempt_no, f.participant_id, f.sequence_id, f.strict, f.relayer_id,
              f.claimed_at, f.enqueued_at
), zombie AS (
    -- LEFT JOIN: a claim without its DISPATCHING row cannot exist (both
    -- are written by one statement); if it did, the NOT NULL payload
    -- would fail the requeue and roll everything back rather than lose it.
    SELECT r.outbox_id, r.attempt_no, r.participant_id, r.sequence_id, r.strict, r.relayer_id,
           r.claimed_at, r.enqueued_at, a.instruction_id, a.idempotency_key, a.rail_type, a.payload, a.traceparent
    FROM reaped r
    LEFT JOIN LATERAL (
        SELECT d.instruction_id, d.idempotency_key, d.rail_type, d.payload, d.traceparent
        FROM payment_outbox_attempts d
        WHERE d.outbox_id = r.outbox_id AND d.attempt_no = r.attempt_no AND d.state = 'DISPATCHING'
        LIMIT 1) a ON true
), requeued AS (
    INSERT INTO payment_outbox_pending (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                        rail_type, payload, attempt_count, next_attempt_at, created_at,
                                        inquire, strict, traceparent)
    SELECT z.outbox_id, z.instruction_id, z.participant_id, z.sequence_id, z.idempotency_key,
           z.rail_type, z.payload, z.attempt_no, now(), z.enqueued_at, true, z.strict, z.traceparent
    FROM zombie z
    ON CONFLICT DO NOTHING
), audit AS (
    INSERT INTO payment_outbox_attempts (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                         rail_type, payload, attempt_no, state, claimed_at, completed_at,
                                         next_attempt_at, error_code, error_message, relayer_id)
    SELECT z.outbox_id, z.instruction_id, z.participant_id, z.sequence_id, z.idempotency_key,
           z.rail_type, z.payload, z.attempt_no, 'ZOMBIE_REQUEUE', z.claimed_at, now(), now(),
           'ZOMBIE_REQUEUE', 'no outcome from relayer ' || z.relayer_id || ' within ' || @timeout_secs::float8 || ' s; requeued for inquiry',
           z.relayer_id
    FROM zombie z
)
SELECT z.outbox_id, z.participant_id, z.sequence_id, z.attempt_no, z.relayer_id, z.claimed_at FROM zombie z;

-- name: OldestInflightAge :one
-- How long the oldest claim still in flight has been (seconds; -1: none),
-- by the database's clock, for the reaper's next wake-up.
SELECT coalesce(extract(epoch FROM now() - min(f.claimed_at)), -1)::float8 AS age_secs
FROM payment_outbox_inflight f;

-- name: NextDue :one
-- In how many seconds the next pending row falls due (-1: none waiting),
-- by the database's clock, for the relayer's wake-up timer: backoffs wake
-- it even with polling off.
SELECT coalesce(extract(epoch FROM least(
    (SELECT min(p.next_attempt_at) FROM payment_outbox_pending p WHERE NOT p.strict AND p.next_attempt_at > now()),
    (SELECT min(p.next_attempt_at) FROM payment_outbox_pending p WHERE p.strict AND p.next_attempt_at > now())
 ) - now()), -1)::float8 AS in_secs;

-- name: UpsertOrdering :exec
INSERT INTO outbox_participant_settings AS s (participant_id, ordering_mode)
VALUES (@participant_id::text, @ordering_mode::text)
ON CONFLICT (participant_id) DO UPDATE SET ordering_mode = excluded.ordering_mode, updated_at = now();

-- name: DeleteOrdering :execrows
DELETE FROM outbox_participant_settings WHERE participant_id = @participant_id::text AND participant_id <> '*';

-- name: GetOrdering :one
-- A participant's mode: its own row, else the default's.
SELECT coalesce(
    (SELECT s.ordering_mode FROM outbox_participant_settings s WHERE s.participant_id = @participant_id::text),
    (SELECT s.ordering_mode FROM outbox_participant_settings s WHERE s.participant_id = '*'),
    'THROUGHPUT')::text AS ordering_mode;

-- name: ListAttempts :many
-- An instruction's attempts, oldest first.
SELECT a.*
FROM payment_outbox_attempts a
WHERE a.instruction_id = @instruction_id::text
ORDER BY a.claimed_at, a.attempt_no, a.created_at, a.attempt_id;

-- name: AttemptStateCounts :many
-- Attempts per state over the whole archive (an operations query: it
-- reads the archive).
SELECT a.state, count(*)::bigint AS n
FROM payment_outbox_attempts a
GROUP BY a.state
ORDER BY a.state;

-- name: Depth :one
-- The hot tables at a glance (metrics, operations).
SELECT
    (SELECT count(*) FROM payment_outbox_pending)::bigint AS pending,
    (SELECT count(*) FROM payment_outbox_pending p WHERE p.next_attempt_at <= now())::bigint AS pending_due,
    coalesce((SELECT min(p.created_at) FROM payment_outbox_pending p), 'epoch')::timestamptz AS oldest_pending,
    (SELECT count(*) FROM payment_outbox_inflight)::bigint AS in_flight,
    (SELECT count(*) FROM payment_outbox_inflight f
     WHERE f.claimed_at < now() - make_interval(secs => @stuck_after_secs::float8))::bigint AS stuck,
    (SELECT count(*) FROM payment_outbox_dead_letters)::bigint AS dead_letters,
    now()::timestamptz AS now;

-- name: LockParticipants :exec
-- EnqueueBatch, step 1: creates the batch's missing sequence rows and locks
-- all of them, in participant order (two batches never wait on each other
-- in a cycle). The no-op update is the lock.
INSERT INTO participant_outbox_sequences AS s (participant_id, next_sequence_id)
SELECT x.participant_id, 1
FROM (SELECT DISTINCT unnest(@participant_ids::text[]) AS participant_id ORDER BY 1) x
ON CONFLICT (participant_id) DO UPDATE SET next_sequence_id = s.next_sequence_id;

-- name: LookupKeys :many
-- EnqueueBatch, step 2: which keys are already registered. Run after the
-- locks, so it sees every enqueue of these participants that committed
-- while we waited.
SELECT k.instruction_id, k.idempotency_key, k.outbox_id, k.sequence_id
FROM payment_outbox_keys k
WHERE (k.instruction_id, k.idempotency_key) IN (
    SELECT unnest(@instruction_ids::text[]), unnest(@idempotency_keys::text[]));

-- name: EnqueueReserved :many
-- EnqueueBatch, step 3: reserves counts[i] numbers for participants[i]
-- in one update each, numbers the new instructions (the i-th of a
-- participant gets first + offsets[i]) and inserts their keys and pending
-- rows ('epoch' in not_before: due now). Returns the rows inserted: fewer
-- than given means another transaction registered one of the keys
-- meanwhile (for a participant not locked here), and the caller must roll
-- back.
WITH reserved AS (
    UPDATE participant_outbox_sequences s
    SET next_sequence_id = s.next_sequence_id + r.n
    FROM (SELECT unnest(@participants::text[]) AS participant_id, unnest(@counts::int[]) AS n) r
    WHERE s.participant_id = r.participant_id
    RETURNING s.participant_id, s.next_sequence_id - r.n AS first
), modes AS (
    SELECT r.participant_id,
           coalesce((SELECT o.ordering_mode FROM outbox_participant_settings o WHERE o.participant_id = r.participant_id),
                    (SELECT o.ordering_mode FROM outbox_participant_settings o WHERE o.participant_id = '*'),
                    'THROUGHPUT') = 'STRICT' AS strict
    FROM reserved r
), input AS (
    SELECT unnest(@outbox_ids::uuid[]) AS outbox_id,
           unnest(@instruction_ids::text[]) AS instruction_id,
           unnest(@idempotency_keys::text[]) AS idempotency_key,
           unnest(@participant_ids::text[]) AS participant_id,
           unnest(@rail_types::text[]) AS rail_type,
           unnest(@payloads::jsonb[]) AS payload,
           unnest(@not_before::timestamptz[]) AS not_before,
           unnest(@offsets::int[]) AS off,
           unnest(@traceparents::text[]) AS traceparent
), numbered AS (
    SELECT i.outbox_id, i.instruction_id, i.idempotency_key, i.participant_id, i.rail_type, i.payload,
           NULLIF(i.traceparent, '') AS traceparent,
           coalesce(NULLIF(i.not_before, 'epoch'), now()) AS next_attempt_at, r.first + i.off AS sequence_id, m.strict
    FROM input i
    JOIN reserved r ON r.participant_id = i.participant_id
    JOIN modes m ON m.participant_id = i.participant_id
), registered AS (
    INSERT INTO payment_outbox_keys (instruction_id, idempotency_key, outbox_id, participant_id, sequence_id, rail_type)
    SELECT n.instruction_id, n.idempotency_key, n.outbox_id, n.participant_id, n.sequence_id, n.rail_type
    FROM numbered n
    ON CONFLICT (instruction_id, idempotency_key) DO NOTHING
    RETURNING outbox_id
), inserted AS (
    INSERT INTO payment_outbox_pending (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                        rail_type, payload, next_attempt_at, strict, traceparent)
    SELECT n.outbox_id, n.instruction_id, n.participant_id, n.sequence_id, n.idempotency_key,
           n.rail_type, n.payload, n.next_attempt_at, n.strict, n.traceparent
    FROM numbered n
    WHERE n.outbox_id IN (SELECT registered.outbox_id FROM registered)
    RETURNING outbox_id, sequence_id
)
SELECT i.outbox_id, i.sequence_id FROM inserted i;

-- name: ClaimStrictNext :many
-- Chained strict claim: the heads of the given strict participants,
-- whose previous head the calling relayer settled earlier in this same
-- transaction, claimed under the same rules as ClaimStrict (strict, due,
-- no strict row of the participant in flight, head locked SKIP LOCKED)
-- without its skip scan. It spares a strict participant a claim
-- transaction, and its fsync, per instruction.
WITH heads AS (
    SELECT h.outbox_id
    FROM (SELECT DISTINCT unnest(@participant_ids::text[]) AS participant_id) s
    CROSS JOIN LATERAL (
        SELECT p.outbox_id, p.strict, p.next_attempt_at
        FROM payment_outbox_pending p
        WHERE p.participant_id = s.participant_id
        ORDER BY p.sequence_id
        LIMIT 1) h
    WHERE h.strict
      AND h.next_attempt_at <= now()
      AND NOT EXISTS (SELECT 1 FROM payment_outbox_inflight f
                      WHERE f.participant_id = s.participant_id AND f.strict)
), claimed AS (
    DELETE FROM payment_outbox_pending p
    WHERE p.outbox_id = ANY(ARRAY(
        SELECT d.outbox_id
        FROM payment_outbox_pending d
        WHERE d.outbox_id = ANY(ARRAY(SELECT heads.outbox_id FROM heads))
        FOR UPDATE SKIP LOCKED))
    RETURNING p.outbox_id, p.instruction_id, p.participant_id, p.sequence_id, p.idempotency_key,
              p.rail_type, p.payload, p.attempt_count, p.created_at, p.inquire, p.strict, p.traceparent
), inflight AS (
    INSERT INTO payment_outbox_inflight (outbox_id, attempt_no, participant_id, sequence_id, strict,
                                         relayer_id, claimed_at, enqueued_at)
    SELECT c.outbox_id, c.attempt_count + 1, c.participant_id, c.sequence_id, c.strict,
           @relayer_id::text, now(), c.created_at
    FROM claimed c
), attempts AS (
    INSERT INTO payment_outbox_attempts (attempt_id, outbox_id, instruction_id, participant_id, sequence_id,
                                         idempotency_key, rail_type, payload, attempt_no, state, claimed_at, relayer_id,
                                         traceparent)
    SELECT (@attempt_ids::uuid[])[c.n], c.outbox_id, c.instruction_id, c.participant_id, c.sequence_id,
           c.idempotency_key, c.rail_type, c.payload, c.attempt_count + 1, 'DISPATCHING', now(), @relayer_id::text,
           c.traceparent
    FROM (SELECT claimed.*, row_number() OVER () AS n FROM claimed) c
)
SELECT c.outbox_id, c.instruction_id, c.participant_id, c.sequence_id, c.idempotency_key, c.rail_type,
       c.payload, (c.attempt_count + 1)::int AS attempt_no, c.created_at, c.inquire, c.strict,
       now()::timestamptz AS claimed_at, coalesce(c.traceparent, '')::text AS traceparent
FROM claimed c;

-- name: ListDeadLettersAfter :many
-- Dead letters, oldest death first (payment_outbox_dead_letters_dead_at_idx),
-- after a position (dead_at, outbox_id); every filter is optional. reason
-- matches a part of the error code, the rail's code or its message, in
-- any case.
SELECT d.*
FROM payment_outbox_dead_letters d
WHERE d.dead_at >= @after_at::timestamptz
  AND (d.dead_at, d.outbox_id) > (@after_at::timestamptz, @after_id::uuid)
  AND d.dead_at >= @died_from::timestamptz
  AND d.dead_at < @died_to::timestamptz
  AND (@rail_type::text = '' OR d.rail_type = @rail_type::text)
  AND (@participant_id::text = '' OR d.participant_id = @participant_id::text)
  AND (@reason::text = '' OR strpos(lower(d.error_code || ' ' || coalesce(d.rail_code, '') || ' ' || coalesce(d.error_message, '')),
                                    lower(@reason::text)) > 0)
ORDER BY d.dead_at, d.outbox_id
LIMIT @max_rows::int;

-- name: RequeueDeadLetters :many
-- Dead letters sent again by an operator's decision, each due at the time
-- given (a slot from a rate-limit config): they leave the dead letters
-- and go back to the pending table with their outbox id, sequence and
-- attempt count; a RETRYABLE attempt row (OPERATOR_REQUEUE, the reason)
-- records the decision. Ids no longer dead are left out.
WITH req AS (
    SELECT unnest(@outbox_ids::uuid[]) AS outbox_id, unnest(@ats::timestamptz[]) AS at
), revived AS (
    DELETE FROM payment_outbox_dead_letters d
    USING req
    WHERE d.outbox_id = req.outbox_id
    RETURNING d.*
), requeued AS (
    INSERT INTO payment_outbox_pending (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                        rail_type, payload, attempt_count, next_attempt_at, created_at,
                                        inquire, strict, traceparent)
    SELECT r.outbox_id, r.instruction_id, r.participant_id, r.sequence_id, r.idempotency_key,
           r.rail_type, r.payload, r.attempt_count, req.at, r.enqueued_at, false, r.strict, r.traceparent
    FROM revived r JOIN req ON req.outbox_id = r.outbox_id
), audit AS (
    INSERT INTO payment_outbox_attempts (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                         rail_type, payload, attempt_no, state, claimed_at, completed_at,
                                         next_attempt_at, error_code, error_message, relayer_id)
    SELECT r.outbox_id, r.instruction_id, r.participant_id, r.sequence_id, r.idempotency_key,
           r.rail_type, r.payload, r.attempt_count, 'RETRYABLE', now(), now(), req.at,
           'OPERATOR_REQUEUE', @reason::text, 'operator'
    FROM revived r JOIN req ON req.outbox_id = r.outbox_id
)
SELECT r.outbox_id, r.instruction_id, r.participant_id, r.sequence_id, r.idempotency_key,
       r.rail_type, r.payload, r.attempt_count, req.at
FROM revived r JOIN req ON req.outbox_id = r.outbox_id;

-- name: LockDeadLetters :many
-- The dead letters a requeue is about to revive, locked: the domain's
-- hook runs before they move, and sees only those still dead.
SELECT d.outbox_id, d.instruction_id, d.participant_id, d.sequence_id, d.idempotency_key,
       d.rail_type, d.payload, d.attempt_count
FROM payment_outbox_dead_letters d
WHERE d.outbox_id = ANY(@outbox_ids::uuid[])
ORDER BY d.outbox_id
FOR UPDATE;

-- name: GetDeadLetters :many
SELECT d.*
FROM payment_outbox_dead_letters d
WHERE d.outbox_id = ANY(@outbox_ids::uuid[]);

-- name: DeleteDone :one
-- Retention: the @max_rows oldest keys enqueued before @before whose
-- instruction is done (no pending row, none in flight, no dead letter),
-- with every archived attempt of theirs, in one statement. A pending row
-- covers a retry, a backoff and an inquiry still to ask; a dead letter
-- waits for its requeue. A key replayed after its deletion would be
-- enqueued again: the retention (days) is far longer than any replay (a
-- saga's step replays within its run). SKIP LOCKED leaves a key a
-- concurrent delete holds. The transaction must set
-- paydispatch.retention (the archive's trigger refuses other deletes).
WITH done AS (
    DELETE FROM payment_outbox_keys d
    WHERE d.ctid = ANY(ARRAY(
        SELECT k.ctid FROM payment_outbox_keys k
        WHERE k.created_at < @before::timestamptz
          AND NOT EXISTS (SELECT 1 FROM payment_outbox_pending p WHERE p.outbox_id = k.outbox_id)
          AND NOT EXISTS (SELECT 1 FROM payment_outbox_inflight f WHERE f.outbox_id = k.outbox_id)
          AND NOT EXISTS (SELECT 1 FROM payment_outbox_dead_letters x WHERE x.outbox_id = k.outbox_id)
        ORDER BY k.created_at
        LIMIT @max_rows::int
        FOR UPDATE SKIP LOCKED))
    RETURNING d.outbox_id
), attempts AS (
    DELETE FROM payment_outbox_attempts a
    WHERE a.outbox_id = ANY(ARRAY(SELECT done.outbox_id FROM done))
)
SELECT count(*)::bigint AS deleted FROM done;

-- name: ClaimLaneFollowers :many
-- A lane's batch: behind each strict head just claimed by this
-- transaction (given with its sequence and rail type), the participant's
-- next pending rows in sequence order, up to @per_lane each and @total in
-- all, claimed as followers. Each lane's run stops at its first row that
-- is not strict, not due, or of another rail type, and at its first row
-- another transaction holds (SKIP LOCKED): what is claimed is always an
-- unbroken run right behind the head, so order within the lane holds. A
-- row marked for inquiry may follow; the relayer inquires before sending.
WITH heads AS (
    SELECT unnest(@participant_ids::text[]) AS participant_id,
           unnest(@head_sequences::bigint[]) AS head_seq,
           unnest(@rail_types::text[]) AS rail_type
), cand AS (
    SELECT c.outbox_id, h.participant_id, c.n,
           (c.strict AND c.next_attempt_at <= now() AND c.rail_type = h.rail_type) AS ok
    FROM heads h
    CROSS JOIN LATERAL (
        SELECT p.outbox_id, p.strict, p.next_attempt_at, p.rail_type,
               row_number() OVER (ORDER BY p.sequence_id) AS n
        FROM payment_outbox_pending p
        WHERE p.participant_id = h.participant_id AND p.sequence_id > h.head_seq
        ORDER BY p.sequence_id
        LIMIT @per_lane::int) c
), run AS (
    SELECT c.outbox_id, c.participant_id, c.n
    FROM cand c
    WHERE NOT EXISTS (SELECT 1 FROM cand b WHERE b.participant_id = c.participant_id AND b.n <= c.n AND NOT b.ok)
), locked AS (
    SELECT d.outbox_id
    FROM payment_outbox_pending d
    WHERE d.outbox_id = ANY(ARRAY(SELECT run.outbox_id FROM run))
    FOR UPDATE SKIP LOCKED
), unbroken AS (
    SELECT u.outbox_id
    FROM run u
    WHERE NOT EXISTS (SELECT 1 FROM run b
                      WHERE b.participant_id = u.participant_id AND b.n <= u.n
                        AND b.outbox_id NOT IN (SELECT locked.outbox_id FROM locked))
    ORDER BY u.participant_id, u.n
    LIMIT @total::int
), claimed AS (
    DELETE FROM payment_outbox_pending p
    WHERE p.outbox_id = ANY(ARRAY(SELECT unbroken.outbox_id FROM unbroken))
    RETURNING p.outbox_id, p.instruction_id, p.participant_id, p.sequence_id, p.idempotency_key,
              p.rail_type, p.payload, p.attempt_count, p.created_at, p.inquire, p.strict, p.traceparent
), inflight AS (
    INSERT INTO payment_outbox_inflight (outbox_id, attempt_no, participant_id, sequence_id, strict, follower,
                                         relayer_id, claimed_at, enqueued_at)
    SELECT c.outbox_id, c.attempt_count + 1, c.participant_id, c.sequence_id, c.strict, true,
           @relayer_id::text, now(), c.created_at
    FROM claimed c
), attempts AS (
    INSERT INTO payment_outbox_attempts (attempt_id, outbox_id, instruction_id, participant_id, sequence_id,
                                         idempotency_key, rail_type, payload, attempt_no, state, claimed_at, relayer_id,
                                         traceparent)
    SELECT (@attempt_ids::uuid[])[c.n], c.outbox_id, c.instruction_id, c.participant_id, c.sequence_id,
           c.idempotency_key, c.rail_type, c.payload, c.attempt_count + 1, 'DISPATCHING', now(), @relayer_id::text,
           c.traceparent
    FROM (SELECT claimed.*, row_number() OVER () AS n FROM claimed) c
)
SELECT c.outbox_id, c.instruction_id, c.participant_id, c.sequence_id, c.idempotency_key, c.rail_type,
       c.payload, (c.attempt_count + 1)::int AS attempt_no, c.created_at, c.inquire, c.strict,
       now()::timestamptz AS claimed_at, coalesce(c.traceparent, '')::text AS traceparent
FROM claimed c
ORDER BY c.participant_id, c.sequence_id;
