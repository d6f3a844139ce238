-- The payment domain's functions: their current source, applied after
-- the migrations and again whenever this file changes (see
-- pacing/migrations/functions.sql for the rule).

-- payment_event_time is an event's timestamp: RFC 3339 in UTC, to the
-- microsecond, whatever the session's time zone.
CREATE OR REPLACE FUNCTION payment_event_time(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- payment_event is the event a payment's status change publishes (version
-- 1 of docs/schemas/payment-event.v1.json): a new event id each call. Its
-- type is payment. and the new status, or p_type when given (a payment
-- rescheduled without changing status: payment.rescheduled).
DROP FUNCTION IF EXISTS payment_event(text, text, text, text, text, numeric, text, text, timestamptz, timestamptz, timestamptz);
DROP FUNCTION IF EXISTS payment_event(text, text, text, text, text, numeric, text, text, timestamptz, timestamptz, timestamptz,
                                      text, date, text);
CREATE OR REPLACE FUNCTION payment_event(p_tenant_id text, p_external_id text, p_status text, p_previous text, p_reason text,
                              p_amount numeric, p_currency text, p_debtor_account text, p_requested timestamptz,
                              p_scheduled timestamptz, p_changed_at timestamptz, p_rail text, p_execution_date date,
                              p_type text, p_priority text) RETURNS jsonb
LANGUAGE sql VOLATILE AS $$
    SELECT jsonb_build_object(
        'id', gen_random_uuid(),
        'type', coalesce(p_type, 'payment.' || lower(p_status)),
        'version', 1,
        'createdAt', payment_event_time(p_changed_at),
        'tenantId', p_tenant_id,
        'data', jsonb_strip_nulls(jsonb_build_object(
            'paymentId', p_external_id,
            'status', p_status,
            'previousStatus', p_previous,
            'statusReason', p_reason,
            'amount', round(p_amount, greatest(2, scale(trim_scale(p_amount))))::text,
            'currency', p_currency,
            'debtorAccount', p_debtor_account,
            'requestedExecutionTime', payment_event_time(p_requested),
            'scheduledExecutionTime', payment_event_time(p_scheduled),
            'rail', p_rail,
            'executionDate', p_execution_date::text,
            'priority', p_priority)))
$$;

-- payment_debit_references are the ledger references of every debit a
-- payment's execution (process p_process_id) made: its first, then one per
-- operator's redrive of its returned instruction (payment.Redrive).
CREATE OR REPLACE FUNCTION payment_debit_references(p_process_id uuid, p_redrives integer) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_prepend(p_process_id::text || ':CreateTransaction',
                         ARRAY(SELECT p_process_id::text || ':Redrive:' || g FROM generate_series(1, p_redrives) g))
$$;

-- payment_event_lane is the event stream's participant of a payment: one
-- of p_lanes, the same for every event of the payment, so that its events
-- go out in order (payment_event_stream).
CREATE OR REPLACE FUNCTION payment_event_lane(p_payment_id text, p_lanes integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 'payment-events:' || (((hashtext(p_payment_id)::bigint % p_lanes) + p_lanes) % p_lanes)::text
$$;

-- payment_events_out publishes a statement's status changes (their
-- payments' keys, tenants, new statuses and events): to the tenants'
-- webhook endpoints, and to the event stream when it is on. The event is
-- the same for both (one id).
CREATE OR REPLACE FUNCTION payment_events_out(p_keys text[], p_tenants text[], p_statuses text[], p_events jsonb[])
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_stream payment_event_stream%ROWTYPE;
BEGIN
    IF p_keys IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO v_stream FROM payment_event_stream;
    IF FOUND THEN
        PERFORM outbox_enqueue_stream(
            ARRAY(SELECT (e->>'id')::uuid FROM unnest(p_events) e),
            ARRAY(SELECT payment_event_lane(k, v_stream.lanes) FROM unnest(p_keys) k),
            v_stream.rail_type, p_events);
    END IF;
    IF EXISTS (SELECT 1 FROM webhook_endpoints) THEN
        PERFORM webhook_publish(p_tenants, p_keys, ARRAY(SELECT e->>'type' FROM unnest(p_events) e), p_events);
    END IF;
END;
$$;

-- payment_event_changed_at is the createdAt of the event a payment's move
-- to p_status (of type p_type: NULL for a status's own event) publishes:
-- when the status changed. payment.accepted's is the execution instant
-- the limiter counted (accepted_at), so that counted per second from
-- outside they never show more than the limit; any other event's is the
-- moment its statement runs (clock_timestamp, not the transaction's
-- start, which a long transaction would date back), and never before
-- accepted_at: an event that follows acceptance never predates it.
CREATE OR REPLACE FUNCTION payment_event_changed_at(p_status text, p_type text, p_accepted_at timestamptz) RETURNS timestamptz
LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN p_status = 'ACCEPTED' AND p_type IS NULL THEN coalesce(p_accepted_at, clock_timestamp())
                ELSE greatest(clock_timestamp(), p_accepted_at) END
$$;

-- payment_fingerprint_void reports whether the payment owning a duplicate
-- fingerprint will never move money (CANCELLED, REJECTED): a payment sent
-- again after it is no duplicate of it, and takes the fingerprint over
-- (ClaimFingerprints).
CREATE OR REPLACE FUNCTION payment_fingerprint_void(p_payment_id text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM payments WHERE payment_id = p_payment_id AND status IN ('CANCELLED', 'REJECTED'))
$$;

-- The payments' statement triggers (00042): every payment inserted or
-- whose status changes publishes its event (payment_events_out), when an
-- event stream or a webhook endpoint wants it. An insert of a SCHEDULED
-- payment rolled past a cut-off also publishes payment.rescheduled; an
-- update that keeps a SCHEDULED payment's status but moves its execution
-- date publishes payment.rescheduled instead of a status.
CREATE OR REPLACE FUNCTION payment_published_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_stream boolean := EXISTS (SELECT 1 FROM payment_event_stream);
BEGIN
    IF NOT v_stream AND NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN
        RETURN NULL;
    END IF;
    PERFORM payment_events_out(array_agg(e.payment_id ORDER BY e.payment_id, e.ord), array_agg(e.tenant_id ORDER BY e.payment_id, e.ord),
                               array_agg(e.status ORDER BY e.payment_id, e.ord), array_agg(e.event ORDER BY e.payment_id, e.ord))
    FROM (SELECT n.payment_id, n.tenant_id, n.status, 1 AS ord,
                 payment_event(n.tenant_id, n.external_id, n.status, 'RECEIVED', n.status_reason, n.amount, n.currency,
                               n.debtor_account, n.requested_execution_time, n.scheduled_execution_time,
                               payment_event_changed_at(n.status, NULL, n.accepted_at),
                               n.rail, n.execution_date, NULL, n.priority) AS event
          FROM changed_payments n
          WHERE v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints)
          UNION ALL
          SELECT n.payment_id, n.tenant_id, n.status, 2,
                 payment_event(n.tenant_id, n.external_id, n.status, n.status, n.status_reason, n.amount, n.currency,
                               n.debtor_account, n.requested_execution_time, n.scheduled_execution_time,
                               payment_event_changed_at(n.status, 'payment.rescheduled', n.accepted_at),
                               n.rail, n.execution_date, 'payment.rescheduled', n.priority)
          FROM changed_payments n
          WHERE n.status = 'SCHEDULED' AND starts_with(n.status_reason, 'ROLLED')
            AND (v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints))) e;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION payment_published_on_update() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_stream boolean := EXISTS (SELECT 1 FROM payment_event_stream);
BEGIN
    IF NOT v_stream AND NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN
        RETURN NULL;
    END IF;
    PERFORM payment_events_out(array_agg(n.payment_id), array_agg(n.tenant_id), array_agg(n.status),
                               array_agg(payment_event(n.tenant_id, n.external_id, n.status, o.status, n.status_reason,
                                                       n.amount, n.currency, n.debtor_account, n.requested_execution_time,
                                                       n.scheduled_execution_time,
                                                       payment_event_changed_at(n.status, CASE WHEN n.status = o.status THEN 'payment.rescheduled' END,
                                                                                n.accepted_at),
                                                       n.rail, n.execution_date,
                                                       CASE WHEN n.status = o.status THEN 'payment.rescheduled' END, n.priority)))
    FROM changed_payments n
    JOIN previous_payments o ON o.payment_id = n.payment_id
    WHERE (n.status IS DISTINCT FROM o.status
           OR (n.status = 'SCHEDULED' AND o.status = 'SCHEDULED' AND n.execution_date IS DISTINCT FROM o.execution_date))
      AND (v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints));
    RETURN NULL;
END;
$$;
