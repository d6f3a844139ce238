-- The outbox's functions: their current source, applied after the
-- migrations and again whenever this file changes (see
-- pacing/migrations/functions.sql for the rule).

-- bump_participant_outbox_seq returns the participant's next sequence
-- number, creating its row on first use. Gap-free: the row stays locked
-- until the calling transaction ends, so a rollback takes the number back
-- and the next caller (who waited on the lock) gets it. A SEQUENCE would
-- leave a gap on every rollback. The price: one participant's enqueues
-- commit one after another (they queue on the row lock), which also means
-- its sequence numbers become visible in order. PL/pgSQL, so that the
-- upsert's plan is kept for the session.
CREATE OR REPLACE FUNCTION bump_participant_outbox_seq(p_participant_id text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
BEGIN
    INSERT INTO participant_outbox_sequences AS s (participant_id, next_sequence_id)
    VALUES (p_participant_id, 2)
    ON CONFLICT (participant_id) DO UPDATE SET next_sequence_id = s.next_sequence_id + 1
    RETURNING s.next_sequence_id - 1 INTO v_seq;
    RETURN v_seq;
END;
$$;

-- outbox_enqueue is Enqueue's one round trip: a key already registered
-- comes back as it is (created = false) and takes no number; otherwise
-- the participant's next number, the key and the pending row. A key
-- registered by a transaction that committed while this one waited on it
-- loses the race: the number goes back (the participant's row is still
-- locked by this transaction, so nobody took one after it) and the
-- winner's id and number are returned. The ordering mode is the
-- participant's setting, else the default's ('*'). p_traceparent is the
-- caller's trace context, kept for the relayer (NULL: none; a caller of
-- the signature before it, seven arguments, gets the default). Generic
-- plans for its fixed-shape statements, whatever the session's setting
-- (planning them each time cost as much as this work).
DROP FUNCTION IF EXISTS outbox_enqueue(text, text, text, uuid, text, jsonb, timestamptz);
CREATE OR REPLACE FUNCTION outbox_enqueue(p_instruction_id text, p_idempotency_key text, p_participant_id text,
                               p_outbox_id uuid, p_rail_type text, p_payload jsonb, p_not_before timestamptz,
                               p_traceparent text DEFAULT NULL)
RETURNS TABLE (outbox_id uuid, sequence_id bigint, created boolean)
LANGUAGE plpgsql
SET plan_cache_mode = auto
AS $$
DECLARE
    v_id     uuid;
    v_seq    bigint;
    v_strict boolean;
BEGIN
    SELECT k.outbox_id, k.sequence_id INTO v_id, v_seq
    FROM payment_outbox_keys k
    WHERE k.instruction_id = p_instruction_id AND k.idempotency_key = p_idempotency_key;
    IF FOUND THEN
        RETURN QUERY SELECT v_id, v_seq, false;
        RETURN;
    END IF;
    v_seq := bump_participant_outbox_seq(p_participant_id);
    INSERT INTO payment_outbox_keys AS k (instruction_id, idempotency_key, outbox_id, participant_id, sequence_id, rail_type)
    VALUES (p_instruction_id, p_idempotency_key, p_outbox_id, p_participant_id, v_seq, p_rail_type)
    ON CONFLICT ON CONSTRAINT payment_outbox_keys_pkey DO NOTHING;
    IF NOT FOUND THEN
        UPDATE participant_outbox_sequences s SET next_sequence_id = s.next_sequence_id - 1
        WHERE s.participant_id = p_participant_id;
        SELECT k.outbox_id, k.sequence_id INTO STRICT v_id, v_seq
        FROM payment_outbox_keys k
        WHERE k.instruction_id = p_instruction_id AND k.idempotency_key = p_idempotency_key;
        RETURN QUERY SELECT v_id, v_seq, false;
        RETURN;
    END IF;
    SELECT coalesce(
        (SELECT o.ordering_mode FROM outbox_participant_settings o WHERE o.participant_id = p_participant_id),
        (SELECT o.ordering_mode FROM outbox_participant_settings o WHERE o.participant_id = '*'),
        'THROUGHPUT') = 'STRICT' INTO v_strict;
    INSERT INTO payment_outbox_pending (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                        rail_type, payload, next_attempt_at, strict, traceparent)
    VALUES (p_outbox_id, p_instruction_id, p_participant_id, v_seq, p_idempotency_key,
            p_rail_type, p_payload, coalesce(p_not_before, now()), v_strict, p_traceparent);
    RETURN QUERY SELECT p_outbox_id, v_seq, true;
END;
$$;

-- outbox_enqueue_stream enqueues a stream's messages: strict rows whose
-- idempotency key is their outbox id, numbered from outbox_stream_seq
-- rather than from the participant's locked row, so that producers never
-- queue on each other (a stream's participants are a few lanes every
-- producer shares). The numbers are unique, not gap-free, and a lower one
-- may commit after a higher one: order holds only between messages whose
-- producers were already ordered, each enqueued by a transaction that
-- began after the one before committed (package payment: one payment's
-- status changes, serialized by its row). Within a lane that is enough:
-- the strict claim sends a lane's lowest pending number, one at a time.
-- An id enqueued before is skipped.
CREATE OR REPLACE FUNCTION outbox_enqueue_stream(p_outbox_ids uuid[], p_participants text[], p_rail_type text,
                                                 p_payloads jsonb[]) RETURNS void
LANGUAGE sql AS $$
    WITH input AS (
        SELECT u.outbox_id, u.participant_id, u.payload, nextval('outbox_stream_seq') AS sequence_id
        FROM unnest(p_outbox_ids, p_participants, p_payloads) WITH ORDINALITY AS u(outbox_id, participant_id, payload, n)
        ORDER BY u.n
    ), registered AS (
        INSERT INTO payment_outbox_keys (instruction_id, idempotency_key, outbox_id, participant_id, sequence_id, rail_type)
        SELECT i.outbox_id::text, i.outbox_id::text, i.outbox_id, i.participant_id, i.sequence_id, p_rail_type
        FROM input i
        ON CONFLICT (instruction_id, idempotency_key) DO NOTHING
        RETURNING outbox_id
    )
    INSERT INTO payment_outbox_pending (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
                                        rail_type, payload, next_attempt_at, strict)
    SELECT i.outbox_id, i.outbox_id::text, i.participant_id, i.sequence_id, i.outbox_id::text,
           p_rail_type, i.payload, now(), true
    FROM input i
    WHERE i.outbox_id IN (SELECT registered.outbox_id FROM registered)
$$;

-- payment_outbox_pending_notify wakes relayers at commit (the deferred
-- constraint trigger of 00022): once per transaction, and only by the
-- transaction that gets the try-lock, because NOTIFY serialises commits on
-- a cluster-wide lock (see 00022 for the figures).
CREATE OR REPLACE FUNCTION payment_outbox_pending_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Decided once per transaction, at its first row.
    IF current_setting('paydispatch.outbox_notified', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('paydispatch.outbox_notified', 'on', true);
    IF pg_try_advisory_xact_lock(8031453476610911598) THEN -- 'outbox-n' as a bigint
        PERFORM pg_notify('outbox_pending', 'new_work');
    END IF;
    RETURN NULL;
END;
$$;

-- payment_outbox_attempts_immutable keeps the attempts' archive
-- append-only: no UPDATE, no TRUNCATE, and a DELETE only from the
-- retention's transaction (paydispatch.retention = 'on', set by
-- outbox.DeleteDone).
CREATE OR REPLACE FUNCTION payment_outbox_attempts_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('paydispatch.retention', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'payment_outbox_attempts is append-only'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
