-- An event's createdAt is when its payment's status changed, not when the
-- transaction that changed it began (updated_at): payment.accepted's is
-- the execution instant the limiter counted (accepted_at), every other
-- event's the moment its statement ran, and never before accepted_at, so
-- that along a payment's chain it never goes backwards.
-- payment_event_changed_at (functions.sql) is the rule; the triggers'
-- functions, replaced here to call it, are their current source (00065's
-- before).

-- +goose Up
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
-- +goose StatementEnd

-- +goose Down
-- The triggers' functions as 00065 made them.
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
