-- A payment's events name its rail and its execution date, and a
-- SCHEDULED payment moved to another slot without changing status (its
-- tenant's ROLL past a missed cut-off) publishes payment.rescheduled;
-- HELD is a status like the others. payment_event (functions.sql) takes
-- the rail, the date and the type; the triggers' functions, replaced
-- here, are their current source (00052's before).

-- +goose Up
-- The payments' statement triggers (00042) call these: every change of a
-- payment's status publishes its event, in the statement's own
-- transaction, so the event goes out if and only if the change commits,
-- whichever statement made it; so does a SCHEDULED payment's move to
-- another slot (payment.rescheduled: a roll past a missed cut-off). With
-- transition tables a chunk of thousands publishes in one call. With no
-- webhook endpoint and the stream off, a statement pays two probes of
-- empty tables. A payment Phase A rolled past a cut-off is stored
-- SCHEDULED with a reason starting ROLLED: its payment.scheduled is
-- followed by its payment.rescheduled.
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

-- +goose Down
-- The triggers' functions as 00052 made them (they call payment_event as
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
    PERFORM payment_events_out(array_agg(n.payment_id), array_agg(n.tenant_id), array_agg(n.status),
                               array_agg(payment_event(n.tenant_id, n.external_id, n.status, 'RECEIVED', n.status_reason,
                                                       n.amount, n.currency, n.debtor_account, n.requested_execution_time,
                                                       n.scheduled_execution_time, n.updated_at)))
    FROM changed_payments n
    WHERE v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints);
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
                                                       n.scheduled_execution_time, n.updated_at)))
    FROM changed_payments n
    JOIN previous_payments o ON o.payment_id = n.payment_id
    WHERE n.status IS DISTINCT FROM o.status
      AND (v_stream OR n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

