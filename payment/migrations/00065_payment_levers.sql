-- Levers on the payments already waiting (docs/design.md, "Levers").
--
-- Priorities: a payment's priority (HIGH, NORMAL, LOW) orders it among
-- those waiting under its configs; an intake row keeps its payments'
-- (NULL in a row staged before: NORMAL). Phase A asks for the rails its
-- HIGH payments (or its NORMAL ones, over LOW ones waiting:
-- payments_low_waiting_idx) went on to be put in order again
-- (payment_reorder: one row per rail, coalescing a file's chunks).
--
-- Pauses: an operator's lever on a tenant's, a file's or a rail's waiting
-- payments. While a scope is paused (a payment_pause row) its waiting
-- payments stay SCHEDULED, marked paused_by it, in their order, their
-- queue items PARKED and their slots given back to the others; those
-- Phase A stores meanwhile are marked too and wait unqueued; an execution
-- not yet begun parks its item. Resuming paces them again from then, at
-- their configs' rates. A payment whose execution held its item at the
-- resume is marked RESUMED until that execution has settled
-- (payments_paused_idx finds both).
--
-- Events: a payment's events carry its priority, and payment.rescheduled
-- is a move to another business day (a slot moved within its day by a
-- lever publishes nothing). The triggers' functions, replaced here, are
-- their current source (00064's before).

-- +goose Up
ALTER TABLE payments ADD COLUMN priority text NOT NULL DEFAULT 'NORMAL'
    CHECK (priority IN ('HIGH', 'NORMAL', 'LOW'));
ALTER TABLE payment_intake ADD COLUMN priorities text[];
CREATE INDEX payments_low_waiting_idx ON payments (rail) WHERE status = 'SCHEDULED' AND priority = 'LOW';
CREATE TABLE payment_reorder (
    rail          text        PRIMARY KEY,
    first_asked   timestamptz NOT NULL DEFAULT now(),
    last_asked    timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE payment_pause (
    scope      text        NOT NULL CHECK (scope IN ('TENANT', 'BATCH', 'RAIL')),
    scope_id   text        NOT NULL,
    paused_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, scope_id)
);
ALTER TABLE payments ADD COLUMN paused_by text;
CREATE INDEX payments_paused_idx ON payments (paused_by, scheduled_execution_time) WHERE paused_by IS NOT NULL;

-- +goose StatementBegin
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
                               n.debtor_account, n.requested_execution_time, n.scheduled_execution_time, n.updated_at,
                               n.rail, n.execution_date, NULL, n.priority) AS event
          FROM changed_payments n
          WHERE v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints)
          UNION ALL
          SELECT n.payment_id, n.tenant_id, n.status, 2,
                 payment_event(n.tenant_id, n.external_id, n.status, n.status, n.status_reason, n.amount, n.currency,
                               n.debtor_account, n.requested_execution_time, n.scheduled_execution_time, n.updated_at,
                               n.rail, n.execution_date, 'payment.rescheduled', n.priority)
          FROM changed_payments n
          WHERE n.status = 'SCHEDULED' AND starts_with(n.status_reason, 'ROLLED')
            AND (v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints))) e;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
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
                                                       n.scheduled_execution_time, n.updated_at, n.rail, n.execution_date,
                                                       CASE WHEN n.status = o.status THEN 'payment.rescheduled' END, n.priority)))
    FROM changed_payments n
    JOIN previous_payments o ON o.payment_id = n.payment_id
    WHERE (n.status IS DISTINCT FROM o.status
           OR (n.status = 'SCHEDULED' AND o.status = 'SCHEDULED' AND n.execution_date IS DISTINCT FROM o.execution_date))
      AND (v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd


-- +goose Down
-- The triggers' functions as 00064 made them (they call payment_event as
-- it was then: restore functions.sql from that version with them).
-- +goose StatementBegin
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
                               n.debtor_account, n.requested_execution_time, n.scheduled_execution_time, n.updated_at,
                               n.rail, n.execution_date, NULL) AS event
          FROM changed_payments n
          WHERE v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints)
          UNION ALL
          SELECT n.payment_id, n.tenant_id, n.status, 2,
                 payment_event(n.tenant_id, n.external_id, n.status, n.status, n.status_reason, n.amount, n.currency,
                               n.debtor_account, n.requested_execution_time, n.scheduled_execution_time, n.updated_at,
                               n.rail, n.execution_date, 'payment.rescheduled')
          FROM changed_payments n
          WHERE n.status = 'SCHEDULED' AND starts_with(n.status_reason, 'ROLLED')
            AND (v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints))) e;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
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
                                                       n.scheduled_execution_time, n.updated_at, n.rail, n.execution_date,
                                                       CASE WHEN n.status = o.status THEN 'payment.rescheduled' END)))
    FROM changed_payments n
    JOIN previous_payments o ON o.payment_id = n.payment_id
    WHERE (n.status IS DISTINCT FROM o.status
           OR (n.status = 'SCHEDULED' AND n.scheduled_execution_time IS DISTINCT FROM o.scheduled_execution_time))
      AND (v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

DROP INDEX payments_paused_idx;
ALTER TABLE payments DROP COLUMN paused_by;
DROP TABLE payment_pause;
DROP TABLE payment_reorder;
DROP INDEX payments_low_waiting_idx;
ALTER TABLE payment_intake DROP COLUMN priorities;
ALTER TABLE payments DROP COLUMN priority;
