-- A payment's id is its tenant's: the same id in two tenants names two
-- payments. payment_id stays the payment's key everywhere (queue item,
-- process, booking, rail instruction); for a payment taken in from now on
-- it is derived from the tenant and the tenant's id (payment.Key), for
-- one taken in before it is that id itself. external_id is the id the
-- tenant chose, unique within the tenant.
--
-- A payment is stored RECEIVED when it is taken in, before Phase A, so
-- that the workflow engine is given its key and never its request (names
-- and IBANs stay in PostgreSQL). payment_intake lists the Phase A
-- workflows yet to take on the payments given to them (a payment's, or a
-- file chunk's): one left there for a while is started again. It is a
-- table of its own, a row a workflow, so that no index on payments
-- depends on the status (that would make every status change rewrite the
-- payment's index entries), and a file costs a row per chunk. context is
-- Phase A's output, which the execution reads.
--
-- Phase A and the execution rewrite a payment's row four or five times,
-- none of them an indexed column: room on its page keeps those updates
-- HOT (no index entry written).

-- +goose Up
ALTER TABLE payments ADD COLUMN external_id text;
UPDATE payments SET external_id = payment_id;
ALTER TABLE payments ALTER COLUMN external_id SET NOT NULL;
-- external_id first: it also finds an id in every tenant, for an operator.
CREATE UNIQUE INDEX payments_external_key ON payments (external_id, tenant_id);

ALTER TABLE payments ADD COLUMN context jsonb;

ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED'));

ALTER TABLE payments SET (fillfactor = 80);

CREATE TABLE payment_intake (
    init_workflow_id  text        PRIMARY KEY,
    payment_ids       text[]      NOT NULL,
    received_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX payment_intake_received_idx ON payment_intake (received_at);

-- +goose Down
DROP TABLE payment_intake;
ALTER TABLE payments RESET (fillfactor);
DELETE FROM payments WHERE status = 'RECEIVED';
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED'));
ALTER TABLE payments DROP COLUMN context;
DROP INDEX payments_external_key;
ALTER TABLE payments DROP COLUMN external_id;
