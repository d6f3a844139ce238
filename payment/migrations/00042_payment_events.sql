-- Every change of a payment's status publishes an event to the tenant's
-- webhook endpoints (package webhook), in the statement's own
-- transaction: the event is delivered if and only if the change commits,
-- whichever statement made it. Statement triggers with transition
-- tables, so a chunk of thousands of payments publishes in one call; a
-- database with no endpoint pays one probe of an empty table a
-- statement.
--
-- The event is payment_event's (functions.sql): the payment event of
-- docs/webhooks.md, version 1 (docs/schemas/payment-event.v1.json). Its
-- subject is the payment's key: one payment's events reach an endpoint
-- in order.

-- +goose Up
-- A payment stored: from RECEIVED (its intake row) to what Phase A or a
-- cancel made it.
-- +goose StatementBegin
CREATE FUNCTION payment_published_on_insert() RETURNS trigger
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
CREATE FUNCTION payment_published_on_update() RETURNS trigger
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

CREATE TRIGGER payments_published_on_insert AFTER INSERT ON payments
    REFERENCING NEW TABLE AS changed_payments
    FOR EACH STATEMENT EXECUTE FUNCTION payment_published_on_insert();

CREATE TRIGGER payments_published_on_update AFTER UPDATE ON payments
    REFERENCING OLD TABLE AS previous_payments NEW TABLE AS changed_payments
    FOR EACH STATEMENT EXECUTE FUNCTION payment_published_on_update();

-- +goose Down
DROP TRIGGER payments_published_on_update ON payments;
DROP TRIGGER payments_published_on_insert ON payments;
DROP FUNCTION payment_published_on_update();
DROP FUNCTION payment_published_on_insert();
