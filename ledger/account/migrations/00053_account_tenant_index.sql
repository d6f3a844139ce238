-- Which tenants have an account (account.Tenants: the Kafka intake's
-- check that a record's tenant exists).

-- +goose Up
CREATE INDEX account_tenant_idx ON account (tenant_id);

-- +goose Down
DROP INDEX account_tenant_idx;
