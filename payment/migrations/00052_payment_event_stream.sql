-- The payment event stream's switch: with its row, every status change
-- also enqueues its event in the outbox (outbox_enqueue_stream), for a
-- relayer to publish to a Kafka topic (package kafka). Without it, a
-- status change writes nothing more. The triggers' functions are
-- replaced here (their current source); payment_events_out and
-- payment_event_lane, which they call, are in functions.sql.

-- +goose Up
CREATE TABLE payment_event_stream (
    only_row   boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    -- rail_type is the outbox rail type the events go out under: the
    -- relayer's sender for it publishes them.
    rail_type  text        NOT NULL,
    -- lanes is how many outbox participants ('payment-events:<n>') the
    -- events are spread over, by payment: each is sent in order, one at a
    -- time. Changed only with the stream drained.
    lanes      integer     NOT NULL CHECK (lanes BETWEEN 1 AND 1024),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The payments' triggers (00042) publish to the stream too. Every change
-- of a payment's status publishes its event, in the statement's own
-- transaction, so the event goes out if and only if the change commits,
-- whichever statement made it. Statement triggers with transition tables: a chunk of thousands of
-- payments publishes in one call. With no webhook endpoint and the stream
-- off, a statement pays two probes of empty tables.
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

-- +goose Down
-- The triggers' functions as 00042 made them.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION payment_published_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN
        RETURN NULL;
    END IF;
    PERFORM webhook_publish(array_agg(n.tenant_id), array_agg(n.payment_id), array_agg('payment.' || lower(n.status)),
                            array_agg(payment_event(n.tenant_id, n.external_id, n.status, 'RECEIVED', n.status_reason, n.amount,
                                                    n.currency, n.debtor_account, n.requested_execution_time,
                                                    n.scheduled_execution_time, n.updated_at)))
    FROM changed_payments n
    WHERE n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION payment_published_on_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN
        RETURN NULL;
    END IF;
    PERFORM webhook_publish(array_agg(n.tenant_id), array_agg(n.payment_id), array_agg('payment.' || lower(n.status)),
                            array_agg(payment_event(n.tenant_id, n.external_id, n.status, o.status, n.status_reason, n.amount,
                                                    n.currency, n.debtor_account, n.requested_execution_time,
                                                    n.scheduled_execution_time, n.updated_at)))
    FROM changed_payments n
    JOIN previous_payments o ON o.payment_id = n.payment_id
    WHERE n.status IS DISTINCT FROM o.status
      AND n.tenant_id IN (SELECT tenant_id FROM webhook_endpoints);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TABLE payment_event_stream;
