-- Webhooks: the endpoints tenants register, and one delivery row per
-- event and endpoint, written in the transaction that produced the event
-- (webhook_publish, in functions.sql) and sent by a webhook relayer.
-- Package webhook owns these tables; doc.go there explains the design.
--
-- No foreign keys, as for the other hot tables: a delivery names its
-- endpoint, and deleting an endpoint settles its open deliveries in the
-- same statement's transaction.

-- +goose Up
CREATE TABLE webhook_endpoints (
    endpoint_id          uuid        PRIMARY KEY,
    tenant_id            text        NOT NULL CHECK (tenant_id <> ''),
    url                  text        NOT NULL CHECK (url <> ''),
    -- The event types sent there; empty: every type.
    event_types          text[]      NOT NULL DEFAULT '{}',
    description          text        NOT NULL DEFAULT '',
    secret               text        NOT NULL CHECK (secret <> ''),
    -- After a rotation the old secret also signs until it expires, so a
    -- receiver can switch without losing a delivery.
    previous_secret      text,
    previous_expires_at  timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- A tenant's endpoints, for the list and for publishing (each event
-- looks its tenant's endpoints up here).
CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id, created_at, endpoint_id);

CREATE TABLE webhook_deliveries (
    -- Insertion order: a subject's events are published by transactions
    -- that follow each other, so its deliveries are numbered in the order
    -- the events happened.
    delivery_id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id      uuid        NOT NULL,
    tenant_id        text        NOT NULL,
    -- What the event is about (a payment). An endpoint receives one
    -- subject's events in order: a delivery waits while an earlier one of
    -- its subject to the same endpoint is open.
    subject          text        NOT NULL,
    event_id         uuid        NOT NULL,
    event_type       text        NOT NULL,
    payload          jsonb       NOT NULL,
    -- PENDING: waiting, due at next_attempt_at. SENDING: claimed by a
    -- relayer; next_attempt_at is when the claim lapses and the delivery
    -- is due again (its relayer died). DELIVERED: a 2xx came back. DEAD:
    -- out of attempts (or its endpoint was deleted); a redrive makes it
    -- PENDING again.
    state            text        NOT NULL DEFAULT 'PENDING'
        CHECK (state IN ('PENDING', 'SENDING', 'DELIVERED', 'DEAD')),
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    -- The last attempt's HTTP status (none: no answer) and error.
    last_status      integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    settled_at       timestamptz
) WITH (fillfactor = 70);

-- The claim: an endpoint's open deliveries, by when they are due.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at)
    WHERE state IN ('PENDING', 'SENDING');

-- The order check: an earlier open delivery of the same subject.
CREATE INDEX webhook_deliveries_subject_idx ON webhook_deliveries (endpoint_id, subject, delivery_id)
    WHERE state IN ('PENDING', 'SENDING');

-- How many an endpoint has in flight: the claim keeps it under its cap.
CREATE INDEX webhook_deliveries_sending_idx ON webhook_deliveries (endpoint_id)
    WHERE state = 'SENDING';

-- An endpoint's deliveries, newest first (the list), and its dead letters
-- (the list, the depth, a redrive).
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, delivery_id);
CREATE INDEX webhook_deliveries_dead_idx ON webhook_deliveries (endpoint_id, delivery_id)
    WHERE state = 'DEAD';

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
