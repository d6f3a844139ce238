-- Tenant capacity and fairness (seed 001): a cap on each tenant's items in
-- flight (CLAIMED or DISPATCHED), enforced at claim time, and a per-tenant
-- index the fair claim walks.

-- +goose Up
CREATE TABLE tenant_capacity (
    item_type      text        NOT NULL,
    -- '*' is the default for tenants without a row of their own.
    tenant_id      text        NOT NULL,
    max_in_flight  integer     NOT NULL CHECK (max_in_flight BETWEEN 1 AND 1000000),
    tier           text,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_type, tenant_id)
);

-- The fair claim: one descent per tenant with READY items, then each
-- tenant's oldest first.
CREATE INDEX exec_queue_tenant_ready_idx
    ON exec_queue (item_type, tenant_id, scheduled_exec_time)
    WHERE queue_status = 'READY';

-- +goose Down
DROP INDEX exec_queue_tenant_ready_idx;
DROP TABLE tenant_capacity;
