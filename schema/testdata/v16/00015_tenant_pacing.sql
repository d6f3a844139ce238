-- A rate-limit config per tenant (issue 4, optional): a tenant with a row
-- here has its items paced by its own config (its own windows, its own
-- rate: a bank's rail, a tenant's contract); the others by the item type's
-- exec_rate_config.pacing_config. Read once per Phase A chunk, not on the
-- queue's hot path. No foreign key to pacing_config, as for the item
-- type's: a missing or inactive tenant config falls back to the item
-- type's, with a warning.

-- +goose Up
CREATE TABLE tenant_pacing (
    item_type      text        NOT NULL,
    tenant_id      text        NOT NULL,
    pacing_config  text        NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_type, tenant_id)
);

-- +goose Down
DROP TABLE tenant_pacing;
